"""rclpy implementation of :class:`~vm_dynamics.transport.Transport` (ROS 2 Humble / Jazzy).

Thin on purpose: rclpy parses ``--ros-args`` itself (``rclpy.init(args=argv)``), the node
declares one parameter per flattened default, and messages are the **rosidl classes of the
ROS installation**, used directly: creating the transport selects the ``'rosidl'`` message
library of :mod:`vm_dynamics.ros.messages` (restored on shutdown), so the builders create rosidl
messages, publishers hand them to rclpy unchanged and subscribers get what rclpy
deserialised.  Nothing outside rosdep keys (rclpy and the interface packages) is imported.

Size limits: ``subscribe(..., max_bytes=N, max_counts={field: M})`` subscribes with
``raw=True`` and deserialises (``rclpy.serialization.deserialize_message``) only samples of at
most ``N`` bytes whose sequence ``field`` holds at most ``M`` elements (read from the CDR by
:func:`vm_dynamics.ros.messages.check_sequence_counts`); others are dropped with a throttled
warning before any message object is built.  A ``screen`` runs on the same serialized bytes,
before deserialisation.  The types a lockstep period carries (JointState, Odometry,
WrenchStamped, Clock: :mod:`~vm_dynamics.transport.rclpy_cdr`) are always taken raw and
decoded, and published encoded, by that module (the same rosidl messages and bytes as
rclpy's, several times faster); any other type, and any sample or message it declines, goes
through rclpy's own conversion.

Work per turn: this adapter keeps no queue of its own.  The node is spun by
:class:`~vm_dynamics.transport.rclpy_executor.LeanExecutor` (one reused wait set; rclpy's
``SingleThreadedExecutor`` where rclpy lacks its wait-set API), which takes a bounded number
of samples per subscription per wait (one, as rclpy's; with the lean executor up to ``1 +
LeanExecutor.SWEEPS`` of a burst, fewer -- one -- for a subscription whose ``max_per_turn``
is smaller) and checks the timers on every wait, so a flooded subscription cannot starve a
timer, and ``max_per_turn`` (a bound the DDS adapter needs) holds by construction; the
excess is dropped by the middleware's KEEP_LAST history, which reports no count, so
``on_drop`` is never called here.

rclpy calls used (and therefore implemented by ``test/fakes/strict_rclpy.py``):
``rclpy.ok``, ``rclpy.init(args=)``, ``rclpy.shutdown()``, ``rclpy.spin``,
``rclpy.spin_once(timeout_sec=)`` (without the wait-set API of
:mod:`~vm_dynamics.transport.rclpy_executor`, which lists what it uses),
``rclpy.utilities.remove_ros_args``,
``rclpy.serialization.deserialize_message``,
``rclpy.node.Node(name, namespace=, cli_args=)`` with ``get_name``, ``get_namespace``,
``get_logger``, ``get_clock().now().nanoseconds``, ``declare_parameter(name, value[,
descriptor])``, ``get_parameter(name).value``, ``create_publisher(type, topic, qos)``,
``create_subscription(type, topic, cb, qos[, raw=True])``, ``create_timer(period, cb)``,
``Publisher.topic_name``, ``Subscription.topic_name``, ``count_publishers(topic)``,
``create_service(type, name, cb)``, ``destroy_node``; ``rclpy.qos.QoSProfile(history=,
depth=, reliability=, durability=)`` with ``HistoryPolicy``, ``ReliabilityPolicy``,
``DurabilityPolicy``; ``rclpy.exceptions.InvalidParameterTypeException`` and
``InvalidParameterValueException``,
``rclpy.executors.ExternalShutdownException``; ``rcl_interfaces.msg.ParameterDescriptor``;
logger ``debug/info/warning/error/fatal(msg)``.
"""

from __future__ import annotations

import array
import importlib
import sys
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..core.signals import deferred_interrupts
from ..ros import messages as ros_msgs
from . import ros_args as rargs
from .base import Publisher, Transport
from .logger import BaseLogger
from .qos import qos_spec
from .rclpy_cdr import cdr_decoder, cdr_encoder
from .rclpy_executor import LeanExecutor, lean_executor_available
from .types import check_service_type, status_service

__all__ = ["RclpyTransport", "RclpyComposition", "rclpy_class", "fill_rosidl"]


