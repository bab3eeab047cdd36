"""rclpy implementation of :class:`~vm_dynamics.transport.Transport` (ROS 2 Humble / Jazzy).

Thin on purpose: rclpy parses ``--ros-args`` itself (``rclpy.init(args=argv)``), the node
declares one parameter per flattened default, and messages are converted between the
rosbags dataclasses used by the library (:mod:`vm_dynamics.ros_msgs`) and the rosidl
Python classes by copying fields along the rosbags field definitions:

* reals -> ``float``, integers -> ``int`` (range-checked), ``byte`` -> 1-byte ``bytes``,
  ``char`` -> ``int`` (ROS 2 maps ``char`` to ``uint8``);
* numeric sequences -> ``array.array`` (rosidl's storage), numeric fixed arrays -> numpy
  arrays of the rosidl dtype, other sequences -> lists;
* rosidl -> rosbags: numeric arrays become numpy arrays (what rosbags' deserialiser yields).

rclpy calls used (and therefore implemented by ``test/strict_rclpy.py``):
``rclpy.ok``, ``rclpy.init(args=)``, ``rclpy.shutdown()``, ``rclpy.spin``,
``rclpy.spin_once(timeout_sec=)``, ``rclpy.utilities.remove_ros_args``,
``rclpy.node.Node(name, namespace=, cli_args=)`` with ``get_name``, ``get_namespace``,
``get_logger``, ``get_clock().now().nanoseconds``, ``declare_parameter(name, value[,
descriptor])``, ``get_parameter(name).value``, ``create_publisher(type, topic, qos)``,
``create_subscription(type, topic, cb, qos)``, ``create_timer(period, cb)``,
``Publisher.topic_name``, ``Subscription.topic_name``,
``create_service(type, name, cb)``, ``destroy_node``; ``rclpy.qos.QoSProfile(history=,
depth=, reliability=, durability=)`` with ``HistoryPolicy``, ``ReliabilityPolicy``,
``DurabilityPolicy``; ``rclpy.exceptions.InvalidParameterTypeException`` and
``InvalidParameterValueException``,
``rclpy.executors.ExternalShutdownException``; ``rcl_interfaces.msg.ParameterDescriptor``;
logger ``debug/info/warning/error/fatal(msg)``.
"""

from __future__ import annotations

import array
import functools
import importlib
import sys
from typing import Any, Callable, Sequence

import numpy as np
from rosbags.interfaces import Nodetype

from . import (BaseLogger, Publisher, Transport, check_message, check_service_type,
               coerce_elements, coerce_scalar, fielddefs, message_class, qos_spec)
from . import ros_args as rargs

__all__ = ['RclpyTransport', 'to_rclpy', 'from_rclpy', 'rclpy_class']

#: rosidl_generator_py SPECIAL_NESTED_BASIC_TYPES (array.array codes / numpy dtypes), keyed by
#: .msg base type; bool, byte and string are stored as plain lists.
_ARRAY_CODE = {'float32': 'f', 'float64': 'd', 'int8': 'b', 'uint8': 'B', 'char': 'B',
               'int16': 'h', 'uint16': 'H', 'int32': 'i', 'uint32': 'I', 'int64': 'q',
               'uint64': 'Q'}
_NP_DTYPE = {'float32': np.float32, 'float64': np.float64, 'int8': np.int8, 'uint8': np.uint8,
             'char': np.uint8, 'int16': np.int16, 'uint16': np.uint16, 'int32': np.int32,
             'uint32': np.uint32, 'int64': np.int64, 'uint64': np.uint64, 'bool': np.bool_,
             'byte': np.int8}


def rclpy_class(rostype: str) -> type:
    """rosidl Python class of ``pkg/msg/T``, ``pkg/srv/S`` or ``pkg/srv/S_Request``."""
    pkg, sub, name = rostype.split('/')
    part = None
    if sub == 'srv' and name.endswith(('_Request', '_Response')):
        name, part = name.rsplit('_', 1)
    try:
        cls = getattr(importlib.import_module(f'{pkg}.{sub}'), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f'ROS interface {rostype!r} is not available in this ROS installation '
                         f'({exc})') from exc
    return getattr(cls, part) if part else cls


# ------------------------------------------------------------- rosbags -> rosidl


def _to_field(desc: tuple, where: str) -> Callable[[Any], Any]:
    node, info = desc
    if node == Nodetype.BASE:
        base = info[0]
        if base == 'byte':
            return lambda v: bytes([coerce_scalar('byte', v, where) & 0xFF])
        return lambda v: coerce_scalar(base, v, where)
    if node == Nodetype.NAME:
        conv = _compiled_to(info)

        def nested(v: Any) -> Any:
            check_message(v, info, where)
            return conv(v, where)
        return nested
    (enode, einfo), size = info
    if enode == Nodetype.NAME:
        conv = _compiled_to(einfo)

        def items(v: Any) -> list:
            out = []
            for j, x in enumerate(v):
                check_message(x, einfo, f'{where}[{j}]')
                out.append(conv(x, f'{where}[{j}]'))
            return out
        return items
    base = einfo[0]

    def elems(v: Any) -> Any:
        vals = coerce_elements(base, v, where)
        if node == Nodetype.ARRAY and len(vals) != size:
            raise ValueError(f'{where}: fixed array needs exactly {size} elements, '
                             f'got {len(vals)}')
        if node == Nodetype.SEQUENCE and size and len(vals) > size:
            raise ValueError(f'{where}: bounded sequence holds at most {size} elements')
        if base == 'byte':
            return [bytes([x & 0xFF]) for x in vals]
        if base in _ARRAY_CODE:
            if node == Nodetype.ARRAY:
                return np.array(vals, dtype=_NP_DTYPE[base])
            return array.array(_ARRAY_CODE[base], vals)
        return vals
    return elems


