"""Hand-written CDR encoders of the messages a lockstep period publishes: ``JointState``,
``Odometry``, ``TFMessage``, ``WrenchStamped`` and ``Clock``, and decoders of those it receives
(the same but ``TFMessage``).

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
rosbags' (``test/unit/test_fast_cdr.py`` compares them on random and edge-case messages and
on streams).  The runs of constant fields (frame ids, joint names) are encoded once per
value and offset and then copied (:class:`_Runs`), and arrays are joined without a copy.

The decoders (:func:`fast_decoder`) read plain little-endian CDR into the same rosbags message
objects as rosbags' decoder (numeric arrays as read-only views of the sample, as rosbags makes
them), in one pass without looking up type definitions; frame ids and joint names are
reused from the previous sample when its bytes of them are the same (:meth:`_Reader.run`).
Sequence count limits (``max_counts``) are compared with each count before its elements are
read.  Whatever is not a well-formed
sample within its limits -- a short or over-long sample, a missing string terminator, bad
UTF-8, a count over its limit, big-endian or XCDR2 encapsulation -- gives ``None``: the
generic decoder then decides, and raises its precise error.
"""
from __future__ import annotations

import struct
import sys
from typing import Any, Callable

import numpy as np

from .types import message_typestore

__all__ = ["fast_encoder", "fast_decoder", "FAST_TYPES", "DECODED_TYPES"]

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


def _time_bytes(t: Any, Time: type) -> bytes:
    """The 8 bytes of a ``builtin_interfaces/Time`` ``t`` of the class ``Time`` (its fields
    Python ints within int32/uint32, as rosbags requires)."""
    _is(t, Time)
    sec, nanosec = t.sec, t.nanosec
    if type(sec) is not int or type(nanosec) is not int:
        raise _Bad
    try:
        return _TIME.pack(sec, nanosec)
    except struct.error:              # out of int32/uint32: rosbags refuses it too
        raise _Bad from None


def _time_writer(C: dict) -> Callable[[_Writer, Any], None]:
    """The encoder of a ``builtin_interfaces/Time`` of the rosbags classes ``C``."""
    Time = C["builtin_interfaces/msg/Time"]

    def time(w: _Writer, t: Any) -> None:
        data = _time_bytes(t, Time)
        w.align(4)
        w.raw(data)
    return time


class _Runs:
    """Encoded runs of constant fields (frame ids, joint names), by their values and where
    they start: each is written once by a :class:`_Writer`, then copied into every sample
    that has the same values at the same offset (a few dozen distinct runs at most)."""

    __slots__ = ("table",)

    def __init__(self) -> None:
        self.table: dict = {}

    def get(self, key: tuple, pos: int, write: Callable[[_Writer], None]) -> bytes:
        """The bytes ``write`` puts after offset ``pos`` (up to where it leaves the
        writer): from the table if ``key`` was written there before."""
        try:
            hit = self.table.get(key)
        except TypeError:            # an unhashable value: not a str
            raise _Bad from None
        if hit is None:
            w = _Writer()
            w.pos = pos
            write(w)
            if len(self.table) >= 64:
                self.table.clear()
            hit = self.table[key] = b"".join(w.parts)
        return hit


def _strs(*values: Any) -> None:
    """Every value a ``str`` (a run's key matches equal values of other types too)."""
    for v in values:
        if type(v) is not str:
            raise _Bad


def _floats(values: tuple) -> tuple:
    for v in values:
        if type(v) is not float:
            raise _Bad
    return values


def _array(a: Any, size: int | None = None) -> int:
    """The length of a 1-D C-contiguous native ``float64`` array (of ``size`` if given)."""
    if type(a) is not np.ndarray or a.dtype != _F8 or a.ndim != 1 \
            or not a.flags.c_contiguous or (size is not None and a.shape[0] != size):
        raise _Bad
    return a.shape[0]


def _frames(w: _Writer, *names: str) -> None:
    """Frame ids, then the padding to the doubles that follow them."""
    for s in names:
        w.string(s)
    w.align(8)


