"""Compiled kernels of the simulation engine (:class:`vm_dynamics.engine.Simulator`).

One call of :func:`engine_step` is one whole RKMK step: every stage (kinematics, the velocity
from the momentum variable, the environment, the articulated-body algorithm, ``dexp⁻¹``) and the
group update, with no Python in between.  :func:`engine_stage_state` and :func:`engine_stage`
are the same stage split in two, for the driver that calls a Python controller at every stage.
Without numba the same functions run as plain Python (see ``_numba_kernels.NUMBA``).

Constants (tuples built once per model by :mod:`vm_dynamics.engine`):

* ``C = (parent, jtype, xi, inert, rootx, axes, grav)`` — the arrays of
  :class:`~vm_dynamics.fast.FastModel`;
* ``E = (hydro, lin, quad, buoy, cob, current, up, lb_body, lb_point, lb_force)`` — the
  environment: ``hydro`` 1 if the vehicle has Fossen damping/buoyancy (paper 004 §3.3:
  ``−(D_lin + D_quad|ν|)ν`` with ``ν = V − [Rᵀc; 0]`` for a current ``c``, and the buoyancy
  ``B Rᵀ up`` at ``cob``), and per arm link ``i`` a buoyancy force ``lb_force[i]`` along ``up`` at
  the point ``lb_point[i]`` (vehicle frame, home configuration) of body ``lb_body[i]``.

The momentum variable ``m`` of the vector state (``form``):
0 ``velocity`` m = V, ṁ = V̇ from the ABA;
1 ``spatial_momentum`` m = μ = Ad*_{h⁻¹}P, ``h = g_ref⁻¹g``, μ̇ = Ad*_{h⁻¹}F_η (LP-1): μ is
constant without external wrenches and gravity, so momentum is conserved to rounding;
2 ``body_momentum`` m = P (77), Ṗ = ad*_V P + F_η (LP-1);
for 1 and 2, V = M₀⁻¹(P − M₀𝔪q̇) (LP-3).  ``F_η`` is ι₀ᵀ of the total external wrench
(gravity, vehicle and frame wrenches, environment) in the vehicle frame about its origin.

Work: ``W[0]`` integrates the power of every applied effort and wrench except gravity
(``τ·q̇ + Σ_k w_k·v_k``), ``W[1]`` the integral of its absolute value; the node's energy guard
checks ``E − E₀ − W[0]`` against a scale containing ``W[1]``.

Status codes: 0 ok, 1 bad pose, 2 non-finite state, 3 singular locked/articulated inertia.
"""
from __future__ import annotations

import numpy as np

from ._numba_kernels import (_OPT, _aba_core, _add_external, _check_pose, _coad, _cross,
                             _kinematics, _momentum_terms, _velocities, _velocity_from_momentum,
                             _workspace, dexp_inv_apply, njit, se3_exp)


@njit(**_OPT)
def engine_scratch(b, n, s):
    """Per-simulator work arrays (allocated once; the step allocates nothing else of size n)."""
    return (np.zeros((n + 1, 6)),          # 0 ext: external wrench per body
            np.empty((6, 6)), np.empty(6),  # 1 Ic0, 2 hm
            np.empty((4, 4)), np.empty((4, 4)), np.empty((4, 4)),   # 3 gs, 4 g_s, 5 h_s
            np.empty(3), np.empty(6), np.empty(6), np.empty(6),       # 6 gloc, 7-9 six-vectors
            np.empty((s, 6)), np.empty((s, b)), np.empty((s, n)), np.empty((s, n)),
            np.empty((s, 2)),                                          # 10-14 stage slopes
            np.empty(6), np.empty(b), np.empty(n), np.empty(n),        # 15 Θ, 16 m, 17 q, 18 q̇
            np.empty(b + n), np.empty(b), np.empty(2), np.empty(6),     # 19 out, 20 V, 21 pw, 22
            np.empty(b), np.empty((4, 4)))                             # 23 P, 24 h_k


@njit(**_OPT)
def _mul4(A, B, out):
    for r in range(4):
        for c in range(4):
            out[r, c] = A[r, 0] * B[0, c] + A[r, 1] * B[1, c] + A[r, 2] * B[2, c] \
                + A[r, 3] * B[3, c]


