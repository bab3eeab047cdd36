"""ROS 2 message layer: build and parse ROS 2 messages with whichever message classes the
process uses, and (de)serialise them without rclpy.

This module imports no message library.  Builders create messages from a *message library*
(:func:`use_message_library`):

* ``'rosidl'``: the rosidl-generated Python classes of a ROS 2 installation
  (``sensor_msgs.msg.JointState``...), imported on first use.  The rclpy transport selects it,
  so nodes under ROS publish rosidl messages directly and need nothing outside rosdep keys.
* ``'rosbags'`` (default): the dataclasses of the ``rosbags`` typestore for ROS 2 Jazzy
  (``rosbags.typesys.Stores.ROS2_JAZZY``, generated from the real ``.msg`` definitions of
  common_interfaces).  Used without ROS (Cyclone DDS transport, MCAP recording); they serialise
  to the CDR bytes a ROS 2 node puts on the wire (XCDR1, little endian, encapsulation header
  ``00 01 00 00``).  ``rosbags`` is imported only when this library is used.

Parsers are duck-typed (fields only) and accept messages of either library; the message type
is identified by :func:`msgtype_of`.

Conventions (stated once, used everywhere in this module)
---------------------------------------------------------
* Units: SI (m, rad, s, N, N m), REP-103.
* Pose: a 4x4 homogeneous matrix ``g = [[R, p], [0, 1]]`` mapping body (child)
  coordinates to parent coordinates, ``x_parent = R x_child + p``.
* Quaternions are in ROS order **(x, y, z, w)**, unit norm, and returned with
  ``w >= 0`` (canonical sign).  ``R = I`` <-> ``(0, 0, 0, 1)``.
* Twists and wrenches are 6-vectors with the **linear part first**:
  ``V = [v; omega]`` and ``F = [force; torque]``.
* ``nav_msgs/Odometry``: pose of ``child_frame_id`` in ``header.frame_id``; the twist
  is expressed **in child_frame_id**, i.e. it is the body (left-trivialised)
  velocity ``g^{-1} g_dot = [v_body; omega_body]`` (Odometry.msg).
* Default frames follow REP-105: ``odom`` (world-fixed) -> ``base_link`` (vehicle).
* Time stamps: float seconds are converted exactly to integer nanoseconds
  (``round(Fraction(t) * 10**9)``, ties to even) and then split as
  ``builtin_interfaces/Time`` ``sec = ns // 10**9`` (int32), ``nanosec = ns % 10**9``
  (so negative times have a negative ``sec`` and ``0 <= nanosec < 10**9``, like
  rclcpp).  Non-finite stamps and stamps outside the int32 second range raise
  ``ValueError``.
* Every parser returns numpy arrays and raises ``ValueError`` with a message naming
  the message type and field for malformed input (wrong lengths, NaN/Inf, missing
  or duplicate names, non-unit quaternions, non-rigid transforms).

Only numpy is imported here; rclpy is never needed, rosbags only for the ``'rosbags'``
library and for :func:`serialize`/:func:`deserialize`/:func:`msgdef`/:func:`type_hash`.
"""

from __future__ import annotations

import array
import importlib
import math
import numbers
import re
import struct
from fractions import Fraction
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from ..core.rotations import (  # noqa: F401
    QUAT_NORM_TOL,
    ROTATION_TOL,
    check_rigid_transform,
    check_unit_quaternion,
    matrix_from_pose,
    matrix_from_quat,
    pose_from_matrix,
    quat_from_matrix,
    rotvec_from_matrix,
    rotvec_from_quat,
)

__all__ = [  # noqa: F822 (TYPESTORE comes from the module __getattr__)
    "TYPESTORE", "JOINT_STATE", "ODOMETRY", "TF_MESSAGE", "CLOCK", "FLOAT64_MULTI_ARRAY",
    "WRENCH_STAMPED", "DIAGNOSTIC_ARRAY", "DIAGNOSTIC_LEVELS",
    "stamp_to_ns", "ns_to_time_msg", "time_msg", "time_msg_to_ns", "time_msg_to_sec",
    "header_msg",
    "quat_from_matrix", "matrix_from_quat", "rotvec_from_quat", "rotvec_from_matrix",
    "pose_from_matrix", "matrix_from_pose", "check_rigid_transform",
    "joint_state_msg", "odometry_msg", "transform_stamped_msg", "tf_msg", "clock_msg",
    "float64_multi_array_msg", "wrench_stamped_msg", "diagnostic_status_msg",
    "diagnostic_array_msg",
    "JointStateData", "OdometryData", "TransformData", "WrenchData",
    "parse_joint_state", "parse_odometry", "parse_transform", "parse_tf", "parse_clock",
    "parse_float64_multi_array", "parse_wrench_stamped", "parse_diagnostic_array",
    "serialize", "deserialize", "check_sequence_counts", "check_count_limits",
    "SequenceCountError", "typestore_available", "msgdef",
    "type_hash",
    "use_message_library", "message_library", "msgtype_of", "pose_msg", "pose_stamped_msg", "path_msg",
    "pose_stamped_from_odometry",
]

