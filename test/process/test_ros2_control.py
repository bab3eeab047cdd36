"""ros2_control through the topic hardware interface, without ROS (nodes/ros2_control.py).

The controller manager's side is emulated from its source (controller_manager/src/
ros2_control_node.cpp and joint_state_topic_hardware_interface.cpp of the Jazzy branches, see
docs/ros2_control.md): on ``use_sim_time`` the loop waits for ``/clock`` to start, sleeps one
period, then per wake-up (``/clock`` at or past ``previous + period``) reads the newest joint
state, updates, and writes one ``sensor_msgs/JointState`` with every joint's effort, stamped
with the hardware component's clock (which may be one ``/clock`` sample behind).

Oracles: the URDF tag parsed back with ElementTree (and by the project's URDF reader); the
same effort stream given to a second simulation through the existing effort input
(``set_effort``, the Float64MultiArray path) in plain lockstep, which must give bit-identical
states; counts of controller updates per ``/clock`` step.  No rate or latency is asserted.
"""
from __future__ import annotations

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
from memory_transport import MemoryTransport

from vm_dynamics.nodes.dynamics_core import DynamicsCore
from vm_dynamics.nodes.ros2_control import (
    TOPIC_SYSTEM_PLUGIN,
    ControllerManagerSync,
    controller_manager_settings,
    ros2_control_tag,
    with_ros2_control,
)
from vm_dynamics.ros import messages as rm

BARRIER = "(state barrier request)"   # its place among the published messages, in-process
GAINS = (30.0, 8.0)        # the emulated controller: PD towards TARGET


def target(n):
    return np.linspace(0.2, -0.2, n)


def pd_effort(q, qd):
    kp, kd = GAINS
    return kp * (target(len(q)) - q) - kd * qd


# ------------------------------------------------------------------ the URDF tag
def test_the_ros2_control_tag_names_every_joint_with_the_topic_system():
    joints = ["joint1", "joint2", "joint3"]
    tag = ros2_control_tag(joints, initial_positions=[0.1, -0.2, 0.3],
                           joint_commands_topic="/joint_commands")
    root = ET.fromstring(tag)
    assert root.tag == "ros2_control" and root.get("type") == "system"
    hw = root.find("hardware")
    assert hw.find("plugin").text == TOPIC_SYSTEM_PLUGIN
    params = {p.get("name"): p.text for p in hw.findall("param")}
    assert params == {"joint_commands_topic": "/joint_commands",
                      "joint_states_topic": "/joint_states",
                      "trigger_joint_command_threshold": "-1"}
    assert [j.get("name") for j in root.findall("joint")] == joints
    for j, q0 in zip(root.findall("joint"), [0.1, -0.2, 0.3]):
        assert [c.get("name") for c in j.findall("command_interface")] == ["effort"]
        assert j.find("command_interface/param").text == "0.0"
        assert [s.get("name") for s in j.findall("state_interface")] == \
            ["position", "velocity", "effort"]
        assert float(j.find("state_interface/param").text) == q0


def test_the_tag_goes_into_a_robot_urdf_that_still_loads():
    from vm_dynamics.model.model import load_model
    from vm_dynamics.nodes.launching import launch_scenario
    _, params, _, model_urdf = launch_scenario("spacecraft_arm")
    urdf = with_ros2_control(model_urdf, ros2_control_tag(
        params["joints"], initial_positions=params["initial"]["joint_positions"]))
    root = ET.fromstring(urdf)
    assert [j.get("name") for j in root.find("ros2_control").findall("joint")] == \
        params["joints"]
    m = load_model(urdf, base="SE3")
    assert list(m.joint_names) == params["joints"]
    with pytest.raises(ValueError, match="already has a <ros2_control> tag"):
        with_ros2_control(urdf, "<ros2_control/>")


@pytest.mark.parametrize("kwargs, text", [
    (dict(joints=[]), "no joints"),
    (dict(joints=["a", "a"]), "repeated joint names"),
    (dict(joints=["a"], command_interfaces={"a": "torque"}), "dynamics node applies"),
    (dict(joints=["a"], joint_states_topic="joint_states"), "joint_states_topic must be an "
                                                            "absolute topic name"),
    (dict(joints=["a", "b"], initial_positions=[0.0]), "initial_positions must be 2 finite"),
])
def test_bad_tag_arguments_are_named(kwargs, text):
    joints = kwargs.pop("joints")
    with pytest.raises(ValueError, match=text):
        ros2_control_tag(joints, **kwargs)


