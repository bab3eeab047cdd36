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

Services (``std_srvs/srv/Trigger``, ``std_srvs/srv/SetBool`` and the simulation_interfaces
services; actions as rcl_action lays them out: :mod:`.dds_actions`) follow rmw_cyclonedds
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

The code is split by what it holds: names and ``IdlStruct`` types in :mod:`.dds_idl`, QoS,
USER_DATA, raw samples and domains in :mod:`.dds_wire`, publishers, subscriptions, timers and
services in :mod:`.dds_entities`; this module holds the node (:class:`DdsTransport`, the
participant and its executor) and the service client, and re-exports the public names.
"""

from __future__ import annotations

import collections
import struct
import sys
import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from cyclonedds.core import (
    InstanceState,
    Policy,
    Qos,
    ReadCondition,
    SampleState,
    ViewState,
)
from cyclonedds.domain import DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from ..core.signals import noted_interrupts, sigterm_as_interrupt
from . import ros_args as rargs
from .base import Transport
from .dds_actions import DdsActionServer
from .dds_clients import DdsAsyncClient, DdsServiceClient, DdsTriggerClient
from .dds_entities import DdsPublisher, DdsService, DdsSubscription, DdsTimer
from .dds_executor import FLOOD_PACE_S, DdsComposition, DdsWaiter
from .dds_idl import compiled_converter, dds_topic_name, dds_type_name, idl_struct, to_idl
from .dds_wire import (
    acquire_domain,
    active_domains,
    csid_string,
    dds_qos,
    discovery_config,
    domain_entity,
    release_domain,
    split_request,
    take_raw,
    user_data,
)
from .logger import StreamLogger
from .qos import QosSpec, qos_spec
from .types import (
    check_service_type,
    message_typestore,
)

__all__ = ["DdsTransport", "DdsServiceClient", "dds_type_name", "dds_topic_name",
           "idl_struct", "to_idl", "user_data", "dds_qos", "discovery_config", "active_domains",
           "compiled_converter", "split_request", "take_raw", "DISCOVERY_TOPIC",
           "DISCOVERY_TYPE", "DISCOVERY_QOS", "FLOOD_PACE_S", "PUBLICATIONS_FRESH_S",
           "DdsComposition"]

#: Node discovery of rmw_dds_common (rmw_cyclonedds ``rmw_context_impl_s::init``): topic
#: ``ros_discovery_info`` (no ``rt/`` prefix), reliable, transient local, KEEP_LAST 1.
DISCOVERY_TOPIC = "ros_discovery_info"
DISCOVERY_TYPE = "rmw_dds_common/msg/ParticipantEntitiesInfo"
DISCOVERY_QOS = QosSpec(reliable=True, transient_local=True, depth=1)
#: Participant USER_DATA of rmw_cyclonedds for the default (root) security enclave.
ENCLAVE_USER_DATA = b"enclave=/;"

#: at most this many discovered writers are read per :meth:`DdsTransport.count_publishers`
_MAX_ENDPOINTS = 100_000
#: One read of the discovered writers answers every :meth:`DdsTransport.count_publishers`
#: within this many seconds: a read decodes every writer of the domain (QoS included), and a
#: node's publisher watch asks for several topics at once (measured: the five reads of the
#: controller node's check were ~5 % of its thread in lockstep at 1 kHz).
PUBLICATIONS_FRESH_S = 0.2
#: the encapsulation of little-endian XCDR1 samples, and the layout of a Clock's time after it
_CDR_LE = b"\x00\x01\x00\x00"
_CLOCK = struct.Struct("<iI")
#: rank of the first service in an executor turn's order: after every subscription
_SERVICE_RANK = 1 << 40


def _rank(visit: tuple) -> int:
    return visit[0]


# ---------------------------------------------------------------------- transport


class DdsTransport(Transport):
    """Node on a Cyclone DDS participant (domain ``ROS_DOMAIN_ID``); single-threaded executor.

    With ``composition`` (a :class:`~.dds_executor.DdsComposition`) the node is one of several
    in this process on one executor, its volatile subscriptions fed in-process by the
    publishers of the others (rclcpp's component container and intra-process communication;
    see :mod:`.dds_executor`)."""

    kind = "dds"
    cdr_handlers = True

    def __init__(self, node_name: str, params_defaults: Any = None,
                 argv: Sequence[str] | None = None, *, namespace: str = "",
                 composition: DdsComposition | None = None) -> None:
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
        acquire_domain(self.domain_id, discovery_config())
        try:
            # USER_DATA "enclave=/;" as rmw_cyclonedds sets it: ROS tools then list this
            # participant in their graph (rmw handle_DCPSParticipant)
            self._dp = DomainParticipant(self.domain_id,
                                         qos=Qos(Policy.Userdata(ENCLAVE_USER_DATA)))
        except BaseException:
            release_domain(self.domain_id)
            raise
        #: the composition this node is part of (None: a process of its own)
        self.composition = composition
        if composition is None:
            self._waiter = DdsWaiter(self._dp)
        else:
            try:
                self._waiter = composition.join(self, self.domain_id,
                                                domain_entity(self.domain_id))
            except BaseException:
                self._dp.__del__()
                release_domain(self.domain_id)
                raise
        self._topics: dict[tuple[str, str, bool], Topic] = {}
        self._keep: list[Any] = []
        self._subs: list[DdsSubscription] = []
        self._services: list[DdsService] = []
        # reader handle -> (rank, entity, is a service) of every subscription and service: a
        # turn visits only the readers the wait set reported, in the order of the full sweep
        # (the /clock subscription, the others as created, then the services)
        self._visit: dict[int, tuple[int, Any, bool]] = {}
        self._timers: list[DdsTimer] = []
        self._csid_counter = 0
        self._closed = False
        self._flooded = False       # a subscription dropped input this turn (max_per_turn)
        self._reader_gids: list[bytes] = []
        self._writer_gids: list[bytes] = []
        self._publications: Any = None    # (DCPSPublication reader, its alive condition)
        self._publication_counts: tuple[float, collections.Counter] | None = None
        self.monotonic = time.monotonic   # the clock of PUBLICATIONS_FRESH_S
        self._discovery_writer = None
        self._discovery_writer = self.writer(DISCOVERY_TOPIC, DISCOVERY_TYPE,
                                              DISCOVERY_QOS)
        self._announce()
        self._sim_time = self.params["use_sim_time"]
        self._clock_ns = 0
        self._clock_seen = False
        self._clock_sub = None
        if self._sim_time:
            from vm_dynamics.ros import messages as ros_msgs
            self._clock_sub = self.subscribe("/clock", ros_msgs.CLOCK, self._on_clock, "clock",
                                             cdr=self._on_clock_cdr)
            self._subs.remove(self._clock_sub)
            self._clock_sub.rank = -1
            self._visit[self._clock_sub.reader._ref] = (-1, self._clock_sub, False)

    # -- names / entities -------------------------------------------------------------

    def resolve_name(self, name: str) -> str:
        """Fully qualified, remapped ROS name of a topic/service of this node."""
        return rargs.remap_name(self._ros_args, name, self.node_name, self.namespace)

    def _topic(self, dds_name: str, msgtype: str, request_header: bool) -> Topic:
        key = (dds_name, msgtype, request_header)
        if key not in self._topics:
            self._topics[key] = Topic(self._dp, dds_name, idl_struct(msgtype, request_header))
        return self._topics[key]

    def writer(self, dds_name: str, msgtype: str, spec: QosSpec, *,
               request_header: bool = False, extra: str = "") -> DataWriter:
        """A DDS writer of this participant on the DDS topic ``dds_name`` (QoS and USER_DATA
        as rmw_cyclonedds), announced in ``ros_discovery_info``."""
        self._check_open()
        topic = self._topic(dds_name, msgtype, request_header)
        w = DataWriter(self._dp, topic, dds_qos(spec, user_data(msgtype, extra), writer=True))
        self._keep.append(w)
        if self._discovery_writer is not None:  # not the discovery writer itself (as rmw)
            self._writer_gids.append(w.guid.bytes)
            self._announce()
        return w

    def reader(self, dds_name: str, msgtype: str, spec: QosSpec, *,
               request_header: bool = False, extra: str = "",
               ignore_local: bool = False) -> DataReader:
        """A DDS reader of this participant on the DDS topic ``dds_name`` (QoS and USER_DATA
        as rmw_cyclonedds), attached to the executor's wait set and announced in
        ``ros_discovery_info``; with ``ignore_local`` it matches no writer of this process
        (Cyclone ``IGNORELOCAL_PROCESS``: a composed subscription, fed in-process)."""
        self._check_open()
        topic = self._topic(dds_name, msgtype, request_header)
        qos = dds_qos(spec, user_data(msgtype, extra), writer=False)
        if ignore_local:
            qos = Qos(*qos, Policy.IgnoreLocal.Process)
        r = DataReader(self._dp, topic, qos)
        cond = self._waiter.attach_reader(r)
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

    def next_csid(self) -> str:
        """A new client/service id of this participant (rmw_cyclonedds ``csid``)."""
        self._csid_counter += 1
        return csid_string(self._dp.guid.bytes, self._csid_counter)

    @property
    def closed(self) -> bool:
        """True once :meth:`shutdown` ran (a callback may shut the node down mid-turn)."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"transport of node {self.fully_qualified_name} is shut down")

    # -- interface --------------------------------------------------------------------

    def publisher(self, topic: str, msgtype: str, qos: Any = "default") -> DdsPublisher:
        fq = self.resolve_name(topic)
        idl_struct(msgtype)  # validates the type early
        spec = qos_spec(qos)
        route = None if self.composition is None else \
            self.composition.intra.route(fq, msgtype, spec)
        return DdsPublisher(fq, msgtype, self.writer(dds_topic_name(fq), msgtype, spec),
                            route=route)

    def subscribe(self, topic: str, msgtype: str, callback: Callable[[Any], None],
                  qos: Any = "default", *, raw: bool = False,
                  max_bytes: int | None = None,
                  max_counts: Mapping[str, Any] | None = None,
                  max_per_turn: int | None = None,
                  screen: Callable[[bytes], bool] | None = None,
                  on_drop: Callable[[int], None] | None = None,
                  cdr: Callable[[bytes], bool] | None = None) -> DdsSubscription:
        """Subscribe; with ``raw=True`` (DDS only) ``callback`` gets the CDR bytes.  Input
        bounds (``max_bytes``, ``max_counts``, ``screen``, ``max_per_turn``, ``on_drop``):
        see :meth:`Transport.subscribe`; ``cdr``: see :attr:`Transport.cdr_handlers`."""
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
        self._check_callable("cdr", cdr)
        fq = self.resolve_name(topic)
        spec = qos_spec(qos)
        intra = self.composition.intra if self.composition is not None else None
        in_process = intra is not None and intra.takes(spec)
        reader = self.reader(dds_topic_name(fq), msgtype, spec, ignore_local=in_process)
        sub = DdsSubscription(self, fq, msgtype, callback, reader, raw, limit, counts,
                               depth=spec.depth, max_per_turn=per_turn, screen=screen,
                               on_drop=on_drop, cdr=cdr)
        self._subs.append(sub)
        sub.rank = len(self._visit)
        self._visit[reader._ref] = (sub.rank, sub, False)
        if in_process:
            intra.add_subscription(sub, spec)
        return sub

    def timer(self, period_s: float, callback: Callable[[], None]) -> DdsTimer:
        self._check_open()
        if not callable(callback):
            raise TypeError("callback must be callable")
        if isinstance(period_s, bool) or not isinstance(period_s, (int, float)) \
                or not period_s > 0 or period_s == float("inf"):
            raise ValueError(f"timer period must be a finite number > 0 s, got {period_s!r}")
        period_ns = max(1, round(period_s * 1e9))
        start = self._clock_ns if self._sim_time else time.monotonic_ns()
        what = f"timer callback {getattr(callback, '__qualname__', '')}".rstrip()
        t = DdsTimer(period_ns, self._guarded(what, callback), start, self._sim_time)
        self._timers.append(t)
        return t

    def trigger_client(self, name: str) -> "DdsTriggerClient":
        return DdsTriggerClient(DdsServiceClient(self, name, "std_srvs/srv/Trigger"),
                                asynchronous=self.composition is not None)

    def service_client(self, name: str, srvtype: str) -> "DdsAsyncClient":
        self._check_open()
        return DdsAsyncClient(DdsServiceClient(self, name, srvtype))

    def service(self, name: str, srvtype: str, handler: Callable[[Any], Any]) -> DdsService:
        self._check_open()
        check_service_type(srvtype)
        if not callable(handler):
            raise TypeError("handler must be callable")
        srv = DdsService(self, self.resolve_name(name), srvtype, handler)
        self._add_services([srv])
        return srv

    def action_server(self, name: str, actiontype: str,
                      execute: Callable[..., tuple[str, Any]]) -> DdsActionServer:
        """Serve the action ``actiontype`` under ``name`` as rcl_action lays it out
        (:class:`~vm_dynamics.transport.dds_actions.DdsActionServer`; the contract of
        ``execute``: :meth:`RclpyTransport.action_server`)."""
        self._check_open()
        server = DdsActionServer(self, self.resolve_name(name), actiontype, execute)
        self._add_services(server.services)
        return server

    def _add_services(self, services: Sequence[DdsService]) -> None:
        for srv in services:
            self._services.append(srv)
            self._visit[srv.reader._ref] = (_SERVICE_RANK + len(self._visit), srv, True)

    def now_ns(self) -> int:
        return self._clock_ns if self._sim_time else time.time_ns()

    def count_publishers(self, topic: str) -> int:
        """Writers on the DDS topic of ``topic`` that discovery reports alive (the
        ``DCPSPublication`` built-in topic, as rmw_dds_common's graph cache), this node's
        own included; one read of them answers the counts asked for within
        :data:`PUBLICATIONS_FRESH_S` of it."""
        self._check_open()
        if self._publications is None:
            from cyclonedds.builtin import BuiltinDataReader, BuiltinTopicDcpsPublication
            reader = BuiltinDataReader(self._dp, BuiltinTopicDcpsPublication)
            alive = ReadCondition(reader, SampleState.Any | ViewState.Any | InstanceState.Alive)
            self._keep.extend([reader, alive])
            self._publications = (reader, alive)
        name = dds_topic_name(self.resolve_name(topic))
        now = self.monotonic()
        if self._publication_counts is None \
                or now - self._publication_counts[0] >= PUBLICATIONS_FRESH_S:
            # the built-in reader keeps the latest sample of every writer (instance) it knows
            reader, alive = self._publications
            endpoints = reader.read(N=_MAX_ENDPOINTS, condition=alive)
            self._publication_counts = (now, collections.Counter(e.topic_name
                                                                 for e in endpoints))
        return self._publication_counts[1][name]

    # -- executor ---------------------------------------------------------------------

    def _on_clock(self, msg: Any) -> None:
        from vm_dynamics.ros import messages as ros_msgs
        self._set_clock(ros_msgs.parse_clock(msg))

    def _on_clock_cdr(self, data: bytes) -> bool:
        """A /clock sample read from its CDR (XCDR1 little-endian: the encapsulation, then
        ``int32 sec``, ``uint32 nanosec``), as in lockstep every period; False for any other
        layout or a ``nanosec`` out of range (the message path then decodes and checks it)."""
        if len(data) != 12 or data[:4] != _CDR_LE:
            return False
        sec, nanosec = _CLOCK.unpack_from(data, 4)
        if nanosec >= 1_000_000_000:
            return False
        self._set_clock(sec * 1_000_000_000 + nanosec)
        return True

    def _set_clock(self, ns: int) -> None:
        jumped_back = ns < self._clock_ns
        first = not self._clock_seen
        self._clock_ns = ns
        self._clock_seen = True
        if first or jumped_back:  # ROS time activated / reset: restart the periods
            for t in self._timers:
                if t.sim:
                    t.reset(ns)

    def wait_ns(self, timeout_s: float | None) -> int:
        """How long the executor may wait: ``timeout_s`` or until this node's next wall-time
        timer is due, whichever comes first (ns)."""
        budget = None if timeout_s is None else max(0, int(timeout_s * 1e9))
        now = time.monotonic_ns()
        for t in self._timers:
            if not t.cancelled and not t.sim:
                d = max(0, t.next_ns - now)
                budget = d if budget is None else min(budget, d)
        return 2**62 if budget is None else budget

    def spin_once(self, timeout_s: float | None = None) -> None:
        """Wait for work (data, a due timer, ``timeout_s``), then one turn: each subscription
        and service whose reader holds data drains what is queued (bounded, see
        :meth:`DdsSubscription.drain`), then the due timers run.  (Readers without data are
        not visited: the dynamics node has some twenty, mostly services.)

        After a turn in which a subscription dropped input (more than its ``max_per_turn``
        was queued: a flood), the next turn does not start on data but at the next timer
        (at most :data:`FLOOD_PACE_S` later), the node sleeping meanwhile: otherwise a flood
        keeps it always runnable, and on a busy machine the scheduler then serves its timers
        only at a fair share, like any CPU-bound process."""
        if self._closed:
            return
        if self.composition is not None:       # the composition's executor turns
            self.composition.spin_once(timeout_s)
            return
        wait_ns = self.wait_ns(timeout_s)
        if self._flooded:
            self._flooded = False
            time.sleep(min(wait_ns * 1e-9, FLOOD_PACE_S))
            wait_ns = 0
        ready = self._waiter.wait(wait_ns)
        if self._closed:
            return
        self._flooded = self.run_turn(ready)

    def run_turn(self, ready: set | None) -> bool:
        """The work of one executor turn once the wait returned with the reader handles
        ``ready`` (None: not known which, every reader): the subscriptions and services of
        this node whose reader holds data drain it, then its due timers run.  True if a
        subscription dropped input (a flood)."""
        # a callback may shut the node down: check before touching any entity again
        flooded = False
        if ready is None:                 # not known which: every subscription and service
            visits = sorted(self._visit.values(), key=_rank)
        elif not ready:
            visits = ()
        else:
            visit = self._visit
            visits = [visit[h] for h in ready if h in visit]
            if len(visits) > 1:
                visits.sort(key=_rank)
        for _, entity, service in visits:
            if self._closed:
                return flooded
            if service:
                entity.drain()
            elif entity.drain():
                flooded = True
        mono = time.monotonic_ns()
        for t in list(self._timers):
            if self._closed:
                return flooded
            t.call_if_due(self._clock_ns if t.sim else mono)
        self._timers = [t for t in self._timers if not t.cancelled]
        return flooded

    def spin(self) -> None:
        """Turns until shutdown or a SIGINT/SIGTERM: the ``KeyboardInterrupt`` ends it, and so
        does the signal alone (:func:`~vm_dynamics.core.signals.noted_interrupts`) when the
        exception was swallowed on its way (raised in a middleware call whose error a graph
        query or a callback's guard logs and survives)."""
        with noted_interrupts() as stop:
            try:
                while not self._closed and not stop:
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
        self._waiter.wake()
        if self.composition is not None:
            self.composition.leave(self, [*self._subs, self._clock_sub])
        self._subs.clear()
        self._services.clear()
        self._visit.clear()
        self._timers.clear()
        # delete explicitly, children first, so no stale handle is deleted by a later GC
        own = self._waiter.entities if self.composition is None else []
        for ent in [*reversed(self._keep), *self._topics.values(), *own, self._dp]:
            ent.__del__()
        self._keep.clear()
        self._topics.clear()
        self._dp = None
        release_domain(self.domain_id)
