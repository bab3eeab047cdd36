"""Tests for vm_dynamics.ros.messages: stamps, rotations, message builders/parsers, CDR."""

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from vm_dynamics.ros import messages as rm


def rot(axis, angle):
    """Rodrigues formula (independent of the module under test)."""
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def quat_axis_angle(axis, angle):
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    q = np.r_[a * math.sin(angle / 2), math.cos(angle / 2)]
    return q if q[3] >= 0 else -q


def same_rotation_quat(q1, q2, atol):
    return min(np.abs(q1 - q2).max(), np.abs(q1 + q2).max()) < atol


def homog(R, p):
    g = np.eye(4)
    g[:3, :3] = R
    g[:3, 3] = p
    return g


# ------------------------------------------------------------------------------ time


@pytest.mark.parametrize("x, ns", [
    (0.0, 0), (0.1, 100_000_000), (1.001, 1_001_000_000),  # int(1.001*1e9) == 1000999999
    (12.345678901, 12_345_678_901), (1e9 + 0.5, 1_000_000_000_500_000_000),
    (-0.5, -500_000_000), (-1e-9, -1), (7, 7_000_000_000),
    (Fraction(1, 3), 333_333_333), (Decimal("1.000000001"), 1_000_000_001),
    (np.float64(2.5), 2_500_000_000), (np.int64(3), 3_000_000_000),
])
def test_stamp_to_ns_exact(x, ns):
    assert rm.stamp_to_ns(x) == ns


def test_time_msg_split_and_round_trip():
    t = rm.time_msg(12.345678901)
    assert (t.sec, t.nanosec) == (12, 345_678_901)
    t = rm.time_msg(-0.25)  # floor split like rclcpp: -1 s + 0.75 s
    assert (t.sec, t.nanosec) == (-1, 750_000_000)
    t = rm.time_msg(-1e-9)
    assert (t.sec, t.nanosec) == (-1, 999_999_999)
    rng = np.random.default_rng(0)
    for x in rng.uniform(-1e6, 1e6, 200):
        ns = rm.stamp_to_ns(x)
        msg = rm.time_msg(x)
        assert 0 <= msg.nanosec < 10**9
        assert rm.time_msg_to_ns(msg) == ns
        # exact ns is the nearest integer to the exact binary value of x
        assert abs(Fraction(ns) - Fraction(x) * 10**9) <= Fraction(1, 2)
        assert rm.time_msg_to_sec(msg) == pytest.approx(x, abs=1e-9)
    # Time messages pass through unchanged
    assert rm.time_msg(msg) is msg


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), "abc", 2.0**31,
                                 -(2.0**31) - 1])
def test_stamp_errors(bad):
    with pytest.raises(ValueError):
        rm.time_msg(bad)


def test_stamp_rejects_bool_and_bad_time_msg():
    with pytest.raises(TypeError):
        rm.stamp_to_ns(True)
    with pytest.raises(TypeError):
        rm.ns_to_time_msg(1.5)
    bad = rm.TYPESTORE.types["builtin_interfaces/msg/Time"](sec=0, nanosec=10**9)
    with pytest.raises(ValueError, match="nanosec"):
        rm.time_msg_to_ns(bad)


def test_clock_cdr_bytes():
    data = rm.serialize(rm.clock_msg(1.000000002))
    assert data == bytes.fromhex("00010000" "01000000" "02000000")
    assert rm.parse_clock(rm.deserialize(data, rm.CLOCK)) == 1_000_000_002


# ------------------------------------------------------------------------- rotations


def test_quat_identity_and_quarter_turns():
    np.testing.assert_array_equal(rm.quat_from_matrix(np.eye(3)), [0, 0, 0, 1])
    s = math.sqrt(0.5)
    np.testing.assert_allclose(rm.quat_from_matrix(rot([0, 0, 1], np.pi / 2)), [0, 0, s, s],
                               atol=1e-15)
    np.testing.assert_allclose(rm.quat_from_matrix(rot([1, 0, 0], np.pi / 2)), [s, 0, 0, s],
                               atol=1e-15)
    np.testing.assert_allclose(rm.matrix_from_quat([0, 0, 0, 1]), np.eye(3), atol=0)


