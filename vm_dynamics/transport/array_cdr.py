"""CDR of the lockstep messages straight from arrays, and back: no message objects.

In lockstep every period carries a ``JointState`` and an ``Odometry`` from the dynamics node to
the controller and a ``JointState`` effort command and a ``WrenchStamped`` back.  Built as
message objects, checked, encoded, then decoded into message objects and parsed into arrays
again, each costs tens of µs of interpreter time per period on each side
(``bench/lockstep_profile.py --timed``).  The writers here put the arrays of one sample into
its XCDR1 little-endian bytes (encapsulation ``00 01 00 00``) with everything constant --
frame ids, joint names, the counts, the padding, zero covariances -- encoded once at
construction; the readers take the arrays out of a sample whose constant parts are byte for
byte those expected, and return ``None`` for anything else, which then takes the message path
and its checks (and errors).  Both are the ROS 2 wire format: the bytes are those rosbags
writes for the message the builders of :mod:`vm_dynamics.ros.messages` make from the same
arrays (``test/unit/test_array_cdr.py``), so any ROS 2 node reads them.

Checks: a writer returns ``None`` (the caller builds the message, whose builder raises the
precise error) for a non-finite value or a stamp outside ``builtin_interfaces/Time``; the
odometry writer checks the pose rigid as :func:`~vm_dynamics.ros.messages.odometry_msg` does
(same ``ValueError``).  A reader returns ``None`` for a sample that is not exactly of its
layout, holds a non-finite value, a ``nanosec`` out of range or (odometry) a quaternion that
is not a unit one -- the message path then decides, exactly as before.
"""
from __future__ import annotations

import math
import struct
import sys
from typing import Any, Sequence

import numpy as np

from ..core.rotations import (
    QUAT_NORM_TOL,
    ROTATION_TOL,
    pose_from_matrix,
    quaternion_of_entries,
    transform_of_unit_quaternion,
)
from ..ros.fields import all_finite

__all__ = ["JointStateWriter", "OdometryWriter", "WrenchStampedWriter", "ClockWriter",
           "JointStateReader", "OdometryReader", "WrenchStampedReader", "AVAILABLE"]

#: the writers and readers assume a little-endian host (as the fast codecs)
AVAILABLE = sys.byteorder == "little"

_HEADER = b"\x00\x01\x00\x00"          # XCDR1 little-endian, options 0
_F8 = np.dtype("<f8")
_I = struct.Struct("<I")
_TIME = struct.Struct("<iI")
_D6 = struct.Struct("<6d")
_D7 = struct.Struct("<7d")
_NS = 1_000_000_000
_ZERO_COV = bytes(8 * 36)


def _string(s: str, pos: int) -> tuple[bytes, int]:
    """A CDR string at offset ``pos`` (aligned to 4): its bytes and the offset after it."""
    b = s.encode()
    pad = -pos % 4
    out = b"\x00" * pad + _I.pack(len(b) + 1) + b + b"\x00"
    return out, pos + len(out)


def _frames(names: Sequence[str], pos: int, align8: bool = True) -> bytes:
    """Strings from offset ``pos``, then the padding to the doubles that follow them."""
    out = b""
    for s in names:
        b, pos = _string(s, pos)
        out += b
    if align8:
        out += b"\x00" * (-pos % 8)
    return out


def _stamp(stamp_ns: int) -> bytes | None:
    sec, nanosec = divmod(stamp_ns, _NS)
    if not -2**31 <= sec < 2**31:
        return None
    return _TIME.pack(sec, nanosec)


def _pose_values(g: Any) -> tuple | None:
    """Position and unit quaternion ``(x, y, z, qx, qy, qz, qw)`` of the 4x4 float64 array
    ``g`` as Python floats, read with one ``tolist`` (the writer's per-period path); None when
    ``g`` is not plainly a rigid transform within :data:`ROTATION_TOL` (finite, last row
    ``[0, 0, 0, 1]``, rotation block orthonormal with det >= 0): the caller then takes
    :func:`~vm_dynamics.core.rotations.pose_from_matrix`, which says what is wrong.  The same
    checks and Shepperd branches as ``pose_from_matrix``, so the same floats
    (``test/unit/test_array_cdr.py``), without its slices, arrays and conversions."""
    if type(g) is not np.ndarray or g.shape != (4, 4) or g.dtype != _F8:
        return None
    (r00, r01, r02, x), (r10, r11, r12, y), (r20, r21, r22, z), (a, b, c, d) = g.tolist()
    tol = ROTATION_TOL
    if not (math.isfinite(r00 + r01 + r02 + r10 + r11 + r12 + r20 + r21 + r22 + x + y + z
                          + a + b + c + d)
            and max(abs(a), abs(b), abs(c), abs(d - 1.0)) <= tol
            and max(abs(r00 * r00 + r10 * r10 + r20 * r20 - 1.0),
                    abs(r01 * r01 + r11 * r11 + r21 * r21 - 1.0),
                    abs(r02 * r02 + r12 * r12 + r22 * r22 - 1.0),
                    abs(r00 * r01 + r10 * r11 + r20 * r21),
                    abs(r00 * r02 + r10 * r12 + r20 * r22),
                    abs(r01 * r02 + r11 * r12 + r21 * r22)) <= tol
            and r00 * (r11 * r22 - r12 * r21) - r01 * (r10 * r22 - r12 * r20)
            + r02 * (r10 * r21 - r11 * r20) >= 0):
        return None
    return (x, y, z) + quaternion_of_entries(r00, r01, r02, r10, r11, r12, r20, r21, r22)


