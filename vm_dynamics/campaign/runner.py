"""One run of a campaign: run k's plant (:func:`~.apply.disperse`), the scenario's controller
on the nominal model, one :func:`vm_dynamics.simulate` call, the metrics.

A :class:`CampaignSpec` is what a worker needs (scenario, overrides, dispersions, predicate,
sampling), small and picklable; each process loads the scenario once per spec
(:func:`context`).  A run depends only on the spec and ``k``: whichever process or machine
computes it, in whatever order, the result is the same (bit for bit on the same platform).

The controller's compiled law (:meth:`~vm_dynamics.control.inputs.ControllerInputs.compiled_law`)
runs inside the engine's compiled step when the controller has one; sensor noise, an open-loop
``input`` added to the controller, or a plug-in without a compiled law take the Python path
(``RunResult.compiled_law`` is then None and the report says so).
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .apply import check_targets, disperse
from .dispersions import Dispersions, parse_dispersions
from .metrics import Predicate, outcome, run_metrics

__all__ = ["CampaignSpec", "RunResult", "Context", "context", "make_controller", "run_one",
           "run_chunk", "simulate_dispersed"]


@dataclass(frozen=True, eq=False)       # compared and hashed by identity (``key`` names it)
class CampaignSpec:
    """A campaign's definition: ``scenario`` (name or path), the dispersions file's mapping
    ``dispersions_doc``, ``overrides`` (tuple of ``(name, value)``), ``success`` (expression,
    callable or None: the file's), ``record_every`` (samples kept for the metrics: every k-th
    step), ``controller`` (None: the scenario's; ``"none"``: open loop) and ``key`` (a digest
    of them: a worker loads each spec once).  Build it with
    :func:`vm_dynamics.campaign.make_spec`."""

    scenario: str
    dispersions_doc: dict = field(default_factory=dict)
    overrides: tuple = ()
    success: object = None
    record_every: int = 10
    controller: str | None = None
    key: str = ""            # identifies the spec in a worker's cache

    def parsed(self) -> Dispersions:
        return parse_dispersions(self.dispersions_doc)

    def predicate(self) -> Predicate:
        return Predicate(self.success if self.success is not None
                         else self.dispersions_doc.get("success"))


@dataclass
class RunResult:
    """One run's result: index ``k``, ``values`` (dispersed, by name), ``metrics``,
    ``outcome``, ``compiled_law`` (the kind, or None: Python path), ``wall`` and ``cpu`` (s:
    the run's wall and process CPU time, set-up and metrics included) and the trajectory when
    kept."""

    k: int
    values: dict
    metrics: dict
    outcome: str
    compiled_law: str | None
    wall: float
    trajectory: object = None
    cpu: float = 0.0


class Context:
    """A spec loaded in one process: the nominal scenario, the dispersions (checked against
    it), the predicate, the controller name and the joint reference."""

    def __init__(self, spec: CampaignSpec):
        from ..config.scenario import load_scenario
        from ..control.references import reference_from_config
        self.spec = spec
        self.scn = load_scenario(spec.scenario, dict(spec.overrides) or None)
        self.disp = spec.parsed()
        check_targets(self.disp, self.scn)
        self.predicate = spec.predicate()
        section = self.scn.controller or {}
        name = spec.controller if spec.controller is not None else section.get("name")
        self.ctrl_name = None if name in (None, "", "none") else name
        self.reference = reference_from_config(self.scn.reference or {}) \
            if self.ctrl_name else None
        self.joint_reference = getattr(self.reference, "joint", None)


_CONTEXTS: dict = {}


def context(spec: CampaignSpec) -> Context:
    """The process's :class:`Context` of ``spec`` (loaded on first use)."""
    ctx = _CONTEXTS.get(spec.key)
    if ctx is None:
        ctx = _CONTEXTS[spec.key] = Context(spec)
    return ctx


def make_controller(ctx: Context, run):
    """The scenario's controller with run ``run``'s parameters, reset on the nominal model
    (what the controller knows, with the nominal force elements) at the dispersed initial
    state; None for an open-loop campaign."""
    from ..config.sections import resolve_controller_params
    from ..control import get_controller
    from ..sim.simulate import State
    if ctx.ctrl_name is None:
        return None
    scn = ctx.scn
    params, _, _ = resolve_controller_params(run.controller or {}, ctx.ctrl_name)
    ctrl = get_controller(ctx.ctrl_name, params)
    init = run.initial
    ctrl.reset(scn.model, State(0.0, init.g, init.V, init.q, init.qd),
               external=list(scn.forces) or None)
    return ctrl


def _controller_inputs(ctx: Context, run):
    """``(tau, base_wrench)`` of :func:`make_controller`; with sensor noise, a Python wrapper
    that adds white noise to the state the controller reads."""
    ctrl = make_controller(ctx, run)
    if not run.noise:
        return ctrl.inputs(ctx.reference)
    from ..control.inputs import ControllerInputs
    noisy = _NoisyState(ctx.disp.noise_rng(run.k), run.noise)
    return ControllerInputs(lambda t, s: ctrl.compute(t, noisy(s), ctx.reference))


class _NoisyState:
    """The state a controller reads: the true one plus white noise of the given standard
    deviations, drawn in evaluation order from the run's noise generator."""

    def __init__(self, rng, noise: dict):
        self.rng, self.noise = rng, noise

    def __call__(self, s):
        from ..sim.simulate import State
        n = self.noise
        g = s.g.copy()
        if n.get("base_orientation"):
            from ..core import lie
            g[:3, :3] = g[:3, :3] @ lie.so3_exp(self.rng.normal(0.0, n["base_orientation"], 3))
        if n.get("base_position"):
            g[:3, 3] += self.rng.normal(0.0, n["base_position"], 3)
        V, q, qd = (a + self.rng.normal(0.0, n[k], a.size) if n.get(k) else a for k, a in
                    (("base_twist", s.V), ("joint_positions", s.q), ("joint_velocities", s.qd)))
        return State(s.t, g, V, q, qd)


def _inputs(ctx: Context, run):
    """``(tau, base_wrench, prescribed)`` as vm-sim builds them (app.run.run_inputs)."""
    scn = ctx.scn
    prescribed = scn.prescribed_motion()
    open_loop = scn.effort_input.active
    tau = bw = None
    if ctx.ctrl_name is not None:
        tau, bw = _controller_inputs(ctx, run)
        if open_loop:
            ctrl_tau = tau
            tau = lambda t, s: ctrl_tau(t, s) + scn.open_loop_torque(t, s)
    elif open_loop:
        tau = scn.open_loop_torque
    if prescribed is not None:
        tau = None
    return tau, bw, prescribed


def simulate_dispersed(ctx: Context, run, record_every: int, on_sample=None):
    """Integrate run ``run``; ``(trajectory or None, divergence or None)``."""
    from ..core.divergence import state_beyond_limits
    from ..core.errors import SimulationDiverged
    from ..sim.simulate import simulate
    scn = ctx.scn
    tau, bw, prescribed = _inputs(ctx, run)
    init = run.initial
    traj, diverged = None, None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            traj = simulate(run.model, init.g, init.V, init.q, init.qd, scn.duration, scn.dt,
                            tau=tau, base_wrench=bw, method=scn.integrator,
                            prescribed=prescribed, forces=run.forces,
                            record_every=record_every, on_sample=on_sample)
        except SimulationDiverged as exc:
            diverged = {"t": float(exc.t), "reason": str(exc.reason)}
            traj = exc.trajectory
        except (ValueError, ArithmeticError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            t = getattr(exc, "t", None)
            diverged = {"t": float(t) if isinstance(t, (int, float)) else math.nan,
                        "reason": f"{type(exc).__name__}: {first}"}
    if traj is not None and diverged is None:
        for i in range(len(traj)):
            reason = state_beyond_limits(traj.V[i], traj.qd[i], traj.q[i], traj.g[i])
            if reason is not None:
                diverged = {"t": float(traj.t[i]), "reason": reason}
                traj = traj[:i]
                break
    return traj, diverged


def run_one(spec: CampaignSpec, k: int, keep_trajectory: bool = False,
            on_sample=None) -> RunResult:
    """Run ``k`` of the campaign ``spec`` (see the module docstring)."""
    ctx = context(spec)
    start, cpu = time.perf_counter(), time.process_time()
    run = disperse(ctx.disp, ctx.scn, k)
    traj, diverged = simulate_dispersed(ctx, run, spec.record_every, on_sample)
    metrics = run_metrics(ctx.scn, run.model, run.forces, traj, ctx.joint_reference, diverged,
                          ctx.scn.divergence_threshold)
    law = traj.meta.get("compiled_law") if traj is not None else None
    return RunResult(k=k, values=run.values, metrics=metrics,
                     outcome=outcome(metrics, ctx.predicate), compiled_law=law,
                     wall=time.perf_counter() - start,
                     trajectory=traj if keep_trajectory else None,
                     cpu=time.process_time() - cpu)


def run_chunk(spec: CampaignSpec, ks) -> list[RunResult]:
    """Runs ``ks`` in order (one task of a backend)."""
    return [run_one(spec, int(k)) for k in ks]
