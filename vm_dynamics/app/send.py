"""``vm-send``: send one command to the running nodes without ROS (Cyclone DDS, the wire format
of ``rmw_cyclonedds_cpp``: ROS 2 nodes on the same ``ROS_DOMAIN_ID`` receive it too).

    vm-send joint-trajectory --joints joint1,joint2 --point 2:0.5,-0.3 --point 4:0,0
    vm-send pose 1.0 0.0 0.5 --orientation 0,0,0.383,0.924      # vehicle target in odom
    vm-send effort 0.5,0,0 --rate 50 --for 2       # joint efforts (refreshed: watchdog)
    vm-send wrench 10,0,0,0,0,0.5 --frame base_link --rate 50 --for 2

``joint-trajectory`` and ``pose`` go to the controller node (``/controller_node/
joint_trajectory``, ``/controller_node/base_pose``), ``effort`` and ``wrench`` to the dynamics
node (``/effort_controller/commands``, ``/base_wrench``; without a controller node, which
publishes them too).  ``--namespace`` prefixes the topics, ``--node`` renames the controller
node.  The command waits for the node's subscription (``--wait`` s), publishes, and waits for
the node to receive it before exiting.  The node checks the command and logs why it refuses
one (joint names, limits, frames); the values are checked here first: a malformed value gets
a one-line error naming the argument, exit code 2.  No matching subscriber within ``--wait``:
exit code 1.
"""
from __future__ import annotations

import argparse
import math
import sys
import time

__all__ = ["main", "build_message", "topic_of", "SendError"]

EXIT_USAGE = 2
EXIT_NO_SUBSCRIBER = 1


