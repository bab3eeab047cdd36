"""The simulation engine: one stepper behind ``vm.simulate``, the dynamics node and the live views.

::

    sim = vm.Simulator(model, dt=1e-3, method="rkmk4")      # formulation, backend, environment
    sim.reset(g0, V0, q0, qd0)
    sim.step(tau=..., base_wrench=...)                        # inputs held over the step
    sim.step(stage_inputs=lambda t, state: (tau, base_wrench, frame_wrenches))  # per RK stage
    sim.state                                                 # State(t, g, V, q, qd)

**What one step is.**  A Runge–Kutta–Munthe-Kaas step (docs/corrections.md, "Time integration"; Munthe-Kaas 1998) of the
Lagrange–Poincaré equations (LP-1)–(LP-4) of paper 000 (docs/corrections.md, "LP equations", corrected):
``g(t) = g_k exp(ι₀Θ)`` with ``Θ̇ = dexp⁻¹_{−Θ}(ι₀V)`` (note the sign, :func:`lie.dexp_inv`), and
the vector state ``(m, q, q̇, W)`` by the classical tableau of ``method`` (``lie_euler`` order 1,
``rkmk4`` order 4).  ``m`` is the *momentum variable* (``formulation``):

* ``"spatial_momentum"`` — ``μ = Ad*_{h⁻¹}P``, ``h = g_ref⁻¹g``: (LP-1) becomes ``μ̇ = Ad*_{h⁻¹}F_η``,
  so without gravity and external wrenches μ is constant and the total momentum is conserved to
  round-off for any step size (the discrete reconstruction at conserved momentum of paper 002 §6);
* ``"body_momentum"`` — the locked momentum ``P = M₀V + M₀𝔪q̇`` (77) with ``Ṗ = ad*_V P + F_η``;
* ``"velocity"`` — V itself, with V̇ from the articulated-body algorithm;
* ``"auto"`` — ``body_momentum`` when gravity acts along a translation of the vehicle (μ would
  grow like m·g·t and lose digits), otherwise ``spatial_momentum``.

In the momentum formulations V follows from (LP-3) ``V = M₀⁻¹(P − M₀𝔪q̇)`` at every stage; q̈
comes from the O(n) articulated-body algorithm, which solves the same equations as (LP-2) (see
:mod:`vm_dynamics.dynamics.fast`).  ``W`` integrates the work of every applied effort and wrench
(gravity excluded: it is the potential energy), for energy-balance checks.

**Inputs**, two documented modes of the same step:

* *held* (``step(tau=…, base_wrench=…, base_wrench_inertial=…, frame_wrenches=…)``): constant
  over the step (zero-order hold, as a digital controller applies them).  With the numba backend
  the whole step is **one compiled call** (:func:`vm_dynamics.sim.kernels.engine_step`).
* *per stage* (``step(stage_inputs=f)``): ``f(t, state)`` is called at every RK stage with the
  stage state, as a continuous-time controller is; the stages are compiled calls, the loop over
  the 1–4 stages is Python.

The force elements (:mod:`vm_dynamics.forces`: hydrodynamic damping and buoyancy of the vehicle,
buoyancy of the arm links, springs, …; ``forces=[...]``, or ``environment=Hydrodynamics`` whose
effects become elements) are evaluated inside every stage.  ``prescribed(t) -> (q, q̇, q̈)``
makes the joints follow a motion exactly while the vehicle follows the coupled dynamics
(LP-1)+(LP-3); only ``(g, m, W)`` is integrated.

**Backends** (:func:`vm_dynamics.dynamics.fast.resolve_backend`): ``"numba"`` compiles the kernels (once
per machine, cached on disk); without numba the same kernels run as plain Python (``"python"``,
about 100× slower); ``"lp"`` evaluates the stages with the closed-form LP reference of
:mod:`vm_dynamics.dynamics.lp` (paper-faithful, for tests; Python driver).  ``dopri5`` (adaptive) uses the
Python driver of :func:`vm_dynamics.sim.integrators.integrate` over the same stage evaluations.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from ..core import lie
from ..core.errors import SimulationDiverged
from ..core.state import State
from ..core.validation import as_pose, as_positive, as_returned_vectors, as_vector
from ..dynamics import lp
from .integrators import TABLEAUX, IntegrationStats, integrate
from .records import (
    EngineState,
    LawOutputs,
    PrescribedRows,
    Rates,
    Stage,
    StageInputs,
    StepSpec,
    TableauArrays,
    buffer_size,
)

__all__ = ["Simulator", "State", "FORMULATIONS", "SimulationError", "choose_formulation",
           "Inputs"]

FORMULATIONS = ("auto", "spatial_momentum", "body_momentum", "velocity")
_FORM = {"velocity": 0, "spatial_momentum": 1, "body_momentum": 2}
_STATUS = {1: "the vehicle pose is not a rigid transform",
           2: "the state became non-finite (NaN/Inf)",
           3: "singular locked or articulated inertia"}


class SimulationError(SimulationDiverged):
    """A step of the engine failed (non-finite or overflowing state, singular inertia).

    ``t`` is the time of the step's start (the last good state), ``reason`` what failed;
    ``partial`` (from :meth:`Simulator.run`) the rows completed before, ``trajectory`` (from
    :func:`vm_dynamics.sim.simulate`) the samples recorded before.  A
    :class:`~vm_dynamics.core.errors.SimulationDiverged`, hence a ``ValueError``."""

    partial = None


def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


def choose_formulation(model, g0, formulation: str = "auto") -> str:
    """Resolve ``"auto"``: ``body_momentum`` if gravity acts along a translation axis of the
    vehicle at ``g0`` (μ would grow like m·g·t), otherwise ``spatial_momentum``."""
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation={formulation!r}: unknown; choose one of "
                         f"{', '.join(FORMULATIONS)}")
    if formulation != "auto":
        return formulation
    lin = [a for a in model.group.axes if a < 3]
    along = np.asarray(g0)[:3, :3][:, lin].T @ model.gravity if lin else np.zeros(0)
    falls = bool(np.any(np.abs(along) > 1e-12 * max(1.0, np.linalg.norm(model.gravity))))
    return "body_momentum" if falls else "spatial_momentum"


class Inputs(NamedTuple):
    """Inputs validated once by :meth:`Simulator.held_inputs`: the compiled step's record
    ``kernel`` (:class:`~vm_dynamics.sim.records.StageInputs`) and the frame wrenches as given
    ``frames`` ``{frame: [f; n]}`` (frame axes)."""

    kernel: StageInputs
    frames: dict

    @property
    def tau(self):
        return self.kernel.tau

    @property
    def base_wrench(self):
        return self.kernel.bw


# ------------------------------------------------------------------------------ stage evaluators
class _CompiledStages:
    """Stage evaluations by the compiled kernels (numba, or the same code as plain Python)."""

    def __init__(self, sim):
        from ..dynamics.fast import fast_model
        from . import kernels as ek
        self.ek = ek
        fm = fast_model(sim.model, "numba" if sim.backend == "numba" else "numpy")
        self.fm = fm
        self.C = fm.kernel_constants
        self.F = sim.F
        self.tab = sim.tableau
        self.b, self.n = sim.model.b, sim._nq          # joints of the integrated state
        n_tree = len(fm.xi)                 # joints of the tree (the workspace's size)
        self.buf = np.zeros(buffer_size(self.b, n_tree))
        from .buffer import buffer_views
        self.sc = buffer_views(self.buf, self.b, n_tree).sc      # views into buf
        self.rates = Rates(np.empty(6), np.empty(self.b), np.empty(self.n), np.empty(2))
        self.stage_rec = Stage(np.empty((4, 4)), np.empty((4, 4)), np.empty(self.b),
                               np.empty(self.n), np.empty(self.n), np.empty(self.b))
        self.Theta6 = np.zeros(6)
        self.frames = fm.frames
        self.axes = list(sim.model.group.axes)
        self.k_step, self.k_rollout = ek.engine_step, ek.engine_rollout
        self.k_stage, self.k_stage_state = ek.engine_stage, ek.engine_stage_state
        self.k_begin, self.k_end, self.k_finish = ek.stage_begin, ek.stage_end, ek.stage_finish
        self.k_law = None
        if sim.backend == "numba":
            self._warm_up(sim)

    def _warm_up(self, sim):
        """Run every kernel once on a neutral state (compiles them on a machine's first run,
        with a notice, or loads them from numba's disk cache) before any timed loop, and bind
        their compiled entry points (:func:`vm_dynamics.dynamics.fast.bind_compiled`)."""
        from ..dynamics.fast import bind_compiled, compile_notice
        ek, C, F, tab, buf = self.ek, self.C, self.F, self.tab, self.buf
        b, n, s = self.b, self.n, sim.tableau.b.shape[0]
        g, zb, z = np.eye(4), np.zeros(b), np.zeros(n)
        spec = StepSpec(1, False, g, 0.001)
        held = sim.held_inputs().kernel
        P = np.zeros((s + 1, n))
        pr = PrescribedRows(P, P, P)
        x = EngineState(g, zb, z, z, zb, np.zeros(2))

        def out(*lead):
            return EngineState(np.empty((*lead, 4, 4)), np.empty((*lead, b)),
                               np.empty((*lead, n)), np.empty((*lead, n)),
                               np.empty((*lead, b)), np.empty((*lead, 2)))
        with compile_notice(ek.engine_step, ek.engine_rollout, ek.engine_stage,
                            ek.stage_begin, ek.stage_end, ek.stage_finish):
            self.k_step = bind_compiled(ek.engine_step, (C, F, tab, spec, x, held, pr, out(),
                                                         buf))
            self.k_rollout = bind_compiled(ek.engine_rollout, (
                C, F, tab, spec, x, held, PrescribedRows(P[None], P[None], P[None]), out(1),
                buf))
            self.k_stage_state = bind_compiled(ek.engine_stage_state, (
                C, spec, g, self.Theta6, self.stage_rec, buf))
            self.k_stage = bind_compiled(ek.engine_stage, (
                C, F, spec, g, self.Theta6, self.stage_rec, z, held, self.rates, buf))
            self.k_begin = bind_compiled(ek.stage_begin, (C, spec, tab, 0, x, pr, buf))
            self.k_end = bind_compiled(ek.stage_end, (C, F, spec, 0, pr, held, buf))
            self.k_finish = bind_compiled(ek.stage_finish, (C, spec, tab, x, pr, out(), buf))
            ek.momentum_variable(C, spec, g, zb, z, z, np.empty(b), buf)
            ek.energy(C, F, g, zb, z, z, buf)

    def rollout_law(self, sim, law, TS, X, outputs):
        """:func:`engine_rollout_law` (bound on first use; compiled on a machine's first run,
        with the notice); returns (status, steps completed)."""
        args = (self.C, self.F, self.tab, sim.spec, TS, sim.engine_state(), law.params(), X,
                outputs, self.buf)
        if self.k_law is None:
            from ..dynamics.fast import bind_compiled, compile_notice
            kernel = self.ek.engine_rollout_law
            if sim.backend != "numba":
                self.k_law = kernel
            else:
                with compile_notice(kernel, printed=[]):
                    self.k_law = bind_compiled(kernel, args)
                    return self.k_law(*args)
        return self.k_law(*args)

    def _theta6(self, Theta):
        self.Theta6[:] = 0.0
        self.Theta6[self.axes] = Theta
        return self.Theta6

    def _stage(self, m, q, qd):
        s = self.stage_rec
        s.m[:] = m
        s.q[:] = q
        s.qd[:] = qd
        return s

    def stage_state(self, sim, g, Theta, m, q, qd):
        s = self._stage(m, q, qd)
        st = self.k_stage_state(self.C, sim.spec, g, self._theta6(Theta), s, self.buf)
        return st, s.g, s.V

    def stage(self, sim, g, Theta, m, q, qd, qdd_p, inputs):
        s, r = self._stage(m, q, qd), self.rates
        st = self.k_stage(self.C, self.F, sim.spec, g, self._theta6(Theta), s,
                          np.ascontiguousarray(qdd_p, dtype=float), inputs.kernel, r, self.buf)
        return st, r.dTheta[self.axes], r.dm, r.qdd, r.pw, s.V

    def step_staged(self, sim, fn):
        """One fixed-step RKMK step whose inputs come from ``fn(t, state)`` at every stage:
        compiled :func:`stage_begin` / :func:`stage_end` around the Python call, then
        :func:`stage_finish`.  Returns the status and the new state arrays."""
        sc, buf, C, F, tab = self.sc, self.buf, self.C, self.F, self.tab
        spec, t0, dt = sim.spec, sim.t, sim.dt
        pr = sim._prescribed_rows() if sim._presc else sim._pdummy
        x = sim.engine_state()
        for i in range(tab.b.shape[0]):
            st = self.k_begin(C, spec, tab, i, x, pr, buf)
            if st:
                return st, None
            ti = t0 + tab.c[i] * dt
            state = State(ti, _ro(sc.pose.copy()), _ro(sc.Vs.copy()),
                          _ro(np.array(sim._model_q(sc.qs))), _ro(np.array(sim._model_q(sc.qds))))
            inputs = sim._call_inputs(fn, ti, state)
            if i == 0:
                sim.last_stage_inputs = inputs
            st = self.k_end(C, F, spec, i, pr, sim._kernel_inputs(inputs), buf)
            if st:
                return st, None
        y = sim._out
        st = self.k_finish(C, spec, tab, x, pr, y, buf)
        return st, y

    def momentum_variable(self, sim, g, V, q, qd):
        m = np.empty(self.b)
        self.ek.momentum_variable(self.C, sim.spec, g, V, q, qd, m, self.buf)
        return m

    def energy(self, g, V, q, qd):
        return self.ek.energy(self.C, self.F, g, V, q, qd, self.buf)


class _ReferenceStages:
    """Stage evaluations by the closed-form LP reference (:mod:`vm_dynamics.dynamics.lp`): the same
    equations written as in paper 000, for tests and for users who want the paper's algebra."""

    def __init__(self, sim):
        self.model = m = sim.model
        self.group = m.group
        self.forces = sim.forces
        self.conservative = tuple(e for e in sim.forces if e.conservative)
        from ..dynamics.fast import fast_model
        self.frames = fast_model(m, "numpy").frames      # body + Ad⁻ᵀ(ḡ_frame) per frame
        #: the O(n) recursions when the stages use them (mimic models), else None
        self.fm = getattr(sim, "_coupled_fast", None)

    def _velocity(self, sim, g_s, m, q, qd):
        if self.fm is not None:                           # M₀, 𝒜 from the CRBA blocks
            t = self.fm.lp_blocks(q)
        else:
            t = lp.lp_terms(self.model, q,
                            derivatives=not sim._presc and sim.forward_dynamics is None)
        if sim._form == 0:
            return t, m.copy(), None
        if sim._form == 1:
            h = sim._gri @ g_s
            P = self.group.project(lie.Ad(h).T @ self.group.embed(m))
        else:
            P = m.copy()
        V = np.linalg.solve(t.M0, P) - t.A @ qd if self.model.b else np.zeros(0)   # (LP-3)
        return t, V, P

    def stage_state(self, sim, g, Theta, m, q, qd):
        g_s = g @ self.group.exp(Theta) if np.any(Theta) else g
        _, V, _ = self._velocity(sim, g_s, m, q, qd)
        return 0, g_s, V

    def _wrenches(self, sim, g_s, V, q, inputs):
        """Vehicle wrench (b) and frame wrenches {frame: [f; n]} of the inputs + the force
        elements."""
        from ..forces import total_wrenches
        k = inputs.kernel
        R = g_s[:3, :3]
        F = np.array(k.bw, dtype=float) + self.group.project(np.concatenate([R.T @ k.bwi[:3],
                                                                          R.T @ k.bwi[3:]]))
        return total_wrenches(self.model, self.forces, g_s, V, q, F, inputs.frames)

    def _power(self, kin, V, qd, F, frames):
        """Power of the vehicle wrench ``F`` and the frame wrenches at the stage."""
        pe = float(F @ V)
        for name, w in frames.items():
            J0, Jm = lp.frame_jacobian(self.model, kin, name)
            pe += float(w @ (J0 @ V + Jm @ qd))
        return pe

    def stage(self, sim, g, Theta, m, q, qd, qdd_p, inputs):
        model, grp = self.model, self.group
        g_s = g @ grp.exp(Theta) if np.any(Theta) else g
        t, V, P = self._velocity(sim, g_s, m, q, qd)
        tau = inputs.kernel.tau
        F, frames = self._wrenches(sim, g_s, V, q, inputs)
        if self.fm is not None:         # F_η = f₀ − (static load of gravity and frame wrenches)
            zb, zn = np.zeros(model.b), np.zeros(model.n)
            F_eta = F - self.fm.inverse_dynamics(g_s, zb, q, zn, zb, zn, frames or None)[0]
            kin = lp.kinematics(model, q) if frames else None
        else:
            kin = t.kin
            fe0, fem = lp.external_forces(model, kin, frames or None)
            f_u, _ = lp.gravity_forces(model, kin, g_s)
            F_eta = F + fe0 - f_u                                           # (94)
        if sim._presc:
            qdd = np.asarray(qdd_p, dtype=float)
            Vdot = None
        elif sim.forward_dynamics is not None:
            Vdot, qdd = sim.forward_dynamics(g_s, V, q, qd, tau, F, frames or None)
            Vdot, qdd = np.asarray(Vdot, dtype=float), np.asarray(qdd, dtype=float)
        else:
            Vdot, qdd, _ = lp.forward_dynamics(model, g_s, V, q, qd, tau, F, frames or None,
                                               terms=t)
        if sim._form == 0:
            dm = Vdot
        elif sim._form == 1:
            h = sim._gri @ g_s
            dm = grp.project(lie.Ad_inv(h).T @ grp.embed(F_eta))            # μ̇ = Ad*_{h⁻¹}F_η
        else:
            dm = grp.ad(V).T @ P + F_eta                                    # (LP-1)
        # power of the applied inputs (not gravity, not the conservative elements)
        pj = 0.0 if sim._presc else float(np.dot(tau, qd))
        if (frames or self.conservative) and kin is None:
            kin = lp.kinematics(model, q)
        pe = self._power(kin, V, qd, F, frames)
        if self.conservative:
            from ..forces import total_wrenches
            Fc, frames_c = total_wrenches(model, self.conservative, g_s, V, q)
            pe -= self._power(kin, V, qd, Fc, frames_c)
        dTheta = grp.dexp_inv_body(Theta) @ V if np.any(Theta) else V.copy()
        return 0, dTheta, dm, qdd, np.array([pj + pe, abs(pj) + abs(pe)]), V

    def momentum_variable(self, sim, g, V, q, qd):
        if sim._form == 0:
            return V.copy()
        t = lp.lp_terms(self.model, q, derivatives=False)
        P = t.M0 @ V + t.M0m @ qd                                            # (77)
        if sim._form == 2:
            return P
        h = sim._gri @ g
        return self.group.project(lie.Ad_inv(h).T @ self.group.embed(P))

    def energy(self, g, V, q, qd):
        from ..forces import potential_energy
        K = self.model.kinetic_energy(V, q, qd)
        return K, self.model.potential_energy(g, q) + potential_energy(self.model, self.forces,
                                                                       g, q)


# ------------------------------------------------------------------------------ the simulator
class Simulator:
    """Steps a vehicle-manipulator model in time (see the module docstring).

    Parameters
    ----------
    model : :class:`~vm_dynamics.Model`.
    dt : step size, s.
    method : ``"rkmk4"`` (default), ``"lie_euler"`` or ``"dopri5"`` (adaptive within each step,
        ``rtol``/``atol``).
    formulation : momentum variable, see the module docstring (default ``"auto"``).
    backend : ``"auto"`` (numba if installed, else the kernels as plain Python), ``"numba"``,
        or ``"lp"`` (the closed-form reference).
    forces : force elements (:mod:`vm_dynamics.forces`) acting at every stage.
    environment : a :class:`~vm_dynamics.model.hydrodynamics.Hydrodynamics` (damping, buoyancy) or
        None: its effects become force elements after ``forces``.  Its added mass must already
        be in the model (:meth:`~vm_dynamics.Model.with_added_vehicle_inertia`).
    prescribed : ``prescribed(t) -> (q, q̇, q̈)``: the joints follow this motion exactly.
    forward_dynamics : optional user function with the signature of
        :meth:`~vm_dynamics.Model.forward_dynamics` giving (V̇, q̈); the stages then use it with
        the LP reference for the momentum variable (Python driver).
    """

    def __init__(self, model, dt: float, method: str = "rkmk4", *, formulation: str = "auto",
                 backend: str = "auto", environment=None, prescribed: Callable | None = None,
                 rtol: float = 1e-9, atol: float = 1e-12,
                 forward_dynamics: Callable | None = None, forces=None):
        from ..dynamics.fast import resolve_backend
        self.model = model
        self._spec = None
        self.dt = as_positive(dt, "dt")
        if method not in TABLEAUX:
            raise ValueError(f"method={method!r}: unknown; choose one of {', '.join(TABLEAUX)}")
        self.method = method
        self.tab = TABLEAUX[method]
        if forward_dynamics is not None and not callable(forward_dynamics):
            raise ValueError("forward_dynamics: expected a callable like Model.forward_dynamics")
        self.backend = "lp" if forward_dynamics is not None else \
            resolve_backend(backend, engine=True)
        cp = getattr(model, "coupling", None)
        coupled = forward_dynamics is None and self.backend != "lp" and cp is not None \
            and not cp.trivial
        #: mimic joints on the compiled step: the joint state is kept in the coordinates of the
        #: tree (``q_tree = G q + c``, which the Runge–Kutta stages preserve exactly: the
        #: accelerations are ``G q̈``), the efforts act on the masters; :attr:`state`,
        #: :meth:`arrays` and :meth:`run` give the model's coordinates
        self._tree = coupled and prescribed is None and not self.tab.adaptive
        if self._tree:
            self._indep = np.asarray(cp.independent, dtype=np.int64)
            self._G = np.ascontiguousarray(cp.G, dtype=float)
            self._c = np.ascontiguousarray(cp.c, dtype=float)
            self._kt_cache = (None, None)
        elif coupled:
            # mimic joints with prescribed motion or dopri5: the stages take q̈ from the coupled
            # O(n) forward dynamics and the momentum variable from the LP blocks (the Python
            # driver; slower, exact)
            from ..dynamics.fast import fast_model
            self._coupled_fast = fast_model(model, "numba" if self.backend == "numba"
                                            else "numpy")
            forward_dynamics = self._coupled_fast.forward_dynamics
        self.forward_dynamics = forward_dynamics
        #: True when the stages are evaluated in Python (LP reference or a given forward
        #: dynamics) rather than by the compiled kernels
        self.python_stages = self.backend == "lp" or forward_dynamics is not None
        if formulation not in FORMULATIONS:
            raise ValueError(f"formulation={formulation!r}: unknown; choose one of "
                             f"{', '.join(FORMULATIONS)}")
        self._formulation_arg = formulation
        if prescribed is not None and not callable(prescribed):
            raise ValueError("prescribed: expected a callable t -> (q, qd, qdd)")
        if prescribed is not None and formulation == "velocity":
            raise ValueError("formulation='velocity' cannot be used with prescribed motion; "
                             "the vehicle is integrated through its momentum (LP-1)")
        self.prescribed = prescribed
        self._presc = prescribed is not None
        self.rtol, self.atol = as_positive(rtol, "rtol"), as_positive(atol, "atol")
        from ..forces import as_elements, compile_forces
        #: the force elements acting at every stage (``forces``, then ``environment``'s)
        self.forces = as_elements(forces, environment)
        self.hydrodynamics = environment
        #: their compiled parameters (:class:`vm_dynamics.forces.registry.Forces`)
        self.F = compile_forces(model, self.forces)
        b, n = model.b, model.n
        self._nq = len(self._c) if self._tree else n      # joints of the integrated state
        self._zero_tau, self._zero_b, self._zero6 = np.zeros(n), np.zeros(b), np.zeros(6)
        self._no_fw = (np.zeros(0, dtype=np.int64), np.zeros((0, 6)))
        s = self.tab.stages
        #: the method's tableau as the compiled step takes it
        self.tableau = TableauArrays(*(np.ascontiguousarray(x, dtype=float)
                                       for x in (self.tab.a, self.tab.b, self.tab.c)))
        P = np.zeros((s + 1, n))
        self._pdummy = PrescribedRows(P, P, P)
        self._stages = (_ReferenceStages(self) if self.python_stages
                        else _CompiledStages(self))
        self._t = 0.0
        self.steps = 0
        self.run_work = np.empty((0, 2))     # [work, abs_work] after each step of the last run()
        self._g = None

    # ------------------------------------------------------------------ state
    def reset(self, g, V, q=None, qd=None, t: float = 0.0) -> "Simulator":
        """Set the state; ``g`` is also the reference frame of the spatial momentum.
        With prescribed motion ``q``/``qd`` may be None (taken from ``prescribed(t)``)."""
        model = self.model
        g = as_pose(g, "g0").copy()
        V = as_vector(V, model.b, "V0").copy()
        self._t = self._t0 = float(t)
        if not np.isfinite(self._t):
            raise ValueError(f"t: expected a finite time, got {t!r}")
        if self._presc:
            pq, pqd, _ = self._prescribed_at(self._t)
            for nm, given, val in (("q0", q, pq), ("qd0", qd, pqd)):
                if given is not None:
                    given = as_vector(given, model.n, nm)
                    scale = 1.0 + np.max(np.abs(val), initial=0.0)
                    if np.max(np.abs(given - val), initial=0.0) > 1e-9 * scale:
                        raise ValueError(f"{nm}: does not match prescribed({t:g}) (max "
                                         f"difference {np.max(np.abs(given - val)):.3g})")
            q, qd = pq, pqd
        else:
            q, qd = as_vector(q, model.n, "q0").copy(), as_vector(qd, model.n, "qd0").copy()
            q, qd = self._to_tree(q, qd)
        self.formulation = choose_formulation(model, g, self._formulation_arg)
        self._form = _FORM[self.formulation]
        self._gri = lie.se3_inv(g)
        self._update_spec()
        self._g, self._V, self._q, self._qd = g, V, q.copy(), qd.copy()
        self._m = self._stages.momentum_variable(self, g, V, self._q, self._qd)
        self._W = np.zeros(2)
        self.steps = 0
        self.evaluations = 0
        self.rejected_steps = 0
        self._ensure_buffers()
        return self

    def _ensure_buffers(self):
        b, n = self.model.b, self._nq
        self._out = EngineState(np.empty((4, 4)), np.empty(b), np.empty(n), np.empty(n),
                                np.empty(b), np.empty(2))

    # ------------------------------------------------------------------ step settings
    @property
    def dt(self) -> float:
        """The step size, s."""
        return self._dt

    @dt.setter
    def dt(self, value: float) -> None:
        self._dt = float(value)
        if self._spec is not None:
            self._update_spec()

    def _update_spec(self):
        self._spec = StepSpec(int(self._form), bool(self._presc), self._gri, self._dt)

    @property
    def spec(self) -> StepSpec:
        """The compiled step's settings (:class:`~vm_dynamics.sim.records.StepSpec`)."""
        return self._spec

    def engine_state(self) -> EngineState:
        """The integrated state as the compiled step takes it (the simulator's own arrays)."""
        return EngineState(self._g, self._m, self._q, self._qd, self._V, self._W)

    # ------------------------------------------------------------------ mimic coupling
    def _to_tree(self, q, qd):
        """The integrated joint state of the model's ``(q, q̇)`` (the tree's with mimics)."""
        if not self._tree:
            return q, qd
        return (np.ascontiguousarray(self._G @ q + self._c),
                np.ascontiguousarray(self._G @ qd))

    def _model_q(self, x):
        """The model's coordinates of integrated joint values (rows of them): the masters'."""
        return x[..., self._indep] if self._tree else x

    def _kernel_tau(self, tau):
        """Efforts as the kernels take them: with mimic joints on the masters of the tree."""
        if not self._tree:
            return tau
        src, out = self._kt_cache
        if src is not tau:
            out = np.zeros(len(self._c))
            out[self._indep] = tau
            self._kt_cache = (tau, out)
        return out

    def _require_state(self):
        if self._g is None:
            raise RuntimeError("Simulator: call reset(g, V, q, qd) before stepping")

    @property
    def t(self) -> float:
        return self._t

    @property
    def state(self) -> State:
        """The current state as a :class:`State` of read-only copies."""
        self._require_state()
        return State(self._t, _ro(self._g.copy()), _ro(self._V.copy()),
                     _ro(np.array(self._model_q(self._q))), _ro(np.array(self._model_q(self._qd))))

    @property
    def work(self) -> float:
        """Work done on the system by every applied effort and wrench (not gravity) since reset."""
        return float(self._W[0])

    @property
    def abs_work(self) -> float:
        """∫|power| dt of the applied inputs since reset (scale of the energy balance)."""
        return float(self._W[1])

    def energy(self) -> tuple[float, float]:
        """(kinetic, gravitational potential) energy of the current state."""
        self._require_state()
        K, U = self._stages.energy(self._g, self._V, self._q, self._qd)
        return float(K), float(U)

    def set_joints(self, q=None, qd=None) -> None:
        """Replace the joint state now, keeping the vehicle's pose and velocity, the time, the
        step count and the work account (the momentum variable follows).  With prescribed motion
        the joints are taken from ``prescribed(t)`` (``q``/``qd`` must be None): used when a
        measured motion restarts after a gap it cannot bridge."""
        self._require_state()
        n = self.model.n
        if self._presc:
            if q is not None or qd is not None:
                raise ValueError("set_joints: with prescribed motion the joints come from "
                                 "prescribed(t); pass no q/qd")
            q, qd, _ = self._prescribed_at(self._t)
        self._q, self._qd = self._to_tree(as_vector(q, n, "q").copy(),
                                          as_vector(qd, n, "qd").copy())
        self._m = self._stages.momentum_variable(self, self._g, self._V, self._q, self._qd)

    def snapshot(self):
        """An opaque copy of the state (restore it with :meth:`restore`)."""
        self._require_state()
        return (self._t, self.steps, self._g.copy(), self._V.copy(), self._q.copy(),
                self._qd.copy(), self._m.copy(), self._W.copy())

    def restore(self, snap) -> None:
        """Return to a state saved by :meth:`snapshot`."""
        t, steps, g, V, q, qd, m, W = snap
        self._t, self.steps = t, steps
        self._t0 = t - steps * self.dt
        self._g, self._V, self._q, self._qd = g.copy(), V.copy(), q.copy(), qd.copy()
        self._m, self._W = m.copy(), W.copy()
        self._ensure_buffers()

    # ------------------------------------------------------------------ inputs
    def held_inputs(self, tau=None, base_wrench=None, base_wrench_inertial=None,
                    frame_wrenches=None):
        """Validate inputs once into the arrays the kernels take (reusable across steps)."""
        model = self.model
        # fresh C-contiguous float64 arrays: the compiled entry points take exactly that type
        tau = self._zero_tau if tau is None else np.array(as_vector(tau, model.n, "tau"))
        bw = self._zero_b if base_wrench is None else \
            np.array(as_vector(base_wrench, model.b, "base_wrench"))
        bwi = self._zero6 if base_wrench_inertial is None else \
            np.array(as_vector(base_wrench_inertial, 6, "base_wrench_inertial"))
        if not frame_wrenches:
            return Inputs(StageInputs(tau, bw, bwi, *self._no_fw), {})
        if not isinstance(frame_wrenches, dict):
            raise ValueError("frame_wrenches: expected a dict {frame name: 6-vector wrench}")
        bodies, ws, raw = [], [], {}
        frames = self._stages.frames
        for name, w in frame_wrenches.items():
            if name not in frames:
                raise ValueError(f"frame_wrenches: unknown frame {name!r}; frames are "
                                 f"{', '.join(model.frame_names)}")
            body, T = frames[name]
            raw[name] = as_vector(w, 6, f"frame_wrenches[{name!r}]")
            bodies.append(body)
            ws.append(T @ raw[name])
        return Inputs(StageInputs(tau, bw, bwi, np.array(bodies, dtype=np.int64),
                                  np.ascontiguousarray(ws, dtype=float)), raw)

    def _kernel_inputs(self, inputs) -> StageInputs:
        """The compiled step's record of ``inputs``: with mimic joints the efforts act on the
        masters of the tree."""
        k = inputs.kernel
        return k if not self._tree else k._replace(tau=self._kernel_tau(k.tau))

    def _prescribed_at(self, t):
        return as_returned_vectors(self.prescribed(t), ("q", "qd", "qdd"), self.model.n,
                                   "prescribed", t)

    def _prescribed_rows(self):
        """(s+1, n) arrays of q, q̇, q̈ at the stage times and at the end of the step."""
        dt, t = self.dt, self._t
        times = list(t + self.tab.c * dt) + [t + dt]
        cache = {}
        rows = [cache.setdefault(tt, self._prescribed_at(tt)) for tt in times]
        return PrescribedRows(*(np.ascontiguousarray([r[i] for r in rows]) for i in range(3)))

    # ------------------------------------------------------------------ stepping
    def step(self, tau=None, base_wrench=None, base_wrench_inertial=None, frame_wrenches=None,
             *, stage_inputs: Callable | None = None, inputs=None) -> None:
        """Advance one step ``dt``.

        Held inputs (``tau`` (n), ``base_wrench`` (b, vehicle frame), ``base_wrench_inertial``
        (6, ``[f; n]`` in inertial axes at the vehicle origin), ``frame_wrenches``), or
        ``inputs`` already returned by :meth:`held_inputs`, or ``stage_inputs(t, state) ->
        (tau, base_wrench, frame_wrenches)`` called at every stage (each item may be None).
        Raises :class:`SimulationError` (state unchanged) if the step fails; read the new
        state from :attr:`state` (or :attr:`t`, :meth:`arrays`).
        """
        self._require_state()
        if stage_inputs is not None:
            self._step_stages(stage_inputs)
        else:
            if inputs is None:
                inputs = self.held_inputs(tau, base_wrench, base_wrench_inertial, frame_wrenches)
            if self.tab.adaptive or self.python_stages:
                self._step_stages(lambda t, s: inputs, prevalidated=True)
            else:
                self._step_compiled(inputs)

    def arrays(self):
        """The current ``(t, g, V, q, qd)`` as the simulator's own arrays (no copies: valid
        until the next step, which may reuse them)."""
        if self._tree:
            return self._t, self._g, self._V, self._model_q(self._q), self._model_q(self._qd)
        return self._t, self._g, self._V, self._q, self._qd

    def run(self, steps: int, tau=None, base_wrench=None, base_wrench_inertial=None,
            frame_wrenches=None, *, inputs=None):
        """``steps`` steps with the same held inputs, looped in compiled code (numba backend;
        otherwise one :meth:`step` at a time).  Returns the trajectory ``(t, g, V, q, qd)`` of
        the new states (``steps`` rows).  On failure raises :class:`SimulationError` whose
        ``partial`` attribute holds the rows completed; the simulator is left at the last good
        state.  :attr:`run_work` holds ``[work, abs_work]`` after each completed step."""
        self._require_state()
        steps = int(steps)
        if steps < 0:
            raise ValueError(f"steps: expected a non-negative integer, got {steps!r}")
        if inputs is None:
            inputs = self.held_inputs(tau, base_wrench, base_wrench_inertial, frame_wrenches)
        b, n = self.model.b, self.model.n
        t0 = self._t
        G, VV = np.empty((steps, 4, 4)), np.empty((steps, b))
        Q, QD = np.empty((steps, n)), np.empty((steps, n))
        if self.tab.adaptive or self.python_stages:
            WW = self.run_work = np.empty((steps, 2))
            for k in range(steps):
                try:
                    self.step(inputs=inputs)
                except SimulationError as exc:
                    self.run_work = WW[:k]
                    exc.partial = (t0 + self.dt * np.arange(1, k + 1), G[:k], VV[:k], Q[:k],
                                   QD[:k])
                    raise
                G[k], VV[k], Q[k], QD[k], WW[k] = self._g, self._V, self._q, self._qd, self._W
            return t0 + self.dt * np.arange(1, steps + 1), G, VV, Q, QD
        X = self._trajectory_arrays(steps)
        if self._presc:
            rows = []
            for k in range(steps):
                self._t = t0 + k * self.dt
                rows.append(self._prescribed_rows())
            self._t = t0
            PR = PrescribedRows(*(np.ascontiguousarray([r[i] for r in rows]) for i in range(3)))
        else:
            PR = PrescribedRows(*(a[None] for a in self._pdummy))
        st_ = self._stages
        with np.errstate(all="ignore"):
            st, done = st_.k_rollout(st_.C, st_.F, st_.tab, self.spec, self.engine_state(),
                                     self._kernel_inputs(inputs), PR, X, st_.buf)
        return self._rolled(st, done, t0, X)

    def _trajectory_arrays(self, steps) -> EngineState:
        b, n = self.model.b, self._nq
        return EngineState(np.empty((steps, 4, 4)), np.empty((steps, b)), np.empty((steps, n)),
                           np.empty((steps, n)), np.empty((steps, b)), np.empty((steps, 2)))

    def _rolled(self, st, done, t0, X):
        """Commit the last of ``done`` compiled steps; raise on a failed status."""
        G, Q, QD, VV, WW = X.g, X.q, X.qd, X.V, X.W
        if done:
            k = done - 1
            self._g, self._m, self._q, self._qd = X.g[k].copy(), X.m[k].copy(), \
                X.q[k].copy(), X.qd[k].copy()
            self._V, self._W = X.V[k].copy(), X.W[k].copy()
            self.steps += done
            self._t = self._t0 + self.steps * self.dt
            self.evaluations += done * self.tab.stages
        times = t0 + self.dt * np.arange(1, done + 1)
        self.run_work = WW[:done]
        Q, QD = self._model_q(Q), self._model_q(QD)
        if st:
            try:
                self._fail(st)
            except SimulationError as exc:
                exc.partial = (times, G[:done], VV[:done], Q[:done], QD[:done])
                raise
        return times, G, VV, Q, QD

    def supports_law(self, law) -> bool:
        """True if :meth:`run_law` can evaluate ``law`` (a
        :class:`~vm_dynamics.control.compiled.CompiledLaw`): compiled stages of a fixed-step
        method, no prescribed motion."""
        if law is None or law.kind != "computed_torque" or self.tab.adaptive \
                or self.python_stages or self._presc:
            return False
        m = law.model
        if m is None or (m.n, m.b, m.group.name) != (self.model.n, self.model.b,
                                                      self.model.group.name):
            return False
        if self._tree and not (m is self.model or np.array_equal(
                getattr(m.coupling, "G", None), self._G)):
            return False
        if bool(self._tree) != (law.consts.coupling.shape[0] > 0):
            return False
        # the engine's compiled force elements index the plant's bodies: the law may
        # compensate them only on the plant's own model, and only if they are the engine's
        return not law.forces or (tuple(law.forces) == self.forces and m is self.model)

    def prepare_law(self, law) -> None:
        """Compile (on a machine's first run, with the notice) or load the kernel of
        :meth:`run_law` now, so that a timed run does not include it."""
        self.run_law(0, law)

    def run_law(self, steps: int, law, start_times=None):
        """``steps`` steps whose joint efforts come from the compiled ``law`` evaluated at
        every stage (no Python per stage or step; see :meth:`supports_law`).  ``start_times``
        (``steps`` values) are the times the steps start at (default ``t, t + dt, …``).
        Returns ``(t, g, V, q, qd)`` like :meth:`run` and sets :attr:`run_efforts` and
        :attr:`run_base_wrenches`, the inputs at the state each step starts from (the law at its
        first stage)."""
        self._require_state()
        if not self.supports_law(law):
            raise ValueError(f"run_law: {getattr(law, 'kind', law)!r} cannot run on this "
                             f"simulator ({self.method}, backend {self.backend}"
                             f"{', prescribed motion' if self._presc else ''})")
        steps = int(steps)
        b, n = self.model.b, self.model.n
        t0 = self._t
        TS = (t0 + self.dt * np.arange(steps) if start_times is None
              else np.ascontiguousarray(start_times, dtype=float))
        if TS.shape != (steps,):
            raise ValueError(f"start_times: expected {steps} values, got shape {TS.shape}")
        X = self._trajectory_arrays(steps)
        out = LawOutputs(np.empty((steps, n)), np.empty((steps, b)))
        with np.errstate(all="ignore"):
            st, done = self._stages.rollout_law(self, law, TS, X, out)
        self.run_efforts, self.run_base_wrenches = out.tau[:done], out.bw[:done]
        return self._rolled(st, done, t0, X)

    def _fail(self, st, where=""):
        raise SimulationError(self._t, f"the step from t = {self._t:.9g} s failed{where}: "
                              f"{_STATUS.get(int(st), f'status {st}')}")

    def _step_compiled(self, inputs):
        st_ = self._stages
        pr = self._prescribed_rows() if self._presc else self._pdummy
        y = self._out
        with np.errstate(all="ignore"):
            st = st_.k_step(st_.C, st_.F, st_.tab, self._spec, self.engine_state(),
                            self._kernel_inputs(inputs), pr, y, st_.buf)
        if st:
            self._fail(st)
        # double buffering: the old state's arrays receive the next step's output
        self._out = self.engine_state()
        self._commit(*y)
        self.evaluations += self.tab.stages

    def _commit(self, g, m, q, qd, V, W):
        self._g, self._m, self._q, self._qd, self._V, self._W = g, m, q, qd, V, W
        self.steps += 1
        self._t = self._t0 + self.steps * self.dt       # no accumulated round-off in t

    # Python driver over the stage evaluations (per-stage inputs, dopri5, the LP reference)
    def _inputs_at(self, fn, t, g_s, V, q, qd, prevalidated):
        if prevalidated:
            return fn(t, None)
        return self._call_inputs(fn, t, State(t, _ro(g_s.copy()), _ro(V.copy()), _ro(q),
                                              _ro(qd)))

    def _call_inputs(self, fn, t, state):
        """``fn(t, state) -> (tau, base_wrench, frame_wrenches)``, validated; errors name the
        input and the time."""
        out = fn(t, state)
        try:
            tau, bw, fws = out
        except (TypeError, ValueError):
            raise ValueError(f"stage_inputs: must return (tau, base_wrench, frame_wrenches); "
                             f"got {out!r} at t={t:.9g}") from None
        try:
            return self.held_inputs(tau, bw, None, fws)
        except ValueError as exc:
            raise ValueError(f"{exc} (inputs at t={t:.9g})") from None

    def _rhs(self, fn, prevalidated):
        """``rhs(t, g, y) -> (V, ẏ, inputs)`` over the vector state y = [m, (q, q̇,) W]."""
        b, n = self.model.b, self.model.n
        zeroT = np.zeros(b)
        stages = self._stages

        def rhs(t, g, y):
            m = y[:b]
            if self._presc:
                q, qd, qdd_p = self._prescribed_at(t)
            else:
                q, qd, qdd_p = y[b:b + n], y[b + n:b + 2 * n], self._zero_tau
            st, g_s, V = stages.stage_state(self, g, zeroT, m, q, qd)
            if st:
                self._fail(st)
            inputs = self._inputs_at(fn, t, g_s, V, q, qd, prevalidated)
            st, _, dm, qdd, pw, V = stages.stage(self, g, zeroT, m, q, qd, qdd_p, inputs)
            if st:
                self._fail(st)
            if self._presc:
                yd = np.concatenate([dm, pw])
            else:
                yd = np.concatenate([dm, qd, qdd, pw])
            return V.copy(), yd, inputs
        return rhs

    def _y(self):
        if self._presc:
            return np.concatenate([self._m, self._W])
        return np.concatenate([self._m, self._q, self._qd, self._W])

    def _set_from_y(self, g, y, t):
        b, n = self.model.b, self.model.n
        self._g, self._m = g, y[:b].copy()
        if self._presc:
            self._q, self._qd, _ = self._prescribed_at(t)
            self._W = y[b:b + 2].copy()
        else:
            self._q, self._qd = y[b:b + n].copy(), y[b + n:b + 2 * n].copy()
            self._W = y[b + 2 * n:].copy()
        st, _, V = self._stages.stage_state(self, g, np.zeros(b), self._m, self._q, self._qd)
        if st:
            self._fail(st)
        self._V = V.copy()

    def _step_stages(self, fn, prevalidated=False):
        """One step by the Python driver: the stage loop of the tableau (fixed-step methods)
        or one adaptive dopri5 interval, each stage a compiled (or LP) evaluation."""
        if not self.tab.adaptive and not self.python_stages and not prevalidated:
            with np.errstate(all="ignore"):
                st, outs = self._stages.step_staged(self, fn)
            if st:
                self._fail(st)
            self._out = self.engine_state()
            self._commit(*outs)
            self.evaluations += self.tab.stages
            return
        if self.tab.adaptive:
            rhs = self._rhs(fn, prevalidated)
            out = {}

            def on_sample(k, tk, gk, yk, aux):
                if k == 1:
                    out["g"], out["y"] = gk.copy(), yk.copy()
                return False
            stats = IntegrationStats()
            with np.errstate(all="ignore"):
                integrate(rhs, self.model.group, self.method,
                          np.array([self._t, self._t + self.dt]), self._g, self._y(), on_sample,
                          rtol=self.rtol, atol=self.atol, stats=stats)
            t_new = self._t + self.dt
            self._check_finite(out["g"], out["y"])
            self._set_from_y(out["g"], out["y"], t_new)
            self.steps += 1
            self._t = t_new
            self.evaluations += stats.evals
            self.rejected_steps += stats.rejected
            return
        b, n = self.model.b, self.model.n
        tab, dt, t0 = self.tab, self.dt, self._t
        s = tab.stages
        KT, Km = np.zeros((s, b)), np.zeros((s, b))
        Kq, Kqd, KW = np.zeros((s, n)), np.zeros((s, n)), np.zeros((s, 2))
        g, m, q, qd = self._g, self._m, self._q, self._qd
        stages = self._stages
        presc = self._prescribed_rows() if self._presc else self._pdummy
        with np.errstate(all="ignore"):
            for i in range(s):
                a = tab.a[i, :i]
                Theta = dt * (a @ KT[:i])
                mi = m + dt * (a @ Km[:i])
                if self._presc:
                    qi, qdi, qddp = presc[0][i], presc[1][i], presc[2][i]
                else:
                    qi, qdi, qddp = q + dt * (a @ Kq[:i]), qd + dt * (a @ Kqd[:i]), self._zero_tau
                ti = t0 + tab.c[i] * dt
                if prevalidated:
                    inputs = fn(ti, None)
                else:
                    st, g_s, V = stages.stage_state(self, g, Theta, mi, qi, qdi)
                    if st:
                        self._fail(st)
                    inputs = self._inputs_at(fn, ti, g_s, V, qi, qdi, False)
                    if i == 0:
                        self.last_stage_inputs = inputs
                st, dT, dm, qdd, pw, V = stages.stage(self, g, Theta, mi, qi, qdi, qddp, inputs)
                if st:
                    self._fail(st)
                KT[i], Km[i], Kq[i], Kqd[i], KW[i] = dT, dm, qdi, qdd, pw
            Theta = dt * (tab.b @ KT)
            g_new = g @ self.model.group.exp(Theta) if np.any(Theta) else g.copy()
            g_new[:3, :3] = g_new[:3, :3] @ (1.5 * np.eye(3) - 0.5 * g_new[:3, :3].T
                                             @ g_new[:3, :3])
            m_new = m + dt * (tab.b @ Km)
            W_new = self._W + dt * (tab.b @ KW)
            if self._presc:
                q_new, qd_new = presc[0][s].copy(), presc[1][s].copy()
            else:
                q_new, qd_new = q + dt * (tab.b @ Kq), qd + dt * (tab.b @ Kqd)
            self._check_finite(g_new, np.concatenate([m_new, q_new, qd_new, W_new]))
            st, _, V_new = stages.stage_state(self, g_new, np.zeros(b), m_new, q_new, qd_new)
        if st or not np.all(np.isfinite(V_new)):
            self._fail(st or 2)
        self._commit(g_new, m_new, q_new, qd_new, V_new.copy(), W_new)
        self.evaluations += s

    def _check_finite(self, g, y):
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(y))):
            self._fail(2)

    # ------------------------------------------------------------------ derived quantities
    def rhs(self, stage_inputs: Callable | None = None, **held):
        """The right-hand side ``(t, g, y) -> (V, ẏ, inputs)`` of the vector state
        (:meth:`vector_state`) for :func:`vm_dynamics.sim.integrators.integrate` (dopri5 over a
        whole grid with dense output)."""
        if stage_inputs is None:
            inputs = self.held_inputs(**held)
            return self._rhs(lambda t, s: inputs, True)
        return self._rhs(stage_inputs, False)

    def vector_state(self) -> np.ndarray:
        """``y = [m, q, q̇, W]`` (``[m, W]`` with prescribed motion)."""
        self._require_state()
        return self._y()

    def set_vector_state(self, t: float, g, y) -> None:
        """Set the state from ``(t, g, y)`` of :meth:`vector_state` (after an external driver)."""
        self._set_from_y(np.array(g, dtype=float), np.asarray(y, dtype=float), float(t))
        self._t = float(t)

    def prescribed_effort(self, frame_wrenches=None, base_wrench=None, state=None) -> np.ndarray:
        """Joint efforts realising the prescribed q̈ at the current state (or at ``state``, a
        :class:`State` of the prescribed motion): ``τ = M̂(q̈_p − q̈(τ = 0))``, since (LP-2) is
        affine in τ with slope M̂⁻¹.  The environment's wrenches act as at every stage."""
        from ..dynamics.fast import fast_model
        if not self._presc:
            raise ValueError("prescribed_effort: the simulator has no prescribed motion")
        model = self.model
        if state is None:
            t, g, V, q, qd = self._t, self._g, self._V, self._q, self._qd
        else:
            t, g, V, q, qd = (float(state.t), as_pose(state.g, "state.g"),
                              as_vector(state.V, model.b, "state.V"),
                              as_vector(state.q, model.n, "state.q"),
                              as_vector(state.qd, model.n, "state.qd"))
        _, _, qdd_p = self._prescribed_at(t)
        bw = None if base_wrench is None else as_vector(base_wrench, model.b, "base_wrench")
        if self.forces:
            from ..forces import total_wrenches
            bw, frame_wrenches = total_wrenches(model, self.forces, g, V, q, bw, frame_wrenches)
        if self.backend == "lp":
            terms = lp.lp_terms(model, q, derivatives=True)
            _, qdd0, _ = lp.forward_dynamics(model, g, V, q, qd, self._zero_tau, bw,
                                             frame_wrenches, terms=terms)
            return terms.Mhat @ (qdd_p - qdd0)
        fm = fast_model(model, "numba" if self.backend == "numba" else "numpy")
        _, qdd0 = fm.forward_dynamics(g, V, q, qd, self._zero_tau, bw, frame_wrenches)
        return fm.lp_blocks(q).Mhat @ (qdd_p - qdd0)

    def __repr__(self):
        return (f"Simulator({self.model.name!r}, dt={self.dt:g}, method={self.method!r}, "
                f"backend={self.backend!r}, t={self._t:.6g})")
