"""The set-up around the emulated controller manager of the ros2_control process tests
(test/process/test_ros2_control*.py): the scenario and its parameters, and the manager's side
over the project's DDS transport, talking to the dynamics node as a process.

Over DDS the manager has the endpoints of ros2_control's topic system and of the state
barrier: its commands go out reliable, depth 1, on ``/joint_commands``; it reads
``/joint_states`` best effort (as SensorDataQoS) and ``/clock``; its component's node serves
``rcl_interfaces/srv/ListParameters`` on ``/vm_dynamics/list_parameters``.  What the manager
does with them (when it updates, which state it reads, what it writes) is each test's own
emulation, passed in as an object with ``receive(topic, msg)``, ``answer_barrier(request)``,
``spin()`` (the command of an update due now, else None) and ``updates`` (one entry per
update, its clock in ns first): the tests share the wiring, not the emulated behaviour.
"""
from __future__ import annotations

import re
import subprocess
import sys
from contextlib import contextmanager

from processes import REPO, join_dds_domain, stop_processes

from vm_dynamics.config.params import flatten, read_params_file
from vm_dynamics.nodes.ros2_control import controller_manager_settings
from vm_dynamics.ros import messages as rm

UPDATE_RATE = 100          # Hz: 10 steps of 1 ms per period
PERIOD_NS = 10_000_000
SCENARIO_FILE = REPO / "config" / "spacecraft_arm.yaml"
#: what the node logs when its lockstep with the manager starts (group 1: warm-up periods)
LOCKSTEP_START = re.compile(r"lockstep with the controller manager from t=\S+ s \(after (\d+) "
                            r"warm-up periods")


def scenario(**overrides) -> dict:
    """The spacecraft arm's flat parameters, with ``overrides``."""
    p = flatten(read_params_file(SCENARIO_FILE))
    p.update(overrides)
    return p


def cm_params(**overrides) -> dict:
    """:func:`scenario` in lockstep with a controller manager at :data:`UPDATE_RATE`."""
    p = scenario(**overrides)
    p.update(controller_manager_settings(p, UPDATE_RATE))
    return p


def lockstep_start_ns(log_text: str) -> int:
    """The stamp (ns) from which the node ran in lockstep with the manager, read from the
    node's log (the warm-up periods before it)."""
    found = LOCKSTEP_START.search(log_text)
    assert found, log_text
    return int(found.group(1)) * PERIOD_NS


def start_dynamics_node(log_path, env, parameters: dict):
    """``dynamics_node`` as a process on the spacecraft arm, as fast as it can run
    (real_time_factor 0), with ``parameters`` (booleans as ROS spells them), its output to
    ``log_path``.  Returns ``(process, open log file)``."""
    args = [f"{k}:={str(v).lower() if isinstance(v, bool) else v}"
            for k, v in parameters.items()]
    log = open(log_path, "w")
    node = subprocess.Popen(
        [sys.executable, "-m", "vm_dynamics.nodes.dynamics_node", "--ros-args",
         "--params-file", str(SCENARIO_FILE),
         "-p", "real_time_factor:=0.0", *sum((["-p", a] for a in args), [])],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    return node, log


class ManagerLink:
    """The emulated manager ``cm`` on its DDS endpoints (module docstring), the node running.

    ``states``: every ``/joint_states`` message received, by its stamp in ns; ``pub``: the
    command publisher; ``transport``: the manager's DdsTransport (for more endpoints)."""

    def __init__(self, transport, cm, node, log_path):
        from vm_dynamics.transport.qos import QosSpec
        self.transport, self.cm, self.node, self.log_path = transport, cm, node, log_path
        self.states = {}
        transport.service("/vm_dynamics/list_parameters", "rcl_interfaces/srv/ListParameters",
                          cm.answer_barrier)
        transport.subscribe("/joint_states", rm.JOINT_STATE, self._on_state,
                            QosSpec(reliable=False, transient_local=False, depth=5))
        transport.subscribe("/clock", rm.CLOCK, lambda m: cm.receive("/clock", m), "clock")
        self.pub = transport.publisher("/joint_commands", rm.JOINT_STATE,
                                       QosSpec(reliable=True, transient_local=False, depth=1))

    def _on_state(self, msg):
        self.states[rm.time_msg_to_ns(msg.header.stamp)] = msg
        self.cm.receive("joint_states", msg)

    def log(self) -> str:
        """The node's output so far."""
        return self.log_path.read_text()

    def run(self, periods: int, publish=None) -> int:
        """Once the node subscribes to the commands: spin the manager, each command it writes
        to ``publish`` (default: :attr:`pub`), until it has made ``periods`` updates; then wait
        for the node's state after the last command.  Returns that state's stamp (ns).  The
        waits are generous deadlines only (the machine may be busy)."""
        publish = self.pub.publish if publish is None else publish

        def loop():
            cmd = self.cm.spin()
            if cmd is not None:
                publish(cmd)
            return len(self.cm.updates) >= periods
        t = self.transport
        assert t.spin_until(lambda: self.pub.matched_subscriptions > 0, 300), self.log()
        assert t.spin_until(loop, 600), (len(self.cm.updates), self.log())
        last = self.cm.updates[-1][0] + PERIOD_NS
        assert t.spin_until(lambda: last in self.states, 60)
        return last


@contextmanager
def manager_over_dds(tmp_path, monkeypatch, cm, parameters: dict | None = None):
    """The node as a process in lockstep with the emulated manager ``cm`` over DDS (one
    loopback domain: ``ROS_DOMAIN_ID`` of the environment, else one of this process); the
    node's parameters: :func:`~vm_dynamics.nodes.ros2_control.controller_manager_settings`
    at :data:`UPDATE_RATE`, then ``parameters``.  Yields the :class:`ManagerLink`; on the way
    out the manager's transport is shut down and the node stopped (its log kept in
    ``tmp_path / "node.log"``)."""
    from vm_dynamics.transport.dds import DdsTransport
    env = join_dds_domain(monkeypatch)
    settings = controller_manager_settings(scenario(), UPDATE_RATE)
    settings.update(parameters or {})
    log_path = tmp_path / "node.log"
    node, log = start_dynamics_node(log_path, env, settings)
    transport = None
    try:
        transport = DdsTransport("fake_controller_manager", {}, ["fake_controller_manager"])
        yield ManagerLink(transport, cm, node, log_path)
    finally:
        if transport is not None:
            transport.shutdown()
        stop_processes([node], [log])
