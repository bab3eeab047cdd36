"""Strict stand-in for ``rclpy`` + rosidl message packages, for testing without ROS.

Implements exactly the rclpy API that ``vm_dynamics.transport.rclpy_adapter`` calls, with the
signatures of rclpy Humble/Jazzy (ros2/rclpy branches ``humble`` b488272b and ``jazzy``
85415f71, where the two differ the *intersection* is accepted), so a wrong call fails here with
the ``TypeError`` Python raises for a real rclpy signature mismatch:

* ``rclpy``: ``init(*, args, context, domain_id, signal_handler_options)``, ``ok(*, context)``,
  ``shutdown(*, context, uninstall_handlers)``, ``spin(node, executor=None)``,
  ``spin_once(node, *, executor=None, timeout_sec=None)``;
  ``rclpy.utilities.remove_ros_args(args=None)``;
* ``rclpy.node.Node(node_name, *, context, cli_args, namespace, use_global_arguments,
  enable_rosout, start_parameter_services, parameter_overrides, allow_undeclared_parameters,
  automatically_declare_parameters_from_overrides)`` with ``get_name``, ``get_namespace``,
  ``get_logger``, ``get_clock``, ``declare_parameter(name, value=None, descriptor=None,
  ignore_override=False)``, ``get_parameter(name)``, ``create_publisher(msg_type, topic,
  qos_profile, *, callback_group, event_callbacks, qos_overriding_options, publisher_class)``,
  ``create_subscription(msg_type, topic, callback, qos_profile, *, callback_group,
  event_callbacks, qos_overriding_options, raw)`` (publisher/subscription ``topic_name``;
  ``publish`` takes a message of the publisher's type or its CDR ``bytes``, as rclpy's),
  ``create_timer(timer_period_sec, callback, callback_group=None, clock=None)``,
  ``create_service(srv_type, srv_name, callback, *, qos_profile, callback_group)``,
  ``count_publishers(topic_name)``, ``destroy_node()``;
* ``rclpy.qos.QoSProfile(**kwargs)`` (rclpy's slot and history/depth checks) and the
  ``HistoryPolicy``/``ReliabilityPolicy``/``DurabilityPolicy`` enums;
* ``rclpy.exceptions`` parameter exceptions, ``rclpy.executors.ExternalShutdownException``;
* the logger's ``debug/info/warning/error/fatal(message, **kwargs)`` with rclpy's per-call-site
  context checks (same call site must keep severity; only the documented filter keywords).

Parameter semantics follow ``rclpy/node.py`` (type inferred from the default,
``InvalidParameterTypeException`` for an override of another type, ``use_sim_time`` declared
by every node); overrides are computed with ``vm_dynamics.transport.ros_args`` (this stand-in
tests the adapter's use of the API, not the argument parser, which has its own tests).

Message packages (``sensor_msgs.msg``, ``std_msgs.msg``, ..., ``rcl_interfaces.msg``,
``std_srvs.srv``) are generated from the rosbags ROS 2 Jazzy typestore (the real ``.msg``
files of common_interfaces) following ``rosidl_generator_py/resource/_msg.py.em``: ``__slots__``,
``_fields_and_field_types`` type strings, and the property setters' assertions (``float`` for
double, ``bytes`` of length 1 for ``byte``/octet, ``array.array`` for numeric sequences, numpy
arrays of the exact dtype for numeric fixed arrays, integer ranges...).  Every published
message is converted back to a rosbags message *from those rosidl type strings* (an
implementation independent of the adapter's converter) and serialised with rosbags
``serialize_cdr``; the CDR is recorded in :attr:`FakeRos.published`.
"""

from __future__ import annotations

import array
import enum
import inspect
import math
import os
import re
import sys
import types
from collections import UserList, UserString
from collections.abc import Sequence, Set
from typing import Any, Callable

import numpy as np
from rosbags.interfaces import Nodetype
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from vm_dynamics.transport import ros_args as _ros_args

# ------------------------------------------------------------------ rosidl classes

#: .msg base type -> rosidl IDL type name (rosidl_adapter MSG_TYPE_TO_IDL: char -> uint8).
_IDL_NAME = {"bool": "boolean", "byte": "octet", "char": "uint8", "float32": "float",
             "float64": "double", "int8": "int8", "uint8": "uint8", "int16": "int16",
             "uint16": "uint16", "int32": "int32", "uint32": "uint32", "int64": "int64",
             "uint64": "uint64", "string": "string"}
#: rosidl_generator_py SPECIAL_NESTED_BASIC_TYPES
_SPECIAL = {"float": ("f", np.float32), "double": ("d", np.float64), "int8": ("b", np.int8),
            "uint8": ("B", np.uint8), "int16": ("h", np.int16), "uint16": ("H", np.uint16),
            "int32": ("i", np.int32), "uint32": ("I", np.uint32), "int64": ("q", np.int64),
            "uint64": ("Q", np.uint64)}
_PYTYPE = {"boolean": bool, "octet": bytes, "float": float, "double": float, "string": str,
           **{k: int for k in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                               "uint64")}}
_FLOAT_BOUND = {"float": 3.402823466e+38, "double": 1.7976931348623157e+308}
_DUMMY = "structure_needs_at_least_one_member"

#: std_srvs/srv/{Trigger,SetBool}.srv of ros2/common_interfaces (copied independently of
#: vm_dynamics.transport.SERVICE_DEFINITIONS).
_STD_SRVS = {"Trigger": ("", "bool success\nstring message"),
             "SetBool": ("bool data", "bool success\nstring message")}

