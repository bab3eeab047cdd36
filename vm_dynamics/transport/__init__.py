"""Transport layer: one small interface for ROS 2 nodes that also run without ROS.

A node is written once against :class:`Transport` and runs on

* ``rclpy`` (:mod:`.rclpy_adapter`) inside a ROS 2 installation (Humble/Jazzy), or
* plain DDS (:mod:`.dds`): Cyclone DDS from PyPI speaking the ROS 2 wire protocol
  (``rt/`` topics, ``pkg::msg::dds_::Type_`` type names, XCDR1, ROS-compatible QoS, RIHS01
  type hash in USER_DATA), so ``ros2 topic echo``/RViz on a machine with ROS see the topics.

Usage::

    from vm_dynamics.transport import make_transport
    from vm_dynamics.ros import messages as rm

    t = make_transport('vm_sim', {'rate': 100.0, 'frames': {'odom': 'odom'}}, sys.argv)
    pub = t.publisher('joint_states', rm.JOINT_STATE, qos='default')
    t.subscribe('~/commands', rm.FLOAT64_MULTI_ARRAY, on_cmd, qos='default')
    t.timer(1.0 / t.params['rate'], step)
    t.service('~/reset', 'std_srvs/srv/Trigger', lambda req: (True, 'reset'))
    t.spin()

Interface (both adapters)
-------------------------
``make_transport(node_name, params_defaults=None, argv=None, *, kind='auto', namespace='')``
    ``kind``: ``'rclpy'``, ``'dds'`` or ``'auto'``.  With ``'auto'`` the environment variable
    ``VM_DYNAMICS_TRANSPORT=rclpy|dds`` decides; if unset, rclpy is used when it imports,
    else DDS.  ``argv`` defaults to ``sys.argv``; ROS arguments (``--ros-args ...``) are
    handled exactly as ROS does (see :mod:`.ros_args`), the rest is ``t.args``.
``t.params``
    dict of the flattened (``a.b``) parameters after ``-p``/``--params-file`` overrides,
    always including ``use_sim_time``.  Types are checked against the defaults like rclpy.
``t.publisher(topic, msgtype, qos='default')`` -> object with ``.publish(msg)``
    ``msg`` is a rosbags typestore message (what :mod:`vm_dynamics.ros.messages` builds);
    another type raises ``TypeError``; field values are coerced strictly (``ValueError`` /
    ``TypeError`` naming the field path for wrong types or out-of-range integers).
``t.subscribe(topic, msgtype, callback, qos='default')``
    ``callback(msg)`` receives a rosbags message.  Undecodable data, or a callback raising
    ``ValueError`` (e.g. a ``ros_msgs.parse_*`` rejecting NaNs), is dropped with a throttled
    warning naming the topic; other exceptions propagate (as in rclpy).
``t.timer(period_s, callback)``
    periodic, on ROS time: wall time, or ``/clock`` when ``use_sim_time`` is true.
``t.service(name, srvtype, handler)``
    ``srvtype`` in :data:`SERVICE_TYPES` (``std_srvs/srv/Trigger``, ``std_srvs/srv/SetBool``);
    ``handler(request)`` gets the rosbags request (``SetBool``: ``request.data``) and returns
    ``(success, message)`` or a response message; a ``ValueError`` becomes
    ``success=False, message=str(error)``.  DDS mode implements the rmw_cyclonedds
    request/reply protocol on ``rq/<name>Request`` / ``rr/<name>Reply``.
``t.now_ns()`` / ``t.now()``
    ROS time in integer nanoseconds / float seconds.
``t.logger``
    ``debug/info/warn/error/fatal(msg)`` and ``warn_throttled(key, period_s, msg)`` (steady
    clock, one throttle window per ``key``).
``t.spin()``, ``t.spin_once(timeout_s=None)``, ``t.shutdown()`` (also a context manager).

QoS profiles (:data:`QOS_PROFILES`; the names follow rclcpp/rclpy presets)

=========== =========== ================ ===== ==========================================
name        reliability durability       depth use
=========== =========== ================ ===== ==========================================
default     reliable    volatile         10    commands, states (rclpy default profile)
sensor      best effort volatile         5     ``qos_profile_sensor_data``
clock       best effort volatile         1     ``/clock`` (rclcpp ``ClockQoS``)
latched     reliable    transient local  1     ``/tf_static``, ``robot_description``
services    reliable    volatile         10    ``qos_profile_services_default``
=========== =========== ================ ===== ==========================================
"""

from __future__ import annotations

import abc
import functools
import importlib
import math
import numbers
import os
import signal
import sys
import time
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np

