"""Kinematically driven joints on the topic hardware interface, without ROS
(nodes/driven_commands.py, docs/ros2_control.md "Position and velocity command interfaces").

A joint of ``driven_joints.position`` / ``driven_joints.velocity`` takes its command from the
``position`` / ``velocity`` field of the ``sensor_msgs/JointState`` on ``joint_commands``, as
ros2_control's JointStateTopicSystem writes it (every joint by name; each field one entry per
joint that has that command interface).  Oracles: the command itself (a position stamped
``t_k`` is the joint's position at ``t_k+1``; a velocity is the joint's velocity over the
period and its displacement ``v T``), the engine driven directly with the same commands
(``Simulator(driven_joints=...)``, ``set_driven_velocity``: the node adds only the plumbing),
and a second run.  No rate or latency is asserted.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from emulated_controller_manager import (
    PERIOD_NS,
    UPDATE_RATE,
    cm_params,
    lockstep_start_ns,
    manager_over_dds,
    scenario,
)

from vm_dynamics.config.spec import unknown_parameter_text, unknown_parameters
from vm_dynamics.nodes.driven_commands import parse_joint_command
from vm_dynamics.nodes.dynamics_core import DynamicsCore
from vm_dynamics.nodes.ros2_control import ros2_control_launch, ros2_control_tag
from vm_dynamics.ros import messages as rm

T = 0.01
JOINTS = [f"joint{i}" for i in range(1, 8)]
Q0 = np.array([0.0, -1.2, 0.0, 2.2, 0.0, -1.0, 0.0])


def command(stamp_ns, names=JOINTS, effort=None, position=None, velocity=None):
    """A JointState command with each field as given (any length: the topic system's layout
    has one entry per joint of that interface)."""
    msg = rm.joint_state_msg(stamp_ns * 1e-9, names, None)
    for field, values in (("effort", effort), ("position", position), ("velocity", velocity)):
        if values is not None:
            setattr(msg, field, np.asarray(values, dtype=float))
    return msg


def target(k):
    """A smooth position target per period k (rad), away from the initial pose."""
    return Q0 + 0.3 * np.sin(0.05 * k + np.arange(7))


# ------------------------------------------------------------------ configuration
def test_driven_joints_are_checked_naming_the_parameter():
    with pytest.raises(ValueError, match=r"driven_joints.position: unknown joint 'jiont2' "
                                         r"\(did you mean 'joint2'\?\); the joints"):
        DynamicsCore.from_params(scenario(**{"driven_joints.position": ["joint1", "jiont2"]}))
    with pytest.raises(ValueError, match="driven_joints.velocity: joint 'joint3' is also in "
                                         "driven_joints.position"):
        DynamicsCore.from_params(scenario(**{"driven_joints.position": ["joint3"],
                                             "driven_joints.velocity": ["joint3"]}))
    with pytest.raises(ValueError, match="driven_joints.position: joint 'joint1' listed twice"):
        DynamicsCore.from_params(scenario(**{"driven_joints.position": ["joint1", "joint1"]}))
    with pytest.raises(ValueError, match="driven_joints.velocity: expected a list of joint"):
        DynamicsCore.from_params(scenario(**{"driven_joints.velocity": "joint1"}))
    with pytest.raises(ValueError, match="driven_joints.position: driven joints need "
                                         "joint_source simulated"):
        DynamicsCore.from_params(scenario(**{"driven_joints.position": ["joint1"],
                                             "joint_source": "measured"}))
    # a misspelt kind is an unknown parameter, with the nearest valid name
    unknown = unknown_parameters(["driven_joints.postion", "driven_joints.velocity"])
    assert unknown == ["driven_joints.postion"]
    assert "(did you mean 'driven_joints.position'?)" in unknown_parameter_text(unknown)


def test_the_tag_declares_each_joints_command_interface():
    tag = ET.fromstring(ros2_control_tag(
        ["a", "b", "c"], initial_positions=[0.1, -0.2, 0.3],
        command_interfaces={"a": "position", "c": "velocity"}))
    joints = tag.findall("joint")
    assert [[c.get("name") for c in j.findall("command_interface")] for j in joints] == \
        [["position"], ["effort"], ["velocity"]]
    # initial values that hold the arm where it starts: its position, zero effort/velocity
    assert [float(j.find("command_interface/param").text) for j in joints] == [0.1, 0.0, 0.0]
    for kwargs, text in ((dict(command_interfaces={"d": "position"}), "names 'd', not one of"),
                         (dict(command_interfaces={"a": "acceleration"}),
                          "command interface 'acceleration' of 'a'")):
        with pytest.raises(ValueError, match=text):
            ros2_control_tag(["a", "b", "c"], **kwargs)


def test_the_launch_helper_drives_every_joint_by_the_interface_asked_for():
    _, overrides, _, urdf = ros2_control_launch("spacecraft_arm", 100, "position")
    assert overrides["driven_joints.position"] == JOINTS
    tag = ET.fromstring(urdf).find("ros2_control")
    assert {c.get("name") for c in tag.iter("command_interface")} == {"position"}
    positions = [float(j.find("command_interface/param").text) for j in tag.findall("joint")]
    assert positions == list(Q0)
    _, overrides, _, urdf = ros2_control_launch("spacecraft_arm", 100)
    assert not any(k.startswith("driven_joints") for k in overrides)
    assert {c.get("name") for c in ET.fromstring(urdf).iter("command_interface")} == {"effort"}
    with pytest.raises(ValueError, match="command_interface:=torque: expected one of"):
        ros2_control_launch("spacecraft_arm", 100, "torque")


# ------------------------------------------------------------------ the command message
KINDS = ["position", "effort", "velocity", "effort"]
NAMES = ["a", "b", "c", "d"]


def test_the_command_fields_in_the_topic_systems_layout_and_the_usual_one():
    # the topic system: each field one entry per joint of that interface, in name order
    msg = command(7, ["d", "a", "b", "c"], effort=[4.0, 2.0], position=[1.0], velocity=[3.0])
    stamp, values = parse_joint_command(msg, NAMES, KINDS)
    assert stamp == 7 and list(values) == [1.0, 2.0, 3.0, 4.0]
    # one entry per name; the entries of the other joints are not read
    msg = command(0, NAMES, effort=[np.nan, 2.0, np.nan, 4.0], position=[1.0, 0, 0, 0],
                  velocity=[0, 0, 3.0, 0])
    assert list(parse_joint_command(msg, NAMES, KINDS)[1]) == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("fields, text", [
    (dict(effort=[2.0, 4.0], velocity=[3.0]),
     r"position is empty; expected one per name \(4\) or one per joint it commands \(1: a\)"),
    (dict(effort=[2.0, 4.0], position=[1.0, 5.0], velocity=[3.0]),
     r"position has 2 entries; expected one per name \(4\) or one per joint it commands"),
    (dict(effort=[2.0, 4.0], position=[np.nan], velocity=[3.0]),
     r"JointState.position.*NaN.*'a'|JointState.position.*'a'.*NaN"),
    (dict(effort=[2.0, np.inf], position=[1.0], velocity=[3.0]),
     r"JointState.effort.*'d'"),
])
def test_bad_command_fields_name_the_field_and_the_joint(fields, text):
    with pytest.raises(ValueError, match=text):
        parse_joint_command(command(0, NAMES, **fields), NAMES, KINDS)


def test_unknown_and_missing_joints_are_named():
    with pytest.raises(ValueError, match=r"unknown joint names \['e'\]"):
        parse_joint_command(command(0, NAMES + ["e"], effort=[0, 0], position=[0],
                                    velocity=[0]), NAMES, KINDS)
    with pytest.raises(ValueError, match=r"missing joint names \['d'\]"):
        parse_joint_command(command(0, NAMES[:3], effort=[0], position=[0], velocity=[0]),
                            NAMES, KINDS)
    with pytest.raises(ValueError, match="velocity has 1 entries; expected none or one per "
                                         "name"):
        parse_joint_command(command(0, ["b", "d"], effort=[0, 0], velocity=[0]), ["b", "d"],
                            ["effort", "effort"])


# ------------------------------------------------------------------ the core, in lockstep
def driven_core(**kinds):
    """The core in lockstep with a controller manager at 100 Hz (no sync object: commands are
    stamped with the state they answer), ``kinds`` = {"position": [...], ...}."""
    return DynamicsCore.from_params(cm_params(**{f"driven_joints.{k}": v
                                                 for k, v in kinds.items()}))


def model_q(core, values):
    """Joint values of ``core.robot.joints`` order from a model-order vector."""
    return np.asarray(values)[np.asarray(core.robot.joint_index)]


def test_a_position_command_is_reached_exactly_one_period_later():
    core = driven_core(position=JOINTS)
    h0 = core.model.momentum(core.g, core.V, core.q, core.qd)
    for k in range(60):
        before = model_q(core, core.q)
        cmd = target(k)
        assert core.apply_joint_command(command(core.stamp_ns, position=cmd))
        assert core.advance_lockstep() == 10
        # the joint reached the command at t_k+1, at the constant velocity (q* - q(t_k)) / T
        np.testing.assert_allclose(model_q(core, core.q), cmd, rtol=0, atol=1e-12)
        np.testing.assert_allclose(model_q(core, core.qd), (cmd - before) / T, rtol=1e-9,
                                   atol=1e-12)
    # the free-floating base moved as the arm's momentum requires: zero total momentum
    assert np.linalg.norm(core.V) > 1e-3
    h = core.model.momentum(core.g, core.V, core.q, core.qd)
    np.testing.assert_allclose(h, h0, rtol=0, atol=1e-9)
    assert not core.diverged and core.effort.rejected == 0


def test_velocity_commands_move_the_joints_at_that_velocity():
    core = driven_core(velocity=JOINTS)
    rng = np.random.default_rng(4)
    for k in range(40):
        before = model_q(core, core.q)
        v = rng.uniform(-0.5, 0.5, 7)
        assert core.apply_joint_command(command(core.stamp_ns, velocity=v))
        assert core.advance_lockstep() == 10
        assert np.array_equal(model_q(core, core.qd), v)        # held over the period
        np.testing.assert_allclose(model_q(core, core.q), before + v * T, rtol=0, atol=1e-12)
    assert np.linalg.norm(core.V) > 1e-4 and not core.diverged


MIXED = dict(position=["joint1", "joint2", "joint3"], velocity=["joint5"])
EFFORT_JOINTS = ["joint4", "joint6", "joint7"]


def mixed_command(stamp_ns, k, q, qd):
    """The topic system's message for MIXED: efforts (a PD holding joints 4, 6, 7 near their
    initial positions) for the effort joints only, the position targets of joints 1-3, a
    velocity for joint 5, each field in name order."""
    idx = [JOINTS.index(j) for j in EFFORT_JOINTS]
    effort = -20.0 * (q[idx] - Q0[idx]) - 5.0 * qd[idx]
    return command(stamp_ns, effort=effort, position=target(k)[:3],
                   velocity=[0.4 * np.cos(0.1 * k)]), effort


def _mixed_run(periods):
    core = driven_core(**MIXED)
    commands, states = [], []
    for k in range(periods):
        q, qd = model_q(core, core.q), model_q(core, core.qd)
        msg, effort = mixed_command(core.stamp_ns, k, q, qd)
        assert core.apply_joint_command(msg)
        assert core.advance_lockstep() == 10
        commands.append((msg, effort))
        states.append(dict(core.state_messages())["joint_states"])
    return core, commands, states


def test_a_mixed_effort_position_velocity_arm_works_as_the_engine_driven_directly():
    from vm_dynamics.sim.engine import Simulator
    core, commands, states = _mixed_run(50)
    pos, vel = [JOINTS.index(j) for j in MIXED["position"]], JOINTS.index("joint5")
    eff = [JOINTS.index(j) for j in EFFORT_JOINTS]
    # the oracle: the engine itself, driven with the same commands
    driven = pos + [vel]
    sim = Simulator(core.model, core.dt, "rkmk4", forces=core.robot.forces,
                    driven_joints=driven)
    sim.reset(core.g0, core.V0, core.q0, core.qd0)
    for k, (msg, effort) in enumerate(commands):
        q = sim.arrays()[3]
        sim.set_driven_velocity(np.r_[(np.asarray(msg.position) - q[pos]) / T,
                                      msg.velocity[0]])
        tau = np.zeros(7)
        tau[eff] = effort
        for _ in range(10):
            sim.step(tau=tau)
        js = rm.parse_joint_state(states[k], JOINTS)
        np.testing.assert_allclose(js.position, sim.arrays()[3], rtol=0, atol=1e-12)
        np.testing.assert_allclose(js.velocity, sim.arrays()[4], rtol=0, atol=1e-12)
        np.testing.assert_allclose(js.position[pos], msg.position, rtol=0, atol=1e-12)
        # /joint_states effort: the command at effort joints, the realising effort at driven
        assert np.array_equal(js.effort[eff], effort)
        np.testing.assert_allclose(js.effort[driven], sim.driven_effort(tau=tau),
                                   rtol=1e-9, atol=1e-9)
    assert np.max(np.abs(js.effort[driven])) > 1e-3         # driving the joints takes effort
    np.testing.assert_allclose(core.g, sim.arrays()[1], rtol=0, atol=1e-12)
    # two runs: bit-identical
    again = _mixed_run(50)[2]
    for a, b in zip(states, again):
        for f in ("position", "velocity", "effort"):
            assert np.array_equal(getattr(a, f), getattr(b, f))


def test_bad_commands_are_rejected_naming_the_joint_and_the_last_valid_one_kept():
    core = driven_core(**MIXED)
    q = model_q(core, core.q)
    good, _ = mixed_command(core.stamp_ns, 0, q, 0 * q)
    missing = command(core.stamp_ns, effort=good.effort, velocity=good.velocity)
    assert not core.apply_joint_command(missing)
    assert "position is empty" in core.effort.last_error and \
        "joint1, joint2, joint3" in core.effort.last_error
    nan = command(core.stamp_ns, effort=good.effort, position=[0.1, np.nan, 0.2],
                  velocity=good.velocity)
    assert not core.apply_joint_command(nan)
    assert "NaN" in core.effort.last_error and "joint2" in core.effort.last_error
    assert core.advance_lockstep() == 0                       # still waiting
    # an effort vector cannot command driven joints
    assert not core.set_effort(np.zeros(7))
    assert "driven" in core.effort.last_error and "joint_commands" in core.effort.last_error
    assert core.apply_joint_command(good) and core.advance_lockstep() == 10
    np.testing.assert_allclose(model_q(core, core.q)[:3], target(0)[:3], rtol=0, atol=1e-12)
    assert core.effort.rejected == 3 and core.effort.accepted == 1
    # a later bad one: the last valid command stays (the position target held)
    assert not core.apply_joint_command(command(core.stamp_ns, effort=[0.0], position=[0, 0, 0],
                                                velocity=[0.0]))
    assert "effort has 1 entries" in core.effort.last_error


# ------------------------------------------------------------------ wall clock, the watchdog
def wall_core(**kinds):
    p = scenario(control_rate=100.0, command_timeout=0.05, lockstep=False,
                 **{f"driven_joints.{k}": v for k, v in kinds.items()})
    return DynamicsCore.from_params(p)


def test_outside_lockstep_a_command_applies_from_the_next_period_start_and_the_watchdog_stops():
    core = wall_core(velocity=["joint2"], position=["joint4"])
    assert core.run(5) == 5                       # no command: driven joints hold still
    assert model_q(core, core.qd)[[1, 3]].tolist() == [0.0, 0.0]
    q5 = model_q(core, core.q)
    aligned = command(0, effort=np.zeros(7), position=np.full(7, 2.0),
                      velocity=np.full(7, 0.5))   # one entry per name, unstamped
    assert core.apply_joint_command(aligned)
    assert core.run(5) == 5                       # mid-period: not yet applied
    assert model_q(core, core.qd)[[1, 3]].tolist() == [0.0, 0.0]
    assert np.array_equal(model_q(core, core.q)[[1, 3]], q5[[1, 3]])
    assert core.run(10) == 10                     # the period from t = 0.01 s
    q20 = model_q(core, core.q)
    np.testing.assert_allclose(q20[1], q5[1] + 0.5 * T, rtol=0, atol=1e-12)
    np.testing.assert_allclose(q20[3], 2.0, rtol=0, atol=1e-12)
    assert core.run(20) == 20                     # the position target held, velocity kept
    q40 = model_q(core, core.q)
    np.testing.assert_allclose(q40[3], 2.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(q40[1], q5[1] + 0.5 * 3 * T, rtol=0, atol=1e-12)
    # no command for command_timeout (0.05 s after t = 0.005 s): the driven joints stop at
    # once and hold their positions
    assert core.run(30) == 30 and core.watchdog == "tripped"
    stopped = model_q(core, core.q)
    assert model_q(core, core.qd)[[1, 3]].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(stopped[1], q5[1] + 0.5 * (0.055 + 0.001 - 0.01), rtol=0,
                               atol=1e-12)
    assert core.run(50) == 50
    assert np.array_equal(model_q(core, core.q)[[1, 3]], stopped[[1, 3]])
    assert any("watchdog: no effort command" in r[2] for r in core.log.records)


# ------------------------------------------------------------------ over DDS
class PositionManager:
    """ros2_control_node's sim-time loop with the topic system (as emulated in
    test_ros2_control.py) commanding MIXED: per update it reads the newest state and writes
    one JointState stamped with its clock, in the topic system's layout."""

    def __init__(self):
        self.clock, self.started, self.wake_at, self.state = 0, False, None, None
        self.updates = []                 # (clock ns, command message)
        self.barriers = 0

    def receive(self, topic, msg):
        if topic == "joint_states":
            self.state = msg
        elif topic == "/clock":
            self.clock = rm.time_msg_to_ns(msg.clock)

    def answer_barrier(self, request=None):
        self.barriers += 1
        return {"result": {"names": [], "prefixes": []}}

    def spin(self):
        if not self.started:
            if self.clock > 0:
                self.started, self.wake_at = True, self.clock + PERIOD_NS
            return None
        if self.clock < self.wake_at or self.state is None:
            return None
        js = rm.parse_joint_state(self.state, JOINTS)
        msg, _ = mixed_command(self.clock, len(self.updates), js.position, js.velocity)
        self.updates.append((self.clock, msg))
        self.wake_at = self.clock + PERIOD_NS
        return msg