_TYPE_RE = re.compile(r"(?:sequence<(?P<seq>[^,>]+)(?:, (?P<bound>\d+))?>|"
                      r"(?P<arr>[^\[]+)\[(?P<size>\d+)\]|(?P<plain>.+))\Z")


def _parse_type(ts: str) -> tuple[str, str, int | None]:
    """rosidl type string -> (kind 'scalar'|'sequence'|'array', element type, size/bound)."""
    m = _TYPE_RE.match(ts)
    if m.group("seq"):
        return "sequence", m.group("seq"), int(m.group("bound")) if m.group("bound") else None
    if m.group("arr"):
        return "array", m.group("arr"), int(m.group("size"))
    return "scalar", m.group("plain"), None


def _int_bounds(t: str) -> tuple[int, int]:
    n = int(t.lstrip("uint"))
    return (0, 2**n) if t.startswith("u") else (-2**(n - 1), 2**(n - 1))


def _is_namespaced(t: str) -> bool:
    return "/" in t


def _check_scalar(field: str, t: str, value: Any, classes: dict) -> None:
    """The assertions of a rosidl scalar/nested setter."""
    if _is_namespaced(t):
        assert isinstance(value, classes[t]), \
            f"The '{field}' field must be a sub message of type '{t.split('/')[-1]}'"
    elif t == "octet":
        assert isinstance(value, bytes) and len(value) == 1, \
            f"The '{field}' field must be of type 'bytes' or 'ByteString' with length 1"
    elif t.startswith("string<"):
        bound = int(t[7:-1])
        assert isinstance(value, (str, UserString)) and len(value) <= bound, \
            f"The '{field}' field must be string value not longer than {bound}"
    elif t == "string":
        assert isinstance(value, str), f"The '{field}' field must be of type 'str'"
    else:
        py = _PYTYPE[t]
        assert isinstance(value, py), f"The '{field}' field must be of type '{py.__name__}'"
        if py is int:
            lo, hi = _int_bounds(t)
            assert lo <= value < hi, f"The '{field}' field must be an integer in [{lo}, {hi - 1}]"
        elif py is float:
            b = _FLOAT_BOUND[t]
            assert not (value < -b or value > b) or math.isinf(value), \
                f"The '{field}' field must be a {t} in [{-b}, {b}]"


def _check_and_store(field: str, ts: str, value: Any, classes: dict) -> Any:
    """rosidl property setter: assertions, then the stored representation."""
    kind, t, size = _parse_type(ts)
    if kind == "scalar":
        _check_scalar(field, t, value, classes)
        return value
    if t in _SPECIAL:
        code, dtype = _SPECIAL[t]
        if kind == "array" and isinstance(value, np.ndarray):
            assert value.dtype == dtype, \
                f"The '{field}' numpy.ndarray() must have the dtype of '{np.dtype(dtype)}'"
            assert value.size == size, f"The '{field}' numpy.ndarray() must have a size of {size}"
            return value
        if kind == "sequence" and isinstance(value, array.array):
            assert value.typecode == code, \
                f"The '{field}' array.array() must have the type code of '{code}'"
            assert size is None or len(value) <= size
            return value
    ok = ((isinstance(value, Sequence) or isinstance(value, Set) or isinstance(value, UserList))
          and not isinstance(value, str) and not isinstance(value, UserString))
    if ok and kind == "array":
        ok = len(value) == size
    if ok and kind == "sequence" and size is not None:
        ok = len(value) <= size
    if ok:
        if _is_namespaced(t):
            ok = all(isinstance(v, classes[t]) for v in value)
        else:
            py = _PYTYPE["string" if t.startswith("string") else t]
            ok = all(isinstance(v, py) for v in value)
            if ok and py is int:
                lo, hi = _int_bounds(t)
                ok = all(lo <= v < hi for v in value)
            elif ok and py is float:
                b = _FLOAT_BOUND[t]
                ok = all(not (v < -b or v > b) or math.isinf(v) for v in value)
    assert ok, f"The '{field}' field must be a set or sequence of '{t}' ({ts})"
    if t in _SPECIAL:
        code, dtype = _SPECIAL[t]
        return np.array(value, dtype=dtype) if kind == "array" else array.array(code, value)
    return value


def _default(ts: str, classes: dict) -> Any:
    kind, t, size = _parse_type(ts)
    if kind == "array":
        if t in _SPECIAL:
            return np.zeros(size, dtype=_SPECIAL[t][1])
        if t == "octet":
            return [bytes([0]) for _ in range(size)]
        return [_default(t, classes) for _ in range(size)]
    if kind == "sequence":
        return array.array(_SPECIAL[t][0], []) if t in _SPECIAL else []
    if _is_namespaced(t):
        return classes[t]()
    return {"boolean": False, "octet": bytes([0]), "string": ""}.get(
        "string" if t.startswith("string") else t, 0.0 if t in ("float", "double") else 0)


