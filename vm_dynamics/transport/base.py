"""The node interface both adapters implement: :class:`Transport` and :class:`Publisher`."""

from __future__ import annotations

import abc
import numbers
from typing import Any, Callable

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


class Transport(abc.ABC):
    """A ROS 2 node: parameters, pub/sub, timers, services, clock, logger, executor."""

    kind: str = ""

    def __init__(self) -> None:
        self.node_name: str = ""
        self.namespace: str = "/"
        self.params: dict[str, Any] = {}
        self.args: list[str] = []
        self.logger: BaseLogger

    @property
    def fully_qualified_name(self) -> str:
        return f'{self.namespace.rstrip("/")}/{self.node_name}'

    @abc.abstractmethod
    def publisher(self, topic: str, msgtype: str, qos: str | QosSpec = "default") -> Publisher:
        """Create a publisher; see the module docstring."""

    @abc.abstractmethod
    def subscribe(self, topic: str, msgtype: str, callback: Callable[[Any], None],
                  qos: str | QosSpec = "default", *, max_bytes: int | None = None,
                  max_per_turn: int | None = None,
                  screen: Callable[[bytes], bool] | None = None,
                  on_drop: Callable[[int], None] | None = None) -> Any:
        """Create a subscription; ``callback(msg)`` gets messages of the transport's library
        (rosidl under rclpy, rosbags on DDS).

        Input bounds, so that no publisher can hold the executor:

        * ``max_bytes``: samples larger than this many serialized bytes are dropped with a
          throttled warning before they are deserialised;
        * ``screen(cdr_bytes) -> bool``: a cheap check of the serialized sample run before it
          is deserialised; ``False`` drops it (the screen accounts for it itself);
        * ``max_per_turn``: at most this many samples of the subscription are delivered per
          executor turn, the newest (keep-last semantics, for topics where a newer sample
          supersedes an older one); the older excess is dropped with a throttled warning and
          reported through ``on_drop(count)``.  Whatever the bound, one turn delivers at most
          the reader's history depth, so timers run between turns under any input rate.
        """

    @abc.abstractmethod
    def timer(self, period_s: float, callback: Callable[[], None]) -> Any:
        """Periodic callback on ROS time; returns an object with ``cancel()``."""

    @abc.abstractmethod
    def service(self, name: str, srvtype: str, handler: Callable[[Any], Any]) -> Any:
        """Serve ``srvtype`` (one of :data:`SERVICE_TYPES`) with ``handler(request)``."""

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

    def __enter__(self) -> 'Transport':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    # shared helpers for the adapters ------------------------------------------------

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

    def _screened(self, screen: Callable[[bytes], bool], data: bytes, topic: str) -> bool:
        """``screen(data)``; an exception from it drops the sample with a throttled warning
        naming the topic (a faulty screen must not end the node)."""
        try:
            return bool(screen(data))
        except Exception as exc:
            self.logger.warn_throttled(("screen", topic), 5.0,
                                       f"dropped a sample on {topic}: its check failed "
                                       f"({type(exc).__name__}: {exc})")
            return False

    def _dropped(self, topic: str, count: int, limit: int,
                 on_drop: Callable[[int], None] | None) -> None:
        """``count`` queued samples of ``topic`` were dropped unprocessed this turn."""
        self.logger.warn_throttled(("dropped", topic), 5.0,
                                   f"dropped {count} queued samples on {topic} unprocessed: "
                                   f"more than max_per_turn={limit} arrived since the last "
                                   f"turn (kept the newest {limit})")
        if on_drop is not None:
            on_drop(count)

    def _oversized(self, topic: str, msgtype: str, size: int, limit: int) -> None:
        self.oversized_dropped = getattr(self, "oversized_dropped", 0) + 1
        self.logger.warn_throttled(("oversized", topic), 5.0,
                                   f"dropped a {size}-byte {msgtype} sample on {topic}: larger "
                                   f"than the limit of {limit} bytes (not deserialised)")

    def _deliver(self, callback: Callable[[Any], None], msg: Any, topic: str) -> bool:
        """Run a subscription callback; ValueError -> throttled warning, False."""
        try:
            callback(msg)
        except ValueError as exc:
            self.logger.warn_throttled(("rejected", topic), 5.0,
                                       f"rejected message on {topic}: {exc}")
            return False
        return True

    def _serve(self, srvtype: str, handler: Callable[[Any], Any],
               request: Any) -> tuple[bool, str]:
        """handler(request) -> ``(success, message)`` of a ``srvtype`` response.

        The handler returns ``(success, message)`` or an object with ``success`` and
        ``message`` (a response message of either library); a ``ValueError`` becomes
        ``(False, str(error))``.
        """
        try:
            result = handler(request)
        except ValueError as exc:
            return False, str(exc)
        if isinstance(result, tuple) and len(result) == 2:
            ok, text = result
        elif hasattr(result, "success") and hasattr(result, "message"):
            ok, text = result.success, result.message
        else:
            raise TypeError(f"{srvtype} handler must return (success, message) or a "
                            f"{srvtype}_Response, got {type(result).__name__}")
        return (coerce_scalar("bool", ok, f"{srvtype} handler success"),
                coerce_scalar("string", text, f"{srvtype} handler message"))
