"""Hostile and careless input to the controller, and callbacks that fail.

In-process (ControllerCore with the LP backend's DynamicsCore as the plant): partial
trajectories stay one level deep whatever their number; targets beyond the URDF joint limits
are rejected naming the joint; a state older than the latest is ignored unless ROS time went
back too (a simulation reset).  Transports (DDS in-process, rclpy stand-in): no exception of a
subscription, timer or service callback ends the node.  Processes over loopback DDS: the
controller survives 2 000 partial trajectories and then follows the last one; a spoofed old
joint state keeps the trajectory while ``~/reset`` still re-initialises; two simulations on
one domain are reported by both and by the controller.

Oracles: the trajectories sent (their targets and the URDF limits they violate), the
scenario's reference (:mod:`vm_dynamics.control.references`), the publisher count a test sets
up; nothing here depends on timing except time-outs.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import numpy as np
import pytest
from node_cores import TRAJ, rover_reference, scenario, traj
from processes import REPO, dds_env, stop_processes

from vm_dynamics.nodes.controller_core import ControllerCore, PartialJointReference
from vm_dynamics.nodes.dynamics_core import DynamicsCore
from vm_dynamics.ros import messages as rm

T = rm.TYPESTORE.types


def feed(dyn, ctrl, now=None):
    """The dynamics core's current state to the controller (with ROS time ``now``)."""
    out = []
    for key, msg in dyn.state_messages():
        if key == "joint_states":
            out.append(ctrl.on_joint_state(msg, now))
        elif key == "odom":
            out.append(ctrl.on_odometry(msg, now))
    return out


def run(dyn, ctrl, until):
    """Closed loop to simulated time ``until``, ROS time = simulated time."""
    while dyn.t < until - 1e-9:
        assert all(feed(dyn, ctrl, dyn.t))
        for key, msg in ctrl.command_messages(dyn.t):
            dyn.apply_command(key, msg)
        assert dyn.run(dyn.steps_per_period) == dyn.steps_per_period, dyn.error


# ------------------------------------------------------------------ partial trajectories
def test_partial_trajectories_stay_one_level_deep_with_bounded_memory():
    p = scenario("planar_rover", dt=0.005)
    dyn, ctrl = DynamicsCore.from_params(p), ControllerCore.from_params(p)
    run(dyn, ctrl, 0.1)
    now = ctrl.now_ref()
    first = traj(["joint1"], [[0.8]], [1.0])
    assert ctrl.on_joint_trajectory(first), ctrl.last_error
    mid = ctrl.reference.joint(now + 0.5)[0][0]           # joint1 half-way to 0.8
    assert ctrl.on_joint_trajectory(traj(["joint2"], [[-0.5]], [1.0])), ctrl.last_error
    ref = ctrl.reference.joint
    assert isinstance(ref, PartialJointReference) and ref.base is None   # both overridden
    assert ref(now + 0.5)[0][0] == mid                    # joint1 keeps its trajectory
    np.testing.assert_allclose(ref(now + 2.0)[0], [0.8, -0.5])
    sizes = {}
    for k in range(2000):                                  # ~500 used to kill the node
        target = 0.1 + 1e-4 * k
        assert ctrl.on_joint_trajectory(traj(["joint1"], [[target]], [1.0])), ctrl.last_error
        ref = ctrl.reference.joint
        assert isinstance(ref, PartialJointReference) and len(ref.pieces) <= 2
        assert all(not isinstance(wp, PartialJointReference) for _, wp, _ in ref.pieces)
        if k in (10, 1999):
            sizes[k] = len(pickle.dumps(ref))
    assert sizes[1999] == sizes[10], sizes                 # memory independent of the count
    np.testing.assert_allclose(ctrl.reference.joint(now + 2.0)[0], [0.1 + 0.1999, -0.5])
    run(dyn, ctrl, 2.0)
    assert abs(dyn.q[0] - 0.2999) < 5e-3 and abs(dyn.q[1] + 0.5) < 5e-3