def _make_class(rostype: str, fields: list, classes: dict) -> type:
    pkg, _, name = rostype.split("/")
    members = [(n, d) for n, d in fields if not (len(fields) == 1 and n == _DUMMY)]
    ftypes = {n: _type_string(d) for n, d in members}

    def __init__(self, **kwargs: Any) -> None:
        assert all("_" + k in self.__slots__ for k in kwargs), \
            "Invalid arguments passed to constructor: %s" % ", ".join(
                sorted(k for k in kwargs if "_" + k not in self.__slots__))
        self._check_fields = True
        for n, ts in ftypes.items():
            setattr(self, n, kwargs[n] if n in kwargs else _default(ts, classes))

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, self.__class__):
            return False
        for n in ftypes:
            a, b = getattr(self, n), getattr(other, n)
            if isinstance(a, np.ndarray):
                if not np.array_equal(a, b):
                    return False
            elif a != b:
                return False
        return True

    def __repr__(self) -> str:
        return f"{pkg}.msg.{name}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in ftypes) + ")"

    sub = rostype.split("/")[1]
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name.split("_")[0]).lower()
    ns: dict[str, Any] = {
        # rosidl_generator_py puts class T of pkg/msg/T into module pkg.msg._t (snake case)
        "__module__": f"{pkg}.{sub}._{snake}",
        "__slots__": ["_" + n for n in ftypes] + ["_check_fields"],
        "_fields_and_field_types": dict(ftypes), "_rostype": rostype,
        "__init__": __init__, "__eq__": __eq__, "__repr__": __repr__, "__hash__": None,
        "get_fields_and_field_types": classmethod(lambda cls: dict(cls._fields_and_field_types)),
    }
    for n, ts in ftypes.items():
        def getter(self: Any, _n: str = n) -> Any:
            return getattr(self, "_" + _n)

        def setter(self: Any, value: Any, _n: str = n, _ts: str = ts) -> None:
            object.__setattr__(self, "_" + _n, _check_and_store(_n, _ts, value, classes))
        ns[n] = property(getter, setter)
    return type(name, (), ns)


def _type_string(desc: tuple) -> str:
    node, info = desc
    if node == Nodetype.BASE:
        base, bound = info
        return f"string<{bound}>" if base == "string" and bound else _IDL_NAME[base]
    if node == Nodetype.NAME:
        pkg, _, name = info.split("/")
        return f"{pkg}/{name}"
    elem, size = info
    et = _type_string(elem)
    if node == Nodetype.ARRAY:
        return f"{et}[{size}]"
    return f"sequence<{et}, {size}>" if size else f"sequence<{et}>"


def _rostype_of(t: str) -> str:
    pkg, name = t.split("/")
    return f"{pkg}/msg/{name}" if not name.endswith(("_Request", "_Response")) \
        else f"{pkg}/srv/{name}"


# ------------------------------------------------------- rosidl <-> rosbags (own)


def rosidl_to_rosbags(obj: Any, store: Any) -> Any:
    """Convert via the rosidl type strings only (independent of the adapter)."""
    rostype = type(obj)._rostype
    kw = {}
    for n, ts in type(obj)._fields_and_field_types.items():
        kw[n] = _value_to_rosbags(getattr(obj, n), ts, store)
    if _DUMMY in [f for f, _ in store.fielddefs[rostype][1]]:
        kw[_DUMMY] = 0
    return store.types[rostype](**kw)


def _value_to_rosbags(v: Any, ts: str, store: Any) -> Any:
    kind, t, _ = _parse_type(ts)
    if kind == "scalar":
        if _is_namespaced(t):
            return rosidl_to_rosbags(v, store)
        if t == "octet":
            return np.frombuffer(v, dtype=np.int8)[0].item()
        return v
    if _is_namespaced(t):
        return [rosidl_to_rosbags(x, store) for x in v]
    if t in _SPECIAL:
        return np.array(v, dtype=_SPECIAL[t][1])
    if t == "boolean":
        return np.array(v, dtype=np.bool_)
    if t == "octet":
        return np.frombuffer(b"".join(v), dtype=np.int8).copy()
    return list(v)


def rosbags_to_rosidl(msg: Any, classes: dict) -> Any:
    cls = classes[_short(msg.__msgtype__)]
    out = cls()
    for n, ts in cls._fields_and_field_types.items():
        setattr(out, n, _value_to_rosidl(getattr(msg, n), ts, classes))
    return out


def _short(rostype: str) -> str:
    pkg, _, name = rostype.split("/")
    return f"{pkg}/{name}"


def _value_to_rosidl(v: Any, ts: str, classes: dict) -> Any:
    kind, t, _ = _parse_type(ts)
    if kind == "scalar":
        if _is_namespaced(t):
            return rosbags_to_rosidl(v, classes)
        if t == "octet":
            return bytes([int(v) & 0xFF])
        return v.item() if isinstance(v, np.generic) else v
    if _is_namespaced(t):
        return [rosbags_to_rosidl(x, classes) for x in v]
    if t in _SPECIAL:
        code, dtype = _SPECIAL[t]
        return np.asarray(v, dtype=dtype) if kind == "array" else array.array(code, list(v))
    if t == "octet":
        return [bytes([int(x) & 0xFF]) for x in v]
    if t == "boolean":
        return [bool(x) for x in v]
    return list(v)


# ---------------------------------------------------------------------- rclpy


class RCLError(RuntimeError):
    pass


class ParameterException(Exception):
    def __init__(self, error_msg: str, parameters: Any) -> None:
        Exception.__init__(self, f"{error_msg}: {parameters}")


class ParameterNotDeclaredException(ParameterException):
    def __init__(self, parameters: Any) -> None:
        ParameterException.__init__(self, "Invalid access to undeclared parameter(s)", parameters)


class ParameterAlreadyDeclaredException(ParameterException):
    def __init__(self, parameters: Any) -> None:
        ParameterException.__init__(self, "Parameter(s) already declared", parameters)