@njit(**_OPT)
def _orthonormalize(g):
    """One Newton–Schulz step ``R ← R(3I − RᵀR)/2`` (removes round-off drift of RᵀR − I)."""
    RtR = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            RtR[r, c] = g[0, r] * g[0, c] + g[1, r] * g[1, c] + g[2, r] * g[2, c]
    Rn = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            s = 0.0
            for k in range(3):
                s += g[r, k] * ((1.5 if k == c else 0.0) - 0.5 * RtR[k, c])
            Rn[r, c] = s
    for r in range(3):
        for c in range(3):
            g[r, c] = Rn[r, c]


@njit(**_OPT)
def _environment(E, axes, R, V, Rw, Pw, ext, w6):
    """Add the environment's wrenches at a stage to ``ext`` (vehicle frame, about its origin):
    hydrodynamic damping and buoyancy of the vehicle, buoyancy of the arm links."""
    hydro, lin, quad, buoy, cob, cur, up = E[0], E[1], E[2], E[3], E[4], E[5], E[6]
    lb_body, lb_point, lb_force = E[7], E[8], E[9]
    # up in vehicle axes
    u0 = R[0, 0] * up[0] + R[1, 0] * up[1] + R[2, 0] * up[2]
    u1 = R[0, 1] * up[0] + R[1, 1] * up[1] + R[2, 1] * up[2]
    u2 = R[0, 2] * up[0] + R[1, 2] * up[1] + R[2, 2] * up[2]
    if hydro:
        for r in range(6):
            w6[r] = 0.0
        for i in range(axes.shape[0]):
            w6[axes[i]] = V[i]
        for r in range(3):
            w6[r] -= R[0, r] * cur[0] + R[1, r] * cur[1] + R[2, r] * cur[2]
        for r in range(6):
            ext[0, r] -= (lin[r] + quad[r] * abs(w6[r])) * w6[r]
        f0, f1, f2 = buoy * u0, buoy * u1, buoy * u2
        x0, x1, x2 = _cross(cob[0], cob[1], cob[2], f0, f1, f2)
        ext[0, 0] += f0
        ext[0, 1] += f1
        ext[0, 2] += f2
        ext[0, 3] += x0
        ext[0, 4] += x1
        ext[0, 5] += x2
    for i in range(lb_body.shape[0]):
        k = lb_body[i]
        c = lb_point[i]
        p0 = Rw[k, 0, 0] * c[0] + Rw[k, 0, 1] * c[1] + Rw[k, 0, 2] * c[2] + Pw[k, 0]
        p1 = Rw[k, 1, 0] * c[0] + Rw[k, 1, 1] * c[1] + Rw[k, 1, 2] * c[2] + Pw[k, 1]
        p2 = Rw[k, 2, 0] * c[0] + Rw[k, 2, 1] * c[1] + Rw[k, 2, 2] * c[2] + Pw[k, 2]
        F = lb_force[i]
        x0, x1, x2 = _cross(p0, p1, p2, F * u0, F * u1, F * u2)
        ext[k, 0] += F * u0
        ext[k, 1] += F * u1
        ext[k, 2] += F * u2
        ext[k, 3] += x0
        ext[k, 4] += x1
        ext[k, 5] += x2


@njit(**_OPT)
def _stage_velocity(C, form, g_s, h_s, m, q, qd, ws, sc, V):
    """Kinematics at ``q`` and the vehicle velocity V of the stage state (LP-3)."""
    parent, jtype, xi, inert, rootx, axes, grav = C
    Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs = ws
    Ic0, hm, six = sc[1], sc[2], sc[7]
    b = axes.shape[0]
    _kinematics(parent, jtype, xi, inert, q, Rw, Pw, S, IA)
    _momentum_terms(parent, axes, qd, S, IA, vel, cacc, Ic0, hm)
    if form == 0:
        for r in range(b):
            V[r] = m[r]
        return 0
    P = sc[23]
    if form == 1:                              # P = Ad*_h μ
        for r in range(6):
            six[r] = 0.0
        for r in range(b):
            six[axes[r]] = m[r]
        _coad(h_s, six, sc[8], False)
        for r in range(b):
            P[r] = sc[8][axes[r]]
    else:
        for r in range(b):
            P[r] = m[r]
    if not _velocity_from_momentum(axes, P, Ic0, rootx, hm, K, V):
        return 3
    return 0


