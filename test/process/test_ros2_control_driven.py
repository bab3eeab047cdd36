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

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from processes import REPO

from vm_dynamics.config.params import flatten, read_params_file
from vm_dynamics.config.spec import unknown_parameter_text, unknown_parameters
from vm_dynamics.nodes.driven_commands import parse_joint_command
from vm_dynamics.nodes.dynamics_core import DynamicsCore
from vm_dynamics.nodes.ros2_control import (
    controller_manager_settings,
    ros2_control_launch,
    ros2_control_tag,
)
from vm_dynamics.ros import messages as rm

UPDATE_RATE = 100          # Hz: 10 steps of 1 ms per period
PERIOD_NS = 10_000_000
T = 0.01
JOINTS = [f"joint{i}" for i in range(1, 8)]
Q0 = np.array([0.0, -1.2, 0.0, 2.2, 0.0, -1.0, 0.0])


def scenario(**overrides):
    p = flatten(read_params_file(REPO / "config" / "spacecraft_arm.yaml"))
    p.update(overrides)
    return p


def cm_params(**overrides):
    p = scenario(**overrides)
    p.update(controller_manager_settings(p, UPDATE_RATE))
    return p


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
