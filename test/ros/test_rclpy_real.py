"""The nodes on the real rclpy transport, wherever ROS 2 is installed (e.g. `colcon test` in a
sourced ROS 2 workspace).  Without rclpy these tests are skipped: the same code paths are
exercised against the strict stand-in in test_transport.py / test_node_logic.py.

Two processes (dynamics node + controller node on rclpy, loopback-only Cyclone DDS, own domain)
and a plain rclpy node in this process that checks topics, types, the closed loop, the
services and the watchdog.  The node processes run with ``rosbags`` blocked (an import of it
fails), so they prove that the rclpy path needs only rosdep-resolvable packages.  Ctrl-C: a
SIGINT and a second one during shutdown end a node with exit code 0 and no traceback."""
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from ros_domain import ros_domain_env, spin_until

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def ros_env(monkeypatch):
    return ros_domain_env(monkeypatch, VM_DYNAMICS_TRANSPORT="rclpy")


def test_nodes_on_real_rclpy_closed_loop_services_and_watchdog(ros_env, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray
    from nav_msgs.msg import Odometry
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from std_srvs.srv import SetBool, Trigger

    params = str(REPO / "config" / "planar_rover.yaml")
    # free-running (no lockstep: the watchdog below is a free-running feature) at a quarter of
    # real time, so the loop's delay in simulated time stays small on a busy machine (at real
    # time and load 10 the delayed computed-torque loop diverged the rover within 5 s)
    common = ["--ros-args", "--params-file", params, "-p", "dt:=0.005",
              "-p", "command_timeout:=0.3", "-p", "real_time_factor:=0.25"]
    procs, logs = {}, {}
    rclpy.init()
    node = rclpy.create_node("vm_dynamics_test_probe")
    got = {k: [] for k in ("js", "odom", "clock", "cmd", "diag")}
    node.create_subscription(JointState, "/joint_states", lambda m: got["js"].append(m), 10)
    node.create_subscription(Odometry, "/odom", lambda m: got["odom"].append(m), 10)
    node.create_subscription(Clock, "/clock", lambda m: got["clock"].append(m),
                             rclpy.qos.qos_profile_sensor_data)
    node.create_subscription(Float64MultiArray, "/effort_controller/commands",
                             lambda m: got["cmd"].append(m), 10)
    node.create_subscription(DiagnosticArray, "/diagnostics", lambda m: got["diag"].append(m), 10)
    try:
        for name, mod in (("dyn", "vm_dynamics.nodes.dynamics_node"),
                          ("ctl", "vm_dynamics.nodes.controller_node")):
            logs[name] = open(tmp_path / f"{name}.log", "w")
            code = ("import sys, importlib; sys.modules['rosbags'] = None; "
                    f"sys.exit(importlib.import_module({mod!r}).main(sys.argv))")
            procs[name] = subprocess.Popen([sys.executable, "-c", code, *common], env=ros_env,
                                           cwd=REPO, stdout=logs[name], stderr=subprocess.STDOUT)

        def log():
            return "\n".join((tmp_path / f"{n}.log").read_text() for n in logs)

        # a fresh install tree compiles the kernels at the first start (minutes on a loaded
        # machine): wait for the loop itself, not for a speed
        assert spin_until(node, lambda: len(got["cmd"]) > 50 and len(got["js"]) > 50,
                           600.0), log()
        js = got["js"][-1]
        assert list(js.name) == ["joint1", "joint2"] and len(js.effort) == 2
        assert got["odom"][-1].header.frame_id == "odom" and got["clock"]
        assert len(got["cmd"][-1].data) == 2
        # closed loop: the rover arm follows the scenario's sinusoid (computed torque)
        from vm_dynamics.config.scenario import load_scenario
        from vm_dynamics.control.references import reference_from_config
        ref = reference_from_config(load_scenario("planar_rover").reference).joint

        def err():
            m = got["js"][-1]
            t = m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
            return float(np.linalg.norm(ref(t)[0] - np.array(m.position)))
        assert spin_until(node, lambda: err() < 2e-2, 60.0), (err(), log())
        # services: pause stops the clock, unpause resumes, reset returns to t = 0
        pause = node.create_client(SetBool, "/dynamics_node/pause")
        reset = node.create_client(Trigger, "/dynamics_node/reset")
        assert pause.wait_for_service(timeout_sec=20.0) and reset.wait_for_service(timeout_sec=20.0)
        fut = pause.call_async(SetBool.Request(data=True))
        assert spin_until(node, fut.done, 20.0) and fut.result().success
        spin_until(node, lambda: False, 0.5)
        n_clock = len(got["clock"])
        t_paused = got["clock"][-1].clock.sec + 1e-9 * got["clock"][-1].clock.nanosec
        spin_until(node, lambda: False, 1.0)
        later = got["clock"][n_clock:] if len(got["clock"]) > n_clock else []
        # paused: simulated time stands (each heartbeat is stamped 1 ns later; see
        # DynamicsCore.stamp_ns, and test_sim_launch_real.py for a TF listener joining now)
        assert all(0 <= c.clock.sec + 1e-9 * c.clock.nanosec - t_paused < 1e-6 for c in later)
        fut = pause.call_async(SetBool.Request(data=False))
        assert spin_until(node, fut.done, 20.0) and fut.result().success
        fut = reset.call_async(Trigger.Request())
        assert spin_until(node, fut.done, 20.0) and fut.result().success
        # after the reset (sim time back to 0) the controller keeps commanding
        n_cmd = len(got["cmd"])
        assert spin_until(node, lambda: len(got["cmd"]) > n_cmd + 50, 30.0), log()
        # watchdog: kill the controller; the simulation keeps publishing and reports it
        procs["ctl"].kill()
        procs["ctl"].wait(timeout=20)
        n_js = len(got["js"])

        def watchdog_tripped():
            for arr in got["diag"][-3:]:
                for st in arr.status:
                    if "watchdog" in st.name and any(kv.key == "state" and kv.value == "tripped"
                                                     for kv in st.values):
                        return True
            return False
        assert spin_until(node, lambda: watchdog_tripped() and len(got["js"]) > n_js + 20,
                           30.0), log()
        assert procs["dyn"].poll() is None, log()
        # Ctrl-C as under ros2 launch: SIGINT, and a second one while shutting down
        import signal
        procs["dyn"].send_signal(signal.SIGINT)
        time.sleep(0.02)
        if procs["dyn"].poll() is None:
            procs["dyn"].send_signal(signal.SIGINT)
        assert procs["dyn"].wait(timeout=30) == 0, log()
        dyn_log = (tmp_path / "dyn.log").read_text()
        assert "Traceback" not in dyn_log and "KeyboardInterrupt" not in dyn_log, dyn_log
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
        for f in logs.values():
            f.close()
        node.destroy_node()
        rclpy.shutdown()


@pytest.mark.parametrize("module", ["vm_dynamics.nodes.dynamics_node",
                                    "vm_dynamics.nodes.controller_node"])
def test_sigterm_ends_a_node_on_rclpy_with_exit_0(module, ros_env, tmp_path):
    """SIGTERM (a process supervisor, or ``ros2 launch`` escalating) ends a spinning node on
    rclpy like Ctrl-C: exit code 0, no traceback (it was killed by the default action, -15,
    because the start-up left SIGTERM without a handler)."""
    import signal

    from processes import signal_when_logged
    params = str(REPO / "config" / "planar_rover.yaml")
    code = ("import sys, importlib; sys.modules['rosbags'] = None; "
            f"sys.exit(importlib.import_module({module!r}).main(sys.argv))")
    rc, text = signal_when_logged(
        [sys.executable, "-c", code, "--ros-args", "--params-file", params], ros_env,
        tmp_path / "node.log", "INFO", signal.SIGTERM, after=1.0, cwd=REPO, timeout=120.0)
    assert rc == 0 and "Traceback" not in text and "KeyboardInterrupt" not in text, (rc, text)
