"""``vm-send``: commands to the running nodes without ROS.  Against a real dynamics_node process
on the DDS transport, an effort sent once is applied (it comes back in ``joint_states.effort``)
and a refreshed wrench moves the vehicle; malformed input is refused with one line naming the
argument before anything is sent; no node: exit code 1 naming the topic."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from processes import dds_env, stop_processes

pytest.importorskip("cyclonedds")

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
DOMAIN = int(os.environ.get("ROS_DOMAIN_ID", "77"))


def send(*argv, env=None, timeout=180):
    return subprocess.run([PY, "-m", "vm_dynamics.app.send", *argv], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env or dds_env(DOMAIN))


@pytest.mark.parametrize("argv, message", [
    (["effort", "1,x"], "vm-send: error: efforts: 'x' (item 1) is not a number"),
    (["effort", "1,nan"], "vm-send: error: efforts: item 1 is nan, not a finite number"),
    (["wrench", "1,2,3"], "vm-send: error: wrench FX,FY,FZ,TX,TY,TZ: expected 6 values, got 3"),
    (["pose", "1", "2", "3", "--orientation", "0,0,0,2"],
     "vm-send: error: --orientation: not a unit quaternion (norm 2)"),
    (["joint-trajectory", "--joints", "a,b", "--point", "1:0.1"],
     "vm-send: error: --point '1:0.1': positions: expected 2 values, got 1"),
    (["joint-trajectory", "--joints", "a,b", "--point", "2:0,0", "--point", "1:0,0"],
     "vm-send: error: --point '1:0,0': time 1 must be >= 0 and after the previous point's"),
    (["joint-trajectory", "--joints", "a,a", "--point", "1:0,0"],
     "vm-send: error: --joints: duplicate joint name(s) ['a']"),
    (["effort", "1", "--rate", "10"],
     "vm-send: error: --rate and --for go together (repeat HZ times per second for S s)"),
    (["teleport", "1"], "vm-send: error: argument COMMAND: invalid choice: 'teleport'"),
])
def test_malformed_input_is_one_line_naming_the_argument(argv, message):
    p = send(*argv, "--wait", "0")
    assert p.returncode == 2 and p.stdout == "", (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), p.stderr


def test_help_names_every_command():
    p = send("--help")
    assert p.returncode == 0
    for cmd in ("joint-trajectory", "pose", "effort", "wrench"):
        assert cmd in p.stdout


def test_no_node_is_exit_1_naming_the_topic():
    env = dds_env(DOMAIN + 1 if DOMAIN < 200 else DOMAIN - 1)   # a domain with no node
    p = send("effort", "1,2", "--wait", "1", env=env)
    assert p.returncode == 1
    assert "no subscriber on /effort_controller/commands after 1 s" in p.stderr


def test_efforts_and_wrenches_sent_reach_the_dynamics_node(tmp_path, monkeypatch):
    from vm_dynamics.ros import messages as rm
    from vm_dynamics.transport.dds import DdsTransport
    env = dds_env(DOMAIN)
    for k in ("CYCLONEDDS_URI", "ROS_DOMAIN_ID", "VM_DYNAMICS_TRANSPORT"):
        monkeypatch.setenv(k, env[k])
    log = open(tmp_path / "dyn.log", "w")
    # no gravity, no controller: the arm and the rover move only under what vm-send sends
    node = subprocess.Popen([PY, "-m", "vm_dynamics.nodes.dynamics_node", "--ros-args",
                             "--params-file", str(ROOT / "config" / "planar_rover.yaml"),
                             "-p", "dynamics_backend:=lp", "-p", "dt:=0.01",
                             "-p", "gravity:=[0.0, 0.0, 0.0]", "-p", "command_timeout:=5.0"],
                            env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    seen = {"effort": [], "x": []}

    def on_state(msg):
        seen["effort"].append(np.array(rm.parse_joint_state(msg).effort, dtype=float))

    def on_odom(msg):
        seen["x"].append(float(rm.parse_odometry(msg).g[0, 3]))

    listener = DdsTransport("send_test_listener", {}, ["send_test_listener"])
    try:
        listener.subscribe("/joint_states", rm.JOINT_STATE, on_state, qos="sensor")
        listener.subscribe("/odom", rm.ODOMETRY, on_odom, qos="sensor")
        assert listener.spin_until(lambda: len(seen["x"]) > 0, 180.0), \
            (tmp_path / "dyn.log").read_text()
        p = send("effort", "1.5,-0.5", "--wait", "60")
        assert p.returncode == 0, p.stderr
        assert "sent 1 std_msgs/msg/Float64MultiArray on /effort_controller/commands" in p.stdout
        assert listener.spin_until(
            lambda: any(e.shape == (2,) and np.allclose(e, [1.5, -0.5]) for e in seen["effort"]),
            60.0), (seen["effort"][-3:], (tmp_path / "dyn.log").read_text())
        x0 = seen["x"][-1]
        p = send("wrench", "20,0,0,0,0,0", "--frame", "odom", "--rate", "20", "--for", "1",
                 "--wait", "60")
        assert p.returncode == 0, p.stderr
        assert listener.spin_until(lambda: seen["x"][-1] > x0 + 1e-3, 60.0), \
            (x0, seen["x"][-3:], (tmp_path / "dyn.log").read_text())
        assert node.poll() is None
    finally:
        listener.shutdown()
        stop_processes([node], [log])
    assert "rejected" not in (tmp_path / "dyn.log").read_text().lower()


def test_a_joint_trajectory_sent_is_followed_by_the_controller_node(tmp_path, monkeypatch):
    """Both nodes of planar_rover; the trajectory takes joint1 to 1.0 rad (the scenario's
    sinusoid stays within 0.3 ± 0.5): joint_states reaches it, whatever the nodes' pace."""
    from vm_dynamics.ros import messages as rm
    from vm_dynamics.transport.dds import DdsTransport
    env = dds_env(DOMAIN)
    for k in ("CYCLONEDDS_URI", "ROS_DOMAIN_ID", "VM_DYNAMICS_TRANSPORT"):
        monkeypatch.setenv(k, env[k])
    params = str(ROOT / "config" / "planar_rover.yaml")
    logs = [open(tmp_path / f"{n}.log", "w") for n in ("dyn", "ctrl")]
    procs = [subprocess.Popen([PY, "-m", f"vm_dynamics.nodes.{n}", "--ros-args", "--params-file",
                               params, "-p", "dynamics_backend:=lp", "-p", "dt:=0.01"],
                              env=env, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
             for n, fh in zip(("dynamics_node", "controller_node"), logs)]
    q1 = []
    listener = DdsTransport("send_test_listener", {}, ["send_test_listener"])

    def text():
        return "\n".join((tmp_path / f"{n}.log").read_text() for n in ("dyn", "ctrl"))
    try:
        listener.subscribe("/joint_states", rm.JOINT_STATE,
                           lambda m: q1.append(float(rm.parse_joint_state(m).position[0])),
                           qos="sensor")
        assert listener.spin_until(lambda: len(q1) > 0, 180.0), text()
        p = send("joint-trajectory", "--joints", "joint1", "--point", "2:1.0", "--wait", "120")
        assert p.returncode == 0, p.stderr
        assert "on /controller_node/joint_trajectory" in p.stdout
        assert listener.spin_until(lambda: abs(q1[-1] - 1.0) < 0.05, 120.0), (q1[-3:], text())
        assert all(pr.poll() is None for pr in procs)
    finally:
        listener.shutdown()
        stop_processes(procs, logs)
    assert "rejected" not in text().lower()