JOINT_STATE = "sensor_msgs/msg/JointState"
ODOMETRY = "nav_msgs/msg/Odometry"
TF_MESSAGE = "tf2_msgs/msg/TFMessage"
CLOCK = "rosgraph_msgs/msg/Clock"
FLOAT64_MULTI_ARRAY = "std_msgs/msg/Float64MultiArray"
WRENCH_STAMPED = "geometry_msgs/msg/WrenchStamped"
DIAGNOSTIC_ARRAY = "diagnostic_msgs/msg/DiagnosticArray"

#: diagnostic_msgs/DiagnosticStatus level constants.
DIAGNOSTIC_LEVELS = {"OK": 0, "WARN": 1, "ERROR": 2, "STALE": 3}

_NS_PER_S = 10**9
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


# ------------------------------------------------------------------ message libraries

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


class _RosbagsLibrary:
    """rosbags typestore dataclasses (numpy arrays for numeric sequences, int for ``byte``)."""

    name = "rosbags"

    def __getitem__(self, msgtype: str) -> type:
        return _typestore().types[msgtype]

    @staticmethod
    def f64seq(a: np.ndarray) -> Any:
        return a

    @staticmethod
    def octet(v: int) -> Any:
        return int(v)


class _RosidlLibrary:
    """rosidl-generated classes of the ROS 2 installation (``array.array('d')`` for float64
    sequences, 1-byte ``bytes`` for ``byte``), as rosidl_generator_py's setters require."""

    name = "rosidl"

    def __init__(self) -> None:
        self._cache: dict[str, type] = {}

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


_LIBRARIES = {"rosbags": _RosbagsLibrary, "rosidl": _RosidlLibrary}
_active: Any = None
_typestore_cache: Any = None


def _typestore() -> Any:
    global _typestore_cache
    if _typestore_cache is None:
        try:
            from rosbags.typesys import Stores, get_typestore
        except ImportError as exc:
            raise ImportError(
                "rosbags is needed for ROS 2 messages without ROS (install vm_dynamics[dds], or "
                "run under rclpy, where the rosidl message classes are used)") from exc
        _typestore_cache = get_typestore(Stores.ROS2_JAZZY)
    return _typestore_cache


def typestore_available() -> bool:
    """True if rosbags' type store can be used here (it describes the fields that
    :func:`check_sequence_counts` walks).  A ROS install with the rosdep keys only has no
    rosbags: the rclpy adapter then leaves counts to the checks after rosidl's (compiled)
    deserialisation."""
    try:
        _typestore()
    except ImportError:
        return False
    return True


def use_message_library(name: str) -> str:
    """Select the message classes the builders create: ``'rosidl'`` or ``'rosbags'``.

    Returns the previously selected name (so a caller can restore it).
    """
    global _active
    if name not in _LIBRARIES:
        raise ValueError(f"message library must be one of {sorted(_LIBRARIES)}, got {name!r}")
    previous = message_library()
    if _active is None or _active.name != name:
        _active = _LIBRARIES[name]()
    return previous


def message_library() -> str:
    """Name of the selected message library (``'rosbags'`` until one is selected)."""
    return "rosbags" if _active is None else _active.name


class _ActiveTypes:
    """``_T[msgtype]``: the class of ``msgtype`` in the selected library."""

    def __getitem__(self, msgtype: str) -> type:
        return _lib()[msgtype]


def _lib() -> Any:
    global _active
    if _active is None:
        _active = _RosbagsLibrary()
    return _active


_T = _ActiveTypes()


def __getattr__(name: str) -> Any:
    if name == "TYPESTORE":  # the rosbags typestore, imported on first access
        return _typestore()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")



# ----------------------------------------------------------------------------- time


def stamp_to_ns(stamp_s: Any) -> int:
    """Exact conversion of a time in seconds to integer nanoseconds.

    ``stamp_s`` may be a Python/numpy int or float, a ``Fraction`` or ``Decimal``
    (anything ``Fraction()`` accepts exactly).  The binary value of a float is
    converted exactly and rounded once to the nearest nanosecond, so
    ``stamp_to_ns(0.1) == 100_000_000`` and ``stamp_to_ns(1e9 + 0.5) == 1e9 s + 5e8 ns``
    with no intermediate float product.
    """
    if isinstance(stamp_s, (bool, np.bool_)):
        raise TypeError(f"time stamp must be a number of seconds, got bool {stamp_s!r}")
    if isinstance(stamp_s, np.generic):
        stamp_s = stamp_s.item()
    if isinstance(stamp_s, float):
        if not math.isfinite(stamp_s):
            raise ValueError(f"time stamp must be finite, got {stamp_s!r}")
        # exact in integers: num/den with den a power of two; round half to even, as
        # round(Fraction) does (the Fraction path below is ~10x slower)
        num, den = stamp_s.as_integer_ratio()
        ns, rem = divmod(num * _NS_PER_S, den)
        if 2 * rem > den or (2 * rem == den and ns & 1):
            ns += 1
        return ns
    try:
        frac = Fraction(stamp_s)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"time stamp must be a finite number of seconds, got {stamp_s!r}") from exc
    return round(frac * _NS_PER_S)


