"""ros2_control's own controllers drive the dynamics node through the topic hardware interface.

``joint_state_topic_hardware_interface/JointStateTopicSystem`` (ros-controls/
topic_based_hardware_interfaces) is a ros2_control system whose ``read()`` copies the newest
``sensor_msgs/JointState`` of its ``joint_states_topic`` (SensorDataQoS: best effort, depth 5;
position, velocity and effort, each when present and finite, by joint name) into the state
interfaces, and whose ``write()`` publishes the command interfaces as one ``sensor_msgs/
JointState`` on ``joint_commands_topic`` (QoS reliable, depth 1): every joint of the tag by
name, its ``effort`` (``position``/``velocity``) entry for each such command interface,
stamped with the hardware component's ``now()``.  The dynamics node already speaks both: it
publishes ``joint_states`` (position, velocity, applied effort; reliable, which a best-effort
reader accepts) and takes commands by joint name on ``joint_commands``
(:meth:`~vm_dynamics.nodes.input_channels.CommandInputs.apply_joint_command`: the same
channel, limits, watchdog and bad-message handling as the Float64MultiArray input): efforts,
and positions or velocities of the joints it drives kinematically (``driven_joints.*``,
:mod:`~vm_dynamics.nodes.driven_commands`).  This module gives

* :func:`ros2_control_tag` / :func:`with_ros2_control`: the URDF ``<ros2_control>`` tag for the
  joints of any of our robots (one command interface per joint, effort, position or velocity;
  the topic system plugin pointed at
  the node's topics; ``trigger_joint_command_threshold`` -1 so that every update sends a
  command, which lockstep needs), spliced into a URDF;
* :func:`controller_manager_settings`: the dynamics node's parameters for a controller manager
  at ``update_rate`` (lockstep, control period = the manager's period, checked to be a whole
  number of steps and of nanoseconds);
* :class:`ControllerManagerSync`: the lockstep with a controller manager in simulated time
  (parameters ``controller_manager_sync``, ``controller_manager_state_barrier``).

**Lockstep with the controller manager** (docs/ros2_control.md).  With ``use_sim_time`` the
manager's loop (``ros2_control_node``) waits for ``/clock`` to start, sleeps one period of
simulated time, then runs ``read/update/write`` and sleeps until ``previous + period`` of
simulated time, forever.  The dynamics node publishes the state at ``t_k``, then ``/clock =
t_k``: the manager's update for period k reads that state and writes the command stamped
``t_k`` (the hardware component's node follows ``/clock`` too); the node advances to
``t_{k+1}`` only when that command arrived.  So every period gets exactly one update, however
slow the machine.  Four things need care:

* *start*: the manager's loop needs ``/clock`` to move before its first update, so until a
  command stamped exactly with the current state arrives the node advances one period per
  ``1/control_rate`` wall seconds (:meth:`ControllerManagerSync.warmup_due`); the commands
  sent meanwhile are ignored.  After the first exact answer the two are in lockstep.  (An arm
  at rest with zero effort, and no gravity, stays exactly at rest over the warm-up, so how
  many periods it lasts does not change the motion that follows.)
* *the component's clock*: the hardware component's node has a ``/clock`` subscription (and
  thread) of its own; when the manager wakes before that node saw ``t_k``, the command is
  stamped ``t_{k-1}`` -- or older: on a loaded machine that thread was seen to miss two
  ``/clock`` steps (a command stamped 36.98 s answering the state at 37 s).  After the start the
  manager updates exactly once per ``/clock`` step and the node steps ``/clock`` once per
  command, so whatever its stamp, a command that arrives while the node waits answers the
  current state: any stamp up to the current state is accepted
  (``CommandInputs.stamp_tolerance_ns``).  A stamp ahead of the state is still ignored.
* *what the manager reads*: its clock thread and the component's state subscription are
  different threads, so ``/clock`` could wake the manager before the state callback ran; the
  node holds ``/clock`` until the component's node has answered as many ListParameters
  requests, sent one after the other after the newest state, as states were sent since the
  last ``/clock`` (the state barrier, :meth:`ControllerManagerSync.hold_clock`): that node's
  executor takes one queued state before it serves each request, so the last answer comes
  only after the newest state was taken.  And once started, the node sends no heartbeat
  (:meth:`ControllerManagerSync.idle_republish`): one state per period reaches the component.
* *identical runs*: a re-publication of the current stamp (a heartbeat before the start or
  while paused) repeats the message first sent
  (:meth:`ControllerManagerSync.state_message`), not one whose effort field already holds the
  next command.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from ..ros import messages as rm

__all__ = ["TOPIC_SYSTEM_PLUGIN", "COMMAND_INTERFACES", "BARRIER_SERVICE_TYPE", "ros2_control_tag",
           "with_ros2_control", "barrier_service", "controller_manager_settings",
           "ControllerManagerSync", "ros2_control_launch"]

#: The topic system's pluginlib name.
TOPIC_SYSTEM_PLUGIN = "joint_state_topic_hardware_interface/JointStateTopicSystem"
#: The hardware component node's service that the state barrier calls (every rclcpp node
#: serves it, in its default callback group: the one of the topic system's state subscription).
BARRIER_SERVICE_TYPE = "rcl_interfaces/srv/ListParameters"
#: The barrier's request: a prefix no parameter has, so the answer is empty.
BARRIER_REQUEST = {"prefixes": ["vm_dynamics_state_barrier"], "depth": 1}
#: The depth of the topic system's state subscription (``rclcpp::SensorDataQoS``: keep last
#: 5): at most this many states can be queued there, so at most this many barrier round trips
#: are needed to have the newest one taken (:meth:`ControllerManagerSync.serve`).
STATE_QUEUE_DEPTH = 5
#: Wall seconds the barrier waits for the service to appear (after the start) or to answer
#: before ``/clock`` goes out without it (logged).
BARRIER_TIMEOUT_S = 5.0
#: The lockstep's stamp tolerance once started: every stamp up to the current state.
ANY_EARLIER_STAMP_NS = 1 << 62
#: Command interfaces the dynamics node applies, one per joint: effort (the joint is
#: simulated from efforts), position or velocity (the joint is kinematically driven:
#: ``driven_joints.position`` / ``driven_joints.velocity``, nodes/driven_commands.py).
COMMAND_INTERFACES = ("effort", "position", "velocity")


def ros2_control_tag(joints: Sequence[str], *, name: str = "vm_dynamics",
                     joint_commands_topic: str = "/joint_commands",
                     joint_states_topic: str = "/joint_states",
                     initial_positions: Sequence[float] | None = None,
                     command_interfaces: Mapping[str, str] | None = None) -> str:
    """The ``<ros2_control>`` tag (XML text) of a system with the topic system plugin.

    Each joint of ``joints`` gets one command interface: ``command_interfaces[joint]``
    (position or velocity: a driven joint), else effort; its initial value is what the
    manager writes before a controller claims the interface, a number that holds the arm where
    it starts (never NaN, which the node rejects): effort and velocity 0, position the joint's
    initial position.  State interfaces: position (``initial_positions``, the scenario's
    initial state), velocity and effort.  ``trigger_joint_command_threshold`` is -1: the plugin
    otherwise skips the command when it differs from the state by less than 1e-5 (an effort
    equal to the applied effort, a position equal to the state's), and the lockstep would wait
    for it.  ``ValueError`` names a bad argument."""
    joints = [str(j) for j in joints]
    if not joints:
        raise ValueError("ros2_control_tag: no joints")
    if len(set(joints)) != len(joints):
        raise ValueError(f"ros2_control_tag: repeated joint names in {joints}")
    kinds = dict(command_interfaces or {})
    for joint, kind in kinds.items():
        if joint not in joints:
            raise ValueError(f"ros2_control_tag: command_interfaces names {joint!r}, not one of "
                             f"the joints {joints}")
        if kind not in COMMAND_INTERFACES:
            raise ValueError(f"ros2_control_tag: command interface {kind!r} of {joint!r}: the "
                             f"dynamics node applies {', '.join(COMMAND_INTERFACES)}")
    for key, topic in (("joint_commands_topic", joint_commands_topic),
                       ("joint_states_topic", joint_states_topic)):
        if not isinstance(topic, str) or not topic.startswith("/") or any(
                c.isspace() for c in topic):
            raise ValueError(f"ros2_control_tag: {key} must be an absolute topic name, got "
                             f"{topic!r}")
    q0 = [0.0] * len(joints) if initial_positions is None else [float(v) for v in
                                                                initial_positions]
    if len(q0) != len(joints) or not all(math.isfinite(v) for v in q0):
        raise ValueError(f"ros2_control_tag: initial_positions must be {len(joints)} finite "
                         f"numbers, got {initial_positions!r}")
    lines = [f'  <ros2_control name={quoteattr(name)} type="system">',
             "    <hardware>",
             f"      <plugin>{TOPIC_SYSTEM_PLUGIN}</plugin>",
             f'      <param name="joint_commands_topic">{escape(joint_commands_topic)}</param>',
             f'      <param name="joint_states_topic">{escape(joint_states_topic)}</param>',
             '      <param name="trigger_joint_command_threshold">-1</param>',
             "    </hardware>"]
    for joint, q in zip(joints, q0):
        kind = kinds.get(joint, "effort")
        lines += [f"    <joint name={quoteattr(joint)}>",
                  f'      <command_interface name="{kind}">',
                  f'        <param name="initial_value">{q if kind == "position" else 0.0!r}'
                  '</param>',
                  "      </command_interface>",
                  '      <state_interface name="position">',
                  f'        <param name="initial_value">{q!r}</param>',
                  "      </state_interface>",
                  '      <state_interface name="velocity"/>',
                  '      <state_interface name="effort"/>',
                  "    </joint>"]
    lines.append("  </ros2_control>")
    return "\n".join(lines) + "\n"


def with_ros2_control(urdf: str, tag: str) -> str:
    """``urdf`` with ``tag`` inserted before its closing ``</robot>`` (``ValueError`` if it has
    none, or already has a ``<ros2_control>`` tag)."""
    end = urdf.rfind("</robot>")
    if end < 0:
        raise ValueError("with_ros2_control: the URDF has no closing </robot>")
    if "<ros2_control" in urdf:
        raise ValueError("with_ros2_control: the URDF already has a <ros2_control> tag")
    return urdf[:end] + tag + urdf[end:]


def barrier_service(hardware: str = "vm_dynamics", namespace: str = "/") -> str:
    """The ListParameters service of the node that ros2_control gives the hardware component
    ``hardware`` (the ``<ros2_control name=...>``): hardware_interface names that node after
    the hardware, lower case, ``/`` replaced by ``_``, in the controller manager's
    ``namespace``."""
    node = hardware.lower().replace("/", "_")
    if not node or not all(c.isalnum() or c == "_" for c in node) or node[0].isdigit():
        raise ValueError(f"barrier_service: hardware name {hardware!r} does not make a valid "
                         "node name (letters, digits and _, not starting with a digit)")
    return f"{namespace.rstrip('/')}/{node}/list_parameters"


def controller_manager_settings(params: Mapping[str, Any], update_rate: int,
                                hardware: str = "vm_dynamics", namespace: str = "/") -> dict:
    """The dynamics node's parameters for a controller manager at ``update_rate`` Hz:
    lockstep, ``control_rate`` = ``update_rate``, ``controller_manager_sync`` with the state
    barrier on the node of the hardware component ``hardware`` (:func:`barrier_service`), and
    no wait for a base wrench (the manager commands the joints only).

    The manager's period is ``10^9 // update_rate`` ns of simulated time; the node's period
    (``steps_per_period · dt``) must be exactly that many nanoseconds, or ``/clock`` would not
    land on the manager's wake-up times (one early by a nanosecond is a deadlock, one late a
    drift).  ``ValueError`` says which value to change."""
    if isinstance(update_rate, bool) or not isinstance(update_rate, int) or update_rate <= 0:
        raise ValueError(f"update_rate: expected a positive integer (Hz), got {update_rate!r}")
    dt = float(params.get("dt", 0.0))
    if not dt > 0:
        raise ValueError(f"dt: expected a positive time step, got {params.get('dt')!r}")
    period_ns = 1_000_000_000 // update_rate
    steps = max(1, int(round(1.0 / (update_rate * dt))))
    if 1_000_000_000 % update_rate or rm.stamp_to_ns(steps * dt) != period_ns:
        raise ValueError(
            f"update_rate {update_rate} Hz with dt={dt:g} s: the controller manager's period "
            f"({1e9 / update_rate:g} ns) must be a whole number of nanoseconds and of time "
            f"steps; choose an update_rate that divides 1e9 and 1/dt")
    return {"lockstep": True, "lockstep_wrench": False, "control_rate": float(update_rate),
            "controller_manager_sync": True,
            "controller_manager_state_barrier": barrier_service(hardware, namespace)}


class ControllerManagerSync:
    """The start of the lockstep with a controller manager, its stamp tolerance and the state
    barrier before each ``/clock`` (module docstring).  ``core`` is the node's
    :class:`~vm_dynamics.nodes.dynamics_core.DynamicsCore` (in lockstep); ``client`` makes the
    barrier's service client (``client(name, srvtype)``, a transport's ``service_client``),
    ``barrier`` is that service's name (empty: no barrier)."""

    def __init__(self, core, client=None, barrier: str = ""):
        if not core.lockstep:
            raise ValueError("controller_manager_sync: needs lockstep: true")
        self.core = core
        self.period_ns = rm.stamp_to_ns(core.steps_per_period * core.dt)
        self.wall_period = core.steps_per_period * core.dt
        if barrier and client is None:
            raise ValueError("controller_manager_state_barrier: this transport has no service "
                             "clients")
        self.make_client = client
        self.barrier_name = barrier
        self.client = client(barrier, BARRIER_SERVICE_TYPE) if barrier else None
        self.held: tuple[Any, Any] | None = None     # (clock message, its publish function)
        self.held_since = 0.0
        self.barriers = 0               # /clock messages sent after the barrier's answer
        self.rounds = 0                 # barrier requests answered (all of them)
        self.unguarded = 0              # sent without it after the start (logged)
        self.reset()

    def reset(self) -> None:
        """Back to the start (also after ``~/reset``)."""
        self.engaged = False
        self.last_state = None           # (stamp ns, joint_states message) last published
        self.held = None                 # a /clock of the state before the reset is not sent
        if self.client is not None and self.client.pending:   # nor released by its answer
            self.client = self.make_client(self.barrier_name, BARRIER_SERVICE_TYPE)
        self.unconfirmed = 0             # states sent since the last /clock went out
        self.answered = 0                # answers to requests sent after the newest state
        self.request_before_state = False   # the pending request was sent before it
        self.ignored = 0                 # commands of the warm-up (not the current state)
        self.warmup_periods = 0
        self.last_warmup_wall: float | None = None
        self.core.inputs.stamp_tolerance_ns = 0

    def admit(self, msg: Any) -> bool:
        """Whether the joint command ``msg`` goes to the core.  Before the start: only one
        stamped exactly with the current state (which starts the lockstep); after it, all
        (the core accepts any stamp up to the current state, rejects bad messages)."""
        if self.engaged:
            return True
        try:
            stamp = rm.time_msg_to_ns(msg.header.stamp)
        except (AttributeError, TypeError, ValueError):
            return True                  # the core rejects it and says why
        if stamp != self.core.stamp_ns:
            self.ignored += 1
            return False
        self.engaged = True
        self.core.inputs.stamp_tolerance_ns = ANY_EARLIER_STAMP_NS
        self.core.log.emit("INFO", "cm-sync", f"lockstep with the controller manager from "
                           f"t={self.core.t:.6g} s (after {self.warmup_periods} warm-up "
                           f"periods, {self.ignored} earlier commands ignored; state barrier: "
                           f"{self.barrier_name or 'none'})",
                           throttle=False)
        return True

    def state_message(self, msg: Any) -> Any:
        """The ``joint_states`` message to publish for ``msg``: a re-publication of the last
        stamp (the node's heartbeat while it waits for the command or for wall time) repeats
        the message first sent with that stamp.  Its effort field is the held input, which a
        command that arrived meanwhile has replaced: the heartbeat would otherwise publish, at
        a wall-clock-dependent moment, a second state of that stamp with the next period's
        effort (two runs then differ in ``/joint_states`` though not in motion)."""
        try:
            stamp = rm.time_msg_to_ns(msg.header.stamp)
        except (AttributeError, TypeError, ValueError):
            return msg
        if self.last_state is not None and self.last_state[0] == stamp:
            return self.last_state[1]
        self.last_state = (stamp, msg)
        return msg

    def idle_republish(self, paused: bool) -> float | None:
        """The heartbeat interval for the node's publish schedule (``None``: its default,
        ``1 / publish_rate``): none at all (``math.inf``) once the lockstep has started,
        unless paused.  Why: a heartbeat re-sends the state of the current stamp while the
        node waits (for the command, for wall time, for the barrier); sent while a barrier's
        request is on its way, it lands in the component's queue behind that request and is
        still there when the next period's state arrives, so the component's executor takes
        the heartbeat, not the new state, before it serves the next barrier request -- the
        manager read the state of the period before (1 update in ~7 000 at
        ``real_time_factor`` 0.25).  Once started the state moves every period, so RViz and TF
        do not need it; before the start (no manager yet) and while paused (the stamp moves
        on by a nanosecond per heartbeat, newer, not older) the heartbeat stays, and the
        barrier counts it (:meth:`note_state`)."""
        return math.inf if self.engaged and not paused else None

    def note_state(self) -> None:
        """A ``joint_states`` message went out: the next ``/clock`` waits for one more
        barrier round trip, and a request already on its way (sent before this state) does
        not count."""
        self.unconfirmed = min(self.unconfirmed + 1, STATE_QUEUE_DEPTH)
        self.answered = 0
        self.request_before_state = self.client is not None and self.client.pending

    @property
    def holding(self) -> bool:
        """A ``/clock`` message waits for the barrier (nothing advances meanwhile)."""
        return self.held is not None

    def hold_clock(self, msg: Any, publish, wall_now: float) -> bool:
        """Called with each ``/clock`` message right after the state it belongs to was
        published: True if the message is held until the barrier's answer (:meth:`serve`
        publishes it then), False if it is to be published now (no barrier; or before the
        start, while the hardware component's service is not there yet).

        Why: the manager's clock thread and the component's state subscription are served
        by different threads, so a manager woken by ``/clock`` can run its ``read()`` before
        the state was taken (the state of the period before: 437 of 10 000 updates with
        nothing in between, 41-65 with 2 ms).  The component's node serves its parameter
        services in the callback group of its state subscription (the default one, mutually
        exclusive), and its executor, per wait, takes a ready subscription once (one
        message) before it serves a ready service; a request sent after the state on the
        same wire is ready only when the state is (or was taken).  So each answer to a
        request sent after the newest state means one more state taken, unless the queue was
        empty; with ``n`` states sent since the last ``/clock`` (at most the queue's depth),
        ``n`` answers in a row mean the newest was taken (:meth:`serve`)."""
        if self.client is None:
            return False
        if not self.engaged and not self.client.ready():
            return False
        self.held, self.held_since = (msg, publish), wall_now
        self.serve(wall_now)
        return True

    def serve(self, wall_now: float) -> bool:
        """Move the barrier on (send the request, take the answer); True when the held
        ``/clock`` was published now."""
        if self.held is None:
            return False
        client, log = self.client, self.core.log
        if client.pending:
            answer = client.poll()
            if answer is not None:
                if not answer[0]:
                    log.emit("WARN", "cm-barrier", f"state barrier {self.barrier_name}: "
                             f"{answer[1]}; /clock sent without it")
                    self.unguarded += 1
                    return self.release()
                self.rounds += 1
                if self.request_before_state:      # it does not cover the newest state
                    self.request_before_state = False
                else:
                    self.answered += 1
                if self.answered < self.unconfirmed:
                    if client.ready():             # one more round trip
                        client.send(BARRIER_REQUEST)
                        self.held_since = wall_now
                    return False
                self.barriers += 1
                return self.release()
        elif client.ready():
            client.send(BARRIER_REQUEST)
            self.held_since = wall_now
            return False
        if wall_now - self.held_since < BARRIER_TIMEOUT_S:
            return False
        why = "did not answer" if client.pending else "is not available"
        log.emit("WARN", "cm-barrier", f"state barrier: the hardware component's service "
                 f"{self.barrier_name} {why} within {BARRIER_TIMEOUT_S:g} s; /clock sent "
                 "without it (the manager may read the state of the period before)")
        self.unguarded += 1
        if client.pending:                # a new client: the old request is abandoned
            self.client = self.make_client(self.barrier_name, BARRIER_SERVICE_TYPE)
        return self.release()

    def release(self) -> bool:
        """Publish the held ``/clock`` message."""
        msg, publish = self.held
        self.held = None
        self.unconfirmed = self.answered = 0
        publish(msg)
        return True

    def warmup_due(self, wall_now: float) -> bool:
        """Before the start: True (and noted) when a warm-up period is due, one per
        ``1/control_rate`` wall seconds (the manager's loop needs ``/clock`` to move)."""
        if self.engaged or self.core.paused or self.held is not None:
            return False
        if self.last_warmup_wall is not None and \
                wall_now - self.last_warmup_wall < self.wall_period - 1e-9:
            return False
        self.last_warmup_wall = wall_now
        return True

    def advance_warmup(self) -> int:
        """One control period with the held inputs; the state and ``/clock`` after it are due
        at once.  Returns the steps taken."""
        core = self.core
        done = core.run(core.steps_per_period)
        if done:
            self.warmup_periods += 1
            core.schedule.state_pending = True
        return done