def rclpy_class(rostype: str) -> type:
    """rosidl Python class of ``pkg/msg/T``, ``pkg/srv/S`` or ``pkg/srv/S_Request``."""
    parts = rostype.split("/")
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"invalid ROS type name {rostype!r} (expected pkg/msg/Type)")
    pkg, sub, name = parts
    part = None
    if sub == "srv" and name.endswith(("_Request", "_Response")):
        name, part = name.rsplit("_", 1)
    try:
        cls = getattr(importlib.import_module(f"{pkg}.{sub}"), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"ROS interface {rostype!r} is not available in this ROS installation "
                         f"({exc})") from exc
    return getattr(cls, part) if part else cls


def fill_rosidl(msg: Any, values: Mapping[str, Any]) -> Any:
    """Set the fields of the rosidl message ``msg`` from a mapping (nested messages as
    mappings); returns ``msg``.  rosidl's setters check each value (``AssertionError`` or
    ``TypeError`` on a wrong type, ``AttributeError`` on an unknown field)."""
    for name, value in values.items():
        if isinstance(value, Mapping):
            fill_rosidl(getattr(msg, name), value)
        elif isinstance(value, (list, tuple)) and any(isinstance(v, Mapping) for v in value):
            cls = _element_class(type(msg), name)
            setattr(msg, name, [fill_rosidl(cls(), v) if isinstance(v, Mapping) else v
                                for v in value])
        else:
            setattr(msg, name, value)
    return msg


def _element_class(cls: type, field: str) -> type:
    """rosidl class of the elements of the message sequence/array ``field`` of ``cls``
    (``sequence<pkg/T>``, ``sequence<pkg/T, N>`` or ``pkg/T[N]`` in
    ``_fields_and_field_types``)."""
    spec = cls.get_fields_and_field_types()[field]
    if spec.startswith("sequence<"):
        spec = spec[len("sequence<"):-1].split(",")[0]
    spec = spec.split("[")[0].strip()
    pkg, _, name = spec.partition("/")
    return rclpy_class(f"{pkg}/msg/{name}")


# ----------------------------------------------------------------------- logger


class RclpyLogger(BaseLogger):
    """Wraps an rclpy ``RcutilsLogger``; one call site per severity (rclpy keys its logging
    contexts by caller), throttling done here per key."""

    def __init__(self, logger: Any) -> None:
        super().__init__()
        self._logger = logger

    def _emit(self, level: str, msg: str) -> None:
        if level == "DEBUG":
            self._logger.debug(msg)
        elif level == "INFO":
            self._logger.info(msg)
        elif level == "WARN":
            self._logger.warning(msg)
        elif level == "ERROR":
            self._logger.error(msg)
        else:
            self._logger.fatal(msg)


# -------------------------------------------------------------------- transport


class _RclpyPublisher(Publisher):
    """A publisher of rosidl messages; those of :data:`~.rclpy_cdr.CDR_TYPES` go out as the
    CDR written by :func:`~.rclpy_cdr.cdr_encoder` (rclpy's ``publish`` of ``bytes``), any
    other -- or one the encoder declines -- through rclpy's conversion."""

    def __init__(self, pub: Any, topic: str, msgtype: str, cls: type) -> None:
        self._pub = pub
        self.topic = topic
        self.msgtype = msgtype
        self._cls = cls
        self._encode = cdr_encoder(msgtype)

    def publish(self, msg: Any) -> None:
        if not isinstance(msg, self._cls):
            raise TypeError(f"publisher {self.topic}: expected a rosidl {self.msgtype} message, "
                            f"got {ros_msgs.msgtype_of(msg)} ({type(msg).__module__})")
        data = None if self._encode is None else self._encode(msg)
        self._pub.publish(msg if data is None else data)

    writes_cdr = True

    def publish_cdr(self, data: bytes) -> None:
        self._pub.publish(data)            # rclpy publishes bytes as a serialized message

    def has_subscribers(self) -> bool:
        return self._pub.get_subscription_count() > 0


def _plain(value: Any) -> Any:
    if isinstance(value, (array.array, np.ndarray, tuple)):
        return [v.item() if isinstance(v, np.generic) else v for v in value]
    return value


