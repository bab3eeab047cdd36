"""Stage evaluations of the simulation engine: the rates of the Lagrange–Poincaré equations at one
Runge–Kutta stage state, by the compiled kernels (:class:`CompiledStages`, :mod:`.kernels`) or by
the closed-form LP reference (:class:`ReferenceStages`, :mod:`vm_dynamics.dynamics.lp`).

Both take the step's settings ``spec`` (:class:`~vm_dynamics.sim.records.StepSpec`) per call and
offer ``stage_state``, ``stage``, ``momentum_variable`` and ``energy``; the compiled one also
the per-stage driver's two calls (``begin``, then ``advance`` after each stage's inputs), the
whole step and the rollouts.  The steppers (:mod:`.steppers`) drive them.
"""
from __future__ import annotations

import numpy as np

from ..core import lie
from ..dynamics import lp
from .packed import PackedRecords, bind_packed
from .records import MAX_STAGES, EngineState, PrescribedRows, Rates, Stage, StepSpec, buffer_size

__all__ = ["CompiledStages", "ReferenceStages"]


class CompiledStages:
    """Stage evaluations by the compiled kernels (numba, or the same code as plain Python) of
    ``model`` with the compiled force elements ``F`` (:class:`~vm_dynamics.forces.registry.
    Forces`), the method's ``tableau`` and ``nq`` integrated joints; ``compile`` warms every
    kernel up now (numba backend)."""

    def __init__(self, model, F, tableau, nq, zero_inputs, compile: bool):
        from ..dynamics.fast import fast_model
        from . import accounts
        from . import kernels as ek
        from .buffer import buffer_views
        self.ek, self.accounts = ek, accounts
        fm = fast_model(model, "numba" if compile else "numpy")
        self.C, self.F, self.tab = fm.kernel_constants, F, tableau
        self.stages = tableau.b.shape[0]      # stage evaluations per step
        self.b, self.n = model.b, nq          # joints of the integrated state
        n_tree = len(fm.xi)                 # joints of the tree (the workspace's size)
        self.buf = np.zeros(buffer_size(self.b, n_tree))
        self.work = buffer_views(self.buf, self.b, n_tree)        # views into buf
        self.sc = self.work.sc
        #: the records every step reads unchanged, and the step's records as one table
        #: (:mod:`.packed`; the warm-up's at first, built at a step from the last one, again
        #: when the states' arrays are replaced)
        self.fixed, self.pack = (self.C, self.F, self.tab, self.work), None
        self.rates = Rates(np.empty(6), np.empty(self.b), np.empty(self.n), np.empty(2))
        self.stage_rec = Stage(np.empty((4, 4)), np.empty((4, 4)), np.empty(self.b),
                               np.empty(self.n), np.empty(self.n), np.empty(self.b))
        self.Theta6 = np.zeros(6)
        self.frames = fm.frames
        self.axes = list(model.group.axes)
        self.k_step, self.k_rollout = ek.engine_step, ek.engine_rollout
        self.k_stage, self.k_stage_state = ek.engine_stage, ek.engine_stage_state
        self.k_begin, self.k_advance = ek.stage_begin, ek.stage_advance
        self.k_law = None
        self.k_energy = accounts.energy
        self.compiled = compile
        if compile:
            self._warm_up(zero_inputs)

    def _warm_up(self, held):
        """Run every kernel once on a neutral state (compiles them on a machine's first run,
        with a notice, or loads them from numba's disk cache) before any timed loop, and bind
        their compiled entry points (:func:`vm_dynamics.dynamics.fast.bind_compiled`)."""
        from ..dynamics.fast import bind_compiled, compile_notice
        ek, accounts, C, F, tab, buf = self.ek, self.accounts, self.C, self.F, self.tab, self.buf
        b, n, s = self.b, self.n, tab.b.shape[0]
        g, zb, z = np.eye(4), np.zeros(b), np.zeros(n)
        spec = StepSpec(1, False, g, 0.001, np.zeros(0, dtype=np.bool_))
        P = np.zeros((s + 1, n))
        pr = PrescribedRows(P, P, P)
        x = EngineState(g, zb, z, z, zb, np.zeros(2))
        with compile_notice(ek.engine_step, ek.engine_rollout, ek.engine_stage,
                            ek.stage_begin, ek.stage_advance):
            self.k_stage_state = bind_compiled(ek.engine_stage_state, (
                C, spec, g, self.Theta6, self.stage_rec, buf))
            self.k_stage = bind_compiled(ek.engine_stage, (
                C, F, spec, g, self.Theta6, self.stage_rec, z, held, self.rates, buf))
            accounts.momentum_variable(C, spec, g, zb, z, z, np.empty(b), buf)
            self.k_energy = bind_compiled(accounts.energy, (C, F, g, zb, z, z, buf))
            if s > MAX_STAGES:      # an adaptive method: one stage at a time (AdaptiveStep)
                return
            self.k_step = bind_compiled(ek.engine_step, (C, F, tab, spec, x, held, pr,
                                                         self.state_arrays(), buf))
            # kept as the first step's ``like``: that step's table takes over its type and
            # the fixed records' entries, and computes only the states' (:meth:`step`)
            p = self.pack = PackedRecords(self.fixed, x, self.state_arrays())
            self.k_packed = bind_packed(ek.engine_step_packed, (p.table, p.tref, 0, spec, held,
                                                                pr))
            self.k_rollout = bind_compiled(ek.engine_rollout, (
                C, F, tab, spec, x, held, PrescribedRows(P[None], P[None], P[None]),
                self.state_arrays(1), buf))
            self.k_begin = bind_compiled(ek.stage_begin, (C, spec, tab, 0, x, pr, buf))
            self.k_advance = bind_compiled(ek.stage_advance, (C, F, spec, tab, 0, x, pr, held,
                                                              self.state_arrays(), buf))

    def state_arrays(self, *lead) -> EngineState:
        """Empty state arrays (with leading dimensions ``lead``: a trajectory)."""
        b, n = self.b, self.n
        return EngineState(np.empty((*lead, 4, 4)), np.empty((*lead, b)), np.empty((*lead, n)),
                           np.empty((*lead, n)), np.empty((*lead, b)), np.empty((*lead, 2)))

    # the whole step, the per-stage driver's calls, the rollouts
    def step(self, spec, x, inputs, pr, y):
        """One RKMK step from ``x`` into ``y`` with held inputs; a status code.  Compiled, the
        records that stay the same between steps (the constants, the work buffer's views and
        the double-buffered states ``x``, ``y``) go as one pointer table (:mod:`.packed`),
        built again when ``x``, ``y`` are not the two states of the last one (not with
        prescribed motion: its joint rows are the user's arrays, passed as they are)."""
        if not self.compiled or spec.presc:
            return self.k_step(self.C, self.F, self.tab, spec, x, inputs, pr, y, self.buf)
        p = self.pack
        parity = -1 if p is None else p.parity(x, y)
        if parity < 0:
            p = self.pack = PackedRecords(self.fixed, x, y, like=p)
            parity = 0
        return self.k_packed(p.table, p.tref, parity, spec, inputs, pr)

    def rollout(self, spec, x, inputs, PR, X):
        """``len(X.g)`` held-input steps; (status, steps completed)."""
        return self.k_rollout(self.C, self.F, self.tab, spec, x, inputs, PR, X, self.buf)

    def begin(self, spec, i, x, pr):
        """Stage ``i`` from ``x``: its state in the scratch (``sc.pose, Vs, qs, qds``); a
        status code."""
        return self.k_begin(self.C, spec, self.tab, i, x, pr, self.buf)

    def advance(self, spec, i, x, pr, inputs, y):
        """The rates of stage ``i`` (left by :meth:`begin`) with the kernel ``inputs``, then
        :meth:`begin` of stage ``i + 1``, or after the last stage the step's end state ``y``,
        in one compiled call; a status code."""
        return self.k_advance(self.C, self.F, spec, self.tab, i, x, pr, inputs, y, self.buf)

    def rollout_law(self, spec, TS, x, law, X, outputs):
        """:func:`~vm_dynamics.sim.kernels.engine_rollout_law` (bound on first use; compiled on
        a machine's first run, with the notice); returns (status, steps completed)."""
        args = (self.C, self.F, self.tab, spec, TS, x, law.params(), X, outputs, self.buf)
        if self.k_law is None:
            from ..dynamics.fast import bind_compiled, compile_notice
            kernel = self.ek.engine_rollout_law
            if not self.compiled:
                self.k_law = kernel
            else:
                with compile_notice(kernel):
                    self.k_law = bind_compiled(kernel, args)
                    return self.k_law(*args)
        return self.k_law(*args)

    # one stage at a time (the Python driver)
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

    def stage_state(self, spec, g, Theta, m, q, qd):
        s = self._stage(m, q, qd)
        st = self.k_stage_state(self.C, spec, g, self._theta6(Theta), s, self.buf)
        return st, s.g, s.V

    def stage(self, spec, g, Theta, m, q, qd, qdd_p, inputs):
        s, r = self._stage(m, q, qd), self.rates
        st = self.k_stage(self.C, self.F, spec, g, self._theta6(Theta), s,
                          np.ascontiguousarray(qdd_p, dtype=float), inputs.kernel, r, self.buf)
        return st, r.dTheta[self.axes], r.dm, r.qdd, r.pw, s.V

    def momentum_variable(self, spec, g, V, q, qd):
        m = np.empty(self.b)
        self.accounts.momentum_variable(self.C, spec, g, V, q, qd, m, self.buf)
        return m

    def energy(self, g, V, q, qd):
        """(kinetic, potential) energy at a state; its arrays go to the bound entry point
        (the dispatcher's type resolution of the records took half the call: the dynamics
        node's energy guard checks every lockstep period) when C-contiguous, as the engine
        keeps them, else through the dispatcher."""
        k = self.k_energy
        if not (g.flags.c_contiguous and V.flags.c_contiguous and q.flags.c_contiguous
                and qd.flags.c_contiguous):
            k = self.accounts.energy
        return k(self.C, self.F, g, V, q, qd, self.buf)


