"""Service clients on a :class:`~vm_dynamics.transport.dds.DdsTransport` participant, laid out
as rmw_cyclonedds lays them out: :class:`DdsServiceClient` (blocking ``call`` or ``send`` +
``response``), and the two forms the nodes use through :class:`~.base.Transport`:
:class:`DdsAsyncClient` (``service_client``) and :class:`DdsTriggerClient`
(``trigger_client``)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Mapping

from .dds_idl import compiled_converter, dds_topic_name
from .dds_wire import split_request, take_raw, userdata_key
from .qos import qos_spec
from .types import build_message, check_message, check_service_type, service_typestore

if TYPE_CHECKING:
    from .dds import DdsTransport

__all__ = ["DdsServiceClient", "DdsAsyncClient", "DdsTriggerClient"]


class DdsServiceClient:
    """rmw_cyclonedds-compatible service client on a :class:`DdsTransport` participant."""

    def __init__(self, transport: DdsTransport, name: str, srvtype: str) -> None:
        check_service_type(srvtype)
        self.srvtype = srvtype
        self.name = transport.resolve_name(name)
        self.client_id = transport.next_csid()
        extra = f"clientid={self.client_id};"
        spec = qos_spec("services")
        self._writer = transport.writer(dds_topic_name(self.name, "request"),
                                         f"{srvtype}_Request", spec, request_header=True,
                                         extra=extra)
        self._reader = transport.reader(dds_topic_name(self.name, "reply"),
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
            sid = userdata_key(rd.qos, "serviceid") if rd is not None else None
            if sid:
                ids.add(sid)
        for h in self._reader.get_matched_publications():
            wr = self._reader.get_matched_publication_data(h)
            if wr is not None and userdata_key(wr.qos, "serviceid") in ids:
                return True
        return False

    def wait_for_service(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self.service_is_ready():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def send(self, request: Any) -> int:
        """Send ``request`` (rosbags ``<srv>_Request``) without waiting; returns its sequence
        number (:meth:`response`)."""
        check_message(request, f"{self.srvtype}_Request", f"service client {self.name}")
        self._seq += 1
        self._writer.write(self._convert(request, self.name, (self.guid, self._seq)))
        return self._seq

    def response(self, seq: int) -> Any:
        """The response to request ``seq`` if it has arrived (responses to other requests
        are dropped), else None; does not wait."""
        for data, info in take_raw(self._reader):
            if not info.valid_data:
                continue
            guid, rseq, body = split_request(data)
            if guid == self.guid and rseq == seq:
                return service_typestore().deserialize_cdr(body, f"{self.srvtype}_Response")
        return None

    def call(self, request: Any, timeout_s: float = 5.0) -> Any:
        """Send ``request`` (rosbags ``<srv>_Request``) and wait for the matching response."""
        seq = self.send(request)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            out = self.response(seq)
            if out is not None:
                return out
            time.sleep(0.005)
        raise TimeoutError(f"no response from service {self.name} within {timeout_s} s")


class DdsAsyncClient:
    """:meth:`Transport.service_client` on DDS: ``send`` writes the request, ``poll`` takes
    the response when it has arrived."""

    def __init__(self, client: DdsServiceClient) -> None:
        self.client = client
        self.name = client.name
        self._seq: int | None = None

    @property
    def pending(self) -> bool:
        return self._seq is not None

    def ready(self) -> bool:
        return self.client.service_is_ready()

    def send(self, fields: Mapping[str, Any]) -> None:
        if self._seq is None:
            self._seq = self.client.send(build_message(f"{self.client.srvtype}_Request",
                                                       fields))

    def poll(self) -> tuple[bool, Any] | None:
        if self._seq is None:
            return None
        out = self.client.response(self._seq)
        if out is None:
            return None
        self._seq = None
        return True, out


class DdsTriggerClient:
    """:meth:`Transport.trigger_client` on DDS: ``send`` waits for the response; with
    ``asynchronous`` (a composed node, whose server may be served by the same executor
    thread) it only writes the request, and ``poll`` takes the response once it arrived."""

    TIMEOUT_S = 30.0

    def __init__(self, client: DdsServiceClient, asynchronous: bool = False) -> None:
        self.client = client
        self.name = client.name
        self.pending = False
        self._result: tuple[bool, str] | None = None
        self._request = service_typestore().types["std_srvs/srv/Trigger_Request"](
            structure_needs_at_least_one_member=0)
        self._async = DdsAsyncClient(client) if asynchronous else None

    def ready(self) -> bool:
        return self.client.service_is_ready()

    def send(self) -> None:
        if self._async is not None:
            self._async.send({})
            self.pending = True
            return
        try:
            r = self.client.call(self._request, self.TIMEOUT_S)
            self._result = (bool(r.success), str(r.message))
        except TimeoutError as exc:
            self._result = (False, str(exc))

    def poll(self) -> tuple[bool, str] | None:
        if self._async is not None:
            got = self._async.poll()
            if got is None:
                return None
            self.pending = False
            return bool(got[1].success), str(got[1].message)
        out, self._result = self._result, None
        return out