class InvalidParameterTypeException(ParameterException):
    def __init__(self, desired_parameter: Any, expected_type: Any) -> None:
        ParameterException.__init__(
            self, f"Trying to set parameter '{desired_parameter.name}' to "
            f"'{desired_parameter.value}' of type '{desired_parameter.type_}', expecting type "
            f"'{expected_type}'", desired_parameter.name)


class InvalidParameterValueException(ParameterException):
    def __init__(self, parameter: str, value: Any, reason: str) -> None:
        ParameterException.__init__(self, f"Invalid parameter value ({value}) for parameter. "
                                    f"Reason: {reason}", parameter)


class ExternalShutdownException(Exception):
    pass


class HistoryPolicy(enum.IntEnum):
    SYSTEM_DEFAULT = 0
    KEEP_LAST = 1
    KEEP_ALL = 2
    UNKNOWN = 3


class ReliabilityPolicy(enum.IntEnum):
    SYSTEM_DEFAULT = 0
    RELIABLE = 1
    BEST_EFFORT = 2
    UNKNOWN = 3


class DurabilityPolicy(enum.IntEnum):
    SYSTEM_DEFAULT = 0
    TRANSIENT_LOCAL = 1
    VOLATILE = 2
    UNKNOWN = 3


class InvalidQoSProfileException(Exception):
    pass


class QoSProfile:
    """rclpy.qos.QoSProfile: kwargs-only, history and/or depth required."""

    __slots__ = ["_history", "_depth", "_reliability", "_durability", "_lifespan", "_deadline",
                 "_liveliness", "_liveliness_lease_duration",
                 "_avoid_ros_namespace_conventions"]

    def __init__(self, **kwargs: Any) -> None:
        assert all("_" + key in self.__slots__ for key in kwargs.keys()), \
            "Invalid arguments passed to constructor: %r" % kwargs.keys()
        if "history" not in kwargs:
            if "depth" not in kwargs:
                raise InvalidQoSProfileException("History and/or depth settings are required.")
            kwargs["history"] = HistoryPolicy.KEEP_LAST
        assert isinstance(kwargs["history"], (HistoryPolicy, int))
        self._history = HistoryPolicy(kwargs["history"])
        if self._history == HistoryPolicy.KEEP_LAST and "depth" not in kwargs:
            raise InvalidQoSProfileException("History set to KEEP_LAST without a depth setting.")
        self._depth = kwargs.get("depth", 10)
        assert isinstance(self._depth, int) and self._depth >= 0
        self._reliability = ReliabilityPolicy(kwargs.get("reliability",
                                                         ReliabilityPolicy.RELIABLE))
        self._durability = DurabilityPolicy(kwargs.get("durability", DurabilityPolicy.VOLATILE))
        for k in ("lifespan", "deadline", "liveliness", "liveliness_lease_duration",
                  "avoid_ros_namespace_conventions"):
            setattr(self, "_" + k, kwargs.get(k))

    history = property(lambda self: self._history)
    depth = property(lambda self: self._depth)
    reliability = property(lambda self: self._reliability)
    durability = property(lambda self: self._durability)


class Parameter:
    class Type(enum.IntEnum):
        NOT_SET = 0
        BOOL = 1
        INTEGER = 2
        DOUBLE = 3
        STRING = 4
        BYTE_ARRAY = 5
        BOOL_ARRAY = 6
        INTEGER_ARRAY = 7
        DOUBLE_ARRAY = 8
        STRING_ARRAY = 9

        @classmethod
        def from_parameter_value(cls, v: Any) -> 'Parameter.Type':
            """rclpy/parameter.py, verbatim order of checks."""
            if v is None:
                return cls.NOT_SET
            if isinstance(v, bool):
                return cls.BOOL
            if isinstance(v, int):
                return cls.INTEGER
            if isinstance(v, float):
                return cls.DOUBLE
            if isinstance(v, str):
                return cls.STRING
            if isinstance(v, (list, tuple, array.array)):
                if all(isinstance(x, bytes) for x in v):
                    return cls.BYTE_ARRAY
                if all(isinstance(x, bool) for x in v):
                    return cls.BOOL_ARRAY
                if all(isinstance(x, int) for x in v):
                    return cls.INTEGER_ARRAY
                if all(isinstance(x, float) for x in v):
                    return cls.DOUBLE_ARRAY
                if all(isinstance(x, str) for x in v):
                    return cls.STRING_ARRAY
                raise TypeError("The given value is not a list of one of the allowed types"
                                f" '{v}'.")
            raise TypeError(f"The given value is not one of the allowed types '{v}'.")

    def __init__(self, name: str, type_: Any = None, value: Any = None) -> None:
        if type_ is None:
            type_ = Parameter.Type.from_parameter_value(value)
        self.name = name
        self.type_ = Parameter.Type(type_)
        self.value = value


class _Time:
    def __init__(self, nanoseconds: int) -> None:
        self._ns = nanoseconds

    @property
    def nanoseconds(self) -> int:
        return self._ns


class _Clock:
    def __init__(self, fake: 'FakeRos') -> None:
        self._fake = fake

    def now(self) -> _Time:
        return _Time(self._fake.now_ns)


_FILTER_PARAMS = {"throttle": ("throttle_duration_sec", "throttle_time_source_type"),
                  "skip_first": ("skip_first",), "once": ("once",)}