@njit(**_OPT)
def _stage_rates(C, E, form, presc, g_s, h_s, m, q, qd, qdd_p, V, tau, bw, bwi, fw_body, fw,
                 ws, sc, dm, qdd, pw):
    """Rates of the stage state after :func:`_stage_velocity`: ``ṁ`` (by ``form``), ``q̈``
    (ABA, or ``qdd_p`` if ``presc``) and the power ``pw = (P, |P|)`` of the applied inputs."""
    parent, jtype, xi, inert, rootx, axes, grav = C
    Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs = ws
    ext, Ic0, gloc, w6, f6, out = sc[0], sc[1], sc[6], sc[7], sc[9], sc[19]
    b = axes.shape[0]
    n = q.shape[0]
    for c in range(3):
        gloc[c] = g_s[0, c] * grav[0] + g_s[1, c] * grav[1] + g_s[2, c] * grav[2]
    for k in range(n + 1):
        for r in range(6):
            ext[k, r] = 0.0
    _add_external(axes, bw, fw_body, fw, Rw, Pw, ext, 1.0)
    for r in range(3):                         # inertial-frame vehicle wrench → vehicle axes
        ext[0, r] += g_s[0, r] * bwi[0] + g_s[1, r] * bwi[1] + g_s[2, r] * bwi[2]
        ext[0, 3 + r] += g_s[0, r] * bwi[3] + g_s[1, r] * bwi[4] + g_s[2, r] * bwi[5]
    _environment(E, axes, g_s, V, Rw, Pw, ext, w6)
    # F_η (6-vector): gravity on the composite rigid body + all external wrenches
    if form != 0:
        for r in range(6):
            s = Ic0[r, 0] * gloc[0] + Ic0[r, 1] * gloc[1] + Ic0[r, 2] * gloc[2]
            for k in range(n + 1):
                s += ext[k, r]
            f6[r] = s
    if presc:
        _velocities(parent, S, axes, V, qd, vel, cacc)
        for j in range(n):
            qdd[j] = qdd_p[j]
    else:
        st = _aba_core(parent, rootx, axes, gloc, V, qd, tau, ext, out, S, IA, vel, cacc, pA, U,
                       aux, acc, K, rhs)
        if st != 0:
            return st
        for j in range(n):
            qdd[j] = out[b + j]
    # ṁ
    if form == 0:
        for r in range(b):
            dm[r] = out[r]
    elif form == 1:                            # μ̇ = Ad*_{h⁻¹} ι₀ᵀF
        for r in range(6):
            w6[r] = 0.0
        for r in range(b):
            w6[axes[r]] = f6[axes[r]]
        _coad(h_s, w6, sc[8], True)
        for r in range(b):
            dm[r] = sc[8][axes[r]]
    else:                                      # Ṗ = ad*_V P + F_η, ad*_V P = ad_Vᵀ P on 𝔥
        for r in range(6):
            w6[r] = 0.0
            sc[8][r] = 0.0
        for r in range(b):
            w6[axes[r]] = V[r]
            sc[8][axes[r]] = m[r]
        P = sc[8]
        a0, a1, a2 = _cross(P[0], P[1], P[2], w6[3], w6[4], w6[5])     # f × ω
        c0, c1, c2 = _cross(P[0], P[1], P[2], w6[0], w6[1], w6[2])     # f × v
        d0, d1, d2 = _cross(P[3], P[4], P[5], w6[3], w6[4], w6[5])     # n × ω
        adP = (a0, a1, a2, c0 + d0, c1 + d1, c2 + d2)
        for r in range(b):
            dm[r] = adP[axes[r]] + f6[axes[r]]
    # power of the applied inputs (gravity excluded: it is in the potential energy)
    pj = 0.0
    if not presc:
        for j in range(n):
            pj += tau[j] * qd[j]
    pe = 0.0
    for k in range(n + 1):
        for r in range(6):
            pe += ext[k, r] * vel[k, r]
    pw[0] = pj + pe
    pw[1] = abs(pj) + abs(pe)
    for r in range(b):
        if not np.isfinite(dm[r]):
            return 2
    for j in range(n):
        if not np.isfinite(qdd[j]):
            return 2
    return 0


