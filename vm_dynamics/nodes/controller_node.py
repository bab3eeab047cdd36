"""``controller_node``: a controller plug-in as a ROS 2 node (rclpy or plain DDS).

    controller_node --ros-args --params-file config/spacecraft_arm.yaml [-p controller:=pd_gravity]

Subscribes ``joint_states`` and ``odom`` (sensor-data QoS: accepts reliable and best-effort
publishers), ``~/joint_trajectory`` (trajectory_msgs/JointTrajectory) and ``~/base_pose``
(geometry_msgs/PoseStamped); publishes ``effort_controller/commands``
(std_msgs/Float64MultiArray, order of ``joints``) and ``base_wrench`` (geometry_msgs/WrenchStamped,
body frame) every ``1/control_rate`` s of ROS time — or, with ``lockstep``, once for every new
state.  ``use_sim_time`` defaults to **true** for this node (it controls a simulation); set it
to false for hardware publishing wall-clock stamps.

With a ``capture`` section in the parameters and no controller selected, the node runs the
capture mission (:mod:`~vm_dynamics.nodes.controller_capture`): it also subscribes
``target/odom`` and calls the dynamics node's ``~/grasp`` (``dynamics_node/grasp``, a client
from :meth:`~vm_dynamics.transport.base.Transport.trigger_client`) from
``capture.grasp.command_time`` on until it succeeds, then detumbles.

The selected controller's parameters are declared as ``controller.<name>`` (read from the
plug-in's ``PARAMS``), and the ``reference.*`` entries of the parameter file are declared as
found, so a scenario file is a complete parameter file for this node too.

Input bounds: samples larger than ``max_message_bytes`` serialized bytes, trajectories with
more than ``max_trajectory_points`` points or more joint names than the model has, and joint
states naming more than ``max_joint_state_names`` joints are dropped before they are
deserialised (the counts are read from the serialized sample); every rejection reason has its
own throttle key.  Trajectories beyond the URDF joint limits are rejected, and a state older
than the latest is ignored unless the simulation was reset
(:mod:`~vm_dynamics.nodes.controller_core`).  Any failure of the controller's computation
(``OverflowError`` for huge inputs, ``LinAlgError``, a plug-in bug) is logged as an ERROR and
nothing is published for that period, and any exception of a callback is logged and counted by
the transport; the node keeps running.  Ctrl-C / SIGINT (also a second one during shutdown)
ends it with exit code 0.

A second publisher of the node's outputs (another controller), of ``joint_states``/``odom``
or, with ``use_sim_time``, of ``/clock`` (another simulation on the domain) is reported as an
ERROR every 10 s while it lasts (:class:`~vm_dynamics.nodes.publisher_watch.PublisherWatch`,
checked every 2 s).
"""
from __future__ import annotations

import sys

from ..ros import messages as rm
from ..transport import ros_args as rargs
from .controller_capture import GRASP_SERVICE, TARGET_ODOM
from .controller_core import (
    JOINT_TRAJECTORY,
    POSE_STAMPED,
    ControllerCore,
    controller_parameter_defaults,
)
from .entry import run_node
from .lockstep_wire import CommandWire
from .parameters import checked_command_line
from .publisher_watch import PublisherWatch

__all__ = ["main", "node_spec", "ControllerNode", "NODE_NAME", "PUBLICATIONS", "SUBSCRIPTIONS"]

NODE_NAME = "controller_node"

PUBLICATIONS = {
    "effort_commands": ("effort_controller/commands", rm.FLOAT64_MULTI_ARRAY, "default"),
    "joint_commands": ("joint_commands", rm.JOINT_STATE, "default"),     # lockstep
    "base_wrench": ("base_wrench", rm.WRENCH_STAMPED, "default"),
}
SUBSCRIPTIONS = {
    "joint_states": (rm.JOINT_STATE, "sensor"),
    "odom": (rm.ODOMETRY, "sensor"),
    "~/joint_trajectory": (JOINT_TRAJECTORY, "default"),
    "~/base_pose": (POSE_STAMPED, "default"),
}


