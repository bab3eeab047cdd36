"""``vm-sim`` for scenarios with a ``capture`` section (issue 22): a chaser captures a tumbling
target (:mod:`vm_dynamics.capture`).

Outputs, like every scenario: ``trajectory.mcap`` (the chaser's ``/odom``, ``/tf``,
``/joint_states``, ``/robot_description``; the target's pose as the TF ``odom → <target name>``
in every ``/tf`` message), ``summary.json`` (phases, momentum balance, energy balance with the
contact dissipation, peak contact force) and the plots ``capture.png`` (contact force, relative
pose fixture vs grasp frame, momenta of both bodies and their sum, energy balance).
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

__all__ = ["run_capture", "simulate_capture_file", "plot_capture"]


def simulate_capture_file(path, overrides=None, progress=None):
    """``(scenario, CaptureTrajectory, urdf path, params)`` of a capture scenario file with
    ``-p``-style ``overrides``."""
    from ..capture.mission import run_mission
    from ..capture.scenario import capture_scenario
    from ..config.params import apply_overrides, read_params_file
    from ..config.scenario import find_file
    path = Path(path)
    params = apply_overrides(read_params_file(path), overrides)
    urdf = find_file(params.get("robot_description_file"), "robot_description_file",
                     [path.resolve().parent])
    scn = capture_scenario(params, urdf, str(params.get("scenario", path.stem)))
    every = max(1, round(0.02 / scn.sim.dt))       # samples at 50 Hz
    tr = run_mission(scn.mission, scn.duration, sample_every=every, progress=progress)
    return scn, tr, urdf, params


def plot_capture(out: Path, name: str, tr) -> str:
    """``capture.png``: contact force, fixture-vs-grasp-frame error, momenta, energy balance."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = tr.t
    tg = [e[0] for e in tr.events if e[1] == "grasp"]
    fig, ax = plt.subplots(2, 2, figsize=(12, 8))
    a = ax[0, 0]
    a.plot(t, np.linalg.norm(tr.contact_force, axis=1))
    a.set(xlabel="t [s]", ylabel="|f| [N]", title="contact force on the chaser")
    a = ax[0, 1]
    a.semilogy(t, np.maximum(tr.grasp_position_error, 1e-9), label="position [m]")
    a.semilogy(t, np.maximum(tr.grasp_angle_error, 1e-9), label="angle [rad]")
    a.set(xlabel="t [s]", title="fixture relative to the grasp frame (until the grasp)")
    a.legend()
    a = ax[1, 0]
    field = bool(np.any(tr.external_impulse))           # force elements (orbit) acted
    rest = (tr.momentum_total - tr.impulse - tr.external_impulse,
            "total − base and orbit impulses") if field else (tr.momentum_total - tr.impulse,
                                                               "total − base impulse")
    for h, lab in ((tr.momentum_chaser, "chaser"), (tr.momentum_target, "target"), rest):
        a.plot(t, np.linalg.norm(h[:, 3:], axis=1), label=f"|L| {lab}")
    a.plot(t, np.linalg.norm(tr.momentum_total[:, 3:], axis=1), "k:", label="|L| total")
    a.set(xlabel="t [s]", ylabel="angular momentum about the origin [N m s]",
          title="momenta (chief frame)" if field else "momenta (inertial frame)")
    a.legend(fontsize=8)
    a = ax[1, 1]
    a.plot(t, tr.energy_balance, label=("T + U + U_orbit + D + weld loss − W − ∫∂U/∂t (− initial)"
                                        if field else "T + U + D + weld loss − W (− initial)"))
    a.plot(t, tr.dissipated, label="D: contact dissipation")
    a.plot(t, tr.weld_loss, label="kinetic energy lost in the grasp (plastic weld)")
    a.set(xlabel="t [s]", ylabel="J", title="energy balance")
    a.legend(fontsize=8)
    for a in ax.flat:
        for tk in tg:
            a.axvline(tk, color="grey", lw=0.8, ls="--")
    fig.suptitle(f"{name}: capture of a tumbling target (dashed: grasp)")
    fig.tight_layout()
    fig.savefig(out / "capture.png", dpi=100)
    plt.close(fig)
    return "capture.png"


