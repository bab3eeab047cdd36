"""The default launch as a ROS user runs it: ``ros2 launch vm_dynamics sim.launch.py
rviz:=false`` on the installed package (``colcon test`` in a sourced workspace), with the real
robot_state_publisher and tf2.  Skipped where ROS 2, tf2_ros, robot_state_publisher or the
installed vm_dynamics package are missing.

Both ways the launch runs the pair: two processes (the default) and ``composed:=true``
(``composed_nodes``: both nodes in one process on one executor).  Checked: the closed loop
tracks the scenario's reference; while the simulation is paused, a TF listener that starts
only then still gets the whole tree ``odom -> base_link -> ... -> ee_link``
(robot_state_publisher publishes TF only for a joint state stamped
``1/publish_frequency`` after its last one unless ``ignore_timestamp``, and the paused
heartbeats advance the stamp by nanoseconds); Ctrl-C ends the launch with exit code 0."""
import os
import shutil
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest
from ros_domain import installed_share, ros_domain_env, spin_until

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed")
tf2_ros = pytest.importorskip("tf2_ros", reason="tf2_ros (ROS 2) is not installed")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def launch_env(monkeypatch):
    if shutil.which("ros2") is None:
        pytest.skip("the ros2 command is not on PATH (source a ROS 2 installation)")
    for package in ("vm_dynamics", "robot_state_publisher"):
        if installed_share(package) is None:
            pytest.skip(f"package {package!r} is not installed in the sourced workspace "
                        "(colcon build, then source install/setup.bash)")
    # the probe node below joins the domain too
    return dict(ros_domain_env(monkeypatch), PYTHONUNBUFFERED="1")


@pytest.mark.parametrize("arguments", [[], ["composed:=true"]], ids=["two_processes", "composed"])
def test_default_launch_tracks_and_a_new_tf_listener_joins_the_tree_while_paused(
        launch_env, tmp_path, arguments):
    from rclpy.time import Time
    from sensor_msgs.msg import JointState
    from std_srvs.srv import SetBool

    from vm_dynamics.config.params import read_params_file, unflatten_reference
    from vm_dynamics.control.references import reference_from_config

    cfg = read_params_file(Path(installed_share("vm_dynamics")) / "config" / "spacecraft_arm.yaml")
    ref = reference_from_config(unflatten_reference(cfg["reference"], len(cfg["joints"])))
    log_path = tmp_path / "launch.log"
    log = open(log_path, "w")
    # SIGINT at its default action (a job started with & from a non-interactive shell
    # inherits it ignored), in a process group of its own: Ctrl-C goes to the whole group
    launch = subprocess.Popen(
        ["python3", "-c", "import signal, os, sys; signal.signal(signal.SIGINT, "
         "signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])",
         "ros2", "launch", "vm_dynamics", "sim.launch.py", "rviz:=false", *arguments],
        env=launch_env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
        start_new_session=True)
    rclpy.init()
    node = rclpy.create_node("vm_dynamics_launch_probe")
    errors = []

    def on_js(m):
        if not set(cfg["joints"]) <= set(m.name):
            return        # another simulation on this domain (e.g. test_rclpy_real's rover)
        t = m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
        q = np.array([m.position[list(m.name).index(j)] for j in cfg["joints"]])
        errors.append((t, float(np.max(np.abs(ref.joint(t)[0] - q)))))
    node.create_subscription(JointState, "/joint_states", on_js, 100)

    def text():
        return log_path.read_text(errors="replace")
    try:
        # a fresh install tree compiles the kernels at the first start (minutes on a loaded
        # machine): wait for the motion itself, not for a speed
        assert spin_until(node, lambda: errors and errors[-1][0] >= 4.0, 900.0), text()
        # lockstep by default: the computed-torque loop tracks whatever the machine's load
        assert max(e for _, e in errors) < 1e-3, (max(errors, key=lambda r: r[1]), text())
        pause = node.create_client(SetBool, "/dynamics_node/pause")
        assert pause.wait_for_service(timeout_sec=60.0)
        fut = pause.call_async(SetBool.Request(data=True))
        assert spin_until(node, fut.done, 60.0) and fut.result().success, text()
        spin_until(node, lambda: False, 1.0)     # what was on its way before the pause
        # a TF listener that starts now, while nothing moves
        buffer = tf2_ros.Buffer()
        listener = tf2_ros.TransformListener(buffer, node, spin_thread=False)
        joined = spin_until(node, lambda: buffer.can_transform("odom", "ee_link", Time()),
                             60.0)
        assert joined, (buffer.all_frames_as_string(), text())
        tf = buffer.lookup_transform("odom", "ee_link", Time())
        assert np.isfinite([tf.transform.translation.x, tf.transform.translation.y,
                            tf.transform.translation.z]).all()
        del listener
        fut = pause.call_async(SetBool.Request(data=False))
        assert spin_until(node, fut.done, 60.0) and fut.result().success, text()
    finally:
        node.destroy_node()
        rclpy.shutdown()
        if launch.poll() is None:
            os.killpg(launch.pid, signal.SIGINT)          # Ctrl-C in the launch's terminal
        try:
            code = launch.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(launch.pid, signal.SIGKILL)
            code = launch.wait()
        log.close()
    out = text()
    assert code == 0, out
    assert "Traceback" not in out and "energy balance violated" not in out, out
