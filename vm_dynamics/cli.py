"""``vm-sim``: run a scenario and write a ROS 2 recording, a summary and plots.

    vm-sim SCENARIO [--duration S] [--dt S] [--integrator NAME] [--controller NAME] [--out DIR]
    vm-sim --list

Writes to DIR (default ``out/<scenario>``): ``trajectory.mcap`` (``/joint_states``, ``/odom``,
``/tf`` of every moving link, ``/tf_static``, ``/robot_description``, ``/clock``; playable with
``ros2 bag play``, opens in Foxglove and ``vm-view``), ``summary.json`` and PNG
plots.  Ctrl-C stops the integration and writes what has been computed so far.  Bad arguments
get a one-line error and exit code 2.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["main", "run_scenario"]


class UsageError(Exception):
    """A user error: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints usage otherwise)
        raise UsageError(message)


def _parser():
    p = _Parser(prog="vm-sim", description="Simulate a vehicle-manipulator scenario with the "
                "Lagrange-Poincaré equations and write trajectory.mcap, summary.json and plots.")
    p.add_argument("scenario", nargs="?", help="scenario name (see --list) or path to a YAML file")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--duration", type=float, help="simulated time, s (default: scenario's)")
    p.add_argument("--dt", type=float, help="time step, s (default: scenario's)")
    p.add_argument("--integrator", help="rkmk4 (default), lie_euler or dopri5")
    p.add_argument("--controller", help="controller plug-in name, or 'none' for open loop "
                   "(default: the scenario's)")
    p.add_argument("--out", help="output directory (default: out/<scenario>)")
    p.add_argument("--record-rate", type=float, default=100.0,
                   help="rate of the MCAP recording, Hz (default 100; 0 = every step)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--view", action="store_true",
                   help="show the robot in the browser as it simulates (at real time), then "
                   "replay it with a time slider until Ctrl-C; prints the URL (needs [viz])")
    p.add_argument("--host", default="127.0.0.1",
                   help="--view: address to serve on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8080,
                   help="--view: port (default 8080; 0 = any free port)")
    p.add_argument("--video", metavar="FILE",
                   help="also render the robot offscreen to FILE (.mp4: 800x600 at 25 fps, "
                   ".gif: 440x330 at 10 fps)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _build_controller(scn, name):
    from .control import get_controller
    from .control.references import reference_from_config
    params = dict(scn.controller or {})
    params.pop("name", None)
    if name != (scn.controller or {}).get("name"):
        params = {}  # a controller chosen on the command line runs with its own defaults
    ctrl = get_controller(name, params)
    reference = reference_from_config(scn.reference or {})
    return ctrl, reference


def run_scenario(scn, controller_name=None, out_dir=None, progress=True, record_rate=100.0,
                 plots=True, log=print, callback=None):
    """Simulate a loaded :class:`~vm_dynamics.scenario.Scenario` and write its outputs.

    ``callback(state)`` is passed to ``vm.simulate`` (called at every sample).
    Returns the summary dict.
    """
    from . import analysis, recording
    from .simulate import simulate

    model = scn.model
    ctrl_name = controller_name if controller_name is not None else (scn.controller or {}).get("name")
    if ctrl_name in ("none", ""):
        ctrl_name = None
    ctrl = reference = None
    if ctrl_name:
        ctrl, reference = _build_controller(scn, ctrl_name)

    def external(t, state):
        return scn.external_base_wrench(t, state), scn.external_frame_wrenches(t, state) or None

    from .simulate import State
    state0 = State(0.0, scn.g0, scn.V0, scn.q0, scn.qd0)
    prescribed = scn.prescribed_motion()
    if ctrl is not None:
        ctrl.reset(model, state0, external=external if scn.hydrodynamics is not None else None)
        ctrl_tau, ctrl_bw = ctrl.inputs(reference)
        tau_fn = lambda t, s: ctrl_tau(t, s) + scn.open_loop_torque(t, s)      # noqa: E731
        bw_fn = lambda t, s: ctrl_bw(t, s) + scn.external_base_wrench(t, s)    # noqa: E731
    else:
        tau_fn = scn.open_loop_torque
        bw_fn = scn.external_base_wrench
    frame_fn = None
    if scn.hydrodynamics is not None and scn.hydrodynamics.link_buoyancy:
        frame_fn = {link: (lambda t, s, link=link: scn.external_frame_wrenches(t, s)[link])
                    for link in scn.hydrodynamics.link_buoyancy}
    if prescribed is not None:
        tau_fn = None  # the joints follow the motion; simulate returns the efforts in traj.tau

    log(f"vm-sim: {scn.name}: {model!r}, {scn.integrator}, dt={scn.dt:g} s, "
        f"duration={scn.duration:g} s, controller={ctrl_name or 'none'}"
        + (", prescribed joint motion" if prescribed else ""))
    t0 = time.perf_counter()
    traj = simulate(model, scn.g0, scn.V0, scn.q0, scn.qd0, scn.duration, scn.dt,
                    tau=tau_fn, base_wrench=bw_fn, method=scn.integrator,
                    prescribed=prescribed, progress=progress, callback=callback,
                    **({"frame_wrenches": frame_fn} if frame_fn else {}))
    wall = time.perf_counter() - t0
    interrupted = bool(getattr(traj, "interrupted", False))
    sim_time = float(traj.t[-1] - traj.t[0])

    out = Path(out_dir) if out_dir else Path("out") / scn.name
    out.mkdir(parents=True, exist_ok=True)

    # ---- conservation: meaningful only where the inputs conserve the quantity
    no_gravity = float(np.linalg.norm(model.gravity)) == 0.0
    open_loop_free = (ctrl is None and scn.input.get("type", "none") == "none"
                      and prescribed is None and scn.hydrodynamics is None)
    internal_only = scn.hydrodynamics is None and (
        ctrl is None or getattr(ctrl, "params", {}).get("mode") == "free_floating")
    energy_conserved = open_loop_free
    momentum_conserved = (model.b == 6 and no_gravity and internal_only)
    E, K = analysis.energy_series(model, traj)
    energy_drift = analysis.energy_drift_rel(E, K) if energy_conserved else None
    pi, arm = analysis.momentum_series(model, traj)
    momentum_drift = analysis.momentum_drift_rel(pi, arm) if momentum_conserved else None

    summary = {
        "scenario": scn.name,
        "description": scn.description,
        "base_type": model.base_type,
        "joints": model.joint_names,
        "integrator": scn.integrator,
        "controller": ctrl_name,
        "dt": scn.dt,
        "duration": scn.duration,
        "simulated_time": sim_time,
        "steps": int(len(traj.t) - 1),
        "wall_time_s": wall,
        "real_time_factor": sim_time / wall if wall > 0 else None,
        "energy_drift_rel": energy_drift,
        "momentum_drift_rel": momentum_drift,
        "interrupted": interrupted,
        "final_state": {
            "base_position": traj.g[-1, :3, 3].tolist(),
            "base_rotation_vector": _rotvec(traj.g[-1]).tolist(),
            "base_twist": traj.V[-1].tolist(),
            "joint_positions": traj.q[-1].tolist(),
            "joint_velocities": traj.qd[-1].tolist(),
        },
        "initial_momentum": pi[0].tolist(),
        "final_momentum": pi[-1].tolist(),
    }
    err = None
    if ctrl is not None and getattr(reference, "joint", None) is not None:
        err, final, rms = analysis.tracking_errors(traj.t, traj.q, reference.joint)
        summary["tracking_error_final"] = final
        summary["tracking_error_rms"] = rms
    if scn.prescribed and scn.prescribed.get("type") == "wheel_loop":
        cycles = analysis.attitude_changes_deg(traj.t, traj.g, float(scn.prescribed.get("period", 10.0)))
        summary["attitude_change_per_cycle"] = cycles
    euler = None
    if scn.params.get("compare_euler_model") and model.b == 6:
        from .euler_model import compare_with_lp
        euler = compare_with_lp(model, traj)
        summary["euler_angle_model"] = {k: v for k, v in euler.items() if k != "euler_trajectory"}
        log(f"vm-sim: ZYX Euler-angle model: {euler['euler_status']}; pitch came within "
            f"{euler['closest_to_gimbal_lock_deg']:.3g} deg of 90; Euler energy error "
            f"{_fmt(euler['euler_energy_drift_rel'])} vs LP {_fmt(euler['lp_energy_drift_rel'])}")

    info = recording.write_mcap(out / "trajectory.mcap", traj.t, traj.g, traj.V, traj.q, traj.qd,
                                model.joint_names, effort=getattr(traj, "tau", None),
                                base_iota=model.group.iota,
                                robot_description=str(scn.urdf_path),
                                rate_hz=record_rate if record_rate and record_rate > 0 else None)
    summary["recording"] = {"file": "trajectory.mcap", "messages": getattr(info, "message_counts", None)}
    written = ["trajectory.mcap", "summary.json"]
    if plots:
        recording.plot_joints(out / "joints.png", traj.t, traj.q, model.joint_names,
                              title=f"{scn.name}: joint positions")
        recording.plot_base(out / "base.png", traj.t, traj.g, title=f"{scn.name}: vehicle pose")
        scaleE = max(abs(E[0]), float(np.max(np.abs(K))), 1e-300)
        scaleP = max(float(np.linalg.norm(pi[0])), float(np.max(np.linalg.norm(arm, axis=1))), 1e-300)
        recording.plot_conservation(out / "conservation.png", traj.t, (E - E[0]) / scaleE,
                                    np.linalg.norm(pi - pi[0], axis=1) / scaleP,
                                    title=f"{scn.name}: energy and momentum change (relative)")
        written += ["joints.png", "base.png", "conservation.png"]
        if euler is not None:
            _plot_euler(out / "euler_comparison.png", traj, E, K, euler, scn.name)
            written.append("euler_comparison.png")
        if err is not None:
            recording.plot_tracking(out / "tracking.png", traj.t, err, model.joint_names,
                                    title=f"{scn.name}: joint tracking error")
            written.append("tracking.png")
    summary["files"] = written
    recording.write_summary_json(out / "summary.json", summary)
    log(f"vm-sim: {'INTERRUPTED after' if interrupted else 'done'} {sim_time:.3f} s simulated in "
        f"{wall:.2f} s (real-time factor {summary['real_time_factor']:.2f}); "
        f"energy drift {_fmt(energy_drift)}, momentum drift {_fmt(momentum_drift)}"
        + (f", tracking error final {summary['tracking_error_final']:.2e} rad" if err is not None else ""))
    log(f"vm-sim: wrote {', '.join(written)} to {out}/")
    return summary


def _plot_euler(path, traj, E, K, euler, name):
    """LP vs ZYX Euler-angle model: pitch, energy error, mass-matrix conditioning."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    et = euler["euler_trajectory"]
    pitch = np.degrees(np.arcsin(np.clip(-traj.g[:, 2, 0], -1.0, 1.0)))
    scale = max(abs(E[0]), float(np.max(np.abs(K))), 1e-300)
    fig, ax = plt.subplots(3, 1, figsize=(7.5, 7.5), sharex=True)
    ax[0].plot(traj.t, pitch, color="k")
    ax[0].axhline(90, ls=":", color="grey")
    ax[0].axhline(-90, ls=":", color="grey")
    ax[0].set_ylabel("ZYX pitch θ [deg]")
    ax[1].semilogy(traj.t, np.maximum(np.abs(E - E[0]) / scale, 1e-17), label="Lagrange–Poincaré (RKMK4)")
    ax[1].semilogy(et["t"], np.maximum(et["energy_error_rel"], 1e-17), label="ZYX Euler angles (RK4)")
    ax[1].set_ylabel("|E − E₀| / E₀")
    ax[1].set_ylim(1e-18, 1e3)
    ax[1].legend(loc="upper left")
    ax[2].semilogy(et["t"], et["condition_number"], color="C1", label="cond(M_Euler)")
    ax[2].set_ylabel("condition number")
    ax[2].set_xlabel("time t [s]")
    ax[2].legend(loc="upper left")
    for a in ax:
        a.grid(True, alpha=0.3)
    fig.suptitle(f"{name}: {euler['euler_status']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def _rotvec(g):
    from .lie import so3_log
    return so3_log(g[:3, :3])


def _fmt(x):
    return "n/a" if x is None else f"{x:.2e}"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = _parser().parse_args(argv)
        from .scenario import list_scenarios, load_scenario
        if args.list:
            for name, desc in list_scenarios():
                print(f"{name:18s} {desc}")
            return 0
        if not args.scenario:
            raise UsageError("missing SCENARIO (see vm-sim --list)")
        overrides = {}
        if args.duration is not None:
            if not args.duration > 0:
                raise UsageError(f"--duration must be positive, got {args.duration:g}")
            overrides["duration"] = args.duration
        if args.dt is not None:
            if not args.dt > 0:
                raise UsageError(f"--dt must be positive, got {args.dt:g}")
            overrides["dt"] = args.dt
        if args.integrator is not None:
            from .integrators import METHODS
            if args.integrator not in METHODS:
                raise UsageError(f"--integrator: unknown {args.integrator!r}; choose one of "
                                 f"{', '.join(METHODS)}")
            overrides["integrator"] = args.integrator
        if args.record_rate is not None and args.record_rate < 0:
            raise UsageError("--record-rate must be >= 0")
        try:
            scn = load_scenario(args.scenario, overrides)
            if args.controller not in (None, "none"):
                from .control import available_controllers
                if args.controller not in available_controllers():
                    raise UsageError(f"--controller: unknown {args.controller!r}; available: "
                                     f"{', '.join(available_controllers())}, none")
        except ValueError as exc:
            raise UsageError(str(exc).splitlines()[0]) from None
    except UsageError as exc:
        print(f"vm-sim: error: {exc}", file=sys.stderr)
        return 2
    try:
        hooks, live, frames = _view_hooks(scn, args)
    except UsageError as exc:
        print(f"vm-sim: error: {exc}", file=sys.stderr)
        return 2

    def run_hooks(state):
        for hook in hooks:
            hook(state)
        return False
    callback = run_hooks if hooks else None
    try:
        run_scenario(scn, controller_name=args.controller, out_dir=args.out,
                     progress=not args.quiet and sys.stderr.isatty(),
                     record_rate=args.record_rate, plots=not args.no_plots, callback=callback)
        if frames is not None:
            from .viewer.video import write_video
            write_video(args.video, frames.playback(), title=scn.name)
            print(f"vm-sim: wrote {args.video}")
        if live is not None:
            try:
                live.finish()
                print(f"vm-sim: replay at {live.viewer.url}  (Ctrl-C to quit)", flush=True)
                live.viewer.wait()
            except KeyboardInterrupt:   # also when Ctrl-C comes before wait() has started
                pass
    finally:
        if live is not None:
            live.viewer.stop()
    return 0


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
        from .viewer import live as _live
        if args.video:
            import matplotlib  # noqa: F401
            if args.video.lower().endswith(".mp4"):
                import imageio_ffmpeg  # noqa: F401
            from .viewer.video import VIDEO_DEFAULTS
            fps = VIDEO_DEFAULTS[_P(args.video).suffix.lower()][0]
            frames = _live.FrameCollector(str(scn.urdf_path), scn.model.joint_names, fps=fps)
            hooks.append(frames)
        if args.view:
            from .viewer.server import RobotViewer
            viewer = RobotViewer(str(scn.urdf_path), host=args.host, port=args.port,
                                 title=f"vm-sim {scn.name}")
            live = _live.LiveView(viewer, scn.model.joint_names)
            hooks.append(live)
            print(f"vm-sim: live view at {viewer.url}  (open it in a browser)", flush=True)
    except ImportError as exc:
        from .viewer import missing_extra
        raise UsageError(missing_extra(exc)) from None
    except (ValueError, OSError) as exc:
        raise UsageError(f"--view/--video: {str(exc).splitlines()[0]}") from None
    return hooks, live, frames


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
