"""How the engine takes one step: small strategies over the simulator's public engine interface.

* :class:`CompiledHeldStep` — inputs held over the step: the whole RKMK step is one compiled
  call (:func:`vm_dynamics.sim.kernels.engine_step`); many steps are one compiled rollout;
* :class:`CompiledStagedStep` — inputs from a Python callable at every stage: the compiled
  stage kernels (the same parts of the step: ``stage_begin``, then one ``stage_advance`` after
  each call) around the call;
* :class:`ReferenceStep` — stages evaluated in Python (the LP reference or a user's forward
  dynamics): the RKMK step of :func:`vm_dynamics.sim.integrators.rkmk_step`;
* :class:`AdaptiveStep` — an adaptive method (the tableau declares it) over one step interval
  by :func:`vm_dynamics.sim.integrators.integrate`.

A strategy reads the simulator through :attr:`~Simulator.stages` (the stage evaluator),
:attr:`~Simulator.spec`, :meth:`~Simulator.engine_state`, :meth:`~Simulator.rhs`,
:meth:`~Simulator.evaluate_inputs` and writes it back through :meth:`~Simulator.commit` or
:meth:`~Simulator.set_vector_state`; it keeps no state of its own.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import SimulationDiverged
from ..core.state import State
from .integrators import IntegrationStats, integrate, reorthonormalize, rkmk_step

__all__ = ["CompiledHeldStep", "CompiledStagedStep", "ReferenceStep", "AdaptiveStep",
           "steppers_for", "run_stepwise", "law_supported", "RightHandSide"]


def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


class RightHandSide:
    """``rhs(t, g, y) -> (V, ẏ, inputs)`` of a simulator's vector state (:meth:`Simulator.rhs`):
    the rates of one stage with the inputs ``fn(t, state)`` evaluated there, or the held
    ``inputs``."""

    __slots__ = ("sim", "fn", "inputs", "zero_b", "zero_n")

    def __init__(self, sim, fn, inputs):
        self.sim, self.fn, self.inputs = sim, fn, inputs
        self.zero_b, self.zero_n = np.zeros(sim.model.b), np.zeros(sim.model.n)

    def __call__(self, t, g, y):
        sim = self.sim
        b, n = sim.model.b, sim.model.n
        zero = self.zero_b
        m = y[:b]
        if sim.prescribed is not None:
            q, qd, qdd_p = sim.prescribed_at(t)
        else:
            q, qd, qdd_p = y[b:b + n], y[b + n:b + 2 * n], self.zero_n
        st, g_s, V = sim.stages.stage_state(sim.spec, g, zero, m, q, qd)
        if st:
            sim.fail(st)
        inputs = self.inputs
        if inputs is None:
            inputs = sim.evaluate_inputs(self.fn, t, State(t, _ro(g_s.copy()), _ro(V.copy()),
                                                           _ro(q), _ro(qd)))
        st, _, dm, qdd, pw, V = sim.stages.stage(sim.spec, g, zero, m, q, qd, qdd_p, inputs)
        if st:
            sim.fail(st)
        yd = np.concatenate([dm, pw]) if sim.prescribed is not None \
            else np.concatenate([dm, qd, qdd, pw])
        return V.copy(), yd, inputs


class CompiledHeldStep:
    """Held inputs: one compiled call per step."""

    def step(self, sim, inputs=None, fn=None) -> None:
        ev = sim.stages
        x, y = sim.engine_state(), sim.spare_state()
        if ev.compiled:             # compiled code raises no floating-point warnings
            st = ev.step(sim.spec, x, sim.kernel_inputs(inputs), sim.prescribed_rows(), y)
        else:                       # the same kernels as plain Python (numpy scalars)
            with np.errstate(all="ignore"):
                st = ev.step(sim.spec, x, sim.kernel_inputs(inputs), sim.prescribed_rows(), y)
        if st:
            sim.fail(st)
        sim.commit(y, ev.stages, x)


def _frozen_copy(a: np.ndarray) -> np.ndarray:
    c = a.copy()
    c.flags.writeable = False
    return c


class CompiledStagedStep:
    """A Python callable ``fn(t, state)`` at every stage, compiled stages around it.

    The loop calls the compiled entry points directly with the records read once per step: a
    stage's cost besides the kernels is the Python objects built for the callable (its
    :class:`State`, the validated inputs), so nothing else is built per stage."""

    def step(self, sim, inputs=None, fn=None) -> None:
        ev, spec, t0, dt = sim.stages, sim.spec, sim.t, sim.dt
        pr, x, y = sim.prescribed_rows(), sim.engine_state(), sim.spare_state()
        C, F, tab, buf, sc = ev.C, ev.F, ev.tab, ev.buf, ev.sc
        k_advance = ev.k_advance
        tree = sim.tree.active
        evaluate, kernel_inputs = sim.evaluate_inputs, sim.kernel_inputs
        with np.errstate(all="ignore"):         # also around the callable, as for every stage
            st = ev.k_begin(C, spec, tab, 0, x, pr, buf)
            if st:
                sim.fail(st)
            for i, c in enumerate(sim.stage_nodes):
                ti = t0 + c * dt
                q, qd = sc.qs, sc.qds
                if tree:
                    q, qd = sim.model_q(q), sim.model_q(qd)
                state = State(ti, _frozen_copy(sc.pose), _frozen_copy(sc.Vs), _frozen_copy(q),
                              _frozen_copy(qd))
                inputs = evaluate(fn, ti, state)
                if i == 0:
                    sim.last_stage_inputs = inputs
                # this stage's rates, then the next stage's state (or the step's end state)
                st = k_advance(C, F, spec, tab, i, x, pr, kernel_inputs(inputs), y, buf)
                if st:
                    sim.fail(st)
        sim.commit(y, len(sim.stage_nodes), x)


class ReferenceStep:
    """Stages evaluated in Python: the RKMK step of :func:`~.integrators.rkmk_step` over the
    simulator's right-hand side (held ``inputs`` or a callable ``fn`` per stage)."""

    def step(self, sim, inputs=None, fn=None) -> None:
        rhs = sim.rhs(fn) if fn is not None else sim.rhs(inputs=inputs)
        t, dt, g, y = sim.t, sim.dt, sim.arrays()[1], sim.vector_state()
        group = sim.model.group
        with np.errstate(all="ignore"):
            Theta, y_new, _, _, evals, first, _ = rkmk_step(rhs, group, sim.tab, t, g, y, dt)
            if fn is not None:
                sim.last_stage_inputs = first[2]
            g_new = reorthonormalize(g @ group.exp(Theta) if np.any(Theta) else g.copy())
            sim.commit_vector_state(g_new, y_new, evals)