# ------------------------------------------------------------------ joint limits
def test_targets_beyond_the_urdf_joint_limits_are_rejected_naming_the_joint():
    """planar_rover: joint1, joint2 revolute, limits ±π rad, velocity limit 2 rad/s."""
    p = scenario("planar_rover", dt=0.005)
    dyn, ctrl = DynamicsCore.from_params(p), ControllerCore.from_params(p)
    run(dyn, ctrl, 0.1)
    before = ctrl.reference
    cases = [
        (traj(["joint1"], [[1e200]], [1.0]),
         "joint 'joint1': points[0].positions = 1e+200 is outside the URDF limits "
         "[-3.14159, 3.14159]"),
        (traj(["joint2", "joint1"], [[0.1, 0.2], [0.1, -3.5]], [1.0, 2.0]),
         "joint 'joint1': points[1].positions = -3.5 is outside the URDF limits"),
        (traj(["joint1"], [[1e6]], [1.0]), "points[0].positions = 1e+06 is outside"),
        (traj(["joint1"], [[3.0]], [1.0]),                 # mean 2.7 rad/s, peak ~5
         "joint 'joint1': the interpolated motion reaches"),
        (traj(["joint2"], [[0.5], [0.6]], [1.0, 2.0], velocities=[[2.5], [0.0]]),
         "joint 'joint2': points[0].velocities = 2.5, above the URDF velocity limit 2"),
        (traj(["joint2"], [[0.5], [0.6]], [1.0, 2.0], velocities=[[0.0], [0.0]],
              accelerations=[[1e200], [0.0]]),
         "joint 'joint2': the interpolated motion reaches"),
    ]
    for msg, text in cases:
        assert not ctrl.on_joint_trajectory(msg)
        assert text in ctrl.last_error, (text, ctrl.last_error)
        assert ctrl.reference is before
    far = T["geometry_msgs/msg/PoseStamped"](header=rm.header_msg(0.0, "odom"),
                                              pose=rm.pose_msg(np.eye(4)))
    far.pose.position.x = 1e200
    assert not ctrl.on_base_pose(far)
    assert "position [1e+200, 0.0, 0.0] is beyond position_bound ±1e+06 m" in ctrl.last_error
    assert ctrl.reference is before
    warned = [t for lvl, _, t in ctrl.log.records if lvl == "WARN"]
    assert any("1e+200 is outside the URDF limits" in t for t in warned)
    # the velocity limit is what the controller will follow: 1 rad in 1 s peaks at
    # 1.875 rad/s (accepted), 1 rad in 0.9 s at 2.08 rad/s (rejected)
    q1 = ctrl.reference.joint(ctrl.now_ref())[0][0]
    v1 = ctrl.reference.joint(ctrl.now_ref())[1][0]
    assert abs(v1) > 0.5                                  # the sinusoid is moving
    ctrl.reference = before
    assert not ctrl.on_joint_trajectory(traj(["joint1"], [[q1 + 1.0]], [0.5]))
    assert ctrl.on_joint_trajectory(traj(["joint1"], [[min(q1 + 1.0, 3.0)]], [3.0])), \
        ctrl.last_error
    run(dyn, ctrl, 3.5)
    assert not dyn.paused and abs(dyn.q[0] - min(q1 + 1.0, 3.0)) < 1e-2