@njit(**_OPT)
def stage_begin(C, form, presc, gri, tab_a, dt, i, g, m, q, qd, pq, pqd, ws, sc):
    """Stage ``i`` of an RKMK step from ``(g, m, q, q̇)``: the stage state from the slopes of
    the earlier stages (``Θ_i = dt Σ_j a_ij K_j``, …), its pose ``g exp(ι₀Θ_i)`` (``sc[4]``) and
    velocity V (LP-3, ``sc[20]``); q, q̇ of the stage in ``sc[17]``, ``sc[18]``."""
    axes = C[5]
    b = axes.shape[0]
    n = q.shape[0]
    gs, g_s, h_s = sc[3], sc[4], sc[5]
    KT, Km, Kq, Kqd = sc[10], sc[11], sc[12], sc[13]
    Th, ms, qs, qds, Vs, t6 = sc[15], sc[16], sc[17], sc[18], sc[20], sc[22]
    for r in range(6):
        acc = 0.0
        for j in range(i):
            acc += tab_a[i, j] * KT[j, r]
        Th[r] = -dt * acc                     # −Θ (the argument of dexp⁻¹ in stage_end)
        t6[r] = dt * acc
    for r in range(b):
        acc = 0.0
        for j in range(i):
            acc += tab_a[i, j] * Km[j, r]
        ms[r] = m[r] + dt * acc
    for r in range(n):
        if presc:
            qs[r] = pq[i, r]
            qds[r] = pqd[i, r]
        else:
            a1 = 0.0
            a2 = 0.0
            for j in range(i):
                a1 += tab_a[i, j] * Kq[j, r]
                a2 += tab_a[i, j] * Kqd[j, r]
            qs[r] = q[r] + dt * a1
            qds[r] = qd[r] + dt * a2
    se3_exp(t6, gs)
    _mul4(g, gs, g_s)
    hk = sc[24]
    _mul4(gri, g, hk)
    _mul4(hk, gs, h_s)
    return _stage_velocity(C, form, g_s, h_s, ms, qs, qds, ws, sc, Vs)


@njit(**_OPT)
def stage_end(C, E, form, presc, i, qdd_p, tau, bw, bwi, fw_body, fw, ws, sc):
    """Rates of the stage state left by :func:`stage_begin` with the given inputs, stored as
    the stage's slopes (row ``i`` of ``Θ̇, ṁ, q̇, q̈`` and the power)."""
    axes = C[5]
    b = axes.shape[0]
    g_s, h_s = sc[4], sc[5]
    KT, Km, Kq, Kqd, KW = sc[10], sc[11], sc[12], sc[13], sc[14]
    Th, ms, qs, qds, Vs, six, t6 = sc[15], sc[16], sc[17], sc[18], sc[20], sc[7], sc[22]
    st = _stage_rates(C, E, form, presc, g_s, h_s, ms, qs, qds, qdd_p, Vs, tau, bw, bwi,
                      fw_body, fw, ws, sc, Km[i], Kqd[i], KW[i])
    if st != 0:
        return st
    for r in range(6):
        six[r] = 0.0
    for r in range(b):
        six[axes[r]] = Vs[r]
    dexp_inv_apply(Th, six, t6)
    for r in range(6):
        KT[i, r] = 0.0
    for r in range(b):
        KT[i, axes[r]] = t6[axes[r]]           # Θ̇ ∈ 𝔥 (exact: 𝔥 is a subalgebra)
    for r in range(qs.shape[0]):
        Kq[i, r] = qds[r]
    return 0


@njit(**_OPT)
def stage_finish(C, form, presc, gri, tab_b, dt, g, m, q, qd, W, pq, pqd, g_out, m_out, q_out,
                 qd_out, V_out, W_out, ws, sc):
    """Combine the stage slopes into the step's end state: ``g_k exp(ι₀Θ)`` (re-orthonormalised)
    and ``(m, q, q̇, W) + dt Σ b_i K_i``, then V by (LP-3).  Returns a status code."""
    axes = C[5]
    b = axes.shape[0]
    n = q.shape[0]
    s = tab_b.shape[0]
    gs, h_s, t6 = sc[3], sc[5], sc[22]
    KT, Km, Kq, Kqd, KW = sc[10], sc[11], sc[12], sc[13], sc[14]
    for r in range(6):
        acc = 0.0
        for i in range(s):
            acc += tab_b[i] * KT[i, r]
        t6[r] = dt * acc
    se3_exp(t6, gs)
    _mul4(g, gs, g_out)
    _orthonormalize(g_out)
    for r in range(b):
        acc = 0.0
        for i in range(s):
            acc += tab_b[i] * Km[i, r]
        m_out[r] = m[r] + dt * acc
    for r in range(n):
        if presc:
            q_out[r] = pq[s, r]
            qd_out[r] = pqd[s, r]
        else:
            a1 = 0.0
            a2 = 0.0
            for i in range(s):
                a1 += tab_b[i] * Kq[i, r]
                a2 += tab_b[i] * Kqd[i, r]
            q_out[r] = q[r] + dt * a1
            qd_out[r] = qd[r] + dt * a2
    for r in range(2):
        acc = 0.0
        for i in range(s):
            acc += tab_b[i] * KW[i, r]
        W_out[r] = W[r] + dt * acc
    _mul4(gri, g_out, h_s)
    st = _stage_velocity(C, form, g_out, h_s, m_out, q_out, qd_out, ws, sc, V_out)
    if st != 0:
        return st
    for r in range(4):
        for c in range(4):
            if not np.isfinite(g_out[r, c]):
                return 2
    for r in range(b):
        if not (np.isfinite(V_out[r]) and np.isfinite(m_out[r])):
            return 2
    for j in range(n):
        if not (np.isfinite(q_out[j]) and np.isfinite(qd_out[j])):
            return 2
    if not (np.isfinite(W_out[0]) and np.isfinite(W_out[1])):
        return 2
    return 0


