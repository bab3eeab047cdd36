"""A hostile publisher for the soak and flood tests: ``python flooder.py MODE SECONDS [RATE]``.

Modes (DDS transport; CYCLONEDDS_URI and ROS_DOMAIN_ID from the environment):

* ``invalid-efforts``: wrong-length effort commands to the dynamics node, ``RATE`` per second
  (default: as fast as possible; no receiver can keep up with an unbounded flood on the same
  machine, so the tests give the rate they claim to survive);
* ``mixed``: a cycle of invalid, extreme and oversized messages to both nodes (efforts of the
  wrong length, NaN, 1e9 N·m, 100 layout dims, 160 kB; wrenches in an unknown frame and NaN;
  joint trajectories of 2 000 points, unknown joints, NaN; a base pose with NaN; a spoofed
  joint state at 1e110), up to 2 000 messages per second (a few hundred: the 2 000-point
  trajectory is slow to serialise).

Prints the number of messages sent on exit (stdout), and ``flooder: N messages in T s``
(stderr, T from the first message on); SIGINT or SIGTERM ends it early, with the same report.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from vm_dynamics.ros import messages as rm
from vm_dynamics.transport.dds import DdsTransport

T = rm.TYPESTORE.types


def trajectory(names, n_points, value=0.1):
    pts = [T["trajectory_msgs/msg/JointTrajectoryPoint"](
        positions=np.full(len(names), value), velocities=np.zeros(0), accelerations=np.zeros(0),
        effort=np.zeros(0), time_from_start=T["builtin_interfaces/msg/Duration"](
            sec=1 + k, nanosec=0)) for k in range(n_points)]
    return T["trajectory_msgs/msg/JointTrajectory"](header=rm.header_msg(0.0),
                                                     joint_names=list(names), points=pts)


def mixed_messages(joints):
    n = len(joints)
    arr = T["std_msgs/msg/Float64MultiArray"]
    dims = T["std_msgs/msg/MultiArrayLayout"](
        dim=[T["std_msgs/msg/MultiArrayDimension"](label="d", size=1, stride=1)] * 100,
        data_offset=0)
    nan_trajectory = trajectory(joints, 2)
    nan_trajectory.points[0].positions[:] = np.nan
    pose = T["geometry_msgs/msg/PoseStamped"](
        header=rm.header_msg(0.0), pose=T["geometry_msgs/msg/Pose"](
            position=T["geometry_msgs/msg/Point"](x=float("nan"), y=0.0, z=0.0),
            orientation=T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0)))
    effort = "/effort_controller/commands"
    empty = T["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0)
    nan_wrench = rm.wrench_stamped_msg(0.0, np.zeros(6))
    nan_wrench.wrench.force.x = float("nan")
    # (the message builders refuse NaN: these are built field by field, as a hostile
    # publisher would)
    return [
        (effort, rm.FLOAT64_MULTI_ARRAY, rm.float64_multi_array_msg(np.ones(n + 1))),
        (effort, rm.FLOAT64_MULTI_ARRAY, arr(layout=empty, data=np.full(n, np.nan))),
        (effort, rm.FLOAT64_MULTI_ARRAY, rm.float64_multi_array_msg(np.full(n, 1e9))),
        (effort, rm.FLOAT64_MULTI_ARRAY, arr(layout=dims, data=np.ones(n))),
        (effort, rm.FLOAT64_MULTI_ARRAY, rm.float64_multi_array_msg(np.ones(20_000))),
        ("/base_wrench", rm.WRENCH_STAMPED, rm.wrench_stamped_msg(0.0, np.ones(6), "nowhere")),
        ("/base_wrench", rm.WRENCH_STAMPED, nan_wrench),
        ("/controller_node/joint_trajectory", "trajectory_msgs/msg/JointTrajectory",
         trajectory(joints, 2000)),
        ("/controller_node/joint_trajectory", "trajectory_msgs/msg/JointTrajectory",
         trajectory(["no_such_joint"], 2)),
        ("/controller_node/joint_trajectory", "trajectory_msgs/msg/JointTrajectory",
         nan_trajectory),
        ("/controller_node/base_pose", "geometry_msgs/msg/PoseStamped", pose),
        ("/joint_states", rm.JOINT_STATE, rm.joint_state_msg(0.0, joints, np.full(n, 1e110),
                                                            np.zeros(n), np.zeros(n))),
    ]


def main(mode: str, seconds: float, rate: float = 0.0) -> int:
    t = DdsTransport("flooder", {}, ["flooder"])
    joints = ["joint1", "joint2"]
    if mode == "invalid-efforts":
        plan = [("/effort_controller/commands", rm.FLOAT64_MULTI_ARRAY,
                 rm.float64_multi_array_msg(np.ones(len(joints) + 1)))]
        pause = 0.0
    elif mode == "mixed":
        plan = mixed_messages(joints)
        pause = 1.0 / 2000.0
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    pubs = {(topic, mtype): t.publisher(topic, mtype) for topic, mtype, _ in plan}
    time.sleep(1.0)                      # discovery
    start = time.monotonic()
    sent, end = 0, start + seconds
    try:
        while time.monotonic() < end:
            if rate and sent >= rate * (time.monotonic() - start):
                time.sleep(0.001)        # ahead of the rate: let it catch up
                continue
            topic, mtype, msg = plan[sent % len(plan)]
            pubs[(topic, mtype)].publish(msg)
            sent += 1
            if pause:
                time.sleep(pause)
    except KeyboardInterrupt:            # stopped early (SIGINT/SIGTERM): report what was sent
        pass
    finally:
        print(sent, flush=True)
        print(f"flooder: {sent} messages in {time.monotonic() - start:.3f} s", file=sys.stderr,
              flush=True)
        t.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], *map(float, sys.argv[2:4])))