def test_position_commands_over_dds_take_effect_one_period_later(tmp_path, monkeypatch):
    """The dynamics node as a process, the test the controller manager and its topic system
    over the project's DDS transport (as in test_ros2_control.py), commanding positions
    (joints 1-3), a velocity (joint 5) and efforts; every 25th update a bad message (joint2's
    position NaN) goes out before the good one.  Each state at ``t_k+1`` has the positions
    commanded at ``t_k``; the bad messages are rejected naming joint2 while the node runs on;
    the same commands in-process give identical states."""
    pytest.importorskip("cyclonedds")
    from vm_dynamics.transport.qos import QosSpec
    cm, bad_sent = PositionManager(), 0
    driven = {f"driven_joints.{k}": "[" + ",".join(v) + "]" for k, v in MIXED.items()}
    with manager_over_dds(tmp_path, monkeypatch, cm, driven) as link:
        bad_pub = link.transport.publisher("/joint_commands", rm.JOINT_STATE,
                                           QosSpec(reliable=True, transient_local=False,
                                                   depth=10))

        def publish(cmd):
            nonlocal bad_sent
            if len(cm.updates) % 25 == 0:
                bad = command(cm.clock, effort=cmd.effort, position=[0.0, np.nan, 0.0],
                              velocity=cmd.velocity)
                bad_pub.publish(bad)
                bad_sent += 1
            link.pub.publish(cmd)
        last = link.run(150, publish)
        assert link.node.poll() is None              # the node keeps running
    states, text = link.states, link.log()
    start = lockstep_start_ns(text)
    engaged = [u for u in cm.updates if u[0] >= start]
    assert [u[0] for u in engaged] == [start + k * PERIOD_NS for k in range(len(engaged))]
    # each command's positions are the state's one period later
    for clock, msg in engaged:
        js = rm.parse_joint_state(states[clock + PERIOD_NS], JOINTS)
        np.testing.assert_allclose(js.position[:3], msg.position, rtol=0, atol=1e-12)
    assert bad_sent >= 5 and "rejected joint command" in text
    assert re.search(r"JointState.position[^\n]*joint2", text), text
    # the same commands in-process, from the same start: identical states
    replay = DynamicsCore.from_params(scenario(
        lockstep=True, lockstep_wrench=False, control_rate=float(UPDATE_RATE),
        **{f"driven_joints.{k}": v for k, v in MIXED.items()}))
    assert replay.run(start // 1_000_000) == start // 1_000_000
    for clock, msg in engaged:
        assert replay.stamp_ns == clock
        assert replay.apply_joint_command(msg) and replay.advance_lockstep() == 10
    js = rm.parse_joint_state(states[last], JOINTS)
    assert np.array_equal(js.position, replay.q) and np.array_equal(js.velocity, replay.qd)
    assert np.array_equal(js.effort, dict(replay.state_messages())["joint_states"].effort)
