"""The entities of a :class:`~vm_dynamics.transport.dds.DdsTransport`: publishers,
subscriptions (bounded input, see :meth:`DdsSubscription.drain`), timers and service servers.
Each calls back into its transport through the transport's public adapter helpers
(:class:`~vm_dynamics.transport.base.Transport`) and its endpoint factory
(``reader``/``writer``/``next_csid``).

Receiving does not go through the ``IdlStruct`` deserialiser: raw CDR samples are taken from
the reader and decoded by rosbags (the lockstep messages first by the one-pass decoders of
:mod:`.fast_cdr`, which leave anything unusual to rosbags), so a message that does not decode
is dropped with a warning instead of raising inside the executor.  Services follow rmw_cyclonedds
``rmw_send_response``/``rmw_take_request``: the reply echoes the request's guid/seq, and the
server waits up to :data:`REPLY_WAIT_S` for the client's reply reader (matched by
``clientid=`` in its USER_DATA) before answering, as rmw does."""
from __future__ import annotations

import time
from typing import Any, Callable

from cyclonedds._clayer import ddspy_write
from cyclonedds.core import DDSException
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader

from .base import Publisher
from .dds_idl import compiled_converter, dds_topic_name
from .dds_wire import split_request, take_raw, userdata_key
from .exact_cdr import exact_serializer
from .fast_cdr import fast_decoder
from .qos import qos_spec
from .types import build_message, check_message, service_typestore, status_service

__all__ = ["DdsPublisher", "DdsSubscription", "DdsTimer", "DdsService", "REPLY_WAIT_S"]

#: How long a service waits for the client's reply reader before dropping the reply.
REPLY_WAIT_S = 0.1


class DdsPublisher(Publisher):
    """A DDS writer of one topic (:meth:`DdsTransport.publisher`).

    In a composition (:mod:`.dds_executor`) ``route`` gives the subscriptions of the composed
    nodes that take each sample in-process (its serialized bytes, queued for the executor's
    next turn); the sample is written to DDS as well, for the readers outside the process."""

    def __init__(self, topic: str, msgtype: str, writer: DataWriter, *,
                 route: Any = None) -> None:
        self.topic = topic
        self.msgtype = msgtype
        self.writer = writer
        self._convert = compiled_converter(msgtype)
        self._exact = exact_serializer(msgtype)
        self._route = route

    writes_cdr = True

    def publish_cdr(self, data: bytes) -> None:
        """Write one serialized sample as it is (and hand it to the in-process route)."""
        if self._route is not None:
            self._route.send(data)
        ret = ddspy_write(self.writer._ref, data)
        if ret < 0:
            raise DDSException(ret, f"while writing a {self.msgtype} sample on {self.topic}")

    def publish(self, msg: Any) -> None:
        """Write one sample: a message already in exact wire form is serialised by rosbags
        and written as raw CDR (:mod:`~vm_dynamics.transport.exact_cdr`, ~5x faster); any
        other goes through the strict converter, which coerces it or names the bad field."""
        check_message(msg, self.msgtype, f"publisher {self.topic}")
        data = self._exact(msg)
        if data is None:
            sample = self._convert(msg, f"{self.topic} {self.msgtype}")
            if self._route is None or not self._route.targets():
                self.writer.write(sample)
                return
            data = sample.serialize()        # XCDR1 as the writer would put it on the wire
        self.publish_cdr(data)

    @property
    def matched_subscriptions(self) -> int:
        return len(self.writer.get_matched_subscriptions())

    def has_subscribers(self) -> bool:
        return self.matched_subscriptions > 0 or bool(
            self._route is not None and self._route.targets())


