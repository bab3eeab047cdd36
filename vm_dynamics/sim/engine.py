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

**Inputs** are *held* over the step (``step(tau=…, base_wrench=…, base_wrench_inertial=…,
frame_wrenches=…)``, zero-order hold as a digital controller applies them; with numba the whole
step is one compiled call) or given *per stage* (``step(stage_inputs=f)``, ``f(t, state)`` at
every RK stage, as a continuous-time controller); :mod:`.steppers` holds the strategies.

Force elements (:mod:`vm_dynamics.forces`, ``forces=[...]``) act inside every stage;
``prescribed(t) -> (q, q̇, q̈)`` makes the joints follow a motion exactly while only ``(g, m, W)``
is integrated (LP-1)+(LP-3).  Backends (:func:`vm_dynamics.dynamics.fast.resolve_backend`):
``"numba"`` (compiled, cached on disk), ``"python"`` (the same kernels as plain Python), ``"lp"``
(the closed-form LP reference, :mod:`.stages`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..core import lie
from ..core.state import State
from ..core.validation import as_pose, as_positive, as_returned_vectors, as_vector
from .driven import DrivenJoints
from .inputs import Inputs, TreeCoordinates, validate_inputs
from .integrators import TABLEAUX
from .records import (
    FORM_CODES,
    FORMULATIONS,
    STATUS,
    EngineState,
    LawOutputs,
    PrescribedRows,
    SimulationError,
    StageInputs,
    StepSpec,
    TableauArrays,
    check_formulation,
    choose_formulation,
)
from .stages import CompiledStages, ReferenceStages
from .steppers import CompiledHeldStep, RightHandSide, law_supported, run_stepwise, steppers_for

__all__ = ["Simulator", "State", "FORMULATIONS", "SimulationError", "choose_formulation", "Inputs"]

def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


class Simulator(DrivenJoints):
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
    forces : force elements (:mod:`vm_dynamics.forces`); a ``UniformGravity`` folds into :attr:`model`.
    environment : a :class:`~vm_dynamics.model.hydrodynamics.Hydrodynamics` (damping, buoyancy) or
        None: its effects become force elements after ``forces``.  Its added mass must already
        be in the model (:meth:`~vm_dynamics.Model.with_added_vehicle_inertia`).
    prescribed : ``prescribed(t) -> (q, q̇, q̈)``: the joints follow this motion exactly.
    forward_dynamics : optional user function with the signature of
        :meth:`~vm_dynamics.Model.forward_dynamics` giving (V̇, q̈); the stages then use it with
        the LP reference for the momentum variable (Python driver).
    driven_joints : joints (names or indices) moved at the velocity set (:mod:`.driven`).
    """

    def __init__(self, model, dt: float, method: str = "rkmk4", *, formulation: str = "auto",
                 backend: str = "auto", environment=None, prescribed: Callable | None = None,
                 rtol: float = 1e-9, atol: float = 1e-12,
                 forward_dynamics: Callable | None = None, forces=None, driven_joints=None):
        from ..dynamics.fast import resolve_backend
        from ..forces import as_elements, compile_forces, fold_gravity
        model, self.forces = fold_gravity(model, as_elements(forces, environment))
        self.model = model
        #: the compiled step's settings (:class:`~vm_dynamics.sim.records.StepSpec`)
        self._spec = self.spec = None
        self.dt = as_positive(dt, "dt")
        if method not in TABLEAUX:
            raise ValueError(f"method={method!r}: unknown; choose one of {', '.join(TABLEAUX)}")
        self.method = method
        self.tab = TABLEAUX[method]
        self.stage_nodes = tuple(float(c) for c in self.tab.c)   # stage i at t + c_i dt
        if forward_dynamics is not None and not callable(forward_dynamics):
            raise ValueError("forward_dynamics: expected a callable like Model.forward_dynamics")
        self.backend = "lp" if forward_dynamics is not None else \
            resolve_backend(backend, engine=True)
        coupled_fast = self._resolve_coupling(prescribed, forward_dynamics)
        if coupled_fast is not None:
            forward_dynamics = coupled_fast.forward_dynamics
        self.forward_dynamics = forward_dynamics
        #: True when the stages are evaluated in Python (LP reference or a given forward
        #: dynamics) rather than by the compiled kernels
        self.python_stages = self.backend == "lp" or forward_dynamics is not None
        check_formulation(formulation, prescribed)
        self._formulation_arg = formulation
        self.prescribed = prescribed
        self._presc = prescribed is not None
        self._driven_setup(driven_joints)
        self._plain_inputs = not self.tree.active and not self._driven.shape[0]
        self.rtol, self.atol = as_positive(rtol, "rtol"), as_positive(atol, "atol")
        self.hydrodynamics = environment
        #: their compiled parameters (:class:`vm_dynamics.forces.registry.Forces`)
        self.F = compile_forces(model, self.forces)
        b, n = model.b, model.n
        self._nq = self.tree.n      # joints of the integrated state
        self._zeros = (np.zeros(n), np.zeros(b), np.zeros(6))
        s = self.tab.stages
        #: the method's tableau as the compiled step takes it
        self.tableau = TableauArrays(*(np.ascontiguousarray(x, dtype=float)
                                       for x in (self.tab.a, self.tab.b, self.tab.c)))
        P = np.zeros((s + 1, n))
        self._pdummy = PrescribedRows(P, P, P)
        #: the stage evaluator (:mod:`vm_dynamics.sim.stages`)
        self.stages = (ReferenceStages(model, self.forces, forward_dynamics, coupled_fast)
                       if self.python_stages else
                       CompiledStages(model, self.F, self.tableau, self._nq,
                                      self.kernel_inputs(validate_inputs(model, {},
                                                                         self._zeros)),
                                      compile=self.backend == "numba"))
        #: how a step is taken with held inputs and with a callable per stage (:mod:`.steppers`)
        self._held_step, self._staged_step = steppers_for(self.tab, self.python_stages)
        self._t = 0.0
        self.steps = 0
        self.run_work = np.empty((0, 2))     # [work, abs_work] after each step of the last run()
        self._g = None
        self._xrec = None

    def _resolve_coupling(self, prescribed, forward_dynamics):
        """Set :attr:`tree`, the integrated joint state: the tree's with mimic joints on the
        compiled step (:attr:`state`, :meth:`arrays` and :meth:`run` give the model's
        coordinates).  Returns the coupled O(n) dynamics when mimic joints with prescribed motion
        or an adaptive method take the Python stages (q̈ from the coupled forward dynamics, the
        momentum variable from the LP blocks; slower, exact), else None."""
        cp = getattr(self.model, "coupling", None)
        coupled = forward_dynamics is None and self.backend != "lp" and cp is not None \
            and not cp.trivial
        tree = coupled and prescribed is None and not self.tab.adaptive
        self.tree = TreeCoordinates(cp if tree else None, self.model.n)
        if not coupled or tree:
            return None
        from ..dynamics.fast import fast_model
        return fast_model(self.model, "numba" if self.backend == "numba" else "numpy")

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
            pq, pqd, _ = self.prescribed_at(self._t)
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
            q, qd = self.tree.to_tree(q, qd)
        self.formulation = choose_formulation(model, g, self._formulation_arg, self.forces,
                                              self._presc)
        self._form = FORM_CODES[self.formulation]
        self._gri = lie.se3_inv(g)
        self._update_spec()
        self._g, self._V, self._q, self._qd = g, V, q.copy(), qd.copy()
        self._m = self.stages.momentum_variable(self.spec, g, V, self._q, self._qd)
        self._W = np.zeros(2)
        self._xrec = None
        self.steps = 0
        self.evaluations = 0
        self.rejected_steps = 0
        self._ensure_buffers()
        return self

    def _ensure_buffers(self):
        b, n = self.model.b, self._nq
        self._out = EngineState(np.empty((4, 4)), np.empty(b), np.empty(n), np.empty(n), np.empty(b), np.empty(2))

    # ------------------------------------------------------------------ step settings
    @property
    def dt(self) -> float:
        """The step size, s."""
        return self._dt

    @dt.setter
    def dt(self, value: float) -> None:
        if self._spec is None or float(value) != self._dt:   # (advance_to sets it every step)
            self._dt = float(value)
            if self._spec is not None:
                self._update_spec()

    def _update_spec(self):         # the records of the compiled step
        self._spec = self.spec = StepSpec(int(self._form), bool(self._presc), self._gri, self._dt,
                                          self._driven)

    def engine_state(self) -> EngineState:
        """The integrated state as the compiled step takes it (the simulator's own arrays; one
        record per state: :meth:`commit` keeps the one the step wrote)."""
        rec = self._xrec
        if rec is None:
            rec = self._xrec = EngineState(self._g, self._m, self._q, self._qd, self._V, self._W)
        return rec

    def model_q(self, x):      # the model's coordinates of integrated joint values (rows)
        return self.tree.model_q(x)

    _tree = property(lambda self: self.tree.active)     # (tests read it)
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
                     _ro(np.array(self.model_q(self._q))), _ro(np.array(self.model_q(self._qd))))

    @property
    def work(self) -> float:
        """Work of every applied effort, wrench and non-conservative element since reset."""
        return float(self._W[0])

    @property
    def abs_work(self) -> float:
        """∫|power| dt of the applied inputs since reset (scale of the energy balance)."""
        return float(self._W[1])

    def energy(self) -> tuple[float, float]:
        """(kinetic, potential) energy of the current state; the potential is the
        gravitational one plus the conservative force elements'."""
        self._require_state()
        K, U = self.stages.energy(self._g, self._V, self._q, self._qd)
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
            q, qd, _ = self.prescribed_at(self._t)
        self._q, self._qd = self.tree.to_tree(as_vector(q, n, "q").copy(), as_vector(qd, n, "qd").copy())
        self._m = self.stages.momentum_variable(self.spec, self._g, self._V, self._q, self._qd)
        self._xrec = None

    def set_vehicle(self, g, V) -> None:
        """Jump to vehicle pose ``g`` and body velocity ``V`` now (a simulator API's "set entity
        state"), keeping the joints, time, step count, work account and momentum reference."""
        self._require_state()
        self._g, self._V = as_pose(g, "g").copy(), as_vector(V, self.model.b, "V").copy()
        self._m = self.stages.momentum_variable(self.spec, g, V, self._q, self._qd)
        self._xrec = None

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
        self._xrec = None
        self._ensure_buffers()

    # ------------------------------------------------------------------ inputs
    def held_inputs(self, tau=None, base_wrench=None, base_wrench_inertial=None,
                    frame_wrenches=None) -> Inputs:
        """Validate inputs once into the arrays the kernels take (reusable across steps)."""
        return validate_inputs(self.model, self.stages.frames, self._zeros, tau, base_wrench,
                               base_wrench_inertial, frame_wrenches)

    def kernel_inputs(self, inputs) -> StageInputs:
        """The compiled step's record of ``inputs``: with mimic joints the efforts act on the
        masters of the tree."""
        k = inputs.kernel
        if self._plain_inputs:      # (a per-step path)
            return k
        return self.driven_inputs(k) if not self.tree.active else k._replace(tau=self.tree.efforts(k.tau))

    def prescribed_at(self, t):
        """``(q, q̇, q̈)`` of the prescribed motion at ``t``, validated."""
        return as_returned_vectors(self.prescribed(t), ("q", "qd", "qdd"), self.model.n,
                                   "prescribed", t)

    def prescribed_rows(self) -> PrescribedRows:
        """(s+1, n) arrays of q, q̇, q̈ at the stage times and at the end of the step (zeros
        without prescribed motion)."""
        if not self._presc:
            return self._pdummy
        dt, t = self.dt, self._t
        times = list(t + self.tab.c * dt) + [t + dt]
        cache = {}
        rows = [cache.setdefault(tt, self.prescribed_at(tt)) for tt in times]
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
            self._staged_step.step(self, fn=stage_inputs)
            return
        if inputs is None:
            inputs = self.held_inputs(tau, base_wrench, base_wrench_inertial, frame_wrenches)
        self._held_step.step(self, inputs)

    def advance_to(self, t: float, substeps: int = 1, *, stage_inputs: Callable | None = None,
                   inputs=None):
        """``substeps`` equal steps from :attr:`t` to ``t`` (held ``inputs`` of
        :meth:`held_inputs`, or ``stage_inputs`` per stage as in :meth:`step`); the time is then
        exactly ``t``.  Returns the inputs of the first stage (per-stage inputs) or None."""
        self._require_state()
        self.dt = (float(t) - self._t) / substeps
        first = None
        for j in range(substeps):
            if stage_inputs is not None:
                self.step(stage_inputs=stage_inputs)
                if j == 0:
                    first = self.last_stage_inputs
            else:
                self.step(inputs=inputs)
        self._t = float(t)
        return first

    def arrays(self):
        """The current ``(t, g, V, q, qd)`` as the simulator's own arrays (no copies: valid
        until the next step, which may reuse them)."""
        if self.tree.active:
            return self._t, self._g, self._V, self.model_q(self._q), self.model_q(self._qd)
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
        t0 = self._t
        if not isinstance(self._held_step, CompiledHeldStep):
            self.run_work, rows = run_stepwise(self, steps, inputs)
            return rows
        X = self.stages.state_arrays(steps)
        PR = self._prescribed_blocks(steps) if self._presc else \
            PrescribedRows(*(a[None] for a in self._pdummy))
        with np.errstate(all="ignore"):
            st, done = self.stages.rollout(self.spec, self.engine_state(),
                                           self.kernel_inputs(inputs), PR, X)
        return self._rolled(st, done, t0, X)

    def _prescribed_blocks(self, steps) -> PrescribedRows:
        """The prescribed rows of ``steps`` steps from now, one block per step."""
        t0, rows = self._t, []
        for k in range(steps):
            self._t = t0 + k * self.dt
            rows.append(self.prescribed_rows())
        self._t = t0
        return PrescribedRows(*(np.ascontiguousarray([r[i] for r in rows]) for i in range(3)))

    def _rolled(self, st, done, t0, X):
        """Commit the last of ``done`` compiled steps into the spare state, as a step does (the
        packed step's table keeps listing the states); raise on a failed status."""
        G, Q, QD, VV, WW = X.g, X.q, X.qd, X.V, X.W
        if done:
            y, k = self._out, done - 1
            for dst, rows in zip(y, X):
                dst[...] = rows[k]
            self._out = self.engine_state()
            self._g, self._m, self._q, self._qd, self._V, self._W = self._xrec = y
            self.steps += done
            self._t = self._t0 + self.steps * self.dt
            self.evaluations += done * self.tab.stages
        times = t0 + self.dt * np.arange(1, done + 1)
        self.run_work = WW[:done]
        Q, QD = self.model_q(Q), self.model_q(QD)
        if st:
            try:
                self.fail(st)
            except SimulationError as exc:
                exc.partial = (times, G[:done], VV[:done], Q[:done], QD[:done])
                raise
        return times, G, VV, Q, QD

    def supports_law(self, law) -> bool:
        """True if :meth:`run_law` can evaluate ``law`` (a
        :class:`~vm_dynamics.control.compiled.CompiledLaw`): compiled stages of a fixed-step
        method, no prescribed motion, no driven joints."""
        return isinstance(self._held_step, CompiledHeldStep) and not self._presc and not self._driven.size \
            and law_supported(self.model, self.tree, self.forces, law)

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
        X = self.stages.state_arrays(steps)
        out = LawOutputs(np.empty((steps, n)), np.empty((steps, b)))
        with np.errstate(all="ignore"):
            st, done = self.stages.rollout_law(self.spec, TS, self.engine_state(), law, X, out)
        self.run_efforts, self.run_base_wrenches = out.tau[:done], out.bw[:done]
        return self._rolled(st, done, t0, X)

    # ------------------------------------------------------------------ engine interface
    # what the steppers (vm_dynamics.sim.steppers) and simulate use
    def fail(self, st, where=""):
        """Raise the :class:`SimulationError` of a kernel's status ``st`` at the current time."""
        raise SimulationError(self._t, f"the step from t = {self._t:.9g} s failed{where}: "
                              f"{STATUS.get(int(st), f'status {st}')}")

    def spare_state(self) -> EngineState:
        """The arrays the next step writes its end state into (double buffering)."""
        return self._out

    def commit(self, y: EngineState, evaluations: int, x: EngineState | None = None) -> None:
        """Take the end state ``y`` of one step (written into :meth:`spare_state`) that made
        ``evaluations`` stage evaluations from ``x`` (default: :meth:`engine_state`)."""
        self._out = x or self.engine_state()    # the old state's arrays take the next step
        self._g, self._m, self._q, self._qd, self._V, self._W = y
        self._xrec = y
        self.steps += 1
        self.evaluations += evaluations
        self._t = self._t0 + self.steps * self._dt      # no accumulated round-off in t

    def commit_vector_state(self, g, y, evaluations: int) -> None:
        """Take the end ``(g, y)`` (:meth:`vector_state` form) of one step that made
        ``evaluations`` stage evaluations."""
        self.check_finite(g, y)
        self._set_from_y(g, y, self._t + self.dt)
        if not np.all(np.isfinite(self._V)):
            self.fail(2)
        self.count_step(evaluations)
        self._t = self._t0 + self.steps * self.dt

    def count_step(self, evaluations: int, rejected: int = 0) -> None:
        """Count one step of ``evaluations`` stage evaluations (``rejected`` adaptive tries)."""
        self.steps += 1
        self.evaluations += evaluations
        self.rejected_steps += rejected

    def check_finite(self, g, y) -> None:
        """Raise the non-finite :class:`SimulationError` unless ``g`` and ``y`` are finite."""
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(y))):
            self.fail(2)

    def evaluate_inputs(self, fn, t, state):
        """``fn(t, state) -> (tau, base_wrench, frame_wrenches)``, validated into
        :class:`Inputs`; errors name the input and the time."""
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

    def rhs(self, stage_inputs: Callable | None = None, *, inputs=None, **held):
        """The right-hand side ``(t, g, y) -> (V, ẏ, inputs)`` of the vector state
        (:meth:`vector_state`) for :func:`vm_dynamics.sim.integrators.integrate`, with
        ``stage_inputs(t, state)`` evaluated at every call, or held ``inputs`` (of
        :meth:`held_inputs`, or its keyword arguments ``held``)."""
        if stage_inputs is not None:
            return RightHandSide(self, stage_inputs, None)
        return RightHandSide(self, None, inputs if inputs is not None
                             else self.held_inputs(**held))

    def _set_from_y(self, g, y, t):
        b, n = self.model.b, self.model.n
        self._g, self._m = g, y[:b].copy()
        if self._presc:
            self._q, self._qd, _ = self.prescribed_at(t)
            self._W = y[b:b + 2].copy()
        else:
            self._q, self._qd = y[b:b + n].copy(), y[b + n:b + 2 * n].copy()
            self._W = y[b + 2 * n:].copy()
        st, _, V = self.stages.stage_state(self.spec, g, np.zeros(b), self._m, self._q,
                                           self._qd)
        if st:
            self.fail(st)
        self._V = V.copy()
        self._xrec = None

    def vector_state(self) -> np.ndarray:
        """``y = [m, q, q̇, W]`` (``[m, W]`` with prescribed motion)."""
        self._require_state()
        if self._presc:
            return np.concatenate([self._m, self._W])
        return np.concatenate([self._m, self._q, self._qd, self._W])

    def set_vector_state(self, t: float, g, y) -> None:
        """Set the state from ``(t, g, y)`` of :meth:`vector_state` (after an external driver)."""
        self._set_from_y(np.array(g, dtype=float), np.asarray(y, dtype=float), float(t))
        self._t = float(t)

    def prescribed_effort(self, frame_wrenches=None, base_wrench=None, state=None) -> np.ndarray:
        """Joint efforts realising the prescribed q̈ at the current state (or at ``state``, a
        :class:`State` of the prescribed motion): ``τ = M̂(q̈_p − q̈(τ = 0))``, since (LP-2) is
        affine in τ with slope M̂⁻¹.  The force elements act as at every stage."""
        from .prescribed import prescribed_effort
        if not self._presc:
            raise ValueError("prescribed_effort: the simulator has no prescribed motion")
        if state is None:
            state = State(self._t, self._g, self._V, self._q, self._qd)
        return prescribed_effort(self, state, frame_wrenches, base_wrench)

    def __repr__(self):
        return (f"Simulator({self.model.name!r}, dt={self.dt:g}, method={self.method!r}, "
                f"backend={self.backend!r}, t={self._t:.6g})")
