"""The two message libraries the builders of :mod:`vm_dynamics.ros.messages` make messages
with: rosbags' typestore dataclasses (no ROS needed) and the rosidl-generated classes of a ROS 2
installation (under rclpy).  Each gives ``maker(msgtype)`` (what a builder calls with the
message's fields), ``f64seq`` and ``octet`` (the field representations its setters accept)."""

from __future__ import annotations

import array
import importlib
import sys
from typing import Any, Callable

import numpy as np

from .msgtypes import CLOCK, JOINT_STATE, ODOMETRY, TF_MESSAGE, WRENCH_STAMPED

__all__ = ["RosbagsLibrary", "RosidlLibrary", "slot_maker"]


class RosbagsLibrary:
    """rosbags typestore dataclasses (numpy arrays for numeric sequences, int for ``byte``);
    ``typestore()`` returns the rosbags type store (imported on first use)."""

    name = "rosbags"

    def __init__(self, typestore: Callable[[], Any]) -> None:
        self._typestore = typestore
        self._types: Any = None            # the typestore's classes, looked up once

    def __getitem__(self, msgtype: str) -> type:
        types = self._types
        if types is None:
            types = self._types = self._typestore().types
        return types[msgtype]

    #: what the builders call to make a ``msgtype`` message: the dataclass
    maker = __getitem__

    @staticmethod
    def f64seq(a: np.ndarray) -> Any:
        return a

    @staticmethod
    def octet(v: int) -> Any:
        return int(v)


class RosidlLibrary:
    """rosidl-generated classes of the ROS 2 installation (``array.array('d')`` for float64
    sequences, 1-byte ``bytes`` for ``byte``), as rosidl_generator_py's setters require."""

    name = "rosidl"

    #: The types :meth:`maker` makes without their constructor (:func:`slot_maker`): those of
    #: the lockstep's messages and tf, whose builders here give every field a value they made
    #: or checked to be what the rosidl setter accepts.
    SLOT_MADE = frozenset({
        "builtin_interfaces/msg/Time", "std_msgs/msg/Header", JOINT_STATE, ODOMETRY, CLOCK,
        WRENCH_STAMPED, TF_MESSAGE, "geometry_msgs/msg/Point", "geometry_msgs/msg/Quaternion",
        "geometry_msgs/msg/Pose", "geometry_msgs/msg/PoseWithCovariance",
        "geometry_msgs/msg/Vector3", "geometry_msgs/msg/Twist",
        "geometry_msgs/msg/TwistWithCovariance", "geometry_msgs/msg/Wrench",
        "geometry_msgs/msg/TransformStamped", "geometry_msgs/msg/Transform"})

    def __init__(self) -> None:
        self._cache: dict[str, type] = {}
        self._makers: dict[str, Any] = {}

    def maker(self, msgtype: str) -> Any:
        """What the builders call to make a ``msgtype`` message: for :data:`SLOT_MADE`, the
        :func:`slot_maker` of its class, else the class."""
        make = self._makers.get(msgtype)
        if make is None:
            cls = self[msgtype]
            make = slot_maker(cls) if msgtype in self.SLOT_MADE else cls
            self._makers[msgtype] = make
        return make

    def __getitem__(self, msgtype: str) -> type:
        cls = self._cache.get(msgtype)
        if cls is None:
            pkg, sub, name = msgtype.split("/")
            try:
                cls = getattr(importlib.import_module(f"{pkg}.{sub}"), name)
            except (ImportError, AttributeError) as exc:
                raise ValueError(f"ROS interface {msgtype!r} is not available in this ROS "
                                 f"installation ({exc})") from exc
            self._cache[msgtype] = cls
        return cls

    @staticmethod
    def f64seq(a: np.ndarray) -> Any:
        out = array.array("d")
        out.frombytes(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        return out

    @staticmethod
    def octet(v: int) -> Any:
        return bytes([int(v) & 0xFF])


def slot_maker(cls: type) -> Any:
    """``make(**fields)``: a message of the rosidl class ``cls``, made with ``cls.__new__`` and
    its slots (``_<field>``) set directly when every field is given, else ``cls(**fields)``.

    Why: a rosidl constructor builds the default of every nested field (``kwargs.get(name,
    Default())`` evaluates ``Default()`` even when the field is given), and its setters check
    each value again; an ``Odometry`` from given parts builds ~20 messages and two covariance
    arrays that are thrown away.  The builders using this (:data:`RosidlLibrary.SLOT_MADE`)
    made or checked every value.  ``_check_fields`` is set as the constructor sets it (the
    module's ``ROS_PYTHON_CHECK_FIELDS`` setting), so later assignments to the message are
    checked as they would be."""
    try:
        fields = tuple(cls.get_fields_and_field_types())
        slots = {name: "_" + name for name in fields}
        if not set(slots.values()) <= set(cls.__slots__):
            return cls
    except (AttributeError, TypeError):          # not a rosidl-generated class
        return cls
    checks = "_check_fields" in cls.__slots__
    check = getattr(sys.modules.get(cls.__module__), "ros_python_check_fields", "1") == "1"
    new, count = cls.__new__, len(fields)

    def make(**values: Any) -> Any:
        if len(values) != count or not values.keys() <= slots.keys():
            return cls(**values)            # defaults, or the constructor's error
        msg = new(cls)
        for name, value in values.items():
            setattr(msg, slots[name], value)
        if checks:
            msg._check_fields = check
        return msg
    return make
