"""CDR of the rosidl messages a lockstep period sends and receives under rclpy, in Python:
``JointState``, ``Odometry``, ``WrenchStamped`` and ``Clock``.

Why: rclpy turns a received sample into its Python message (``deserialize_message``, and
``take_message`` alike) by calling the class's constructor -- which builds every nested
default -- and then building and setting every nested message again, each through its
Python property; an ``Odometry`` (11 nested messages, two 36-element covariance arrays)
takes ~90 µs of CPU on this machine, a ``JointState`` ~22 µs.  Publishing converts the
message back field by field (``Odometry`` ~50 µs before the DDS write).  Here the CDR is read
and written in one pass with :mod:`struct`, and received messages are made with the class's
``__new__`` and their slots set directly (~5 µs): the same rosidl objects, with the field
types rclpy gives (``array.array('d')`` for ``sequence<double>``, a float64 ``numpy`` array for
``double[36]``, ``int`` and ``str``).  ``test/ros/test_rclpy_cdr_real.py`` checks both
directions against rclpy's own ``serialize_message``/``deserialize_message``: the same bytes,
equal messages.

Wire form (what ``rmw_cyclonedds_cpp`` writes): the encapsulation ``00 01 00 00`` (CDR, little
endian), then the fields, each aligned to its size relative to the data start; strings as a
``uint32`` length with the terminating NUL, then UTF-8 bytes and the NUL; sequences as a
``uint32`` count, then the elements.

Anything else gives ``None`` -- a message field of another type (the encoder), a sample that
is short, over-long, big-endian, or has a bad string (the decoder) -- and the caller takes
rclpy's own path, which decides and says why.
"""
from __future__ import annotations

import array
import struct
import sys
from typing import Any, Callable

import numpy as np

__all__ = ["cdr_decoder", "cdr_encoder", "CDR_TYPES"]

#: the rosidl types (``pkg/msg/Type``) with a decoder and an encoder here
CDR_TYPES = ("sensor_msgs/msg/JointState", "nav_msgs/msg/Odometry",
             "geometry_msgs/msg/WrenchStamped", "rosgraph_msgs/msg/Clock")

_HEAD = b"\x00\x01\x00\x00"
_U32 = struct.Struct("<I")
_TIME = struct.Struct("<iI")
_D3 = struct.Struct("<3d")
_D4 = struct.Struct("<4d")
_F8 = np.dtype("<f8")
_LITTLE = sys.byteorder == "little"


class _Malformed(Exception):
    """Not a sample of the expected form: rclpy's own path decides."""


def _classes(names: tuple) -> dict:
    import importlib
    out = {}
    for name in names:
        pkg, sub, cls = name.split("/")
        out[cls] = getattr(importlib.import_module(f"{pkg}.{sub}"), cls)
    return out


# ------------------------------------------------------------------ decoding


