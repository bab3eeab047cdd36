"""``diff_drive_node``: a differential-drive vehicle (with or without an arm) that does not slip,
simulated as a kinematically constrained system (paper 002 §4, :mod:`vm_dynamics.constraints`)
and driven like a ROS 2 mobile base.

    python -m vm_dynamics.nodes.diff_drive_node --ros-args -p scenario:=diff_drive_arm \\
        [-p publish_rate:=50.0] [-p real_time_factor:=1.0]

Subscribes ``cmd_vel`` (geometry_msgs/Twist: linear.x, angular.z); a wheel-velocity controller
turns it into wheel efforts (:class:`~vm_dynamics.constraints.drive.WheelVelocityController`).
Publishes ``odom`` (nav_msgs/Odometry) from the wheel angles as ``diff_drive_controller`` does
(:class:`~vm_dynamics.constraints.drive.WheelOdometry`), ``joint_states`` (wheels and arm
joints, with the applied efforts), ``/tf`` (``odom`` → ``base_link``) and the trails RViz draws,
``base_path`` and ``ee_path`` (nav_msgs/Path of the vehicle and of ``ee_frame``, if the robot has
it; the last ``path_length`` poses, sent every 10th tick) and ``/clock`` (the simulated time
that stamps them all: robot_state_publisher and RViz run with ``use_sim_time``).  The scenario is a
file with a ``constraints: {type: diff_drive}`` section (``config/diff_drive*.yaml``).  A
``cmd_vel`` that is no Twist, holds a value that is no finite number, or asks for a wheel
speed above the controller's limit, is rejected with a warning naming the field; the node keeps
running.
"""
from __future__ import annotations

import sys
from collections import deque

import numpy as np

from ..config.params import parameter_defaults, read_params_file
from ..config.scenario import find_file, scenario_path
from ..constraints.drive import ConstrainedStepper, WheelOdometry
from ..constraints.scenario import constrained_scenario
from ..ros import messages as rm
from .entry import run_node

__all__ = ["DiffDriveNode", "NODE_NAME", "NODE_PARAMETERS", "PUBLICATIONS", "SUBSCRIPTIONS",
           "PATH_EVERY", "load_diff_drive", "launch_robot_description", "main"]

NODE_NAME = "diff_drive_node"
NODE_PARAMETERS = {
    "scenario": ("diff_drive", "scenario name or file with constraints.type: diff_drive"),
    "publish_rate": (50.0, "Hz of odom, joint_states and /tf (one timer tick)"),
    "real_time_factor": (1.0, "simulated seconds per wall second of the timer"),
    "dt": (0.002, "integration step, s"),
    "odom_frame": ("odom", "frame of the odometry"),
    "base_frame": ("base_link", "the vehicle link"),
    "ee_frame": ("ee_link", "frame whose trail ee_path shows (not published if the robot "
                 "has no such frame)"),
    "path_length": (3000, "poses kept in base_path and ee_path"),
}
PUBLICATIONS = {"odom": rm.ODOMETRY, "joint_states": rm.JOINT_STATE, "/tf": rm.TF_MESSAGE,
                "base_path": "nav_msgs/msg/Path", "ee_path": "nav_msgs/msg/Path",
                "/clock": rm.CLOCK}
#: QoS of a topic where it is not "default" (/clock: best effort, as the dynamics node sends it)
QOS = {"/clock": "clock"}
#: ticks between two path messages (the poses are kept at every tick)
PATH_EVERY = 10
SUBSCRIPTIONS = {"cmd_vel": "geometry_msgs/msg/Twist"}


def load_diff_drive(name_or_path):
    """The :class:`~vm_dynamics.constraints.scenario.ConstrainedScenario` of a diff-drive file."""
    path = scenario_path(name_or_path)
    params = read_params_file(path)
    urdf = find_file(params.get("robot_description_file"), "robot_description_file",
                     [path.resolve().parent])
    scn = constrained_scenario(params, urdf)
    if scn.drive is None:
        raise ValueError(f"scenario {name_or_path!r}: not a differential drive "
                         "(constraints.type: diff_drive)")
    return scn


def launch_robot_description(name_or_path) -> tuple[str, str]:
    """``(scenario file, URDF for robot_state_publisher)`` of a diff-drive scenario, for the
    launch files: the scenario's URDF without the root link's inertia, which KDL rejects
    (:func:`vm_dynamics.nodes.robot.robot_descriptions`)."""
    from .robot import robot_descriptions
    load_diff_drive(name_or_path)
    path = scenario_path(name_or_path).resolve()
    return str(path), robot_descriptions(read_params_file(path), [path.parent])[1]