__all__ = [
    "Transport", "make_transport", "TRANSPORT_ENV", "QosSpec", "QOS_PROFILES", "qos_spec",
    "SERVICE_TYPES", "SERVICE_DEFINITIONS", "service_typestore", "message_typestore",
    "BaseLogger", "StreamLogger", "coerce_scalar", "shutdown_quietly", "ignore_interrupts",
]

TRANSPORT_ENV = "VM_DYNAMICS_TRANSPORT"


# ------------------------------------------------------------------------------ QoS


class QosSpec(NamedTuple):
    """Transport-neutral QoS: KEEP_LAST history of ``depth``."""

    reliable: bool
    transient_local: bool
    depth: int


QOS_PROFILES: dict[str, QosSpec] = {
    "default": QosSpec(reliable=True, transient_local=False, depth=10),
    "sensor": QosSpec(reliable=False, transient_local=False, depth=5),
    "clock": QosSpec(reliable=False, transient_local=False, depth=1),
    "latched": QosSpec(reliable=True, transient_local=True, depth=1),
    "services": QosSpec(reliable=True, transient_local=False, depth=10),
}


def qos_spec(qos: str | QosSpec) -> QosSpec:
    """Profile name or :class:`QosSpec` -> validated :class:`QosSpec`."""
    if isinstance(qos, QosSpec):
        spec = qos
    elif isinstance(qos, str) and qos in QOS_PROFILES:
        spec = QOS_PROFILES[qos]
    else:
        raise ValueError(f"qos must be one of {sorted(QOS_PROFILES)} or a QosSpec, got {qos!r}")
    if not isinstance(spec.depth, int) or isinstance(spec.depth, bool) or spec.depth < 1:
        raise ValueError(f"qos depth must be a positive int, got {spec.depth!r}")
    return spec


# -------------------------------------------------------------------------- types

#: ``.srv`` texts of ros2/common_interfaces ``std_srvs/srv/{Trigger,SetBool}.srv`` (comments
#: dropped; identical on Humble and Jazzy).  The rosbags Jazzy store has no service types, so
#: they are registered from these texts; the RIHS01 hashes this yields are checked against
#: the independent ros2_pyterfaces values in the tests.
SERVICE_DEFINITIONS: dict[str, str] = {
    "std_srvs/srv/Trigger": "---\nbool success\nstring message\n",
    "std_srvs/srv/SetBool": "bool data\n---\nbool success\nstring message\n",
}
SERVICE_TYPES = tuple(SERVICE_DEFINITIONS)
_EMPTY_MEMBER = "structure_needs_at_least_one_member"


def message_typestore():
    """Typestore of topic messages: the one :mod:`vm_dynamics.ros.messages` builds messages with."""
    from vm_dynamics.ros import messages as ros_msgs
    return ros_msgs.TYPESTORE


@functools.lru_cache(maxsize=None)
def service_typestore():
    """rosbags ROS 2 Jazzy typestore + ``<srv>_Request``/``<srv>_Response`` of SERVICE_TYPES.

    Empty request/response structs get rosidl's dummy ``uint8
    structure_needs_at_least_one_member`` (as ``std_msgs/msg/Empty`` has in rosbags).
    """
    from rosbags.interfaces import Nodetype
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    typs: dict[str, Any] = {}
    for srv, text in SERVICE_DEFINITIONS.items():
        pkg, _, name = srv.split("/")
        req_text, sep, resp_text = text.partition("---\n")
        if not sep:
            raise ValueError(f"{srv}: definition lacks the --- separator")
        for part, body in (("Request", req_text), ("Response", resp_text)):
            parsed = get_types_from_msg(body, f"{pkg}/msg/{name}_{part}")
            (consts, fields), = parsed.values()
            if not fields:
                fields = [(_EMPTY_MEMBER, (Nodetype.BASE, ("uint8", 0)))]
            typs[f"{srv}_{part}"] = (consts, fields)
    store.register(typs)
    return store


def fielddefs(msgtype: str) -> tuple[list, list]:
    """(constants, fields) of a message or service request/response type."""
    for store in (message_typestore(), service_typestore()):
        if msgtype in store.fielddefs:
            return store.fielddefs[msgtype]
    raise ValueError(f"unknown ROS message type {msgtype!r}")


def message_class(msgtype: str) -> type:
    for store in (message_typestore(), service_typestore()):
        if msgtype in store.types:
            return store.types[msgtype]
    raise ValueError(f"unknown ROS message type {msgtype!r}")


def check_service_type(srvtype: str) -> str:
    if srvtype not in SERVICE_DEFINITIONS:
        raise ValueError(f"unsupported service type {srvtype!r}; supported: {SERVICE_TYPES}")
    return srvtype


def check_message(msg: Any, msgtype: str, what: str) -> None:
    got = getattr(msg, "__msgtype__", None)
    if got != msgtype:
        raise TypeError(f"{what}: expected a {msgtype} message, got "
                        f"{got or type(msg).__name__}")


