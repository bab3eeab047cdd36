"""The node interface both adapters implement: :class:`Transport` and :class:`Publisher`."""

from __future__ import annotations

import abc
import numbers
import os
import traceback
from typing import Any, Callable, Mapping

from .logger import BaseLogger
from .qos import QosSpec
from .types import coerce_scalar

__all__ = ["Publisher", "Transport"]


class Publisher(abc.ABC):
    topic: str
    msgtype: str

    @abc.abstractmethod
    def publish(self, msg: Any) -> None:
        """Publish a rosbags message of type :attr:`msgtype`."""

    #: True if :meth:`publish_cdr` writes serialized samples on this transport
    writes_cdr = False

    def publish_cdr(self, data: bytes) -> None:
        """Write one sample already serialized (XCDR1 little-endian, with its encapsulation
        header; :mod:`~vm_dynamics.transport.array_cdr`), where :attr:`writes_cdr`."""
        raise NotImplementedError(f"{type(self).__name__} does not write serialized samples")

    def has_subscribers(self) -> bool:
        """True if a subscription is matched now (and when the transport cannot tell): a
        node may skip building a message nobody would receive."""
        return True


class Transport(abc.ABC):
    """A ROS 2 node: parameters, pub/sub, timers, services, clock, logger, executor."""

    kind: str = ""
    #: True if :meth:`subscribe` takes ``cdr=handler``: ``handler(cdr_bytes) -> bool`` gets
    #: each sample (after the size and screen checks) before it is decoded, and True means
    #: it took it; False leaves it to the message path (:meth:`deliver_cdr`)
    cdr_handlers = False

    def __init__(self) -> None:
        self.node_name: str = ""
        self.namespace: str = "/"
        self.params: dict[str, Any] = {}
        self.args: list[str] = []
        self.logger: BaseLogger
        #: samples dropped before decoding (too large, or a sequence over its count limit)
        self.oversized_dropped = 0
        #: callbacks (subscriptions, timers, service handlers) that raised, see :meth:`deliver`
        self.callback_failures = 0

    @property
    def fully_qualified_name(self) -> str:
        return f'{self.namespace.rstrip("/")}/{self.node_name}'

    @abc.abstractmethod
    def publisher(self, topic: str, msgtype: str, qos: str | QosSpec = "default") -> Publisher:
        """Create a publisher; see the module docstring."""

    @abc.abstractmethod
    def subscribe(self, topic: str, msgtype: str, callback: Callable[[Any], None],
                  qos: str | QosSpec = "default", *, max_bytes: int | None = None,
                  max_counts: Mapping[str, Any] | None = None,
                  max_per_turn: int | None = None,
                  screen: Callable[[bytes], bool] | None = None,
                  on_drop: Callable[[int], None] | None = None) -> Any:
        """Create a subscription; ``callback(msg)`` gets messages of the transport's library
        (rosidl under rclpy, rosbags on DDS).

        Input bounds, so that no publisher can hold the executor:

        * ``max_bytes``: samples larger than this many serialized bytes are dropped with a
          throttled warning before they are deserialised;
        * ``max_counts``: samples whose top-level sequence ``field`` holds more than
          ``max_counts[field]`` elements (an int, or ``(int, name of the limit)``; read from
          the serialized sample, :func:`vm_dynamics.ros.messages.check_sequence_counts`) are
          dropped likewise;
        * ``screen(cdr_bytes) -> bool``: a cheap check of the serialized sample run before it
          is deserialised; ``False`` drops it (the screen accounts for it itself);
        * ``max_per_turn``: at most this many samples of the subscription are delivered per
          executor turn, the newest (keep-last semantics, for topics where a newer sample
          supersedes an older one); the older excess is dropped with a throttled warning and
          reported through ``on_drop(count)``.  Whatever the bound, one turn delivers at most
          the reader's history depth, so timers run between turns under any input rate.

        A callback never ends the node: a ``ValueError`` is a rejected message (throttled
        warning), any other ``Exception`` a failed callback (throttled error naming the topic
        and the exception, counted in :attr:`callback_failures`); the node keeps running."""

    @abc.abstractmethod
    def timer(self, period_s: float, callback: Callable[[], None]) -> Any:
        """Periodic callback on ROS time; returns an object with ``cancel()``.  An exception
        from ``callback`` is logged (throttled) and counted like a subscription's; the timer
        keeps running."""

    @abc.abstractmethod
    def count_publishers(self, topic: str) -> int:
        """Publishers of ``topic`` (a node-relative or absolute ROS name) in the ROS graph,
        this node's own included, as discovery currently sees them (rclpy
        ``Node.count_publishers``).  A node checks its outputs with it: a second publisher
        of ``/clock`` or ``/joint_states`` is a second simulation on the same domain."""

    @abc.abstractmethod
    def service(self, name: str, srvtype: str, handler: Callable[[Any], Any]) -> Any:
        """Serve ``srvtype`` with ``handler(request)``: for :data:`SERVICE_TYPES` (std_srvs
        Trigger, SetBool) the handler answers ``(success, message)`` (:meth:`serve`); for the
        other registered services (simulation_interfaces,
        :func:`~vm_dynamics.transport.types.check_service_type`) it returns the response's
        fields as a mapping, nested messages as mappings too (:meth:`serve_fields`)."""

    def trigger_client(self, name: str) -> Any:
        """A client of the std_srvs/Trigger service ``name`` (node-relative or absolute):
        ``ready()`` (the service is matched), ``send()`` (a request; one at a time),
        ``pending`` and ``poll() -> None | (success, message)`` (the response, once).  On
        DDS ``send`` waits for the response (up to 30 s; none: ``(False, <why>)``); on rclpy it
        is asynchronous (the executor delivers the response while the node spins)."""
        raise ValueError(f"{type(self).__name__}: no service clients on this transport")

    def service_client(self, name: str, srvtype: str) -> Any:
        """An asynchronous client of the service ``name`` (node-relative or absolute) of type
        ``srvtype``: ``ready()`` (the service is matched), ``send(fields)`` (a request from a
        mapping of its fields; one at a time), ``pending`` and ``poll() -> None | (ok,
        response or why)`` (the response once, as this transport decodes it).  Never blocks:
        the caller polls (on rclpy the executor delivers the response while the node spins)."""
        raise ValueError(f"{type(self).__name__}: no service clients on this transport")

    @abc.abstractmethod
    def now_ns(self) -> int:
        """ROS time, integer nanoseconds."""

    def now(self) -> float:
        """ROS time, float seconds."""
        return self.now_ns() * 1e-9

    @abc.abstractmethod
    def spin_once(self, timeout_s: float | None = None) -> None:
        """Wait up to ``timeout_s`` for work and execute what is ready."""

    @abc.abstractmethod
    def spin(self) -> None:
        """Execute callbacks until shutdown or Ctrl-C."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Destroy the node and release the middleware (idempotent)."""

    def shutdown_requested(self) -> bool:
        """True once the middleware itself took a shutdown signal (rclpy's own SIGINT/SIGTERM
        handlers invalidate its context); a transport whose signals reach Python: False."""
        return False

    def __enter__(self) -> 'Transport':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    # shared helpers for the adapters ------------------------------------------------
    # The ``_check_*`` validators serve the adapters' own methods; the public hooks below
    # (screened, report_*, deliver, serve) are what an adapter's entities -- its
    # subscriptions and services, which may live in their own modules -- call on their
    # transport: one policy for dropping bad input and surviving failed callbacks.

    @staticmethod
    def _check_max_bytes(max_bytes: Any) -> int:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, numbers.Integral) \
                or max_bytes < 4:
            raise ValueError(f"max_bytes must be an int >= 4 (CDR header), got {max_bytes!r}")
        return int(max_bytes)

    @staticmethod
    def _check_max_per_turn(max_per_turn: Any) -> int | None:
        if max_per_turn is None:
            return None
        if isinstance(max_per_turn, bool) or not isinstance(max_per_turn, numbers.Integral) \
                or max_per_turn < 1:
            raise ValueError(f"max_per_turn must be an int >= 1 or None, got {max_per_turn!r}")
        return int(max_per_turn)

    @staticmethod
    def _check_callable(name: str, fn: Any) -> None:
        if fn is not None and not callable(fn):
            raise TypeError(f"{name} must be callable or None, got {type(fn).__name__}")

    def screened(self, screen: Callable[[bytes], bool], data: bytes, topic: str) -> bool:
        """``screen(data)``; an exception from it drops the sample with a throttled warning
        naming the topic (a faulty screen must not end the node)."""
        try:
            return bool(screen(data))
        except Exception as exc:
            self.logger.warn_throttled(("screen", topic), 5.0,
                                       f"dropped a sample on {topic}: its check failed "
                                       f"({type(exc).__name__}: {exc})")
            return False

    def report_dropped(self, topic: str, count: int, limit: int,
                 on_drop: Callable[[int], None] | None) -> None:
        """``count`` queued samples of ``topic`` were dropped unprocessed this turn."""
        self.logger.warn_throttled(("dropped", topic), 5.0,
                                   f"dropped {count} queued samples on {topic} unprocessed: "
                                   f"more than max_per_turn={limit} arrived since the last "
                                   f"turn (kept the newest {limit})")
        if on_drop is not None:
            on_drop(count)

    def report_oversized(self, topic: str, msgtype: str, size: int, limit: int) -> None:
        """A ``size``-byte sample of ``topic`` was dropped for exceeding ``max_bytes``."""
        self.oversized_dropped += 1
        self.logger.warn_throttled(("oversized", topic), 5.0,
                                   f"dropped a {size}-byte {msgtype} sample on {topic}: larger "
                                   f"than the limit of {limit} bytes (not deserialised)")

    @staticmethod
    def _check_max_counts(max_counts: Any) -> dict | None:
        if max_counts is None:
            return None
        if not isinstance(max_counts, Mapping):
            raise ValueError(f"max_counts must be a mapping field -> limit, got "
                             f"{type(max_counts).__name__}")
        return dict(max_counts)

    def report_too_many(self, topic: str, msgtype: str, exc: ValueError) -> None:
        """A sample dropped by :func:`~vm_dynamics.ros.messages.check_sequence_counts`."""
        self.oversized_dropped += 1
        self.logger.warn_throttled(("too-many", topic), 5.0,
                                   f"dropped a {msgtype} sample on {topic}: {exc}")

    def deliver(self, callback: Callable[[Any], None], msg: Any, topic: str) -> bool:
        """Run a subscription callback; False if it raised.  ``ValueError``: a rejected
        message (throttled warning); any other ``Exception``: :meth:`_callback_failed`.
        ``KeyboardInterrupt``/``SystemExit`` are not ``Exception`` and still end the node."""
        try:
            callback(msg)
        except ValueError as exc:
            self.logger.warn_throttled(("rejected", topic), 5.0,
                                       f"rejected message on {topic}: {exc}")
            return False
        except Exception as exc:  # noqa: BLE001 - no callback failure may end the node
            self._callback_failed(f"callback of {topic}", exc)
            return False
        return True

    def deliver_cdr(self, handler: Callable[[bytes], bool], data: bytes,
                    topic: str) -> bool | None:
        """Run a subscription's CDR handler: True if it took the sample, None if it left it
        to the message path, False if it raised (handled as by :meth:`deliver`)."""
        try:
            return True if handler(data) else None
        except ValueError as exc:
            self.logger.warn_throttled(("rejected", topic), 5.0,
                                       f"rejected message on {topic}: {exc}")
        except Exception as exc:  # noqa: BLE001 - no callback failure may end the node
            self._callback_failed(f"callback of {topic}", exc)
        return False

    def _callback_failed(self, what: str, exc: Exception) -> None:
        """Count a failed callback and log it: throttled per (callback, exception type), with
        the exception, where it was raised and the running count."""
        self.callback_failures = getattr(self, "callback_failures", 0) + 1
        where = ""
        frames = traceback.extract_tb(exc.__traceback__)
        if frames:
            last = frames[-1]
            where = f" at {os.path.basename(last.filename)}:{last.lineno} in {last.name}"
        text = str(exc)
        if len(text) > 300:
            text = text[:300] + "…"
        self.logger.error_throttled(
            ("callback-failed", what, type(exc).__name__), 5.0,
            f"{what} failed: {type(exc).__name__}: {text}{where}; the node keeps running "
            f"({self.callback_failures} failed callback(s) so far)")

    def _guarded(self, what: str, callback: Callable[[], None]) -> Callable[[], None]:
        """``callback`` (a timer's) with every ``Exception`` logged by :meth:`_callback_failed`."""
        def run() -> None:
            try:
                callback()
            except Exception as exc:  # noqa: BLE001 - no callback failure may end the node
                self._callback_failed(what, exc)
        return run

    def serve_fields(self, srvtype: str, handler: Callable[[Any], Any],
                     request: Any) -> Mapping[str, Any]:
        """handler(request) -> the response fields of a ``srvtype`` that is not a status
        service (see :meth:`service`).  A handler that raises or returns something other than
        a mapping is a failed callback (:meth:`_callback_failed`), answered with the zero
        response (an empty mapping): handlers report their own errors in their response."""
        try:
            result = handler(request)
            if not isinstance(result, Mapping):
                raise TypeError(f"{srvtype} handler must return a mapping of response "
                                f"fields, got {type(result).__name__}")
            return result
        except Exception as exc:  # noqa: BLE001 - no handler failure may end the node
            self._callback_failed(f"{srvtype} handler", exc)
            return {}

    def report_bad_response(self, srvtype: str, exc: Exception) -> None:
        """A handler's response fields did not fit ``srvtype``'s response: a failed callback
        (answered with the zero response by the caller)."""
        self._callback_failed(f"{srvtype} handler (its response)", exc)

    def serve(self, srvtype: str, handler: Callable[[Any], Any],
               request: Any) -> tuple[bool, str]:
        """handler(request) -> ``(success, message)`` of a ``srvtype`` response.

        The handler returns ``(success, message)`` or an object with ``success`` and
        ``message`` (a response message of either library); a ``ValueError`` becomes
        ``(False, str(error))``; any other exception, or a result of another form, is a failed
        callback (:meth:`_callback_failed`) answered with ``(False, "internal error: ...")``.
        """
        try:
            result = handler(request)
            if isinstance(result, tuple) and len(result) == 2:
                ok, text = result
            elif hasattr(result, "success") and hasattr(result, "message"):
                ok, text = result.success, result.message
            else:
                raise TypeError(f"{srvtype} handler must return (success, message) or a "
                                f"{srvtype}_Response, got {type(result).__name__}")
            return (coerce_scalar("bool", ok, f"{srvtype} handler success"),
                    coerce_scalar("string", text, f"{srvtype} handler message"))
        except ValueError as exc:
            return False, str(exc)
        except Exception as exc:  # noqa: BLE001 - no handler failure may end the node
            self._callback_failed(f"{srvtype} handler", exc)
            return False, f"internal error: {type(exc).__name__}: {exc}"
