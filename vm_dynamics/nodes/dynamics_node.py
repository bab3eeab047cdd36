"""``dynamics_node``: the vehicle-manipulator simulation as a ROS 2 node (rclpy or plain DDS).

    dynamics_node --ros-args --params-file config/spacecraft_arm.yaml [-p real_time_factor:=0.0]

Publishes ``joint_states`` (sensor_msgs/JointState, applied effort), ``odom``
(nav_msgs/Odometry: pose in ``odom_frame``, body twist in ``child_frame_id``), ``/tf``
(``odom_frame`` -> ``base_frame``), ``/clock`` (rosgraph_msgs/Clock, best effort), ``/diagnostics``
``ee_path`` (nav_msgs/Path of ``ee_frame``) and ``base_path`` (nav_msgs/Path of
``base_frame``, from the published odometry; both keep ``ee_path_length`` poses);
subscribes ``effort_controller/commands``
(std_msgs/Float64MultiArray in the order of ``joints``) and ``base_wrench``
(geometry_msgs/WrenchStamped) and, with ``wrench_source: measured``, a force/torque sensor's
geometry_msgs/WrenchStamped on ``measured_wrench.topic``
(:mod:`~vm_dynamics.nodes.wrench_source`); services ``~/reset`` (std_srvs/Trigger) and
``~/pause`` (std_srvs/SetBool), aliases of the simulation_interfaces services and action the
node also serves (:mod:`~vm_dynamics.nodes.simulation_interfaces`: get_simulator_features,
get/set_simulation_state, reset_simulation, step_simulation, simulate_steps, get_entities,
get_entities_states, get/set_entity_state).  With a ``capture`` section (a target,
:mod:`~vm_dynamics.nodes.capture`) also ``target/odom`` (nav_msgs/Odometry), the
``odom_frame -> target`` transform on ``/tf``, ``target/marker`` (visualization_msgs/Marker)
and ``contact_wrench`` (geometry_msgs/WrenchStamped), and services ``~/grasp`` and
``~/release`` (std_srvs/Trigger).  All logic is in
:class:`~vm_dynamics.nodes.dynamics_core.DynamicsCore`; this module only wires it to the
transport and paces it to the wall clock.

The node is the clock source, so its own timers always run on wall time: ``use_sim_time`` is
forced to false for it (with a warning if it was set).

Input bounds (node parameters, :data:`NODE_PARAMETERS`): a command sample larger than
``max_message_bytes`` serialized bytes is dropped before it is deserialised, and an effort
command whose ``layout.dim`` has more than ``max_layout_dims`` entries is rejected before its
layout is read; both with a throttled warning of their own (one throttle key per reason).
An effort command whose number of values is not the number of joints is rejected from its
serialized length fields, before it is decoded (counted and logged as the decoded check
would).

Under a flood the simulation keeps its clock: each executor turn handles at most
``max_commands_per_turn`` (10) samples per command topic -- the newest, as a newer command
supersedes an older one -- and drops the older excess, counted as ``effort_dropped`` /
``wrench_dropped`` in the command watchdog's ``/diagnostics``; the readers queue up to
``command_queue_depth`` samples between two turns.  A flooded turn thus costs the timer a
bounded delay, and when CPU is short the input work shrinks next to the stepping, not the
other way round.  A flood therefore costs valid commands (some are dropped with the flood),
not stepping or publishing, as long as the node gets the CPU that stepping needs (flooders on
the same cores take their share).  ``bench/flood.py`` measures both;
``test/process/test_soak.py`` checks the behaviour.

A second publisher of ``/clock``, ``joint_states`` or ``odom`` (another simulation on the same
``ROS_DOMAIN_ID``) is reported as an ERROR naming the topic, every 10 s while it lasts
(:class:`~vm_dynamics.nodes.publisher_watch.PublisherWatch`, checked every 2 s of wall time).

Ctrl-C / SIGINT (also the second one ``ros2 launch`` sends) and SIGTERM end the node with
exit code 0 and no traceback.
"""
from __future__ import annotations

