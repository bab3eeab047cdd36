"""Parsers of received ROS 2 messages (duck-typed: messages of either library) into numpy
arrays and named tuples, with every field checked; conventions as in
:mod:`vm_dynamics.ros.messages`.  A malformed message raises ``ValueError`` naming the message
type and field."""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

import numpy as np

from ..core.rotations import QUAT_NORM_TOL, check_unit_quaternion, matrix_from_pose
from .fields import all_finite, diagnostic_level, duplicate_names, expect_msgtype, finite_field
from .msgtypes import (
    CLOCK,
    DIAGNOSTIC_ARRAY,
    FLOAT64_MULTI_ARRAY,
    JOINT_STATE,
    ODOMETRY,
    TF_MESSAGE,
    WRENCH_STAMPED,
)
from .stamps import time_msg_to_ns

__all__ = ["JointStateData", "OdometryData", "TransformData", "WrenchData",
           "parse_joint_state", "parse_odometry", "parse_transform", "parse_tf", "parse_clock",
           "parse_float64_multi_array", "parse_wrench_stamped", "parse_diagnostic_array"]


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








def parse_joint_state(msg: Any, names: Sequence[str] | None = None, *,
                      required: str = "position", extra_names: bool = True) -> JointStateData:
    """Check a JointState and return its arrays, reordered to ``names`` if given.

    The ``required`` field (``position`` for a state, ``effort`` for an effort command) must
    match ``name`` in length; the other fields may be empty (returned as ``None``) or must
    match too.  With ``names``, every requested joint must be present; names the message has
    beyond them are ignored, or rejected with ``extra_names=False`` (a command naming an
    unknown joint is a typo, not extra information).
    """
    expect_msgtype(msg, JOINT_STATE)
    msg_names = list(msg.name)
    n = len(msg_names)
    dup = duplicate_names(msg_names)
    if dup:
        raise ValueError(f"JointState: duplicate joint names {dup}")
    fields = {}
    for field in ("position", "velocity", "effort"):
        a = np.asarray(getattr(msg, field), dtype=np.float64).reshape(-1)
        if a.size == 0 and field != required and n > 0:
            fields[field] = None
            continue
        if a.size != n:
            raise ValueError(f"JointState: {field} has {a.size} entries but name has {n}")
        fields[field] = finite_field(a, f"JointState.{field}", msg_names)
    if names is not None and msg_names == list(names):
        names = None                 # already in the requested order: nothing to reorder
    if names is not None:
        names = list(names)
        index = {nm: i for i, nm in enumerate(msg_names)}
        missing = [nm for nm in names if nm not in index]
        if missing:
            has = (f"{msg_names}" if n <= 20 else
                   f"{n} names: {msg_names[:10]} … {msg_names[-3:]}")
            raise ValueError(f"JointState: missing joint names {missing} (message has {has})")
        unknown = [] if extra_names else [nm for nm in msg_names if nm not in set(names)]
        if unknown:
            raise ValueError(f"JointState: unknown joint names {unknown[:10]} (the joints are "
                             f"{names if len(names) <= 20 else names[:10] + ['…']})")
        order = np.array([index[nm] for nm in names], dtype=int)
        fields = {k: (None if v is None else v[order]) for k, v in fields.items()}
        msg_names = names
    return JointStateData(time_msg_to_ns(msg.header.stamp), msg_names, fields["position"],
                          fields["velocity"], fields["effort"])


def _quat_field(q: Any, what: str) -> np.ndarray:
    return check_unit_quaternion(finite_field([q.x, q.y, q.z, q.w], what), what)


def _odometry_values(pose: Any, twist: Any):
    """``(position list, unit quaternion array, twist array)`` of an Odometry's pose and
    twist if all 13 numbers are finite floats and the quaternion's norm is within
    :data:`QUAT_NORM_TOL` of 1 (the quaternion normalised as :func:`check_unit_quaternion`
    does), else None (the caller's per-field checks then name the culprit)."""
    pos, ori, lin, ang = pose.position, pose.orientation, twist.linear, twist.angular
    try:
        v = [float(pos.x), float(pos.y), float(pos.z), float(ori.x), float(ori.y),
             float(ori.z), float(ori.w), float(lin.x), float(lin.y), float(lin.z),
             float(ang.x), float(ang.y), float(ang.z)]
    except (TypeError, ValueError, AttributeError):
        return None
    if not math.isfinite(sum(v)):          # NaN/Inf, or an overflowing sum: checked below
        return None
    x, y, z, w = v[3:7]
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if not abs(n - 1.0) <= QUAT_NORM_TOL:
        return None
    return v[:3], np.array(v[3:7]) / n, np.array(v[7:])


def _transform_to_matrix(translation: Any, rotation: Any, what: str) -> np.ndarray:
    p = finite_field([translation.x, translation.y, translation.z], f"{what} translation")
    q = _quat_field(rotation, f"{what} rotation")
    return matrix_from_pose(p, q)


