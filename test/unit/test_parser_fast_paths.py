"""The parsers' fast paths for well-formed messages (what the nodes receive every lockstep
period) give the same arrays as the field-by-field checks, and a malformed message still
takes those checks and is rejected naming the field; the controller core's output check
still refuses non-finite efforts and wrenches."""

import math

import numpy as np
import pytest

from vm_dynamics.config.params import flatten, read_params_file
from vm_dynamics.core.rotations import check_unit_quaternion, matrix_from_pose
from vm_dynamics.ros import messages as rm

ODOM_FIELDS = [("pose.pose.position", "x", "Odometry.pose translation"),
               ("pose.pose.position", "y", "Odometry.pose translation"),
               ("pose.pose.position", "z", "Odometry.pose translation"),
               ("pose.pose.orientation", "x", "Odometry.pose rotation"),
               ("pose.pose.orientation", "y", "Odometry.pose rotation"),
               ("pose.pose.orientation", "z", "Odometry.pose rotation"),
               ("pose.pose.orientation", "w", "Odometry.pose rotation"),
               ("twist.twist.linear", "x", "Odometry.twist"),
               ("twist.twist.linear", "y", "Odometry.twist"),
               ("twist.twist.linear", "z", "Odometry.twist"),
               ("twist.twist.angular", "x", "Odometry.twist"),
               ("twist.twist.angular", "y", "Odometry.twist"),
               ("twist.twist.angular", "z", "Odometry.twist")]


def _part(msg, path):
    for name in path.split("."):
        msg = getattr(msg, name)
    return msg