class _Logger:
    """RcutilsLogger subset with rclpy's per-caller context checks."""

    _severities = {"DEBUG": 10, "INFO": 20, "WARN": 30, "ERROR": 40, "FATAL": 50}

    def __init__(self, name: str, fake: 'FakeRos') -> None:
        self.name = name
        self._fake = fake
        self._contexts: dict[tuple, dict] = {}

    def _log(self, message: str, severity: str, **kwargs: Any) -> bool:
        allowed = {p for ps in _FILTER_PARAMS.values() for p in ps}
        for k in kwargs:
            if k not in allowed:
                raise TypeError(f'parameter "{k}" is not one of the recognized logging options '
                                f'"{sorted(allowed)}"')
        frame = inspect.currentframe()
        while frame is not None and os.path.abspath(frame.f_code.co_filename) == \
                os.path.abspath(__file__):
            frame = frame.f_back
        caller = (frame.f_code.co_name, frame.f_code.co_filename, frame.f_lineno, frame.f_lasti)
        filters = sorted(f for f, ps in _FILTER_PARAMS.items() if any(kwargs.get(p) for p in ps))
        ctx = self._contexts.setdefault(caller, {"severity": severity, "filters": filters})
        if ctx["severity"] != severity:
            raise ValueError("Logger severity cannot be changed between calls.")
        if ctx["filters"] != filters:
            raise ValueError("Requested logging filters cannot be changed between calls.")
        if not isinstance(message, str):
            raise TypeError(f"message must be a str, got {type(message).__name__}")
        self._fake.logs.append((severity, self.name, message))
        return True

    def debug(self, message: str, **kwargs: Any) -> bool:
        return self._log(message, "DEBUG", **kwargs)

    def info(self, message: str, **kwargs: Any) -> bool:
        return self._log(message, "INFO", **kwargs)

    def warning(self, message: str, **kwargs: Any) -> bool:
        return self._log(message, "WARN", **kwargs)

    def error(self, message: str, **kwargs: Any) -> bool:
        return self._log(message, "ERROR", **kwargs)

    def fatal(self, message: str, **kwargs: Any) -> bool:
        return self._log(message, "FATAL", **kwargs)


def _check_msg_type(msg_type: Any, what: str) -> None:
    if not (isinstance(msg_type, type) and hasattr(msg_type, "_fields_and_field_types")):
        raise TypeError(f"{what} must be a rosidl message class, got {msg_type!r}")


def _check_qos(qos_profile: Any) -> QoSProfile:
    if isinstance(qos_profile, QoSProfile):
        return qos_profile
    if isinstance(qos_profile, int) and not isinstance(qos_profile, bool):
        return QoSProfile(depth=qos_profile)
    raise TypeError(f"Expected QoSProfile or int, but received {type(qos_profile)!r}")


class _Publisher:
    def __init__(self, node: 'Node', msg_type: type, topic: str, qos: QoSProfile) -> None:
        self.msg_type = msg_type
        self.qos_profile = qos
        self._topic = topic
        self._node = node

    @property
    def topic_name(self) -> str:
        return self._topic

    def publish(self, msg: Any) -> None:
        fake = self._node._fake
        if isinstance(msg, bytes):          # rclpy: serialized, sent as it is (publish_raw)
            cdr = msg
        elif not isinstance(msg, self.msg_type):
            raise TypeError(f"Expected {self.msg_type}, got {type(msg)}")
        else:
            bag = rosidl_to_rosbags(msg, fake.store)
            cdr = bytes(fake.store.serialize_cdr(bag, self.msg_type._rostype))
        fake.published.append((self._topic, self.msg_type._rostype, self.qos_profile, cdr))


class _Subscription:
    def __init__(self, node: 'Node', msg_type: type, topic: str, callback: Callable,
                 qos: QoSProfile) -> None:
        self.msg_type = msg_type
        self.callback = callback
        self.qos_profile = qos
        self._topic = topic

    @property
    def topic_name(self) -> str:
        return self._topic


class _Timer:
    def __init__(self, period_ns: int, callback: Callable, start_ns: int) -> None:
        self.timer_period_ns = period_ns
        self.callback = callback
        self.next_ns = start_ns + period_ns
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _Service:
    def __init__(self, srv_type: Any, name: str, callback: Callable, qos: QoSProfile) -> None:
        self.srv_type = srv_type
        self.srv_name = name
        self.callback = callback
        self.qos_profile = qos


_services_default = None


