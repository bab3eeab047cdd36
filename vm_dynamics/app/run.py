"""One ``vm-sim`` run: prepared and checked before the simulation (:func:`prepare_run`:
controller, reference, output directory), integrated with the recording streamed to disk
(:func:`execute_run`), then written (:mod:`.outputs`)."""
from __future__ import annotations

import contextlib
import math
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..core import divergence
from .arguments import UsageError
from .interrupts import DeferredInterrupt
from .output_dir import output_dir
from .outputs import base_summary, write_outputs, write_summary

__all__ = ["MAX_KEPT_SAMPLES", "Run", "check_initial_within_limits", "prepare_run",
           "DivergenceMonitor", "run_inputs", "SampleRecorder",
           "simulate_run", "run_scenario", "execute_run", "open_recorder"]

#: The most samples a run keeps in memory for its summary and plots: a longer run keeps every
#: k-th sample (k = ceil(steps / MAX_KEPT_SAMPLES)), while trajectory.mcap gets every sample
#: (at --record-rate) streamed to disk during the run, so memory stays flat with the duration.
MAX_KEPT_SAMPLES = 50_000


@dataclass
class Run:
    """Everything a run needs, checked before the simulation starts."""

    scn: object
    ctrl_name: str | None
    ctrl: object
    reference: object
    out: Path
    record_rate: float
    plots: bool
    progress: bool
    notes: list = field(default_factory=list)
    hooks: list = field(default_factory=list)      # per-sample hooks (--view, --video)
    recorder: object = None                         # trajectory.mcap, streamed during the run
    record_every: int = 1                           # samples kept in memory: every k-th
    recording_time: float = 0.0                     # wall s spent streaming trajectory.mcap
    write_error: OSError | None = None              # the recording's failed write (disk full)
    setup_time: float | None = None                 # wall s of the engine's set-up (kernels)
    #: in orbit: the outputs' frame (vm_dynamics.forces.orbit.OutputFrame); None: inertial
    output: object = None



def check_initial_within_limits(scn):
    lim = divergence.DIVERGENCE_LIMITS
    for name, a, limit in (("initial.base_twist", scn.V0, lim["velocity"]),
                           ("initial.joint_velocities", scn.qd0, lim["velocity"]),
                           ("initial.joint_positions", scn.q0, lim["position"]),
                           ("initial.base_position", scn.g0[:3, 3], lim["position"])):
        if a.size and float(abs(a).max()) > limit:
            raise ValueError(f"{name}: |value| {float(abs(a).max()):.3g} exceeds {limit:g}, the "
                             f"limit beyond which vm-sim declares divergence")