def parse_odometry(msg: Any) -> OdometryData:
    """Odometry -> (stamp_ns, frame_id, child_frame_id, g 4x4, body twist [v; omega]).

    The 13 numbers are read once as Python floats; when they are all finite and the
    quaternion is a unit one (every message a node sends), the pose and twist are built from
    them directly; otherwise the field-by-field checks below name what is wrong."""
    expect_msgtype(msg, ODOMETRY)
    pose = msg.pose.pose
    fast = _odometry_values(pose, msg.twist.twist)
    if fast is not None:
        p, q, V = fast
        return OdometryData(time_msg_to_ns(msg.header.stamp), msg.header.frame_id,
                            msg.child_frame_id, matrix_from_pose(p, q), V)
    g = _transform_to_matrix(pose.position, pose.orientation, "Odometry.pose")
    tw = msg.twist.twist
    V = finite_field([tw.linear.x, tw.linear.y, tw.linear.z,
                       tw.angular.x, tw.angular.y, tw.angular.z], "Odometry.twist")
    return OdometryData(time_msg_to_ns(msg.header.stamp), msg.header.frame_id,
                        msg.child_frame_id, g, V)


def parse_transform(msg: Any) -> TransformData:
    """TransformStamped -> (stamp_ns, parent, child, 4x4)."""
    expect_msgtype(msg, "geometry_msgs/msg/TransformStamped")
    what = f"TransformStamped {msg.header.frame_id!r}->{msg.child_frame_id!r}"
    if not msg.header.frame_id or not msg.child_frame_id:
        raise ValueError(f"{what}: empty frame id")
    g = _transform_to_matrix(msg.transform.translation, msg.transform.rotation, what)
    return TransformData(time_msg_to_ns(msg.header.stamp), msg.header.frame_id,
                         msg.child_frame_id, g)


def parse_tf(msg: Any) -> list[TransformData]:
    """TFMessage -> list of :class:`TransformData`."""
    expect_msgtype(msg, TF_MESSAGE)
    return [parse_transform(t) for t in msg.transforms]


def parse_clock(msg: Any) -> int:
    """Clock -> integer nanoseconds."""
    expect_msgtype(msg, CLOCK)
    return time_msg_to_ns(msg.clock)


def parse_float64_multi_array(msg: Any, expected_len: int | None = None,
                              reshape: bool = True) -> np.ndarray:
    """Float64MultiArray -> array.

    Honors ``layout.data_offset``; with a consistent row-major multi-dimensional
    layout and ``reshape=True`` the result has shape ``[d.size for d in dim]``.
    ``expected_len`` checks the number of (flat) elements.
    """
    expect_msgtype(msg, FLOAT64_MULTI_ARRAY)
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
    data = finite_field(data, "Float64MultiArray.data")
    if reshape and shape is not None and len(shape) > 1:
        data = data.reshape(shape)
    return data


def parse_wrench_stamped(msg: Any, *, force_limit: float | None = None,
                         torque_limit: float | None = None) -> WrenchData:
    """WrenchStamped -> (stamp_ns, frame_id, [force; torque]).

    A non-finite component is named (``WrenchStamped.wrench.force.y contains NaN/Inf``); with
    ``force_limit`` (N) or ``torque_limit`` (N m) a force or torque of larger magnitude is
    rejected too (a sensor's range: beyond it a sample is a fault, not a load)."""
    expect_msgtype(msg, WRENCH_STAMPED)
    f, t = msg.wrench.force, msg.wrench.torque
    w = np.array([f.x, f.y, f.z, t.x, t.y, t.z], dtype=np.float64)
    bad = () if all_finite(w) else np.flatnonzero(~np.isfinite(w))
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"WrenchStamped.wrench.{_WRENCH_FIELDS[i]} contains NaN/Inf "
                         f"({float(w[i])!r})")
    for part, v, limit, unit in (("force", w[:3], force_limit, "N"),
                                 ("torque", w[3:], torque_limit, "N m")):
        if limit is None:
            continue
        size = float(np.linalg.norm(v))
        if size > limit:
            raise ValueError(f"WrenchStamped.wrench.{part}: magnitude {size:.6g} {unit} "
                             f"exceeds the limit {limit:g} {unit}")
    return WrenchData(time_msg_to_ns(msg.header.stamp), msg.header.frame_id, w)


_WRENCH_FIELDS = ("force.x", "force.y", "force.z", "torque.x", "torque.y", "torque.z")


def parse_diagnostic_array(msg: Any) -> list[dict[str, Any]]:
    """DiagnosticArray -> list of dicts (name, level, message, hardware_id, values)."""
    expect_msgtype(msg, DIAGNOSTIC_ARRAY)
    out = []
    for s in msg.status:
        level = s.level[0] if isinstance(s.level, (bytes, bytearray)) else int(s.level)
        out.append({"name": s.name, "level": diagnostic_level(level), "message": s.message,
                    "hardware_id": s.hardware_id,
                    "values": {kv.key: kv.value for kv in s.values}})
    return out
