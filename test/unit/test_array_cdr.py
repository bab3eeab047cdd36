"""CDR straight from arrays and back (vm_dynamics.transport.array_cdr): the writers' bytes
are rosbags' serialisation of the message the builders make from the same arrays (the ROS 2
wire format), the readers give what the message path parses from the same bytes, and every
sample off their layout or with a bad value is left to the message path (None)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from vm_dynamics.ros import messages as rm
from vm_dynamics.transport import array_cdr as ac

NAMES = [["j"], ["joint_1", "joint_2", "joint_three"], ["bé", "ünï✓", "x" * 37, "y", "z" * 6]]
FRAMES = ["", "a", "base_link", "odom_frame_12", "ünï✓"]
STAMPS = [0, 1, 999_999_999, 1_000_000_000, 1_234_567_890_123, (2**31 - 1) * 10**9,
          -2**31 * 10**9]


def _rotation(rng):
    q = rng.normal(size=4)
    x, y, z, w = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _pose(rng):
    g = np.eye(4)
    g[:3, :3], g[:3, 3] = _rotation(rng), rng.normal(size=3) * 10
    return g


@pytest.mark.parametrize("names", NAMES)
@pytest.mark.parametrize("fields", [(True, True, True), (False, False, True),
                                    (True, True, False), (True, False, False)])
def test_joint_state_bytes_are_rosbags_and_read_back(names, fields):
    rng = np.random.default_rng(len(names))
    n = len(names)
    for frame in FRAMES:
        writer = ac.JointStateWriter(names, frame, fields)
        reader = ac.JointStateReader(names, frame, tuple({n} if f else {0} for f in fields))
        for ns in STAMPS:
            arrays = [rng.normal(size=n) * 10.0 ** rng.integers(-5, 5) for f in fields if f]
            it = iter(arrays)
            args = [next(it) if f else None for f in fields]
            ref = rm.serialize(rm.joint_state_msg(rm.ns_to_time_msg(ns), names, *args,
                                                  frame_id=frame))
            assert writer.encode(ns, *arrays) == ref
            got = reader.decode(ref)
            required = ("position", "velocity", "effort")[fields.index(True)]
            js = rm.parse_joint_state(rm.deserialize(ref, rm.JOINT_STATE), required=required)
            assert got[0] == js.stamp_ns == ns
            for a, b in zip(got[1:], (js.position, js.velocity, js.effort)):
                assert (a is None and (b is None or b.size == 0)) or np.array_equal(a, b)


def test_odometry_and_wrench_bytes_are_rosbags_and_read_back():
    rng = np.random.default_rng(3)
    for frame, child in [("odom", "base_link"), ("lvlh", "b"), ("ünï", "chaser_base_x")]:
        ow, orr = ac.OdometryWriter(frame, child), ac.OdometryReader(frame, child)
        ww, wr = ac.WrenchStampedWriter(frame), ac.WrenchStampedReader(frame)
        for ns in STAMPS:
            g, V = _pose(rng), rng.normal(size=6)
            ref = rm.serialize(rm.odometry_msg(rm.ns_to_time_msg(ns), g, V, frame, child))
            assert ow.encode(ns, g, V) == ref
            od = rm.parse_odometry(rm.deserialize(ref, rm.ODOMETRY))
            t, g2, V2 = orr.decode(ref)
            assert t == od.stamp_ns == ns
            np.testing.assert_array_equal(g2, od.g)
            np.testing.assert_array_equal(V2, od.twist)
            ref = rm.serialize(rm.wrench_stamped_msg(rm.ns_to_time_msg(ns), V, frame))
            assert ww.encode(ns, V) == ref
            t, w = wr.decode(ref)
            assert t == ns
            np.testing.assert_array_equal(w, V)
            assert ac.ClockWriter.encode(ns) == rm.serialize(rm.clock_msg(rm.ns_to_time_msg(ns)))


def _axis_rotation(axis, angle):
    c, s = math.cos(angle), math.sin(angle)
    i, j = [k for k in range(3) if k != axis]
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


def test_odometry_poses_of_every_quaternion_branch_are_those_of_the_messages():
    """The writer's and reader's scalar paths give the floats of ``odometry_msg`` /
    ``parse_odometry`` in each of Shepperd's four branches (w, x, y or z largest: turns near
    pi about each axis), at the tolerance's edges, and leave a reflection to the builder."""
    ow, orr = ac.OdometryWriter("odom", "base"), ac.OdometryReader("odom", "base")
    rng = np.random.default_rng(11)
    poses = []
    for axis in range(3):
        for angle in (0.0, 1e-9, 0.3, math.pi / 2, math.pi - 1e-3, math.pi, -math.pi + 1e-7):
            g = np.eye(4)
            g[:3, :3] = _axis_rotation(axis, angle) @ _axis_rotation((axis + 1) % 3, 1e-4)
            g[:3, 3] = rng.normal(size=3)
            poses.append(g)
    g = _pose(rng)
    g[0, 0] += 5e-7                                       # within ROTATION_TOL: accepted
    g[3, 3] += 5e-7
    poses.append(g)
    for g in poses:
        V = rng.normal(size=6)
        ref = rm.serialize(rm.odometry_msg(rm.ns_to_time_msg(7), g, V, "odom", "base"))
        assert ow.encode(7, g, V) == ref
        od = rm.parse_odometry(rm.deserialize(ref, rm.ODOMETRY))
        np.testing.assert_array_equal(orr.decode(ref)[1], od.g)
    g = np.diag([1.0, 1.0, -1.0, 1.0])                    # a reflection: the builder's error
    with pytest.raises(ValueError, match="det < 0"):
        ow.encode(0, g, np.zeros(6))


