"""ROS 2 on the wire without ROS: a :class:`~vm_dynamics.transport.Transport` on Cyclone DDS.

Speaks what ``rmw_cyclonedds_cpp`` (ros2/rmw_cyclonedds, Humble..Rolling) puts on the wire:

* topic ``/a/b`` -> DDS topic ``rt/a/b``; service ``/s`` -> ``rq/sRequest`` + ``rr/sReply``;
* type ``pkg/msg/T`` -> DDS type name ``pkg::msg::dds_::T_`` (``pkg::srv::dds_::S_Request_``);
* final structs, XCDR1 (``DataRepresentation`` restricted to XCDR1 as rmw_cyclonedds does),
  little-endian CDR with encapsulation ``00 01 00 00``;
* QoS from :data:`~vm_dynamics.transport.QOS_PROFILES` mapped like rmw_cyclonedds
  ``create_readwrite_qos`` (KEEP_LAST depth, reliable/best effort, volatile/transient local
  with a matching durability service, writer ``autodispose=False``);
* USER_DATA ``typehash=RIHS01_<hex>;`` computed by rosbags ``Typestore.hash_rihs01`` (Iron+
  graph metadata; Humble ignores it), services add ``serviceid=<id>;``.

Message types are ``IdlStruct`` classes **generated at run time from the rosbags typestore's
field definitions** (the parsed ``.msg`` files of common_interfaces), not hand-written; the
byte identity of their CDR with ``rosbags`` ``serialize_cdr`` is a test.  Why not
``ros2_pyterfaces`` (0.3.0): its cyclone backend imports the alpha package
``cyclonedds_idl==0.2.0a0`` (a fork of ``cyclonedds.idl``), not the ``cyclonedds`` 11 we use,
ships its own Python copy of every interface and would add a second message model next to
rosbags; generating from the typestore keeps one source of truth for builders
(:mod:`vm_dynamics.ros.messages`), DDS, MCAP and type hashes.  Samples are read with
``cyclonedds._clayer.ddspy_take`` (what ``DataReader.take`` calls before deserialising), and
messages already in exact wire form are written as raw CDR with ``ddspy_write`` (what
``DataWriter.write`` calls after serialising; :mod:`~vm_dynamics.transport.exact_cdr`), both
private API of cyclonedds-python checked against 11.0.1.

Receiving does not go through the ``IdlStruct`` deserialiser: raw CDR samples are taken from
the reader and decoded by rosbags, so a message that does not decode is dropped with a
warning instead of raising inside the executor.

Services (``std_srvs/srv/Trigger``, ``std_srvs/srv/SetBool``) follow rmw_cyclonedds
``rmw_send_response``/``rmw_take_request``: each sample starts with ``uint64 guid, int64
seq`` (``cdds_request_header_t``) followed by the request/response fields in the same CDR
stream; the reply echoes guid/seq, and the server waits up to 100 ms for the client's reply
reader (matched by ``clientid=`` in its USER_DATA) before answering, as rmw does.  Verified
here between two processes of this module; interoperation with a real ROS client follows
from the rmw source but has not been run (no ROS on the development machine).

Discovery configuration: like rmw_cyclonedds (Jazzy ``check_create_domain``), the domain
``ROS_DOMAIN_ID`` is created with a fragment derived from ``ROS_AUTOMATIC_DISCOVERY_RANGE``
(``SUBNET`` default, ``LOCALHOST`` = no multicast + localhost peer, ``OFF``,
``SYSTEM_DEFAULT``; deprecated ``ROS_LOCALHOST_ONLY=1`` = ``LOCALHOST``) and
``ROS_STATIC_PEERS``, followed by ``CYCLONEDDS_URI`` (so a loopback-only file there keeps
everything on ``lo``).  See :func:`discovery_config`.
"""

from __future__ import annotations

import functools
import os
import struct
import sys
import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from cyclonedds._clayer import ddspy_take, ddspy_write
from cyclonedds.core import (
    DDSException,
    GuardCondition,
    InstanceState,
    Policy,
    Qos,
    ReadCondition,
    SampleState,
    ViewState,
    WaitSet,
)
from cyclonedds.domain import Domain, DomainParticipant
from cyclonedds.idl import make_idl_struct
from cyclonedds.idl import types as idl_types
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from rosbags.interfaces import Nodetype

from ..core.signals import sigterm_as_interrupt
from . import ros_args as rargs
from .base import Publisher, Transport
from .exact_cdr import exact_serializer
from .logger import StreamLogger
from .qos import QosSpec, qos_spec
from .types import (
    check_message,
    check_service_type,
    coerce_elements,
    coerce_scalar,
    fielddefs,
    message_typestore,
    service_typestore,
)

__all__ = ["DdsTransport", "DdsServiceClient", "dds_type_name", "dds_topic_name",
           "idl_struct", "to_idl", "user_data", "dds_qos", "discovery_config", "active_domains",
           "compiled_converter", "split_request", "take_raw"]

_ANY = SampleState.Any | ViewState.Any | InstanceState.Any

