"""Compiled kernels of the simulation engine (:class:`vm_dynamics.sim.engine.Simulator`): the one
RKMK step, ``_stage_begin`` (the stage state from the earlier slopes), ``_stage_end`` (its rates
with given inputs) and ``_stage_finish`` (the end state).  :func:`engine_step` runs them with
held inputs, :func:`engine_rollout` for many steps, :func:`engine_rollout_law` with the compiled
law (:func:`vm_dynamics.control.laws.computed_torque_into`) between begin and end; the per-stage
Python driver calls the same three through :func:`stage_begin` and :func:`stage_advance`.
Arguments: the records of :mod:`.records`.

The stage functions are inlined into their callers (``inline="always"``): a compiled call
passes every array of its records (the workspace alone has tens) as flattened scalars and
counts their references, which in a step of four stages cost more than the arithmetic between
the articulated-body passes.  Each caller holds one copy of each (the stages run in a loop).

The momentum variable ``m`` (``spec.form``): 0 ``velocity`` m = V, ṁ = V̇ from the ABA;
1 ``spatial_momentum`` m = μ = Ad*_{h⁻¹}P, ``h = g_ref⁻¹g``, μ̇ = Ad*_{h⁻¹}F_η (LP-1), constant
without external wrenches and gravity; 2 ``body_momentum`` m = P (77), Ṗ = ad*_V P + F_η; for
1 and 2, V = M₀⁻¹(P − M₀𝔪q̇) (LP-3).  ``F_η`` is ι₀ᵀ of the total external wrench (gravity,
vehicle and frame wrenches, force elements) in the vehicle frame about its origin.

Work: ``W[0]`` integrates the power of every applied effort and wrench except gravity and the
conservative force elements (their potential is in :func:`.accounts.energy`), ``W[1]`` the
integral of its absolute value (the scale of the energy balance ``E − E₀ − W[0]``).  Status codes: 0 ok,
1 bad pose, 2 non-finite state, 3 singular locked/articulated inertia.
"""
from __future__ import annotations

import numpy as np

from ..control.laws import computed_torque_stage, law_work
from ..dynamics.fast.kernels.aba import aba_core
from ..dynamics.fast.kernels.algebra import coad, dexp_inv_apply, mul4, orthonormalize, se3_exp
from ..dynamics.fast.kernels.coupling import couple
from ..dynamics.fast.kernels.hybrid import hybrid_core
from ..dynamics.fast.kernels.jit import OPT, njit
from ..dynamics.fast.kernels.kinematics import kinematics, velocities
from ..dynamics.fast.kernels.momentum import kinematics_momentum, velocity_from_momentum
from .borrow import borrowed
from .combine import finite_state, weighted
from .packed import from_table
from .rates import applied_wrenches, momentum_rate, power
from .records import EngineState, PrescribedRows, Rates, Stage, StageInputs
from .resume import keep, resumable, views
from .resume import work as _work

__all__ = ["stage_begin", "stage_advance", "engine_step", "engine_step_packed", "engine_rollout", "engine_rollout_law",
           "engine_stage_state", "engine_stage"]


@njit(inline="always", **OPT)
def _stage_velocity(C, form, s, wk):
    """Kinematics at ``s.q`` and the vehicle velocity ``s.V`` of the stage state (LP-3); the
    momentum terms (``sc.Ic0``, ``sc.hm``) only in the momentum formulations, which read them."""
    ws, sc = wk
    axes = C.axes
    b = axes.shape[0]
    m, V, six, six2 = s.m, s.V, sc.six, sc.six2
    if form == 0:
        kinematics(C, s.q, ws)
        for r in range(b):
            V[r] = m[r]
        return 0
    kinematics_momentum(C, s.q, s.qd, ws, sc.Ic0, sc.hm)
    P = sc.P
    if form == 1:                              # P = Ad*_h μ
        for r in range(6):
            six[r] = 0.0
        for r in range(b):
            six[axes[r]] = m[r]
        coad(s.h, six, six2, False)
        for r in range(b):
            P[r] = six2[axes[r]]
    else:
        for r in range(b):
            P[r] = m[r]
    if not velocity_from_momentum(C, P, sc.Ic0, sc.hm, ws.K, s.V):
        return 3
    return 0