import math
import sys
import time
from collections import deque

from ..config.params import parameter_defaults
from ..core.signals import deferred_interrupts
from ..ros import cdr_counts as rm_cdr
from ..ros import messages as rm
from ..transport import QosSpec
from ..transport import ros_args as rargs
from .capture import CAPTURE_PUBLICATIONS, CAPTURE_SECTIONS, CAPTURE_SERVICES
from .dynamics_core import SKIPPABLE, DynamicsCore
from .entry import run_node
from .lockstep_wire import StateWire
from .pacing import Pacer
from .parameters import (
    DYNAMICS_NODE_PARAMETERS,
    DYNAMICS_PARAMETERS,
    checked_command_line,
    command_line_parameters,
    section_parameters,
)
from .publisher_watch import PublisherWatch
from .ros2_control import ControllerManagerSync
from .simulation_interfaces import SimulationInterfaces

__all__ = ["main", "node_spec", "DynamicsNode", "NODE_NAME", "NODE_PARAMETERS", "PUBLICATIONS",
           "NODE_PUBLICATIONS",
           "SUBSCRIPTIONS", "SERVICES", "node_parameter_defaults"]

NODE_NAME = "dynamics_node"

#: Wall time one timer tick may spend stepping before it returns to the executor (s).  A
#: simulation slower than real time would otherwise step in long batches (up to the pacer's
#: max lag) during which rclpy serves no subscription: commands queue up past the reader's
#: depth and are lost (measured: 2 of ~20 commands/s accepted for spacecraft_arm on numpy).
TICK_BUDGET_S = 0.02
#: How often the pacing statistics (real-time factor, tick jitter) for the diagnostics are
#: recomputed: not every tick (at 1 kHz in lockstep that numpy work was ~9 % of the node's thread).
TIMING_REFRESH_S = 0.25
#: How often the node looks which skippable outputs (:data:`SKIPPABLE`: ``/tf``, the paths)
#: have no subscriber, to leave them unbuilt: a subscriber that appears gets them within this
#: time of its discovery (volatile topics: a late joiner has no claim on earlier samples).
SUBSCRIBERS_REFRESH_S = 0.5
#: Timer period in lockstep at ``real_time_factor`` 0 without a controller manager (s): every
#: command then advances the simulation as it arrives, so the tick has only the idle work
#: (heartbeats, diagnostics, the publisher watch); at 1 ms it fired in every period with
#: nothing to do (~27-55 µs and ~0.5 extra executor waits per period at 1 kHz).
LOCKSTEP_IDLE_TICK_S = 0.01

#: Parameters of the node itself (input bounds), in addition to the core's
#: ``DYNAMICS_PARAMETERS``: the scenario model's table
#: (:data:`vm_dynamics.config.spec.DYNAMICS_NODE_PARAMETERS`).
NODE_PARAMETERS = DYNAMICS_NODE_PARAMETERS


def node_parameter_defaults(overrides=None) -> dict:
    """Declared parameters of the dynamics node: the core's, :data:`NODE_PARAMETERS`, and the
    ``forces.*`` and ``capture.*`` names of ``overrides`` (its command-line values; the force
    elements and the capture, checked by their readers)."""
    out = parameter_defaults(DYNAMICS_PARAMETERS)
    out.update(parameter_defaults(NODE_PARAMETERS))
    out.update(section_parameters(overrides, ("forces", *CAPTURE_SECTIONS)))
    return out


def _limit(params, name: str) -> int:
    entry = NODE_PARAMETERS[name]
    return entry.check(params.get(name, entry.default), name)