@njit(**_OPT)
def engine_step(C, E, tab_a, tab_b, form, presc, gri, dt, g, m, q, qd, W, tau, bw, bwi,
                fw_body, fw, pq, pqd, pqdd, g_out, m_out, q_out, qd_out, V_out, W_out, ws, sc):
    """One RKMK step of size ``dt`` with the inputs held (seeds-LP §4.3).

    ``g(t) = g_k exp(ι₀Θ)``, ``Θ̇ = dexp⁻¹_{−Θ}(ι₀V)``; the vector part (m, q, q̇, W) by the
    explicit Runge–Kutta tableau ``(tab_a, tab_b)``: :func:`stage_begin` and :func:`stage_end`
    for every stage, then :func:`stage_finish`.  With ``presc`` the joints follow the rows of
    ``pq, pqd, pqdd`` (one per stage, then the end of the step) and only (g, m, W) are
    integrated.  ``gri = g_ref⁻¹`` (spatial-momentum frame).  Returns a status code.
    """
    for i in range(tab_b.shape[0]):
        st = stage_begin(C, form, presc, gri, tab_a, dt, i, g, m, q, qd, pq, pqd, ws, sc)
        if st != 0:
            return st
        st = stage_end(C, E, form, presc, i, pqdd[i], tau, bw, bwi, fw_body, fw, ws, sc)
        if st != 0:
            return st
    return stage_finish(C, form, presc, gri, tab_b, dt, g, m, q, qd, W, pq, pqd, g_out, m_out,
                        q_out, qd_out, V_out, W_out, ws, sc)


@njit(**_OPT)
def engine_stage_state(C, form, gri, g, Theta, m, q, qd, g_s, V, ws, sc):
    """The pose ``g_s = g exp(ι₀Θ)`` and velocity V of a stage state (for a controller called
    at the stage).  Returns a status code."""
    se3_exp(Theta, sc[3])
    _mul4(g, sc[3], g_s)
    _mul4(gri, g_s, sc[5])
    return _stage_velocity(C, form, g_s, sc[5], m, q, qd, ws, sc, V)


@njit(**_OPT)
def engine_stage(C, E, form, presc, gri, g, Theta, m, q, qd, qdd_p, tau, bw, bwi, fw_body, fw,
                 dTheta, dm, qdd, pw, V, ws, sc):
    """All rates of one stage state ``(g exp(ι₀Θ), m, q, q̇)`` with given inputs: ``Θ̇``
    (6-vector, zero off 𝔥), ``ṁ``, ``q̈``, the power ``pw`` and the velocity ``V``."""
    axes = C[5]
    b = axes.shape[0]
    g_s, h_s, six = sc[4], sc[5], sc[7]
    se3_exp(Theta, sc[3])
    _mul4(g, sc[3], g_s)
    _mul4(gri, g_s, h_s)
    st = _stage_velocity(C, form, g_s, h_s, m, q, qd, ws, sc, V)
    if st != 0:
        return st
    st = _stage_rates(C, E, form, presc, g_s, h_s, m, q, qd, qdd_p, V, tau, bw, bwi, fw_body,
                      fw, ws, sc, dm, qdd, pw)
    if st != 0:
        return st
    for r in range(6):
        six[r] = 0.0
        sc[22][r] = -Theta[r]
    for r in range(b):
        six[axes[r]] = V[r]
    dexp_inv_apply(sc[22], six, sc[8])
    for r in range(6):
        dTheta[r] = 0.0
    for r in range(b):
        dTheta[axes[r]] = sc[8][axes[r]]
    return 0