@njit(inline="always", **OPT)
def _stage_rates(C, F, spec, s, qdd_p, inp, rates, wk):
    """Rates of the stage state after :func:`_stage_velocity`: ``ṁ`` (by ``spec.form``), ``q̈``
    (ABA, or ``qdd_p`` if ``spec.presc``) and the power of the applied inputs."""
    ws, sc = wk
    axes = C.axes
    b = axes.shape[0]
    n = s.q.shape[0]
    ncons = F.spring.body.shape[0] + F.two_body.body.shape[0]
    applied_wrenches(C, F, ncons, s, inp, wk)
    Ic0, gloc, ext, f6, qdd, out = sc.Ic0, sc.gloc, sc.ext, sc.force, rates.qdd, sc.acc_out
    if spec.form != 0:       # F_η (6-vector): gravity on the composite rigid body + all wrenches
        for r in range(6):
            f = Ic0[r, 0] * gloc[0] + Ic0[r, 1] * gloc[1] + Ic0[r, 2] * gloc[2]
            for k in range(n + 1):
                f += ext[k, r]
            f6[r] = f
    if spec.presc:
        velocities(C, s.V, s.qd, ws)
        for j in range(n):
            qdd[j] = qdd_p[j]
    else:   # driven joints (spec.driven): q̈ = qdd_p there, their efforts into inp.tau (.driven)
        st = aba_core(C, sc.gloc, s.V, s.qd, inp.tau, sc.ext, out, ws) if spec.driven.shape[0] == 0 \
            else hybrid_core(C, sc.gloc, s.V, s.qd, inp.tau, qdd_p, spec.driven, sc.ext, out, inp.tau, ws)
        if st != 0:
            return st
        if C.coupling.shape[0] > 0:            # mimic joints: project onto the coupling
            st = couple(C, s.q, sc.acc_out)
            if st != 0:
                return st
        for j in range(n):
            qdd[j] = out[b + j]
    dm = rates.dm
    momentum_rate(C, spec.form, s, dm, wk)
    power(spec.presc, ncons, s, inp, rates, wk)
    for r in range(b):
        if not np.isfinite(dm[r]):
            return 2
    for j in range(n):
        if not np.isfinite(qdd[j]):
            return 2
    return 0


@njit(inline="always", **OPT)
def _stage_state(wk):
    """The stage state held in the scratch."""
    sc = wk.sc
    return Stage(sc.pose, sc.rel, sc.ms, sc.qs, sc.qds, sc.Vs)


@njit(inline="always", **OPT)
def _stage_point(spec, tab, i, x, pr, sc):
    """The state of stage ``i`` from ``x`` and the slopes of the earlier stages (``Θ_i = dt Σ_j
    a_ij K_j``, …) and its pose ``g exp(ι₀Θ_i)``, ``rel = g_ref⁻¹ g exp(ι₀Θ_i)`` (read by the
    spatial momentum only: not formed otherwise), in the scratch.  Stage 0 (``Θ_0 = 0``, no
    earlier slopes) is ``x`` itself: its pose is copied (``exp(0) = I`` would give the same
    numbers)."""
    b = sc.ms.shape[0]
    n = x.q.shape[0]
    dt, presc = spec.dt, spec.presc
    a = tab.a[i]
    KT, Km, Kq, Kqd = sc.KT, sc.Km, sc.Kq, sc.Kqd
    Th, t6, ms, qs, qds = sc.neg_theta, sc.theta, sc.ms, sc.qs, sc.qds
    m, q, qd, pq, pqd = x.m, x.q, x.qd, pr.q, pr.qd
    for r in range(6):
        acc = weighted(a, KT, i, r)
        Th[r] = -dt * acc                      # −Θ (the argument of dexp⁻¹ in stage_end)
        t6[r] = dt * acc
    for r in range(b):
        ms[r] = m[r] + dt * weighted(a, Km, i, r)
    for r in range(n):
        if presc:
            qs[r] = pq[i, r]
            qds[r] = pqd[i, r]
        else:
            qs[r] = q[r] + dt * weighted(a, Kq, i, r)
            qds[r] = qd[r] + dt * weighted(a, Kqd, i, r)
    if i == 0:
        for r in range(4):
            for c in range(4):
                sc.pose[r, c] = x.g[r, c]
        if spec.form == 1:
            mul4(spec.gri, x.g, sc.rel)
        return
    se3_exp(sc.theta, sc.exp)
    mul4(x.g, sc.exp, sc.pose)
    if spec.form == 1:      # rel is read by the spatial momentum only
        mul4(spec.gri, x.g, sc.rel_k)
        mul4(sc.rel_k, sc.exp, sc.rel)