@functools.lru_cache(maxsize=None)
def _compiled_to(rostype: str) -> Callable[[Any, str], Any]:
    _, fields = fielddefs(rostype)
    short = rostype.rsplit('/', 1)[-1]
    convs = [(n, _to_field(d, f'{short}.{n}')) for n, d in fields
             if n != 'structure_needs_at_least_one_member']

    def convert(msg: Any, where: str = '') -> Any:
        out = rclpy_class(rostype)()
        for name, conv in convs:
            try:
                value = getattr(msg, name)
            except AttributeError:
                raise TypeError(f'{where or rostype}: message has no field {name!r}') from None
            setattr(out, name, conv(value))
        return out
    return convert


def to_rclpy(msg: Any, rostype: str) -> Any:
    """rosbags message -> rosidl message (strict)."""
    check_message(msg, rostype, 'to_rclpy')
    return _compiled_to(rostype)(msg, rostype)


# ------------------------------------------------------------- rosidl -> rosbags


def _from_field(desc: tuple) -> Callable[[Any], Any]:
    node, info = desc
    if node == Nodetype.BASE:
        base = info[0]
        if base == 'byte':
            return _byte_to_int8
        return lambda v: v
    if node == Nodetype.NAME:
        return _compiled_from(info)
    (enode, einfo), _ = info
    if enode == Nodetype.NAME:
        conv = _compiled_from(einfo)
        return lambda v: [conv(x) for x in v]
    base = einfo[0]
    if base == 'string':
        return list
    if base == 'byte':
        return lambda v: np.array([_byte_to_int8(b) for b in v], dtype=np.int8)
    return lambda v: np.array(v, dtype=_NP_DTYPE[base])


def _byte_to_int8(v: Any) -> int:
    """rosidl octet (1-byte ``bytes``) -> rosbags' int8 convention for ``byte``."""
    u = v[0] if isinstance(v, (bytes, bytearray)) else int(v)
    return u - 256 if u > 127 else u


@functools.lru_cache(maxsize=None)
def _compiled_from(rostype: str) -> Callable[[Any], Any]:
    _, fields = fielddefs(rostype)
    convs = [(n, _from_field(d)) for n, d in fields]

    def convert(obj: Any) -> Any:
        kw = {}
        for name, conv in convs:
            if name == 'structure_needs_at_least_one_member':
                kw[name] = 0
            else:
                kw[name] = conv(getattr(obj, name))
        return message_class(rostype)(**kw)
    return convert


def from_rclpy(obj: Any, rostype: str) -> Any:
    """rosidl message -> rosbags message."""
    return _compiled_from(rostype)(obj)


# ----------------------------------------------------------------------- logger


class RclpyLogger(BaseLogger):
    """Wraps an rclpy ``RcutilsLogger``; one call site per severity (rclpy keys its logging
    contexts by caller), throttling done here per key."""

    def __init__(self, logger: Any) -> None:
        super().__init__()
        self._logger = logger

    def _emit(self, level: str, msg: str) -> None:
        if level == 'DEBUG':
            self._logger.debug(msg)
        elif level == 'INFO':
            self._logger.info(msg)
        elif level == 'WARN':
            self._logger.warning(msg)
        elif level == 'ERROR':
            self._logger.error(msg)
        else:
            self._logger.fatal(msg)


# -------------------------------------------------------------------- transport


class _RclpyPublisher(Publisher):
    def __init__(self, pub: Any, topic: str, msgtype: str) -> None:
        self._pub = pub
        self.topic = topic
        self.msgtype = msgtype
        self._convert = _compiled_to(msgtype)

    def publish(self, msg: Any) -> None:
        check_message(msg, self.msgtype, f'publisher {self.topic}')
        self._pub.publish(self._convert(msg, f'{self.topic} {self.msgtype}'))


def _plain(value: Any) -> Any:
    if isinstance(value, (array.array, np.ndarray, tuple)):
        return [v.item() if isinstance(v, np.generic) else v for v in value]
    return value