#: Node discovery of rmw_dds_common (rmw_cyclonedds ``rmw_context_impl_s::init``): topic
#: ``ros_discovery_info`` (no ``rt/`` prefix), reliable, transient local, KEEP_LAST 1.
DISCOVERY_TOPIC = "ros_discovery_info"
DISCOVERY_TYPE = "rmw_dds_common/msg/ParticipantEntitiesInfo"
DISCOVERY_QOS = QosSpec(reliable=True, transient_local=True, depth=1)
#: Participant USER_DATA of rmw_cyclonedds for the default (root) security enclave.
ENCLAVE_USER_DATA = b"enclave=/;"

#: Longest pause of the executor after a turn in which a subscription dropped input (a
#: flood): the next turn comes at the next timer or after this long (see ``spin_once``).
FLOOD_PACE_S = 0.005

_REQ_FIELDS = ("rmw_request_guid", "rmw_request_seq")
_REPLY_WAIT_S = 0.1
#: at most this many discovered writers are read per :meth:`DdsTransport.count_publishers`
_MAX_ENDPOINTS = 100_000
_OCTET_LIKE = ("byte", "uint8", "char")

_BASE_IDL = {
    "bool": bool, "byte": idl_types.byte, "char": idl_types.uint8,
    "int8": idl_types.int8, "uint8": idl_types.uint8, "int16": idl_types.int16,
    "uint16": idl_types.uint16, "int32": idl_types.int32, "uint32": idl_types.uint32,
    "int64": idl_types.int64, "uint64": idl_types.uint64,
    "float32": idl_types.float32, "float64": idl_types.float64, "string": str,
}


# --------------------------------------------------------------------------- naming


def dds_type_name(msgtype: str) -> str:
    """``pkg/msg/Type`` -> ``pkg::msg::dds_::Type_`` (rmw_cyclonedds MessageTypeSupport)."""
    parts = msgtype.split("/")
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"invalid ROS type name {msgtype!r} (expected pkg/msg/Type)")
    pkg, sub, name = parts
    return f"{pkg}::{sub}::dds_::{name}_"


def dds_topic_name(fq_name: str, role: str = "topic") -> str:
    """Fully qualified ROS name -> DDS topic (``rt``/``rq``..``Request``/``rr``..``Reply``)."""
    if not fq_name.startswith("/"):
        raise ValueError(f"name must be fully qualified, got {fq_name!r}")
    if role == "topic":
        return "rt" + fq_name
    if role == "request":
        return "rq" + fq_name + "Request"
    if role == "reply":
        return "rr" + fq_name + "Reply"
    raise ValueError(f"role must be topic, request or reply, got {role!r}")


# -------------------------------------------------------------------- IDL types


def _field_idl_type(desc: tuple) -> Any:
    node, info = desc
    if node == Nodetype.BASE:
        base, bound = info
        if base == "string" and bound:
            return idl_types.bounded_str[bound]
        if base not in _BASE_IDL:
            raise ValueError(f"unsupported ROS base type {base!r}")
        return _BASE_IDL[base]
    if node == Nodetype.NAME:
        return idl_struct(info)
    if node in (Nodetype.ARRAY, Nodetype.SEQUENCE):
        elem, size = info
        et = _field_idl_type(elem)
        if node == Nodetype.ARRAY:
            return idl_types.array[et, size]
        return idl_types.sequence[et, size] if size else idl_types.sequence[et]
    raise ValueError(f"unsupported field node type {node!r}")


@functools.lru_cache(maxsize=None)
def idl_struct(msgtype: str, request_header: bool = False) -> type:
    """Cyclone ``IdlStruct`` class for a ROS type, generated from the rosbags field defs.

    With ``request_header`` the struct starts with rmw_cyclonedds' ``cdds_request_header_t``
    (``uint64 guid; int64 seq``) -- the layout of service request/reply samples.
    """
    _, fields = fielddefs(msgtype)
    annotations: dict[str, Any] = {}
    if request_header:
        annotations[_REQ_FIELDS[0]] = idl_types.uint64
        annotations[_REQ_FIELDS[1]] = idl_types.int64
    for name, desc in fields:
        if name in annotations:
            raise ValueError(f"{msgtype}: field {name!r} clashes with the request header")
        annotations[name] = _field_idl_type(desc)
    cls_name = msgtype.replace("/", "__") + ("__wrapped" if request_header else "")
    return make_idl_struct(cls_name, dds_type_name(msgtype), annotations)


def _field_converter(desc: tuple, where: str) -> Callable[[Any], Any]:
    node, info = desc
    if node == Nodetype.BASE:
        base, bound = info

        def conv_base(v: Any, base: str = base, bound: int = bound) -> Any:
            out = coerce_scalar(base, v, where)
            if base == "string" and bound and len(out) > bound:
                raise ValueError(f"{where}: string longer than its bound {bound}")
            return out & 0xFF if base == "byte" else out  # IDL octet is unsigned
        return conv_base
    if node == Nodetype.NAME:
        return _nested_converter(info, where)
    elem, size = info
    enode, einfo = elem
    if enode == Nodetype.NAME:
        sub = _nested_converter(einfo, where + "[]")

        def conv_items(v: Any) -> list:
            items = list(v)
            _check_len(len(items), node, size, where)
            return [sub(x) for x in items]
        return conv_items
    ebase, ebound = einfo

    def conv_elems(v: Any, ebase: str = ebase, ebound: int = ebound) -> list:
        items = coerce_elements(ebase, v, where)
        _check_len(len(items), node, size, where)
        if ebase == "string" and ebound and any(len(s) > ebound for s in items):
            raise ValueError(f"{where}: string longer than its bound {ebound}")
        if ebase == "byte":
            items = [x & 0xFF for x in items]
        if node == Nodetype.ARRAY and ebase in _OCTET_LIKE:
            return bytes(items)  # cyclonedds encodes uint8/octet arrays from bytes
        return items
    return conv_elems