@njit(inline="always", **OPT)
def _stage_begin(C, spec, tab, i, x, pr, wk):
    """Stage ``i`` of an RKMK step from the state ``x``: :func:`_stage_point`, then its
    kinematics and velocity (LP-3), in the scratch (:func:`_stage_state`)."""
    _stage_point(spec, tab, i, x, pr, wk.sc)
    return _stage_velocity(C, spec.form, _stage_state(wk), wk)


@njit(inline="always", **OPT)
def _stage_resume(spec, tab, x, pr, wk):
    """Stage 0 of the step from ``x`` right after the :func:`_stage_finish` that wrote ``x``
    (a rollout's next step, no prescribed motion): the stage state is ``x``, and its
    kinematics, momentum terms and velocity, which :func:`_stage_begin` would compute again
    from the same numbers, are the finish's, still in the workspace.  Leaves what
    :func:`_stage_begin` leaves, bit for bit."""
    sc = wk.sc
    _stage_point(spec, tab, 0, x, pr, sc)
    for r in range(x.V.shape[0]):
        sc.Vs[r] = x.V[r]


@njit(inline="always", **OPT)
def _stage_end(C, F, spec, i, pr, inp, wk):
    """Rates of the stage state left by :func:`_stage_begin` with the inputs ``inp``, stored as
    the stage's slopes (row ``i`` of ``Θ̇, ṁ, q̇, q̈`` and the power)."""
    sc = wk.sc
    axes = C.axes
    b = axes.shape[0]
    s = _stage_state(wk)
    st = _stage_rates(C, F, spec, s, pr.qdd[i], inp, Rates(sc.theta, sc.Km[i], sc.Kqd[i],
                                                            sc.KW[i]), wk)
    if st != 0:
        return st
    six, t6, KT, Kq, V, qd = sc.six, sc.theta, sc.KT, sc.Kq, s.V, s.qd
    for r in range(6):
        six[r] = 0.0
    for r in range(b):
        six[axes[r]] = V[r]
    if i == 0:              # Θ_0 = 0 and dexp⁻¹_0 = I (the same slope, up to the sign of a zero)
        for r in range(6):
            t6[r] = six[r]
    else:
        dexp_inv_apply(sc.neg_theta, six, t6)
    for r in range(6):
        KT[i, r] = 0.0
    for r in range(b):
        KT[i, axes[r]] = t6[axes[r]]           # Θ̇ ∈ 𝔥 (exact: 𝔥 is a subalgebra)
    for r in range(qd.shape[0]):
        Kq[i, r] = qd[r]
    return 0


@njit(inline="always", **OPT)
def _stage_finish(C, spec, tab, x, pr, y, wk):
    """Combine the stage slopes into the step's end state ``y``: ``g_k exp(ι₀Θ)``
    (re-orthonormalised) and ``(m, q, q̇, W) + dt Σ b_i K_i``, then V by (LP-3).  Returns a
    status code."""
    sc = wk.sc
    b = C.axes.shape[0]
    n = x.q.shape[0]
    s = tab.b.shape[0]
    dt, presc, w = spec.dt, spec.presc, tab.b
    KT, Km, Kq, Kqd, KW, t6 = sc.KT, sc.Km, sc.Kq, sc.Kqd, sc.KW, sc.theta
    for r in range(6):
        t6[r] = dt * weighted(w, KT, s, r)
    se3_exp(t6, sc.exp)
    mul4(x.g, sc.exp, y.g)
    orthonormalize(y.g)
    m, q, qd, W, ym, yq, yqd, yW = x.m, x.q, x.qd, x.W, y.m, y.q, y.qd, y.W
    pq, pqd = pr.q, pr.qd
    for r in range(b):
        ym[r] = m[r] + dt * weighted(w, Km, s, r)
    for r in range(n):
        if presc:
            yq[r] = pq[s, r]
            yqd[r] = pqd[s, r]
        else:
            yq[r] = q[r] + dt * weighted(w, Kq, s, r)
            yqd[r] = qd[r] + dt * weighted(w, Kqd, s, r)
    for r in range(2):
        yW[r] = W[r] + dt * weighted(w, KW, s, r)
    if spec.form == 1:
        mul4(spec.gri, y.g, sc.rel)
    st = _stage_velocity(C, spec.form, Stage(y.g, sc.rel, y.m, y.q, y.qd, y.V), wk)
    if st != 0:
        return st
    return finite_state(y)


