"""What ``vm-sim`` writes after the run: summary.json (written first and again after each
phase, so that nothing can lose it), the closed trajectory.mcap, the energy and momentum
balance -- with the divergence policy of :mod:`vm_dynamics.core.divergence` -- and the PNG
plots."""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..core import divergence
from .interrupts import phase

__all__ = ["base_summary", "divergence_summary", "energy_divergence", "write_summary",
           "analyse", "write_outputs", "plots", "joint_kinds", "plain_status", "euler_figure",
           "rotation_vector", "fmt", "write_error_line"]


def base_summary(run, traj, wall, diverged, interrupted):
    scn, model = run.scn, run.scn.model
    sim_time = float(traj.t[-1] - traj.t[0]) if traj is not None else 0.0
    s = {
        "scenario": scn.name,
        "description": scn.description,
        "base_type": model.base_type,
        "joints": model.joint_names,
        "integrator": scn.integrator,
        "controller": run.ctrl_name,
        "controller_parameters": dict(getattr(run.ctrl, "params", {}) or {}) or None,
        "dt": scn.dt,
        "duration": scn.duration,
        "simulated_time": sim_time,
        "steps": int(round(sim_time / scn.dt)) if traj is not None else 0,
        "samples_kept_every": run.record_every,
        "wall_time_s": wall,
        "real_time_factor": sim_time / wall if wall > 0 else None,
        "recording_time_s": run.recording_time,
        "setup_time_s": run.setup_time,
        "interrupted": interrupted,
        "diverged": diverged is not None,
        "finished": True,       # False: killed while running, or an output could not be written
    }
    s.update(divergence_summary(diverged))
    if traj is not None:
        s["final_state"] = {
            "base_position": traj.g[-1, :3, 3].tolist(),
            "base_rotation_vector": rotation_vector(traj.g[-1]).tolist(),
            "base_twist": traj.V[-1].tolist(),
            "joint_positions": traj.q[-1].tolist(),
            "joint_velocities": traj.qd[-1].tolist(),
        }
    return s


def divergence_summary(diverged) -> dict:
    """The summary's ``diverged`` and ``divergence`` entries of ``diverged`` (None: none)."""
    if diverged is None:
        return {"diverged": False}
    fix = diverged.get("fix", "; reduce dt or the gains")
    return {"diverged": True, "divergence": {
        "t": diverged["t"], "reason": diverged["reason"],
        "message": f"diverged at t = {diverged['t']:.6g} s ({diverged['reason']}){fix}"}}


def energy_divergence(run, traj, checks):
    """The run's divergence by the energy balance (:mod:`vm_dynamics.core.divergence`, the
    dynamics node's test, threshold ``divergence_threshold``): ``{t, reason, fix}`` at the
    first sample whose residual exceeds the threshold, or None."""
    import numpy as np
    scn = run.scn
    threshold = scn.divergence_threshold
    rel = np.abs(checks.balance) / checks.energy_scale
    bad = [k for k in range(len(rel)) if divergence.energy_balance_violated(
        float(checks.balance[k]), float(checks.energy_scale), threshold)]
    if not bad:
        return None
    worst = float(np.max(np.where(np.isfinite(rel), rel, np.inf)))
    return {"t": float(traj.t[bad[0]]), "check": "energy_balance",
            "reason": divergence.energy_balance_message(worst, threshold, scn.dt),
            "fix": ""}


def write_summary(out: Path, summary: dict) -> None:
    from ..analysis.plotting import write_bytes_nofollow
    from .summary import to_jsonable
    text = json.dumps(to_jsonable(summary), indent=2, allow_nan=False) + "\n"
    try:
        write_bytes_nofollow(out / "summary.json", text.encode())
    except OSError as exc:      # name the file (a full disk fails inside a temporary file)
        raise OSError(exc.errno, exc.strerror or str(exc), str(out / "summary.json")) from None


