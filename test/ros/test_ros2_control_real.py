"""Unmodified upstream ros2_control drives vm_dynamics: ``ros2 launch vm_dynamics
ros2_control.launch.py`` (controller_manager, joint_state_broadcaster,
joint_trajectory_controller with effort command interfaces,
joint_state_topic_hardware_interface) on the installed package.  Skipped where ROS 2 or one of
those packages is not installed (docs/ros2_control-from-source.md builds them on Jazzy).

Checked, twice: a ``FollowJointTrajectory`` goal starting at a fixed simulated time is tracked
by the arm on its free-floating base (the controller's own error and the final pose against
the goal); over ``PERIODS`` control periods of the lockstep every ``/joint_states`` stamp
``t_k`` gets exactly one command of the controller manager stamped ``t_k`` (0 missed, 0
duplicated updates); every update read the state of its own period (the state barrier: what
joint_state_broadcaster publishes at the update equals ``/joint_states`` of that stamp); the two
runs publish bit-identical ``/joint_states``.  Once more with position command interfaces
(``command_interface:=position``: every joint kinematically driven): the same lockstep checks,
and every command's positions are the joints' positions one period later.  And with velocity
command interfaces (``command_interface:=velocity``, the controller's PID adapter): the same
lockstep checks, and every command's velocities are the joints' velocities over the next
period (the state one period later has that velocity and the position ``q + T v``).  No rate
is asserted: the waits are deadlines only.
"""
import gc
import os
import pickle
import re
import shutil
import signal
import subprocess

import numpy as np
import pytest
from ros_domain import installed_share, ros_domain_env, spin_until

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed")

PACKAGES = ("vm_dynamics", "robot_state_publisher", "controller_manager",
            "joint_state_broadcaster", "joint_trajectory_controller",
            "joint_state_topic_hardware_interface")
PERIOD_NS = 10_000_000          # update_rate 100 Hz
PERIODS = int(os.environ.get("VM_ROS2_CONTROL_PERIODS", "10000"))
T_GOAL = 60.0                   # simulated s: the trajectory starts here in both runs
GOAL = [0.8, -0.3, 0.4, 1.0, -0.5, 0.6, 0.3]
# the position run: to the goal's end and 2 s more, at a quarter of real time (the probe
# must receive every state and command: a stall of its DDS receive thread longer than the
# publishers' history, 10 states and 1 command, loses samples; at real time one of 0.5 s
# lost 52 states in a run here at load 11)
POSITION_PERIODS = int(os.environ.get("VM_ROS2_CONTROL_POSITION_PERIODS", "7000"))
POSITION_RTF = float(os.environ.get("VM_ROS2_CONTROL_POSITION_RTF", "0.25"))
VELOCITY_P = 10.0               # 1/s, config/ros2_control/spacecraft_arm_velocity.yaml


@pytest.fixture()
def launch_env(monkeypatch):
    if shutil.which("ros2") is None:
        pytest.skip("the ros2 command is not on PATH (source a ROS 2 installation)")
    for package in PACKAGES:
        if installed_share(package) is None:
            pytest.skip(f"package {package!r} is not installed in the sourced workspace "
                        "(docs/ros2_control-from-source.md)")
    # VM_ROS2_CONTROL_DOMAIN: the domain to run in (a machine whose users each have one)
    domain = os.environ.get("VM_ROS2_CONTROL_DOMAIN")
    extra = {"ROS_DOMAIN_ID": domain} if domain else {}
    return dict(ros_domain_env(monkeypatch, **extra), PYTHONUNBUFFERED="1")


def _ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def _lockstep_start(text):
    """Stamp (ns) from which the node is in lockstep with the controller manager."""
    found = re.search(r"lockstep with the controller manager from t=(\S+) s", text)
    assert found, text
    return round(float(found.group(1)) * 1e9 / PERIOD_NS) * PERIOD_NS