class Node:
    """rclpy.node.Node subset (Humble signature, which Jazzy extends)."""

    def __init__(self, node_name: str, *, context: Any = None, cli_args: list | None = None,
                 namespace: str | None = None, use_global_arguments: bool = True,
                 enable_rosout: bool = True, start_parameter_services: bool = True,
                 parameter_overrides: list | None = None,
                 allow_undeclared_parameters: bool = False,
                 automatically_declare_parameters_from_overrides: bool = False) -> None:
        fake = _FAKE
        if not fake.initialized:
            raise RuntimeError("rclpy.init() has not been called")  # NotInitializedException
        if not isinstance(node_name, str):
            raise TypeError("node_name must be a str")
        if namespace is not None and not isinstance(namespace, str):
            raise TypeError("namespace must be a str")
        if cli_args is not None and not (isinstance(cli_args, list)
                                         and all(isinstance(a, str) for a in cli_args)):
            raise TypeError("cli_args must be a list of str")
        self._fake = fake
        args_list = []
        if use_global_arguments:
            args_list.append(fake.global_args)
        if cli_args is not None:
            args_list.append(_ros_args.parse_ros_args(cli_args))
        base = args_list[-1] if args_list else _ros_args.RosArgs()
        ns = namespace or "/"
        ns = ns if ns.startswith("/") else "/" + ns
        self._name, self._ns = _ros_args.node_identity(base, node_name, ns)
        fqn = f'{self._ns.rstrip("/")}/{self._name}'
        self._overrides: dict[str, Any] = {}
        for a in args_list:
            self._overrides.update(_ros_args.parameter_overrides_for(a, fqn))
        self._params: dict[str, Parameter] = {}
        self._descriptors: dict[str, Any] = {}
        self._logger = _Logger(fqn.lstrip("/").replace("/", "."), fake)
        self._clock = _Clock(fake)
        self.publishers: list[_Publisher] = []
        self.subscriptions: list[_Subscription] = []
        self.timers: list[_Timer] = []
        self.services: list[_Service] = []
        self.destroyed = False
        self.declare_parameter("use_sim_time", False)
        fake.nodes.append(self)

    def _resolve(self, name: str) -> str:
        if not isinstance(name, str):
            raise TypeError(f"topic/service name must be a str, got {type(name).__name__}")
        return _ros_args.expand_topic_name(name, self._name, self._ns)

    def get_name(self) -> str:
        return self._name

    def get_namespace(self) -> str:
        return self._ns

    def get_logger(self) -> _Logger:
        return self._logger

    def get_clock(self) -> _Clock:
        return self._clock

    def declare_parameter(self, name: str, value: Any = None, descriptor: Any = None,
                          ignore_override: bool = False) -> Parameter:
        ParameterDescriptor = _CLASSES["rcl_interfaces/ParameterDescriptor"]
        if not isinstance(name, str):
            raise TypeError(f"First element {name} at index 0 in parameters list is not a str.")
        descriptor = ParameterDescriptor() if descriptor is None else descriptor
        if not isinstance(descriptor, ParameterDescriptor):
            raise TypeError(f"Third element {descriptor} at index 0 in parameters list is not "
                            "a ParameterDescriptor.")
        if not descriptor.dynamic_typing and value is not None:
            descriptor.type = int(Parameter.Type.from_parameter_value(value))
        if not ignore_override and name in self._overrides:
            value = self._overrides[name]
        if name in self._params:
            raise ParameterAlreadyDeclaredException([name])
        param = Parameter(name, value=value)
        if not descriptor.dynamic_typing and param.type_ != Parameter.Type.NOT_SET \
                and int(param.type_) != descriptor.type:
            raise InvalidParameterTypeException(param, Parameter.Type(descriptor.type).name)
        self._params[name] = param
        self._descriptors[name] = descriptor
        return param

    def get_parameter(self, name: str) -> Parameter:
        if name not in self._params:
            raise ParameterNotDeclaredException(name)
        return self._params[name]

    def create_publisher(self, msg_type: Any, topic: str, qos_profile: Any, *,
                         callback_group: Any = None, event_callbacks: Any = None,
                         qos_overriding_options: Any = None,
                         publisher_class: Any = None) -> _Publisher:
        _check_msg_type(msg_type, "msg_type")
        pub = _Publisher(self, msg_type, self._resolve(topic), _check_qos(qos_profile))
        self.publishers.append(pub)
        return pub

    def create_subscription(self, msg_type: Any, topic: str, callback: Callable,
                            qos_profile: Any, *, callback_group: Any = None,
                            event_callbacks: Any = None, qos_overriding_options: Any = None,
                            raw: bool = False) -> _Subscription:
        _check_msg_type(msg_type, "msg_type")
        if not callable(callback):
            raise TypeError("callback must be callable")
        sub = _Subscription(self, msg_type, self._resolve(topic), callback,
                            _check_qos(qos_profile))
        sub.raw = bool(raw)
        self.subscriptions.append(sub)
        return sub

    def create_timer(self, timer_period_sec: float, callback: Callable,
                     callback_group: Any = None, clock: Any = None) -> _Timer:
        if isinstance(timer_period_sec, bool) or not isinstance(timer_period_sec, (int, float)):
            raise TypeError("timer_period_sec must be a number")
        if not callable(callback):
            raise TypeError("callback must be callable")
        period_ns = int(float(timer_period_sec) * 1e9)
        if period_ns <= 0:
            raise ValueError("timer period must be > 0")  # rcl: RCL_RET_INVALID_ARGUMENT
        t = _Timer(period_ns, callback, self._fake.now_ns)
        self.timers.append(t)
        return t

    def create_service(self, srv_type: Any, srv_name: str, callback: Callable, *,
                       qos_profile: Any = None, callback_group: Any = None) -> _Service:
        if not (hasattr(srv_type, "Request") and hasattr(srv_type, "Response")):
            raise TypeError(f"srv_type must be a rosidl service class, got {srv_type!r}")
        if not callable(callback):
            raise TypeError("callback must be callable")
        srv = _Service(srv_type, self._resolve(srv_name), callback,
                       QoSProfile(depth=10) if qos_profile is None else _check_qos(qos_profile))
        self.services.append(srv)
        return srv

    def count_publishers(self, topic_name: str) -> int:
        """rclpy ``Node.count_publishers``: publishers of the expanded name in the graph (every
        node of this fake, plus :attr:`FakeRos.foreign_publishers`)."""
        if not isinstance(topic_name, str):
            raise TypeError("topic_name must be a str")
        name = self._resolve(topic_name)
        return (sum(1 for node in self._fake.nodes for p in node.publishers
                    if p.topic_name == name) + self._fake.foreign_publishers.get(name, 0))

    def destroy_node(self) -> None:
        self.destroyed = True
        self.publishers.clear()
        self.subscriptions.clear()
        self.timers.clear()
        self.services.clear()