# ----------------------------------------------------------------- value coercion

_INT_RANGES = {
    "int8": (-2**7, 2**7 - 1), "uint8": (0, 2**8 - 1), "int16": (-2**15, 2**15 - 1),
    "uint16": (0, 2**16 - 1), "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
    "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1),
    "byte": (-128, 255), "char": (0, 255),
}
_FLOAT_MAX = {"float32": 3.402823466e38, "float64": 1.7976931348623157e308}


def coerce_scalar(base: str, value: Any, where: str) -> Any:
    """Field value -> plain Python value of the ROS base type (strict).

    Reals go to ``float`` (ints accepted, bools rejected), integers must be integral and in
    range, ``char`` (uint8 in ROS 2) is an int 0..255, ``byte`` an int in -128..255 (rosbags
    stores octets as int8, rosidl as unsigned; both denote the same byte; a 1-byte ``bytes``
    is accepted too),
    ``bool`` needs a bool, ``string`` a str.  Raises ``TypeError``/``ValueError`` naming
    ``where``.
    """
    if base in _FLOAT_MAX:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"{where}: expected a real number for {base}, got "
                            f"{type(value).__name__}")
        v = float(value)
        if math.isfinite(v) and abs(v) > _FLOAT_MAX[base]:
            raise ValueError(f"{where}: {v!r} is out of the {base} range")
        return v
    if base in _INT_RANGES:
        if base == "byte" and isinstance(value, (bytes, bytearray)) and len(value) == 1:
            value = value[0]
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{where}: expected an integer for {base}, got "
                            f"{type(value).__name__}")
        v = int(value)
        lo, hi = _INT_RANGES[base]
        if not lo <= v <= hi:
            raise ValueError(f"{where}: {v} is out of the {base} range [{lo}, {hi}]")
        return v
    if base == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{where}: expected a bool, got {type(value).__name__}")
        return bool(value)
    if base == "string":
        if not isinstance(value, str):
            raise TypeError(f"{where}: expected a str, got {type(value).__name__}")
        return value
    raise TypeError(f"{where}: unsupported ROS base type {base!r}")


def coerce_elements(base: str, values: Any, where: str) -> list:
    """A sequence/array field -> list of coerced Python scalars (fast path for ndarrays)."""
    if isinstance(values, (str, bytes)) and base != "byte" and base != "uint8":
        raise TypeError(f"{where}: expected a sequence of {base}, got {type(values).__name__}")
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"{where}: expected a 1-D array, got shape {values.shape}")
        kind = values.dtype.kind
        if base in _FLOAT_MAX and kind in "fiu":
            out = values.astype(np.float64).tolist()
            if base == "float32":
                for j, v in enumerate(out):
                    if math.isfinite(v) and abs(v) > _FLOAT_MAX[base]:
                        raise ValueError(f"{where}[{j}]: {v!r} is out of the float32 range")
            return out
        if base in _INT_RANGES and kind in "iu":
            lo, hi = _INT_RANGES[base]
            if values.size and (int(values.min()) < lo or int(values.max()) > hi):
                raise ValueError(f"{where}: values out of the {base} range [{lo}, {hi}]")
            return [int(v) for v in values.tolist()]
        if base == "bool" and kind == "b":
            return values.tolist()
        values = values.tolist()
    if isinstance(values, (bytes, bytearray)):
        values = list(values)
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"{where}: expected a sequence of {base}, got "
                        f"{type(values).__name__}") from None
    return [coerce_scalar(base, v, f"{where}[{j}]") for j, v in enumerate(items)]


# -------------------------------------------------------------------------- logging

_LEVELS = {"DEBUG": 10, "INFO": 20, "WARN": 30, "ERROR": 40, "FATAL": 50, "UNSET": 0}


class BaseLogger(abc.ABC):
    """info/warn/error + ``warn_throttled(key, period_s, msg)`` (steady clock, per key)."""

    def __init__(self) -> None:
        self._throttle: dict[Any, float] = {}

    @abc.abstractmethod
    def _emit(self, level: str, msg: str) -> None:
        """Write one message of severity ``level`` (DEBUG/INFO/WARN/ERROR/FATAL)."""

    def debug(self, msg: str) -> None:
        self._emit("DEBUG", str(msg))

    def info(self, msg: str) -> None:
        self._emit("INFO", str(msg))

    def warn(self, msg: str) -> None:
        self._emit("WARN", str(msg))

    warning = warn

    def error(self, msg: str) -> None:
        self._emit("ERROR", str(msg))

    def fatal(self, msg: str) -> None:
        self._emit("FATAL", str(msg))

    def warn_throttled(self, key: Any, period_s: float, msg: str) -> bool:
        """Warn at most once per ``period_s`` seconds for ``key``; True if it was logged."""
        if not (isinstance(period_s, numbers.Real) and period_s >= 0):
            raise ValueError(f"throttle period must be a number >= 0, got {period_s!r}")
        now = time.monotonic()
        last = self._throttle.get(key)
        if last is not None and now - last < period_s:
            return False
        self._throttle[key] = now
        self._emit("WARN", str(msg))
        return True