def test_continuous_joints_have_a_position_bound_and_their_velocity_limit():
    """satellite_wheels: continuous wheel joints (no position limits), velocity 628.3 rad/s."""
    p = scenario("satellite_wheels", dt=0.005, controller="pd_gravity",
                 joint_source="simulated")
    ctrl = ControllerCore.from_params(p)
    names = ctrl.model.joint_names
    assert ctrl.on_joint_state(rm.joint_state_msg(0.1, names, np.zeros(3), np.zeros(3)))
    assert ctrl.on_odometry(rm.odometry_msg(0.1, np.eye(4), np.zeros(6), "odom",
                                            ctrl.robot.base_frame))
    assert not ctrl.on_joint_trajectory(traj([names[0]], [[2e6]], [1e5]))
    assert (f"joint {names[0]!r}: points[0].positions = 2e+06 is outside position_bound "
            f"±1e+06 (the joint has no URDF position limits)") in ctrl.last_error
    assert not ctrl.on_joint_trajectory(traj([names[1]], [[1e5]], [1.0]))
    assert f"joint {names[1]!r}: the interpolated motion reaches" in ctrl.last_error
    assert "URDF velocity limit 628.3" in ctrl.last_error
    assert ctrl.on_joint_trajectory(traj([names[0]], [[1000.0]], [10.0])), ctrl.last_error
    bounded = ControllerCore.from_params(dict(p, position_bound=100.0))
    assert bounded.on_joint_state(rm.joint_state_msg(0.1, names, np.zeros(3), np.zeros(3)))
    assert bounded.on_odometry(rm.odometry_msg(0.1, np.eye(4), np.zeros(6), "odom",
                                               ctrl.robot.base_frame))
    assert not bounded.on_joint_trajectory(traj([names[0]], [[1000.0]], [10.0]))
    with pytest.raises(ValueError, match="position_bound"):
        ControllerCore.from_params(dict(p, position_bound=float("inf")))