class DdsSubscription:
    """A reader and its callback; :meth:`drain` is one executor turn of it.

    ``dropped`` counts the samples taken but not delivered because more than
    ``max_per_turn`` were queued (see :meth:`Transport.subscribe`).
    """

    def __init__(self, transport: Any, topic: str, msgtype: str,
                 callback: Callable[[Any], None], reader: DataReader, raw: bool,
                 max_bytes: int | None = None, max_counts: dict | None = None, *,
                 depth: int = 64, max_per_turn: int | None = None,
                 screen: Callable[[bytes], bool] | None = None,
                 on_drop: Callable[[int], None] | None = None,
                 cdr: Callable[[bytes], bool] | None = None) -> None:
        self.max_bytes = max_bytes
        self.max_counts = max_counts
        self.topic = topic
        self.msgtype = msgtype
        self.depth = depth
        self.max_per_turn = max_per_turn
        self.dropped = 0
        self._transport = transport
        self._callback = callback
        self.reader = reader
        self._raw = raw
        self._screen = screen
        self._on_drop = on_drop
        self._cdr = cdr               # takes a sample before it is decoded (True: taken)
        #: order in its node's executor turn (the /clock subscription first)
        self.rank = 0
        # the one-pass decoder of the lockstep messages (None: rosbags' for every sample)
        self._fast = None if raw else fast_decoder(msgtype, max_counts)

    def handle_raw(self, data: bytes) -> bool:
        """Decode one CDR sample and deliver it; False (and a warning) if it was dropped."""
        if self.max_bytes is not None and len(data) > self.max_bytes:
            self._transport.report_oversized(self.topic, self.msgtype, len(data), self.max_bytes)
            return False
        if self._screen is not None and not self._transport.screened(self._screen, data,
                                                                       self.topic):
            return False
        if self._raw:
            return self._transport.deliver(self._callback, bytes(data), self.topic)
        if self._cdr is not None:
            taken = self._transport.deliver_cdr(self._cdr, data, self.topic)
            if taken is not None:
                return taken
        msg = self._fast(data) if self._fast is not None else None
        if msg is not None:
            return self._transport.deliver(self._callback, msg, self.topic)
        from vm_dynamics.ros import messages as ros_msgs
        try:
            msg = ros_msgs.deserialize(data, self.msgtype, self.max_counts)
        except ros_msgs.SequenceCountError as exc:
            self._transport.report_too_many(self.topic, self.msgtype, exc)
            return False
        except ValueError as exc:
            self._transport.logger.warn_throttled(
                ("malformed", self.topic), 5.0,
                f"dropped undecodable {self.msgtype} sample on {self.topic}: {exc}")
            return False
        return self._transport.deliver(self._callback, msg, self.topic)

    def drain(self) -> bool:
        """One turn: take what is queued -- at most the reader's history depth, so samples
        that arrive meanwhile wait for the next turn and a publisher faster than the
        callbacks cannot keep the executor from its timers -- and deliver the newest
        ``max_per_turn`` of it, dropping (and counting) the older excess.  Returns True if
        it dropped input (a flood)."""
        return self.deliver_samples(
            [d for d, info in take_raw(self.reader, self.depth) if info.valid_data])

    def deliver_samples(self, data: list) -> bool:
        """Deliver the serialized samples ``data`` of one turn (taken from the reader, or
        queued in-process): the newest ``max_per_turn`` of them, the older excess dropped and
        counted.  True if it dropped input."""
        excess = len(data) - self.max_per_turn if self.max_per_turn is not None else 0
        if excess > 0:
            del data[:excess]
            self.dropped += excess
            self._transport.report_dropped(self.topic, excess, self.max_per_turn, self._on_drop)
        for sample in data:
            if self._transport.closed:  # a callback may shut the node down
                break
            self.handle_raw(sample)
        return excess > 0

    @property
    def matched_publications(self) -> list:
        """Endpoint data (topic, type name, QoS incl. USER_DATA) of matched writers."""
        return [self.reader.get_matched_publication_data(h)
                for h in self.reader.get_matched_publications()]


class DdsTimer:
    """A timer of the single-threaded DDS executor (ROS time if ``sim``)."""

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