# --------------------------------------------------------------------- fake world


class FakeRos:
    """State of the stand-in; tests drive time, inject messages and call services."""

    def __init__(self) -> None:
        self.store = get_typestore(Stores.ROS2_JAZZY)
        typs = {}
        for srv, (req, resp) in _STD_SRVS.items():
            for part, text in (("Request", req), ("Response", resp)):
                (c, f), = get_types_from_msg(text, f"std_srvs/msg/{srv}_{part}").values()
                typs[f"std_srvs/srv/{srv}_{part}"] = (c, f or [(_DUMMY, (Nodetype.BASE,
                                                                          ("uint8", 0)))])
        self.store.register(typs)
        self.initialized = False
        self.global_args = _ros_args.RosArgs()
        self.init_args: list | None = None
        self.nodes: list[Node] = []
        self.published: list[tuple[str, str, QoSProfile, bytes]] = []
        #: publishers of other processes in the graph, by topic (Node.count_publishers)
        self.foreign_publishers: dict[str, int] = {}
        self.logs: list[tuple[str, str, str]] = []
        self.now_ns = 1_700_000_000 * 10**9
        self._queue: list[tuple[Callable, Any]] = []
        self.max_spin_steps = 10_000

    # driving -------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        self.now_ns += int(round(seconds * 1e9))

    def inject(self, topic: str, rosbags_msg: Any) -> int:
        """Queue ``rosbags_msg`` (serialised and re-read through CDR) for subscribers of
        ``topic``; returns the number of matching subscriptions."""
        if not hasattr(rosbags_msg, "__msgtype__"):  # a stand-in rosidl message
            rosbags_msg = rosidl_to_rosbags(rosbags_msg, self.store)
        rostype = rosbags_msg.__msgtype__
        cdr = self.store.serialize_cdr(rosbags_msg, rostype)
        n = 0
        for node in self.nodes:
            for sub in node.subscriptions:
                if sub.topic_name == topic:
                    if sub.msg_type._rostype != rostype:
                        raise TypeError(f"{topic}: subscription type {sub.msg_type._rostype} "
                                        f"!= {rostype}")
                    if getattr(sub, "raw", False):  # rclpy raw=True: the serialized bytes
                        self._queue.append((sub.callback, bytes(cdr)))
                        n += 1
                        continue
                    bag = self.store.deserialize_cdr(cdr, rostype)
                    self._queue.append((sub.callback, rosbags_to_rosidl(bag, _CLASSES)))
                    n += 1
        return n

    def call_service(self, name: str, **fields: Any) -> Any:
        """Invoke a service like an rclpy executor; returns the rosbags response."""
        for node in self.nodes:
            for srv in node.services:
                if srv.srv_name == name:
                    req = srv.srv_type.Request(**fields)
                    resp = srv.callback(req, srv.srv_type.Response())
                    if not isinstance(resp, srv.srv_type.Response):
                        raise TypeError(f"service callback returned {type(resp)!r}")
                    bag = rosidl_to_rosbags(resp, self.store)
                    cdr = self.store.serialize_cdr(bag, bag.__msgtype__)
                    return self.store.deserialize_cdr(cdr, bag.__msgtype__)
        raise KeyError(f"no service {name!r}")

    def _step(self, node: Node, timeout_ns: int | None) -> bool:
        """One executor step: one queued message, else due timers after waiting."""
        if self._queue:
            cb, msg = self._queue.pop(0)
            cb(msg)
            return True
        live = [t for t in node.timers if not t.cancelled]
        if not live:
            return False
        nxt = min(t.next_ns for t in live)
        if nxt > self.now_ns:
            if timeout_ns is not None and nxt > self.now_ns + timeout_ns:
                self.now_ns += timeout_ns
                return False
            self.now_ns = nxt
        for t in live:
            if t.next_ns <= self.now_ns and not node.destroyed:
                t.next_ns += t.timer_period_ns
                t.callback()
        return True


_FAKE = FakeRos()
_CLASSES: dict[str, type] = {}


def _init(*, args: list | None = None, context: Any = None, domain_id: int | None = None,
          signal_handler_options: Any = None) -> None:
    if _FAKE.initialized:
        raise RuntimeError("Context.init() must only be called once")
    if args is not None and not all(isinstance(a, str) for a in args):
        raise TypeError("args must be a list of str")
    _FAKE.global_args = _ros_args.parse_ros_args(list(args) if args is not None
                                                 else list(sys.argv))
    _FAKE.init_args = None if args is None else list(args)
    _FAKE.initialized = True


def _ok(*, context: Any = None) -> bool:
    return _FAKE.initialized


def _shutdown(*, context: Any = None, uninstall_handlers: bool | None = None) -> None:
    if not _FAKE.initialized:
        raise RuntimeError("Context must be initialized before it can be shutdown")
    _FAKE.initialized = False


def _spin_once(node: Node, *, executor: Any = None, timeout_sec: float | None = None) -> None:
    if not isinstance(node, Node):
        raise TypeError("node must be an rclpy Node")
    if not _FAKE.initialized:
        raise RuntimeError("context is not initialized")
    timeout_ns = None if timeout_sec is None or timeout_sec < 0 else int(timeout_sec * 1e9)
    _FAKE._step(node, timeout_ns)