class RclpyTransport(Transport):
    """Node on rclpy; uses the default context (initialised here if needed)."""

    kind = 'rclpy'

    def __init__(self, node_name: str, params_defaults: Any = None,
                 argv: Sequence[str] | None = None, *, namespace: str = '') -> None:
        super().__init__()
        import rclpy
        from rclpy.node import Node
        from rclpy.utilities import remove_ros_args

        self._rclpy = rclpy
        argv = list(sys.argv if argv is None else argv)
        flat = rargs.flatten_params(params_defaults)  # validate before touching ROS
        self._owns_context = not rclpy.ok()
        kwargs: dict[str, Any] = {}
        if namespace:
            kwargs['namespace'] = namespace
        if self._owns_context:
            rclpy.init(args=argv)
        else:
            kwargs['cli_args'] = argv
        self.args = list(remove_ros_args(args=argv))
        try:
            self._node = Node(node_name, **kwargs)
            self.node_name = self._node.get_name()
            self.namespace = self._node.get_namespace()
            self.logger = RclpyLogger(self._node.get_logger())
            self.params = self._declare(flat)
        except BaseException:
            self._release()
            raise
        self._closed = False

    def _declare(self, flat: dict[str, Any]) -> dict[str, Any]:
        from rcl_interfaces.msg import ParameterDescriptor
        from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException

        values: dict[str, Any] = {}
        for name, default in flat.items():
            if name == 'use_sim_time':  # declared by every rclpy node, default False
                if default is not False:
                    raise ValueError('parameter use_sim_time: every ROS 2 node declares it with '
                                     'default False; set it with -p use_sim_time:=true')
                continue
            try:
                if default is None or default == []:
                    self._node.declare_parameter(name, default,
                                                 ParameterDescriptor(dynamic_typing=True))
                else:
                    self._node.declare_parameter(name, default)
            except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
                raise ValueError(f'parameter {name!r} of node {self.fully_qualified_name}: '
                                 f'{exc}') from exc
            values[name] = _plain(self._node.get_parameter(name).value)
        values['use_sim_time'] = self._node.get_parameter('use_sim_time').value
        return values

    def _qos(self, qos: Any) -> Any:
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
        spec = qos_spec(qos)
        return QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=spec.depth,
            reliability=(ReliabilityPolicy.RELIABLE if spec.reliable
                         else ReliabilityPolicy.BEST_EFFORT),
            durability=(DurabilityPolicy.TRANSIENT_LOCAL if spec.transient_local
                        else DurabilityPolicy.VOLATILE))

    def publisher(self, topic: str, msgtype: str, qos: Any = 'default') -> _RclpyPublisher:
        fielddefs(msgtype)
        pub = self._node.create_publisher(rclpy_class(msgtype), topic, self._qos(qos))
        return _RclpyPublisher(pub, pub.topic_name, msgtype)

    def subscribe(self, topic: str, msgtype: str, callback: Callable[[Any], None],
                  qos: Any = 'default') -> Any:
        if not callable(callback):
            raise TypeError('callback must be callable')
        convert = _compiled_from(msgtype)
        name = [topic]  # replaced by the resolved name once the subscription exists

        def on_msg(obj: Any) -> None:
            try:
                msg = convert(obj)
            except (TypeError, ValueError, AttributeError) as exc:
                self.logger.warn_throttled(('malformed', name[0]), 5.0,
                                           f'dropped unconvertible {msgtype} on {name[0]}: {exc}')
                return
            self._deliver(callback, msg, name[0])
        sub = self._node.create_subscription(rclpy_class(msgtype), topic, on_msg,
                                             self._qos(qos))
        name[0] = sub.topic_name
        return sub

    def timer(self, period_s: float, callback: Callable[[], None]) -> Any:
        if not callable(callback):
            raise TypeError('callback must be callable')
        if isinstance(period_s, bool) or not isinstance(period_s, (int, float)) \
                or not 0 < period_s < float('inf'):
            raise ValueError(f'timer period must be a finite number > 0 s, got {period_s!r}')
        return self._node.create_timer(float(period_s), callback)

    def service(self, name: str, srvtype: str, handler: Callable[[Any], Any]) -> Any:
        check_service_type(srvtype)
        if not callable(handler):
            raise TypeError('handler must be callable')
        req_from = _compiled_from(f'{srvtype}_Request')

        def on_request(request: Any, response: Any) -> Any:
            result = self._serve(srvtype, handler, req_from(request))
            response.success = result.success
            response.message = result.message
            return response
        return self._node.create_service(rclpy_class(srvtype), name, on_request)

    def now_ns(self) -> int:
        return self._node.get_clock().now().nanoseconds

    def spin_once(self, timeout_s: float | None = None) -> None:
        self._rclpy.spin_once(self._node, timeout_sec=timeout_s)

    def spin(self) -> None:
        from rclpy.executors import ExternalShutdownException
        try:
            self._rclpy.spin(self._node)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        except Exception:
            # Ctrl-C / SIGTERM invalidate the context while a callback may be publishing
            # (RCLError "publisher's context is invalid"): a clean exit, not a crash.
            if self._rclpy.ok():
                raise

    def _release(self) -> None:
        node = getattr(self, '_node', None)
        if node is not None:
            node.destroy_node()
            self._node = None
        if self._owns_context and self._rclpy.ok():
            self._rclpy.shutdown()

    def shutdown(self) -> None:
        if getattr(self, '_closed', True):
            return
        self._closed = True
        self._release()