class _FirstStep:
    """``on_sample`` of :func:`integrate` keeping the state at the interval's end (sample 1)."""

    def __init__(self):
        self.g = self.y = None

    def __call__(self, k, t, g, y, aux):
        if k == 1:
            self.g, self.y = g.copy(), y.copy()
        return False


class AdaptiveStep:
    """An adaptive method (``rtol``/``atol``) over the interval ``[t, t + dt]``."""

    def step(self, sim, inputs=None, fn=None) -> None:
        rhs = sim.rhs(fn) if fn is not None else sim.rhs(inputs=inputs)
        end, stats = _FirstStep(), IntegrationStats()
        t = sim.t
        with np.errstate(all="ignore"):
            integrate(rhs, sim.model.group, sim.method, np.array([t, t + sim.dt]),
                      sim.arrays()[1], sim.vector_state(), end, rtol=sim.rtol, atol=sim.atol,
                      stats=stats)
        sim.check_finite(end.g, end.y)
        sim.set_vector_state(t + sim.dt, end.g, end.y)
        sim.count_step(stats.evals, stats.rejected)


def steppers_for(tab, python_stages: bool) -> tuple:
    """``(held, per_stage)`` strategies for a method's tableau ``tab`` (adaptive or not) and
    the kind of stage evaluations."""
    if tab.adaptive:
        return AdaptiveStep(), AdaptiveStep()
    if python_stages:
        return ReferenceStep(), ReferenceStep()
    return CompiledHeldStep(), CompiledStagedStep()


def run_stepwise(sim, steps, inputs):
    """``steps`` calls of ``sim.step(inputs=inputs)`` (stages not compiled, or adaptive):
    ``(work rows, (t, g, V, q, qd) rows)``; a failure's ``partial`` holds the rows done."""
    b, n = sim.model.b, sim.model.n
    t0 = sim.t
    G, VV = np.empty((steps, 4, 4)), np.empty((steps, b))
    Q, QD, WW = np.empty((steps, n)), np.empty((steps, n)), np.empty((steps, 2))
    for k in range(steps):
        try:
            sim.step(inputs=inputs)
        except SimulationDiverged as exc:
            sim.run_work = WW[:k]
            exc.partial = (t0 + sim.dt * np.arange(1, k + 1), G[:k], VV[:k], Q[:k], QD[:k])
            raise
        _, G[k], VV[k], Q[k], QD[k] = sim.arrays()
        WW[k] = sim.work, sim.abs_work
    return WW, (t0 + sim.dt * np.arange(1, steps + 1), G, VV, Q, QD)


def law_supported(model, tree, forces, law) -> bool:
    """True if the compiled rollout can evaluate ``law`` (a
    :class:`~vm_dynamics.control.compiled.CompiledLaw`) for a plant ``model`` whose integrated
    joints are ``tree`` (:class:`~.inputs.TreeCoordinates`) under the force elements
    ``forces``: computed torque on a model of the same dimensions and coupling."""
    if law is None or law.kind != "computed_torque":
        return False
    m = law.model
    if m is None or (m.n, m.b, m.group.name) != (model.n, model.b, model.group.name):
        return False
    if tree.active and not (m is model or np.array_equal(getattr(m.coupling, "G", None),
                                                         tree.G)):
        return False
    if tree.active != (law.consts.coupling.shape[0] > 0):
        return False
    # the engine's compiled force elements index the plant's bodies: the law may compensate
    # them only on the plant's own model, and only if they are the engine's
    return not law.forces or (tuple(law.forces) == forces and m is model)