def test_the_controller_manager_period_must_be_whole_steps_and_nanoseconds():
    p = scenario()
    assert controller_manager_settings(p, 100) == {
        "lockstep": True, "lockstep_wrench": False, "control_rate": 100.0,
        "controller_manager_sync": True,
        "controller_manager_state_barrier": "/vm_dynamics/list_parameters"}
    assert controller_manager_settings(p, 100, "Arm/Left", "/robot")[
        "controller_manager_state_barrier"] == "/robot/arm_left/list_parameters"
    with pytest.raises(ValueError, match="hardware name '9 lives'"):
        controller_manager_settings(p, 100, "9 lives")
    assert controller_manager_settings(p, 1000)["control_rate"] == 1000.0
    for rate in (300, 3000, 7):      # 3.33 steps; a third of a step; 142857142.857 ns
        with pytest.raises(ValueError, match=f"update_rate {rate} Hz with dt=0.001"):
            controller_manager_settings(p, rate)
    with pytest.raises(ValueError, match="update_rate: expected a positive integer"):
        controller_manager_settings(p, 100.0)


# ------------------------------------------------------------------ the lockstep, in-process
class FakeControllerManager:
    """ros2_control_node's sim-time loop with the topic system (module docstring), fed the
    messages the node published.  ``lag(k)``: how many /clock samples the component's clock
    is behind at the k-th update.

    The race between the manager's clock thread and the component's executor: a received
    state goes to ``inbox`` (the subscription's queue, not yet taken); the executor has
    taken every queued state before an update only when ``executor_first(k)`` says it won
    (else the update reads the state it held).  The component's node answers its
    ListParameters service (:meth:`answer_barrier`) as rclcpp's executor does: one wait, in
    which the ready subscription is taken once (one message, the oldest queued), then the
    ready service is served (one callback group, subscriptions before services): a request
    served while two states are queued leaves the newer one queued."""

    def __init__(self, joints, lag=lambda k: 0, executor_first=lambda k: True):
        self.joints, self.lag, self.executor_first = list(joints), lag, executor_first
        self.clock = 0                   # ns, the manager's ROS time
        self.clocks = [0]                # the /clock samples so far
        self.started = self.slept = False
        self.wake_at = None
        self.state = None
        self.inbox = []
        self.barriers = 0
        self.updates = []                # (clock ns of the update, stamp ns, effort)
        self.read = []                   # (clock ns of the update, stamp ns of the state read)

    def receive(self, topic, msg):
        if topic == "joint_states":
            self.inbox.append(msg)
        elif topic == "/clock":
            t = rm.time_msg_to_ns(msg.clock)
            if t != self.clock:
                self.clock = t
                self.clocks.append(t)

    def take_states(self):
        """The component's state callbacks, one wait after the other until the queue is
        empty: the newest state is the one ``read()`` uses."""
        if self.inbox:
            self.state = self.inbox[-1]
            self.inbox.clear()

    def answer_barrier(self, request=None):
        """One wait of the component's executor: one take of the state subscription (the
        oldest queued message), then the service."""
        if self.inbox:
            self.state = self.inbox.pop(0)
        self.barriers += 1
        return {"result": {"names": [], "prefixes": []}}

    def spin(self):
        """Returns the command of an update due now, else None."""
        if not self.started:
            if self.clock > 0:                     # wait_until_started
                self.started, self.wake_at = True, self.clock + PERIOD_NS
            return None
        if self.clock < self.wake_at:              # sleep_until(previous + period)
            return None
        if self.executor_first(len(self.updates)):
            self.take_states()
        if self.state is None:
            return None
        self.read.append((self.clock, rm.time_msg_to_ns(self.state.header.stamp)))
        js = rm.parse_joint_state(self.state, self.joints)
        effort = pd_effort(js.position, js.velocity)
        lag = self.lag(len(self.updates))
        stamp = self.clocks[max(0, len(self.clocks) - 1 - lag)]
        self.updates.append((self.clock, stamp, effort))
        self.wake_at = self.clock + PERIOD_NS
        return rm.joint_state_msg(stamp * 1e-9, self.joints, None, effort=effort)


