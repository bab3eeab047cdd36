"""``vm-sim``: run a scenario and write a ROS 2 recording, a summary and plots.

    vm-sim SCENARIO [--duration S] [--dt S] [--integrator NAME] [--controller NAME|none]
                    [-p NAME:=VALUE ...] [--joint-positions LIST] [--joint-velocities LIST]
                    [--base-position LIST] [--base-orientation LIST] [--base-twist LIST]
                    [--out DIR [--force]] [--record-rate HZ] [--no-plots] [--quiet]
    vm-sim --list

Writes to DIR (default ``out/<scenario>``): ``trajectory.mcap`` (``/joint_states``, ``/odom``,
``/tf`` of every moving link, ``/tf_static``, ``/robot_description``, ``/clock``; playable with
``ros2 bag play``, opens in Foxglove and ``vm-view``), ``summary.json`` and PNG plots.
``--view`` shows the run live in the browser (``vm-view``), ``--video FILE.mp4|.gif`` renders it.
DIR must be new, empty or an earlier run's output (``--force`` writes into a directory that
holds other files); it is never a system directory (``/``, ``/etc``, ``/usr``, the home
directory, ...), also not through a symbolic link.

**Parameters.**  The scenario file's values are overridden by ``-p name:=value`` (the ROS 2
syntax and typing of the nodes: ``-p controller.kp:=30.0``, ``-p initial.joint_positions:=[0.1,
0.2]``), and those by the dedicated options (``--dt``, ``--duration``, ``--integrator``,
``--controller``, the initial-state options).  Giving one parameter two different values, once
with ``-p`` and once with its option, is an error.  With ``--controller`` naming another
controller than the scenario's, the scenario's controller parameters that the new controller
also has are kept (the others are listed as dropped).

**Exit codes.**  0: done; 2: bad arguments or scenario values (one line on stderr, before any
simulation); 3: the simulation diverged (the partial trajectory, plots and a summary with
``"diverged": true`` are written), also when it ran to the end but its energy balance is off
by more than ``divergence_threshold`` of the energy scale, the dynamics node's test
(:mod:`vm_dynamics.core.divergence`: the integration cannot be trusted; the message names the
fix, a smaller dt); 4: an output could not be written (a full disk, a file size
limit: one line on stderr naming the file and what it keeps; the run stops at once, the samples
already in trajectory.mcap stay readable and summary.json says what was written if there is
room for it); 130: interrupted by Ctrl-C (what was computed is written; a second Ctrl-C while
writing skips the remaining plots but never the summary).

**A killed run.**  trajectory.mcap is written in place, chunk by chunk at most a second apart,
each followed by a closing footer (:mod:`vm_dynamics.ros.mcap_stream`): after ``kill -9`` (or a
crash) it is a readable MCAP with every sample up to its last chunk, and summary.json, written
when the run starts, says ``"finished": false``.
"""
from __future__ import annotations

import signal
import sys

from ..core.divergence import DIVERGENCE_LIMITS
from .arguments import UsageError, build_parser, parse_param_overrides, scenario_overrides
from .output_dir import SYSTEM_DIRS, SYSTEM_TREES
from .outputs import write_error_line
from .run import execute_run, prepare_run, run_scenario

__all__ = ["main", "run_scenario", "prepare_run", "execute_run", "UsageError", "EXIT_OK",
           "EXIT_USAGE", "EXIT_DIVERGED", "EXIT_INTERRUPTED", "EXIT_WRITE_ERROR",
           "DIVERGENCE_LIMITS", "SYSTEM_TREES", "SYSTEM_DIRS", "parse_param_overrides"]

EXIT_OK, EXIT_USAGE, EXIT_DIVERGED, EXIT_WRITE_ERROR, EXIT_INTERRUPTED = 0, 2, 3, 4, 130