# ------------------------------------------------------------------ time order of the state
class Wall:
    """The controller's wall clock, driven by the test."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_an_older_state_is_ignored_unless_ros_time_went_back():
    p = scenario("planar_rover", dt=0.005)
    wall = Wall()
    dyn = DynamicsCore.from_params(p)
    ctrl = ControllerCore(dyn.robot, p, clock=wall)
    names = ctrl.model.joint_names
    run(dyn, ctrl, 0.5)
    assert ctrl.on_joint_trajectory(traj(names, [[0.9, -0.5]], [1.0]))
    ref = ctrl.reference
    # a spoofed (or replayed) state, stamped before the latest, ROS time still at 0.5 s
    spoof = rm.joint_state_msg(0.1, names, np.zeros(2), np.zeros(2))
    assert not ctrl.on_joint_state(spoof, now=0.5)
    old_odom = rm.odometry_msg(0.1, np.eye(4), np.zeros(6), "odom", ctrl.robot.base_frame)
    assert not ctrl.on_odometry(old_odom, now=0.5)
    assert ctrl.reference is ref and ctrl.ignored == 2 and ctrl.resets == 0
    assert ctrl.state().t == pytest.approx(0.495)         # the latest state still used
    assert any("ignored a joint state stamped 0.1 s, older than the latest accepted one "
               "(0.495 s)" in t for _, _, t in ctrl.log.records)
    run(dyn, ctrl, 1.5)
    assert ctrl.reference is ref
    np.testing.assert_allclose(dyn.q, [0.9, -0.5], atol=2e-2)
    # while another source of the state is seen, time going back is no reset either
    ctrl.competing_sources = True
    assert not ctrl.on_joint_state(spoof, now=0.1)
    ctrl.competing_sources = False
    # a simulation reset: the state and ROS time go back together
    dyn.reset()
    assert all(feed(dyn, ctrl, 0.0))
    assert ctrl.resets == 1 and ctrl.reference is ctrl.scenario_reference
    assert any("(simulation reset): controller re-initialised" in t
               for _, _, t in ctrl.log.records)
    run(dyn, ctrl, 0.2)
    # a state stamped in the future is taken (newer), the real ones are then older; once no
    # newer state came for the resync period (max(state_timeout, 1 s) of wall time) the
    # controller re-synchronises on them
    future = rm.joint_state_msg(100.0, names, dyn.q, dyn.qd)
    wall.now = 0.2
    assert ctrl.on_joint_state(future, now=0.2)
    taken = []
    while dyn.t < 1.5 - 1e-9:
        wall.now = dyn.t
        taken.append((dyn.t, feed(dyn, ctrl, dyn.t)[0]))
        dyn.run(dyn.steps_per_period)
    first = next(t for t, ok in taken if ok)
    assert all(not ok for t, ok in taken if t < first) and all(ok for t, ok in taken
                                                               if t >= first)
    assert 1.2 - 1e-9 <= first <= 1.26 and ctrl.resets == 2
    assert any("re-synchronised on the states" in t for _, _, t in ctrl.log.records)


def test_joint_states_naming_too_many_joints_are_rejected():
    ctrl = ControllerCore.from_params(scenario("planar_rover", max_joint_state_names=5))
    names = ctrl.model.joint_names + [f"extra{k}" for k in range(4)]
    assert not ctrl.on_joint_state(rm.joint_state_msg(0.1, names, np.zeros(6), np.zeros(6)))
    assert "name has 6 entries, more than max_joint_state_names=5" in ctrl.last_error
    assert ctrl.on_joint_state(rm.joint_state_msg(0.1, names[:5], np.zeros(5), np.zeros(5)))


# ------------------------------------------------------------------ failing callbacks
@pytest.fixture
def domain(monkeypatch):
    d = int(os.environ.get("VM_TEST_DOMAIN", 150 + os.getpid() % 60))
    env = dds_env(d)
    for k in ("CYCLONEDDS_URI", "ROS_DOMAIN_ID", "VM_DYNAMICS_TRANSPORT"):
        monkeypatch.setenv(k, env[k])
    return d, env


def test_dds_callbacks_that_raise_do_not_end_the_node(domain):
    from vm_dynamics.transport.dds import DdsTransport
    t = DdsTransport("victim", {}, ["victim"])
    try:
        def crash(msg):
            raise RecursionError("maximum recursion depth exceeded")
        sub = t.subscribe("/x", rm.CLOCK, crash)
        data = rm.serialize(rm.clock_msg(1.0))
        for k in range(3):
            assert sub.handle_raw(data) is False
        assert t.callback_failures == 3
        errors = [m for lvl, m in t.logger.records if lvl == "ERROR"]
        assert len(errors) == 1, errors                       # throttled
        assert ("callback of /x failed: RecursionError: maximum recursion depth exceeded at "
                "test_controller_input.py") in errors[0]
        assert "the node keeps running (1 failed callback(s) so far)" in errors[0]
        rejected = t.subscribe("/y", rm.CLOCK, lambda m: rm.parse_float64_multi_array(m))
        assert rejected.handle_raw(data) is False and t.callback_failures == 3   # a rejection
        ticks = []

        def bad_timer():
            ticks.append(1)
            raise KeyError("plug-in bug")
        t.timer(0.001, bad_timer)
        t.spin_until(lambda: len(ticks) >= 3, 10.0)
        assert len(ticks) >= 3 and t.callback_failures == 3 + len(ticks)
        assert any("timer callback" in m and "KeyError: 'plug-in bug'" in m
                   for lvl, m in t.logger.records if lvl == "ERROR")
    finally:
        t.shutdown()


def test_rclpy_callbacks_that_raise_do_not_end_the_node(fake_ros):
    fake, _ = fake_ros
    from vm_dynamics.transport import make_transport
    t = make_transport("victim", {}, ["victim"])
    try:
        got = []

        def crash(msg):
            got.append(msg)
            raise RecursionError("deep")
        t.subscribe("/x", rm.CLOCK, crash)
        t.subscribe("/y", rm.CLOCK, crash, max_bytes=1000)            # the raw path
        ticks = []

        def bad_timer():
            ticks.append(1)
            raise ZeroDivisionError("float division by zero")
        t.timer(0.01, bad_timer)

        def handler(request):
            raise AttributeError("no such thing")
        t.service("~/reset", "std_srvs/srv/Trigger", handler)
        for topic in ("/x", "/y"):
            assert fake.inject(topic, rm.clock_msg(1.0)) == 1
        for _ in range(4):
            t.spin_once(0.02)
        assert len(got) == 2 and ticks
        r = fake.call_service("/victim/reset")
        assert not r.success and r.message == "internal error: AttributeError: no such thing"
        assert t.callback_failures == 2 + len(ticks) + 1
        logged = " ".join(m for sev, _, m in fake.logs if sev == "ERROR")
        for text in ("callback of /x failed: RecursionError: deep",
                     "callback of /y failed: RecursionError: deep",
                     "ZeroDivisionError: float division by zero",
                     "std_srvs/srv/Trigger handler failed: AttributeError"):
            assert text in logged, (text, logged)
        # rclpy's graph query on the adapter: this node's publisher plus one elsewhere
        t.publisher("/clock", rm.CLOCK, "clock")
        fake.foreign_publishers["/clock"] = 1
        assert t.count_publishers("/clock") == 2
    finally:
        t.shutdown()


# ------------------------------------------------------------------ nodes over DDS
PARAMS = str(REPO / "config" / "planar_rover.yaml")


def _node(module, env, log, *extra):
    return subprocess.Popen([sys.executable, "-m", module, "--ros-args", "--params-file",
                             PARAMS, *extra], env=env, cwd=REPO, stdout=log,
                            stderr=subprocess.STDOUT)


@pytest.fixture
def probe(domain):
    from vm_dynamics.transport.dds import DdsTransport
    t = DdsTransport("probe", {}, ["probe"])
    states = []
    t.subscribe("/joint_states", rm.JOINT_STATE, lambda m: states.append(
        rm.parse_joint_state(m, ["joint1", "joint2"])), "sensor")
    yield t, domain[1], states
    t.shutdown()


def _launch(procs, env, logs, tmp_path, dyn="dyn", lockstep=True):
    """The controller, then (once it is up) the simulation.  In lockstep the simulation
    advances only on commands, so the arm does not fall freely while discovery between the
    two is still under way (seconds on a loaded machine: enough to make it diverge)."""
    extra = ["-p", "lockstep:=true"] if lockstep else []
    procs["ctl"] = _node("vm_dynamics.nodes.controller_node", env, logs["ctl"], *extra)
    deadline = time.monotonic() + 90.0
    while "[controller_node]: controller " not in _text(tmp_path, "ctl"):
        assert time.monotonic() < deadline and procs["ctl"].poll() is None, \
            _text(tmp_path, "ctl")
        time.sleep(0.05)
    procs[dyn] = _node("vm_dynamics.nodes.dynamics_node", env, logs[dyn], *extra)


@contextmanager
def _nodes(tmp_path, env, names=("dyn", "ctl"), lockstep=True):
    """The controller and the simulation ``names[0]`` started by :func:`_launch`, each
    logging to ``tmp_path / "<name>.log"``; yields ``(processes, open logs)`` by name (more
    names: more logs, for processes the test starts); all are stopped on the way out."""
    logs = {k: open(tmp_path / f"{k}.log", "w") for k in names}
    procs = {}
    try:
        _launch(procs, env, logs, tmp_path, dyn=names[0], lockstep=lockstep)
        yield procs, logs
    finally:
        stop_processes(procs.values(), logs.values())


def _text(tmp_path, name):
    return (tmp_path / f"{name}.log").read_text()


def _wait_publisher(t, pub, timeout=30.0):
    assert t.spin_until(lambda: pub.matched_subscriptions > 0, timeout)


def _tracking(states, n=25, tol=0.05):
    """The latest ``n`` states follow the scenario's reference (the controller is in charge)."""
    ref = rover_reference()
    recent = states[-n:]
    return len(states) > n and recent[0].stamp_ns < recent[-1].stamp_ns and all(
        np.abs(ref(s.stamp_ns * 1e-9)[0] - s.position).max() < tol for s in recent)