def _check_len(n: int, node: int, size: int, where: str) -> None:
    if node == Nodetype.ARRAY and n != size:
        raise ValueError(f"{where}: fixed array needs exactly {size} elements, got {n}")
    if node == Nodetype.SEQUENCE and size and n > size:
        raise ValueError(f"{where}: bounded sequence holds at most {size} elements, got {n}")


def _nested_converter(msgtype: str, where: str) -> Callable[[Any], Any]:
    conv = compiled_converter(msgtype)

    def conv_nested(v: Any) -> Any:
        check_message(v, msgtype, where)
        return conv(v, where)
    return conv_nested


@functools.lru_cache(maxsize=None)
def compiled_converter(msgtype: str, request_header: bool = False) -> Callable:
    cls = idl_struct(msgtype, request_header)
    _, fields = fielddefs(msgtype)
    short = msgtype.rsplit("/", 1)[-1]
    convs = [(name, _field_converter(desc, f"{short}.{name}")) for name, desc in fields]

    def convert(msg: Any, where: str = "", header: tuple[int, int] | None = None) -> Any:
        kw = {}
        if request_header:
            kw[_REQ_FIELDS[0]], kw[_REQ_FIELDS[1]] = header
        for name, conv in convs:
            try:
                value = getattr(msg, name)
            except AttributeError:
                raise TypeError(f"{where or msgtype}: message has no field {name!r}") from None
            kw[name] = conv(value)
        return cls(**kw)
    return convert


def to_idl(msg: Any, msgtype: str) -> Any:
    """rosbags message -> ``IdlStruct`` instance (strict field coercion)."""
    check_message(msg, msgtype, "to_idl")
    return compiled_converter(msgtype)(msg, msgtype)


# ----------------------------------------------------------------------------- QoS


def user_data(msgtype: str, extra: str = "") -> bytes:
    """USER_DATA as rmw_cyclonedds: ``<extra>typehash=RIHS01_<64 hex>;``."""
    store = service_typestore() if "/srv/" in msgtype else message_typestore()
    return (extra + f"typehash={store.hash_rihs01(msgtype)};").encode()


def dds_qos(spec: QosSpec, udata: bytes, *, writer: bool) -> Qos:
    """Cyclone QoS for a reader/writer, following rmw_cyclonedds ``create_readwrite_qos``."""
    pols = [
        Policy.History.KeepLast(spec.depth),
        Policy.Reliability.Reliable(max_blocking_time=100_000_000) if spec.reliable
        else Policy.Reliability.BestEffort,
        Policy.Durability.TransientLocal if spec.transient_local else Policy.Durability.Volatile,
        Policy.DataRepresentation(use_cdrv0_representation=True),
        Policy.Userdata(udata),
    ]
    if writer:
        pols.append(Policy.WriterDataLifecycle(autodispose=False))
    if spec.transient_local:
        pols.append(Policy.DurabilityService(
            cleanup_delay=0, history=Policy.History.KeepLast(spec.depth), max_samples=-1,
            max_instances=-1, max_samples_per_instance=-1))
    return Qos(*pols)


def _userdata_key(qos: Any, key: str) -> str | None:
    pol = qos[Policy.Userdata] if qos is not None else None
    if pol is None:
        return None
    for item in bytes(pol.data).decode("utf-8", "replace").split(";"):
        k, sep, v = item.partition("=")
        if sep and k == key:
            return v
    return None


def take_raw(reader: DataReader, n: int = 64) -> list:
    ret = ddspy_take(reader._ref, _ANY, n)
    if isinstance(ret, int):
        raise DDSException(ret, f"while taking from {reader!r}")
    return ret


def split_request(data: bytes) -> tuple[int, int, bytes]:
    """Service sample -> (guid, seq, plain CDR of the request/response body)."""
    if len(data) < 20 or data[0] != 0 or data[1] not in (0, 1):
        raise ValueError(f"service sample too short or bad encapsulation ({len(data)} bytes)")
    fmt = "<Qq" if data[1] == 1 else ">Qq"
    guid, seq = struct.unpack_from(fmt, data, 4)
    return guid, seq, bytes(data[:4]) + bytes(data[20:])


def _csid_string(guid_bytes: bytes, counter: int) -> str:
    """rmw_cyclonedds ``csid_to_string`` of (participant GUID prefix, counter)."""
    data = guid_bytes[:12] + counter.to_bytes(4, "big")
    return f"{data[0]:2x}" + "".join(f".{b:x}" for b in data[1:])


# ----------------------------------------------------------------------- discovery

_RANGES = ("SUBNET", "LOCALHOST", "OFF", "SYSTEM_DEFAULT")


