"""``composed_nodes`` (dynamics_node and controller_node in one process, one executor,
in-process delivery between them) behaves as the two processes do.

Set-up: ``composed_nodes`` on spacecraft_arm in lockstep over DDS on loopback; this test is the
outside reader (RViz, ``ros2 topic echo``) on ``/joint_states``, ``/odom``, ``/clock``, ``/tf``,
``/joint_commands`` and ``/ee_path``.  Checked: the loop tracks the scenario's reference (the
controller's commands are applied), every state is answered by a command of its stamp and the
states follow each other period by period (nothing lost), the outside reader gets the outputs
on DDS, each node takes the parameter file's section of its own name, a bad parameter of one
node ends the process with exit code 2 and that node's error line (as that node's own
executable does), and Ctrl-C ends it with 0.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from processes import dds_env, signal_when_logged, stop_processes

from vm_dynamics.config.params import read_params_file, unflatten_reference
from vm_dynamics.control.references import reference_from_config
from vm_dynamics.ros import messages as rm

REPO = Path(__file__).resolve().parents[2]
PARAMS = REPO / "config" / "spacecraft_arm.yaml"
SIM_SECONDS = 9.0         # the deployment takes 8 s
STALL_S = 120.0           # no new state for this long = the loop is stuck
#: each node's own section (a node taking the other's would show: ee_path of 40 poses, or
#: the computed-torque controller)
PER_NODE = """dynamics_node:
  ros__parameters:
    ee_path_length: 4
    controller: {name: computed_torque}
controller_node:
  ros__parameters:
    ee_path_length: 40
    controller: {name: %s}
"""


def _composed(env, log, per_node: Path, *extra):
    return subprocess.Popen([sys.executable, "-m", "vm_dynamics.nodes.composed", "--ros-args",
                             "--params-file", str(PARAMS), "--params-file", str(per_node),
                             "-p", "lockstep:=true", "-p", "real_time_factor:=0.0",
                             "-p", "path_rate:=50.0", *extra],
                            env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)


@pytest.fixture
def outside(monkeypatch):
    env = dds_env(20 + os.getpid() % 60)
    for k in ("CYCLONEDDS_URI", "ROS_DOMAIN_ID", "VM_DYNAMICS_TRANSPORT"):
        monkeypatch.setenv(k, env[k])
    from vm_dynamics.transport.dds import DdsTransport
    t = DdsTransport("outside", {}, ["outside"])
    yield t, env
    t.shutdown()


def test_composed_lockstep_tracks_answers_every_state_and_publishes_on_dds(outside, tmp_path):
    t, env = outside
    cfg = read_params_file(PARAMS)
    ref = reference_from_config(unflatten_reference(cfg["reference"], len(cfg["joints"])))
    period_ns = round(1e9 / float(cfg["control_rate"]))
    states, commands, seen = [], set(), {"odom": 0, "clock": 0, "tf": 0}
    paths = []

    def on_state(msg):
        js = rm.parse_joint_state(msg)
        states.append((js.stamp_ns, float(np.max(np.abs(ref.joint(js.stamp_ns * 1e-9)[0]
                                                         - js.position)))))

    def count(key):
        def cb(msg):
            seen[key] += 1
        return cb
    from vm_dynamics.transport import QosSpec
    deep = QosSpec(reliable=True, transient_local=False, depth=100_000)
    t.subscribe("/joint_states", rm.JOINT_STATE, on_state, deep)
    t.subscribe("/joint_commands", rm.JOINT_STATE,
                lambda m: commands.add(rm.time_msg_to_ns(m.header.stamp)), deep)
    t.subscribe("/odom", rm.ODOMETRY, count("odom"), "sensor")
    t.subscribe("/clock", rm.CLOCK, count("clock"), "clock")
    t.subscribe("/tf", rm.TF_MESSAGE, count("tf"), "default")
    t.subscribe("/ee_path", "nav_msgs/msg/Path", lambda m: paths.append(len(m.poses)), "default")
    per_node = tmp_path / "per_node.yaml"
    per_node.write_text(PER_NODE % "computed_torque")
    log = open(tmp_path / "composed.log", "w")
    procs = [_composed(env, log, per_node)]
    try:
        last_progress, n = time.monotonic(), 0
        while time.monotonic() < last_progress + STALL_S:
            t.spin_once(0.05)
            if states and states[-1][0] >= SIM_SECONDS * 1e9:
                break
            if len(states) > n:
                last_progress, n = time.monotonic(), len(states)
            assert procs[0].poll() is None, (tmp_path / "composed.log").read_text()[-3000:]
        t.spin_until(lambda: False, 0.5)                      # the last commands
        text = (tmp_path / "composed.log").read_text()
        assert states and states[-1][0] >= SIM_SECONDS * 1e9, (states[-1:], text[-3000:])
        stamps = np.array([s for s, _ in states])
        # the outside reader joined before the first state: every period, in order (a state
        # is sent again while its answer is awaited: at the start, before the controller
        # node's subscriptions exist, as in two processes)
        assert np.all(np.diff(stamps) >= 0)
        assert np.all(np.diff(np.unique(stamps)) == period_ns), np.unique(np.diff(stamps))
        # every state the outside reader saw was answered by a command of its stamp
        missing = [s for s in stamps[:-1] if s not in commands]
        assert not missing, missing[:5]
        e = np.array(states, dtype=float)
        assert e[:, 1].max() < 5e-3, e[e[:, 1].argmax()]        # tracks the deployment
        assert min(seen.values()) > 0, seen                    # odom, /clock, /tf on DDS
        assert paths and max(paths) <= 4, paths[-5:]           # the dynamics node's section
        assert "controller 'computed_torque'" in text
        assert "Traceback" not in text, text[-3000:]
    finally:
        stop_processes(procs, [log])


def test_each_node_takes_its_own_section_and_a_bad_one_ends_the_process(outside, tmp_path):
    t, env = outside
    per_node = tmp_path / "per_node.yaml"
    per_node.write_text(PER_NODE % "no_such_controller")
    log_path = tmp_path / "composed.log"
    with open(log_path, "w") as log:
        p = _composed(env, log, per_node)
        try:
            rc = p.wait(600)
        finally:
            stop_processes([p])
    text = log_path.read_text()
    # as controller_node in a process of its own: its error line, exit code 2
    assert rc == 2, text[-3000:]
    errors = [line for line in text.splitlines() if line.startswith("controller_node: error:")]
    assert errors and "no_such_controller" in errors[0], text
    assert "Traceback" not in text, text[-3000:]


def test_ctrl_c_ends_the_composed_nodes_cleanly(outside, tmp_path):
    t, env = outside
    per_node = tmp_path / "per_node.yaml"
    per_node.write_text(PER_NODE % "computed_torque")
    argv = [sys.executable, "-m", "vm_dynamics.nodes.composed", "--ros-args", "--params-file",
            str(PARAMS), "--params-file", str(per_node), "-p", "lockstep:=true",
            "-p", "real_time_factor:=0.0"]
    rc, text = signal_when_logged(argv, env, tmp_path / "composed.log",
                                  "controller 'computed_torque'", signal.SIGINT, after=2.0,
                                  cwd=REPO, timeout=600.0)
    assert rc == 0, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
