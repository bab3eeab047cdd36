"""The controller core's capture law (nodes/controller_capture.py) without a transport: it is
selected by a capture section without a controller, waits for the target's odometry of the
state's stamp in lockstep, rejects a target odometry in wrong frames naming them (the node keeps
running), and names a missing section."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vm_dynamics.config.params import read_params_file
from vm_dynamics.core import lie
from vm_dynamics.nodes.controller_core import ControllerCore
from vm_dynamics.ros import messages as rm

SCENARIO = Path(__file__).resolve().parents[2] / "config" / "capture_tumbling.yaml"


def params(**extra):
    p = read_params_file(SCENARIO)
    p.update(lockstep=True, **extra)
    return p


def state_messages(core, t, target_frames=("odom", "target")):
    q = [0.0, -1.2, 0.0, 2.2, 0.0, -1.0, 0.0]
    js = rm.joint_state_msg(t, core.robot.joints, q, np.zeros(7))
    od = rm.odometry_msg(t, np.eye(4), np.zeros(6), "odom", core.robot.base_frame)
    to = rm.odometry_msg(t, lie.pose([3.1291699, 0.0, 0.648829], [0.0, 1.0, 0.0, 0.0]),
                         [0.0, 0.0, 0.0, 0.006, -0.012, 0.03], *target_frames)
    return js, od, to


def test_capture_law_waits_for_the_target_of_the_same_instant():
    core = ControllerCore.from_params(params())
    assert core.controller_name == "capture" and core.capture.command_time == 13.0
    js, od, to = state_messages(core, 0.01)
    assert core.on_joint_state(js, 0.01) and core.on_odometry(od, 0.01)
    assert not core.lockstep_ready()                  # no target odometry yet
    assert core.command_messages() == []
    assert core.on_target_odometry(state_messages(core, 0.008)[2])
    assert not core.lockstep_ready()                  # the target of another instant
    assert core.on_target_odometry(to)
    assert core.lockstep_ready()
    out = dict(core.command_messages())
    tau = rm.parse_joint_state(out["joint_commands"], core.robot.joints, required="effort")
    assert np.all(np.isfinite(tau.effort)) and np.any(tau.effort != 0.0)   # tracking
    w = rm.parse_wrench_stamped(out["base_wrench"])
    assert np.all(w.wrench == 0.0)                    # free-floating track: bus not actuated
    assert not core.capture.grasped and core.capture.grasp_due(13.0)
    assert not core.capture.grasp_due(12.9)


def test_target_odometry_in_wrong_frames_is_rejected_naming_them():
    core = ControllerCore.from_params(params())
    _, _, bad = state_messages(core, 0.01, ("odom", "box"))
    assert not core.on_target_odometry(bad)
    assert "target odometry" in core.last_error and "'box'" in core.last_error \
        and "'target'" in core.last_error
    assert core.capture.target_stamp is None


def test_a_selected_controller_replaces_the_mission_and_missing_sections_are_named():
    core = ControllerCore.from_params(params(controller="pd_gravity"))
    assert core.capture is None and core.controller_name == "pd_gravity"
    p = params()
    p["capture"] = {k: v for k, v in p["capture"].items() if k != "detumble"}
    with pytest.raises(ValueError, match=r"capture\.detumble: missing"):
        ControllerCore.from_params(p)