class _Reader:
    """Position in one sample (relative to the data start, after the 4-byte header)."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes) -> None:
        if data[:4] != _HEAD:
            raise _Malformed("not little-endian CDR")
        self.data, self.pos, self.end = data, 0, len(data) - 4

    def take(self, st: struct.Struct, align: int) -> tuple:
        pos = (self.pos + align - 1) & -align
        if pos + st.size > self.end:
            raise _Malformed("short sample")
        self.pos = pos + st.size
        return st.unpack_from(self.data, 4 + pos)

    def string(self) -> str:
        (n,) = self.take(_U32, 4)
        pos = self.pos
        if n < 1 or pos + n > self.end or self.data[4 + pos + n - 1] != 0:
            raise _Malformed("bad string")
        self.pos = pos + n
        return self.data[4 + pos:4 + pos + n - 1].decode()

    def doubles(self) -> array.array:
        (n,) = self.take(_U32, 4)
        out = array.array("d")
        if n:
            pos = (self.pos + 7) & -8
            if pos + 8 * n > self.end:
                raise _Malformed("short sample")
            out.frombytes(self.data[4 + pos:4 + pos + 8 * n])
            self.pos = pos + 8 * n
        return out

    def fixed_doubles(self, n: int) -> np.ndarray:
        pos = (self.pos + 7) & -8
        if pos + 8 * n > self.end:
            raise _Malformed("short sample")
        self.pos = pos + 8 * n
        return np.frombuffer(self.data, _F8, n, 4 + pos).copy()

    def done(self) -> None:
        if self.end - self.pos > 3:               # at most the padding to 4 bytes
            raise _Malformed("trailing bytes")


def _maker(cls: type) -> Callable[..., Any]:
    """``make(**slots)``: an instance of the rosidl ``cls`` made without its constructor, its
    slots (``_<field>``, and ``_check_fields`` off where the class has it) set directly."""
    checks = "_check_fields" in cls.__slots__
    new = cls.__new__

    def make(**slots: Any) -> Any:
        msg = new(cls)
        for key, value in slots.items():
            setattr(msg, key, value)
        if checks:
            msg._check_fields = False
        return msg
    return make


def _decoders() -> dict:
    C = _classes(("std_msgs/msg/Header", "builtin_interfaces/msg/Time",
                  "geometry_msgs/msg/Point", "geometry_msgs/msg/Quaternion",
                  "geometry_msgs/msg/Pose", "geometry_msgs/msg/PoseWithCovariance",
                  "geometry_msgs/msg/Vector3", "geometry_msgs/msg/Twist",
                  "geometry_msgs/msg/TwistWithCovariance", "geometry_msgs/msg/Wrench",
                  *CDR_TYPES))
    M = {name: _maker(cls) for name, cls in C.items()}
    time_, header_, point, quat, vec = (M["Time"], M["Header"], M["Point"], M["Quaternion"],
                                        M["Vector3"])

    def header(r: _Reader) -> Any:
        sec, nanosec = r.take(_TIME, 4)
        return header_(_stamp=time_(_sec=sec, _nanosec=nanosec), _frame_id=r.string())

    def vector(r: _Reader) -> Any:
        x, y, z = r.take(_D3, 8)
        return vec(_x=x, _y=y, _z=z)

    #: the CDR of the previous sample's name sequence (from its count on) and its names
    last_names: list = [b"", ()]

    def joint_state(r: _Reader) -> Any:
        h = header(r)
        start = (r.pos + 3) & -4
        cdr, known = last_names
        if cdr and r.data.startswith(cdr, 4 + start):
            r.pos = start + len(cdr)          # the same names as the previous sample
            names = list(known)
        else:
            (n,) = r.take(_U32, 4)
            if 4 * n > r.end:
                raise _Malformed("bad count")
            names = [r.string() for _ in range(n)]
            last_names[:] = [r.data[4 + start:4 + r.pos], tuple(names)]
        return M["JointState"](_header=h, _name=names, _position=r.doubles(),
                               _velocity=r.doubles(), _effort=r.doubles())

    def odometry(r: _Reader) -> Any:
        h, child = header(r), r.string()
        x, y, z = r.take(_D3, 8)
        qx, qy, qz, qw = r.take(_D4, 8)
        pose = M["PoseWithCovariance"](
            _pose=M["Pose"](_position=point(_x=x, _y=y, _z=z),
                            _orientation=quat(_x=qx, _y=qy, _z=qz, _w=qw)),
            _covariance=r.fixed_doubles(36))
        linear, angular = vector(r), vector(r)
        twist = M["TwistWithCovariance"](_twist=M["Twist"](_linear=linear, _angular=angular),
                                         _covariance=r.fixed_doubles(36))
        return M["Odometry"](_header=h, _child_frame_id=child, _pose=pose, _twist=twist)

    def wrench_stamped(r: _Reader) -> Any:
        h = header(r)
        force, torque = vector(r), vector(r)
        return M["WrenchStamped"](_header=h, _wrench=M["Wrench"](_force=force, _torque=torque))

    def clock(r: _Reader) -> Any:
        sec, nanosec = r.take(_TIME, 4)
        return M["Clock"](_clock=time_(_sec=sec, _nanosec=nanosec))

    return dict(zip(CDR_TYPES, (joint_state, odometry, wrench_stamped, clock)))


def cdr_decoder(msgtype: str) -> Callable[[bytes], Any] | None:
    """``decode(cdr) -> rosidl message or None`` for a type of :data:`CDR_TYPES` (None for
    the others, or on a big-endian machine)."""
    if msgtype not in CDR_TYPES or not _LITTLE:
        return None
    body = _decoders()[msgtype]

    def decode(data: bytes) -> Any:
        try:
            r = _Reader(data)
            msg = body(r)
            r.done()
            return msg
        except (_Malformed, struct.error, UnicodeDecodeError, ValueError, IndexError):
            return None
    return decode


# ------------------------------------------------------------------ encoding


class _Writer:
    """Parts of one sample and the position after them (relative to the data start)."""

    __slots__ = ("parts", "pos")

    def __init__(self) -> None:
        self.parts: list = [_HEAD]
        self.pos = 0

    def put(self, st: struct.Struct, align: int, *values: Any) -> None:
        pad = -self.pos & (align - 1)
        if pad:
            self.parts.append(bytes(pad))
        self.parts.append(st.pack(*values))
        self.pos += pad + st.size

    def raw(self, data: bytes, align: int) -> None:
        pad = -self.pos & (align - 1)
        if pad:
            self.parts.append(bytes(pad))
        self.parts.append(data)
        self.pos += pad + len(data)

    def string(self, s: Any) -> None:
        if type(s) is not str:
            raise _Malformed("not a str")
        b = s.encode()
        if b"\x00" in b:
            raise _Malformed("NUL in a string")
        self.put(_U32, 4, len(b) + 1)
        self.parts.append(b + b"\x00")
        self.pos += len(b) + 1

    def doubles(self, a: Any) -> None:
        if type(a) is not array.array or a.typecode != "d":
            raise _Malformed("not array('d')")
        self.put(_U32, 4, len(a))
        if len(a):
            self.raw(a.tobytes(), 8)

    def fixed_doubles(self, a: Any, n: int) -> None:
        if type(a) is not np.ndarray or a.dtype != np.float64 or a.shape != (n,):
            raise _Malformed("not a float64 array")
        self.raw(a.astype(_F8, copy=False).tobytes(), 8)

    def finish(self) -> bytes:
        pad = -self.pos & 3                   # the sample ends on a multiple of 4 bytes
        if pad:
            self.parts.append(bytes(pad))
        return b"".join(self.parts)


def _time(w: _Writer, t: Any) -> None:
    w.put(_TIME, 4, t.sec, t.nanosec)


def _header(w: _Writer, h: Any) -> None:
    _time(w, h.stamp)
    w.string(h.frame_id)


def _vector(w: _Writer, v: Any) -> None:
    w.put(_D3, 8, v.x, v.y, v.z)


def _joint_state_encoder() -> Callable[[_Writer, Any], None]:
    """The JointState body; the CDR of the name sequence is kept and copied while the names
    stay the same (it starts 4-aligned and holds only 4-aligned fields, so its bytes do not
    depend on where it starts)."""
    last: list = [None, b""]          # the previous names (a tuple of str), their CDR

    def joint_state(w: _Writer, m: Any) -> None:
        _header(w, m.header)
        names = tuple(m.name)
        known, cdr = last
        if names == known and all(type(s) is str for s in names):
            w.raw(cdr, 4)
        else:
            pad = -w.pos & 3
            if pad:
                w.parts.append(bytes(pad))
                w.pos += pad
            first = len(w.parts)
            w.put(_U32, 4, len(names))
            for s in names:
                w.string(s)
            last[:] = [names, b"".join(w.parts[first:])]
        w.doubles(m.position)
        w.doubles(m.velocity)
        w.doubles(m.effort)
    return joint_state


def _odometry(w: _Writer, m: Any) -> None:
    _header(w, m.header)
    w.string(m.child_frame_id)
    pose = m.pose
    p, q = pose.pose.position, pose.pose.orientation
    w.put(_D3, 8, p.x, p.y, p.z)
    w.put(_D4, 8, q.x, q.y, q.z, q.w)
    w.fixed_doubles(pose.covariance, 36)
    twist = m.twist
    _vector(w, twist.twist.linear)
    _vector(w, twist.twist.angular)
    w.fixed_doubles(twist.covariance, 36)


def _wrench_stamped(w: _Writer, m: Any) -> None:
    _header(w, m.header)
    _vector(w, m.wrench.force)
    _vector(w, m.wrench.torque)


def _clock(w: _Writer, m: Any) -> None:
    _time(w, m.clock)


#: the body of each type's encoder (a function, or a maker of one with a cache of its own)
_ENCODERS = dict(zip(CDR_TYPES, (_joint_state_encoder, _odometry, _wrench_stamped, _clock)))
_MAKERS = (_joint_state_encoder,)


def cdr_encoder(msgtype: str) -> Callable[[Any], bytes | None] | None:
    """``encode(msg) -> CDR bytes or None`` for a type of :data:`CDR_TYPES` (None for the
    others, or on a big-endian machine).  Numbers are checked by :mod:`struct` (a ``float``
    or ``int`` in range), strings must be ``str``, sequences of doubles ``array('d')``,
    covariances float64 arrays of 36: else None."""
    body = _ENCODERS.get(msgtype) if _LITTLE else None
    if body is None:
        return None
    if body in _MAKERS:
        body = body()

    def encode(msg: Any) -> bytes | None:
        w = _Writer()
        try:
            body(w, msg)
        except (_Malformed, struct.error, AttributeError, TypeError, UnicodeEncodeError):
            return None
        return w.finish()
    return encode