def _pose_matrix(v: tuple, n: float) -> np.ndarray:
    """The 4x4 transform of the position ``v[:3]`` and the finite quaternion ``v[3:7]`` of
    norm ``n`` (within :data:`QUAT_NORM_TOL` of 1): the floats of
    ``matrix_from_pose(v[:3], np.array(v[3:7]) / n)`` (normalised, then normalised again as
    it does), in Python floats instead of its array checks and conversions."""
    x, y, z, w = v[3] / n, v[4] / n, v[5] / n, v[6] / n
    m = math.sqrt(x * x + y * y + z * z + w * w)
    return transform_of_unit_quaternion(v, x / m, y / m, z / m, w / m)


def _vector(a: Any, n: int) -> bool:
    """``a`` a float64 array of ``n`` finite entries."""
    return type(a) is np.ndarray and a.dtype == _F8 and a.shape == (n,) and all_finite(a)


class JointStateWriter:
    """``sensor_msgs/JointState`` with the given joint ``names`` and ``frame_id``; each of
    ``position``, ``velocity``, ``effort`` is present (one value per name) or not (empty),
    as ``fields`` says."""

    def __init__(self, names: Sequence[str], frame_id: str = "",
                 fields: tuple[bool, bool, bool] = (True, True, True)) -> None:
        self.n = n = len(names)
        self.fields = fields
        pos = 8                                   # after the stamp
        head = _frames([frame_id], pos, align8=False)
        pos += len(head)
        head += b"\x00" * (-pos % 4) + _I.pack(n)
        pos += -pos % 4 + 4
        for s in names:
            b, pos = _string(s, pos)
            head += b
        seps = []
        for present in fields:
            k = n if present else 0
            sep = b"\x00" * (-pos % 4) + _I.pack(k)
            pos += -pos % 4 + 4
            if k:
                sep += b"\x00" * (-pos % 8)
                pos += -pos % 8 + 8 * k
            seps.append(sep)
        seps[0] = head + seps[0]
        self._seps = seps

    def encode(self, stamp_ns: int, *arrays: Any) -> bytes | None:
        """The sample of ``stamp_ns`` and one array per present field (in order), or None."""
        t = _stamp(stamp_ns)
        if t is None:
            return None
        parts = [_HEADER, t]
        values = iter(arrays)
        for sep, present in zip(self._seps, self.fields):
            parts.append(sep)
            if present:
                a = next(values)
                if not _vector(a, self.n):
                    return None
                parts.append(a if a.flags.c_contiguous else a.tobytes())
        return b"".join(parts)


class OdometryWriter:
    """``nav_msgs/Odometry`` of ``child_frame_id`` in ``frame_id``, zero covariances."""

    def __init__(self, frame_id: str, child_frame_id: str) -> None:
        self._head = _frames([frame_id, child_frame_id], 8)

    def encode(self, stamp_ns: int, g: Any, V6: Any) -> bytes | None:
        """The sample of the pose ``g`` (4x4, checked rigid: ``ValueError`` as
        :func:`~vm_dynamics.ros.messages.odometry_msg`) and the body twist ``V6``, or None."""
        t = _stamp(stamp_ns)
        if t is None or not _vector(V6, 6):
            return None
        pose = _pose_values(g)
        if pose is None:                  # not plainly rigid: checked (and the error named)
            p, q = pose_from_matrix(g, name="Odometry pose g")
            pose = (*p.tolist(), *q.tolist())
        return b"".join((_HEADER, t, self._head, _D7.pack(*pose), _ZERO_COV,
                         _D6.pack(*V6.tolist()), _ZERO_COV))