@pytest.mark.parametrize("axis", [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1], [0.3, -0.8, 0.2],
                                  [1, 1e-9, 0]])
@pytest.mark.parametrize("angle", [np.pi, np.pi - 1e-9, np.pi - 1e-6, np.pi - 1e-3, 1e-10,
                                   0.7, 2.5])
def test_quat_round_trip_including_near_pi(axis, angle):
    R = rot(axis, angle)
    q = rm.quat_from_matrix(R)
    assert abs(np.linalg.norm(q) - 1) < 1e-15
    assert q[3] >= 0
    assert same_rotation_quat(q, quat_axis_angle(axis, angle), 5e-15)
    np.testing.assert_allclose(rm.matrix_from_quat(q), R, atol=2e-15)


def test_quat_random_against_scipy_vectorised():
    from scipy.spatial.transform import Rotation
    rots = Rotation.random(500, random_state=1)
    R = rots.as_matrix()
    q = rm.quat_from_matrix(R)  # (500, 4)
    ref = rots.as_quat()  # scipy: scalar-last (x, y, z, w) too
    ref = np.where(ref[:, 3:] < 0, -ref, ref)
    np.testing.assert_allclose(q, ref, atol=1e-14)
    np.testing.assert_allclose(rm.matrix_from_quat(q), R, atol=1e-14)
    phi = rm.rotvec_from_matrix(R)
    np.testing.assert_allclose(phi, rots.as_rotvec(), atol=1e-12)


def test_single_pose_scalar_paths_agree_with_the_batched_forms():
    """pose_from_matrix / matrix_from_pose / quat_from_matrix of one pose run in scalar Python
    arithmetic (the nodes' per-message path); the stacked calls run the vectorised numpy
    forms.  Both must give the same poses (and scipy's)."""
    from scipy.spatial.transform import Rotation
    rng = np.random.default_rng(3)
    rots = Rotation.random(300, random_state=3)
    g = np.tile(np.eye(4), (300, 1, 1))
    g[:, :3, :3] = rots.as_matrix()
    g[:, :3, 3] = rng.normal(scale=5.0, size=(300, 3))
    p_all, q_all = rm.pose_from_matrix(g)
    g_all = rm.matrix_from_pose(p_all, q_all)
    for k in range(300):
        p, q = rm.pose_from_matrix(g[k])
        np.testing.assert_array_equal(p, p_all[k])
        np.testing.assert_allclose(q, q_all[k], rtol=0, atol=4e-16)
        np.testing.assert_allclose(rm.quat_from_matrix(g[k, :3, :3]), q, rtol=0, atol=0)
        np.testing.assert_allclose(rm.matrix_from_pose(p, q), g_all[k], rtol=0, atol=4e-16)
    ref = rots.as_quat()
    np.testing.assert_allclose(q_all, np.where(ref[:, 3:] < 0, -ref, ref), atol=1e-14)
    np.testing.assert_allclose(g_all, g, atol=1e-14)


def test_rotvec_near_pi_and_zero():
    for angle in [np.pi - 1e-12, np.pi - 1e-7, 1e-12, 0.0]:
        phi = rm.rotvec_from_matrix(rot([0.2, 0.5, -1], angle))
        assert np.linalg.norm(phi) == pytest.approx(angle, abs=1e-12)
        np.testing.assert_allclose(rm.matrix_from_quat(quat_axis_angle(phi, np.linalg.norm(phi))
                                                       if angle else [0, 0, 0, 1]),
                                   rot([0.2, 0.5, -1], angle), atol=1e-12)