@njit(**_OPT)
def momentum_variable(C, form, gri, g, V, q, qd, m, ws, sc):
    """The momentum variable ``m`` of ``form`` at the state (g, V, q, q̇): V, μ = Ad*_{h⁻¹}P or
    P = M₀V + M₀𝔪q̇ (77)."""
    parent, jtype, xi, inert, rootx, axes, grav = C
    Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs = ws
    Ic0, hm, six = sc[1], sc[2], sc[7]
    b = axes.shape[0]
    if form == 0:
        for r in range(b):
            m[r] = V[r]
        return
    _kinematics(parent, jtype, xi, inert, q, Rw, Pw, S, IA)
    _momentum_terms(parent, axes, qd, S, IA, vel, cacc, Ic0, hm)
    for r in range(6):
        six[r] = 0.0
    for r in range(b):
        s = hm[axes[r]]
        for c in range(b):
            s += (Ic0[axes[r], axes[c]] + rootx[axes[r], axes[c]]) * V[c]
        six[axes[r]] = s
    if form == 2:
        for r in range(b):
            m[r] = six[axes[r]]
        return
    _mul4(gri, g, sc[5])
    _coad(sc[5], six, sc[8], True)
    for r in range(b):
        m[r] = sc[8][axes[r]]


@njit(**_OPT)
def energy(C, g, V, q, qd, ws, sc):
    """(kinetic, gravitational potential) energy: ``½Σ_k v_kᵀI_kv_k + ½VᵀM_AV`` and
    ``−aᵀ(m p_g + R_g h)`` with the total first moment h of the rigid masses."""
    parent, jtype, xi, inert, rootx, axes, grav = C
    Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs = ws
    n = q.shape[0]
    b = axes.shape[0]
    _kinematics(parent, jtype, xi, inert, q, Rw, Pw, S, IA)
    _velocities(parent, S, axes, V, qd, vel, cacc)
    T = 0.0
    h0 = 0.0
    h1 = 0.0
    h2 = 0.0
    mass = 0.0
    for k in range(n + 1):
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += IA[k, r, c] * vel[k, c]
            T += 0.5 * vel[k, r] * s
        mass += IA[k, 0, 0]
        h0 += IA[k, 5, 1]
        h1 += IA[k, 3, 2]
        h2 += IA[k, 4, 0]
    for r in range(b):
        for c in range(b):
            T += 0.5 * V[r] * rootx[axes[r], axes[c]] * V[c]
    U = 0.0
    for r in range(3):
        U -= grav[r] * (mass * g[r, 3] + g[r, 0] * h0 + g[r, 1] * h1 + g[r, 2] * h2)
    return T, U


def workspace(n):
    """The ABA workspace of ``_numba_kernels`` (compiled allocation)."""
    return _workspace(n)


@njit(**_OPT)
def engine_rollout(C, E, tab_a, tab_b, form, presc, gri, dt, g, m, q, qd, W, tau, bw, bwi,
                   fw_body, fw, PQ, PQD, PQDD, G, M, Q, QD, VV, WW, ws, sc):
    """``len(G)`` steps of :func:`engine_step` with the same held inputs, looped in compiled
    code; step k writes row k of the trajectory arrays.  With ``presc``, ``PQ[k]`` … are the
    prescribed rows of step k.  Returns (status, number of steps completed)."""
    for k in range(G.shape[0]):
        kp = k if presc else 0
        if k == 0:
            st = engine_step(C, E, tab_a, tab_b, form, presc, gri, dt, g, m, q, qd, W, tau, bw,
                             bwi, fw_body, fw, PQ[kp], PQD[kp], PQDD[kp], G[k], M[k], Q[k],
                             QD[k], VV[k], WW[k], ws, sc)
        else:
            st = engine_step(C, E, tab_a, tab_b, form, presc, gri, dt, G[k - 1], M[k - 1],
                             Q[k - 1], QD[k - 1], WW[k - 1], tau, bw, bwi, fw_body, fw, PQ[kp],
                             PQD[kp], PQDD[kp], G[k], M[k], Q[k], QD[k], VV[k], WW[k], ws, sc)
        if st != 0:
            return st, k
    return 0, G.shape[0]