class ReferenceStages:
    """Stage evaluations by the closed-form LP reference (:mod:`vm_dynamics.dynamics.lp`): the same
    equations written as in paper 000, for tests and for users who want the paper's algebra."""

    def __init__(self, model, forces, forward_dynamics=None, coupled_fast=None):
        self.model = model
        self.group = model.group
        self.forces = forces
        self.conservative = tuple(e for e in forces if e.conservative)
        self.forward_dynamics = forward_dynamics
        from ..dynamics.fast import fast_model
        self.frames = fast_model(model, "numpy").frames      # body + Ad⁻ᵀ(ḡ_frame) per frame
        #: the O(n) recursions when the stages use them (mimic models), else None
        self.fm = coupled_fast

    def _velocity(self, spec, g_s, m, q, qd):
        if self.fm is not None:                           # M₀, 𝒜 from the CRBA blocks
            t = self.fm.lp_blocks(q)
        else:
            t = lp.lp_terms(self.model, q,
                            derivatives=not spec.presc and self.forward_dynamics is None)
        if spec.form == 0:
            return t, m.copy(), None
        if spec.form == 1:
            h = spec.gri @ g_s
            P = self.group.project(lie.Ad(h).T @ self.group.embed(m))
        else:
            P = m.copy()
        V = np.linalg.solve(t.M0, P) - t.A @ qd if self.model.b else np.zeros(0)   # (LP-3)
        return t, V, P

    def stage_state(self, spec, g, Theta, m, q, qd):
        g_s = g @ self.group.exp(Theta) if np.any(Theta) else g
        _, V, _ = self._velocity(spec, g_s, m, q, qd)
        return 0, g_s, V

    def _wrenches(self, g_s, V, q, inputs):
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

    def stage(self, spec, g, Theta, m, q, qd, qdd_p, inputs):
        model, grp = self.model, self.group
        g_s = g @ grp.exp(Theta) if np.any(Theta) else g
        t, V, P = self._velocity(spec, g_s, m, q, qd)
        tau = inputs.kernel.tau
        F, frames = self._wrenches(g_s, V, q, inputs)
        if self.fm is not None:         # F_η = f₀ − (static load of gravity and frame wrenches)
            zb, zn = np.zeros(model.b), np.zeros(model.n)
            F_eta = F - self.fm.inverse_dynamics(g_s, zb, q, zn, zb, zn, frames or None)[0]
            kin = lp.kinematics(model, q) if frames else None
        else:
            kin = t.kin
            fe0, fem = lp.external_forces(model, kin, frames or None)
            f_u, _ = lp.gravity_forces(model, kin, g_s)
            F_eta = F + fe0 - f_u                                           # (94)
        if spec.presc:
            qdd = np.asarray(qdd_p, dtype=float)
            Vdot = None
        elif self.forward_dynamics is not None:
            Vdot, qdd = self.forward_dynamics(g_s, V, q, qd, tau, F, frames or None)
            Vdot, qdd = np.asarray(Vdot, dtype=float), np.asarray(qdd, dtype=float)
        else:
            Vdot, qdd, _ = lp.forward_dynamics(model, g_s, V, q, qd, tau, F, frames or None,
                                               terms=t)
        if spec.form == 0:
            dm = Vdot
        elif spec.form == 1:
            h = spec.gri @ g_s
            dm = grp.project(lie.Ad_inv(h).T @ grp.embed(F_eta))            # μ̇ = Ad*_{h⁻¹}F_η
        else:
            dm = grp.ad(V).T @ P + F_eta                                    # (LP-1)
        # power of the applied inputs (not gravity, not the conservative elements)
        pj = 0.0 if spec.presc else float(np.dot(tau, qd))
        if (frames or self.conservative) and kin is None:
            kin = lp.kinematics(model, q)
        pe = self._power(kin, V, qd, F, frames)
        if self.conservative:
            from ..forces import total_wrenches
            Fc, frames_c = total_wrenches(model, self.conservative, g_s, V, q)
            pe -= self._power(kin, V, qd, Fc, frames_c)
        dTheta = grp.dexp_inv_body(Theta) @ V if np.any(Theta) else V.copy()
        return 0, dTheta, dm, qdd, np.array([pj + pe, abs(pj) + abs(pe)]), V

    def momentum_variable(self, spec, g, V, q, qd):
        if spec.form == 0:
            return V.copy()
        t = lp.lp_terms(self.model, q, derivatives=False)
        P = t.M0 @ V + t.M0m @ qd                                            # (77)
        if spec.form == 2:
            return P
        h = spec.gri @ g
        return self.group.project(lie.Ad_inv(h).T @ self.group.embed(P))

    def energy(self, g, V, q, qd):
        from ..forces import potential_energy
        K = self.model.kinetic_energy(V, q, qd)
        return K, self.model.potential_energy(g, q) + potential_energy(self.model, self.forces,
                                                                       g, q)