def test_matrix_from_quat_normalises_and_rejects_zero():
    q = quat_axis_angle([1, 2, 3], 0.4)
    np.testing.assert_allclose(rm.matrix_from_quat(3.7 * q), rot([1, 2, 3], 0.4), atol=1e-15)
    with pytest.raises(ValueError, match="zero norm"):
        rm.matrix_from_quat([0, 0, 0, 0])
    with pytest.raises(ValueError, match="NaN"):
        rm.matrix_from_quat([0, 0, np.nan, 1])
    with pytest.raises(ValueError, match="shape"):
        rm.matrix_from_quat([0, 0, 1])


def test_quat_from_matrix_rejects_bad_matrices():
    with pytest.raises(ValueError, match="orthonormal"):
        rm.quat_from_matrix(np.diag([1.0, 1.0, 1.1]))
    with pytest.raises(ValueError, match="det"):
        rm.quat_from_matrix(np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(ValueError, match="NaN"):
        rm.quat_from_matrix(np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="shape"):
        rm.quat_from_matrix(np.eye(4))


# -------------------------------------------------------------------------- messages


def test_joint_state_build_serialise_parse():
    msg = rm.joint_state_msg(3.5, ["j1", "j2", "j3"], [0.1, -0.2, 0.3], [1, 2, 3],
                             [10, 20, 30])
    assert msg.__msgtype__ == "sensor_msgs/msg/JointState"
    back = rm.deserialize(rm.serialize(msg), rm.JOINT_STATE)
    d = rm.parse_joint_state(back)
    assert d.stamp_ns == 3_500_000_000
    assert d.names == ["j1", "j2", "j3"]
    np.testing.assert_array_equal(d.position, [0.1, -0.2, 0.3])
    np.testing.assert_array_equal(d.effort, [10, 20, 30])
    r = rm.parse_joint_state(back, names=["j3", "j1"])
    np.testing.assert_array_equal(r.position, [0.3, 0.1])
    np.testing.assert_array_equal(r.velocity, [3, 1])
    # velocity/effort may be omitted (empty arrays on the wire)
    d2 = rm.parse_joint_state(rm.joint_state_msg(0, ["a"], [1.0]))
    assert d2.velocity is None and d2.effort is None


@pytest.mark.parametrize("kwargs, match", [
    (dict(names=["a", "b"], pos=[1.0]), "position must have length 2"),
    (dict(names=["a", "b"], pos=[1.0, 2.0], vel=[1.0]), "velocity must have length 2"),
    (dict(names=["a", "b"], pos=[1.0, np.nan]), "NaN/Inf at index 1"),
    (dict(names=["a", "b"], pos=[1.0, 2.0], effort=[np.inf, 0]), "effort contains NaN/Inf"),
    (dict(names=["a", "a"], pos=[1.0, 2.0]), "duplicate joint names"),
    (dict(names=["a", ""], pos=[1.0, 2.0]), "non-empty str"),
])
def test_joint_state_builder_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rm.joint_state_msg(0.0, **kwargs)


def test_joint_state_parser_errors():
    JS = rm.TYPESTORE.types[rm.JOINT_STATE]
    hdr = rm.header_msg(1.0)
    bad_len = JS(header=hdr, name=["a", "b"], position=np.array([1.0]),
                 velocity=np.zeros(0), effort=np.zeros(0))
    with pytest.raises(ValueError, match="position has 1 entries but name has 2"):
        rm.parse_joint_state(bad_len)
    nan = JS(header=hdr, name=["a", "b"], position=np.array([1.0, 2.0]),
             velocity=np.array([0.0, np.nan]), effort=np.zeros(0))
    with pytest.raises(ValueError, match="velocity contains NaN/Inf at index 1 \\(joint 'b'\\)"):
        rm.parse_joint_state(nan)
    ok = rm.joint_state_msg(0, ["a", "b"], [1, 2])
    with pytest.raises(ValueError, match=r"missing joint names \['c'\]"):
        rm.parse_joint_state(ok, names=["a", "c"])
    with pytest.raises(ValueError, match="expected a sensor_msgs/msg/JointState"):
        rm.parse_joint_state(rm.clock_msg(0))


def test_joint_state_cdr_matches_cyclonedds():
    from cyclonedds import idl as cdds
    from cyclonedds.idl import types
    @dataclass
    class Time(cdds.IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
        sec: types.int32
        nanosec: types.uint32

    @dataclass
    class Header(cdds.IdlStruct, typename="std_msgs::msg::dds_::Header_"):
        stamp: Time
        frame_id: str

    @dataclass
    class JointState(cdds.IdlStruct, typename="sensor_msgs::msg::dds_::JointState_"):
        header: Header
        name: types.sequence[str]
        position: types.sequence[types.float64]
        velocity: types.sequence[types.float64]
        effort: types.sequence[types.float64]

    ref = JointState(Header(Time(12, 345678901), "base"), ["a", "bb", "ccc"],
                     [1.0, 2.0, 3.0], [0.5, 0.25, 0.125], [])
    ours = rm.serialize(rm.joint_state_msg(12.345678901, ["a", "bb", "ccc"], [1, 2, 3],
                                           [0.5, 0.25, 0.125], None, frame_id="base"))
    assert ours[:4] == b"\x00\x01\x00\x00"
    assert ours == ref.serialize()
    assert JointState.deserialize(ours) == ref


def _mcap_ros2_decode(msgtype, data):
    """Decode CDR with mcap_ros2 (independent decoder) using the ros2msg schema text."""
    from mcap_ros2 import _dynamic as dyn
    decoders = dyn.generate_dynamic(msgtype, rm.msgdef(msgtype))
    return decoders[msgtype](data)


def test_odometry_conventions_and_independent_decode():
    R = rot([0, 0, 1], np.pi / 2)
    g = homog(R, [1.0, 2.0, 3.0])
    V = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    msg = rm.odometry_msg(2.25, g, V)
    dec = _mcap_ros2_decode(rm.ODOMETRY, rm.serialize(msg))
    assert dec.header.frame_id == "odom" and dec.child_frame_id == "base_link"
    assert (dec.header.stamp.sec, dec.header.stamp.nanosec) == (2, 250_000_000)
    o = dec.pose.pose.orientation
    s = math.sqrt(0.5)
    assert (o.x, o.y) == (0.0, 0.0)
    assert o.z == pytest.approx(s, abs=1e-15) and o.w == pytest.approx(s, abs=1e-15)
    assert (dec.pose.pose.position.x, dec.pose.pose.position.y) == (1.0, 2.0)
    tw = dec.twist.twist
    assert [tw.linear.x, tw.linear.y, tw.linear.z] == [0.1, 0.2, 0.3]
    assert [tw.angular.x, tw.angular.y, tw.angular.z] == [0.4, 0.5, 0.6]
    assert len(dec.pose.covariance) == 36
    d = rm.parse_odometry(rm.deserialize(rm.serialize(msg), rm.ODOMETRY))
    np.testing.assert_allclose(d.g, g, atol=1e-15)
    np.testing.assert_array_equal(d.twist, V)


def test_odometry_errors():
    with pytest.raises(ValueError, match="length 6"):
        rm.odometry_msg(0, np.eye(4), np.zeros(5))
    with pytest.raises(ValueError, match="NaN"):
        rm.odometry_msg(0, np.eye(4), [0, 0, 0, np.nan, 0, 0])
    bad = np.eye(4)
    bad[3, 0] = 1.0
    with pytest.raises(ValueError, match=r"last row"):
        rm.odometry_msg(0, bad, np.zeros(6))
    with pytest.raises(ValueError, match="orthonormal"):
        rm.odometry_msg(0, np.diag([2.0, 1, 1, 1]), np.zeros(6))
    msg = rm.odometry_msg(0, np.eye(4), np.zeros(6))
    msg.pose.pose.orientation.w = 0.5
    with pytest.raises(ValueError, match="not a unit quaternion"):
        rm.parse_odometry(msg)
    msg.pose.pose.orientation.w = 1.0
    msg.pose.pose.position.y = float("inf")
    with pytest.raises(ValueError, match="NaN/Inf"):
        rm.parse_odometry(msg)


def test_tf_message():
    g1 = homog(rot([1, 0, 0], np.pi), [0, 0, 1])
    g2 = homog(np.eye(3), [0.5, 0, 0])
    msg = rm.tf_msg(1.5, [("odom", "base_link", g1), ("base_link", "arm_base", g2)])
    dec = _mcap_ros2_decode(rm.TF_MESSAGE, rm.serialize(msg))
    assert [t.child_frame_id for t in dec.transforms] == ["base_link", "arm_base"]
    assert [t.header.frame_id for t in dec.transforms] == ["odom", "base_link"]
    r = dec.transforms[0].transform.rotation
    assert abs(r.x) == 1.0 and r.w == pytest.approx(0.0, abs=1e-16)
    parsed = rm.parse_tf(rm.deserialize(rm.serialize(msg), rm.TF_MESSAGE))
    np.testing.assert_allclose(parsed[0].g, g1, atol=1e-15)
    assert parsed[1].stamp_ns == 1_500_000_000
    with pytest.raises(ValueError, match="both"):
        rm.tf_msg(0, [("a", "a", np.eye(4))])
    with pytest.raises(ValueError, match=r"4x4"):
        rm.tf_msg(0, [("a", "b", np.eye(3))])
    with pytest.raises(ValueError, match="must not be empty"):
        rm.tf_msg(0, [("", "b", np.eye(4))])


def test_float64_multi_array():
    m1 = rm.float64_multi_array_msg([1.0, 2.0, 3.0])
    assert m1.layout.dim == []
    dec = _mcap_ros2_decode(rm.FLOAT64_MULTI_ARRAY, rm.serialize(m1))
    assert list(dec.data) == [1.0, 2.0, 3.0]
    a = np.arange(6.0).reshape(2, 3)
    m2 = rm.float64_multi_array_msg(a, labels=["rows", "cols"])
    assert [(d.label, d.size, d.stride) for d in m2.layout.dim] == [("rows", 2, 6),
                                                                     ("cols", 3, 3)]
    back = rm.parse_float64_multi_array(rm.deserialize(rm.serialize(m2),
                                                       rm.FLOAT64_MULTI_ARRAY))
    np.testing.assert_array_equal(back, a)
    m1.layout.data_offset = 1
    np.testing.assert_array_equal(rm.parse_float64_multi_array(m1), [2.0, 3.0])
    with pytest.raises(ValueError, match="expected 3 values, got 2"):
        rm.parse_float64_multi_array(m1, expected_len=3)
    m2.layout.dim[0].size = 3
    with pytest.raises(ValueError, match="layout sizes"):
        rm.parse_float64_multi_array(m2)
    with pytest.raises(ValueError, match="NaN/Inf"):
        rm.float64_multi_array_msg([1.0, np.nan])


def test_wrench_stamped():
    msg = rm.wrench_stamped_msg(0.75, [1, 2, 3, 4, 5, 6], frame_id="ee_link")
    dec = _mcap_ros2_decode(rm.WRENCH_STAMPED, rm.serialize(msg))
    assert [dec.wrench.force.x, dec.wrench.torque.z] == [1.0, 6.0]
    d = rm.parse_wrench_stamped(rm.deserialize(rm.serialize(msg), rm.WRENCH_STAMPED))
    assert d.frame_id == "ee_link" and d.stamp_ns == 750_000_000
    np.testing.assert_array_equal(d.wrench, [1, 2, 3, 4, 5, 6])
    with pytest.raises(ValueError, match="length 6"):
        rm.wrench_stamped_msg(0, [1, 2, 3])


def test_diagnostic_array():
    msg = rm.diagnostic_array_msg(1.0, [
        {"name": "integrator", "level": "warn", "message": "drift",
         "values": {"energy_rel_drift": 1.2345678901234567e-9, "steps": np.int64(10)}},
        rm.diagnostic_status_msg("controller", 0),
    ])
    dec = _mcap_ros2_decode(rm.DIAGNOSTIC_ARRAY, rm.serialize(msg))
    assert dec.status[0].level == 1 and dec.status[1].name == "controller"
    parsed = rm.parse_diagnostic_array(rm.deserialize(rm.serialize(msg), rm.DIAGNOSTIC_ARRAY))
    assert float(parsed[0]["values"]["energy_rel_drift"]) == 1.2345678901234567e-9
    assert parsed[0]["values"]["steps"] == "10"
    with pytest.raises(ValueError, match="unknown level"):
        rm.diagnostic_status_msg("x", "fatal")
    with pytest.raises(ValueError, match="0..3"):
        rm.diagnostic_status_msg("x", 7)


def test_deserialize_malformed():
    data = rm.serialize(rm.joint_state_msg(0, ["a", "b"], [1, 2]))
    with pytest.raises(ValueError, match="malformed CDR"):
        rm.deserialize(data[:20], rm.JOINT_STATE)
    with pytest.raises(ValueError, match="encapsulation"):
        rm.deserialize(b"\x00\x07\x00\x00" + data[4:], rm.JOINT_STATE)
    with pytest.raises(ValueError, match="unknown message type"):
        rm.deserialize(data, "nope_msgs/msg/Nope")


def test_type_hash_and_msgdef():
    # value seen in a real Iron+ `ros2 topic info -v /joint_states` output
    assert rm.type_hash(rm.JOINT_STATE) == (
        "RIHS01_a13ee3a330e346c9d87b5aa18d24e11690752bd33a0350f11c5882bc9179260e")
    text = rm.msgdef(rm.JOINT_STATE)
    assert text.startswith("std_msgs/Header header\nstring[] name\nfloat64[] position")
    assert "MSG: builtin_interfaces/Time" in text


# ------------------------------------------------------------------ CDR counts


def test_float64_multi_array_extent_matches_rosbags_serialisation():
    """Oracle: rosbags' own CDR (both byte orders) of random layouts; every truncation of a
    sample gives None (decode it to learn why), never a wrong extent."""
    from vm_dynamics.ros.cdr_counts import ArrayExtent, float64_multi_array_extent
    T = rm.TYPESTORE.types
    rng = np.random.default_rng(7)
    for _ in range(300):
        nd, size, off = (int(x) for x in rng.integers(0, [5, 12, 14]))
        dims = [T["std_msgs/msg/MultiArrayDimension"](
            label="d" * int(rng.integers(0, 7)), size=int(rng.integers(0, 9)), stride=1)
            for _ in range(nd)]
        msg = T["std_msgs/msg/Float64MultiArray"](
            layout=T["std_msgs/msg/MultiArrayLayout"](dim=dims, data_offset=off),
            data=rng.normal(size=size))
        for little in (True, False):
            data = bytes(rm.TYPESTORE.serialize_cdr(msg, rm.FLOAT64_MULTI_ARRAY,
                                                    little_endian=little))
            assert float64_multi_array_extent(data) == ArrayExtent(nd, off, size)
            assert float64_multi_array_extent(memoryview(data)) == ArrayExtent(nd, off, size)
            for cut in range(len(data)):
                assert float64_multi_array_extent(data[:cut]) is None
    assert float64_multi_array_extent(b"\x01\x00\x00\x00" + bytes(12)) is None   # XCDR2
    huge = b"\x00\x01\x00\x00" + (10**9).to_bytes(4, "little") + bytes(8)
    assert float64_multi_array_extent(huge) is None        # dim count beyond the bytes