class FakeBarrierClient:
    """The node's client of the component's ListParameters service, in-process: the request
    goes on the wire (``sent``, the messages the node published, in order) and the fake
    manager answers it when it is delivered there, after the state published before it."""

    def __init__(self, cm, sent):
        self.cm, self.sent = cm, sent
        self.pending, self.answer = False, None

    def ready(self):
        return self.cm.started

    def send(self, fields):
        self.sent.append((BARRIER, self))
        self.pending = True

    def deliver(self):
        self.answer = self.cm.answer_barrier()

    def poll(self):
        if not self.pending or self.answer is None:
            return None
        out, self.pending, self.answer = self.answer, False, None
        return True, out


def _cm_lockstep(periods, lag=lambda k: 0, start_wall=0.05, barrier=True,
                 executor_first=lambda k: True, real_time_factor=0.0,
                 barrier_delay=lambda k: 0):
    """DynamicsNode with controller_manager_sync and a FakeControllerManager; the manager
    comes up ``start_wall`` wall seconds after the node; the component's executor serves the
    k-th barrier request ``barrier_delay(k)`` wall milliseconds (ticks) after it was sent
    (busy meanwhile: what the node publishes in between is queued at its subscription).
    Returns (core, node, manager, published joint states)."""
    from vm_dynamics.nodes.dynamics_node import DynamicsNode
    p = cm_params(real_time_factor=real_time_factor)
    if not barrier:
        p["controller_manager_state_barrier"] = ""
    core = DynamicsCore.from_params(p)
    tr = MemoryTransport(p)
    cm = FakeControllerManager(core.robot.joints, lag, executor_first)
    calls = []
    tr.service_client = lambda name, srvtype: (calls.append((name, srvtype)),
                                               FakeBarrierClient(cm, tr.sent))[1]
    wall = [0.0]
    node = DynamicsNode(tr, core, wall=lambda: wall[0])
    node.barrier_calls = calls
    seen, requests, queued = 0, 0, []     # queued: [wall ms when served, client]
    tick = 0
    while len(cm.updates) < periods:
        assert wall[0] < 600.0, f"stalled at t={core.t} after {len(cm.updates)} updates"
        tick += 1
        wall[0] = tick * 0.001
        node.tick()
        for topic, msg in tr.sent[seen:]:
            if topic == BARRIER:
                delay = barrier_delay(requests)
                requests += 1
                if delay == 0:
                    msg.deliver()            # served on arrival, in the order sent
                else:
                    queued.append((tick + delay, msg))
            elif wall[0] >= start_wall:
                cm.receive(topic, msg)
        seen = len(tr.sent)
        while queued and queued[0][0] <= tick:
            queued.pop(0)[1].deliver()
        if wall[0] >= start_wall:
            cmd = cm.spin()
            if cmd is not None:
                node.on_joint_command(cmd)
    states = [m for topic, m in tr.sent if topic == "joint_states"]
    node.barrier_requests = sum(topic == BARRIER for topic, _ in tr.sent)
    return core, node, cm, states