class DdsService:
    """A service server: requests on ``rq/<name>Request``, replies on ``rr/<name>Reply``,
    endpoints tagged ``serviceid=`` as rmw_cyclonedds does."""

    def __init__(self, transport: Any, name: str, srvtype: str,
                 handler: Callable[..., Any], *, deferred: bool = False) -> None:
        self.name = name
        #: ``handler(request, answer)`` answers later by calling ``answer(fields)`` (an
        #: action's get_result waits for its goal); otherwise ``handler(request)`` answers
        self.deferred = deferred
        self.srvtype = srvtype
        self._transport = transport
        self._handler = handler
        self.service_id = transport.next_csid()
        extra = f"serviceid={self.service_id};"
        spec = qos_spec("services")
        self.depth = spec.depth
        req_t, rep_t = f"{srvtype}_Request", f"{srvtype}_Response"
        self._reader = transport.reader(dds_topic_name(name, "request"), req_t, spec,
                                        request_header=True, extra=extra)
        self._writer = transport.writer(dds_topic_name(name, "reply"), rep_t, spec,
                                        request_header=True, extra=extra)
        self._convert = compiled_converter(rep_t, True)

    @property
    def reader(self) -> DataReader:
        """The request reader (the executor drains the service when it has data)."""
        return self._reader

    def drain(self) -> None:
        """One turn: the requests queued now (at most the reader's history depth)."""
        for data, info in take_raw(self._reader, self.depth):
            if info.valid_data and not self._transport.closed:
                self._handle(data, info)

    def _client_reader_matched(self, writer_handle: int) -> bool:
        wr = self._reader.get_matched_publication_data(writer_handle)
        clientid = userdata_key(wr.qos, "clientid") if wr is not None else None
        if clientid is None:
            return True  # rmw: a client without an id is assumed ready
        for h in self._writer.get_matched_subscriptions():
            rd = self._writer.get_matched_subscription_data(h)
            if rd is not None and userdata_key(rd.qos, "clientid") == clientid:
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
        if not self.deferred:
            self.reply(guid, seq, info.publication_handle, self.respond(request))
            return
        handle = info.publication_handle

        def answer(fields: Any) -> None:
            self.reply(guid, seq, handle, self.response(fields))
        try:
            self._handler(request, answer)
        except Exception as exc:  # noqa: BLE001 - no handler failure may end the node
            self._transport.report_bad_response(self.srvtype, exc)
            answer({})

    def respond(self, request: Any) -> Any:
        """The handler's response to ``request`` (a rosbags ``<srv>_Response``): status
        services answer ``(success, message)``, the others their fields
        (:meth:`Transport.service`); fields that do not fit the type are a failed callback
        answered with the zero response."""
        rep_t = f"{self.srvtype}_Response"
        if status_service(self.srvtype):
            ok, text = self._transport.serve(self.srvtype, self._handler, request)
            return service_typestore().types[rep_t](success=ok, message=text)
        return self.response(self._transport.serve_fields(self.srvtype, self._handler,
                                                          request))

    def response(self, fields: Any) -> Any:
        """The rosbags ``<srv>_Response`` of a mapping of fields; fields that do not fit the
        type are a failed callback answered with the zero response."""
        rep_t = f"{self.srvtype}_Response"
        try:
            response = build_message(rep_t, fields)
            self._convert(response, self.name, (0, 0))       # every field checked here
        except (TypeError, ValueError) as exc:
            self._transport.report_bad_response(self.srvtype, exc)
            response = build_message(rep_t)
        return response

    def reply(self, guid: int, seq: int, publication_handle: int, response: Any) -> None:
        """Write ``response`` to the request ``(guid, seq)`` of the client whose request
        writer is ``publication_handle``, once its reply reader is matched (as rmw)."""
        deadline = time.monotonic() + REPLY_WAIT_S
        while not self._client_reader_matched(publication_handle):
            if time.monotonic() > deadline:
                self._transport.logger.warn_throttled(
                    ("noreply", self.name), 5.0,
                    f"{self.name}: client reply reader not matched within "
                    f"{REPLY_WAIT_S * 1e3:.0f} ms; response dropped (as rmw_cyclonedds)")
                return
            time.sleep(0.005)
        self._writer.write(self._convert(response, self.name, (guid, seq)))