#: core output key -> (topic, message type, QoS profile)
PUBLICATIONS = {
    "joint_states": ("joint_states", rm.JOINT_STATE, "default"),
    "odom": ("odom", rm.ODOMETRY, "default"),
    "tf": ("/tf", rm.TF_MESSAGE, "default"),
    "clock": ("/clock", rm.CLOCK, "clock"),
    "diagnostics": ("/diagnostics", rm.DIAGNOSTIC_ARRAY, "default"),
    "ee_path": ("ee_path", "nav_msgs/msg/Path", "default"),
    # joint_source measured or prescribed (hardware in the loop)
    "vehicle_pose_command": ("hil/vehicle_pose_command", "geometry_msgs/msg/PoseStamped",
                             "default"),
    "base_reaction_wrench": ("hil/base_reaction_wrench", rm.WRENCH_STAMPED, "default"),
    "coupled_joint_efforts": ("hil/joint_efforts", rm.JOINT_STATE, "default"),
}
#: topics the node builds itself (not core outputs): key -> (topic, message type, QoS)
NODE_PUBLICATIONS = {
    "base_path": ("base_path", "nav_msgs/msg/Path", "default"),   # from the published odom
}
#: topic -> message type, subscribed by the node (:meth:`DynamicsNode._subscribe` gives each
#: its handler; the measured joint states only with ``joint_source: measured``, on
#: ``measured.topic``)
SUBSCRIPTIONS = {
    "effort_controller/commands": rm.FLOAT64_MULTI_ARRAY,
    "joint_commands": rm.JOINT_STATE,            # efforts by joint name, stamped
    "base_wrench": rm.WRENCH_STAMPED,
    "measured/joint_states": rm.JOINT_STATE,     # joint_source measured; measured.topic
    "measured/wrench": rm.WRENCH_STAMPED,        # wrench_source measured; measured_wrench.topic
}
SERVICES = {"~/reset": "std_srvs/srv/Trigger", "~/pause": "std_srvs/srv/SetBool"}