def _run(env, tmp_path, tag, args=(), nice=0, periods=PERIODS):
    """One launch (extra launch ``args``; its processes ``nice``: the probe's DDS threads then
    win the CPU against them, and it receives every state and command on a loaded machine,
    where a stall of its receive thread longer than the publishers' history loses samples):
    the goal at T_GOAL, PERIODS lockstep periods.  Returns (states {stamp: (q, qd, tau)},
    commands [(stamp, positions, velocities)], controller errors during the motion, what the broadcaster
    read, result, log)."""
    from builtin_interfaces.msg import Duration, Time
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointTrajectoryControllerState
    from rclpy.action import ActionClient
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectoryPoint

    domain = int(env["ROS_DOMAIN_ID"])
    rclpy.init(domain_id=domain)
    node = rclpy.create_node(f"ros2_control_probe_{tag}")
    # the processes of the run before (killed) stay in discovery until their lease ends: a
    # probe would send its goal to that ghost
    names = ("controller_manager", "dynamics_node", "robot_state_publisher")
    if not spin_until(node, lambda: not set(names) & set(node.get_node_names()), 120.0):
        node.destroy_node()
        rclpy.shutdown()
        pytest.fail(f"domain {domain} has nodes {node.get_node_names()} of another run")
    log_path = tmp_path / f"launch-{tag}.log"
    log = open(log_path, "w")
    launch = subprocess.Popen(
        ["python3", "-c", "import signal, os, sys; signal.signal(signal.SIGINT, "
         f"signal.SIG_DFL); os.nice({int(nice)}); os.execvp(sys.argv[1], sys.argv[1:])",
         "ros2", "launch", "vm_dynamics", "ros2_control.launch.py", "rviz:=false",
         "real_time_factor:=1.0", "update_rate:=100", *args],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path, start_new_session=True)
    states, commands, errors, read, active = {}, [], [], {}, []
    joints = [f"joint{i}" for i in range(1, 8)]

    newest = [0]

    def on_state(m):
        if list(m.name) == joints:
            stamp = _ns(m.header.stamp)
            # plain copies here (arrays later): the probe must keep up with 3 streams at
            # 100 Hz on a loaded machine
            states[stamp] = (tuple(m.position), tuple(m.velocity), tuple(m.effort))
            newest[0] = max(newest[0], stamp)

    def on_broadcast(m):          # what the manager read at its update (stamped with its time)
        stamp = _ns(m.header.stamp)
        if stamp in read:         # two updates at one time of the manager's clock
            read.setdefault("repeated", []).append(stamp)
        read[stamp] = (tuple(m.name), tuple(m.position))

    def on_command(m):
        commands.append((_ns(m.header.stamp), tuple(m.position), tuple(m.velocity),
                         tuple(m.effort)))

    def on_controller_state(m):      # published only while the controller is active
        active.append(True)
        t = _ns(m.header.stamp) * 1e-9
        if T_GOAL <= t:
            errors.append((t, float(np.max(np.abs(m.error.positions)))))
    reliable = QoSProfile(depth=10000, reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(JointState, "/joint_states", on_state, reliable)
    node.create_subscription(JointState, "/joint_commands", on_command, reliable)
    node.create_subscription(JointState, "/joint_state_broadcaster/joint_states", on_broadcast,
                             reliable)
    node.create_subscription(JointTrajectoryControllerState,
                             "/joint_trajectory_controller/controller_state",
                             on_controller_state, 1000)

    def text():
        return log_path.read_text(errors="replace")
    result = None
    try:
        client = ActionClient(node, FollowJointTrajectory,
                              "/joint_trajectory_controller/follow_joint_trajectory")
        # a fresh install tree compiles the kernels at the first start (minutes)
        assert spin_until(node, lambda: client.server_is_ready() and states and active,
                          900.0), text()
        now = max(states) if states else 0
        assert now < (T_GOAL - 5.0) * 1e9, (f"the controllers came up at t={now * 1e-9:.1f} s "
                                            f"of simulated time, too late for the goal at "
                                            f"{T_GOAL} s", text())
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = joints
        goal.trajectory.header.stamp = Time(sec=int(T_GOAL), nanosec=0)
        q0 = np.array(states[newest[0]][0])
        # the first point is the state at rest at T_GOAL: the controller interpolates from the
        # state at the goal's arrival (a wall-clock-dependent time) to the first point, which
        # is then exactly that state held until T_GOAL
        for frac, sec in ((0.0, 0), (0.5, 4), (1.0, 8)):
            pt = JointTrajectoryPoint(positions=list(q0 + frac * (np.array(GOAL) - q0)),
                                      time_from_start=Duration(sec=sec, nanosec=0))
            if frac in (0.0, 1.0):
                pt.velocities = [0.0] * 7
            goal.trajectory.points.append(pt)
        sent = client.send_goal_async(goal)
        assert spin_until(node, sent.done, 120.0) and sent.result().accepted, text()
        done = sent.result().get_result_async()
        assert spin_until(node, done.done, 900.0), text()
        result = done.result().result
        # the lockstep for PERIODS periods from its start (the node logs it)
        start = _lockstep_start(text())
        end = start + periods * PERIOD_NS
        # (a cheap condition: it is evaluated after every message)
        assert spin_until(node, lambda: newest[0] >= end + PERIOD_NS, 3600.0), text()
        spin_until(node, lambda: False, 1.0)        # the commands still on their way
    finally:
        node.destroy_node()
        rclpy.shutdown()
        if launch.poll() is None:
            os.killpg(launch.pid, signal.SIGINT)
        try:
            launch.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(launch.pid, signal.SIGKILL)
            launch.wait()
        log.close()
    states = {k: tuple(np.array(x) for x in v) for k, v in states.items()}
    read = {k: (v if k == "repeated" else np.array([dict(zip(*v))[j] for j in joints]))
            for k, v in read.items()}
    return states, commands, errors, read, result, text()


#: Which field of a command holds its interface's values, and which field of the state
#: one period later equals them: (command tuple index, state tuple index).
EFFECT = {"effort": (3, 2), "position": (1, 0), "velocity": (2, 1)}


def _check_lockstep(states, commands, read, text, periods=PERIODS, interface="effort"):
    """The lockstep checks of one run: from its start, one command per state stamp (0 missed,
    0 duplicated updates), every update read the state of its period.  Returns the periods
    ``span`` and the command answering each, ``[(stamp, positions, velocities, efforts)]``.

    The commands are paired with the states they answer in sequence (the k-th command from
    the start answers the k-th period: the node advances one period per command), not by
    their stamps alone, which are the hardware component's clock and may lag the state
    (so the next period's command can carry the last period's stamp).  The pairing is
    checked by content: each command's ``interface`` values are what the state one period
    later holds (its effort field, positions or velocities; 1e-12).  A missed update shows as
    a command stamped after the state it is paired with or too few commands; a duplicated
    one as two updates at one time of the manager's clock (joint_state_broadcaster's stamps,
    ``read["repeated"]``), or as a command whose content is not the next state's (a command
    the node did not apply shifts the pairing of every later one)."""
    start = _lockstep_start(text)
    span = [start + k * PERIOD_NS for k in range(periods)]
    absent = [s for s in span if s not in states]
    assert not absent, (f"{len(absent)} of {len(span)} states not received",   # one period
                        [s * 1e-9 for s in absent[:10]])                      # per /clock
    cmds = [c for c in commands if c[0] >= start - 10 * PERIOD_NS][:len(span) + 10]
    cmds = cmds[next(i for i, c in enumerate(cmds) if c[0] == start):]
    in_span = cmds[:len(span)]
    missed = [s for s, c in zip(span, in_span) if c[0] > s] + span[len(in_span):]
    lag = [s - c[0] for s, c in zip(span, in_span)]
    # the pairing by content: command k's values are the state's at span[k] + T; the commands
    # after the span stamped inside it answer the periods after it (checked the same way
    # where the probe has the state)
    ci, si = EFFECT[interface]
    after = [c for c in cmds[len(span):] if c[0] <= span[-1]]
    paired = list(zip(span, in_span)) + [(span[-1] + (j + 1) * PERIOD_NS, c)
                                         for j, c in enumerate(after)]
    checked = [(s, c) for s, c in paired if s + PERIOD_NS in states]
    unpaired = [s for s, c in checked if len(c[ci]) != len(states[s + PERIOD_NS][si]) or
                np.max(np.abs(np.array(c[ci]) - states[s + PERIOD_NS][si])) > 1e-12]
    repeated = list(read.get("repeated", ()))
    doubled = sorted(set(repeated) | set(unpaired))
    # the state each update read: the one stamped with the update's time, not the one
    # before (joint_state_broadcaster publishes what was read; it may skip updates)
    seen = [s for s in span if s in read]
    stale = [s for s in seen if not np.array_equal(read[s], states[s][0])]
    # a stale read shows only where the state differs from the period before
    telling = [s for s in seen if s - PERIOD_NS in states and not np.array_equal(
        states[s][0], states[s - PERIOD_NS][0])]
    print(f"lockstep from t={start * 1e-9:.2f} s: {len(span)} periods, "
          f"{len(missed)} missed, {len(doubled)} duplicated updates ({len(repeated)} repeated "
          f"update times, {len(unpaired)} of {len(checked)} commands not the next state's "
          f"{interface}, {len(after)} past the span stamped inside it), "
          f"{sum(x > 0 for x in lag)} stamped up to {max(lag) // PERIOD_NS} periods early; "
          f"{len(stale)} of {len(seen)} broadcast reads not the current state "
          f"({len(telling)} of them where the state moved)")
    assert len(checked) >= len(span) and not missed and not doubled, \
        (len(checked), missed[:5], [s * 1e-9 for s in doubled[:5]])
    # the state barrier: every update read the state of its own period
    assert seen and not stale, [s * 1e-9 for s in stale[:5]]
    assert "sent without it" not in text, text        # no /clock without the barrier
    return span, in_span


def test_a_trajectory_goal_is_tracked_in_lockstep_and_two_runs_are_identical(launch_env,
                                                                              tmp_path):
    gc.disable()          # no collection pauses of the probe while it records (10^4 states)
    try:
        runs = [_run(launch_env, tmp_path, tag) for tag in "ab"]
    finally:
        gc.enable()
    with open(tmp_path / "runs.pkl", "wb") as f:          # for a post-mortem
        pickle.dump([r[:5] for r in runs], f)
    for states, commands, errors, read, result, text in runs:
        assert result.error_code == 0, (result.error_code, result.error_string, text)
        # tracked: the controller's error over the motion and the final pose
        # PD without feedforward lags by about d/p * velocity = 0.4 s * 0.1 rad/s
        assert errors and max(e for _, e in errors) < 0.1, max(errors, key=lambda r: r[1])
        final = states[max(states)][0]
        assert np.max(np.abs(final - GOAL)) < 5e-3, (final, text)
        _check_lockstep(states, commands, read, text)
    # identical /joint_states: every period from the first second (the probe may join after
    # the first states) to the end of the shorter run (past the goal), position, velocity and
    # effort bit for bit
    (a, *_), (b, *_) = runs
    common = sorted(set(a) & set(b))
    assert common and common[0] < 1e9 and common[-1] >= (T_GOAL + 8.0) * 1e9
    assert common == list(range(common[0], common[-1] + 1, PERIOD_NS))   # every period
    differ = [s for s in common if not all(np.array_equal(x, y) for x, y in zip(a[s], b[s]))]
    print(f"/joint_states of the two runs: {len(common)} stamps to t={common[-1] * 1e-9:.2f} s, "
          f"{len(differ)} differ")
    assert not differ, [(s * 1e-9, a[s], b[s]) for s in differ[:2]]


def test_position_command_interfaces_reach_each_command_one_period_later(launch_env, tmp_path):
    """joint_trajectory_controller on position command interfaces (``command_interface:=
    position``, config/ros2_control/spacecraft_arm_position.yaml): every joint kinematically
    driven by the dynamics node, the base free-floating.  The controller writes the trajectory
    sampled one period ahead; the joints are there one period later, so its own tracking error
    is round-off, and every command's positions are the state's at the next stamp."""
    gc.disable()
    try:
        states, commands, errors, read, result, text = _run(
            launch_env, tmp_path, "position",
            ("command_interface:=position", f"real_time_factor:={POSITION_RTF}"), nice=5,
            periods=POSITION_PERIODS)
    finally:
        gc.enable()
    with open(tmp_path / "run-position.pkl", "wb") as f:
        pickle.dump((states, commands, errors, read, result), f)
    assert result.error_code == 0, (result.error_code, result.error_string, text)
    span, in_span = _check_lockstep(states, commands, read, text, POSITION_PERIODS,
                                    "position")
    # each command's positions are the joints' positions one period later
    gaps = [np.max(np.abs(np.array(c[1]) - states[s + PERIOD_NS][0]))
            for s, c in zip(span, in_span) if s + PERIOD_NS in states]
    moving = [s for s in span if s - PERIOD_NS in states and
              not np.array_equal(states[s][0], states[s - PERIOD_NS][0])]
    print(f"position commands: {len(gaps)} of {len(span)} periods checked, largest "
          f"|q(t_k+1) - q_cmd(t_k)| = {max(gaps):.3g} rad ({len(moving)} periods moving); "
          f"controller error over the motion {max(e for _, e in errors):.3g} rad")
    assert len(gaps) == len(span) and max(gaps) <= 1e-12
    assert len(moving) > 100                       # the goal moved the arm over the span
    assert errors and max(e for _, e in errors) < 1e-9, max(errors, key=lambda r: r[1])
    final = states[max(states)][0]
    assert np.max(np.abs(final - GOAL)) < 1e-9, (final, text)


def test_velocity_command_interfaces_hold_each_command_over_the_next_period(launch_env,
                                                                             tmp_path):
    """joint_trajectory_controller on velocity command interfaces (``command_interface:=
    velocity``, config/ros2_control/spacecraft_arm_velocity.yaml): every joint kinematically
    driven, the base free-floating.  The controller's PID adapter writes the trajectory's
    velocity plus ``p`` times its position error; a velocity command stamped ``t_k`` is the
    joint's velocity over ``[t_k, t_k+1)``: the state at ``t_k+1`` has that velocity and the
    position ``q(t_k) + T v``.  After the trajectory's end the commands are ``p e`` alone, so
    the error shrinks by ``1 - p T`` per period, to the goal."""
    gc.disable()
    try:
        states, commands, errors, read, result, text = _run(
            launch_env, tmp_path, "velocity",
            ("command_interface:=velocity", f"real_time_factor:={POSITION_RTF}"), nice=5,
            periods=POSITION_PERIODS)
    finally:
        gc.enable()
    with open(tmp_path / "run-velocity.pkl", "wb") as f:
        pickle.dump((states, commands, errors, read, result), f)
    assert result.error_code == 0, (result.error_code, result.error_string, text)
    span, in_span = _check_lockstep(states, commands, read, text, POSITION_PERIODS,
                                    "velocity")
    # the commands carry velocities only (the topic system sends a joint's value in the field
    # of its interface)
    assert all(len(c[1]) == 0 and len(c[2]) == 7 for c in in_span), in_span[0]
    t = PERIOD_NS * 1e-9
    checked = [(s, np.array(c[2])) for s, c in zip(span, in_span) if s + PERIOD_NS in states]
    dv = [np.max(np.abs(states[s + PERIOD_NS][1] - v)) for s, v in checked]
    dq = [np.max(np.abs(states[s + PERIOD_NS][0] - (states[s][0] + t * v))) for s, v in checked]
    moving = [s for s, v in checked if np.any(v != 0.0)]
    final = states[max(states)][0]
    print(f"velocity commands: {len(checked)} of {len(span)} periods checked "
          f"({len(moving)} with a nonzero command), largest |qd(t_k+1) - v_cmd(t_k)| = "
          f"{max(dv):.3g} rad/s, |q(t_k+1) - q(t_k) - T v_cmd(t_k)| = {max(dq):.3g} rad; "
          f"controller error over the motion {max(e for _, e in errors):.3g} rad; "
          f"final |q - goal| = {np.max(np.abs(final - GOAL)):.3g} rad")
    assert len(checked) == len(span)
    assert max(dv) <= 1e-12 and max(dq) <= 1e-12
    assert len(moving) > 100                       # the goal moved the arm over the span
    # the loop tracked the trajectory (a fraction of the 1.1 rad of the largest joint motion)
    assert errors and max(e for _, e in errors) < 0.05, max(errors, key=lambda r: r[1])
    # at rest after the goal's end (t = T_GOAL + 8 s) the error shrinks by 1 - p T per period
    rest = [s for s in span if s >= (T_GOAL + 8.0) * 1e9 and s + PERIOD_NS in states]
    assert len(rest) > 100
    e0 = np.max(np.abs(states[rest[0]][0] - GOAL))
    bound = e0 * (1.0 - VELOCITY_P * t) ** (len(rest) - 1) + 1e-12
    assert np.max(np.abs(states[rest[-1]][0] - GOAL)) <= bound, (e0, states[rest[-1]][0])