def summary_of(name, scn, tr) -> dict:
    """The ``summary.json`` content of a capture run."""
    h_scale = max(float(np.abs(tr.momentum_total).max()), 1e-300)
    e_scale = max(float(np.max(tr.kinetic_chaser + tr.kinetic_target)), 1e-300)
    grasp = [e for e in tr.events if e[1] == "grasp"]
    return {
        "scenario": name, "duration": float(tr.t[-1]), "simulated_time": float(tr.t[-1]),
        "real_time_factor": float(tr.t[-1]) / max(tr.wall_time, 1e-12),
        "samples": len(tr.t), "wall_time_s": tr.wall_time,
        "events": [{"t": float(e[0]), "event": e[1],
                    **({"position_error": e[2][0], "angle_error": e[2][1]} if e[2] else {})}
                   for e in tr.events],
        "grasped": bool(grasp),
        "peak_contact_force": float(np.max(np.linalg.norm(tr.contact_force, axis=1))),
        "momentum_drift": float(np.abs(tr.momentum_error).max()),
        "momentum_drift_relative": float(np.abs(tr.momentum_error).max()) / h_scale,
        "target_angular_momentum_start": float(np.linalg.norm(tr.momentum_target[0, 3:])),
        "final_angular_velocity_target": float(np.linalg.norm(tr.V_T[-1, 3:])),
        "base_impulse": [float(x) for x in tr.impulse[-1]],
        "external_impulse": [float(x) for x in tr.external_impulse[-1]],
        "field_potential_change": float(tr.potential[-1] - tr.potential[0]),
        "energy_balance_error": float(np.abs(tr.energy_balance).max()),
        "energy_balance_error_relative": float(np.abs(tr.energy_balance).max()) / e_scale,
        "energy_dissipated_contact": float(tr.dissipated[-1]),
        "energy_lost_in_grasp": float(tr.weld_loss[-1]),
        "work_of_efforts": float(tr.work[-1]),
        "finished": True,
    }


def run_capture(path, args, log=print) -> int:
    """Run a capture scenario file for ``vm-sim`` (``args``: its parsed options); returns the
    exit code.  Bad values raise ``ValueError`` (vm-sim's exit code 2)."""
    from ..nodes.capture import shape_marker
    from ..ros.recording import write_mcap
    from .arguments import scenario_overrides
    from .output_dir import output_dir
    overrides = scenario_overrides(args)
    log(f"vm-sim: loading {Path(path).name} (capture) ...")
    start = time.perf_counter()
    scn, tr, urdf, params = simulate_capture_file(path, overrides)
    name = scn.name
    out = output_dir(SimpleNamespace(name=name), args.out, args.force)
    rate = args.record_rate if getattr(args, "record_rate", None) else None
    joints = scn.system.model.joint_names
    tgt = scn.system.target
    write_mcap(out / "trajectory.mcap", tr.t, tr.g, tr.V, tr.q, tr.qd, joints, effort=tr.tau,
               extra_tf=[("odom", tgt.name, tr.g_T)], rate_hz=rate,
               robot_description=str(urdf),
               target_marker=shape_marker(0.0, tgt.name, tgt.shape, tgt.shape_pose, "target"))
    files = ["trajectory.mcap", "summary.json"]
    if not getattr(args, "no_plots", False):
        files.append(plot_capture(out, name, tr))
    summary = summary_of(name, scn, tr)
    summary["files"] = files
    summary["wall_time_total_s"] = time.perf_counter() - start
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    grasp = next((e for e in tr.events if e[1] == "grasp"), None)
    log(f"vm-sim: wrote {out}/ ({', '.join(files)}); "
        + (f"grasp at t={grasp[0]:.3f} s, " if grasp else "no grasp, ")
        + f"momentum drift {summary['momentum_drift_relative']:.1e} (relative), energy balance "
          f"error {summary['energy_balance_error']:.2e} J, contact dissipation "
          f"{summary['energy_dissipated_contact']:.3e} J")
    if not math.isfinite(summary["momentum_drift"]):
        return 1
    return 0