def _start(t, states, tmp_path):
    """The probe's publisher of trajectories to the controller, once the controller tracks
    the scenario's reference."""
    pub = t.publisher("/controller_node/joint_trajectory", TRAJ)
    _wait_publisher(t, pub, 60.0)
    assert t.spin_until(lambda: _tracking(states), 90.0), \
        (states[-1:], _text(tmp_path, "dyn")[-2000:], _text(tmp_path, "ctl")[-2000:])
    return pub


def _settled(states, target, tol, n=25):
    return len(states) > n and all(np.abs(s.position - target).max() < tol
                                   for s in states[-n:])


def test_controller_survives_2000_partial_trajectories_and_follows_the_last(probe, tmp_path):
    t, env, states = probe
    with _nodes(tmp_path, env) as (procs, _):
        pub = _start(t, states, tmp_path)
        for k in range(2000):
            pub.publish(traj(["joint1"], [[0.1 + 1e-4 * k]], [1.0]))
            t.spin_until(lambda: False, 0.004)       # ~200/s: a reader of depth 10 keeps up
            assert k % 200 or procs["ctl"].poll() is None, (k, _text(tmp_path, "ctl")[-3000:])
        pub.publish(traj(["joint1"], [[0.9]], [1.0]))

        def there():
            return len(states) > 25 and all(abs(s.position[0] - 0.9) < 0.02
                                            for s in states[-25:])
        assert t.spin_until(there, 60.0), (states[-1].position, _text(tmp_path, "ctl")[-3000:])
        assert procs["ctl"].poll() is None and procs["dyn"].poll() is None
        ctl = _text(tmp_path, "ctl")
        assert "Traceback" not in ctl and "RecursionError" not in ctl, ctl[-3000:]