def discovery_config(env: Mapping[str, str] | None = None) -> str:
    """Cyclone domain configuration built like rmw_cyclonedds ``check_create_domain``.

    ``ROS_AUTOMATIC_DISCOVERY_RANGE`` (unset/empty -> ``SUBNET``; ``ROS_LOCALHOST_ONLY=1``
    -> ``LOCALHOST`` as rcl maps the deprecated variable), ``ROS_STATIC_PEERS``
    (``;``-separated), then the content of ``CYCLONEDDS_URI`` appended after a comma.
    """
    env = os.environ if env is None else env
    rng = env.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "").strip().upper()
    if not rng:
        rng = "LOCALHOST" if env.get("ROS_LOCALHOST_ONLY", "").strip() == "1" else "SUBNET"
    if rng not in _RANGES:
        raise ValueError(f"ROS_AUTOMATIC_DISCOVERY_RANGE={rng!r}: expected one of {_RANGES}")
    peers = [p.strip() for p in env.get("ROS_STATIC_PEERS", "").split(";") if p.strip()]
    localhost_peer = rng == "LOCALHOST"
    static_peers = rng in ("SUBNET", "LOCALHOST")
    no_multicast = rng in ("LOCALHOST", "OFF")
    config = ""
    if localhost_peer or static_peers or no_multicast:
        config = "<CycloneDDS><Domain>"
        if no_multicast:
            config += "<General><AllowMulticast>false</AllowMulticast></General>"
        if no_multicast and not localhost_peer and not static_peers:  # OFF
            config += ("<Discovery><ParticipantIndex>none</ParticipantIndex>"
                       f"<Tag>ros_discovery_off_{os.getpid()}</Tag>")
        else:
            config += ("<Discovery><ParticipantIndex>auto</ParticipantIndex>"
                       "<MaxAutoParticipantIndex>32</MaxAutoParticipantIndex>")
        if (static_peers and peers) or localhost_peer:
            config += "<Peers>"
            if localhost_peer:
                config += '<Peer address="localhost"/>'
            for p in peers if static_peers else []:
                config += f'<Peer address="{p}"/>'
            config += "</Peers>"
        config += "</Discovery></Domain></CycloneDDS>,"
    return config + env.get("CYCLONEDDS_URI", "")


#: domain id -> [Domain, reference count, config]: one Cyclone domain per id and process,
#: shared by all transports of the process (rmw_cyclonedds keeps the same table).
_DOMAINS: dict[int, list] = {}


def _acquire_domain(domain_id: int, config: str) -> None:
    entry = _DOMAINS.get(domain_id)
    if entry is not None:
        if entry[2] != config:
            raise ValueError(f"domain {domain_id} already exists in this process with different "
                             "discovery parameters")
        entry[1] += 1
        return
    try:
        domain = Domain(domain_id, config)
    except DDSException as exc:
        raise ValueError(f"cannot create DDS domain {domain_id} (is a participant on it already "
                         f"open in this process outside vm_dynamics?): {exc}") from exc
    _DOMAINS[domain_id] = [domain, 1, config]


def _release_domain(domain_id: int) -> None:
    entry = _DOMAINS.get(domain_id)
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] == 0:
        del _DOMAINS[domain_id]
        entry[0].__del__()


def active_domains() -> list[int]:
    """The DDS domains this process has a participant in (shared by its transports)."""
    return sorted(_DOMAINS)


# ------------------------------------------------------------------------ entities


class _DdsPublisher(Publisher):
    def __init__(self, topic: str, msgtype: str, writer: DataWriter) -> None:
        self.topic = topic
        self.msgtype = msgtype
        self._writer = writer
        self._convert = compiled_converter(msgtype)
        self._exact = exact_serializer(msgtype)

    def publish(self, msg: Any) -> None:
        """Write one sample: a message already in exact wire form is serialised by rosbags
        and written as raw CDR (:mod:`~vm_dynamics.transport.exact_cdr`, ~5x faster); any
        other goes through the strict converter, which coerces it or names the bad field."""
        check_message(msg, self.msgtype, f"publisher {self.topic}")
        data = self._exact(msg)
        if data is None:
            self._writer.write(self._convert(msg, f"{self.topic} {self.msgtype}"))
            return
        ret = ddspy_write(self._writer._ref, data)
        if ret < 0:
            raise DDSException(ret, f"while writing a {self.msgtype} sample on {self.topic}")

    @property
    def matched_subscriptions(self) -> int:
        return len(self._writer.get_matched_subscriptions())


