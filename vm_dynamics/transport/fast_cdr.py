"""Hand-written CDR encoders of the messages a lockstep period publishes: ``JointState``,
``Odometry``, ``TFMessage``, ``WrenchStamped`` and ``Clock``.

:func:`~vm_dynamics.transport.exact_cdr.exact_serializer` first proves a message is in exact
wire form with a generic, field-by-field check and then lets rosbags write it; for these five
types, sent every period by the dynamics and controller nodes in lockstep, the two together
cost several times the encoding itself (rosbags looks up the definition of each nested type
for every message, then sizes and writes it in two passes).  The encoders here do both in one
pass over the fields: each field is checked with the rules of the exact check -- ``float`` for
``float64`` (``type(x) is float``, stricter: a ``numpy.float64`` goes the generic way), ``int``
in range for integers, ``str`` for strings, 1-D C-contiguous native ``float64`` arrays of the
right length, nested messages of their exact class -- and written as XCDR1 little-endian
(encapsulation ``00 01 00 00``, fields aligned to their size relative to the data start, no
trailing padding).  Anything else returns ``None`` and takes the generic path, which decides
(and, for a message that is not exact, the strict path names the bad field).  The bytes are
rosbags' (``test/process/test_transport.py`` compares them on random and edge-case messages).
"""
from __future__ import annotations

import struct
import sys
from typing import Any, Callable

import numpy as np

from .types import message_typestore

__all__ = ["fast_encoder", "FAST_TYPES"]

_HEADER = b"\x00\x01\x00\x00"
_F8 = np.dtype("<f8")
_I = struct.Struct("<I")
_TIME = struct.Struct("<iI")
_D3 = struct.Struct("<3d")
_D4 = struct.Struct("<4d")
_D6 = struct.Struct("<6d")
_D7 = struct.Struct("<7d")
_ZEROS = b"\x00" * 8


class _Bad(Exception):
    """The message is not in exact wire form (or not encodable): take the generic path."""


class _Writer:
    """Parts of one sample and the position after them (relative to the data start)."""

    __slots__ = ("parts", "pos")

    def __init__(self) -> None:
        self.parts: list = []
        self.pos = 0

    def align(self, n: int) -> None:
        pad = -self.pos % n
        if pad:
            self.parts.append(_ZEROS[:pad])
            self.pos += pad

    def raw(self, b: bytes) -> None:
        self.parts.append(b)
        self.pos += len(b)

    def string(self, s: Any) -> None:
        if type(s) is not str:
            raise _Bad
        b = s.encode()
        self.align(4)
        self.raw(_I.pack(len(b) + 1) + b + b"\x00")

    def count(self, n: int) -> None:
        self.align(4)
        self.raw(_I.pack(n))

    def f64(self, st: struct.Struct, *values: Any) -> None:
        for v in values:
            if type(v) is not float:
                raise _Bad
        self.align(8)
        self.raw(st.pack(*values))

    def f64_array(self, a: Any, size: int | None) -> None:
        """A ``float64[size]`` (fixed) or ``float64[]`` (``size`` None)."""
        if type(a) is not np.ndarray or a.dtype != _F8 or a.ndim != 1 \
                or not a.flags.c_contiguous:
            raise _Bad
        n = a.shape[0]
        if size is None:
            self.count(n)
        elif n != size:
            raise _Bad
        if n:
            self.align(8)
            self.raw(a.tobytes())


def _classes() -> dict:
    types = message_typestore().types
    return {name: types[name] for name in (
        "builtin_interfaces/msg/Time", "std_msgs/msg/Header", "geometry_msgs/msg/Vector3",
        "geometry_msgs/msg/Point", "geometry_msgs/msg/Quaternion", "geometry_msgs/msg/Pose",
        "geometry_msgs/msg/PoseWithCovariance", "geometry_msgs/msg/Twist",
        "geometry_msgs/msg/TwistWithCovariance", "geometry_msgs/msg/Transform",
        "geometry_msgs/msg/TransformStamped", "geometry_msgs/msg/Wrench",
        "geometry_msgs/msg/WrenchStamped", "sensor_msgs/msg/JointState",
        "nav_msgs/msg/Odometry", "tf2_msgs/msg/TFMessage", "rosgraph_msgs/msg/Clock")}


def _is(msg: Any, cls: type) -> None:
    if type(msg) is not cls:
        raise _Bad


