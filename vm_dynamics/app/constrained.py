"""``vm-sim`` for scenarios with a ``constraints`` section (rolling ball, differential drive):
the kinematically constrained systems of :mod:`vm_dynamics.constraints` (paper 002, §4).

They are integrated by :func:`vm_dynamics.constraints.simulate_constrained` (Hamel equations on
shape space, reconstruction on the group) and write the same outputs as every scenario:
``trajectory.mcap`` (``/odom``, ``/tf``, ``/joint_states``, ``/robot_description``),
``summary.json`` (energy balance, constraint residual) and PNG plots (path, energy balance);
``--video`` renders the recording like vm-view shows it.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

__all__ = ["run_constrained"]


def _recording_arrays(scn, tr):
    """Poses (4×4 in the inertial plane frame), 6-twists or SE(2) twists for the recording."""
    g = tr.g.copy()
    if scn.kind == "rolling_ball":
        g[:, :2, 3] = tr.r
        g[:, 2, 3] = scn.height
        v_body = np.einsum("kji,kj->ki", g[:, :3, :3], np.column_stack([tr.rd, 0 * tr.t]))
        return g, np.column_stack([v_body, tr.V]), "SE3"
    g[:, 2, 3] = scn.height
    return g, tr.V, "SE2"


def _residual(scn, tr) -> float:
    conn = scn.system.connection
    return max(float(np.max(np.abs(conn.constraint_residual(tr.g[k], tr.V[k], tr.r[k], tr.rd[k]))))
               for k in range(len(tr.t)))


def _plots(out: Path, name, g, tr) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.5))
    ax[0].plot(g[:, 0, 3], g[:, 1, 3])
    ax[0].set(xlabel="x [m]", ylabel="y [m]", title=f"{name}: path on the plane", aspect="equal")
    ax[1].plot(tr.t, tr.energy - tr.energy[0] - tr.work)
    ax[1].set(xlabel="t [s]", ylabel="E(t) − E(0) − ∫Q·ṙ dt [J]",
              title="energy balance (constraint forces do no work)")
    fig.tight_layout()
    fig.savefig(out / "constrained.png", dpi=100)
    plt.close(fig)
    return ["constrained.png"]


def _video(args, out: Path, name, log) -> None:
    """``--video FILE``: the robot and its path rendered offscreen from the recording (the
    scene vm-view shows); ``--view`` points to vm-view, which replays the recording."""
    if getattr(args, "video", None):
        from ..viewer.scene import playback_from_mcap
        from ..viewer.video import write_video
        write_video(args.video, playback_from_mcap(out / "trajectory.mcap"), title=name)
        log(f"vm-sim: wrote {args.video}")
    if getattr(args, "view", False):
        log(f"vm-sim: replay with: vm-view {out / 'trajectory.mcap'}")


def _simulate(path, overrides):
    from ..config.params import apply_overrides, read_params_file
    from ..config.scenario import find_file
    from ..constraints import simulate_constrained
    from ..constraints.scenario import constrained_scenario
    params = apply_overrides(read_params_file(path), overrides)
    name = str(params.get("scenario", path.stem))
    urdf = find_file(params.get("robot_description_file"), "robot_description_file",
                     [path.resolve().parent])
    scn = constrained_scenario(params, urdf)
    dt, duration = float(params.get("dt", 0.001)), float(params.get("duration", 10.0))
    if not (math.isfinite(dt) and dt > 0 and math.isfinite(duration) and duration >= dt):
        raise ValueError(f"dt={dt!r}, duration={duration!r}: expected 0 < dt <= duration")
    return name, params, urdf, scn, dt, duration, simulate_constrained


def run_constrained(path, args, log=print) -> int:
    """Run a constrained scenario file for ``vm-sim`` (``args``: its parsed options); returns
    the exit code.  Bad values raise ``ValueError`` (vm-sim's exit code 2)."""
    from ..ros.recording import write_mcap
    from .arguments import scenario_overrides
    from .output_dir import output_dir
    name, params, urdf, scn, dt, duration, simulate = _simulate(path, scenario_overrides(args))
    rate = args.record_rate if args.record_rate and args.record_rate > 0 else 1.0 / dt
    interval = max(dt, 1.0 / rate)
    substeps = max(1, round(interval / dt))
    t = np.arange(0.0, duration + 0.5 * interval, interval)
    out = output_dir(SimpleNamespace(name=name), args.out, args.force)
    log(f"vm-sim: {name}: {scn.kind} (kinematic connection, paper 002 §4), rkmk4, "
        f"dt={interval / substeps:g} s, duration={duration:g} s")
    start = time.perf_counter()
    tr = simulate(scn.system, t, scn.g0, scn.r0, scn.rd0, method="rkmk4", substeps=substeps,
                  forces=scn.forces)
    wall = time.perf_counter() - start
    g, V, iota = _recording_arrays(scn, tr)
    effort = np.array([scn.efforts(tk, tr.g[k], tr.r[k], tr.rd[k]) for k, tk in enumerate(t)])
    write_mcap(out / "trajectory.mcap", t, g, V, tr.r if scn.joint_names else np.zeros((len(t), 0)),
               tr.rd if scn.joint_names else np.zeros((len(t), 0)), scn.joint_names,
               effort=effort if scn.joint_names else None, base_iota=iota,
               robot_description=str(urdf))
    files = ["trajectory.mcap", "summary.json"]
    if not args.no_plots:
        files += _plots(out, name, g, tr)
    balance = tr.energy - tr.energy[0] - tr.work
    summary = {
        "scenario": name, "constrained_system": scn.kind, "duration": float(t[-1]),
        "simulated_time": float(t[-1]), "real_time_factor": float(t[-1]) / max(wall, 1e-12),
        "samples": len(t), "wall_time_s": wall, "energy_start": float(tr.energy[0]),
        "energy_end": float(tr.energy[-1]), "work_of_efforts": float(tr.work[-1]),
        "energy_balance_error": float(np.max(np.abs(balance))),
        "constraint_residual": _residual(scn, tr),
        "final_position": [float(x) for x in g[-1, :3, 3]], "finished": True, "files": files}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    log(f"vm-sim: wrote {out}/ ({', '.join(files)}); energy balance error "
        f"{summary['energy_balance_error']:.2e} J, constraint residual "
        f"{summary['constraint_residual']:.1e}")
    _video(args, out, name, log)
    return 0