class StreamLogger(BaseLogger):
    """rcutils-style console logger: ``[WARN] [1712345678.123456789] [node]: message``."""

    def __init__(self, name: str, level: str = "INFO", stream: Any = None) -> None:
        super().__init__()
        if level not in _LEVELS:
            raise ValueError(f"log level must be one of {sorted(_LEVELS)}, got {level!r}")
        self.name = name
        self.level = level
        self._stream = stream
        self.records: list[tuple[str, str]] = []

    def _emit(self, level: str, msg: str) -> None:
        if _LEVELS[level] < _LEVELS[self.level]:
            return
        self.records.append((level, msg))
        del self.records[:-200]
        ns = time.time_ns()
        stream = self._stream or sys.stderr
        stream.write(f"[{level}] [{ns // 10**9}.{ns % 10**9:09d}] [{self.name}]: {msg}\n")
        stream.flush()


# ------------------------------------------------------------------------ interface


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
                  qos: str | QosSpec = "default", *, max_bytes: int | None = None) -> Any:
        """Create a subscription; ``callback(msg)`` gets messages of the transport's library
        (rosidl under rclpy, rosbags on DDS).  Samples larger than ``max_bytes`` serialized
        bytes are dropped with a throttled warning before they are deserialised."""

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


def rclpy_importable() -> bool:
    try:
        importlib.import_module("rclpy")
    except ImportError:
        return False
    return True


def resolve_kind(kind: str = "auto", env: Mapping[str, str] | None = None) -> str:
    """Transport kind: explicit ``kind`` > ``$VM_DYNAMICS_TRANSPORT`` > rclpy if importable."""
    env = os.environ if env is None else env
    if kind not in ("auto", "rclpy", "dds"):
        raise ValueError(f"kind must be 'auto', 'rclpy' or 'dds', got {kind!r}")
    if kind == "auto":
        forced = env.get(TRANSPORT_ENV, "").strip().lower()
        if forced:
            if forced not in ("rclpy", "dds"):
                raise ValueError(f"{TRANSPORT_ENV}={env[TRANSPORT_ENV]!r}: expected rclpy or dds")
            kind = forced
        else:
            kind = "rclpy" if rclpy_importable() else "dds"
    if kind == "rclpy" and not rclpy_importable():
        raise ValueError("transport rclpy requested but rclpy cannot be imported (source a ROS 2 "
                         f"setup file, or use {TRANSPORT_ENV}=dds)")
    return kind


def make_transport(node_name: str, params_defaults: Mapping[str, Any] | None = None,
                   argv: Sequence[str] | None = None, *, kind: str = "auto",
                   namespace: str = "") -> Transport:
    """Create the node's transport (see the module docstring)."""
    kind = resolve_kind(kind)
    argv = list(sys.argv if argv is None else argv)
    if kind == "rclpy":
        from .rclpy_adapter import RclpyTransport
        return RclpyTransport(node_name, params_defaults, argv, namespace=namespace)
    try:
        from .dds import DdsTransport
    except ImportError as exc:
        raise ValueError(
            f'no ROS 2 transport: rclpy is not importable and the Cyclone DDS transport needs '
            f'{exc.name or "a missing module"} (install vm_dynamics[dds] to run without ROS, or '
            f'source a ROS 2 setup file to use rclpy)') from None
    return DdsTransport(node_name, params_defaults, argv, namespace=namespace)


def ignore_interrupts() -> None:
    """Ignore SIGINT/SIGTERM from now on (main thread only; elsewhere a no-op)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (ValueError, OSError):  # not the main thread / unsupported
            pass


def shutdown_quietly(transport: 'Transport | None') -> None:
    """Shut a node down after Ctrl-C without a traceback, even if more signals arrive.

    ``ros2 launch`` forwards SIGINT to its children in addition to the terminal's, so a second
    SIGINT often lands while the node is being destroyed.  Signals are ignored from here on
    (the process is exiting anyway), including after ``rclpy.shutdown()`` re-installs the
    previous handlers.
    """
    ignore_interrupts()
    try:
        if transport is not None:
            transport.shutdown()
    except KeyboardInterrupt:  # pragma: no cover - only if a handler was re-installed
        pass
    finally:
        ignore_interrupts()