class RclpyTransport(Transport):
    """Node on rclpy; uses the default context (initialised here if needed)."""

    kind = "rclpy"

    def __init__(self, node_name: str, params_defaults: Any = None,
                 argv: Sequence[str] | None = None, *, namespace: str = "",
                 composition: "RclpyComposition | None" = None) -> None:
        super().__init__()
        import rclpy
        from rclpy.node import Node
        from rclpy.utilities import remove_ros_args

        self._rclpy = rclpy
        self._lean: LeanExecutor | None = None
        #: each subscription's max_per_turn (the lean executor's bound per wait)
        self._max_per_turn: dict = {}
        self._previous_library = ros_msgs.use_message_library("rosidl")
        argv = list(sys.argv if argv is None else argv)
        flat = rargs.flatten_params(params_defaults)  # validate before touching ROS
        self._owns_context = not rclpy.ok()
        kwargs: dict[str, Any] = {}
        if namespace:
            kwargs["namespace"] = namespace
        self.composition = composition
        if composition is not None:
            # composed: each node its own arguments (the context's would apply to all nodes)
            if self._owns_context:
                rclpy.init(args=argv[:1])
            kwargs.update(cli_args=argv, use_global_arguments=False)
        elif self._owns_context:
            rclpy.init(args=argv)
        else:
            kwargs["cli_args"] = argv
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
        if composition is not None:
            composition.members.append(self)

    def _declare(self, flat: dict[str, Any]) -> dict[str, Any]:
        from rcl_interfaces.msg import ParameterDescriptor
        from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException

        values: dict[str, Any] = {}
        for name, default in flat.items():
            if name == "use_sim_time":  # declared by every rclpy node, default False
                if default is not False:
                    raise ValueError("parameter use_sim_time: every ROS 2 node declares it with "
                                     "default False; set it with -p use_sim_time:=true")
                continue
            try:
                if default is None or default == []:
                    self._node.declare_parameter(name, default,
                                                 ParameterDescriptor(dynamic_typing=True))
                else:
                    self._node.declare_parameter(name, default)
            except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
                raise ValueError(f"parameter {name!r} of node {self.fully_qualified_name}: "
                                 f"{exc}") from exc
            values[name] = _plain(self._node.get_parameter(name).value)
        values["use_sim_time"] = self._node.get_parameter("use_sim_time").value
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

    def publisher(self, topic: str, msgtype: str, qos: Any = "default") -> _RclpyPublisher:
        cls = rclpy_class(msgtype)
        pub = self._node.create_publisher(cls, topic, self._qos(qos))
        return _RclpyPublisher(pub, pub.topic_name, msgtype, cls)

    def subscribe(self, topic: str, msgtype: str, callback: Callable[[Any], None],
                  qos: Any = "default", *, max_bytes: int | None = None,
                  max_counts: Mapping[str, Any] | None = None,
                  max_per_turn: int | None = None,
                  screen: Callable[[bytes], bool] | None = None,
                  on_drop: Callable[[int], None] | None = None) -> Any:
        """Subscribe; ``callback`` gets rosidl messages.  With ``max_bytes``, ``max_counts``
        or ``screen`` the serialized sample is checked before it is deserialised;
        ``max_per_turn`` and ``on_drop`` are checked and need nothing more here (see the
        module docstring)."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        per_turn = self._check_max_per_turn(max_per_turn)
        self._check_callable("screen", screen)
        self._check_callable("on_drop", on_drop)
        cls = rclpy_class(msgtype)
        name = [topic]  # replaced by the resolved name once the subscription exists
        counts = self._check_max_counts(max_counts)
        if counts and not ros_msgs.typestore_available():
            # no rosbags (a ROS install with the rosdep keys only): rosidl deserialises in
            # C, linearly, and the node checks the counts of the decoded message
            counts = {}
        if counts:
            ros_msgs.check_count_limits(msgtype, counts)
        decode = cdr_decoder(msgtype)
        if max_bytes is None and not counts and screen is None and decode is None:
            def on_msg(msg: Any) -> None:
                self.deliver(callback, msg, name[0])
            sub = self._node.create_subscription(cls, topic, on_msg, self._qos(qos))
        else:
            limit = None if max_bytes is None else self._check_max_bytes(max_bytes)
            from rclpy.serialization import deserialize_message

            def on_raw(data: bytes) -> None:
                if limit is not None and len(data) > limit:
                    self.report_oversized(name[0], msgtype, len(data), limit)
                    return
                if screen is not None and not self.screened(screen, data, name[0]):
                    return
                try:
                    if counts:
                        ros_msgs.check_sequence_counts(data, msgtype, counts)
                    msg = None if decode is None else decode(data)
                    if msg is None:
                        msg = deserialize_message(data, cls)
                except ros_msgs.SequenceCountError as exc:
                    self.report_too_many(name[0], msgtype, exc)
                    return
                except Exception as exc:  # rclpy raises its own deserialisation errors
                    self.logger.warn_throttled(("malformed", name[0]), 5.0,
                                               f"dropped undecodable {msgtype} on {name[0]}: "
                                               f"{type(exc).__name__}: {exc}")
                    return
                self.deliver(callback, msg, name[0])
            sub = self._node.create_subscription(cls, topic, on_raw, self._qos(qos), raw=True)
        name[0] = sub.topic_name
        if per_turn is not None:
            self._max_per_turn[sub] = per_turn
        return sub

    def timer(self, period_s: float, callback: Callable[[], None]) -> Any:
        if not callable(callback):
            raise TypeError("callback must be callable")
        if isinstance(period_s, bool) or not isinstance(period_s, (int, float)) \
                or not 0 < period_s < float("inf"):
            raise ValueError(f"timer period must be a finite number > 0 s, got {period_s!r}")
        what = f"timer callback {getattr(callback, '__qualname__', '')}".rstrip()
        return self._node.create_timer(float(period_s), self._guarded(what, callback))

    def count_publishers(self, topic: str) -> int:
        return int(self._node.count_publishers(topic))

    def service(self, name: str, srvtype: str, handler: Callable[[Any], Any]) -> Any:
        check_service_type(srvtype)
        if not callable(handler):
            raise TypeError("handler must be callable")
        if status_service(srvtype):
            def on_request(request: Any, response: Any) -> Any:
                response.success, response.message = self.serve(srvtype, handler, request)
                return response
        else:
            def on_request(request: Any, response: Any) -> Any:
                fields = self.serve_fields(srvtype, handler, request)
                try:
                    return fill_rosidl(response, fields)
                except (AssertionError, AttributeError, TypeError, ValueError) as exc:
                    self.report_bad_response(srvtype, exc)
                    return type(response)()
        return self._node.create_service(rclpy_class(srvtype), name, on_request)

    def trigger_client(self, name: str) -> "RclpyTriggerClient":
        return RclpyTriggerClient(self._node, name)

    def service_client(self, name: str, srvtype: str) -> "RclpyServiceClient":
        return RclpyServiceClient(self._node, name, srvtype)

    def action_server(self, name: str, actiontype: str,
                      execute: Callable[[Any, Callable[[Mapping[str, Any]], None],
                                         Callable[[], bool]], tuple[str, Mapping[str, Any]]]
                      ) -> Any:
        """Serve the action ``actiontype`` (``pkg/action/A``) under ``name`` with rclpy's
        ``ActionServer``: every goal is accepted and ``execute(goal, feedback,
        cancel_requested)`` runs it -- ``feedback(fields)`` publishes a feedback message,
        ``cancel_requested()`` says whether a cancel was accepted -- and returns
        ``(outcome, result fields)`` with outcome ``succeeded``, ``aborted`` or ``canceled``.
        The execution runs in the executor's turn (single-threaded): cancel requests are
        taken between goals, not during one."""
        from rclpy.action import ActionServer, CancelResponse
        cls = rclpy_class(actiontype)
        what = f"{actiontype} action {name}"

        def run(goal_handle: Any) -> Any:
            def feedback(fields: Mapping[str, Any]) -> None:
                goal_handle.publish_feedback(fill_rosidl(cls.Feedback(), fields))
            try:
                outcome, fields = execute(goal_handle.request, feedback,
                                          lambda: bool(goal_handle.is_cancel_requested))
                result = fill_rosidl(cls.Result(), fields)
            except Exception as exc:  # noqa: BLE001 - no goal may end the node
                self._callback_failed(what, exc)
                goal_handle.abort()
                return cls.Result()
            {"succeeded": goal_handle.succeed, "canceled": goal_handle.canceled}.get(
                outcome, goal_handle.abort)()
            return result
        return ActionServer(self._node, cls, name, execute_callback=run,
                            cancel_callback=lambda _goal: CancelResponse.ACCEPT)

    def now_ns(self) -> int:
        return self._node.get_clock().now().nanoseconds

    @property
    def node(self) -> Any:
        """The rclpy node."""
        return self._node

    def _lean_executor(self) -> LeanExecutor | None:
        """The node's :class:`~.rclpy_executor.LeanExecutor`, made on first use; None where
        rclpy lacks what it needs (then rclpy's own executor spins the node) or the node is
        composed (rclpy's executor spins all the nodes of the process)."""
        if self.composition is not None:
            return None
        if self._lean is None and lean_executor_available():
            self._lean = LeanExecutor(self._node, self._max_per_turn)
        return self._lean

    def spin_once(self, timeout_s: float | None = None) -> None:
        lean = self._lean_executor()
        if lean is None:
            self._rclpy.spin_once(self._node, timeout_sec=timeout_s)
        else:
            lean.spin_once(timeout_s)

    #: How often :meth:`spin` looks for a recorded Ctrl-C / SIGTERM (s).
    SPIN_POLL_S = 0.1

    def spin(self) -> None:
        """Spin until shutdown, Ctrl-C or SIGTERM.  The signals are recorded while spinning
        (:func:`~vm_dynamics.core.signals.deferred_interrupts`) and end the loop between two
        executor turns: a ``KeyboardInterrupt`` raised inside rclpy's C++ calls surfaced as
        ``RuntimeError: Unable to convert call argument to Python object`` from
        ``take_message`` (Jazzy, Ctrl-C under ``ros2 launch``: a traceback, exit 1)."""
        from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
        executor = self._lean_executor()
        nodes = [self._node] if self.composition is None else \
            [m.node for m in self.composition.members if not m.closed]
        if executor is None:
            executor = SingleThreadedExecutor()   # the default context, as rclpy.spin's
            for node in nodes:
                executor.add_node(node)
        with deferred_interrupts() as stop:
            try:
                while not stop and self._rclpy.ok():
                    executor.spin_once(timeout_sec=self.SPIN_POLL_S)
            except (KeyboardInterrupt, ExternalShutdownException):
                pass
            except Exception:
                # a context invalidated while a callback may be publishing (RCLError
                # "publisher's context is invalid"): a clean exit, not a crash
                if self._rclpy.ok() and not stop:
                    raise
            finally:
                if executor is not self._lean:
                    for node in nodes:
                        executor.remove_node(node)
                    executor.shutdown(timeout_sec=0)

    def shutdown_requested(self) -> bool:
        return self._owns_context and not self._rclpy.ok()

    def _release(self) -> None:
        node = getattr(self, "_node", None)
        lean, self._lean = getattr(self, "_lean", None), None
        try:
            if lean is not None:            # its handles held: released before the node goes
                lean.shutdown()
            if node is not None:
                self._node = None
                node.destroy_node()
            if self._owns_context and self._rclpy.ok():
                self._rclpy.shutdown()
        finally:
            ros_msgs.use_message_library(self._previous_library)

    @property
    def closed(self) -> bool:
        return getattr(self, "_closed", True)

    def shutdown(self) -> None:
        if getattr(self, "_closed", True):
            return
        self._closed = True
        self._release()


class RclpyComposition:
    """Several :class:`RclpyTransport` nodes in one process, spun by one rclpy
    ``SingleThreadedExecutor`` (any member's :meth:`~RclpyTransport.spin`).  rclpy has no
    intra-process communication: the nodes' samples to each other still go through the rmw
    (rmw_cyclonedds delivers them in the process, without the network)."""

    kind = "rclpy"

    def __init__(self) -> None:
        self.members: list[RclpyTransport] = []

    def spin(self) -> None:
        if self.members:
            self.members[0].spin()


class RclpyServiceClient:
    """:meth:`Transport.service_client` on rclpy: ``send`` is asynchronous, the response is
    the rosidl message."""

    def __init__(self, node: Any, name: str, srvtype: str) -> None:
        self._cls = rclpy_class(srvtype)
        self.client = node.create_client(self._cls, name)
        self.name = self.client.service_name
        self._future = None

    @property
    def pending(self) -> bool:
        return self._future is not None

    def ready(self) -> bool:
        return bool(self.client.service_is_ready())

    def send(self, fields: Mapping[str, Any]) -> None:
        if self._future is None:
            self._future = self.client.call_async(fill_rosidl(self._cls.Request(), fields))

    def poll(self) -> tuple[bool, Any] | None:
        f = self._future
        if f is None or not f.done():
            return None
        self._future = None
        if f.exception() is not None:
            return False, f"{type(f.exception()).__name__}: {f.exception()}"
        return True, f.result()


class RclpyTriggerClient(RclpyServiceClient):
    """:meth:`Transport.trigger_client` on rclpy: the service client of ``std_srvs/srv/Trigger``
    (``send`` is asynchronous: a blocking call in a callback of the single-threaded executor
    would never see its response); ``poll`` gives ``(success, message)``."""

    def __init__(self, node: Any, name: str) -> None:
        super().__init__(node, name, "std_srvs/srv/Trigger")

    def send(self) -> None:
        super().send({})

    def poll(self) -> tuple[bool, str] | None:
        out = super().poll()
        if out is None or not out[0]:
            return out
        return bool(out[1].success), str(out[1].message)