class _DdsSubscription:
    """A reader and its callback; :meth:`drain` is one executor turn of it.

    ``dropped`` counts the samples taken but not delivered because more than
    ``max_per_turn`` were queued (see :meth:`Transport.subscribe`).
    """

    def __init__(self, transport: 'DdsTransport', topic: str, msgtype: str,
                 callback: Callable[[Any], None], reader: DataReader, raw: bool,
                 max_bytes: int | None = None, max_counts: dict | None = None, *,
                 depth: int = 64, max_per_turn: int | None = None,
                 screen: Callable[[bytes], bool] | None = None,
                 on_drop: Callable[[int], None] | None = None) -> None:
        self.max_bytes = max_bytes
        self.max_counts = max_counts
        self.topic = topic
        self.msgtype = msgtype
        self.depth = depth
        self.max_per_turn = max_per_turn
        self.dropped = 0
        self._transport = transport
        self._callback = callback
        self._reader = reader
        self._raw = raw
        self._screen = screen
        self._on_drop = on_drop

    def handle_raw(self, data: bytes) -> bool:
        """Decode one CDR sample and deliver it; False (and a warning) if it was dropped."""
        if self.max_bytes is not None and len(data) > self.max_bytes:
            self._transport._oversized(self.topic, self.msgtype, len(data), self.max_bytes)
            return False
        if self._screen is not None and not self._transport._screened(self._screen, data,
                                                                       self.topic):
            return False
        if self._raw:
            return self._transport._deliver(self._callback, bytes(data), self.topic)
        from vm_dynamics.ros import messages as ros_msgs
        try:
            msg = ros_msgs.deserialize(data, self.msgtype, self.max_counts)
        except ros_msgs.SequenceCountError as exc:
            self._transport._too_many(self.topic, self.msgtype, exc)
            return False
        except ValueError as exc:
            self._transport.logger.warn_throttled(
                ("malformed", self.topic), 5.0,
                f"dropped undecodable {self.msgtype} sample on {self.topic}: {exc}")
            return False
        return self._transport._deliver(self._callback, msg, self.topic)

    def drain(self) -> None:
        """One turn: take what is queued -- at most the reader's history depth, so samples
        that arrive meanwhile wait for the next turn and a publisher faster than the
        callbacks cannot keep the executor from its timers -- and deliver the newest
        ``max_per_turn`` of it, dropping (and counting) the older excess."""
        data = [d for d, info in take_raw(self._reader, self.depth) if info.valid_data]
        excess = len(data) - self.max_per_turn if self.max_per_turn is not None else 0
        if excess > 0:
            del data[:excess]
            self.dropped += excess
            self._transport._flooded = True
            self._transport._dropped(self.topic, excess, self.max_per_turn, self._on_drop)
        for sample in data:
            if self._transport._closed:  # a callback may shut the node down
                return
            self.handle_raw(sample)

    @property
    def matched_publications(self) -> list:
        """Endpoint data (topic, type name, QoS incl. USER_DATA) of matched writers."""
        return [self._reader.get_matched_publication_data(h)
                for h in self._reader.get_matched_publications()]