def _joint_state_encoder(runs: _Runs, stamp: Callable[[Any], bytes]
                         ) -> Callable[[Any], list]:
    """The ``JointState`` encoder of :func:`_make`: frame id and names as one run."""

    def joint_state(m: Any) -> list:
        h, names = m.header, m.name
        parts = [stamp(h)]
        if type(names) not in (list, tuple):
            raise _Bad
        _strs(h.frame_id, *names)

        def write(w: _Writer) -> None:
            w.string(h.frame_id)
            w.count(len(names))
            for s in names:
                w.string(s)
        parts.append(runs.get(("js", h.frame_id, *names), 8, write))
        pos = 8 + len(parts[1])
        for a in (m.position, m.velocity, m.effort):
            n = _array(a)
            pad = -pos % 4
            parts.append(_ZEROS[:pad] + _I.pack(n))
            pos += pad + 4
            if n:
                pad = -pos % 8
                parts.append(_ZEROS[:pad])
                parts.append(a)
                pos += pad + 8 * n
        return parts

    return joint_state


def _tf_encoder(C: dict, runs: _Runs, stamp: Callable[[Any], bytes]
                ) -> Callable[[Any], list]:
    """The ``TFMessage`` encoder of :func:`_make`: each transform's frame ids as a run, by
    where it starts modulo 8."""
    Vector3, Quaternion = C["geometry_msgs/msg/Vector3"], C["geometry_msgs/msg/Quaternion"]

    def tf_message(m: Any) -> list:
        ts = m.transforms
        if type(ts) not in (list, tuple):
            raise _Bad
        parts, pos = [_I.pack(len(ts))], 4
        TransformStamped, Transform = (C["geometry_msgs/msg/TransformStamped"],
                                       C["geometry_msgs/msg/Transform"])
        for t in ts:
            _is(t, TransformStamped)
            h, child, tr = t.header, t.child_frame_id, t.transform
            parts.append(stamp(h))
            _strs(h.frame_id, child)
            run = runs.get(("tf", pos % 8, h.frame_id, child), pos + 8,
                           lambda w: _frames(w, h.frame_id, child))
            _is(tr, Transform)
            p, q = tr.translation, tr.rotation
            _is(p, Vector3)
            _is(q, Quaternion)
            parts += (run, _D7.pack(*_floats((p.x, p.y, p.z, q.x, q.y, q.z, q.w))))
            pos += 8 + len(run) + 56
        return parts

    return tf_message


