"""``diff_drive_node`` logic without middleware: ``cmd_vel`` in, ``odom`` (wheel odometry),
``joint_states`` and ``/tf`` out."""
from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest

from vm_dynamics.config.params import parameter_defaults
from vm_dynamics.nodes.diff_drive_node import (
    NODE_PARAMETERS,
    PUBLICATIONS,
    SUBSCRIPTIONS,
    DiffDriveNode,
    load_diff_drive,
)
from vm_dynamics.transport.logger import StreamLogger


class MemoryTransport:
    """Publishers that keep what they send; the subscriptions and the timer are recorded."""

    def __init__(self):
        self.sent, self.subscribed, self.timers = [], {}, []
        self.logger = StreamLogger("memory", stream=io.StringIO())

    def publisher(self, topic, msgtype, qos="default"):
        return SimpleNamespace(publish=lambda msg: self.sent.append((topic, msg)))

    def subscribe(self, topic, msgtype, callback, qos="default", **kw):
        self.subscribed[topic] = (msgtype, callback)

    def timer(self, period, callback):
        self.timers.append((period, callback))


def twist(v, w):
    return SimpleNamespace(linear=SimpleNamespace(x=v, y=0.0, z=0.0),
                           angular=SimpleNamespace(x=0.0, y=0.0, z=w))


def node(name, **params):
    tr = MemoryTransport()
    p = dict(parameter_defaults(NODE_PARAMETERS), scenario=name, **params)
    return tr, DiffDriveNode(tr, load_diff_drive(name), p)


def test_cmd_vel_drives_the_base_and_odom_reports_it():
    """cmd_vel (0.3 m/s, −0.5 rad/s) through the wheel-velocity controller: after 4 s the
    odometry twist is the command (≤ 1e-9), the wheel-odometry pose equals the simulated pose
    (≤ 1e-6; the arc assumption between readings) and the lateral velocity is 0."""
    tr, n = node("diff_drive")
    assert {k: v[0] for k, v in tr.subscribed.items()} == SUBSCRIPTIONS
    assert {t for t, _ in tr.sent} == set(PUBLICATIONS) - {"ee_path"}    # no ee_link
    period, tick = tr.timers[0]
    assert period == pytest.approx(0.02)
    tr.subscribed["cmd_vel"][1](twist(0.3, -0.5))
    for _ in range(200):
        tick()
    odom = [m for t, m in tr.sent if t == "odom"][-1]
    assert abs(odom.twist.twist.linear.x - 0.3) <= 1e-9
    assert abs(odom.twist.twist.angular.z + 0.5) <= 1e-9
    g = n.stepper.g
    p = odom.pose.pose.position
    assert np.allclose([p.x, p.y], g[:2, 3], rtol=0, atol=1e-6)
    assert n.stepper.body_velocity()[1] == 0.0
    assert odom.header.stamp.sec == 4


def test_a_bad_cmd_vel_is_rejected_naming_the_field_and_the_command_is_kept():
    tr, n = node("diff_drive")
    on_cmd = tr.subscribed["cmd_vel"][1]
    on_cmd(twist(0.2, 0.1))
    ref = n.scn.drive.reference.copy()
    with pytest.raises(ValueError, match="angular.z=nan"):
        on_cmd(twist(0.2, float("nan")))
    with pytest.raises(ValueError, match="exceeds"):
        on_cmd(twist(1e3, 0.0))
    with pytest.raises(ValueError, match="exceeds"):
        on_cmd(twist(1e308, -1e308))
    with pytest.raises(ValueError, match="linear.x='fast': expected a finite number"):
        on_cmd(twist("fast", 0.0))
    with pytest.raises(ValueError, match="angular.z=None"):
        on_cmd(twist(0.1, None))
    with pytest.raises(ValueError, match="cmd_vel: expected a geometry_msgs/Twist, got str"):
        on_cmd("0.1 0.2")
    assert np.array_equal(n.scn.drive.reference, ref)
    for _ in range(3):
        tr.timers[0][1]()                            # still stepping with the kept command
    assert n.stepper.t == pytest.approx(0.06)


def test_the_arm_base_publishes_every_joint_with_efforts():
    tr, n = node("diff_drive_arm", publish_rate=100.0)
    tr.subscribed["cmd_vel"][1](twist(0.2, 0.3))
    for _ in range(5):
        tr.timers[0][1]()
    js = [m for t, m in tr.sent if t == "joint_states"][-1]
    assert list(js.name) == ["left_wheel_joint", "right_wheel_joint", "joint1", "joint2"]
    assert len(js.effort) == 4 and np.all(np.isfinite(js.effort))
    assert n.stepper.body_velocity()[1] == 0.0


def test_a_scenario_that_is_no_diff_drive_is_named():
    with pytest.raises(ValueError, match="'rolling_ball': not a differential drive"):
        load_diff_drive("rolling_ball")


def test_the_arm_base_publishes_the_base_and_end_effector_trails():
    """base_path and ee_path (RViz trails): every PATH_EVERY ticks, one pose per tick, the last
    path_length kept; the ee pose is the odometry pose times the arm's forward kinematics."""
    from vm_dynamics.nodes.diff_drive_node import PATH_EVERY
    tr, n = node("diff_drive_arm", path_length=15)
    tr.subscribed["cmd_vel"][1](twist(0.3, 0.4))
    for _ in range(2 * PATH_EVERY):
        tr.timers[0][1]()
    paths = {t: m for t, m in tr.sent if t in ("base_path", "ee_path")}
    assert sum(t == "ee_path" for t, _ in tr.sent) == 3          # ticks 0, 10, 20
    assert len(paths["base_path"].poses) == len(paths["ee_path"].poses) == 15
    assert paths["ee_path"].header.frame_id == "odom"
    g = n.odometry.pose(n.scn.height)
    ge = g @ n.scn.system.model.frame_pose(n.stepper.r, "ee_link")
    last = paths["ee_path"].poses[-1].pose.position
    assert np.allclose([last.x, last.y, last.z], ge[:3, 3], atol=1e-12)
    first, last = paths["base_path"].poses[0].pose.position, paths["base_path"].poses[-1].pose.position
    assert np.hypot(last.x - first.x, last.y - first.y) > 1e-3            # the trail moves
    with pytest.raises(ValueError, match="path_length=0"):
        node("diff_drive", path_length=0)