def ns_to_time_msg(ns: int) -> Any:
    """``builtin_interfaces/Time`` from integer nanoseconds (floor split)."""
    if isinstance(ns, (bool, np.bool_)) or not isinstance(ns, (numbers.Integral, np.integer)):
        raise TypeError(f"nanoseconds must be an integer, got {type(ns).__name__}")
    ns = int(ns)
    sec, nanosec = divmod(ns, _NS_PER_S)
    if not _INT32_MIN <= sec <= _INT32_MAX:
        raise ValueError(
            f"time stamp {ns} ns is outside builtin_interfaces/Time range "
            f"(sec must fit int32, got {sec})")
    return _T["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec)


def time_msg(stamp_s: Any) -> Any:
    """``builtin_interfaces/Time`` from seconds; a Time message is passed through."""
    if _is_msg(stamp_s, "builtin_interfaces/msg/Time"):
        return stamp_s
    return ns_to_time_msg(stamp_to_ns(stamp_s))


def time_msg_to_ns(msg: Any) -> int:
    """Integer nanoseconds of a ``builtin_interfaces/Time`` message (validated)."""
    sec, nanosec = int(msg.sec), int(msg.nanosec)
    if not 0 <= nanosec < _NS_PER_S:
        raise ValueError(f"builtin_interfaces/Time: nanosec must be in [0, 1e9), got {nanosec}")
    if not _INT32_MIN <= sec <= _INT32_MAX:
        raise ValueError(f"builtin_interfaces/Time: sec must fit int32, got {sec}")
    return sec * _NS_PER_S + nanosec


def time_msg_to_sec(msg: Any) -> float:
    """Seconds (float, nearest double) of a ``builtin_interfaces/Time`` message."""
    return float(Fraction(time_msg_to_ns(msg), _NS_PER_S))


def header_msg(stamp_s: Any, frame_id: str = "") -> Any:
    """``std_msgs/Header``."""
    _check_frame_id(frame_id, "frame_id", allow_empty=True)
    return _T["std_msgs/msg/Header"](stamp=time_msg(stamp_s), frame_id=frame_id)


# ------------------------------------------------------------------------- rotations


# -------------------------------------------------------------------------- helpers


def _is_msg(obj: Any, msgtype: str) -> bool:
    return msgtype_of(obj) == msgtype


def _check_frame_id(frame_id: Any, what: str, *, allow_empty: bool = False) -> None:
    if not isinstance(frame_id, str):
        raise ValueError(f"{what} must be a str, got {type(frame_id).__name__}")
    if not allow_empty and not frame_id:
        raise ValueError(f"{what} must not be empty")


def _vector(x: Any, n: int | None, what: str) -> np.ndarray:
    """1-D finite float64 vector of length n (None: any length)."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be numeric: {exc}") from exc
    if a.ndim > 1 and sum(d != 1 for d in a.shape) <= 1:
        a = a.reshape(-1)  # row/column vector
    if a.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {a.shape}")
    if n is not None and a.shape[0] != n:
        raise ValueError(f"{what} must have length {n}, got {a.shape[0]}")
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise ValueError(f"{what} contains NaN/Inf at index {int(bad[0])}")
    return np.ascontiguousarray(a)


def _vec3(v: Sequence[float]) -> Any:
    x, y, z = v.tolist() if isinstance(v, np.ndarray) else v
    return _T["geometry_msgs/msg/Vector3"](x=float(x), y=float(y), z=float(z))


def _covariance(c: Any, what: str) -> np.ndarray:
    if c is None:
        return np.zeros(36)
    a = np.asarray(c, dtype=float)
    if a.shape not in {(36,), (6, 6)}:
        raise ValueError(f"{what} must have shape (6, 6) or (36,), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contains NaN/Inf")
    return np.ascontiguousarray(a.reshape(36))


# ------------------------------------------------------------------------- builders


def joint_state_msg(stamp_s: Any, names: Sequence[str], pos: Any, vel: Any = None,
                    effort: Any = None, frame_id: str = "") -> Any:
    """``sensor_msgs/JointState``.

    ``pos`` must have one entry per name; ``vel``/``effort`` either the same length
    or ``None`` (sent as empty arrays, as JointState.msg allows).
    """
    names = list(names)
    for i, nm in enumerate(names):
        if not isinstance(nm, str) or not nm:
            raise ValueError(f"JointState: joint name at index {i} must be a non-empty str, "
                             f"got {nm!r}")
    dup = _duplicates(names)
    if dup:
        raise ValueError(f"JointState: duplicate joint names {dup}")
    n = len(names)
    p = _vector(pos, n, "JointState.position")
    v = np.zeros(0) if vel is None else _vector(vel, n, "JointState.velocity")
    e = np.zeros(0) if effort is None else _vector(effort, n, "JointState.effort")
    f64 = _lib().f64seq
    return _T[JOINT_STATE](header=header_msg(stamp_s, frame_id), name=names,
                           position=f64(p), velocity=f64(v), effort=f64(e))


def pose_msg(g: Any, name: str = "g") -> Any:
    """geometry_msgs/Pose of a 4x4 transform (checked rigid, errors naming ``name``;
    quaternion x, y, z, w)."""
    p, q = pose_from_matrix(g, name=name)
    px, py, pz = p.tolist()
    qx, qy, qz, qw = q.tolist()
    return _T["geometry_msgs/msg/Pose"](
        position=_T["geometry_msgs/msg/Point"](x=px, y=py, z=pz),
        orientation=_T["geometry_msgs/msg/Quaternion"](x=qx, y=qy, z=qz, w=qw))


def odometry_msg(stamp_s: Any, g: Any, V_body6: Any, frame_id: str = "odom",
                 child_frame_id: str = "base_link", pose_covariance: Any = None,
                 twist_covariance: Any = None) -> Any:
    """``nav_msgs/Odometry`` from the base pose ``g`` (4x4, child in frame_id) and the
    body twist ``V_body6 = [v; omega]`` expressed in ``child_frame_id``.

    Covariances default to zeros (exact simulated ground truth); pass (6, 6) or
    (36,) arrays, row-major in the order (x, y, z, rot x, rot y, rot z).
    """
    _check_frame_id(frame_id, "Odometry.header.frame_id")
    _check_frame_id(child_frame_id, "Odometry.child_frame_id")
    V = _vector(V_body6, 6, "Odometry twist V_body6")
    return _T[ODOMETRY](
        header=header_msg(stamp_s, frame_id),
        child_frame_id=child_frame_id,
        pose=_T["geometry_msgs/msg/PoseWithCovariance"](
            pose=pose_msg(g, name="Odometry pose g"),
            covariance=_covariance(pose_covariance, "Odometry pose covariance")),
        twist=_T["geometry_msgs/msg/TwistWithCovariance"](
            twist=_T["geometry_msgs/msg/Twist"](linear=_vec3(V[:3]), angular=_vec3(V[3:])),
            covariance=_covariance(twist_covariance, "Odometry twist covariance")))


def transform_stamped_msg(stamp_s: Any, parent: str, child: str, g: Any) -> Any:
    """``geometry_msgs/TransformStamped``: pose of ``child`` in ``parent`` (4x4)."""
    _check_frame_id(parent, "TransformStamped parent frame_id")
    _check_frame_id(child, "TransformStamped child_frame_id")
    if parent == child:
        raise ValueError(f"TransformStamped: parent and child frame are both {parent!r}")
    p, q = pose_from_matrix(g, name=f"transform {parent}->{child}")
    qx, qy, qz, qw = q.tolist()
    return _T["geometry_msgs/msg/TransformStamped"](
        header=header_msg(stamp_s, parent), child_frame_id=child,
        transform=_T["geometry_msgs/msg/Transform"](
            translation=_vec3(p.tolist()),
            rotation=_T["geometry_msgs/msg/Quaternion"](x=qx, y=qy, z=qz, w=qw)))


def pose_stamped_msg(stamp_s: Any, frame_id: str, g: Any) -> Any:
    """``geometry_msgs/PoseStamped``: pose ``g`` (4x4) in ``frame_id``."""
    _check_frame_id(frame_id, "PoseStamped.header.frame_id")
    return _T["geometry_msgs/msg/PoseStamped"](
        header=header_msg(stamp_s, frame_id),
        pose=pose_msg(g, name="PoseStamped pose g"))


def pose_stamped_from_odometry(msg: Any) -> Any:
    """``geometry_msgs/PoseStamped`` of an Odometry's pose (header shared, same library)."""
    _expect(msg, ODOMETRY)
    return _T["geometry_msgs/msg/PoseStamped"](header=msg.header, pose=msg.pose.pose)


def path_msg(stamp_s: Any, frame_id: str, poses: Iterable[Any]) -> Any:
    """``nav_msgs/Path`` in ``frame_id`` from PoseStamped messages (of the same library)."""
    _check_frame_id(frame_id, "Path.header.frame_id")
    poses = list(poses)
    for k in {0, len(poses) - 1} if poses else ():   # all come from one builder
        if not _is_msg(poses[k], "geometry_msgs/msg/PoseStamped"):
            raise ValueError(f"Path: pose {k} must be a geometry_msgs/msg/PoseStamped, got "
                             f"{msgtype_of(poses[k])}")
    return _T["nav_msgs/msg/Path"](header=header_msg(stamp_s, frame_id), poses=poses)


def tf_msg(stamp_s: Any, transforms: Iterable[tuple[str, str, Any]]) -> Any:
    """``tf2_msgs/TFMessage`` from a list of ``(parent, child, 4x4)``, all at one stamp."""
    stamp = time_msg(stamp_s)
    items = []
    for k, item in enumerate(transforms):
        try:
            parent, child, g = item
        except (TypeError, ValueError) as exc:
            raise ValueError(f"TFMessage: transform {k} must be (parent, child, 4x4)") from exc
        items.append(transform_stamped_msg(stamp, parent, child, g))
    return _T[TF_MESSAGE](transforms=items)


def clock_msg(stamp_s: Any) -> Any:
    """``rosgraph_msgs/Clock``."""
    return _T[CLOCK](clock=time_msg(stamp_s))


def float64_multi_array_msg(values: Any, labels: Sequence[str] | None = None) -> Any:
    """``std_msgs/Float64MultiArray`` (e.g. ``<controller>/commands`` joint efforts).

    1-D input without labels gets an empty layout (as ``ros2 topic pub`` and
    forward_command_controller use); N-D input (or labels) gets a row-major layout
    with ``dim[i].stride = prod(shape[i:])`` as documented in MultiArrayLayout.msg.
    """
    a = np.asarray(values, dtype=np.float64)
    if a.ndim == 0:
        raise ValueError("Float64MultiArray: values must be at least 1-D")
    if not np.all(np.isfinite(a)):
        bad = int(np.flatnonzero(~np.isfinite(a.reshape(-1)))[0])
        raise ValueError(f"Float64MultiArray: values contain NaN/Inf at flat index {bad}")
    dims = []
    if a.ndim > 1 or labels is not None:
        labels = [""] * a.ndim if labels is None else list(labels)
        if len(labels) != a.ndim:
            raise ValueError(f"Float64MultiArray: {len(labels)} labels for {a.ndim}-D values")
        for i, lab in enumerate(labels):
            dims.append(_T["std_msgs/msg/MultiArrayDimension"](
                label=str(lab), size=int(a.shape[i]), stride=int(np.prod(a.shape[i:]))))
    return _T[FLOAT64_MULTI_ARRAY](
        layout=_T["std_msgs/msg/MultiArrayLayout"](dim=dims, data_offset=0),
        data=_lib().f64seq(np.ascontiguousarray(a.reshape(-1))))


def wrench_stamped_msg(stamp_s: Any, wrench6: Any, frame_id: str = "base_link") -> Any:
    """``geometry_msgs/WrenchStamped`` from ``wrench6 = [force; torque]`` in ``frame_id``."""
    _check_frame_id(frame_id, "WrenchStamped.header.frame_id")
    w = _vector(wrench6, 6, "WrenchStamped wrench6")
    return _T[WRENCH_STAMPED](
        header=header_msg(stamp_s, frame_id),
        wrench=_T["geometry_msgs/msg/Wrench"](force=_vec3(w[:3]), torque=_vec3(w[3:])))


def _diag_level(level: Any) -> int:
    if isinstance(level, str):
        key = level.strip().upper()
        if key not in DIAGNOSTIC_LEVELS:
            raise ValueError(f"DiagnosticStatus: unknown level {level!r}; expected one of "
                             f"{sorted(DIAGNOSTIC_LEVELS)} or 0..3")
        return DIAGNOSTIC_LEVELS[key]
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, (numbers.Integral,
                                                                      np.integer)):
        raise ValueError(f"DiagnosticStatus: level must be int 0..3 or a name, got {level!r}")
    if int(level) not in DIAGNOSTIC_LEVELS.values():
        raise ValueError(f"DiagnosticStatus: level must be 0..3 (OK/WARN/ERROR/STALE), "
                         f"got {level}")
    return int(level)