@njit(inline="always", **OPT)
def _step(C, F, tab, spec, x, inp, pr, y, wk, resume):
    """One RKMK step of size ``spec.dt`` from ``x`` into ``y`` with the inputs held
    (docs/corrections.md, "Time integration").

    ``g(t) = g_k exp(ι₀Θ)``, ``Θ̇ = dexp⁻¹_{−Θ}(ι₀V)``; the vector part (m, q, q̇, W) by the
    explicit Runge–Kutta tableau ``tab``: :func:`_stage_begin` and :func:`_stage_end` for every
    stage, then :func:`_stage_finish`.  With ``spec.presc`` the joints follow the rows of
    ``pr`` and only (g, m, W) are integrated.  ``resume``: ``x`` was written by the
    :func:`_stage_finish` just before (:func:`_stage_resume`).  Returns a status code.
    """
    for i in range(tab.b.shape[0]):
        if i == 0 and resume:
            _stage_resume(spec, tab, x, pr, wk)
        else:
            st = _stage_begin(C, spec, tab, i, x, pr, wk)
            if st != 0:
                return st
        st = _stage_end(C, F, spec, i, pr, inp, wk)
        if st != 0:
            return st
    return _stage_finish(C, spec, tab, x, pr, y, wk)


@njit(_nrt=False, **OPT)
def _engine_step(C, F, tab, spec, x, inp, pr, y, wk, resume):
    """:func:`_step` compiled as one function (a single step: :func:`_resumed_step`).

    Compiled without numba's reference counting (``_nrt=False``): every array it reads is
    borrowed from its caller's entry point (:mod:`.borrow`), which holds them for the call,
    and it allocates nothing; counted, the inlined stages would call the counter once per
    array of every record they unpack."""
    return _step(C, F, tab, spec, x, inp, pr, y, wk, resume)


@njit(inline="always", **OPT)
def _row(X, k):
    """Row ``k`` of a trajectory record."""
    return EngineState(X.g[k], X.m[k], X.q[k], X.qd[k], X.V[k], X.W[k])


@njit(**OPT)
def engine_rollout(C, F, tab, spec, x, inp, PR, X, buf):
    """``len(X.g)`` steps of :func:`engine_step` from ``x`` with the same held inputs, looped in
    compiled code (each step after the first starts from the stage its predecessor's finish
    left: :func:`_stage_resume`); step k writes row k of the trajectory ``X``.  With
    ``spec.presc``, block k of ``PR`` holds the prescribed rows of step k.  Returns (status,
    number of steps completed)."""
    C, F, tab, spec, x, inp, PR, X = borrowed((C, F, tab, spec, x, inp, PR, X))
    wk = views(C, buf)
    last = wk.sc.last
    resume = resumable(spec, x, last)
    last[last.shape[0] - 1] = 0.0
    st, k = _rollout_steps(C, F, tab, spec, x, inp, PR, X, wk, resume)
    if st == 0 and k > 0:
        keep(spec, _row(X, k - 1), last)
    return st, k


@njit(_nrt=False, **OPT)
def _rollout_steps(C, F, tab, spec, x, inp, PR, X, wk, resume):
    """The steps of :func:`engine_rollout`: (status, number of steps completed).

    :func:`_step` is inlined into the loop: called instead, every step would pass every array
    of the records (the workspace alone has tens) as flattened arguments, about 6 % of a UR5
    step.  Compiled without reference counting, as :func:`_engine_step`."""
    steps = X.g.shape[0]
    for k in range(steps):
        kp = k if spec.presc else 0
        pr = PrescribedRows(PR.q[kp], PR.qd[kp], PR.qdd[kp])
        xk = x if k == 0 else _row(X, k - 1)
        st = _step(C, F, tab, spec, xk, inp, pr, _row(X, k), wk, resume)
        if st != 0:
            return st, k
        resume = not spec.presc                 # this finish computed the next first stage
    return 0, steps