def ros2_control_launch(scenario: str, update_rate: int, command_interface: str = ""
                        ) -> tuple[str, dict, str, str]:
    """``(scenario path, dynamics node overrides, node URDF, URDF with the tag)`` for
    ``launch/ros2_control.launch.py``: the scenario as the other launch files read it
    (:func:`~vm_dynamics.nodes.launching.launch_scenario`), the dynamics node's
    :func:`controller_manager_settings`, and the URDF of the model with the
    ``<ros2_control>`` tag of the scenario's ``joints`` at its initial positions (for
    robot_state_publisher, which the controller manager reads it from).  Each joint's command
    interface is its kind: position or velocity for the scenario's ``driven_joints``, or for
    every joint ``command_interface`` (position or velocity: the node's
    ``driven_joints.<interface>`` set to all joints; for a scenario without driven joints),
    effort for the others.  ``ValueError`` names the problem."""
    from .launching import launch_scenario
    path, params, node_urdf, model_urdf = launch_scenario(scenario)
    joints = params.get("joints") or []
    if not joints:
        raise ValueError(f"scenario {scenario!r}: no joints for ros2_control")
    q0 = (params.get("initial") or {}).get("joint_positions")
    overrides = controller_manager_settings(params, update_rate)
    driven = {k: v for k, v in (params.get("driven_joints") or {}).items() if v}
    if command_interface:
        if command_interface not in COMMAND_INTERFACES:
            raise ValueError(f"command_interface:={command_interface}: expected one of "
                             f"{', '.join(COMMAND_INTERFACES)}")
        if driven:
            raise ValueError(f"command_interface:={command_interface}: scenario {scenario!r} "
                             f"sets driven_joints ({driven}); leave command_interface empty")
        if command_interface != "effort":
            driven = {command_interface: list(joints)}
            overrides[f"driven_joints.{command_interface}"] = list(joints)
    kinds = {j: k for k in COMMAND_INTERFACES[1:] for j in driven.get(k) or []}
    tag = ros2_control_tag(joints, initial_positions=q0 if q0 else None,
                           command_interfaces=kinds)
    return path, overrides, node_urdf, with_ros2_control(model_urdf, tag)