def test_writers_leave_bad_values_to_the_builders():
    w = ac.JointStateWriter(["a", "b"], "", (True, True, False))
    good = np.array([1.0, 2.0])
    assert w.encode(5, good, good) is not None
    for bad in (np.array([1.0, math.nan]), np.array([math.inf, 0.0]), np.array([1.0]),
                np.array([1, 2]), [1.0, 2.0], np.array([1.0, 2.0], dtype=np.float32)):
        assert w.encode(5, good, bad) is None
    assert w.encode(2**31 * 10**9, good, good) is None          # sec beyond int32
    assert ac.WrenchStampedWriter("b").encode(0, np.array([0, 0, 0, 0, 0, math.nan])) is None
    assert ac.OdometryWriter("o", "b").encode(0, np.eye(4), np.zeros(5)) is None
    g = np.eye(4)
    g[0, 0] = 2.0                                                # not a rotation
    with pytest.raises(ValueError, match="Odometry pose g"):
        ac.OdometryWriter("o", "b").encode(0, g, np.zeros(6))
    with pytest.raises(ValueError, match="Odometry pose g"):
        rm.odometry_msg(0.0, g, np.zeros(6), "o", "b")


def test_readers_leave_every_other_sample_to_the_message_path():
    names = ["j1", "j2"]
    reader = ac.JointStateReader(names, "", ({2}, {2}, {0, 2}))
    v = np.array([0.5, -1.0])

    def js(nm=names, frame="", pos=v, vel=v, eff=None, stamp=rm.ns_to_time_msg(7)):
        return rm.serialize(rm.joint_state_msg(stamp, nm, pos, vel, eff, frame_id=frame))
    assert reader.decode(js())[0] == 7
    assert reader.decode(js(eff=v))[3] is not None
    for other in (js(nm=["j2", "j1"]), js(nm=["j1", "j3"]), js(frame="x"), js(vel=None),
                  js(pos=None), js(nm=["j1", "j2", "j3"], pos=np.zeros(3), vel=np.zeros(3))):
        assert reader.decode(other) is None
    ok = bytearray(js())
    assert reader.decode(bytes(ok[:-1])) is None                  # short
    assert reader.decode(bytes(ok) + b"\x00" * 8) is None          # trailing data
    nan = bytearray(ok)
    nan[-8:] = np.array([math.nan]).tobytes()
    assert reader.decode(bytes(nan)) is None
    big_endian = bytearray(ok)
    big_endian[1] = 0
    assert reader.decode(bytes(big_endian)) is None
    bad_ns = bytearray(ok)
    bad_ns[8:12] = (10**9).to_bytes(4, "little")
    assert reader.decode(bytes(bad_ns)) is None
    od = ac.OdometryReader("odom", "base_link")
    g = np.eye(4)
    ref = rm.serialize(rm.odometry_msg(0.0, g, np.zeros(6), "odom", "base_link"))
    assert od.decode(ref) is not None
    assert od.decode(rm.serialize(rm.odometry_msg(0.0, g, np.zeros(6), "odom", "x"))) is None
    off_unit = bytearray(ref)
    at = 4 + 40 + 48        # header, stamp and the two frame ids to 40, then x y z qx qy qz
    off_unit[at:at + 8] = np.array([1.5]).tobytes()
    assert od.decode(bytes(off_unit)) is None
    with pytest.raises(ValueError):                               # the message path says why
        rm.parse_odometry(rm.deserialize(bytes(off_unit), rm.ODOMETRY))
    wr = ac.WrenchStampedReader("base_link")
    assert wr.decode(rm.serialize(rm.wrench_stamped_msg(0.0, np.zeros(6), "odom"))) is None


def test_random_bytes_never_raise():
    rng = random.Random(5)
    readers = [ac.JointStateReader(["a"], "", ({1}, {0, 1}, {0, 1})),
               ac.OdometryReader("o", "b"), ac.WrenchStampedReader("b")]
    base = [rm.serialize(rm.joint_state_msg(0.0, ["a"], [1.0], [2.0])),
            rm.serialize(rm.odometry_msg(0.0, np.eye(4), np.zeros(6), "o", "b")),
            rm.serialize(rm.wrench_stamped_msg(0.0, np.zeros(6), "b"))]
    for reader, data in zip(readers, base):
        for _ in range(300):
            d = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                d[rng.randrange(len(d))] = rng.randrange(256)
            out = reader.decode(bytes(d[:rng.randint(0, len(d))]) if rng.random() < 0.3
                                else bytes(d))
            assert out is None or isinstance(out, tuple)