@njit(**OPT)
def engine_rollout_law(C, F, tab, spec, TS, x, law, X, out, buf):
    """``len(X.g)`` RKMK steps whose joint efforts and base wrench come from the compiled
    ``law`` (:func:`vm_dynamics.control.laws.computed_torque_stage`, on the constants of the
    controller's own, possibly mismatched, model) evaluated at every stage state, at
    ``TS[k] + tab.c[i] dt``.  Step k writes row k of ``X`` and of ``out`` (a
    :class:`~.records.LawOutputs`: the inputs of its first stage, the law at the state the
    step starts from).  Returns (status, number of steps completed).

    The records are borrowed (:mod:`.borrow`); the law's work and the stage inputs are
    allocated here, once, for :func:`_law_steps`."""
    C, F, tab, spec, TS, x, law, X, out = borrowed((C, F, tab, spec, TS, x, law, X, out))
    wk = _work(C, buf)
    n = x.q.shape[0]                    # joints of the integrated state (the tree's)
    tau_r, bw = np.empty(law.first.shape[0]), np.empty(C.axes.shape[0])
    lw = law_work(law, C)               # the law's work, its kinematics shared where equal
    nop = np.zeros((tab.b.shape[0] + 1, n))
    inp = StageInputs(np.zeros(n), bw, np.zeros(6), np.zeros(0, dtype=np.int64),
                      np.zeros((0, 6)))
    return _law_steps(C, F, tab, spec, TS, x, law, X, out, wk, inp,
                      PrescribedRows(nop, nop, nop), tau_r, lw)


@njit(_nrt=False, **OPT)
def _law_steps(C, F, tab, spec, TS, x, law, X, out, wk, inp, pr, tau_r, lw):
    """The steps of :func:`engine_rollout_law` on the work its caller allocated: the stage
    inputs ``inp`` (``inp.tau`` on the tree's joints, ``inp.bw`` the law's base wrench), the
    law's efforts on the model's joints ``tau_r`` and its work ``lw``.  Returns (status,
    number of steps completed).

    Compiled without reference counting (``_nrt=False``, as :func:`_engine_step`): every
    array is its caller's, held for the call; counted, every field the inlined law reads of
    its work and every record the inlined stages unpack would update a count."""
    sc = wk.sc
    b = C.axes.shape[0]
    n = x.q.shape[0]
    masters = C.masters
    tau, bw = inp.tau, inp.bw
    nr = tau_r.shape[0]
    pose, Vs, qs, qds = sc.pose, sc.Vs, sc.qs[:n], sc.qds[:n]
    stages, c, dt, out_tau, out_bw = tab.b.shape[0], tab.c, spec.dt, out.tau, out.bw
    plant_Ic = spec.form != 0      # the momentum forms need sc.Ic0 at every stage: it is there
    for k in range(X.g.shape[0]):
        xk = x if k == 0 else _row(X, k - 1)
        for i in range(stages):
            if i == 0 and k > 0:                # the finish of step k − 1 computed stage 0
                _stage_resume(spec, tab, xk, pr, wk)
            else:
                st = _stage_begin(C, spec, tab, i, xk, pr, wk)
                if st != 0:
                    return st, k
            # the law's efforts on the tree's joints (the masters with mimic joints)
            st = computed_torque_stage(law, F, TS[k] + c[i] * dt, pose, Vs, qs, qds, tau_r, bw,
                                       lw, wk.ws, sc.Ic0, plant_Ic)
            if st != 0:
                return st, k
            if masters.shape[0] > 0:
                for j in range(nr):
                    tau[masters[j]] = tau_r[j]
            else:
                for j in range(n):
                    tau[j] = tau_r[j]
            if i == 0:
                for j in range(nr):
                    out_tau[k, j] = tau_r[j]
                for r in range(b):
                    out_bw[k, r] = bw[r]
            st = _stage_end(C, F, spec, i, pr, inp, wk)
            if st != 0:
                return st, k
        st = _stage_finish(C, spec, tab, xk, pr, _row(X, k), wk)
        if st != 0:
            return st, k
    return 0, X.g.shape[0]


@njit(**OPT)
def _at_increment(spec, g, Theta, s, wk):
    """``s.g = g exp(ι₀Θ)`` and ``s.h = g_ref⁻¹ s.g``."""
    se3_exp(Theta, wk.sc.exp)
    mul4(g, wk.sc.exp, s.g)
    mul4(spec.gri, s.g, s.h)