class SendError(Exception):
    """A user error: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise SendError(message)


def _numbers(text: str, what: str, n: int | None = None) -> list[float]:
    """Comma- (or space-) separated finite numbers; ``n`` of them if given."""
    items = [s for s in text.replace(",", " ").split()]
    vals = []
    for k, s in enumerate(items):
        try:
            v = float(s)
        except ValueError:
            raise SendError(f"{what}: {s!r} (item {k}) is not a number") from None
        if not math.isfinite(v):
            raise SendError(f"{what}: item {k} is {s}, not a finite number")
        vals.append(v)
    if not vals:
        raise SendError(f"{what}: no values")
    if n is not None and len(vals) != n:
        raise SendError(f"{what}: expected {n} values, got {len(vals)}")
    return vals


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="vm-send", description="Send a command to running vm_dynamics nodes over "
                "DDS, without ROS (ROS_DOMAIN_ID and CYCLONEDDS_URI from the environment).",
                epilog="Examples: vm-send joint-trajectory --joints joint1,joint2 --point "
                "2:0.5,-0.3;  vm-send pose 1 0 0.5;  vm-send effort 0.5,0,0 --rate 50 --for 2;  "
                "vm-send wrench 10,0,0,0,0,0 --frame base_link")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--namespace", default="", help="namespace of the nodes' topics")
    common.add_argument("--topic", help="publish on this topic instead of the default one")
    common.add_argument("--wait", type=float, default=10.0, metavar="S",
                        help="wait at most S seconds for the node's subscription (default 10)")
    common.add_argument("--rate", type=float, metavar="HZ",
                        help="repeat the command HZ times per second (with --for)")
    common.add_argument("--for", dest="duration", type=float, metavar="S",
                        help="repeat the command for S seconds (with --rate; efforts and "
                        "wrenches are zeroed by the node's watchdog when not refreshed)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    jt = sub.add_parser("joint-trajectory", parents=[common],
                        help="a trajectory_msgs/JointTrajectory to the controller node",
                        description="Points are TIME:POSITIONS (seconds from now, one "
                        "position per joint, comma-separated); optional velocities after a "
                        "second colon: TIME:POSITIONS:VELOCITIES.")
    jt.add_argument("--joints", required=True, help="joint names, comma-separated")
    jt.add_argument("--point", action="append", required=True, metavar="T:P1,P2,...",
                    help="a waypoint (repeat for several, times strictly increasing)")
    jt.add_argument("--node", default="controller_node", help="controller node's name")

    po = sub.add_parser("pose", parents=[common],
                        help="a geometry_msgs/PoseStamped vehicle target to the controller node")
    po.add_argument("position", nargs=3, metavar=("X", "Y", "Z"), help="position (m)")
    po.add_argument("--orientation", default="0,0,0,1", metavar="QX,QY,QZ,QW",
                    help="unit quaternion x,y,z,w (default 0,0,0,1)")
    po.add_argument("--frame", default="odom", help="frame of the pose (default odom)")
    po.add_argument("--node", default="controller_node", help="controller node's name")

    ef = sub.add_parser("effort", parents=[common],
                        help="joint efforts (std_msgs/Float64MultiArray) to the dynamics node")
    ef.add_argument("values", help="one effort per joint (N or N·m), comma-separated")

    wr = sub.add_parser("wrench", parents=[common],
                        help="a geometry_msgs/WrenchStamped on the vehicle to the dynamics node")
    wr.add_argument("values", help="FX,FY,FZ,TX,TY,TZ (N, N·m)")
    wr.add_argument("--frame", default="base_link",
                    help="base_link (body axes, default) or odom (inertial axes)")
    return p


def topic_of(args) -> str:
    """The topic a parsed command goes to."""
    if args.topic:
        return args.topic if args.topic.startswith("/") else "/" + args.topic
    ns = "/" + args.namespace.strip("/") if args.namespace.strip("/") else ""
    if args.command in ("joint-trajectory", "pose"):
        leaf = "joint_trajectory" if args.command == "joint-trajectory" else "base_pose"
        return f"{ns}/{args.node.strip('/')}/{leaf}"
    return f"{ns}/effort_controller/commands" if args.command == "effort" else \
        f"{ns}/base_wrench"


def _trajectory(args, types):
    from ..ros.fields import duplicate_names
    joints = [j.strip() for j in args.joints.split(",")]
    if not all(joints):
        raise SendError(f"--joints: empty joint name in {args.joints!r}")
    dup = duplicate_names(joints)
    if dup:
        raise SendError(f"--joints: duplicate joint name(s) {dup}")
    points, last = [], -math.inf
    for k, text in enumerate(args.point):
        what = f"--point {text!r}"
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise SendError(f"{what}: expected TIME:POSITIONS[:VELOCITIES]")
        t = _numbers(parts[0], f"{what}: time", 1)[0]
        if t < 0 or t <= last:
            raise SendError(f"{what}: time {t:g} must be >= 0 and after the previous point's")
        last = t
        pos = _numbers(parts[1], f"{what}: positions", len(joints))
        vel = _numbers(parts[2], f"{what}: velocities", len(joints)) if len(parts) == 3 else []
        sec = int(math.floor(t))
        nsec = min(int(round((t - sec) * 1e9)), 999_999_999)
        points.append(types["trajectory_msgs/msg/JointTrajectoryPoint"](
            positions=_array(pos), velocities=_array(vel), accelerations=_array([]),
            effort=_array([]), time_from_start=types["builtin_interfaces/msg/Duration"](
                sec=sec, nanosec=nsec)))
    from ..ros import messages as rm
    return types["trajectory_msgs/msg/JointTrajectory"](
        header=rm.header_msg(0.0), joint_names=joints, points=points)


def _array(values):
    import numpy as np
    return np.asarray(values, dtype=np.float64)


def build_message(args):
    """``(msgtype, message)`` of a parsed command; a malformed value raises SendError."""
    from ..ros import messages as rm
    types = rm.TYPESTORE.types
    if args.command == "joint-trajectory":
        return "trajectory_msgs/msg/JointTrajectory", _trajectory(args, types)
    if args.command == "pose":
        p = _numbers(" ".join(args.position), "position X Y Z", 3)
        q = _numbers(args.orientation, "--orientation", 4)
        norm = math.sqrt(sum(v * v for v in q))
        if abs(norm - 1.0) > 1e-3:
            raise SendError(f"--orientation: not a unit quaternion (norm {norm:.6g})")
        q = [v / norm for v in q]
        if not args.frame:
            raise SendError("--frame: empty frame name")
        msg = types["geometry_msgs/msg/PoseStamped"](
            header=rm.header_msg(0.0, args.frame), pose=types["geometry_msgs/msg/Pose"](
                position=types["geometry_msgs/msg/Point"](x=p[0], y=p[1], z=p[2]),
                orientation=types["geometry_msgs/msg/Quaternion"](x=q[0], y=q[1], z=q[2],
                                                                   w=q[3])))
        return "geometry_msgs/msg/PoseStamped", msg
    if args.command == "effort":
        return rm.FLOAT64_MULTI_ARRAY, rm.float64_multi_array_msg(
            _numbers(args.values, "efforts"))
    w = _numbers(args.values, "wrench FX,FY,FZ,TX,TY,TZ", 6)
    if not args.frame:
        raise SendError("--frame: empty frame name")
    return rm.WRENCH_STAMPED, rm.wrench_stamped_msg(0.0, w, args.frame)


def _check_timing(args) -> None:
    if not (math.isfinite(args.wait) and args.wait >= 0):
        raise SendError(f"--wait must be a finite number >= 0, got {args.wait:g}")
    if (args.rate is None) != (args.duration is None):
        raise SendError("--rate and --for go together (repeat HZ times per second for S s)")
    if args.rate is not None:
        if not (math.isfinite(args.rate) and 0 < args.rate <= 10_000):
            raise SendError(f"--rate must be in (0, 10000] Hz, got {args.rate:g}")
        if not (math.isfinite(args.duration) and 0 <= args.duration <= 86_400):
            raise SendError(f"--for must be in [0, 86400] s, got {args.duration:g}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = _parser().parse_args(argv)
        _check_timing(args)
        topic = topic_of(args)
        try:
            from ..transport.dds import DdsTransport
            msgtype, msg = build_message(args)
        except ImportError as exc:
            raise SendError(f"{exc.name or exc} is not installed; vm-send needs: pip install "
                            f"'vm_dynamics[dds]'") from None
        except ValueError as exc:       # the message builders' checks
            raise SendError(str(exc).splitlines()[0]) from None
    except SendError as exc:
        print(f"vm-send: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    transport = None
    try:
        transport = DdsTransport("vm_send", {}, ["vm_send"])
        pub = transport.publisher(topic, msgtype, "default")
        if not transport.spin_until(lambda: pub.matched_subscriptions > 0, args.wait):
            print(f"vm-send: error: no subscriber on {topic} after {args.wait:g} s (is the "
                  f"node running, with the same ROS_DOMAIN_ID={transport.domain_id}?)",
                  file=sys.stderr)
            return EXIT_NO_SUBSCRIBER
        sent = _publish(transport, pub, msg, args)
        print(f"vm-send: sent {sent} {msgtype} on {topic}", flush=True)
    except KeyboardInterrupt:
        return 130
    finally:
        if transport is not None:
            transport.shutdown()   # a reliable writer lingers until its samples are acked
    return 0


def _publish(transport, pub, msg, args) -> int:
    """Publish once, or ``--rate`` times per second for ``--for`` seconds; returns how many."""
    if args.rate is None:
        pub.publish(msg)
        transport.spin_once(0.2)
        return 1
    period, t0, sent = 1.0 / args.rate, time.monotonic(), 0
    while True:
        pub.publish(msg)
        sent += 1
        due = t0 + sent * period
        if due - t0 > args.duration:
            break
        while (left := due - time.monotonic()) > 0:
            transport.spin_once(left)
    return sent


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