def test_a_spoofed_old_state_keeps_the_trajectory_and_a_reset_reinitialises(probe, tmp_path):
    from vm_dynamics.transport.dds import DdsServiceClient, DdsTransport
    from vm_dynamics.transport.types import service_typestore
    t, env, states = probe
    with _nodes(tmp_path, env) as (procs, _):
        pub = _start(t, states, tmp_path)
        target = np.array([0.9, -0.5])
        pub.publish(traj(["joint1", "joint2"], [target], [2.0]))
        assert t.spin_until(lambda: _settled(states, target, 0.03), 60.0), \
            (states[-1].position, _text(tmp_path, "ctl")[-3000:])
        spoofer = DdsTransport("spoofer", {}, ["spoofer"])
        try:
            spoof = spoofer.publisher("/joint_states", rm.JOINT_STATE)
            _wait_publisher(spoofer, spoof)
            n0 = len(states)
            for _ in range(20):                  # stamped at t = 0, long before the state
                spoof.publish(rm.joint_state_msg(0.0, ["joint1", "joint2"], np.zeros(2),
                                                 np.zeros(2)))
                t.spin_until(lambda: False, 0.05)
            t.spin_until(lambda: len(states) > n0 + 150, 120.0)   # eventually, however loaded
            # the controller also reports the second publisher of its input
            assert t.spin_until(lambda: "2 publishers of /joint_states (expected 1)"
                                in _text(tmp_path, "ctl"), 30.0), _text(tmp_path, "ctl")
        finally:
            spoofer.shutdown()
        after = [s for s in states[n0:] if s.stamp_ns > 0]       # the simulation's own
        assert len(after) > 100
        dev = max(np.abs(s.position - target).max() for s in after)
        assert dev < 0.05, dev                    # the trajectory was kept throughout
        ctl = _text(tmp_path, "ctl")
        assert "ignored a joint state stamped 0 s, older than the latest accepted" in ctl
        assert "re-initialised" not in ctl
        # the spoofer is gone: a ~/reset re-initialises the controller (scenario again)
        assert t.spin_until(lambda: "/joint_states has a single publisher again"
                            in _text(tmp_path, "ctl"), 30.0), _text(tmp_path, "ctl")[-3000:]
        reset = DdsServiceClient(t, "/dynamics_node/reset", "std_srvs/srv/Trigger")
        assert reset.wait_for_service(20.0)
        req = service_typestore().types["std_srvs/srv/Trigger_Request"](
            structure_needs_at_least_one_member=0)
        box = {}
        th = threading.Thread(target=lambda: box.setdefault("r", reset.call(req, 10.0)))
        th.start()
        t.spin_until(lambda: not th.is_alive(), 15.0)
        th.join()
        assert box["r"].success
        assert t.spin_until(lambda: "(simulation reset): controller re-initialised"
                            in _text(tmp_path, "ctl"), 30.0), _text(tmp_path, "ctl")[-3000:]
        assert t.spin_until(lambda: _tracking(states), 60.0), states[-1]
        assert procs["ctl"].poll() is None and procs["dyn"].poll() is None


