"""``vm-view``: replay a recording in the browser, with a time slider.

    vm-view out/spacecraft_arm/trajectory.mcap            # then open the printed URL
    vm-view run.mcap --host 0.0.0.0 --port 9000 --ee tool0
    vm-view --ros spacecraft_arm     # follow running nodes (joint_states, odom) over DDS/rclpy

Reads any MCAP (or rosbag2 directory with one) that holds ``/robot_description`` and the
TF of every link: ``vm-sim``'s recordings, or a ``ros2 bag record /robot_description /tf
/tf_static`` of the nodes with robot_state_publisher.  ``--ros SCENARIO`` follows running
nodes instead.  Serves on
127.0.0.1 (loopback) unless ``--host`` says otherwise, and prints the URL to open.  Bad
arguments and unreadable files get a one-line error and exit code 2.
"""
from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


class UsageError(Exception):
    """A user error: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _parser():
    p = _Parser(prog="vm-view", description="Replay a vm_dynamics / ROS 2 MCAP recording in "
                "the browser (robot from /robot_description, motion from /tf).")
    p.add_argument("recording", nargs="?",
                   help="trajectory.mcap (or a rosbag2 directory holding one)")
    p.add_argument("--ros", metavar="SCENARIO",
                   help="instead of a recording, follow the running nodes' joint_states and "
                   "odom (rclpy or plain DDS, ROS_DOMAIN_ID) and draw SCENARIO's robot "
                   "(a name of vm-sim --list or a scenario YAML)")
    p.add_argument("--namespace", default="", help="--ros: namespace of the nodes' topics")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to serve on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8080,
                   help="port (default 8080; 0 = any free port; a busy port moves to the next)")
    p.add_argument("--ee", help="end-effector frame whose path is drawn (default: ee_link or "
                   "the last leaf link)")
    p.add_argument("--rate", type=float, default=30.0,
                   help="samples per second kept from the recording (default 30)")
    p.add_argument("--play", action="store_true", help="start playing at once")
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = _parser().parse_args(argv)
        if (args.recording is None) == (args.ros is None):
            raise UsageError("give a recording or --ros SCENARIO (one of them)")
        if not 0 <= args.port <= 65535:
            raise UsageError(f"--port must be in 0..65535, got {args.port}")
        if not (args.rate > 0 and args.rate != float("inf")):
            raise UsageError(f"--rate must be a finite positive number, got {args.rate:g}")
        try:
            import mcap  # noqa: F401
            import viser  # noqa: F401
        except ImportError as exc:
            from . import missing_extra
            raise UsageError(missing_extra(exc)) from None
        from .scene import playback_from_mcap
        from .server import RobotViewer
        if args.ros is not None:
            return _follow(args)
        try:
            pb = playback_from_mcap(args.recording, max_rate=args.rate, ee_frame=args.ee)
        except ValueError as exc:
            raise UsageError(str(exc).splitlines()[0]) from None
        try:
            viewer = RobotViewer(pb.urdf, host=args.host, port=args.port, ee_frame=pb.ee_frame,
                                 title=f"vm-view {args.recording}")
        except (ValueError, OSError) as exc:
            raise UsageError(str(exc).splitlines()[0]) from None
    except UsageError as exc:
        print(f"vm-view: error: {exc}", file=sys.stderr)
        return 2
    try:
        for w in viewer.warnings:
            print(f"vm-view: warning: {w}", file=sys.stderr)
        viewer.set_playback(pb)
        if args.play:
            viewer.play(True)
        if viewer.port != args.port and args.port != 0:
            print(f"vm-view: port {args.port} is busy; serving on {viewer.port}",
                  file=sys.stderr)
        print(f"vm-view: {len(pb)} samples, {pb.t[0]:.3f}..{pb.t[-1]:.3f} s, "
              f"{len(pb.links)} links in frame {pb.fixed_frame!r}; open {viewer.url}  "
              f"(Ctrl-C to quit)", flush=True)
        viewer.wait()
    except KeyboardInterrupt:   # also when Ctrl-C comes before wait() has started
        pass
    finally:
        viewer.stop()
    return 0


def _follow(args) -> int:
    """``--ros``: show the nodes' state live until Ctrl-C."""
    from ..config.scenario import load_scenario
    from ..transport import make_transport
    from .ros import follow_nodes
    from .server import RobotViewer
    try:
        name, urdf, base_dir = _scenario_robot(args.ros, load_scenario)
        viewer = RobotViewer(urdf, host=args.host, port=args.port, ee_frame=args.ee,
                             title=f"vm-view --ros {name}", base_dir=base_dir)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    try:
        transport = make_transport("vm_view", {}, ["vm_view"])
    except (ImportError, RuntimeError, ValueError) as exc:
        viewer.stop()
        raise UsageError(f"--ros: no ROS 2 transport ({str(exc).splitlines()[0]}); install "
                         f"vm_dynamics[dds] or source ROS 2") from None
    follower = follow_nodes(viewer, transport, args.namespace)
    try:
        for w in viewer.warnings:
            print(f"vm-view: warning: {w}", file=sys.stderr)
        print(f"vm-view: following {args.namespace or ''}/joint_states and /odom for "
              f"{name}; open {viewer.url}  (Ctrl-C to quit)", flush=True)
        while True:
            transport.spin_once(0.05)
            follower.update()
    except KeyboardInterrupt:
        pass
    finally:
        transport.shutdown()
        viewer.stop()
    return 0


def _scenario_robot(scenario: str, load_scenario) -> tuple:
    """``(name, robot URDF, folder for its meshes)`` of a scenario name or YAML: a capture
    scenario (vm-sim runs it, not ``load_scenario``) is read as the nodes read it, its robot
    being the chaser; the target is drawn from the node's ``target/marker``."""
    from pathlib import Path

    from ..config.params import read_params_file
    from ..config.scenario import scenario_path
    path = scenario_path(scenario)
    if "capture" in read_params_file(path):
        from ..nodes.launching import launch_scenario
        _, params, _, model_urdf = launch_scenario(scenario)
        return str(params.get("scenario") or Path(path).stem), model_urdf, Path(path).parent
    scn = load_scenario(scenario)
    return scn.name, scn.robot_description, scn.urdf_path.parent


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
