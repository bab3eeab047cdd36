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

The layer is split by what it holds; this module is its one import (it re-exports the rest):
the message libraries, the builders and (de)serialisation live here; the parsers in
:mod:`.parsers`, the field checks both use in :mod:`.fields`, exact time conversions in
:mod:`.stamps`, type names in :mod:`.msgtypes` and the counts read from serialized bytes
before decoding in :mod:`.cdr_counts`.

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

import numbers
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..core.rotations import (  # noqa: F401 (re-exported: the message layer's conventions)
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
from . import cdr_counts
from .cdr_counts import SequenceCountError, check_cdr_header
from .fields import (
    check_frame_id,
    covariance36,
    diagnostic_level,
    duplicate_names,
    expect_msgtype,
    finite_vector,
)
from .message_libraries import RosbagsLibrary, RosidlLibrary
from .msgtypes import (
    CLOCK,
    DIAGNOSTIC_ARRAY,
    DIAGNOSTIC_LEVELS,
    FLOAT64_MULTI_ARRAY,
    JOINT_STATE,
    MARKER,
    ODOMETRY,
    TF_MESSAGE,
    WRENCH_STAMPED,
    msgtype_of,
)
from .parsers import (
    JointStateData,
    OdometryData,
    TransformData,
    WrenchData,
    parse_clock,
    parse_diagnostic_array,
    parse_float64_multi_array,
    parse_joint_state,
    parse_odometry,
    parse_tf,
    parse_transform,
    parse_wrench_stamped,
)
from .stamps import INT32_MAX, INT32_MIN, NS_PER_S, stamp_to_ns, time_msg_to_ns, time_msg_to_sec

__all__ = [  # noqa: F822 (TYPESTORE comes from the module __getattr__)
    "TYPESTORE", "JOINT_STATE", "ODOMETRY", "TF_MESSAGE", "CLOCK", "FLOAT64_MULTI_ARRAY",
    "WRENCH_STAMPED", "DIAGNOSTIC_ARRAY", "DIAGNOSTIC_LEVELS", "MARKER", "MARKER_TYPES",
    "marker_msg", "stamp_to_ns", "ns_to_time_msg", "time_msg", "time_msg_to_ns", "time_msg_to_sec",
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


# ------------------------------------------------------------------ message libraries


_LIBRARIES = {"rosbags": lambda: RosbagsLibrary(_typestore), "rosidl": RosidlLibrary}
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
    """``_T[msgtype]``: what makes a ``msgtype`` message in the selected library (its class,
    or for some rosidl types :func:`~vm_dynamics.ros.message_libraries.slot_maker`'s
    function)."""

    def __getitem__(self, msgtype: str) -> Any:
        return (_active or _lib()).maker(msgtype)


def _lib() -> Any:
    global _active
    if _active is None:
        _active = RosbagsLibrary(_typestore)
    return _active


_T = _ActiveTypes()


def __getattr__(name: str) -> Any:
    if name == "TYPESTORE":  # the rosbags typestore, imported on first access
        return _typestore()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ----------------------------------------------------------------------------- time


def ns_to_time_msg(ns: int) -> Any:
    """``builtin_interfaces/Time`` from integer nanoseconds (floor split)."""
    if isinstance(ns, (bool, np.bool_)) or not isinstance(ns, (numbers.Integral, np.integer)):
        raise TypeError(f"nanoseconds must be an integer, got {type(ns).__name__}")
    ns = int(ns)
    sec, nanosec = divmod(ns, NS_PER_S)
    if not INT32_MIN <= sec <= INT32_MAX:
        raise ValueError(
            f"time stamp {ns} ns is outside builtin_interfaces/Time range "
            f"(sec must fit int32, got {sec})")
    return _T["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec)


def time_msg(stamp_s: Any) -> Any:
    """``builtin_interfaces/Time`` from seconds; a Time message of the selected library is
    passed through, one of the other library converted (a builder's field holds this
    library's class)."""
    if msgtype_of(stamp_s) == "builtin_interfaces/msg/Time":
        if type(stamp_s) is _lib()["builtin_interfaces/msg/Time"]:
            return stamp_s
        return ns_to_time_msg(time_msg_to_ns(stamp_s))   # a Time of the other library
    return ns_to_time_msg(stamp_to_ns(stamp_s))


def header_msg(stamp_s: Any, frame_id: str = "") -> Any:
    """``std_msgs/Header``."""
    check_frame_id(frame_id, "frame_id", allow_empty=True)
    return _T["std_msgs/msg/Header"](stamp=time_msg(stamp_s), frame_id=frame_id)


# -------------------------------------------------------------------------- helpers


def _vec3(v: Sequence[float]) -> Any:
    x, y, z = v.tolist() if isinstance(v, np.ndarray) else v
    return _T["geometry_msgs/msg/Vector3"](x=float(x), y=float(y), z=float(z))


# ------------------------------------------------------------------------- builders


#: joint-name lists :func:`joint_state_msg` found valid (non-empty, distinct str): a node
#: sends the same names with every state, and checks them once
_CHECKED_NAMES: set = set()


def joint_state_msg(stamp_s: Any, names: Sequence[str], pos: Any, vel: Any = None,
                    effort: Any = None, frame_id: str = "") -> Any:
    """``sensor_msgs/JointState``.

    ``pos``, ``vel`` and ``effort`` each have one entry per name or are ``None`` (sent as
    an empty array, as JointState.msg allows: an effort command has no positions).
    """
    names = list(names)
    try:
        known = tuple(names) in _CHECKED_NAMES
    except TypeError:                      # an unhashable name: the check below says so
        known = False
    if not known:
        for i, nm in enumerate(names):
            if not isinstance(nm, str) or not nm:
                raise ValueError(f"JointState: joint name at index {i} must be a non-empty "
                                 f"str, got {nm!r}")
        dup = duplicate_names(names)
        if dup:
            raise ValueError(f"JointState: duplicate joint names {dup}")
        if len(_CHECKED_NAMES) < 256:
            _CHECKED_NAMES.add(tuple(names))
    n = len(names)
    p = np.zeros(0) if pos is None else finite_vector(pos, n, "JointState.position")
    v = np.zeros(0) if vel is None else finite_vector(vel, n, "JointState.velocity")
    e = np.zeros(0) if effort is None else finite_vector(effort, n, "JointState.effort")
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
    check_frame_id(frame_id, "Odometry.header.frame_id")
    check_frame_id(child_frame_id, "Odometry.child_frame_id")
    V = finite_vector(V_body6, 6, "Odometry twist V_body6")
    return _T[ODOMETRY](
        header=header_msg(stamp_s, frame_id),
        child_frame_id=child_frame_id,
        pose=_T["geometry_msgs/msg/PoseWithCovariance"](
            pose=pose_msg(g, name="Odometry pose g"),
            covariance=covariance36(pose_covariance, "Odometry pose covariance")),
        twist=_T["geometry_msgs/msg/TwistWithCovariance"](
            twist=_T["geometry_msgs/msg/Twist"](linear=_vec3(V[:3]), angular=_vec3(V[3:])),
            covariance=covariance36(twist_covariance, "Odometry twist covariance")))


def transform_stamped_msg(stamp_s: Any, parent: str, child: str, g: Any) -> Any:
    """``geometry_msgs/TransformStamped``: pose of ``child`` in ``parent`` (4x4)."""
    check_frame_id(parent, "TransformStamped parent frame_id")
    check_frame_id(child, "TransformStamped child_frame_id")
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
    check_frame_id(frame_id, "PoseStamped.header.frame_id")
    return _T["geometry_msgs/msg/PoseStamped"](
        header=header_msg(stamp_s, frame_id),
        pose=pose_msg(g, name="PoseStamped pose g"))


def pose_stamped_from_odometry(msg: Any) -> Any:
    """``geometry_msgs/PoseStamped`` of an Odometry's pose (header shared, same library)."""
    expect_msgtype(msg, ODOMETRY)
    return _T["geometry_msgs/msg/PoseStamped"](header=msg.header, pose=msg.pose.pose)


def path_msg(stamp_s: Any, frame_id: str, poses: Iterable[Any]) -> Any:
    """``nav_msgs/Path`` in ``frame_id`` from PoseStamped messages (of the same library)."""
    check_frame_id(frame_id, "Path.header.frame_id")
    poses = list(poses)
    for k in {0, len(poses) - 1} if poses else ():   # all come from one builder
        if msgtype_of(poses[k]) != "geometry_msgs/msg/PoseStamped":
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
    check_frame_id(frame_id, "WrenchStamped.header.frame_id")
    w = finite_vector(wrench6, 6, "WrenchStamped wrench6")
    return _T[WRENCH_STAMPED](
        header=header_msg(stamp_s, frame_id),
        wrench=_T["geometry_msgs/msg/Wrench"](force=_vec3(w[:3]), torque=_vec3(w[3:])))


#: visualization_msgs/Marker shape types (CUBE, SPHERE, CYLINDER).
MARKER_TYPES = {"box": 1, "sphere": 2, "cylinder": 3}


def marker_msg(stamp_s: Any, frame_id: str, kind: str, scale: Any, g: Any = None,
               rgba: Sequence[float] = (0.6, 0.6, 0.6, 1.0), ns: str = "",
               marker_id: int = 0) -> Any:
    """``visualization_msgs/Marker`` (ADD, no lifetime, locked to ``frame_id``) drawing a
    ``kind`` of :data:`MARKER_TYPES` of ``scale`` (x, y, z: a box's edges, a sphere's or
    cylinder's diameters and the cylinder's length along z) at the pose ``g`` (4x4, default
    identity) in ``frame_id``, coloured ``rgba`` in [0, 1]."""
    check_frame_id(frame_id, "Marker.header.frame_id")
    if kind not in MARKER_TYPES:
        raise ValueError(f"Marker kind {kind!r}: expected one of {', '.join(MARKER_TYPES)}")
    sc = finite_vector(scale, 3, "Marker scale")
    c = finite_vector(rgba, 4, "Marker rgba")
    kw = dict(header=header_msg(stamp_s, frame_id), ns=ns, id=int(marker_id),
              type=MARKER_TYPES[kind], action=0, pose=pose_msg(np.eye(4) if g is None else g),
              scale=_vec3(sc),
              color=_T["std_msgs/msg/ColorRGBA"](r=float(c[0]), g=float(c[1]), b=float(c[2]),
                                                 a=float(c[3])),
              lifetime=_T["builtin_interfaces/msg/Duration"](sec=0, nanosec=0),
              frame_locked=True)
    if message_library() == "rosbags":       # dataclasses: every field given (rosidl: defaults)
        empty = np.zeros(0, dtype=np.uint8)
        kw.update(points=[], colors=[], texture_resource="", uv_coordinates=[], text="",
                  texture=_T["sensor_msgs/msg/CompressedImage"](
                      header=header_msg(0.0, ""), format="", data=empty),
                  mesh_resource="", mesh_use_embedded_materials=False,
                  mesh_file=_T["visualization_msgs/msg/MeshFile"](filename="", data=empty))
    return _T[MARKER](**kw)


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
        level=_lib().octet(diagnostic_level(level)), name=name, message=str(message),
        hardware_id=str(hardware_id), values=kvs)


def diagnostic_array_msg(stamp_s: Any, statuses: Iterable[Any], frame_id: str = "") -> Any:
    """``diagnostic_msgs/DiagnosticArray``.

    ``statuses``: DiagnosticStatus messages, or mappings with keys ``name`` and
    optionally ``level``, ``message``, ``hardware_id``, ``values`` (see
    :func:`diagnostic_status_msg`).
    """
    out = []
    for k, s in enumerate(statuses):
        if msgtype_of(s) == "diagnostic_msgs/msg/DiagnosticStatus":
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


# ----------------------------------------------------------------------------- CDR


def serialize(msg: Any, msgtype: str | None = None) -> bytes:
    """CDR bytes (with the 4-byte encapsulation header) of a typestore message."""
    msgtype = msgtype or getattr(msg, "__msgtype__", None)
    if msgtype is None:
        raise ValueError(f"cannot infer ROS message type of {type(msg).__name__} (serialize "
                         "takes rosbags messages)")
    return bytes(_typestore().serialize_cdr(msg, msgtype))


def check_count_limits(msgtype: str, limits: Mapping[str, Any]) -> dict[str, tuple[int, str]]:
    """Validate the ``limits`` of :func:`check_sequence_counts` for ``msgtype`` (top-level
    sequence fields, integer limits >= 0); returns them as ``{field: (limit, name)}``."""
    return cdr_counts.count_limits(msgtype, limits, _typestore().fielddefs)


def check_sequence_counts(data: bytes | bytearray | memoryview, msgtype: str,
                          limits: Mapping[str, Any]) -> None:
    """Reject serialized ``msgtype`` data whose top-level sequence ``field`` holds more than
    ``limits[field]`` elements (an int, or ``(int, name)`` where ``name`` is quoted in the
    error, e.g. the parameter that sets the limit), **before any object is built**.

    The fields up to the last limited one are walked in the CDR bytes (counts read, contents
    skipped, by :class:`vm_dynamics.ros.cdr_counts.CdrScanner` with the type store's field
    descriptions), so the cost is linear in the bytes up to that field and independent of the
    counts: a 1 MB JointTrajectory of 43 000 empty points is rejected after reading its
    header, ``joint_names`` and one 4-byte count.  Raises :class:`SequenceCountError` (a
    ``ValueError``) naming the field, its count and the limit, ``ValueError`` for data that
    ends early; a field behind a ``wstring`` is not checked (left to the decoder).
    """
    store = _typestore()
    if msgtype not in store.types:
        raise ValueError(f"unknown message type {msgtype!r}")
    cdr_counts.check_counts(bytes(data), msgtype, limits, store.fielddefs)


def deserialize(data: bytes | bytearray | memoryview, msgtype: str,
                max_counts: Mapping[str, Any] | None = None) -> Any:
    """Typestore message from CDR bytes; malformed/short data raises ValueError.  With
    ``max_counts``, :func:`check_sequence_counts` runs first (a :class:`SequenceCountError`
    before any object is built)."""
    store = _typestore()
    if msgtype not in store.types:
        raise ValueError(f"unknown message type {msgtype!r}")
    data = bytes(data)
    check_cdr_header(data, msgtype)
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