class DynamicsNode:
    """Wires a :class:`DynamicsCore` to a transport: publishers, subscriptions, timer,
    services."""

    def __init__(self, transport, core: DynamicsCore, wall=time.monotonic):
        self.t, self.core, self.wall = transport, core, wall
        hil = core.joint_source != "simulated"
        capture = CAPTURE_PUBLICATIONS if core.capture is not None else {}
        self.pubs = {key: transport.publisher(topic, mtype, qos)
                     for key, (topic, mtype, qos) in {**PUBLICATIONS, **NODE_PUBLICATIONS,
                                                      **capture}.items()
                     if hil or not topic.startswith("hil/")}
        params = transport.params
        self.max_bytes = _limit(params, "max_message_bytes")
        self.max_dims = _limit(params, "max_layout_dims")
        commands = QosSpec(reliable=True, transient_local=False,
                           depth=_limit(params, "command_queue_depth"))
        per_turn = _limit(params, "max_commands_per_turn")
        self.oversized = 0
        core.input_stats.update(effort_dropped=0, wrench_dropped=0)
        # base_path: the vehicle's trajectory (base_frame in odom_frame) from the published
        # odometry, last ee_path_length poses, sent like ee_path (every 10th state, ≤ path_rate/s)
        self.base_path = deque(maxlen=max(1, int(core.params["ee_path_length"])))
        self._base_path_count = 0
        # lockstep with a ros2_control controller manager (its start and stamp tolerance)
        self.cm_sync = (ControllerManagerSync(
            core, getattr(transport, "service_client", None),
            str(params.get("controller_manager_state_barrier") or ""))
            if params.get("controller_manager_sync") else None)
        # states as CDR straight from the arrays, commands read from theirs (lockstep_wire.py)
        self.wire = None
        if core.joint_source == "simulated" and self.cm_sync is None and all(
                getattr(self.pubs[key], "writes_cdr", False) for key in ("joint_states", "odom",
                                                                        "clock")):
            self.wire = core.wire = StateWire(core.robot)
        self._subscribe(transport, commands, per_turn)
        try:
            transport.service("~/reset", SERVICES["~/reset"], self.on_reset)
            transport.service("~/pause", SERVICES["~/pause"], self.on_pause)
            if core.capture is not None:         # the target: grasp and release
                transport.service("~/grasp", CAPTURE_SERVICES["~/grasp"], self.on_grasp)
                transport.service("~/release", CAPTURE_SERVICES["~/release"], self.on_release)
        except (NotImplementedError, ValueError) as exc:  # a transport without services
            transport.logger.warn(f"services ~/reset and ~/pause unavailable: {exc}")
        self.simulation = SimulationInterfaces(core, self.after_change)
        try:
            self.simulation.register(transport)
        except (NotImplementedError, ValueError, ImportError) as exc:  # not installed
            transport.logger.warn(f"simulation_interfaces services unavailable: {exc}")
        rtf = float(core.params["real_time_factor"])
        tick = 0.001 if rtf == 0 or core.lockstep else min(0.01, max(0.001, core.dt / rtf))
        # lockstep: the tick applies a command that arrived before its period was due (paced,
        # or held by the controller manager's sync); unpaced, commands advance on arrival
        if core.lockstep and rtf == 0 and self.cm_sync is None:
            tick = LOCKSTEP_IDLE_TICK_S
        self.pacer = Pacer(core.dt, rtf, tick)
        self._timing_at = -math.inf
        self._subscribers_at = wall()       # everything goes out until the first look
        self.pacer.reset(wall(), core.steps)
        self.timer = transport.timer(tick, self.tick)
        # this node must be the only source of the simulation's time and state
        self.watch = PublisherWatch(transport, {self.pubs[key].topic: 1 for key in
                                                ("clock", "joint_states", "odom")})
        self.flush()

    def _subscribe(self, transport, commands: QosSpec, per_turn: int) -> None:
        """Subscribe every topic of :data:`SUBSCRIPTIONS` this node's configuration uses, with
        its handler: the command topics (reliable, ``command_queue_depth`` deep, at most
        ``max_commands_per_turn`` per executor turn) and, with ``joint_source: measured``, the
        real arm's joint states on ``measured.topic``."""
        core = self.core
        handlers = {
            "effort_controller/commands": dict(
                callback=self.on_effort, qos=commands, max_per_turn=per_turn,
                screen=self.screen_effort,
                on_drop=lambda n: self._count_dropped("effort_dropped", n)),
            "joint_commands": dict(
                callback=self.on_joint_command, qos=commands, max_per_turn=per_turn,
                on_drop=lambda n: self._count_dropped("effort_dropped", n)),
            "base_wrench": dict(
                callback=self.on_wrench, qos=commands, max_per_turn=per_turn,
                on_drop=lambda n: self._count_dropped("wrench_dropped", n)),
        }
        def topic(key):
            name = core.params[key]
            if not isinstance(name, str) or not name:
                raise ValueError(f"{key}: expected a topic name, got {name!r}")
            return name
        if core.measured is not None:
            # best effort (matches reliable and best-effort drivers, as sensor data), deep
            # enough to keep 1 s of 1 kHz samples queued: a node that falls behind on a
            # loaded machine catches up instead of dropping samples
            handlers["measured/joint_states"] = dict(
                callback=self.on_measured, topic=topic("measured.topic"),
                qos=QosSpec(reliable=False, transient_local=False, depth=1000))
        if core.measured_wrench is not None:
            # best effort (a sensor stream), shallow: only the newest sample is applied
            handlers["measured/wrench"] = dict(
                callback=self.on_measured_wrench, topic=topic("measured_wrench.topic"),
                qos=QosSpec(reliable=False, transient_local=False, depth=10))
        if self.wire is not None and getattr(transport, "cdr_handlers", False) \
                and core.inputs.driven is None:
            handlers["joint_commands"]["cdr"] = self.on_joint_command_cdr
            handlers["base_wrench"]["cdr"] = self.on_wrench_cdr
        for default_topic, mtype in SUBSCRIPTIONS.items():
            h = handlers.get(default_topic)
            if h is not None:
                transport.subscribe(h.pop("topic", default_topic), mtype, h.pop("callback"),
                                    h.pop("qos"), max_bytes=self.max_bytes, **h)

    # ---------------------------------------------------------------- callbacks
    def _count_dropped(self, key: str, count: int) -> None:
        self.core.input_stats[key] += count

    def _too_many_dims(self, ndims: int) -> bool:
        """Reject an effort command with more than ``max_layout_dims`` layout entries."""
        if ndims <= self.max_dims:
            return False
        self.oversized += 1
        self.t.logger.warn_throttled(
            ("effort-layout-dims", "effort_controller/commands"), 2.0,
            f"rejected effort command: layout.dim has {ndims} entries, more than "
            f"max_layout_dims={self.max_dims}; keeping the last valid input")
        return True

    def screen_effort(self, data) -> bool:
        """The transport's check of a serialized effort command before it is decoded: False
        (rejected, counted and logged like the decoded check) for too many layout entries or,
        with no layout entries, a number of values other than the number of joints."""
        ext = rm_cdr.float64_multi_array_extent(data)
        if ext is None:
            return True                 # not plain Float64MultiArray CDR: the decoder says why
        if self._too_many_dims(ext.dims):
            return False
        if ext.dims or self.core.joint_source != "simulated" \
                or not 0 <= ext.data_offset <= ext.size:
            return True                 # the decoded checks decide (and say why)
        values, n = ext.size - ext.data_offset, len(self.core.robot.joints)
        if values == n:
            return True
        self.core.reject_effort_command(f"Float64MultiArray: expected {n} values, got {values}")
        self.core.log.drain_into(self.t.logger)
        return False

    def on_effort(self, msg) -> None:
        try:
            ndims = len(msg.layout.dim)
        except (AttributeError, TypeError):
            ndims = 0  # not a Float64MultiArray: the core rejects it by type
        if self._too_many_dims(ndims):
            return
        self.core.apply_effort_command(msg)
        if self.core.lockstep:
            self.advance_lockstep()
        self.core.log.drain_into(self.t.logger)

    def on_joint_command(self, msg) -> None:
        if self.cm_sync is not None and not self.cm_sync.admit(msg):
            return                    # before the lockstep with the controller manager started
        self.core.apply_joint_command(msg)
        if self.core.lockstep:
            self.advance_lockstep()
        self.core.log.drain_into(self.t.logger)

    def on_joint_command_cdr(self, data: bytes) -> bool:
        """A joint command read from its CDR (:class:`StateWire`); False if it is not laid
        out as the controller node sends it (the message path then decides)."""
        got = self.wire.command.decode(data)
        if got is None:
            return False
        if not self.core.inputs.efforts_ignored(by_name=True):
            self.core.inputs.command_values(got[0], got[3])
        self._commanded()
        return True

    def on_wrench_cdr(self, data: bytes) -> bool:
        """A base wrench in the body frame read from its CDR; False as above."""
        got = self.wire.wrench.decode(data)
        if got is None:
            return False
        self.core.inputs.wrench_values(got[0], got[1], self.wire.base_frame)
        self._commanded()
        return True

    def _commanded(self) -> None:
        if self.core.lockstep:
            self.advance_lockstep()
        self.core.log.drain_into(self.t.logger)

    def on_measured(self, msg) -> None:
        """A real arm's joint state: the vehicle integrates up to its time stamp."""
        if self.core.apply_measured_joint_state(msg, time.time()):
            while True:
                done = self.core.run(min(self.core.measured_steps_available(),
                                         self.core.steps_until_due(self.wall())))
                self.flush()
                if not done or not self.core.measured_steps_available():
                    break
        self.core.log.drain_into(self.t.logger)

    def on_measured_wrench(self, msg) -> None:
        """A force/torque sensor's wrench: held on the chaser from now on."""
        self.core.apply_measured_wrench(msg, time.time())
        self.core.log.drain_into(self.t.logger)

    def on_wrench(self, msg) -> None:
        self.core.apply_base_wrench(msg)
        if self.core.lockstep:
            self.advance_lockstep()
        self.core.log.drain_into(self.t.logger)

    def on_reset(self, request):
        out = self.core.reset()
        self.after_change()
        return out

    def on_grasp(self, request):
        out = self.core.grasp()
        self.flush()
        return out

    def on_release(self, request):
        out = self.core.release()
        self.flush()
        return out

    def on_pause(self, request):
        out = self.core.pause(bool(request.data))
        self.after_change()
        return out

    def after_change(self) -> None:
        """After a service changed the state (pause, reset, steps, a new entity state):
        re-anchor the pacing to the wall clock and publish what is due; after a reset (by
        ``~/reset`` or simulation_interfaces) the controller manager's sync starts over."""
        if self.cm_sync is not None and self.core.steps == 0:
            self.cm_sync.reset()
        self.pacer.reset(self.wall(), self.core.steps)
        self.flush()

    # ---------------------------------------------------------------- stepping
    def advance_lockstep(self) -> None:
        """Advance one control period per fresh command, paced: never ahead of
        ``real_time_factor`` × wall time (0: as fast as the loop runs).  A command that arrives
        early is applied at the timer tick that makes the period due."""
        core, sync = self.core, self.cm_sync
        # with the controller manager: not while /clock of the last state waits for its barrier
        while (sync is None or not sync.holding) and core.lockstep_ready() and \
                self.pacer.may_advance(self.wall(), core.steps, core.steps_per_period):
            if not core.advance_lockstep():
                break
            self.flush()

    def tick(self) -> None:
        core, now = self.core, self.wall()
        self.watch.poll()
        core.check_measured_wrench_watchdog(time.time())
        if now - self._timing_at >= TIMING_REFRESH_S:   # read by diagnostics (1 Hz), not per tick
            core.timing, self._timing_at = self.pacer.stats(), now
        if now - self._subscribers_at >= SUBSCRIBERS_REFRESH_S:
            self._subscribers_at = now
            core.unsubscribed = frozenset(key for key in SKIPPABLE if key in self.pubs and not
                                          getattr(self.pubs[key], "has_subscribers",
                                                  lambda: True)())
        if core.lockstep:
            self.pacer.note_tick(now, core.steps)
            if self.cm_sync is not None:
                self.cm_sync.serve(now)
                if self.cm_sync.warmup_due(now):
                    self.cm_sync.advance_warmup()
            self.advance_lockstep()
        elif core.measured is not None:      # stepped by the samples (on_measured)
            core.check_measured_watchdog(time.time())
            self.pacer.reset(now, core.steps)
        elif core.paused:
            self.pacer.steps_due(now, core.steps)
            self.pacer.reset(now, core.steps)
        else:
            due = self.pacer.steps_due(now, core.steps)
            while due > 0:              # runs of compiled steps up to the next message due
                done = core.run(min(due, core.steps_until_due(self.wall())))
                if not done:
                    break
                due -= done
                self.flush()
                if due > 0 and self.wall() - now > TICK_BUDGET_S:
                    # behind real time: return to the executor so subscriptions and services
                    # are served between batches (the pacer re-anchors; see overruns)
                    break
            if core.step_times:
                self.pacer.note_step_time(core.step_times[-1])
        self.flush(now)

    def flush(self, now: float | None = None) -> None:
        """Publish what is due and forward the core's log records."""
        core = self.core
        # published as built: joint_states and odom go out before the rest is built
        wall_now = self.wall() if now is None else now
        sync = self.cm_sync
        idle = None if sync is None else sync.idle_republish(core.paused)
        for key, msg in core.iter_due(wall_now, idle):
            if type(msg) is bytes:                 # CDR from the state's arrays (no sync)
                self.pubs[key].publish_cdr(msg)
                continue
            if key == "clock" and sync is not None and sync.hold_clock(
                    msg, self.pubs[key].publish, wall_now):
                continue                  # sent once the manager's side took the state
            if key == "joint_states" and sync is not None:
                msg = sync.state_message(msg)   # a stamp's state, sent again as it was
            self.pubs[key].publish(msg)
            if key == "joint_states" and sync is not None:
                sync.note_state()               # the barrier covers it
            if key == "odom" and core.path_sample:   # one pose per path_sample_period
                self._record_base_pose(msg)
        core.log.drain_into(self.t.logger)

    def _record_base_pose(self, odom) -> None:
        stamp = rm.time_msg_to_ns(odom.header.stamp)
        if self.base_path and stamp < self.base_path[-1][0]:
            self.base_path.clear()                       # reset: time went back
        if self.base_path and stamp == self.base_path[-1][0]:
            return                                       # re-sent state (paused)
        self.base_path.append((stamp, rm.pose_stamped_from_odometry(odom)))
        self._base_path_count += 1
        if self._base_path_count % 10 == 1 and "base_path" not in self.core.unsubscribed \
                and self.core.path_due(self.wall(), "base_path"):
            self.pubs["base_path"].publish(rm.path_msg(
                stamp * 1e-9, odom.header.frame_id, [p for _, p in self.base_path]))