def analyse(run, traj, summary, diverged, stop, log):
    """The run's checks into ``summary``: energy and momentum balance (a finished run whose
    energy balance fails :func:`~vm_dynamics.core.divergence.energy_balance_violated` is
    diverged), tracking error, attitude change per cycle, the Euler-angle comparison.
    Returns ``(checks, tracking error or None, euler comparison or None, diverged)``."""
    from ..analysis import metrics as analysis
    scn, model = run.scn, run.scn.model
    with phase(log, "energy and momentum balance"):
        from ..forces import total_wrenches
        frame_fn = None
        working = [e for e in scn.forces if not e.conservative]   # the others: potential energy
        if any(e.acts_on_frames for e in working):
            def frame_fn(t, state):
                return total_wrenches(model, working, state.g, state.V, state.q)[1]
        checks = analysis.conservation_checks(model, traj, frame_fn, scn.forces)
    summary.update(checks.summary())
    if diverged is None:
        diverged = energy_divergence(run, traj, checks)
        if diverged is not None:        # a finished run whose integration cannot be trusted
            summary.update(divergence_summary(diverged))
            log(f"vm-sim: warning: {diverged['reason']}")
    ref_joint = getattr(run.reference, "joint", None) if run.ctrl is not None else None
    err = None
    if ref_joint is not None:
        err, final, rms = analysis.tracking_errors(traj.t, traj.q, ref_joint)
        summary["tracking_error_final"] = final
        summary["tracking_error_rms"] = rms
    if scn.prescribed is not None and scn.prescribed.kind == "wheel_loop":
        summary["attitude_change_per_cycle"] = analysis.attitude_changes_deg(
            traj.t, traj.g, scn.prescribed.period)
    euler = None
    if scn.params.get("compare_euler_model") and model.b == 6 and len(traj) > 1 \
            and not stop.requested:
        from ..analysis.euler_model import compare_with_lp
        with phase(log, "ZYX Euler-angle model run for comparison (Ctrl-C skips it)"), \
                stop.interruptible():
            euler = compare_with_lp(model, traj)
    if euler is not None:
        summary["euler_angle_model"] = {k: v for k, v in euler.items() if k != "euler_trajectory"}
        log(f"vm-sim: ZYX Euler-angle model: {plain_status(euler['euler_status'])}; pitch came "
            f"within {euler['closest_to_gimbal_lock_deg']:.3g} deg of 90; Euler energy error "
            f"{fmt(euler['euler_energy_drift_rel'])} vs LP {fmt(euler['lp_energy_drift_rel'])}")
    return checks, err, euler, diverged


def write_outputs(run, traj, wall, diverged, interrupted, stop, log):
    """Write summary.json (first), close trajectory.mcap, analyse (:func:`analyse`), plot;
    returns the summary."""
    out = run.out
    summary = base_summary(run, traj, wall, diverged, interrupted)
    summary["files"] = ["summary.json"]
    if run.write_error is not None:
        summary["finished"] = False
        summary["write_error"] = str(run.write_error)
    write_summary(out, summary)              # first, so that nothing can lose it
    if traj is None:
        if run.recorder is not None:
            run.recorder.abort()
        log(f"vm-sim: no samples to write; wrote summary.json to {out}/")
        return summary

    checks, err, euler, diverged = analyse(run, traj, summary, diverged, stop, log)
    write_summary(out, summary)

    with phase(log, "closing trajectory.mcap"):
        try:
            info = run.recorder.close()
        except OSError as exc:      # the disk filled up at the end: the chunks written stay
            run.write_error = exc
            info = run.recorder.close()
    summary["recording"] = {"file": "trajectory.mcap",
                            "messages": getattr(info, "message_counts", None)}
    if getattr(info, "error", None):
        summary["recording"]["samples"] = len(info.indices)
        summary["recording"]["error"] = info.error
        summary["finished"] = False
        summary["write_error"] = info.error
    summary["files"] = ["trajectory.mcap", "summary.json"]
    write_summary(out, summary)
    if run.write_error is not None:         # no plots on a full disk
        log(f"vm-sim: wrote {', '.join(summary['files'])} to {out}/")
        return summary

    if run.plots and len(traj) > 1:
        with phase(log, "plotting"):
            written = plots(run, traj, checks, err, euler, stop)
        summary["files"] += written
        if stop.requested:
            summary["plots_skipped"] = True
    write_summary(out, summary)

    state = ("DIVERGED after" if diverged else "INTERRUPTED after" if interrupted else "done")
    rtf = summary["real_time_factor"]
    log(f"vm-sim: {state} {summary['simulated_time']:.3f} s simulated in {wall:.2f} s "
        f"(real-time factor {fmt(rtf, '.2f')}); energy balance "
        f"{fmt(summary.get('energy_balance_rel'))}, energy drift "
        f"{fmt(summary.get('energy_drift_rel'))}, momentum drift "
        f"{fmt(summary.get('momentum_drift_rel'))}"
        + (f", tracking error final {summary['tracking_error_final']:.2e}"
           if err is not None else ""))
    log(f"vm-sim: wrote {', '.join(summary['files'])} to {out}/")
    return summary