class ControllerNode:
    """Wires a :class:`ControllerCore` to a transport."""

    def __init__(self, transport, core: ControllerCore):
        self.t, self.core = transport, core
        unused = "effort_commands" if core.lockstep else "joint_commands"
        self.pubs = {key: transport.publisher(topic, mtype, qos)
                     for key, (topic, mtype, qos) in PUBLICATIONS.items() if key != unused}
        handlers = {"joint_states": self.on_joint_state, "odom": self.on_odometry,
                    "~/joint_trajectory": core.on_joint_trajectory,
                    "~/base_pose": core.on_base_pose}
        limit = int(core.params["max_message_bytes"])
        counts = {
            "joint_states": {"name": (int(core.params["max_joint_state_names"]),
                                      "max_joint_state_names")},
            "~/joint_trajectory": {
                "joint_names": (core.model.n, "the number of model joints"),
                "points": (int(core.params["max_trajectory_points"]),
                           "max_trajectory_points")},
        }
        subscriptions = dict(SUBSCRIPTIONS)
        # lockstep: states read from their CDR into arrays, commands written from the arrays
        # (lockstep_wire.py); not for the capture mission (its target odometry and grasp)
        self.wire = None
        if core.lockstep and core.capture is None and core.model.n and getattr(
                transport, "cdr_handlers", False) and core.model.n <= int(
                core.params["max_joint_state_names"]) and all(
                getattr(p, "writes_cdr", False) for p in self.pubs.values()):
            self.wire = CommandWire(core.robot, core.orbit.odom_frame)
        cdr = {} if self.wire is None else {"joint_states": self.on_joint_state_cdr,
                                            "odom": self.on_odometry_cdr}
        self.grasp = None
        if core.capture is not None:         # the capture mission (controller_capture.py)
            subscriptions[TARGET_ODOM] = (rm.ODOMETRY, "default")
            handlers[TARGET_ODOM] = self.on_target_odometry
            self.grasp = transport.trigger_client(GRASP_SERVICE)
        subs = {}
        for topic, (mtype, qos) in subscriptions.items():
            extra = {"cdr": cdr[topic]} if topic in cdr else {}
            subs[topic] = transport.subscribe(topic, mtype, self._wrap(handlers[topic]), qos,
                                              max_bytes=limit, max_counts=counts.get(topic),
                                              **extra)
        # one source of each input, this node the only publisher of its outputs
        watched = {pub.topic: 1 for pub in self.pubs.values()}
        inputs = ["joint_states"] + (["odom"] if core.model.b else [])
        for topic in inputs:
            watched[getattr(subs[topic], "topic_name", None) or
                    getattr(subs[topic], "topic", topic)] = 1
        if transport.params.get("use_sim_time"):
            watched["/clock"] = 1
        self._inputs = set(watched) - {pub.topic for pub in self.pubs.values()}
        self.watch = PublisherWatch(transport, watched, on_change=self._competing)
        self.timer = None if core.lockstep else transport.timer(core.period, self.tick)

    def _competing(self, topics: set) -> None:
        """Time jumps of the state are no reset while another source of it is seen."""
        self.core.competing_sources = bool(topics & self._inputs)

    def _wrap(self, handler):
        def cb(msg):
            handler(msg)
            self.watch.poll()
            self.core.log.drain_into(self.t.logger)
        return cb

    def on_joint_state(self, msg) -> None:
        if self.core.on_joint_state(msg, self.t.now()) and self.core.lockstep:
            self._lockstep()

    def on_odometry(self, msg) -> None:
        if self.core.on_odometry(msg, self.t.now()) and self.core.lockstep:
            self._lockstep()

    def on_joint_state_cdr(self, data: bytes) -> bool:
        """A joint state read from its CDR (:class:`CommandWire`); False if it is not laid out
        as the dynamics node sends it (the message path then decides)."""
        got = self.wire.state.decode(data)
        if got is None:
            return False
        if self.core.accept_joint_state(got[0], got[1], got[2], self.t.now()):
            self._lockstep()
        self._polled()
        return True

    def on_odometry_cdr(self, data: bytes) -> bool:
        """An odometry read from its CDR; False as above."""
        got = self.wire.odometry.decode(data)
        if got is None:
            return False
        if self.core.accept_odometry(*got, now=self.t.now()):
            self._lockstep()
        self._polled()
        return True

    def _polled(self) -> None:
        self.watch.poll()
        self.core.log.drain_into(self.t.logger)

    def on_target_odometry(self, msg) -> None:
        if self.core.on_target_odometry(msg) and self.core.lockstep:
            self._lockstep()

    def _lockstep(self) -> None:
        if self.core.lockstep_ready():
            self._grasp_if_due()
            self.publish(self.core.command_messages(wire=self.wire))

    def _grasp_if_due(self) -> None:
        """Capture: from ``capture.grasp.command_time`` on, call the dynamics node's
        ``~/grasp`` before answering a state, until it succeeds; then the detumble law."""
        cap, s = self.core.capture, self.core.state()
        if cap is None or s is None or not cap.grasp_due(s.t):
            return
        log = self.core.log
        result = self.grasp.poll()
        if result is None and not self.grasp.pending:
            if not self.grasp.ready():
                log.emit("WARN", "grasp-service", f"capture: service {self.grasp.name} not "
                         f"available (is dynamics_node running?)")
                return
            cap.attempts += 1
            self.grasp.send()
            result = self.grasp.poll()
        if result is None:
            return
        ok, text = result
        if ok:
            cap.on_grasped(s)
            log.emit("INFO", "grasp", f"capture: {text} (attempt {cap.attempts}); detumbling",
                     throttle=False)
        else:
            log.emit("INFO", "grasp-refused", f"capture: {text}")

    def tick(self) -> None:
        self._grasp_if_due()
        self.publish(self.core.command_messages(self.t.now()))
        self.watch.poll()
        self.core.log.drain_into(self.t.logger)

    def publish(self, messages) -> None:
        # the wrench first: in lockstep the dynamics node advances on the efforts
        for key, msg in sorted(messages, key=lambda km: km[0] != "base_wrench"):
            if type(msg) is bytes:               # CDR from the arrays (CommandWire)
                self.pubs[key].publish_cdr(msg)
            else:
                self.pubs[key].publish(msg)


