"""Cyclone DDS endpoints as rmw_cyclonedds configures them: QoS
(``create_readwrite_qos``), USER_DATA (``typehash=RIHS01_<hex>;``, ``serviceid=``/``clientid=``
of services), raw sample access (:func:`take_raw`, ``cyclonedds._clayer.ddspy_take``, private
API of cyclonedds-python checked against 11.0.1), service sample headers, and the discovery
configuration and per-process domain table (``check_create_domain``, see
:func:`discovery_config`)."""
from __future__ import annotations

import os
import struct
from typing import Any, Mapping

from cyclonedds._clayer import ddspy_take
from cyclonedds.core import DDSException, InstanceState, Policy, Qos, SampleState, ViewState
from cyclonedds.domain import Domain
from cyclonedds.sub import DataReader

from .qos import QosSpec
from .types import message_typestore, service_typestore

__all__ = ["ANY_SAMPLE", "user_data", "dds_qos", "userdata_key", "take_raw", "split_request",
           "csid_string", "discovery_config", "acquire_domain", "release_domain",
           "active_domains"]

#: Read condition mask of every sample, view and instance state.
ANY_SAMPLE = SampleState.Any | ViewState.Any | InstanceState.Any


def user_data(msgtype: str, extra: str = "") -> bytes:
    """USER_DATA as rmw_cyclonedds: ``<extra>typehash=RIHS01_<64 hex>;``."""
    store = (service_typestore() if "/srv/" in msgtype or "/action/" in msgtype
             else message_typestore())
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


def userdata_key(qos: Any, key: str) -> str | None:
    """Value of ``key=`` in the USER_DATA of an endpoint's QoS (None if absent)."""
    pol = qos[Policy.Userdata] if qos is not None else None
    if pol is None:
        return None
    for item in bytes(pol.data).decode("utf-8", "replace").split(";"):
        k, sep, v = item.partition("=")
        if sep and k == key:
            return v
    return None


def take_raw(reader: DataReader, n: int = 64) -> list:
    """Up to ``n`` samples of ``reader`` as ``(CDR bytes, sample info)``, not deserialised."""
    ret = ddspy_take(reader._ref, ANY_SAMPLE, n)
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


def csid_string(guid_bytes: bytes, counter: int) -> str:
    """rmw_cyclonedds ``csid_to_string`` of (participant GUID prefix, counter)."""
    data = guid_bytes[:12] + counter.to_bytes(4, "big")
    return f"{data[0]:2x}" + "".join(f".{b:x}" for b in data[1:])



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


def acquire_domain(domain_id: int, config: str) -> None:
    """Create the process's Cyclone domain ``domain_id`` with ``config``, or count one more
    user of it (a second config for one id is an error)."""
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


def release_domain(domain_id: int) -> None:
    """One user fewer of domain ``domain_id``; the last one deletes it."""
    entry = _DOMAINS.get(domain_id)
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] == 0:
        del _DOMAINS[domain_id]
        entry[0].__del__()


def domain_entity(domain_id: int) -> Any:
    """The Cyclone domain entity of ``domain_id`` (:func:`acquire_domain` made it): the owner
    of a wait set shared by the participants of several nodes (a composition)."""
    return _DOMAINS[domain_id][0]


def active_domains() -> list[int]:
    """The DDS domains this process has a participant in (shared by its transports)."""
    return sorted(_DOMAINS)