def prepare_run(scn, controller_name, out_dir, record_rate, plots, progress, explicit=(),
                force=False) -> Run:
    """Build and check the controller, the reference and the output directory (ValueError or
    UsageError for bad values; ``force``: see :func:`output_dir`)."""
    from ..config.sections import resolve_controller_params
    from ..control import available_controllers, get_controller
    from ..control.references import reference_from_config
    from ..sim.simulate import State
    if record_rate is None or not (math.isfinite(record_rate) and record_rate >= 0):
        raise UsageError(f"--record-rate must be a finite number >= 0, got {record_rate}")
    check_initial_within_limits(scn)
    section = scn.controller or {}
    name = controller_name if controller_name is not None else section.get("name")
    if name in ("none", ""):
        name = None
    notes, ctrl, reference = [], None, None
    if name is not None:
        if not isinstance(name, str) or name not in available_controllers():
            which = "--controller" if controller_name is not None else "controller.name"
            raise UsageError(f"{which}: unknown {name!r}; available: "
                             f"{', '.join(available_controllers())}, none")
        params, kept, dropped = resolve_controller_params(section, name, explicit)
        if section.get("name") not in (None, name):
            notes.append(f"controller {name}: kept {', '.join(kept) or 'no parameters'} from "
                         f"the scenario's {section['name']} section"
                         + (f"; dropped {', '.join(dropped)} (not {name} parameters)"
                            if dropped else ""))
        ctrl = get_controller(name, params)
        reference = reference_from_config(scn.reference or {})
        if getattr(scn, "orbit", None) is not None and scn.orbit_reference_frame == "lvlh":
            # station keeping: the vehicle's reference (or its initial pose) held in LVLH
            from ..forces.orbit import station_keeping_reference
            reference = station_keeping_reference(scn.orbit, reference, 0.0, scn.g0)
        state0 = State(0.0, scn.g0, scn.V0, scn.q0, scn.qd0)
        external = list(scn.forces) or None       # the controller compensates them
        ctrl.reset(scn.model, state0, external=external)
        tau, bw = ctrl.compute(0.0, state0, reference)       # dimension errors surface now
        from ..core.validation import as_vector
        as_vector(tau, scn.model.n, f"controller {name}: tau at t = 0")
        as_vector(bw, scn.model.b, f"controller {name}: base_wrench at t = 0")
        ctrl.reset(scn.model, state0, external=external)
    out = output_dir(scn, out_dir, force)
    output = None
    if getattr(scn, "orbit", None) is not None:
        from ..forces.orbit import OutputFrame
        output = OutputFrame(scn.orbit, scn.world_frame)
    return Run(scn=scn, ctrl_name=name, ctrl=ctrl, reference=reference, out=out,
               record_rate=float(record_rate), plots=plots, progress=progress, notes=notes,
               output=output)


# ----------------------------------------------------------------------------- running
class DivergenceMonitor:
    """``simulate`` callback: stops at the first sample with a NaN/Inf or beyond
    :data:`divergence.DIVERGENCE_LIMITS`, remembering when and why."""

    def __init__(self):
        self.t = None
        self.reason = None
        self.last_good_t = 0.0

    def __call__(self, state) -> bool:
        reason = divergence.state_beyond_limits(state.V, state.qd, state.q, state.g)
        if reason is not None:
            self.t, self.reason = float(state.t), reason
            return True
        self.last_good_t = float(state.t)
        return False



def run_inputs(run: Run, ctrl_inputs):
    """``(tau, base_wrench, prescribed, frame_wrenches)`` for :func:`vm_dynamics.simulate`
    from the run's controller inputs (or None: open loop) and its scenario."""
    scn, ctrl = run.scn, run.ctrl
    prescribed = scn.prescribed_motion()
    open_loop = scn.effort_input.active
    if ctrl is not None:
        ctrl_tau, ctrl_bw = ctrl_inputs
        tau_fn = ((lambda t, s: ctrl_tau(t, s) + scn.open_loop_torque(t, s)) if open_loop
                  else ctrl_tau)
        bw_fn = ctrl_bw
    else:       # open loop: pass only the inputs that exist (None = no input, no call)
        tau_fn = scn.open_loop_torque if open_loop else None
        bw_fn = None
    # the environment (hydrodynamic damping, buoyancy of vehicle and links) acts inside the
    # engine at every stage; simulate records it in traj.base_wrench
    frame_fn = None
    if prescribed is not None:
        tau_fn = None  # the joints follow the motion; simulate returns the efforts in traj.tau
    return tau_fn, bw_fn, prescribed, frame_fn


class SampleRecorder:
    """``simulate``'s ``on_sample``: streams every finite sample into the run's
    trajectory.mcap; :attr:`time` is the wall time spent writing.  A failed write (a full
    disk) is kept in ``run.write_error`` and ends the recording (the run's callback then stops
    the simulation); a non-finite sample is the divergence the monitor reports, not
    recorded."""

    def __init__(self, run: Run):
        self.run, self.recorder, self.time = run, run.recorder, 0.0

    def __call__(self, t, g, V, q, qd, tau, bw):
        import numpy as np
        run = self.run
        if self.recorder is not None and run.write_error is None and np.isfinite(g).all() \
                and np.isfinite(V).all() and np.isfinite(q).all() and np.isfinite(qd).all() \
                and np.isfinite(tau).all():
            start = time.perf_counter()
            extra = ()
            if run.output is not None:          # in orbit: the outputs' frame
                g, V, extra = run.output.sample(t, g, V)
            try:
                self.recorder.add(t, g, V, q, qd, effort=tau, extra_tf=extra)
            except OSError as exc:      # the disk is full: stop here (callback), keep the file
                run.write_error = exc
            self.time += time.perf_counter() - start