def wall_clock_argv(argv: list[str], logger=None) -> list[str]:
    """``argv`` with ``use_sim_time`` forced to false (the node is the clock source)."""
    ra = rargs.parse_ros_args(argv)
    name, ns = rargs.node_identity(ra, NODE_NAME)
    fqn = f"{ns.rstrip('/')}/{name}"
    if rargs.parameter_overrides_for(ra, fqn).get("use_sim_time") is True:
        msg = (f"{fqn}: use_sim_time ignored (the dynamics node publishes /clock; its timers "
               "run on wall time)")
        (logger.warn if logger else lambda m: print(f"[WARN] {m}", file=sys.stderr))(msg)
    return list(argv) + ["--ros-args", "-p", "use_sim_time:=false"]


def node_spec(argv: list) -> tuple:
    """``(name, parameter defaults, argv, start)`` of this node for
    :func:`~vm_dynamics.nodes.entry.run_nodes`: ``argv`` with ``use_sim_time`` forced to false
    (:func:`wall_clock_argv`; ``ValueError`` for a bad parameter file)."""
    argv = wall_clock_argv(list(argv))

    def start(transport):
        folders = checked_command_line(argv, NODE_NAME, node_parameter_defaults,
                                       transport.logger)
        core = DynamicsCore.from_params(
            {k: v for k, v in transport.params.items() if k not in NODE_PARAMETERS},
            folders=folders)
        m = core.model
        transport.logger.info(
            f"{m!r} from {core.robot.source}; {core.method}, dt={core.dt:g} s, backend "
            f"{core.backend}, real_time_factor={core.params['real_time_factor']:g}"
            + (", lockstep" if core.lockstep else "") + f"; joints {core.robot.joints}")
        DynamicsNode(transport, core)

    return (NODE_NAME, lambda: node_parameter_defaults(
        command_line_parameters(argv, NODE_NAME)[0]), argv, start)


def main(argv=None) -> int:
    argv = list(sys.argv if argv is None else argv)
    try:      # reads the parameter files: a Ctrl-C in it ends the node quietly, as in start-up
        with deferred_interrupts() as stop:
            spec = node_spec(argv)
    except ValueError as exc:
        print(f"{NODE_NAME}: error: {exc}", file=sys.stderr)
        return 2
    if stop:
        return 0
    return run_node(*spec)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