def _spin(node: Node, executor: Any = None) -> None:
    if not isinstance(node, Node):
        raise TypeError("node must be an rclpy Node")
    for _ in range(_FAKE.max_spin_steps):
        if not _FAKE.initialized or node.destroyed:
            raise ExternalShutdownException()  # Jazzy: context shut down while spinning
        if not _FAKE._step(node, None):
            return  # nothing can ever happen any more
    raise RuntimeError("strict_rclpy: spin did not terminate within max_spin_steps")


class SingleThreadedExecutor:
    """``rclpy.executors.SingleThreadedExecutor(*, context=None)``: ``add_node``,
    ``remove_node``, ``spin_once(timeout_sec=None)``, ``shutdown(timeout_sec=None)``.  A turn
    after which nothing can ever happen any more (no timer, nothing queued) ends the spin as a
    shut-down context does (``ExternalShutdownException``), so a test's spin terminates."""

    def __init__(self, *, context: Any = None) -> None:
        self._nodes: list = []
        self._turns = 0

    def add_node(self, node: Node) -> bool:
        if not isinstance(node, Node):
            raise TypeError("node must be an rclpy Node")
        if node not in self._nodes:
            self._nodes.append(node)
        return True

    def remove_node(self, node: Node) -> None:
        if node in self._nodes:
            self._nodes.remove(node)

    def spin_once(self, timeout_sec: float | None = None) -> None:
        if not _FAKE.initialized or not self._nodes or self._nodes[0].destroyed:
            raise ExternalShutdownException()
        self._turns += 1
        if self._turns > _FAKE.max_spin_steps:
            raise RuntimeError("strict_rclpy: spin did not terminate within max_spin_steps")
        node = self._nodes[0]
        if not _FAKE._queue and not any(not t.cancelled for t in node.timers):
            raise ExternalShutdownException()   # nothing can ever happen any more
        timeout_ns = None if timeout_sec is None or timeout_sec < 0 else int(timeout_sec * 1e9)
        _FAKE._step(node, timeout_ns)

    def shutdown(self, timeout_sec: float | None = None) -> bool:
        self._nodes.clear()
        return True


def _deserialize_message(serialized_message: bytes, message_type: Any) -> Any:
    """rclpy.serialization.deserialize_message: CDR bytes -> rosidl message."""
    _check_msg_type(message_type, "message_type")
    if not isinstance(serialized_message, bytes):
        raise TypeError("serialized_message must be bytes")
    bag = _FAKE.store.deserialize_cdr(serialized_message, message_type._rostype)
    return rosbags_to_rosidl(bag, _CLASSES)


def _remove_ros_args(args: list | None = None) -> list:
    return list(_ros_args.parse_ros_args(list(sys.argv if args is None else args))
                .non_ros_args)


def install() -> FakeRos:
    """Put the fake modules into ``sys.modules`` (call :func:`uninstall` afterwards)."""
    global _FAKE
    _FAKE = FakeRos()
    _CLASSES.clear()
    mods: dict[str, types.ModuleType] = {}

    def module(name: str) -> types.ModuleType:
        if name not in mods:
            mods[name] = types.ModuleType(name)
            mods[name].__file__ = __file__
            if "." in name:
                parent, _, child = name.rpartition(".")
                setattr(module(parent), child, mods[name])
        return mods[name]

    for rostype, (_, fields) in _FAKE.store.fielddefs.items():
        pkg, sub, name = rostype.split("/")
        if sub != "msg":
            continue
        cls = _make_class(rostype, fields, _CLASSES)
        _CLASSES[f"{pkg}/{name}"] = cls
        setattr(module(f"{pkg}.msg"), name, cls)
    for srv in _STD_SRVS:
        parts = {}
        for part in ("Request", "Response"):
            rostype = f"std_srvs/srv/{srv}_{part}"
            cls = _make_class(rostype, _FAKE.store.fielddefs[rostype][1], _CLASSES)
            _CLASSES[f"std_srvs/{srv}_{part}"] = cls
            parts[part] = cls
        setattr(module("std_srvs.srv"), srv, type(srv, (), dict(parts)))
    r = module("rclpy")
    r.init, r.ok, r.shutdown, r.spin, r.spin_once = _init, _ok, _shutdown, _spin, _spin_once
    module("rclpy.node").Node = Node
    module("rclpy.utilities").remove_ros_args = _remove_ros_args
    module("rclpy.serialization").deserialize_message = _deserialize_message
    q = module("rclpy.qos")
    q.QoSProfile, q.HistoryPolicy = QoSProfile, HistoryPolicy
    q.ReliabilityPolicy, q.DurabilityPolicy = ReliabilityPolicy, DurabilityPolicy
    e = module("rclpy.exceptions")
    for exc in (ParameterException, ParameterNotDeclaredException,
                ParameterAlreadyDeclaredException, InvalidParameterTypeException,
                InvalidParameterValueException):
        setattr(e, exc.__name__, exc)
    module("rclpy.executors").ExternalShutdownException = ExternalShutdownException
    module("rclpy.executors").SingleThreadedExecutor = SingleThreadedExecutor
    module("rclpy.parameter").Parameter = Parameter
    _saved.clear()
    for name, mod in mods.items():
        _saved[name] = sys.modules.get(name)
        sys.modules[name] = mod
    return _FAKE


_saved: dict[str, Any] = {}


def uninstall() -> None:
    for name, old in _saved.items():
        if old is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = old
    _saved.clear()