def test_two_simulations_on_one_domain_are_reported(probe, tmp_path):
    t, env, states = probe
    with _nodes(tmp_path, env, ("dyn1", "dyn2", "ctl"), lockstep=False) as (procs, logs):
        assert t.spin_until(lambda: len(states) > 50, 60.0), _text(tmp_path, "dyn1")
        procs["dyn2"] = _node("vm_dynamics.nodes.dynamics_node", env, logs["dyn2"],
                              "-r", "__node:=second_sim")

        def reported():
            return all("publishers of /clock (expected 1)" in _text(tmp_path, k)
                       for k in ("dyn1", "dyn2")) and \
                "publishers of /joint_states (expected 1)" in _text(tmp_path, "ctl")
        assert t.spin_until(reported, 90.0), [_text(tmp_path, k)[-2000:] for k in logs]
        for k in ("dyn1", "dyn2"):
            line = next(x for x in _text(tmp_path, k).splitlines()
                        if "publishers of /clock" in x)
            assert line.startswith("[ERROR]") and "ROS_DOMAIN_ID=" in line, line
        # from the report on, time jumps between the two are no resets for the controller
        mark = len(_text(tmp_path, "ctl"))
        t.spin_until(lambda: False, 6.0)
        later = _text(tmp_path, "ctl")[mark:]
        assert "re-initialised" not in later, later[-3000:]
        assert all(p.poll() is None for p in procs.values())


def test_rclpy_subscriptions_with_count_limits_work_without_rosbags(fake_ros, monkeypatch):
    """A ROS install with the rosdep keys only has no rosbags: the controller's count limits
    must not need its type store there (found on Jazzy: controller_node died at start-up with
    'rosbags is needed ...').  rosidl decodes, the node checks the decoded counts."""
    fake, _ = fake_ros
    from vm_dynamics.transport import make_transport
    monkeypatch.setattr(rm, "_typestore_cache", None)
    monkeypatch.setitem(sys.modules, "rosbags.typesys", None)     # import fails
    assert not rm.typestore_available()
    t = make_transport("no_rosbags", {}, ["no_rosbags"])
    try:
        got = []
        t.subscribe("/js", rm.JOINT_STATE, got.append, "sensor", max_bytes=1 << 20,
                    max_counts={"name": (3, "max_joint_state_names")})
        monkeypatch.undo()                 # the fake middleware serialises with rosbags
        assert fake.inject("/js", rm.joint_state_msg(1.0, ["a", "b"], [0.0, 1.0])) == 1
        for _ in range(3):
            t.spin_once(0.02)
        assert len(got) == 1 and list(got[0].name) == ["a", "b"]
    finally:
        t.shutdown()


# ------------------------------------------------------------------ parameters from the command line
def _node_params(node, argv_tail):
    """The parameters a node gets from ``--ros-args ...`` (rcl's rules, as the transports
    apply them: undeclared names are dropped)."""
    from vm_dynamics.nodes.controller_core import controller_parameter_defaults
    from vm_dynamics.nodes.dynamics_node import node_parameter_defaults
    from vm_dynamics.nodes.parameters import command_line_parameters
    from vm_dynamics.transport import ros_args as rargs
    argv = [node, "--ros-args", *argv_tail]
    overrides, folders = command_line_parameters(argv, node)
    defaults = (controller_parameter_defaults(overrides) if node == "controller_node"
                else node_parameter_defaults())
    values = rargs.resolve_parameters(defaults, rargs.parse_ros_args(argv), f"/{node}").values
    return values, overrides, folders, defaults