class _DdsTimer:
    def __init__(self, period_ns: int, callback: Callable[[], None], start_ns: int,
                 sim: bool) -> None:
        self.period_ns = period_ns
        self.callback = callback
        self.next_ns = start_ns + period_ns
        self.sim = sim
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def reset(self, now_ns: int) -> None:
        self.next_ns = now_ns + self.period_ns

    def call_if_due(self, now_ns: int) -> bool:
        """rcl_timer_call: fire once, then skip the periods that were missed."""
        if self.cancelled or now_ns < self.next_ns:
            return False
        nxt = self.next_ns + self.period_ns
        if nxt < now_ns:
            nxt += (1 + (now_ns - nxt) // self.period_ns) * self.period_ns
        self.next_ns = nxt
        self.callback()
        return True


class _DdsService:
    def __init__(self, transport: 'DdsTransport', name: str, srvtype: str,
                 handler: Callable[[Any], Any]) -> None:
        self.name = name
        self.srvtype = srvtype
        self._transport = transport
        self._handler = handler
        self.service_id = transport._next_csid()
        extra = f"serviceid={self.service_id};"
        spec = qos_spec("services")
        self.depth = spec.depth
        req_t, rep_t = f"{srvtype}_Request", f"{srvtype}_Response"
        self._reader = transport._reader(dds_topic_name(name, "request"), req_t, spec,
                                         request_header=True, extra=extra)
        self._writer = transport._writer(dds_topic_name(name, "reply"), rep_t, spec,
                                         request_header=True, extra=extra)
        self._convert = compiled_converter(rep_t, True)

    def drain(self) -> None:
        """One turn: the requests queued now (at most the reader's history depth)."""
        for data, info in take_raw(self._reader, self.depth):
            if info.valid_data and not self._transport._closed:
                self._handle(data, info)

    def _client_reader_matched(self, writer_handle: int) -> bool:
        wr = self._reader.get_matched_publication_data(writer_handle)
        clientid = _userdata_key(wr.qos, "clientid") if wr is not None else None
        if clientid is None:
            return True  # rmw: a client without an id is assumed ready
        for h in self._writer.get_matched_subscriptions():
            rd = self._writer.get_matched_subscription_data(h)
            if rd is not None and _userdata_key(rd.qos, "clientid") == clientid:
                return True
        return False

    def _handle(self, data: bytes, info: Any) -> None:
        rq_t = f"{self.srvtype}_Request"
        try:
            guid, seq, body = split_request(data)
            request = service_typestore().deserialize_cdr(body, rq_t)
        except Exception as exc:  # rosbags SerdeError, struct.error
            self._transport.logger.warn_throttled(
                ("malformed", self.name), 5.0, f"dropped undecodable request on {self.name}: "
                f"{type(exc).__name__}: {exc}")
            return
        ok, text = self._transport._serve(self.srvtype, self._handler, request)
        response = service_typestore().types[f"{self.srvtype}_Response"](success=ok,
                                                                         message=text)
        deadline = time.monotonic() + _REPLY_WAIT_S
        while not self._client_reader_matched(info.publication_handle):
            if time.monotonic() > deadline:
                self._transport.logger.warn_throttled(
                    ("noreply", self.name), 5.0,
                    f"{self.name}: client reply reader not matched within "
                    f"{_REPLY_WAIT_S * 1e3:.0f} ms; response dropped (as rmw_cyclonedds)")
                return
            time.sleep(0.005)
        self._writer.write(self._convert(response, self.name, (guid, seq)))


# ---------------------------------------------------------------------- transport


class DdsTransport(Transport):
    """Node on a Cyclone DDS participant (domain ``ROS_DOMAIN_ID``); single-threaded executor."""

    kind = "dds"

    def __init__(self, node_name: str, params_defaults: Any = None,
                 argv: Sequence[str] | None = None, *, namespace: str = "") -> None:
        super().__init__()
        from vm_dynamics.ros import messages as ros_msgs
        ros_msgs.use_message_library("rosbags")  # messages on the wire are rosbags CDR
        sigterm_as_interrupt()        # SIGTERM ends spin() like Ctrl-C
        argv = list(sys.argv if argv is None else argv)
        self._ros_args = rargs.parse_ros_args(argv)
        self.args = list(self._ros_args.non_ros_args)
        self.node_name, self.namespace = rargs.node_identity(self._ros_args, node_name,
                                                             namespace)
        resolved = rargs.resolve_parameters(params_defaults, self._ros_args,
                                            self.fully_qualified_name)
        self.params = resolved.values
        logger_name = self.fully_qualified_name.lstrip("/").replace("/", ".")
        level = dict(self._ros_args.logger_levels).get(
            logger_name, self._ros_args.log_level or "INFO")
        self.logger = StreamLogger(logger_name, "INFO" if level == "UNSET" else level)
        if resolved.ignored:
            self.logger.debug(f'ignoring overrides for undeclared parameters: '
                             f'{", ".join(resolved.ignored)}')
        if not isinstance(self.params["use_sim_time"], bool):
            raise ValueError(f'parameter use_sim_time must be a bool, got '
                             f'{self.params["use_sim_time"]!r}')
        self.domain_id = rargs.domain_id_from_env()
        _acquire_domain(self.domain_id, discovery_config())
        try:
            # USER_DATA "enclave=/;" as rmw_cyclonedds sets it: ROS tools then list this
            # participant in their graph (rmw handle_DCPSParticipant)
            self._dp = DomainParticipant(self.domain_id,
                                         qos=Qos(Policy.Userdata(ENCLAVE_USER_DATA)))
        except BaseException:
            _release_domain(self.domain_id)
            raise
        self._waitset = WaitSet(self._dp)
        self._guard = GuardCondition(self._dp)
        self._waitset.attach(self._guard)
        self._topics: dict[tuple[str, str, bool], Topic] = {}
        self._keep: list[Any] = []
        self._subs: list[_DdsSubscription] = []
        self._services: list[_DdsService] = []
        self._timers: list[_DdsTimer] = []
        self._csid_counter = 0
        self._closed = False
        self._flooded = False       # a subscription dropped input this turn (max_per_turn)
        self._reader_gids: list[bytes] = []
        self._writer_gids: list[bytes] = []
        self._publications: Any = None    # (DCPSPublication reader, its alive condition)
        self._discovery_writer = None
        self._discovery_writer = self._writer(DISCOVERY_TOPIC, DISCOVERY_TYPE,
                                              DISCOVERY_QOS)
        self._announce()
        self._sim_time = self.params["use_sim_time"]
        self._clock_ns = 0
        self._clock_seen = False
        self._clock_sub = None
        if self._sim_time:
            from vm_dynamics.ros import messages as ros_msgs
            self._clock_sub = self.subscribe("/clock", ros_msgs.CLOCK, self._on_clock, "clock")
            self._subs.remove(self._clock_sub)

    # -- names / entities -------------------------------------------------------------

    def resolve_name(self, name: str) -> str:
        """Fully qualified, remapped ROS name of a topic/service of this node."""
        return rargs.remap_name(self._ros_args, name, self.node_name, self.namespace)

    def _topic(self, dds_name: str, msgtype: str, request_header: bool) -> Topic:
        key = (dds_name, msgtype, request_header)
        if key not in self._topics:
            self._topics[key] = Topic(self._dp, dds_name, idl_struct(msgtype, request_header))
        return self._topics[key]

    def _writer(self, dds_name: str, msgtype: str, spec: QosSpec, *,
                request_header: bool = False, extra: str = "") -> DataWriter:
        self._check_open()
        topic = self._topic(dds_name, msgtype, request_header)
        w = DataWriter(self._dp, topic, dds_qos(spec, user_data(msgtype, extra), writer=True))
        self._keep.append(w)
        if self._discovery_writer is not None:  # not the discovery writer itself (as rmw)
            self._writer_gids.append(w.guid.bytes)
            self._announce()
        return w

    def _reader(self, dds_name: str, msgtype: str, spec: QosSpec, *,
                request_header: bool = False, extra: str = "") -> DataReader:
        self._check_open()
        topic = self._topic(dds_name, msgtype, request_header)
        r = DataReader(self._dp, topic, dds_qos(spec, user_data(msgtype, extra), writer=False))
        cond = ReadCondition(r, _ANY)
        self._waitset.attach(cond)
        self._keep.extend([r, cond])
        self._reader_gids.append(r.guid.bytes)
        self._announce()
        return r

    def discovery_info(self) -> Any:
        """This node's ``rmw_dds_common/msg/ParticipantEntitiesInfo`` (rosbags message): the
        participant GUID and one NodeEntitiesInfo with the GUIDs of its readers and writers,
        as rmw_dds_common's GraphCache builds it (the discovery writer itself excluded)."""
        T = message_typestore().types

        def gid(guid: bytes) -> Any:
            return T["rmw_dds_common/msg/Gid"](data=np.frombuffer(guid, dtype=np.uint8).copy())
        node = T["rmw_dds_common/msg/NodeEntitiesInfo"](
            node_namespace=self.namespace, node_name=self.node_name,
            reader_gid_seq=[gid(g) for g in self._reader_gids],
            writer_gid_seq=[gid(g) for g in self._writer_gids])
        return T[DISCOVERY_TYPE](gid=gid(self._dp.guid.bytes), node_entities_info_seq=[node])

    def _announce(self) -> None:
        """Publish :meth:`discovery_info` on ``ros_discovery_info`` (transient local, depth 1),
        so ``ros2 node list`` / ``ros2 node info`` / ``ros2 topic info -v`` see this node."""
        if self._discovery_writer is None or self._closed:
            return
        self._discovery_writer.write(to_idl(self.discovery_info(), DISCOVERY_TYPE))

    def _next_csid(self) -> str:
        self._csid_counter += 1
        return _csid_string(self._dp.guid.bytes, self._csid_counter)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"transport of node {self.fully_qualified_name} is shut down")

    # -- interface --------------------------------------------------------------------

    def publisher(self, topic: str, msgtype: str, qos: Any = "default") -> _DdsPublisher:
        fq = self.resolve_name(topic)
        idl_struct(msgtype)  # validates the type early
        return _DdsPublisher(fq, msgtype,
                             self._writer(dds_topic_name(fq), msgtype, qos_spec(qos)))

    def subscribe(self, topic: str, msgtype: str, callback: Callable[[Any], None],
                  qos: Any = "default", *, raw: bool = False,
                  max_bytes: int | None = None,
                  max_counts: Mapping[str, Any] | None = None,
                  max_per_turn: int | None = None,
                  screen: Callable[[bytes], bool] | None = None,
                  on_drop: Callable[[int], None] | None = None) -> _DdsSubscription:
        """Subscribe; with ``raw=True`` (DDS only) ``callback`` gets the CDR bytes.  Input
        bounds (``max_bytes``, ``max_counts``, ``screen``, ``max_per_turn``, ``on_drop``):
        see :meth:`Transport.subscribe`."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        limit = None if max_bytes is None else self._check_max_bytes(max_bytes)
        counts = self._check_max_counts(max_counts)
        if counts:
            from vm_dynamics.ros import messages as ros_msgs
            ros_msgs.check_count_limits(msgtype, counts)
        per_turn = self._check_max_per_turn(max_per_turn)
        self._check_callable("screen", screen)
        self._check_callable("on_drop", on_drop)
        fq = self.resolve_name(topic)
        spec = qos_spec(qos)
        reader = self._reader(dds_topic_name(fq), msgtype, spec)
        sub = _DdsSubscription(self, fq, msgtype, callback, reader, raw, limit, counts,
                               depth=spec.depth, max_per_turn=per_turn, screen=screen,
                               on_drop=on_drop)
        self._subs.append(sub)
        return sub

    def timer(self, period_s: float, callback: Callable[[], None]) -> _DdsTimer:
        self._check_open()
        if not callable(callback):
            raise TypeError("callback must be callable")
        if isinstance(period_s, bool) or not isinstance(period_s, (int, float)) \
                or not period_s > 0 or period_s == float("inf"):
            raise ValueError(f"timer period must be a finite number > 0 s, got {period_s!r}")
        period_ns = max(1, round(period_s * 1e9))
        start = self._clock_ns if self._sim_time else time.monotonic_ns()
        what = f"timer callback {getattr(callback, '__qualname__', '')}".rstrip()
        t = _DdsTimer(period_ns, self._guarded(what, callback), start, self._sim_time)
        self._timers.append(t)
        return t

    def service(self, name: str, srvtype: str, handler: Callable[[Any], Any]) -> _DdsService:
        self._check_open()
        check_service_type(srvtype)
        if not callable(handler):
            raise TypeError("handler must be callable")
        srv = _DdsService(self, self.resolve_name(name), srvtype, handler)
        self._services.append(srv)
        return srv

    def now_ns(self) -> int:
        return self._clock_ns if self._sim_time else time.time_ns()

    def count_publishers(self, topic: str) -> int:
        """Writers on the DDS topic of ``topic`` that discovery reports alive (the
        ``DCPSPublication`` built-in topic, as rmw_dds_common's graph cache), this node's
        own included."""
        self._check_open()
        if self._publications is None:
            from cyclonedds.builtin import BuiltinDataReader, BuiltinTopicDcpsPublication
            reader = BuiltinDataReader(self._dp, BuiltinTopicDcpsPublication)
            alive = ReadCondition(reader, SampleState.Any | ViewState.Any | InstanceState.Alive)
            self._keep.extend([reader, alive])
            self._publications = (reader, alive)
        name = dds_topic_name(self.resolve_name(topic))
        # the built-in reader keeps the latest sample of every writer (instance) it knows
        reader, alive = self._publications
        endpoints = reader.read(N=_MAX_ENDPOINTS, condition=alive)
        return sum(1 for e in endpoints if e.topic_name == name)

    # -- executor ---------------------------------------------------------------------

    def _on_clock(self, msg: Any) -> None:
        from vm_dynamics.ros import messages as ros_msgs
        ns = ros_msgs.parse_clock(msg)
        jumped_back = ns < self._clock_ns
        first = not self._clock_seen
        self._clock_ns = ns
        self._clock_seen = True
        if first or jumped_back:  # ROS time activated / reset: restart the periods
            for t in self._timers:
                if t.sim:
                    t.reset(ns)

    def _wait_ns(self, timeout_s: float | None) -> int:
        budget = None if timeout_s is None else max(0, int(timeout_s * 1e9))
        now = time.monotonic_ns()
        for t in self._timers:
            if not t.cancelled and not t.sim:
                d = max(0, t.next_ns - now)
                budget = d if budget is None else min(budget, d)
        return 2**62 if budget is None else budget

    def spin_once(self, timeout_s: float | None = None) -> None:
        """Wait for work (data, a due timer, ``timeout_s``), then one turn: each subscription
        and service drains what is queued (bounded, see :meth:`_DdsSubscription.drain`),
        then the due timers run.

        After a turn in which a subscription dropped input (more than its ``max_per_turn``
        was queued: a flood), the next turn does not start on data but at the next timer
        (at most :data:`FLOOD_PACE_S` later), the node sleeping meanwhile: otherwise a flood
        keeps it always runnable, and on a busy machine the scheduler then serves its timers
        only at a fair share, like any CPU-bound process."""
        if self._closed:
            return
        wait_ns = self._wait_ns(timeout_s)
        if self._flooded:
            self._flooded = False
            time.sleep(min(wait_ns * 1e-9, FLOOD_PACE_S))
        else:
            self._waitset.wait(wait_ns)
        if self._closed:
            return
        # a callback may shut the node down: check before touching any entity again
        for sub in ([self._clock_sub] if self._clock_sub else []) + list(self._subs):
            if self._closed:
                return
            sub.drain()
        for srv in list(self._services):
            if self._closed:
                return
            srv.drain()
        mono = time.monotonic_ns()
        for t in list(self._timers):
            if self._closed:
                return
            t.call_if_due(self._clock_ns if t.sim else mono)
        self._timers = [t for t in self._timers if not t.cancelled]

    def spin(self) -> None:
        try:
            while not self._closed:
                self.spin_once(0.1)
        except KeyboardInterrupt:
            pass

    def spin_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Spin until ``predicate()`` is true or ``timeout_s`` elapsed; returns predicate()."""
        deadline = time.monotonic() + timeout_s
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0 or self._closed:
                return predicate()
            self.spin_once(min(left, 0.05))
        return True

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._guard.set(True)
        self._subs.clear()
        self._services.clear()
        self._timers.clear()
        # delete explicitly, children first, so no stale handle is deleted by a later GC
        for ent in [*reversed(self._keep), *self._topics.values(), self._guard,
                    self._waitset, self._dp]:
            ent.__del__()
        self._keep.clear()
        self._topics.clear()
        self._dp = None
        _release_domain(self.domain_id)


class DdsServiceClient:
    """rmw_cyclonedds-compatible service client on a :class:`DdsTransport` participant."""

    def __init__(self, transport: DdsTransport, name: str, srvtype: str) -> None:
        check_service_type(srvtype)
        self.srvtype = srvtype
        self.name = transport.resolve_name(name)
        self.client_id = transport._next_csid()
        extra = f"clientid={self.client_id};"
        spec = qos_spec("services")
        self._writer = transport._writer(dds_topic_name(self.name, "request"),
                                         f"{srvtype}_Request", spec, request_header=True,
                                         extra=extra)
        self._reader = transport._reader(dds_topic_name(self.name, "reply"),
                                         f"{srvtype}_Response", spec, request_header=True,
                                         extra=extra)
        self.guid = self._writer.get_instance_handle() & (2**64 - 1)
        self._seq = 0
        self._convert = compiled_converter(f"{srvtype}_Request", True)

    def service_is_ready(self) -> bool:
        """rmw ``check_for_service_reader_writer``: a matched request reader with a serviceid
        and a matched reply writer with the same id."""
        ids = set()
        for h in self._writer.get_matched_subscriptions():
            rd = self._writer.get_matched_subscription_data(h)
            sid = _userdata_key(rd.qos, "serviceid") if rd is not None else None
            if sid:
                ids.add(sid)
        for h in self._reader.get_matched_publications():
            wr = self._reader.get_matched_publication_data(h)
            if wr is not None and _userdata_key(wr.qos, "serviceid") in ids:
                return True
        return False

    def wait_for_service(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self.service_is_ready():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def call(self, request: Any, timeout_s: float = 5.0) -> Any:
        """Send ``request`` (rosbags ``<srv>_Request``) and wait for the matching response."""
        check_message(request, f"{self.srvtype}_Request", f"service client {self.name}")
        self._seq += 1
        seq = self._seq
        self._writer.write(self._convert(request, self.name, (self.guid, seq)))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for data, info in take_raw(self._reader):
                if not info.valid_data:
                    continue
                guid, rseq, body = split_request(data)
                if guid == self.guid and rseq == seq:
                    return service_typestore().deserialize_cdr(body, f"{self.srvtype}_Response")
            time.sleep(0.005)
        raise TimeoutError(f"no response from service {self.name} within {timeout_s} s")