def _make(C: dict) -> dict[str, Callable[[_Writer, Any], None]]:
    """The encoders, bound to the rosbags classes ``C`` of the active typestore."""
    Time, Header = C["builtin_interfaces/msg/Time"], C["std_msgs/msg/Header"]
    Vector3, Point = C["geometry_msgs/msg/Vector3"], C["geometry_msgs/msg/Point"]
    Quaternion, Pose = C["geometry_msgs/msg/Quaternion"], C["geometry_msgs/msg/Pose"]

    def time(w: _Writer, t: Any) -> None:
        _is(t, Time)
        sec, nanosec = t.sec, t.nanosec
        if type(sec) is not int or type(nanosec) is not int:
            raise _Bad
        w.align(4)
        try:
            w.raw(_TIME.pack(sec, nanosec))
        except struct.error:              # out of int32/uint32: rosbags refuses it too
            raise _Bad from None

    def header(w: _Writer, h: Any) -> None:
        _is(h, Header)
        time(w, h.stamp)
        w.string(h.frame_id)

    def vec3(w: _Writer, v: Any, cls: type = Vector3) -> None:
        _is(v, cls)
        w.f64(_D3, v.x, v.y, v.z)

    def pose(w: _Writer, p: Any) -> None:
        _is(p, Pose)
        pos, q = p.position, p.orientation
        _is(pos, Point)
        _is(q, Quaternion)
        w.f64(_D7, pos.x, pos.y, pos.z, q.x, q.y, q.z, q.w)

    def joint_state(w: _Writer, m: Any) -> None:
        header(w, m.header)
        names = m.name
        if type(names) not in (list, tuple):
            raise _Bad
        w.count(len(names))
        for s in names:
            w.string(s)
        w.f64_array(m.position, None)
        w.f64_array(m.velocity, None)
        w.f64_array(m.effort, None)

    def odometry(w: _Writer, m: Any) -> None:
        header(w, m.header)
        w.string(m.child_frame_id)
        pc, tc = m.pose, m.twist
        _is(pc, C["geometry_msgs/msg/PoseWithCovariance"])
        pose(w, pc.pose)
        w.f64_array(pc.covariance, 36)
        _is(tc, C["geometry_msgs/msg/TwistWithCovariance"])
        tw = tc.twist
        _is(tw, C["geometry_msgs/msg/Twist"])
        lin, ang = tw.linear, tw.angular
        _is(lin, Vector3)
        _is(ang, Vector3)
        w.f64(_D6, lin.x, lin.y, lin.z, ang.x, ang.y, ang.z)
        w.f64_array(tc.covariance, 36)

    def tf_message(w: _Writer, m: Any) -> None:
        ts = m.transforms
        if type(ts) not in (list, tuple):
            raise _Bad
        w.count(len(ts))
        TransformStamped, Transform = (C["geometry_msgs/msg/TransformStamped"],
                                       C["geometry_msgs/msg/Transform"])
        for t in ts:
            _is(t, TransformStamped)
            header(w, t.header)
            w.string(t.child_frame_id)
            tr = t.transform
            _is(tr, Transform)
            p, q = tr.translation, tr.rotation
            _is(p, Vector3)
            _is(q, Quaternion)
            w.f64(_D7, p.x, p.y, p.z, q.x, q.y, q.z, q.w)

    def wrench_stamped(w: _Writer, m: Any) -> None:
        header(w, m.header)
        wr = m.wrench
        _is(wr, C["geometry_msgs/msg/Wrench"])
        f, n = wr.force, wr.torque
        _is(f, Vector3)
        _is(n, Vector3)
        w.f64(_D6, f.x, f.y, f.z, n.x, n.y, n.z)

    def clock(w: _Writer, m: Any) -> None:
        time(w, m.clock)

    return {"sensor_msgs/msg/JointState": joint_state, "nav_msgs/msg/Odometry": odometry,
            "tf2_msgs/msg/TFMessage": tf_message,
            "geometry_msgs/msg/WrenchStamped": wrench_stamped,
            "rosgraph_msgs/msg/Clock": clock}


#: the message types with a hand-written encoder
FAST_TYPES = ("sensor_msgs/msg/JointState", "nav_msgs/msg/Odometry", "tf2_msgs/msg/TFMessage",
              "geometry_msgs/msg/WrenchStamped", "rosgraph_msgs/msg/Clock")


def fast_encoder(msgtype: str) -> Callable[[Any], bytes | None] | None:
    """``encode(msg) -> bytes | None`` for a type of :data:`FAST_TYPES` (None for other types,
    and on a big-endian host): the XCDR1 sample with its encapsulation header, or None if
    ``msg`` is not of the type's class in exact wire form."""
    if msgtype not in FAST_TYPES or sys.byteorder != "little":
        return None
    classes = _classes()
    body, cls = _make(classes)[msgtype], classes[msgtype]

    def encode(msg: Any) -> bytes | None:
        if type(msg) is not cls:
            return None
        w = _Writer()
        try:
            body(w, msg)
        except (_Bad, UnicodeEncodeError, AttributeError):
            return None
        return _HEADER + b"".join(w.parts)
    return encode