class DiffDriveNode:
    """Wires a diff-drive scenario to a transport: ``cmd_vel`` in; ``odom``, ``joint_states``,
    ``/tf`` out, one integration slice per timer tick."""

    def __init__(self, transport, scn, params):
        rate, rtf, dt = (float(params[k]) for k in ("publish_rate", "real_time_factor", "dt"))
        for value, name in ((rate, "publish_rate"), (dt, "dt")):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name}={value!r}: expected a finite positive number")
        if not (np.isfinite(rtf) and rtf >= 0):
            raise ValueError(f"real_time_factor={rtf!r}: expected a finite number >= 0")
        self.scn, self.log = scn, transport.logger
        self.frames = (str(params["odom_frame"]), str(params["base_frame"]))
        self.slice = rtf / rate                      # simulated seconds per tick
        self.substeps = max(1, int(np.ceil(self.slice / dt - 1e-9))) if self.slice > 0 else 0
        self.stepper = ConstrainedStepper(scn.system, scn.g0, scn.r0, scn.rd0, scn.forces)
        g0 = scn.g0
        w = scn.drive.wheels
        self.odometry = WheelOdometry(scn.system.wheel_radius, scn.system.wheel_separation,
                                      g0[0, 3], g0[1, 3], np.arctan2(g0[1, 0], g0[0, 0]))
        self.odometry.update(scn.r0[w[0]], scn.r0[w[1]], 0.0)
        model = scn.system.model
        self.ee = str(params["ee_frame"]) if str(params["ee_frame"]) in model.frame_names else None
        length = int(params["path_length"])
        if length < 1:
            raise ValueError(f"path_length={length!r}: expected a positive integer")
        self.paths = {"base_path": deque(maxlen=length), "ee_path": deque(maxlen=length)}
        self.ticks = 0
        topics = [t for t in PUBLICATIONS if t != "ee_path" or self.ee is not None]
        self.pubs = {t: transport.publisher(t, PUBLICATIONS[t], QOS.get(t, "default"))
                     for t in topics}
        transport.subscribe("cmd_vel", SUBSCRIPTIONS["cmd_vel"], self.on_cmd_vel,
                            max_per_turn=1)
        transport.timer(1.0 / rate, self.tick)
        self.publish()

    def on_cmd_vel(self, msg) -> None:
        """A ``geometry_msgs/Twist``: linear.x (m/s) and angular.z (rad/s) set the wheel
        speeds; ``ValueError`` naming the field (the transport's rejected-message warning) for
        a message that is no Twist or a value that is no finite number or too fast."""
        try:
            v, w = msg.linear.x, msg.angular.z
        except AttributeError:
            raise ValueError(f"cmd_vel: expected a geometry_msgs/Twist, got "
                             f"{type(msg).__name__}") from None
        self.scn.drive.set_command(v, w)

    def tick(self) -> None:
        """Advance one slice of simulated time and publish."""
        if self.substeps:
            h = self.slice / self.substeps
            for _ in range(self.substeps):
                self.stepper.step(h)
            w = self.scn.drive.wheels
            self.odometry.update(self.stepper.r[w[0]], self.stepper.r[w[1]], self.slice)
        self.ticks += 1
        self.publish()

    def messages(self) -> list:
        """``[(topic, message)]`` of the current state."""
        st, od, (odom, base) = self.stepper, self.odometry, self.frames
        t = st.t
        g = od.pose(self.scn.height)
        effort = self.scn.efforts(t, st.g, st.r, st.rd)
        out = [("odom", rm.odometry_msg(t, g, [od.v, 0, 0, 0, 0, od.omega], odom, base)),
               ("joint_states", rm.joint_state_msg(t, self.scn.joint_names, st.r, st.rd,
                                                   effort)),
               ("/tf", rm.tf_msg(t, [(odom, base, g)])), ("/clock", rm.clock_msg(t))]
        return out + self.path_messages(t, g)

    def path_messages(self, t, g) -> list:
        """Keep this tick's poses; every :data:`PATH_EVERY` ticks, the trails to send."""
        self.paths["base_path"].append(rm.pose_stamped_msg(t, self.frames[0], g))
        if self.ee is not None:
            ge = self.scn.system.model.frame_pose(self.stepper.r, self.ee, g=g)
            self.paths["ee_path"].append(rm.pose_stamped_msg(t, self.frames[0], ge))
        if self.ticks % PATH_EVERY:
            return []
        return [(k, rm.path_msg(t, self.frames[0], p)) for k, p in self.paths.items()
                if k in self.pubs]

    def publish(self) -> None:
        for topic, msg in self.messages():
            self.pubs[topic].publish(msg)


def main(argv=None) -> int:
    argv = list(sys.argv if argv is None else argv)

    def start(transport):
        scn = load_diff_drive(transport.params["scenario"])
        DiffDriveNode(transport, scn, transport.params)
        transport.logger.info(f"{NODE_NAME}: {transport.params['scenario']}, joints "
                              f"{scn.joint_names}; cmd_vel -> wheel-velocity controller")

    return run_node(NODE_NAME, lambda: parameter_defaults(NODE_PARAMETERS), argv, start)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