def _random_odometry(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    g = matrix_from_pose(rng.normal(size=3) * 10, q)
    return rm.odometry_msg(rng.integers(0, 2**31) * 1e-3, g, rng.normal(size=6))


def test_odometry_fast_path_equals_the_field_by_field_result():
    """Random odometries, their quaternions perturbed within the unit-norm tolerance: the
    pose equals check_unit_quaternion + matrix_from_pose of the fields bit for bit."""
    rng = np.random.default_rng(7)
    for k in range(200):
        msg = _random_odometry(rng)
        o = msg.pose.pose.orientation
        scale = 1.0 + rng.uniform(-0.009, 0.009) if k % 2 else 1.0
        o.x, o.y, o.z, o.w = (o.x * scale, o.y * scale, o.z * scale, o.w * scale)
        d = rm.parse_odometry(msg)
        p = msg.pose.pose.position
        expect = matrix_from_pose(np.array([p.x, p.y, p.z]),
                                  check_unit_quaternion([o.x, o.y, o.z, o.w]))
        np.testing.assert_array_equal(d.g, expect)
        tw = msg.twist.twist
        np.testing.assert_array_equal(d.twist, [tw.linear.x, tw.linear.y, tw.linear.z,
                                                tw.angular.x, tw.angular.y, tw.angular.z])
        assert d.stamp_ns == rm.time_msg_to_ns(msg.header.stamp)
        assert (d.frame_id, d.child_frame_id) == ("odom", "base_link")


@pytest.mark.parametrize("path, attr, what", ODOM_FIELDS)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_odometry_non_finite_component_is_named(path, attr, what, bad):
    msg = rm.odometry_msg(1.0, np.eye(4), np.zeros(6))
    setattr(_part(msg, path), attr, bad)
    with pytest.raises(ValueError, match=f"^{what} contains NaN/Inf"):
        rm.parse_odometry(msg)


def test_odometry_overflowing_sum_and_non_unit_quaternion():
    msg = rm.odometry_msg(1.0, np.eye(4), np.zeros(6))
    msg.pose.pose.position.x = msg.twist.twist.linear.x = 1e308   # finite; their sum is not
    d = rm.parse_odometry(msg)
    assert d.g[0, 3] == 1e308 and d.twist[0] == 1e308
    msg.pose.pose.orientation.w = 1.02
    with pytest.raises(ValueError, match=r"^Odometry.pose rotation: not a unit quaternion"):
        rm.parse_odometry(msg)


def test_joint_state_in_the_requested_order_and_permuted_give_the_same_arrays():
    names = ["a", "b", "c"]
    msg = rm.joint_state_msg(0.5, names, [1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0])
    same = rm.parse_joint_state(msg, names)
    perm = rm.parse_joint_state(msg, ["c", "a", "b"])
    assert same.names == names and perm.names == ["c", "a", "b"]
    for f in ("position", "velocity", "effort"):
        np.testing.assert_array_equal(getattr(perm, f), getattr(same, f)[[2, 0, 1]])
    np.testing.assert_array_equal(same.position, [1.0, 2.0, 3.0])
    msg.velocity[1] = math.nan
    with pytest.raises(ValueError, match=r"JointState.velocity contains NaN/Inf at index 1 "
                                         r"\(joint 'b'\)"):
        rm.parse_joint_state(msg, names)


def test_joint_state_same_order_still_rejects_duplicates_and_extras():
    msg = rm.joint_state_msg(0.5, ["a", "b"], [1.0, 2.0])
    msg.name = ["a", "a"]
    with pytest.raises(ValueError, match="duplicate joint names"):
        rm.parse_joint_state(msg, ["a", "a"])
    msg.name = ["a", "b"]
    with pytest.raises(ValueError, match=r"unknown joint names \['b'\]"):
        rm.parse_joint_state(msg, ["a"], extra_names=False)


@pytest.mark.parametrize("i, field", list(enumerate(["force.x", "force.y", "force.z", "torque.x",
                                                      "torque.y", "torque.z"])))
def test_wrench_non_finite_component_named_and_limits_kept(i, field):
    w = np.arange(1.0, 7.0)
    msg = rm.wrench_stamped_msg(0.25, w, "base_link")
    np.testing.assert_array_equal(rm.parse_wrench_stamped(msg).wrench, w)
    part, axis = field.split(".")
    setattr(getattr(msg.wrench, part), axis, math.nan)
    with pytest.raises(ValueError, match=f"^WrenchStamped.wrench.{field} contains NaN/Inf"):
        rm.parse_wrench_stamped(msg)
    ok = rm.wrench_stamped_msg(0.25, w, "base_link")
    with pytest.raises(ValueError, match="force: magnitude"):
        rm.parse_wrench_stamped(ok, force_limit=1.0)
    with pytest.raises(ValueError, match="torque: magnitude"):
        rm.parse_wrench_stamped(ok, torque_limit=1.0)
    assert rm.parse_wrench_stamped(ok, force_limit=4.0, torque_limit=9.0).frame_id == \
        "base_link"


@pytest.mark.parametrize("which", ["tau", "wrench"])
@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_controller_core_publishes_nothing_for_non_finite_output(which, bad):
    from pathlib import Path

    from vm_dynamics.nodes.controller_core import ControllerCore
    p = flatten(read_params_file(Path(__file__).resolve().parents[2] / "config"
                                 / "spacecraft_arm.yaml"))
    core = ControllerCore.from_params(p)
    m = core.model
    assert m.n and m.b
    core._js = (0.0, np.zeros(m.n), np.zeros(m.n))
    core._od = (0.0, np.eye(4), np.zeros(m.b))
    assert core.compute() is not None
    tau, bw = np.ones(m.n), np.ones(m.b)
    (tau if which == "tau" else bw)[-1] = bad
    core.ctrl.compute = lambda t, s, ref: (tau, bw)
    core.log.pop()
    assert core.compute() is None
    assert any("returned NaN/Inf" in str(rec) for rec in core.log.pop())


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_dynamics_core_rejects_non_finite_in_process_wrench(bad):
    """DynamicsCore.set_base_wrench (the in-process input, its check shared with the
    message path after parsing): a non-finite component is rejected and the last valid
    wrench stays applied."""
    from pathlib import Path

    from vm_dynamics.nodes.dynamics_core import DynamicsCore
    p = flatten(read_params_file(Path(__file__).resolve().parents[2] / "config"
                                 / "spacecraft_arm.yaml"))
    core = DynamicsCore.from_params(p)
    frame = core.robot.base_frame
    assert core.set_base_wrench(np.arange(1.0, 7.0), frame)
    w = np.arange(1.0, 7.0)
    w[4] = bad
    assert not core.set_base_wrench(w, frame)
    assert "expected 6 finite numbers" in core.wrench.last_error
    np.testing.assert_array_equal(core.inputs.wrench6, np.arange(1.0, 7.0))