def _replay(efforts, start_ns):
    """The same efforts through the existing effort input, plain lockstep from ``start_ns``."""
    p = scenario(lockstep=True, lockstep_wrench=False, control_rate=float(UPDATE_RATE))
    core = DynamicsCore.from_params(p)
    assert core.run(start_ns // 1_000_000) == start_ns // 1_000_000  # the warm-up at rest
    for e in efforts:
        assert core.set_effort(e) and core.advance_lockstep() == core.steps_per_period
    return core


def test_lockstep_with_the_controller_manager_one_update_per_period_and_the_same_motion():
    rng = np.random.default_rng(3)
    # the component's clock 0 to 3 /clock samples behind (3 in 10 updates lag)
    lags = np.where(rng.random(400) < 0.3, rng.integers(1, 4, 400), 0)
    # the manager's clock thread wins the race against the state callback half the time
    first = rng.random(400) < 0.5
    core, node, cm, states = _cm_lockstep(300, lag=lambda k: int(lags[k]),
                                          executor_first=lambda k: bool(first[k]))
    sync = node.cm_sync
    assert sync.engaged and sync.warmup_periods >= 1
    start = sync.warmup_periods * PERIOD_NS
    engaged = [u for u in cm.updates if u[0] >= start]
    # one update per period from the start: update clocks are start, start + P, ...
    assert [u[0] for u in engaged] == [start + k * PERIOD_NS for k in range(len(engaged))]
    # every command from the start was applied for exactly one period
    assert core.steps == (sync.warmup_periods + len(engaged)) * 10
    assert core.effort.accepted == len(engaged) and core.effort.rejected == 0
    # the same efforts through the Float64MultiArray path: bit-identical motion
    replay = _replay([u[2] for u in engaged], start)
    assert replay.steps == core.steps
    for a, b in ((replay.q, core.q), (replay.qd, core.qd), (replay.g, core.g),
                 (replay.V, core.V)):
        assert np.array_equal(a, b)
    assert np.max(np.abs(core.q - scenario()["initial.joint_positions"])) > 1e-3  # it moved
    # the state the manager read at its update k is the state stamped t_k: the barrier
    # (ListParameters of the component's node) before each /clock
    js_stamps = {rm.time_msg_to_ns(m.header.stamp) for m in states}
    assert all(u[0] in js_stamps for u in engaged)
    reads = [(c, r) for c, r in cm.read if c >= start]
    assert len(reads) == len(engaged) and all(r == c for c, r in reads)
    assert node.barrier_calls[0] == ("/vm_dynamics/list_parameters",
                                     "rcl_interfaces/srv/ListParameters")
    assert sync.barriers >= len(engaged) and sync.unguarded == 0


def test_without_the_state_barrier_the_manager_reads_the_state_before():
    """The race the barrier closes: the same manager with no barrier reads, at every update
    its clock thread wins, an earlier state (and the lockstep still holds)."""
    rng = np.random.default_rng(3)
    first = rng.random(400) < 0.5
    # (few periods: the PD here reading one period late diverges within a second)
    core, node, cm, _ = _cm_lockstep(20, barrier=False, executor_first=lambda k: bool(first[k]))
    start = node.cm_sync.warmup_periods * PERIOD_NS
    reads = [(c, r) for c, r in cm.read if c >= start]
    stale = [c for c, r in reads if r != c]
    assert len(stale) >= 3 and all(r < c for c, r in reads if r != c)   # earlier states
    assert not node.barrier_calls and node.barrier_requests == 0


@pytest.mark.parametrize("heartbeats", [False, True], ids=["as-built", "heartbeats-kept"])
def test_the_barrier_holds_when_the_component_is_slow_and_the_node_paces(heartbeats,
                                                                         monkeypatch):
    """The mechanism of the stale reads seen on real ROS at ``real_time_factor`` 0.25: the
    node waits for wall time after the command arrived, and the component's executor is at
    times slower to serve the barrier than the node's heartbeat interval (here every 7th
    request served 15 wall ms late; heartbeats were due every 10 ms).  A state of an older
    stamp sent to the component then sits in its queue with the next period's state; one
    take per wait, the service served before the second take, and the manager reads the
    state before.  The manager here never wins the race (``executor_first`` False): it reads
    exactly what the component's executor took before the barrier's answer.  Each of the two
    rules is enough: ``heartbeats-kept`` re-enables the heartbeat after the start, and the
    barrier's one round trip per state sent must hold alone."""
    if heartbeats:
        monkeypatch.setattr(ControllerManagerSync, "idle_republish", lambda self, paused: None)
    # (20 periods: the PD here reading one period late diverges within a few tenths of a s)
    core, node, cm, states = _cm_lockstep(
        20, real_time_factor=0.25, executor_first=lambda k: False,
        barrier_delay=lambda k: 15 if k % 7 == 3 else 0)
    sync = node.cm_sync
    start = sync.warmup_periods * PERIOD_NS
    engaged = [u for u in cm.updates if u[0] >= start]
    assert [u[0] for u in engaged] == [start + k * PERIOD_NS for k in range(len(engaged))]
    reads = [(c, r) for c, r in cm.read if c >= start]
    stale = [(c, r) for c, r in reads if r != c]
    assert len(reads) == len(engaged) and not stale, f"{len(stale)} stale: {stale[:3]}"
    # after the start each stamp reaches the component once: no heartbeat of an older stamp
    stamps = [rm.time_msg_to_ns(m.header.stamp) for m in states]
    after = [t for t in stamps if t > start]
    assert (after == sorted(set(after))) != heartbeats
    assert sync.unguarded == 0
    if heartbeats:           # periods with a heartbeat queued took more than one round trip
        assert sync.rounds > sync.barriers


def test_before_the_start_commands_are_ignored_and_after_it_older_stamps_are():
    p = cm_params()
    core = DynamicsCore.from_params(p)
    sync = ControllerManagerSync(core)
    joints = core.robot.joints
    cmd = rm.joint_state_msg

    def at(ns, e=1.0):
        return cmd(ns * 1e-9, joints, None, effort=np.full(len(joints), e))
    assert sync.warmup_due(0.0) and not sync.warmup_due(0.005) and sync.warmup_due(0.0101)
    assert sync.advance_warmup() == 10 and core.stamp_ns == PERIOD_NS
    assert not sync.admit(at(0))                      # an answer to an earlier state
    assert sync.ignored == 1 and not sync.engaged
    assert sync.admit(at(PERIOD_NS)) and sync.engaged
    assert not sync.warmup_due(1.0)                   # no warm-up once started
    assert core.apply_joint_command(at(PERIOD_NS)) and core.advance_lockstep() == 10
    # one and three periods behind (the component's clock lagging): they answer this state
    assert core.apply_joint_command(at(PERIOD_NS, 2.0)) and core.advance_lockstep() == 10
    assert core.apply_joint_command(at(0, 2.5)) and core.advance_lockstep() == 10
    # ahead of the state: ignored, the core waits
    assert not core.apply_joint_command(at(5 * PERIOD_NS, 3.0))
    assert core.advance_lockstep() == 0
    assert any("ignored a joint command stamped" in r[2] for r in core.log.records)
    # bad messages are rejected as on the effort input, naming the culprit
    bad = at(4 * PERIOD_NS)
    bad.effort[2] = float("nan")
    assert sync.admit(bad) and not core.apply_joint_command(bad)
    assert "NaN" in core.effort.last_error and "joint3" in core.effort.last_error
    sync.reset()
    assert not sync.engaged and core.inputs.stamp_tolerance_ns == 0


def test_sync_needs_lockstep():
    with pytest.raises(ValueError, match="needs lockstep"):
        ControllerManagerSync(DynamicsCore.from_params(scenario()))


# ------------------------------------------------------------------ over DDS
def test_the_topic_system_protocol_over_dds_drives_the_node_like_the_effort_input(tmp_path,
                                                                                  monkeypatch):
    """The dynamics node as a process; the test is the controller manager and its topic
    system over the project's DDS transport (commands: reliable, depth 1, on
    /joint_commands; states read best effort from /joint_states, as SensorDataQoS; the
    component's node serving rcl_interfaces/srv/ListParameters, the state barrier).  The
    manager's clock thread wins the race against the state callback half the time: the
    barrier must still give every update the state of its own period."""
    pytest.importorskip("cyclonedds")
    periods = 200
    first = np.random.default_rng(5).random(10 * periods) < 0.5
    cm = FakeControllerManager(scenario()["joints"], executor_first=lambda k: bool(first[k]))
    with manager_over_dds(tmp_path, monkeypatch, cm) as link:
        last = link.run(periods)
    states = link.states
    start = lockstep_start_ns(link.log())
    engaged = [u for u in cm.updates if u[0] >= start]
    clocks = [u[0] for u in engaged]
    assert clocks == [start + k * PERIOD_NS for k in range(len(engaged))]   # 0 missed/doubled
    assert all(u[1] == u[0] for u in engaged)       # one clock here: the stamps are exact
    reads = [(c, r) for c, r in cm.read if c >= start]
    assert len(reads) == len(engaged) and all(r == c for c, r in reads)   # the barrier
    assert cm.barriers >= len(engaged)
    # the same efforts through the existing effort input, in-process: identical states
    replay = _replay([u[2] for u in engaged], start)
    js = rm.parse_joint_state(states[last], scenario()["joints"])
    assert rm.stamp_to_ns(replay.t) == last
    assert np.array_equal(js.position, replay.q) and np.array_equal(js.velocity, replay.qd)


def test_the_warm_up_leaves_an_arm_at_rest_exactly_at_rest():
    """The warm-up's length varies from run to run; without gravity and with zero effort the
    arm and its base stay bit for bit at the initial state, so the motion after it does not
    depend on it (docs/ros2_control.md)."""
    core = DynamicsCore.from_params(cm_params())
    before = (core.g, core.V, core.q, core.qd)
    sync = ControllerManagerSync(core)
    for k in range(50):
        assert sync.warmup_due(0.01 * k) and sync.advance_warmup() == 10
    assert core.stamp_ns == 50 * PERIOD_NS
    for a, b in zip(before, (core.g, core.V, core.q, core.qd)):
        assert np.array_equal(a, b)


def test_once_started_no_heartbeat_reaches_the_component_and_a_repeat_is_the_first_sent():
    """While the node waits (here: a command has arrived, its period is not yet run) it sends
    no heartbeat once the lockstep has started: a re-sent state of the current stamp could be
    queued at the component with the next period's state (see the test above).  Paused, the
    heartbeat goes on (its stamp moved on by a nanosecond: newer, not older).  A state
    re-published with a stamp already sent repeats the message first sent, not one whose
    effort field already holds the new command (that would make two runs' /joint_states
    differ by when it fell)."""
    core, node, cm, _ = _cm_lockstep(20)
    tr, sync = node.t, node.cm_sync
    sent = [m for topic, m in tr.sent if topic == "joint_states"]
    first = sent[-1]
    stamp = rm.time_msg_to_ns(first.header.stamp)
    assert stamp == core.stamp_ns and sync.engaged
    cmd = rm.joint_state_msg(stamp * 1e-9, core.robot.joints, None,
                             effort=np.full(len(core.robot.joints), 7.0))
    assert core.apply_joint_command(cmd)              # held, its period not run
    sync.held = None                                  # (the barrier of the last state done)
    before = len(tr.sent)
    for k in range(1, 11):
        node.flush(node.wall() + 0.1 * k)             # idle for 1 s
    assert not [t for t, _ in tr.sent[before:] if t in ("joint_states", "/clock")]
    assert sync.idle_republish(paused=True) is None and sync.idle_republish(False) > 1e9
    again = sync.state_message(rm.joint_state_msg(stamp * 1e-9, core.robot.joints,
                                                  np.zeros(7), effort=np.full(7, 7.0)))
    assert again is first and 7.0 not in list(first.effort)


def test_the_barrier_takes_one_round_trip_per_state_sent_since_the_last_clock():
    """A request answered means one queued state taken (one take per wait, before the
    service): with two states sent since the last /clock the clock waits for two answers in
    a row, and an answer to a request sent before the newest state does not count."""
    core = DynamicsCore.from_params(cm_params())
    answers = []

    class Client:
        pending = False

        def ready(self):
            return True

        def send(self, fields):
            self.pending = True
            answers.append(fields)

        def poll(self):
            if not self.pending:
                return None
            self.pending = False
            return True, {}
    sync = ControllerManagerSync(core, lambda name, srvtype: Client(), "/hw/list_parameters")
    sync.engaged = True
    out = []
    sync.note_state()
    sync.note_state()                                 # two states queued
    assert sync.hold_clock("c1", out.append, 0.0) and len(answers) == 1 and not out
    assert not sync.serve(0.001) and len(answers) == 2 and not out      # one more round
    assert sync.serve(0.002) and out == ["c1"] and sync.barriers == 1 and sync.rounds == 2
    # a state sent while a request is on its way: that answer does not cover it
    sync.note_state()
    assert sync.hold_clock("c2", out.append, 0.003) and len(answers) == 3
    sync.note_state()
    assert not sync.serve(0.004) and len(answers) == 4 and out == ["c1"]
    assert not sync.serve(0.005) and len(answers) == 5 and out == ["c1"]
    assert sync.serve(0.006) and out == ["c1", "c2"] and sync.rounds == 5
    # never more rounds than the component's queue holds
    for _ in range(20):
        sync.note_state()
    assert sync.hold_clock("c3", out.append, 0.01)
    while not sync.serve(0.02):
        pass
    assert out[-1] == "c3" and len(answers) == 5 + 5