class WrenchStampedWriter:
    """``geometry_msgs/WrenchStamped`` in ``frame_id``."""

    def __init__(self, frame_id: str) -> None:
        self._head = _frames([frame_id], 8)

    def encode(self, stamp_ns: int, wrench6: Any) -> bytes | None:
        t = _stamp(stamp_ns)
        if t is None or not _vector(wrench6, 6):
            return None
        return b"".join((_HEADER, t, self._head, _D6.pack(*wrench6.tolist())))


class ClockWriter:
    """``rosgraph_msgs/Clock``."""

    @staticmethod
    def encode(stamp_ns: int) -> bytes | None:
        t = _stamp(stamp_ns)
        return None if t is None else _HEADER + t


def _bytes(data: Any) -> bytes:
    return data if type(data) is bytes else bytes(data)


def _time(data: bytes) -> int | None:
    sec, nanosec = _TIME.unpack_from(data, 4)
    return sec * _NS + nanosec if nanosec < _NS else None


class JointStateReader:
    """``(stamp_ns, position, velocity, effort)`` of a ``sensor_msgs/JointState`` sample with
    exactly the joint ``names`` (in this order) and ``frame_id``; each field's count must be
    one of ``counts[i]`` (e.g. ``{n}`` or ``{0, n}``), an empty one is returned as None.
    The arrays are read-only views of the sample."""

    def __init__(self, names: Sequence[str], frame_id: str = "",
                 counts: tuple = ((), (), ())) -> None:
        w = JointStateWriter(names, frame_id, (False, False, False))
        head = w._seps[0]
        self._head = head[:-4]                 # frame id and names, not the first count
        self._after = 8 + len(self._head)      # offset of the first count (data start 0)
        self._counts = tuple(frozenset(c) for c in counts)

    def decode(self, data: Any) -> tuple | None:
        data = _bytes(data)
        if not (data.startswith(_HEADER) and data.startswith(self._head, 12)):
            return None
        try:
            stamp = _time(data)
            pos, out = self._after, [stamp]
            for allowed in self._counts:
                pos += -pos % 4
                k = _I.unpack_from(data, 4 + pos)[0]
                pos += 4
                if k not in allowed:
                    return None
                if k:
                    pos += -pos % 8
                    a = np.frombuffer(data, _F8, k, 4 + pos)
                    if not all_finite(a):
                        return None
                    pos += 8 * k
                    out.append(a)
                else:
                    out.append(None)
        except (struct.error, ValueError):       # short sample
            return None
        if stamp is None or not 0 <= len(data) - 4 - pos <= 3:
            return None
        return tuple(out)


class OdometryReader:
    """``(stamp_ns, g 4x4, V6 body twist)`` of a ``nav_msgs/Odometry`` sample of
    ``child_frame_id`` in ``frame_id``, built as :func:`vm_dynamics.ros.messages.parse_odometry`
    builds them (unit quaternion within ``QUAT_NORM_TOL``, normalised); covariances not read."""

    def __init__(self, frame_id: str, child_frame_id: str) -> None:
        self._head = _frames([frame_id, child_frame_id], 8)
        self._pose = 12 + len(self._head)
        self._size = self._pose + 56 + 288 + 48 + 288

    def decode(self, data: Any) -> tuple | None:
        data = _bytes(data)
        if not (len(data) == self._size and data.startswith(_HEADER)
                and data.startswith(self._head, 12)):
            return None
        stamp = _time(data)
        v = _D7.unpack_from(data, self._pose) + _D6.unpack_from(data, self._pose + 344)
        if stamp is None or not math.isfinite(sum(v)):
            return None
        x, y, z, w = v[3:7]
        n = math.sqrt(x * x + y * y + z * z + w * w)
        if not abs(n - 1.0) <= QUAT_NORM_TOL:
            return None
        return stamp, _pose_matrix(v, n), np.array(v[7:])


class WrenchStampedReader:
    """``(stamp_ns, wrench6)`` of a ``geometry_msgs/WrenchStamped`` sample in ``frame_id``."""

    def __init__(self, frame_id: str) -> None:
        self._head = _frames([frame_id], 8)
        self._at = 12 + len(self._head)

    def decode(self, data: Any) -> tuple | None:
        data = _bytes(data)
        if not (len(data) == self._at + 48 and data.startswith(_HEADER)
                and data.startswith(self._head, 12)):
            return None
        stamp = _time(data)
        w = np.array(_D6.unpack_from(data, self._at))
        if stamp is None or not all_finite(w):
            return None
        return stamp, w
