"""ROS 2 message type names used by vm_dynamics, and :func:`msgtype_of`, which names the type
of a message of either message library (rosbags dataclass or rosidl class)."""
from __future__ import annotations

import re
from typing import Any

__all__ = ["JOINT_STATE", "ODOMETRY", "TF_MESSAGE", "CLOCK", "FLOAT64_MULTI_ARRAY",
           "WRENCH_STAMPED", "DIAGNOSTIC_ARRAY", "MARKER", "DIAGNOSTIC_LEVELS", "msgtype_of"]

JOINT_STATE = "sensor_msgs/msg/JointState"
ODOMETRY = "nav_msgs/msg/Odometry"
TF_MESSAGE = "tf2_msgs/msg/TFMessage"
CLOCK = "rosgraph_msgs/msg/Clock"
FLOAT64_MULTI_ARRAY = "std_msgs/msg/Float64MultiArray"
WRENCH_STAMPED = "geometry_msgs/msg/WrenchStamped"
DIAGNOSTIC_ARRAY = "diagnostic_msgs/msg/DiagnosticArray"
MARKER = "visualization_msgs/msg/Marker"

#: diagnostic_msgs/DiagnosticStatus level constants.
DIAGNOSTIC_LEVELS = {"OK": 0, "WARN": 1, "ERROR": 2, "STALE": 3}

_ROSIDL_MODULE = re.compile(r"^([A-Za-z0-9_]+)\.(msg|srv)\._[a-z0-9_]+$")


def msgtype_of(obj: Any) -> str:
    """``pkg/msg/Type`` of a rosbags or rosidl message (the class name for anything else)."""
    t = getattr(obj, "__msgtype__", None)
    if isinstance(t, str):
        return t
    cls = type(obj)
    m = _ROSIDL_MODULE.match(getattr(cls, "__module__", "") or "")
    if m:
        return f"{m.group(1)}/{m.group(2)}/{cls.__name__}"
    return cls.__name__