def simulate_run(run: Run, log):
    """Integrate; returns ``(traj or None, wall, diverged dict or None, interrupted)``
    (a Ctrl-C before the first sample gives no trajectory but is still an interruption)."""
    import numpy as np

    from ..core.errors import SimulationDiverged
    from ..core.signals import deferred_interrupts
    with deferred_interrupts(raise_after=True):   # imports, the controller's set-up (_main)
        from ..sim.simulate import simulate
        ctrl_inputs = run.ctrl.inputs(run.reference) if run.ctrl is not None else None
    scn, model = run.scn, run.scn.model
    tau_fn, bw_fn, prescribed, frame_fn = run_inputs(run, ctrl_inputs)
    monitor = DivergenceMonitor()

    started = []

    def callback(state):
        if not started:             # the first sample: the engine's set-up is over
            started.append(True)
            log(f"vm-sim: integrating {scn.duration:g} s (Ctrl-C stops and writes what was "
                f"computed) ...")
        stop = monitor(state)
        if run.hooks:
            shown = state if run.output is None else run.output.state(state)
            for hook in run.hooks:
                hook(shown)
        return stop or ctrl_c.requested or run.write_error is not None
    on_sample = SampleRecorder(run)
    t0 = time.perf_counter()
    diverged = None
    traj = None
    # Ctrl-C during the integration stops it at the next sample (the callback asks simulate
    # to stop): no KeyboardInterrupt is raised inside the recording's writer, which could
    # leave a sample half written (or the trajectory ahead of the recording)
    ctrl_c = DeferredInterrupt(log, message="stopping the integration; writing what was "
                                             "computed")
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), ctrl_c:
            warnings.simplefilter("ignore", RuntimeWarning)   # divergence is reported once
            traj = simulate(model, scn.g0, scn.V0, scn.q0, scn.qd0, scn.duration, scn.dt,
                            tau=tau_fn, base_wrench=bw_fn, method=scn.integrator,
                            prescribed=prescribed, progress=run.progress, callback=callback,
                            forces=scn.forces, record_every=run.record_every,
                            on_sample=on_sample,
                            **({"frame_wrenches": frame_fn} if frame_fn else {}))
    except SimulationDiverged as exc:
        diverged = {"t": exc.t, "reason": exc.reason}
        traj = exc.trajectory
    except (ValueError, ArithmeticError) as exc:
        # the dynamics failed on a state the monitor had not yet flagged
        first = str(exc).splitlines()[0] if str(exc) else ""
        t_fail = getattr(exc, "t", None)      # e.g. engine.SimulationError carries the time
        diverged = {"t": float(t_fail) if isinstance(t_fail, (int, float)) else monitor.last_good_t,
                    "reason": f"{type(exc).__name__}: {first}" if first else type(exc).__name__}
    # the integration's wall time: without the engine's set-up (loading, or on a machine's
    # first run compiling, the kernels: setup_time_s) and without writing the recording
    # (streamed during the run, formerly after it: recording_time_s)
    run.recording_time = on_sample.time
    total = time.perf_counter() - t0
    sim_wall = getattr(traj, "wall_time", 0.0) if traj is not None else 0.0
    run.setup_time = (traj.meta.get("setup_time") if traj is not None else None)
    wall = (sim_wall if sim_wall > 0 else total) - on_sample.time
    if monitor.t is not None and diverged is None:
        diverged = {"t": monitor.t, "reason": monitor.reason}
        traj = traj[:len(traj) - 1] if traj is not None else None   # drop the flagged sample
    interrupted = bool(getattr(traj, "interrupted", False)) or ctrl_c.requested
    if traj is not None and len(traj) == 0:
        traj = None
    return traj, wall, diverged, interrupted