def _make(C: dict) -> dict[str, Callable[[Any], list]]:
    """The encoders (each returns the parts of a sample's data), bound to the rosbags classes
    ``C`` of the active typestore.  Fields are written at their offsets from the data start:
    a header's stamp at 0 (8 bytes), then its frame id, so every run of constant fields
    starts at an offset known in advance."""
    time = _time_writer(C)
    Header, Vector3 = C["std_msgs/msg/Header"], C["geometry_msgs/msg/Vector3"]
    Point, Quaternion = C["geometry_msgs/msg/Point"], C["geometry_msgs/msg/Quaternion"]
    Pose, Twist = C["geometry_msgs/msg/Pose"], C["geometry_msgs/msg/Twist"]
    runs = _Runs()

    Time = C["builtin_interfaces/msg/Time"]

    def stamp(h: Any) -> bytes:
        """A header's stamp, the first field of the data (offset 0: no padding)."""
        _is(h, Header)
        return _time_bytes(h.stamp, Time)

    def pose7(p: Any) -> tuple:
        _is(p, Pose)
        pos, q = p.position, p.orientation
        _is(pos, Point)
        _is(q, Quaternion)
        return _floats((pos.x, pos.y, pos.z, q.x, q.y, q.z, q.w))

    def vectors6(a: Any, b: Any) -> tuple:
        _is(a, Vector3)
        _is(b, Vector3)
        return _floats((a.x, a.y, a.z, b.x, b.y, b.z))

    def odometry(m: Any) -> list:
        h, child, pc, tc = m.header, m.child_frame_id, m.pose, m.twist
        parts = [stamp(h)]
        _strs(h.frame_id, child)
        parts.append(runs.get(("od", h.frame_id, child), 8,
                              lambda w: _frames(w, h.frame_id, child)))
        _is(pc, C["geometry_msgs/msg/PoseWithCovariance"])
        _is(tc, C["geometry_msgs/msg/TwistWithCovariance"])
        tw = tc.twist
        _is(tw, Twist)
        _array(pc.covariance, 36)
        _array(tc.covariance, 36)
        parts += (_D7.pack(*pose7(pc.pose)), pc.covariance,
                  _D6.pack(*vectors6(tw.linear, tw.angular)), tc.covariance)
        return parts

    def wrench_stamped(m: Any) -> list:
        h, wr = m.header, m.wrench
        parts = [stamp(h)]
        _strs(h.frame_id)
        parts.append(runs.get(("ws", h.frame_id), 8, lambda w: _frames(w, h.frame_id)))
        _is(wr, C["geometry_msgs/msg/Wrench"])
        parts.append(_D6.pack(*vectors6(wr.force, wr.torque)))
        return parts

    def clock(m: Any) -> list:
        w = _Writer()
        time(w, m.clock)
        return w.parts

    return {"sensor_msgs/msg/JointState": _joint_state_encoder(runs, stamp),
            "nav_msgs/msg/Odometry": odometry,
            "tf2_msgs/msg/TFMessage": _tf_encoder(C, runs, stamp),
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
        try:
            parts = body(msg)
        except (_Bad, UnicodeEncodeError, AttributeError):
            return None
        return _HEADER + b"".join(parts)
    return encode


# ---------------------------------------------------------------------------- decoding


class _Reader:
    """Position in one sample's data (after the encapsulation header), reading as rosbags."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.end = data, 4, len(data)

    def align(self, n: int) -> None:
        self.pos += -(self.pos - 4) % n

    def take(self, st: struct.Struct, align: int) -> tuple:
        self.align(align)
        pos = self.pos
        if pos + st.size > self.end:
            raise _Bad
        self.pos = pos + st.size
        return st.unpack_from(self.data, pos)

    def count(self, limit: int | None = None) -> int:
        self.align(4)
        pos = self.pos
        if pos + 4 > self.end:
            raise _Bad
        n = _I.unpack_from(self.data, pos)[0]
        self.pos = pos + 4
        if limit is not None and n > limit:
            raise _Bad
        return n

    def string(self) -> str:
        size = self.count()
        pos = self.pos
        end = pos + size
        if size < 1 or end > self.end or self.data[end - 1] != 0:
            raise _Bad
        self.pos = end
        return self.data[pos:end - 1].decode()

    def f64_array(self, n: int) -> np.ndarray:
        if n:
            self.align(8)
        pos = self.pos
        if pos + 8 * n > self.end:
            raise _Bad
        self.pos = pos + 8 * n
        return np.frombuffer(self.data, _F8, n, pos)

    def run(self, known: list, read: Callable[[], tuple]) -> tuple:
        """The values of the fields ``read`` parses here: those of the previous sample when
        its bytes of them are the same at the same offset (frame ids, joint names: constant
        in a stream), else parsed, and remembered in ``known``."""
        pos, last = self.pos, known[0]       # one (offset, bytes, values): read atomically
        if last is not None and last[0] == pos and self.data.startswith(last[1], pos):
            self.pos = pos + len(last[1])
            return last[2]
        values = read()
        known[0] = (pos, self.data[pos:self.pos], values)
        return values


def _decoders(C: dict) -> dict:
    Time, Header = C["builtin_interfaces/msg/Time"], C["std_msgs/msg/Header"]
    Vector3, Point = C["geometry_msgs/msg/Vector3"], C["geometry_msgs/msg/Point"]
    Quaternion, Pose = C["geometry_msgs/msg/Quaternion"], C["geometry_msgs/msg/Pose"]
    Twist = C["geometry_msgs/msg/Twist"]

    def time(r: _Reader) -> Any:
        sec, nanosec = r.take(_TIME, 4)
        return Time(sec=sec, nanosec=nanosec)

    known: list = [None]      # the constant run of the previous sample (_Reader.run)

    def joint_state(r: _Reader, limits: dict) -> Any:
        stamp = time(r)
        frame, names = r.run(known, lambda: (r.string(), tuple(
            r.string() for _ in range(r.count(limits.get("name"))))))
        arrays = [r.f64_array(r.count(limits.get(f)))
                  for f in ("position", "velocity", "effort")]
        return C["sensor_msgs/msg/JointState"](
            header=Header(stamp=stamp, frame_id=frame), name=list(names),
            position=arrays[0], velocity=arrays[1], effort=arrays[2])

    def odometry(r: _Reader, limits: dict) -> Any:
        stamp = time(r)
        frame, child = r.run(known, lambda: (r.string(), r.string()))
        h = Header(stamp=stamp, frame_id=frame)
        px, py, pz, qx, qy, qz, qw = r.take(_D7, 8)
        pose = Pose(position=Point(x=px, y=py, z=pz),
                    orientation=Quaternion(x=qx, y=qy, z=qz, w=qw))
        pcov = r.f64_array(36)
        vx, vy, vz, wx, wy, wz = r.take(_D6, 8)
        twist = Twist(linear=Vector3(x=vx, y=vy, z=vz), angular=Vector3(x=wx, y=wy, z=wz))
        tcov = r.f64_array(36)
        return C["nav_msgs/msg/Odometry"](
            header=h, child_frame_id=child,
            pose=C["geometry_msgs/msg/PoseWithCovariance"](pose=pose, covariance=pcov),
            twist=C["geometry_msgs/msg/TwistWithCovariance"](twist=twist, covariance=tcov))

    def wrench_stamped(r: _Reader, limits: dict) -> Any:
        stamp = time(r)
        h = Header(stamp=stamp, frame_id=r.run(known, lambda: (r.string(),))[0])
        fx, fy, fz, nx, ny, nz = r.take(_D6, 8)
        return C["geometry_msgs/msg/WrenchStamped"](
            header=h, wrench=C["geometry_msgs/msg/Wrench"](
                force=Vector3(x=fx, y=fy, z=fz), torque=Vector3(x=nx, y=ny, z=nz)))

    def clock(r: _Reader, limits: dict) -> Any:
        return C["rosgraph_msgs/msg/Clock"](clock=time(r))

    return {"sensor_msgs/msg/JointState": joint_state, "nav_msgs/msg/Odometry": odometry,
            "geometry_msgs/msg/WrenchStamped": wrench_stamped,
            "rosgraph_msgs/msg/Clock": clock}


#: the message types with a hand-written decoder
DECODED_TYPES = ("sensor_msgs/msg/JointState", "nav_msgs/msg/Odometry",
                 "geometry_msgs/msg/WrenchStamped", "rosgraph_msgs/msg/Clock")
#: the sequence fields whose count limits the decoders check (the others: generic path)
_LIMITED = {"sensor_msgs/msg/JointState": ("name", "position", "velocity", "effort")}


def fast_decoder(msgtype: str, max_counts: dict | None = None
                 ) -> Callable[[bytes], Any] | None:
    """``decode(data) -> message | None`` for a type of :data:`DECODED_TYPES` (None for other
    types, for count limits on fields it does not check, and on a big-endian host): the
    rosbags message of a well-formed little-endian CDR sample within ``max_counts``
    (``{field: limit}`` or ``{field: (limit, name)}``), else None (see the module
    docstring)."""
    if msgtype not in DECODED_TYPES or sys.byteorder != "little":
        return None
    limits = {f: (v[0] if isinstance(v, tuple) else v) for f, v in (max_counts or {}).items()}
    if set(limits) - set(_LIMITED.get(msgtype, ())):
        return None
    body = _decoders(_classes())[msgtype]

    def decode(data: bytes) -> Any:
        if type(data) is not bytes:
            data = bytes(data)
        if data[:4] != _HEADER:
            return None
        r = _Reader(data)
        try:
            msg = body(r, limits)
        except (_Bad, UnicodeDecodeError):
            return None
        return msg if r.end - r.pos <= 3 else None     # rosbags: at most 3 bytes of padding
    return decode