def _kv_value(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return repr(float(v))  # shortest round-trip representation
    if isinstance(v, (np.integer, np.bool_)):
        return str(v.item())
    return str(v)


def diagnostic_status_msg(name: str, level: Any = "OK", message: str = "",
                          hardware_id: str = "", values: Mapping[str, Any] | None = None) -> Any:
    """``diagnostic_msgs/DiagnosticStatus``; ``values`` become KeyValue strings
    (floats with full round-trip precision)."""
    if not isinstance(name, str) or not name:
        raise ValueError("DiagnosticStatus: name must be a non-empty str")
    kvs = [_T["diagnostic_msgs/msg/KeyValue"](key=str(k), value=_kv_value(v))
           for k, v in (values or {}).items()]
    return _T["diagnostic_msgs/msg/DiagnosticStatus"](
        level=_lib().octet(_diag_level(level)), name=name, message=str(message),
        hardware_id=str(hardware_id), values=kvs)


def diagnostic_array_msg(stamp_s: Any, statuses: Iterable[Any], frame_id: str = "") -> Any:
    """``diagnostic_msgs/DiagnosticArray``.

    ``statuses``: DiagnosticStatus messages, or mappings with keys ``name`` and
    optionally ``level``, ``message``, ``hardware_id``, ``values`` (see
    :func:`diagnostic_status_msg`).
    """
    out = []
    for k, s in enumerate(statuses):
        if _is_msg(s, "diagnostic_msgs/msg/DiagnosticStatus"):
            out.append(s)
        elif isinstance(s, Mapping):
            unknown = set(s) - {"name", "level", "message", "hardware_id", "values"}
            if unknown or "name" not in s:
                raise ValueError(f'DiagnosticArray: status {k} needs key "name"; unknown keys '
                                 f'{sorted(unknown)}')
            out.append(diagnostic_status_msg(**s))
        else:
            raise ValueError(f"DiagnosticArray: status {k} must be a DiagnosticStatus or a "
                             f"mapping, got {type(s).__name__}")
    return _T[DIAGNOSTIC_ARRAY](header=header_msg(stamp_s, frame_id), status=out)


# -------------------------------------------------------------------------- parsers


class JointStateData(NamedTuple):
    """Parsed ``sensor_msgs/JointState`` (arrays ordered like ``names``)."""

    stamp_ns: int
    names: list[str]
    position: np.ndarray
    velocity: np.ndarray | None
    effort: np.ndarray | None


class OdometryData(NamedTuple):
    """Parsed ``nav_msgs/Odometry``: pose g (4x4) and body twist [v; omega]."""

    stamp_ns: int
    frame_id: str
    child_frame_id: str
    g: np.ndarray
    twist: np.ndarray


class TransformData(NamedTuple):
    """One parsed ``geometry_msgs/TransformStamped``."""

    stamp_ns: int
    parent: str
    child: str
    g: np.ndarray


class WrenchData(NamedTuple):
    """Parsed ``geometry_msgs/WrenchStamped``: wrench = [force; torque]."""

    stamp_ns: int
    frame_id: str
    wrench: np.ndarray


def _duplicates(names: Sequence[str], show: int = 10) -> list[str]:
    """The names that occur more than once (sorted, at most ``show`` of them), in time linear
    in ``len(names)``."""
    seen: set = set()
    dup: set = set()
    for nm in names:
        if nm in seen:
            dup.add(nm)
        else:
            seen.add(nm)
    return sorted(dup, key=repr)[:show]


def _expect(msg: Any, msgtype: str) -> None:
    got = msgtype_of(msg)
    if got != msgtype:
        raise ValueError(f"expected a {msgtype} message, got {got}")


def _finite_field(arr: Any, what: str, names: Sequence[str] | None = None) -> np.ndarray:
    a = np.asarray(arr, dtype=np.float64).reshape(-1)
    # fast path: a finite sum (Python floats: overflow gives inf, no warning) or, for long
    # fields, one vectorised test; otherwise the exact search below names the bad index
    if math.isfinite(sum(a.tolist())) if a.size <= 32 else bool(np.isfinite(a).all()):
        return a
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        i = int(bad[0])
        who = f" (joint '{names[i]}')" if names is not None and i < len(names) else ""
        raise ValueError(f"{what} contains NaN/Inf at index {i}{who}")
    return a


def parse_joint_state(msg: Any, names: Sequence[str] | None = None) -> JointStateData:
    """Check a JointState and return its arrays, reordered to ``names`` if given.

    ``position`` must match ``name`` in length; ``velocity``/``effort`` may be empty
    (returned as ``None``) or must match too.  With ``names``, every requested
    joint must be present (extra joints in the message are ignored).
    """
    _expect(msg, JOINT_STATE)
    msg_names = list(msg.name)
    n = len(msg_names)
    dup = _duplicates(msg_names)
    if dup:
        raise ValueError(f"JointState: duplicate joint names {dup}")
    fields = {}
    for field in ("position", "velocity", "effort"):
        a = np.asarray(getattr(msg, field), dtype=np.float64).reshape(-1)
        if a.size == 0 and field != "position" and n > 0:
            fields[field] = None
            continue
        if a.size != n:
            raise ValueError(f"JointState: {field} has {a.size} entries but name has {n}")
        fields[field] = _finite_field(a, f"JointState.{field}", msg_names)
    if names is not None:
        names = list(names)
        index = {nm: i for i, nm in enumerate(msg_names)}
        missing = [nm for nm in names if nm not in index]
        if missing:
            has = (f"{msg_names}" if n <= 20 else
                   f"{n} names: {msg_names[:10]} … {msg_names[-3:]}")
            raise ValueError(f"JointState: missing joint names {missing} (message has {has})")
        order = np.array([index[nm] for nm in names], dtype=int)
        fields = {k: (None if v is None else v[order]) for k, v in fields.items()}
        msg_names = names
    return JointStateData(time_msg_to_ns(msg.header.stamp), msg_names, fields["position"],
                          fields["velocity"], fields["effort"])


def _quat_field(q: Any, what: str) -> np.ndarray:
    return check_unit_quaternion(_finite_field([q.x, q.y, q.z, q.w], what), what)


def _transform_to_matrix(translation: Any, rotation: Any, what: str) -> np.ndarray:
    p = _finite_field([translation.x, translation.y, translation.z], f"{what} translation")
    q = _quat_field(rotation, f"{what} rotation")
    return matrix_from_pose(p, q)


def parse_odometry(msg: Any) -> OdometryData:
    """Odometry -> (stamp_ns, frame_id, child_frame_id, g 4x4, body twist [v; omega])."""
    _expect(msg, ODOMETRY)
    pose = msg.pose.pose
    g = _transform_to_matrix(pose.position, pose.orientation, "Odometry.pose")
    tw = msg.twist.twist
    V = _finite_field([tw.linear.x, tw.linear.y, tw.linear.z,
                       tw.angular.x, tw.angular.y, tw.angular.z], "Odometry.twist")
    return OdometryData(time_msg_to_ns(msg.header.stamp), msg.header.frame_id,
                        msg.child_frame_id, g, V)


def parse_transform(msg: Any) -> TransformData:
    """TransformStamped -> (stamp_ns, parent, child, 4x4)."""
    _expect(msg, "geometry_msgs/msg/TransformStamped")
    what = f"TransformStamped {msg.header.frame_id!r}->{msg.child_frame_id!r}"
    if not msg.header.frame_id or not msg.child_frame_id:
        raise ValueError(f"{what}: empty frame id")
    g = _transform_to_matrix(msg.transform.translation, msg.transform.rotation, what)
    return TransformData(time_msg_to_ns(msg.header.stamp), msg.header.frame_id,
                         msg.child_frame_id, g)


def parse_tf(msg: Any) -> list[TransformData]:
    """TFMessage -> list of :class:`TransformData`."""
    _expect(msg, TF_MESSAGE)
    return [parse_transform(t) for t in msg.transforms]


def parse_clock(msg: Any) -> int:
    """Clock -> integer nanoseconds."""
    _expect(msg, CLOCK)
    return time_msg_to_ns(msg.clock)


def parse_float64_multi_array(msg: Any, expected_len: int | None = None,
                              reshape: bool = True) -> np.ndarray:
    """Float64MultiArray -> array.

    Honors ``layout.data_offset``; with a consistent row-major multi-dimensional
    layout and ``reshape=True`` the result has shape ``[d.size for d in dim]``.
    ``expected_len`` checks the number of (flat) elements.
    """
    _expect(msg, FLOAT64_MULTI_ARRAY)
    data = np.asarray(msg.data, dtype=np.float64).reshape(-1)
    off = int(msg.layout.data_offset)
    if not 0 <= off <= data.size:
        raise ValueError(f"Float64MultiArray: data_offset {off} outside data of length "
                         f"{data.size}")
    data = data[off:]
    dims = list(msg.layout.dim)
    shape = None
    if dims:
        sizes = [int(d.size) for d in dims]
        total = int(np.prod(sizes))
        if total != data.size:
            raise ValueError(f"Float64MultiArray: layout sizes {sizes} give {total} elements "
                             f"but data has {data.size} after offset {off}")
        strides = [int(d.stride) for d in dims]
        expected = [int(np.prod(sizes[i:])) for i in range(len(sizes))]
        if len(dims) > 1 and strides != expected:
            raise ValueError(f"Float64MultiArray: strides {strides} are not row-major "
                             f"contiguous {expected}")
        shape = sizes
    if expected_len is not None and data.size != expected_len:
        raise ValueError(f"Float64MultiArray: expected {expected_len} values, got {data.size}")
    data = _finite_field(data, "Float64MultiArray.data")
    if reshape and shape is not None and len(shape) > 1:
        data = data.reshape(shape)
    return data


def parse_wrench_stamped(msg: Any) -> WrenchData:
    """WrenchStamped -> (stamp_ns, frame_id, [force; torque])."""
    _expect(msg, WRENCH_STAMPED)
    f, t = msg.wrench.force, msg.wrench.torque
    w = _finite_field([f.x, f.y, f.z, t.x, t.y, t.z], "WrenchStamped.wrench")
    return WrenchData(time_msg_to_ns(msg.header.stamp), msg.header.frame_id, w)


def parse_diagnostic_array(msg: Any) -> list[dict[str, Any]]:
    """DiagnosticArray -> list of dicts (name, level, message, hardware_id, values)."""
    _expect(msg, DIAGNOSTIC_ARRAY)
    out = []
    for s in msg.status:
        level = s.level[0] if isinstance(s.level, (bytes, bytearray)) else int(s.level)
        out.append({"name": s.name, "level": _diag_level(level), "message": s.message,
                    "hardware_id": s.hardware_id,
                    "values": {kv.key: kv.value for kv in s.values}})
    return out


# ----------------------------------------------------------------------------- CDR


def serialize(msg: Any, msgtype: str | None = None) -> bytes:
    """CDR bytes (with the 4-byte encapsulation header) of a typestore message."""
    msgtype = msgtype or getattr(msg, "__msgtype__", None)
    if msgtype is None:
        raise ValueError(f"cannot infer ROS message type of {type(msg).__name__} (serialize "
                         "takes rosbags messages)")
    return bytes(_typestore().serialize_cdr(msg, msgtype))


def _check_cdr_header(data: bytes, msgtype: str) -> None:
    if len(data) < 4:
        raise ValueError(f"{msgtype}: CDR data too short ({len(data)} bytes)")
    if data[0] != 0 or data[1] not in (0, 1):
        raise ValueError(f"{msgtype}: unsupported CDR encapsulation header {data[:4].hex()} "
                         "(expected plain CDR, 0000 or 0001)")


class SequenceCountError(ValueError):
    """A serialized message's sequence holds more elements than allowed
    (:func:`check_sequence_counts`)."""


_CDR_SIZES = {"bool": 1, "byte": 1, "char": 1, "int8": 1, "uint8": 1, "int16": 2,
              "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "float32": 4,
              "float64": 8}


class _CdrUnsupported(Exception):
    """A construct the count scanner does not walk (``wstring``): it leaves the sample to the
    decoder."""


class _CdrScanner:
    """Walks plain CDR (XCDR1, the ROS 2 wire format) without building any object: reads the
    element counts of sequences and skips their contents, in time linear in the bytes walked.
    Alignment is relative to the end of the 4-byte encapsulation header."""

    def __init__(self, data: bytes, msgtype: str) -> None:
        self.data = data
        self.msgtype = msgtype
        self.u32 = "<I" if data[1] == 1 else ">I"
        self.pos = 4

    def _need(self, n: int) -> None:
        if self.pos + n > len(self.data):
            raise ValueError(f"{self.msgtype}: malformed CDR data (truncated at byte "
                             f"{self.pos}, {n} more needed)")

    def align(self, n: int) -> None:
        off = (self.pos - 4) % n
        if off:
            self.pos += n - off

    def count(self) -> int:
        self.align(4)
        self._need(4)
        (n,) = struct.unpack_from(self.u32, self.data, self.pos)
        self.pos += 4
        return n

    def skip_base(self, base: str, n: int) -> None:
        if base == "string":
            for _ in range(n):
                length = self.count()
                self._need(length)
                self.pos += length
            return
        size = _CDR_SIZES.get(base)
        if size is None:
            raise _CdrUnsupported(base)
        if n:
            self.align(size)
            self._need(size * n)
            self.pos += size * n

    def skip_struct(self, msgtype: str) -> None:
        for _, desc in _typestore().fielddefs[msgtype][1]:
            self.skip_field(desc)

    def skip_elements(self, elem: tuple, n: int) -> None:
        enode, einfo = elem
        if enode == _NODE_BASE:
            self.skip_base(einfo[0], n)
            return
        if n > len(self.data) - self.pos:   # every element takes at least one byte
            raise ValueError(f"{self.msgtype}: malformed CDR data (a sequence of {n} "
                             f"elements in {len(self.data) - self.pos} bytes)")
        for _ in range(n):
            self.skip_struct(einfo)

    def skip_field(self, desc: tuple) -> None:
        node, info = desc
        if node == _NODE_BASE:
            self.skip_base(info[0], 1)
        elif node == _NODE_NAME:
            self.skip_struct(info)
        elif node == _NODE_ARRAY:
            self.skip_elements(info[0], info[1])
        elif node == _NODE_SEQUENCE:
            self.skip_elements(info[0], self.count())
        else:
            raise _CdrUnsupported(str(node))


# rosbags.interfaces.Nodetype values (BASE, NAME, ARRAY, SEQUENCE), without importing rosbags
_NODE_BASE, _NODE_NAME, _NODE_ARRAY, _NODE_SEQUENCE = 1, 2, 3, 4


def check_count_limits(msgtype: str, limits: Mapping[str, Any]) -> dict[str, tuple[int, str]]:
    """Validate the ``limits`` of :func:`check_sequence_counts` for ``msgtype`` (top-level
    sequence fields, integer limits >= 0); returns them as ``{field: (limit, name)}``."""
    if msgtype not in _typestore().fielddefs:
        raise ValueError(f"unknown message type {msgtype!r}")
    fields = dict(_typestore().fielddefs[msgtype][1])
    out = {}
    for field, value in limits.items():
        limit, label = value if isinstance(value, tuple) else (value, "")
        if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 0:
            raise ValueError(f"count limit of {msgtype}.{field}: expected an integer >= 0, "
                             f"got {limit!r}")
        if field not in fields or fields[field][0] != _NODE_SEQUENCE:
            raise ValueError(f"count limit: {field!r} is not a sequence field of {msgtype}")
        out[field] = (int(limit), str(label))
    return out


def check_sequence_counts(data: bytes | bytearray | memoryview, msgtype: str,
                          limits: Mapping[str, Any]) -> None:
    """Reject serialized ``msgtype`` data whose top-level sequence ``field`` holds more than
    ``limits[field]`` elements (an int, or ``(int, name)`` where ``name`` is quoted in the
    error, e.g. the parameter that sets the limit), **before any object is built**.

    The fields up to the last limited one are walked in the CDR bytes (counts read, contents
    skipped), so the cost is linear in the bytes up to that field and independent of the
    counts: a 1 MB JointTrajectory of 43 000 empty points is rejected after reading its
    header, ``joint_names`` and one 4-byte count.  Raises :class:`SequenceCountError` (a
    ``ValueError``) naming the field, its count and the limit, ``ValueError`` for data that
    ends early; a field behind a ``wstring`` is not checked (left to the decoder).
    """
    store = _typestore()
    if msgtype not in store.types:
        raise ValueError(f"unknown message type {msgtype!r}")
    data = bytes(data)
    _check_cdr_header(data, msgtype)
    todo = check_count_limits(msgtype, limits)
    if not todo:
        return
    scan = _CdrScanner(data, msgtype)
    short = msgtype.rsplit("/", 1)[-1]
    try:
        for name, desc in store.fielddefs[msgtype][1]:
            if name in todo:
                n = scan.count()
                limit, label = todo.pop(name)
                if n > limit:
                    more = (f"{label}={limit}" if label.isidentifier() else
                            f"{label} ({limit})" if label else f"the limit of {limit}")
                    raise SequenceCountError(
                        f"{short}.{name} has {n} entries, more than {more} (read from the "
                        f"serialized sample, which was not decoded)")
                if not todo:
                    return
                scan.skip_elements(desc[1][0], n)
            else:
                scan.skip_field(desc)
    except _CdrUnsupported:
        return


def deserialize(data: bytes | bytearray | memoryview, msgtype: str,
                max_counts: Mapping[str, Any] | None = None) -> Any:
    """Typestore message from CDR bytes; malformed/short data raises ValueError.  With
    ``max_counts``, :func:`check_sequence_counts` runs first (a :class:`SequenceCountError`
    before any object is built)."""
    store = _typestore()
    if msgtype not in store.types:
        raise ValueError(f"unknown message type {msgtype!r}")
    data = bytes(data)
    _check_cdr_header(data, msgtype)
    if max_counts:
        check_sequence_counts(data, msgtype, max_counts)
    try:
        return store.deserialize_cdr(data, msgtype)
    except Exception as exc:  # rosbags raises struct/index/decode errors
        raise ValueError(f"{msgtype}: malformed CDR data ({type(exc).__name__}: {exc})") from exc


def msgdef(msgtype: str) -> str:
    """Concatenated ``ros2msg`` definition text (as stored in MCAP schemas)."""
    text, _ = _typestore().generate_msgdef(msgtype, ros_version=2)
    return text


def type_hash(msgtype: str) -> str:
    """RIHS01 type hash (``RIHS01_<64 hex>``) as used by Iron+ discovery."""
    return _typestore().hash_rihs01(msgtype)