# entry points: the one buffer instead of the Work views; the records borrowed (.borrow)
@njit(**OPT)
def stage_begin(C, spec, tab, i, x, pr, buf):
    """``_stage_begin``: the stage state is then in the scratch (``sc.pose, Vs, qs, qds``)."""
    C, spec, tab, x, pr = borrowed((C, spec, tab, x, pr))
    return _stage_begin(C, spec, tab, i, x, pr, _work(C, buf))


@njit(**OPT)
def stage_advance(C, F, spec, tab, i, x, pr, inp, y, buf):
    """``_stage_end`` of stage ``i`` with the inputs ``inp``, then ``_stage_begin`` of stage
    ``i + 1`` (as :func:`stage_begin`), or after the last ``_stage_finish`` into ``y``: the
    per-stage driver's one call between two calls of its callable.  A status code."""
    C, F, spec, tab, x, pr, inp, y = borrowed((C, F, spec, tab, x, pr, inp, y))
    wk = _work(C, buf)
    st = _stage_end(C, F, spec, i, pr, inp, wk)
    if st != 0:
        return st
    if i + 1 < tab.b.shape[0]:
        return _stage_begin(C, spec, tab, i + 1, x, pr, wk)
    return _stage_finish(C, spec, tab, x, pr, y, wk)


@njit(inline="always", **OPT)
def _resumed_step(C, F, tab, spec, x, inp, pr, y, wk):
    """:func:`_engine_step`, its first stage taken from the workspace if the step or rollout
    before left it there (:func:`.resume.resumable`), and recorded there for the next."""
    last = wk.sc.last
    resume = resumable(spec, x, last)
    last[last.shape[0] - 1] = 0.0
    st = _engine_step(C, F, tab, spec, x, inp, pr, y, wk, resume)
    if st == 0:
        keep(spec, y, last)
    return st


@njit(**OPT)
def engine_step(C, F, tab, spec, x, inp, pr, y, buf):
    """One whole RKMK step in one call (:func:`_resumed_step`)."""
    C, F, tab, spec, x, inp, pr, y = borrowed((C, F, tab, spec, x, inp, pr, y))
    return _resumed_step(C, F, tab, spec, x, inp, pr, y, views(C, buf))


@njit(**OPT)
def engine_step_packed(table, tref, parity, spec, inp, pr):
    """:func:`engine_step` with the records that stay the same between steps in one pointer
    table (:mod:`.packed`): ``((C, F, tab, wk), a, b)``, the step from state ``a`` into ``b``
    if ``parity`` is 0, else from ``b`` into ``a``."""
    (C, F, tab, wk), a, b = from_table(table, tref)
    spec, inp, pr = borrowed((spec, inp, pr))
    if parity == 0:
        return _resumed_step(C, F, tab, spec, a, inp, pr, b, wk)
    return _resumed_step(C, F, tab, spec, b, inp, pr, a, wk)


@njit(**OPT)
def engine_stage_state(C, spec, g, Theta, s, buf):
    """The pose ``s.g = g exp(ι₀Θ)`` and velocity ``s.V`` of the stage state ``(s.m, s.q,
    s.qd)`` (for a controller called at the stage).  Returns a status code."""
    wk = _work(C, buf)
    _at_increment(spec, g, Theta, s, wk)
    return _stage_velocity(C, spec.form, s, wk)


@njit(**OPT)
def engine_stage(C, F, spec, g, Theta, s, qdd_p, inp, rates, buf):
    """All rates of one stage state ``(g exp(ι₀Θ), s.m, s.q, s.qd)`` with given inputs:
    ``Θ̇`` (6-vector, zero off 𝔥), ``ṁ``, ``q̈``, the power and the velocity ``s.V``."""
    wk = _work(C, buf)
    sc = wk.sc
    b = C.axes.shape[0]
    _at_increment(spec, g, Theta, s, wk)
    st = _stage_velocity(C, spec.form, s, wk)
    if st != 0:
        return st
    st = _stage_rates(C, F, spec, s, qdd_p, inp, rates, wk)
    if st != 0:
        return st
    for r in range(6):
        sc.six[r] = 0.0
        sc.theta[r] = -Theta[r]
    for r in range(b):
        sc.six[C.axes[r]] = s.V[r]
    dexp_inv_apply(sc.theta, sc.six, sc.six2)
    for r in range(6):
        rates.dTheta[r] = 0.0
    for r in range(b):
        rates.dTheta[C.axes[r]] = sc.six2[C.axes[r]]
    return 0