def test_controller_node_selected_on_the_command_line_takes_its_gains():
    """``controller_node -p controller:=pd_gravity -p controller.kp:=400.0`` runs with kp = 400
    (before: "running it with its default parameters (ignoring ['kd', 'kp'])")."""
    urdf = str(REPO / "urdf" / "planar_rover.urdf")
    values, *_ = _node_params("controller_node", [
        "-p", f"robot_description_file:={urdf}", "-p", "base_type:=SE2",
        "-p", "controller:=pd_gravity", "-p", "controller.kp:=400.0"])
    ctrl = ControllerCore.from_params(values)
    assert ctrl.controller_name == "pd_gravity" and ctrl.ctrl.params["kp"] == 400.0
    # with a scenario file of another controller: its gains the new one has are kept
    cfg = str(REPO / "config" / "spacecraft_arm.yaml")
    values, *_ = _node_params("controller_node", [
        "--params-file", cfg, "-p", "controller:=pd_gravity", "-p", "controller.kp:=400.0"])
    ctrl = ControllerCore.from_params(values)
    assert ctrl.ctrl.params["kp"] == 400.0 and ctrl.ctrl.params["kd"] == 10.0
    assert ctrl.ctrl.params["mode"] == "free_floating"


def test_a_misspelled_controller_gain_on_the_node_is_reported():
    """``-p controller.kpp:=3.0`` reaches the core (declared as found) and is the plug-in's
    error, as in vm-sim; with a file of another controller it is listed as dropped (before:
    ignored silently)."""
    urdf = str(REPO / "urdf" / "planar_rover.urdf")
    values, *_ = _node_params("controller_node", [
        "-p", f"robot_description_file:={urdf}", "-p", "base_type:=SE2",
        "-p", "controller:=pd_gravity", "-p", "controller.kpp:=3.0"])
    with pytest.raises(ValueError, match="pd_gravity: unknown parameter 'kpp'"):
        ControllerCore.from_params(values)
    cfg = str(REPO / "config" / "spacecraft_arm.yaml")
    values, *_ = _node_params("controller_node", [
        "--params-file", cfg, "-p", "controller:=task_space", "-p", "controller.kpp:=3.0"])
    ctrl = ControllerCore.from_params(values)
    text = " ".join(text for level, _, text in ctrl.log.records if level == "WARN")
    assert "dropped kd, kp, kpp (not task_space parameters)" in text, text


@pytest.mark.parametrize("node", ["dynamics_node", "controller_node"])
def test_misspelled_node_parameters_are_named_with_the_valid_names(node):
    """``-p duraton:=0.5`` / ``-p dtt:=0.002``: ROS drops undeclared names silently; the nodes
    warn, naming the nearest valid name (a scenario file's own names are all known)."""
    from vm_dynamics.nodes.parameters import unknown_parameter_warning
    cfg = str(REPO / "config" / "spacecraft_arm.yaml")
    _, overrides, folders, declared = _node_params(node, [
        "--params-file", cfg, "-p", "duraton:=0.5", "-p", "dtt:=0.002"])
    text = unknown_parameter_warning(overrides, declared)
    assert text.startswith("unknown parameters 'dtt' (did you mean 'dt'?), 'duraton' (did you "
                           "mean 'duration'?); valid names: "), text
    assert text.endswith("; ignored") and "\n" not in text
    assert folders == [str((REPO / "config").resolve())]
    _, overrides, _, declared = _node_params(node, ["--params-file", cfg])
    assert unknown_parameter_warning(overrides, declared) is None
