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
``make_composition(kind='auto')``, ``make_transport(..., composition=c)``
    several nodes in one process on one executor (a component container); on DDS the
    composed nodes hand their samples to each other in-process (:mod:`.dds_executor`).
``t.params``
    dict of the flattened (``a.b``) parameters after ``-p``/``--params-file`` overrides,
    always including ``use_sim_time``.  Types are checked against the defaults like rclpy.
``t.publisher(topic, msgtype, qos='default')`` -> object with ``.publish(msg)``
    ``msg`` is a rosbags typestore message (what :mod:`vm_dynamics.ros.messages` builds);
    another type raises ``TypeError``; field values are coerced strictly (``ValueError`` /
    ``TypeError`` naming the field path for wrong types or out-of-range integers).
``t.subscribe(topic, msgtype, callback, qos='default', *, max_bytes=None, max_counts=None,
max_per_turn=None, screen=None, on_drop=None)``
    ``callback(msg)`` receives a rosbags message.  Undecodable data, or a callback raising
    ``ValueError`` (e.g. a ``ros_msgs.parse_*`` rejecting NaNs), is dropped with a throttled
    warning naming the topic.  Any other ``Exception`` of a callback is logged as a throttled
    ERROR naming the topic, the exception and where it was raised, and counted in
    ``t.callback_failures``; the node keeps running (unlike rclpy, whose executor would
    re-raise it and end the process).

    Input bounds: samples over ``max_bytes`` serialized bytes, or whose top-level sequence
    ``field`` holds more than ``max_counts[field]`` elements (read from the CDR,
    :func:`vm_dynamics.ros.messages.check_sequence_counts`), are dropped before they are
    decoded (``t.oversized_dropped``); ``screen(cdr_bytes) -> bool`` drops a sample before it
    is decoded; ``max_per_turn`` delivers at most that many samples per executor turn, the
    newest, and reports the older excess to ``on_drop(count)``.  One turn never delivers more
    than the reader's history depth, so timers run between turns whatever the input rate.
``t.timer(period_s, callback)``
    periodic, on ROS time: wall time, or ``/clock`` when ``use_sim_time`` is true.  A failing
    callback is logged and counted like a subscription's; the timer goes on.
``t.service(name, srvtype, handler)``
    ``srvtype`` in :data:`SERVICE_TYPES` (``std_srvs/srv/Trigger``, ``std_srvs/srv/SetBool``);
    ``handler(request)`` gets the rosbags request (``SetBool``: ``request.data``) and returns
    ``(success, message)`` or a response message; a ``ValueError`` becomes
    ``success=False, message=str(error)``, any other exception (logged and counted)
    ``success=False, message="internal error: ..."``.  DDS mode implements the rmw_cyclonedds
    request/reply protocol on ``rq/<name>Request`` / ``rr/<name>Reply``.  The
    simulation_interfaces services (:func:`~vm_dynamics.transport.types.check_service_type`)
    are served too: their handler returns the response's fields as a mapping (nested
    messages as mappings; absent fields are zero), rosidl messages under rclpy, rosbags
    messages of the project's copied definitions on DDS.
``t.action_server(name, actiontype, execute)``
    where the transport has it (rclpy's ``ActionServer``; on DDS
    :class:`~vm_dynamics.transport.dds_actions.DdsActionServer`): every goal is accepted and
    ``execute(goal, feedback, cancel_requested)`` returns ``(outcome, result fields)``.
``t.count_publishers(topic)``
    publishers of ``topic`` in the ROS graph, this node's own included (rclpy
    ``Node.count_publishers``; DDS: the alive writers of the ``DCPSPublication`` built-in
    topic).
``t.now_ns()`` / ``t.now()``
    ROS time in integer nanoseconds / float seconds.
``t.logger``
    ``debug/info/warn/error/fatal(msg)``, ``warn_throttled(key, period_s, msg)`` and
    ``error_throttled`` (steady clock, one throttle window per ``key``).
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

from .base import Publisher, Transport
from .factory import (
    TRANSPORT_ENV,
    ignore_interrupts,
    make_composition,
    make_transport,
    rclpy_importable,
    resolve_kind,
    shutdown_quietly,
)
from .logger import LOG_LEVELS, BaseLogger, StreamLogger
from .qos import QOS_PROFILES, QosSpec, qos_spec
from .types import (
    SERVICE_DEFINITIONS,
    SERVICE_TYPES,
    check_message,
    check_service_type,
    coerce_elements,
    coerce_scalar,
    fielddefs,
    message_class,
    message_typestore,
    service_typestore,
)

__all__ = [
    "Transport", "Publisher", "make_transport", "make_composition", "resolve_kind", "rclpy_importable",
    "TRANSPORT_ENV", "QosSpec", "QOS_PROFILES", "qos_spec",
    "SERVICE_TYPES", "SERVICE_DEFINITIONS", "service_typestore", "message_typestore",
    "fielddefs", "message_class", "check_message", "check_service_type",
    "BaseLogger", "StreamLogger", "LOG_LEVELS", "coerce_scalar", "coerce_elements",
    "shutdown_quietly", "ignore_interrupts",
]