def run_scenario(scn, controller_name=None, out_dir=None, progress=True, record_rate=100.0,
                 plots=True, log=print, _explicit=(), force=False):
    """Simulate a loaded :class:`~vm_dynamics.config.scenario.Scenario` and write its outputs.

    Everything that depends on the input (controller and its parameters, reference, output
    directory) is checked before the simulation.  Returns the summary dict; its
    ``"diverged"`` and ``"interrupted"`` keys tell how the run ended.
    """
    run = prepare_run(scn, controller_name, out_dir, record_rate, plots, progress, _explicit,
                      force)
    return execute_run(run, log)


def execute_run(run: Run, log):
    scn, model = run.scn, run.scn.model
    for note in run.notes:
        log(f"vm-sim: {note}")
    log(f"vm-sim: {scn.name}: {model!r}, {scn.integrator}, dt={scn.dt:g} s, "
        f"duration={scn.duration:g} s, controller={run.ctrl_name or 'none'}"
        + (", prescribed joint motion" if scn.prescribed else ""))
    try:
        # imports (rosbags' message classes) and files: a Ctrl-C is taken after them (see
        # _main: an interrupt inside an exec() of a dataclass would make the process die by
        # SIGINT at exit instead of exiting with 130)
        from ..core.signals import deferred_interrupts
        with deferred_interrupts(raise_after=True):
            run.recorder = open_recorder(run)
            # what a killed run leaves beside its recording: finished = false
            write_summary(run.out, dict(base_summary(run, None, 0.0, None, False),
                                         finished=False, files=["trajectory.mcap",
                                                                "summary.json"]))
        if run.record_every > 1:
            log(f"vm-sim: {run.scn.duration / run.scn.dt:.0f} steps: the summary and plots use "
                f"one sample in {run.record_every}; trajectory.mcap gets every sample")
        traj, wall, diverged, interrupted = simulate_run(run, log)
    except BaseException:
        if run.recorder is not None:            # keep the samples recorded so far
            try:
                run.recorder.close()
            except ValueError:                  # none: the run never started, leave nothing
                with contextlib.suppress(OSError):
                    (run.out / "summary.json").unlink()
            except OSError:
                pass
        raise
    if diverged is not None:
        log(f"vm-sim: diverged at t = {diverged['t']:.6g} s ({diverged['reason']}); "
            f"reduce dt or the gains")
    with DeferredInterrupt(log, exiting=interrupted) as stop:
        try:
            summary = write_outputs(run, traj, wall, diverged, interrupted, stop, log)
        finally:        # also when an output cannot be written: the recording is finished
            with contextlib.suppress(ValueError, OSError):
                run.recorder.close()
    return summary


def open_recorder(run):
    """The streaming MCAP recorder of ``trajectory.mcap`` (written in place, readable after
    every chunk: a killed run keeps its samples), and the in-memory sampling of the run."""
    from ..ros.recording import McapRecorder
    scn, model = run.scn, run.scn.model
    steps = math.ceil(scn.duration / scn.dt - 1e-9)
    # the Euler-angle comparison integrates on the kept samples' grid: keep them all
    if not scn.params.get("compare_euler_model"):
        run.record_every = max(1, math.ceil(steps / MAX_KEPT_SAMPLES))
    frame_ids = None
    if run.output is not None and run.output.relative:      # /odom and the TF root: lvlh
        from ..ros.urdf_tf import UrdfTree
        frame_ids = (run.output.frame_id, UrdfTree(scn.robot_description).root)
    return McapRecorder(run.out / "trajectory.mcap", model.joint_names,
                        robot_description=scn.robot_description, base_iota=model.group.iota,
                        frame_ids=frame_ids,
                        rate_hz=run.record_rate if run.record_rate > 0 else None)