def sim_time_default_argv(argv: list[str]) -> list[str]:
    """``argv`` with ``use_sim_time:=true`` inserted *before* every other ROS argument, so
    that it is only a default (a later ``-p``/``--params-file`` overrides it)."""
    return list(argv[:1]) + ["--ros-args", "-p", "use_sim_time:=true", "--"] + list(argv[1:])


def node_spec(argv: list) -> tuple:
    """``(name, parameter defaults, argv, start)`` of this node for
    :func:`~vm_dynamics.nodes.entry.run_nodes`: ``argv`` with ``use_sim_time`` true by default
    (:func:`sim_time_default_argv`)."""
    argv = sim_time_default_argv(list(argv))

    def defaults():
        ra = rargs.parse_ros_args(argv)
        name, ns = rargs.node_identity(ra, NODE_NAME)
        overrides = rargs.parameter_overrides_for(ra, f"{ns.rstrip('/')}/{name}")
        return controller_parameter_defaults(overrides)

    def start(transport):
        folders = checked_command_line(argv, NODE_NAME, controller_parameter_defaults,
                                       transport.logger)
        core = ControllerCore.from_params(transport.params, folders=folders)
        core.log.drain_into(transport.logger)
        transport.logger.info(
            f"controller {core.controller_name!r} ({core.ctrl!r}) on {core.model!r}, "
            f"{core.params['control_rate']:g} Hz" + (", lockstep" if core.lockstep else "")
            + f", use_sim_time={transport.params['use_sim_time']}")
        ControllerNode(transport, core)

    return NODE_NAME, defaults, argv, start


def main(argv=None) -> int:
    return run_node(*node_spec(list(sys.argv if argv is None else argv)))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