def plots(run, traj, checks, err, euler, stop) -> list:
    """Write the PNG plots (stopping early if ``stop.requested``); returns the names written."""
    from ..analysis import plotting
    scn, model, out = run.scn, run.scn.model, run.out
    tag = (f"{scn.name} · controller {run.ctrl_name or 'none'} · {scn.integrator}, "
           f"dt = {scn.dt:g} s")
    units = ["m" if k == "prismatic" else "rad" for k in joint_kinds(model)]
    figures = [("joints.png", lambda: plotting.joints_figure(
        traj.t, traj.q, model.joint_names, title=f"{tag}\njoint positions", units=units))]
    g_out, frame = traj.g, ""
    if run.output is not None:              # in orbit: the LVLH frame
        from ..analysis.relative_motion import relative_motion_figure
        from ..forces.orbit import centre_of_mass
        g_rel = run.output.orbit.trajectory_to_lvlh(traj.t, traj.g, traj.V)[0]
        if run.output.relative:
            g_out, frame = g_rel, ", relative to LVLH"

        def relative():         # at most ~2000 points: the centre of mass costs a kinematics
            import numpy as np
            k = slice(None, None, max(1, len(traj.t) // 2000))
            com = np.array([centre_of_mass(model, gk, qk)
                            for gk, qk in zip(g_rel[k], traj.q[k])])
            return relative_motion_figure(traj.t[k], g_rel[k], com, title=(
                f"{tag}\nrelative motion in the LVLH frame (x radial, y along-track)"))
        figures.append(("relative_motion.png", relative))
    if model.b:
        figures.append(("base.png", lambda: plotting.base_figure(
            traj.t, g_out, model.base_type,
            title=f"{tag}\nvehicle pose ({model.base_type}{frame})")))
    figures.append(("conservation.png", lambda: plotting.energy_figure(
        traj.t, checks.balance, checks.energy_scale, work_done=not checks.energy_conserved,
        momentum_change=checks.momentum_change if checks.momentum_change is not None else None,
        momentum_scale=checks.momentum_scale, momentum_conserved=checks.momentum_conserved,
        title=f"{tag}\n" + ("energy drift (no input does work)" if checks.energy_conserved
                            else "energy balance E − E₀ − W (W: work of efforts and wrenches)"))))
    if err is not None:
        figures.append(("tracking.png", lambda: plotting.tracking_figure(
            traj.t, err, model.joint_names, title=f"{tag}\njoint tracking error", units=units)))
    if euler is not None:
        figures.append(("euler_comparison.png", lambda: euler_figure(
            traj, checks, euler, tag, scn.integrator)))
    written = []
    for name, make in figures:
        if stop.requested:
            break
        plotting.save_figure(make(), out / name)
        written.append(name)
    return written


def joint_kinds(model):
    kinds = getattr(model, "joint_types", None)
    if kinds is None or len(kinds) != model.n:
        return ["revolute"] * model.n
    return list(kinds)


def plain_status(status: str) -> str:
    """The Euler model's status without raw exception tuples such as
    ``(34, 'Numerical result out of range')`` (an ``OverflowError`` from ``math``)."""
    s = re.sub(r":?\s*\(\d+, '([^']*)'\)", lambda m: f" ({m.group(1).lower()})", str(status))
    s = re.sub(r":\s*\w+: entries must not exceed [^,]*, got (\S+)$",
               r" (the state reached \1: overflow)", s)
    return s.replace("numerical result out of range", "floating-point overflow")


def euler_figure(traj, checks, euler, tag, integrator):
    """LP vs ZYX Euler-angle model: pitch, energy error (the LP run's, labelled with its
    ``integrator``), mass-matrix conditioning."""
    import numpy as np

    from ..analysis import plotting
    from ..analysis.plotting import add_legend, finish_figure, new_figure

    @plotting.styled
    def make():
        et = euler["euler_trajectory"]
        pitch = np.degrees(np.arcsin(np.clip(-traj.g[:, 2, 0], -1.0, 1.0)))
        fig, ax = new_figure(3, 2.2)
        ax[0].plot(traj.t, pitch, color="k", label="pitch θ (LP state)")
        for y in (90, -90):
            ax[0].axhline(y, ls=":", color="grey")
        ax[0].set_ylabel("ZYX pitch θ [deg]")
        add_legend(ax[0], 1)
        lp_err = np.abs(checks.balance) / checks.energy_scale
        ax[1].semilogy(traj.t, np.maximum(lp_err, 1e-17),
                       label=f"Lagrange–Poincaré ({integrator})")
        ax[1].semilogy(et["t"], np.maximum(et["energy_error_rel"], 1e-17),
                       label="ZYX Euler angles (RK4)")
        ax[1].set_ylabel(r"$|E - E_0|\,/\,E_\mathrm{ref}$")
        ax[1].set_ylim(1e-18, 1e3)
        add_legend(ax[1], 2)
        ax[2].semilogy(et["t"], et["condition_number"], color="C1", label="cond(M_Euler)")
        ax[2].set_ylabel("condition number")
        add_legend(ax[2], 1)
        return finish_figure(fig, ax, traj.t,
                       f"{tag}\nEuler-angle model: {plain_status(euler['euler_status'])}")
    return make()


def rotation_vector(g):
    from ..core.lie import so3_log
    return so3_log(g[:3, :3])


def fmt(x, spec=".2e"):
    return "n/a" if x is None else format(x, spec)


def write_error_line(exc: OSError, run) -> str:
    """One line for a failed write: the file, the reason and what trajectory.mcap keeps."""
    from ..ros.recording import RecordingError
    if isinstance(exc, RecordingError):
        return str(exc)
    what = f"cannot write {exc.filename or run.out}: {exc.strerror or exc}"
    rec = run.recorder
    error = getattr(rec, "error", None)
    if error is not None:
        return f"{what}; trajectory.mcap: {str(error).split('; ', 1)[-1]}"
    kept = getattr(rec, "samples_on_disk", (0, None))
    if rec is not None and kept[0]:
        what += f"; trajectory.mcap keeps {kept[0]} samples up to t = {kept[1]:.6g} s, readable"
    return what