# ----------------------------------------------------------------------------- main
def _log(message: str) -> None:
    print(message, flush=True)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--compile"]:       # vm-sim --compile [SCENARIO ...]
        from .compile import main as compile_main
        return compile_main(argv[1:])
    try:
        return _main(argv)
    except KeyboardInterrupt:      # during start-up (imports, model loading, checks)
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # a second Ctrl-C while exiting
        print("vm-sim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _special_scenario(args):
    """The exit code of a scenario with its own runner (a ``capture`` section: a chaser and a
    tumbling target, issue 22; a ``constraints`` section: rolling ball, differential drive,
    paper 002 §4), or None for an ordinary scenario."""
    from ..config.scenario import scenario_section
    from .capture import run_capture
    from .constrained import run_constrained
    for section, run in (("capture", run_capture), ("constraints", run_constrained)):
        found = scenario_section(args.scenario, section)
        if found is not None:
            try:
                return run(found[0], args, _log)
            except ValueError as exc:
                raise UsageError(str(exc).splitlines()[0]) from None
    return None


def _main(argv) -> int:
    try:
        args = build_parser().parse_args(argv)
        from ..config.scenario import list_scenarios, load_scenario
        from ..core.signals import deferred_interrupts
        if args.compile:
            from .compile import main as compile_main
            return compile_main([args.scenario] if args.scenario else [])
        if args.list:
            for name, desc in list_scenarios():
                print(f"{name:18s} {desc}")
            return EXIT_OK
        if not args.scenario:
            raise UsageError("missing SCENARIO (see vm-sim --list)")
        special = _special_scenario(args)
        if special is not None:
            return special
        overrides = scenario_overrides(args)
        explicit = {k.split(".", 1)[1] for k in overrides if k.startswith("controller.")}
        if args.controller is not None and "controller.name" in overrides \
                and overrides["controller.name"] != args.controller:
            raise UsageError(f"--controller {args.controller!r} contradicts -p controller.name:="
                             f"{overrides['controller.name']!r}; give one")
        explicit.discard("name")
        print(f"vm-sim: loading {args.scenario} ...", flush=True)
        # loading may load compiled kernels (numba/llvmlite call back into Python from C,
        # where a KeyboardInterrupt is swallowed or makes the interpreter die by SIGINT at
        # exit): a Ctrl-C is recorded and ends vm-sim (130) once loading is over
        with deferred_interrupts(raise_after=True):
            try:
                scn = load_scenario(args.scenario, overrides)
                run = prepare_run(scn, args.controller, args.out, args.record_rate,
                                  not args.no_plots, not args.quiet and sys.stderr.isatty(),
                                  explicit, args.force)
            except ValueError as exc:
                raise UsageError(str(exc).splitlines()[0]) from None
    except UsageError as exc:
        print(f"vm-sim: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        hooks, live, frames = _view_hooks(scn, args)
    except UsageError as exc:
        print(f"vm-sim: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    run.hooks = hooks
    try:
        summary = execute_run(run, log=_log)
    except OSError as exc:      # an output could not be written: one line, what was kept
        print(f"vm-sim: error: {write_error_line(exc, run)}", file=sys.stderr)
        if live is not None:
            live.viewer.stop()
        return EXIT_WRITE_ERROR
    try:
        if frames is not None and not summary.get("interrupted"):
            from ..viewer.video import write_video
            write_video(args.video, frames.playback(), title=scn.name)
            print(f"vm-sim: wrote {args.video}")
        if live is not None and not summary.get("interrupted"):
            try:
                live.finish()
                print(f"vm-sim: replay at {live.viewer.url}  (Ctrl-C to quit)", flush=True)
                live.viewer.wait()
            except KeyboardInterrupt:   # also when Ctrl-C comes before wait() has started
                pass
    finally:
        if live is not None:
            live.viewer.stop()
    if summary.get("write_error"):
        print(f"vm-sim: error: {summary['write_error']}", file=sys.stderr)
        return EXIT_WRITE_ERROR
    if summary.get("diverged"):
        print(f"vm-sim: error: {summary['divergence']['message']}", file=sys.stderr)
        return EXIT_DIVERGED
    if summary.get("interrupted"):
        return EXIT_INTERRUPTED
    return EXIT_OK


def _view_hooks(scn, args):
    """The ``--view`` / ``--video`` per-sample hooks: (hooks, LiveView or None,
    FrameCollector or None).  A missing viewer dependency is a UsageError naming the extra."""
    hooks, live, frames = [], None, None
    if not (args.view or args.video):
        return hooks, live, frames
    if args.video:
        from pathlib import Path as _P
        if _P(args.video).suffix.lower() not in (".mp4", ".gif"):
            raise UsageError(f"--video: {args.video!r} must end with .mp4 or .gif")
        if _P(args.video).is_dir():
            raise UsageError(f"--video: {args.video!r} is a directory")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be in 0..65535, got {args.port}")
    try:
        from ..viewer import live as _live
        if args.video:
            import matplotlib  # noqa: F401
            if args.video.lower().endswith(".mp4"):
                import imageio_ffmpeg  # noqa: F401
            from ..viewer.video import VIDEO_DEFAULTS
            fps = VIDEO_DEFAULTS[_P(args.video).suffix.lower()][0]
            frames = _live.FrameCollector(scn.robot_description, scn.model.joint_names, fps=fps)
            hooks.append(frames)
        if args.view:
            from ..viewer.server import RobotViewer
            viewer = RobotViewer(scn.robot_description, host=args.host, port=args.port,
                                 title=f"vm-sim {scn.name}", base_dir=scn.urdf_path.parent)
            live = _live.LiveView(viewer, scn.model.joint_names)
            hooks.append(live)
            print(f"vm-sim: live view at {viewer.url}  (open it in a browser)", flush=True)
    except ImportError as exc:
        from ..viewer import missing_extra
        raise UsageError(missing_extra(exc)) from None
    except (ValueError, OSError) as exc:
        raise UsageError(f"--view/--video: {str(exc).splitlines()[0]}") from None
    return hooks, live, frames


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
