"""Compiled kernels of the simulation engine (:class:`vm_dynamics.sim.engine.Simulator`).

One call of :func:`engine_step` is one whole RKMK step: every stage (kinematics, the velocity
from the momentum variable, the environment, the articulated-body algorithm, ``dexp⁻¹``) and the
group update, with no Python in between.  :func:`engine_stage_state` and :func:`engine_stage`
are the same stage split in two, for the driver that calls a Python controller at every stage.
Without numba the same functions run as plain Python (see :data:`.jit.NUMBA`).

Constants (tuples built once per model by :mod:`vm_dynamics.sim.engine`):

* ``C = (parent, jtype, xi, inert, rootx, axes, grav)`` — the arrays of
  :class:`~vm_dynamics.dynamics.fast.FastModel`;
* ``E = (hydro, lin, quad, buoy, cob, current, up, lb_body, lb_point, lb_force, G, indep)``
  — the environment, then the mimic coupling ``q_tree = G q + c`` and its independent joints
  (empty without mimic joints; with them the simulator keeps the tree's coordinates, whose
  accelerations :func:`_couple` projects onto the coupling).
  The environment: ``hydro`` 1 if the vehicle has Fossen damping/buoyancy (paper 004 §3.3:
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

from .aba import aba_core, solve_spd
from .algebra import coad, cross, dexp_inv_apply, se3_exp
from .crba import mass_matrix
from .environment import environment_wrenches
from .jit import OPT, njit
from .kinematics import add_external, kinematics, velocities
from .laws import computed_torque
from .momentum import momentum_terms, velocity_from_momentum

_S = 4   # stage slots in the scratch (lie_euler 1, rkmk4 4; dopri5 uses the Python driver)


def buffer_size(b: int, n: int) -> int:
    """Length of the one float64 buffer holding the ABA workspace and the engine's scratch."""
    ws = (n + 1) * 9 + (n + 1) * 3 + n * 6 + (n + 1) * 36 + (n + 1) * 6 + n * 6 + (n + 1) * 6 \
        + n * 6 + n * 2 + (n + 1) * 6 + 36 + 6
    sc = (n + 1) * 6 + 36 + 6 + 3 * 16 + 3 + 3 * 6 + _S * 6 + _S * b + 2 * _S * n + _S * 2 \
        + 6 + b + 2 * n + (b + n) + b + 2 + 6 + b + 16
    return ws + sc


@njit(**OPT)
def _take(buf, o, size):
    return buf[o:o + size], o + size


@njit(**OPT)
def buffer_views(buf, b, n):
    """``(ws, sc)``: the ABA workspace of ``kernels.kinematics.workspace`` and the engine's scratch,
    as views into one buffer (passing one array per call instead of ~40 keeps the call cheap)."""
    o = 0
    a, o = _take(buf, o, (n + 1) * 9)
    Rw = a.reshape((n + 1, 3, 3))
    a, o = _take(buf, o, (n + 1) * 3)
    Pw = a.reshape((n + 1, 3))
    a, o = _take(buf, o, n * 6)
    S = a.reshape((n, 6))
    a, o = _take(buf, o, (n + 1) * 36)
    IA = a.reshape((n + 1, 6, 6))
    a, o = _take(buf, o, (n + 1) * 6)
    vel = a.reshape((n + 1, 6))
    a, o = _take(buf, o, n * 6)
    cacc = a.reshape((n, 6))
    a, o = _take(buf, o, (n + 1) * 6)
    pA = a.reshape((n + 1, 6))
    a, o = _take(buf, o, n * 6)
    U = a.reshape((n, 6))
    a, o = _take(buf, o, n * 2)
    aux = a.reshape((n, 2))
    a, o = _take(buf, o, (n + 1) * 6)
    acc = a.reshape((n + 1, 6))
    a, o = _take(buf, o, 36)
    K = a.reshape((6, 6))
    rhs, o = _take(buf, o, 6)
    ws = (Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs)
    a, o = _take(buf, o, (n + 1) * 6)
    ext = a.reshape((n + 1, 6))                          # 0 external wrench per body
    a, o = _take(buf, o, 36)
    Ic0 = a.reshape((6, 6))                              # 1
    hm, o = _take(buf, o, 6)                             # 2
    a, o = _take(buf, o, 16)
    gs = a.reshape((4, 4))                               # 3
    a, o = _take(buf, o, 16)
    g_s = a.reshape((4, 4))                              # 4 stage pose
    a, o = _take(buf, o, 16)
    h_s = a.reshape((4, 4))                              # 5
    gloc, o = _take(buf, o, 3)                           # 6
    v7, o = _take(buf, o, 6)                             # 7-9 six-vectors
    v8, o = _take(buf, o, 6)
    v9, o = _take(buf, o, 6)
    a, o = _take(buf, o, _S * 6)
    KT = a.reshape((_S, 6))                              # 10-14 stage slopes
    a, o = _take(buf, o, _S * b)
    Km = a.reshape((_S, b))
    a, o = _take(buf, o, _S * n)
    Kq = a.reshape((_S, n))
    a, o = _take(buf, o, _S * n)
    Kqd = a.reshape((_S, n))
    a, o = _take(buf, o, _S * 2)
    KW = a.reshape((_S, 2))
    Th, o = _take(buf, o, 6)                             # 15 −Θ
    ms, o = _take(buf, o, b)                             # 16 stage m
    qs, o = _take(buf, o, n)                             # 17 stage q
    qds, o = _take(buf, o, n)                            # 18 stage q̇
    out, o = _take(buf, o, b + n)                        # 19 ABA output
    Vs, o = _take(buf, o, b)                             # 20 stage V
    pw, o = _take(buf, o, 2)                             # 21
    v22, o = _take(buf, o, 6)                            # 22
    P, o = _take(buf, o, b)                              # 23
    a, o = _take(buf, o, 16)
    hk = a.reshape((4, 4))                               # 24
    sc = (ext, Ic0, hm, gs, g_s, h_s, gloc, v7, v8, v9, KT, Km, Kq, Kqd, KW, Th, ms, qs, qds,
          out, Vs, pw, v22, P, hk)
    return ws, sc


@njit(**OPT)
def _views(C, buf):
    return buffer_views(buf, C[5].shape[0], C[2].shape[0])


@njit(**OPT)
def _mul4(A, B, out):
    for r in range(4):
        for c in range(4):
            out[r, c] = A[r, 0] * B[0, c] + A[r, 1] * B[1, c] + A[r, 2] * B[2, c] \
                + A[r, 3] * B[3, c]


@njit(**OPT)
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


@njit(**OPT)
def _stage_velocity(C, form, g_s, h_s, m, q, qd, ws, sc, V):
    """Kinematics at ``q`` and the vehicle velocity V of the stage state (LP-3)."""
    parent, jtype, xi, inert, rootx, axes, grav = C
    Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs = ws
    Ic0, hm, six = sc[1], sc[2], sc[7]
    b = axes.shape[0]
    kinematics(parent, jtype, xi, inert, q, Rw, Pw, S, IA)
    momentum_terms(parent, axes, qd, S, IA, vel, cacc, Ic0, hm)
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
        coad(h_s, six, sc[8], False)
        for r in range(b):
            P[r] = sc[8][axes[r]]
    else:
        for r in range(b):
            P[r] = m[r]
    if not velocity_from_momentum(axes, P, Ic0, rootx, hm, K, V):
        return 3
    return 0


# complexity: compiled kernel: one branch per engine feature (gravity, hydrodynamics, wrenches,
# prescribed joints)
@njit(**OPT)
def _stage_rates(C, E, form, presc, g_s, h_s, m, q, qd, qdd_p, V, tau, bw, bwi, fw_body, fw,  # noqa: C901
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
    add_external(axes, bw, fw_body, fw, Rw, Pw, ext, 1.0)
    for r in range(3):                         # inertial-frame vehicle wrench → vehicle axes
        ext[0, r] += g_s[0, r] * bwi[0] + g_s[1, r] * bwi[1] + g_s[2, r] * bwi[2]
        ext[0, 3 + r] += g_s[0, r] * bwi[3] + g_s[1, r] * bwi[4] + g_s[2, r] * bwi[5]
    environment_wrenches(E, axes, g_s, V, Rw, Pw, ext, w6)
    # F_η (6-vector): gravity on the composite rigid body + all external wrenches
    if form != 0:
        for r in range(6):
            s = Ic0[r, 0] * gloc[0] + Ic0[r, 1] * gloc[1] + Ic0[r, 2] * gloc[2]
            for k in range(n + 1):
                s += ext[k, r]
            f6[r] = s
    if presc:
        velocities(parent, S, axes, V, qd, vel, cacc)
        for j in range(n):
            qdd[j] = qdd_p[j]
    else:
        st = aba_core(parent, rootx, axes, gloc, V, qd, tau, ext, out, S, IA, vel, cacc, pA, U,
                       aux, acc, K, rhs)
        if st != 0:
            return st
        if E[10].shape[0] > 0:                 # mimic joints: project onto the coupling
            st = _couple(C, E[10], q, out)
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
        coad(h_s, w6, sc[8], True)
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
        a0, a1, a2 = cross(P[0], P[1], P[2], w6[3], w6[4], w6[5])     # f × ω
        c0, c1, c2 = cross(P[0], P[1], P[2], w6[0], w6[1], w6[2])     # f × v
        d0, d1, d2 = cross(P[3], P[4], P[5], w6[3], w6[4], w6[5])     # n × ω
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


@njit(**OPT)
def _reduce_by_coupling(M, a, Gc, b, A, x):
    """``A = TᵀMT`` and ``x = TᵀM a`` for ``T = diag(I_b, G)``."""
    nt, nr = Gc.shape[0], Gc.shape[1]
    N, R = b + nt, b + nr
    MT = np.zeros((N, R))                       # M T
    Ma = np.zeros(N)                            # M a
    for i in range(N):
        s = 0.0
        for k in range(N):
            s += M[i, k] * a[k]
        Ma[i] = s
        for j in range(b):
            MT[i, j] = M[i, j]
        for j in range(nr):
            s = 0.0
            for k in range(nt):
                s += M[i, b + k] * Gc[k, j]
            MT[i, b + j] = s
    for i in range(R):
        if i < b:
            x[i] = Ma[i]
            for j in range(R):
                A[i, j] = MT[i, j]
            continue
        s = 0.0
        for k in range(nt):
            s += Gc[k, i - b] * Ma[b + k]
        x[i] = s
        for j in range(R):
            s = 0.0
            for k in range(nt):
                s += Gc[k, i - b] * MT[b + k, j]
            A[i, j] = s


@njit(**OPT)
def _couple(C, Gc, q, a):
    """Mimic joints (``q_tree = G q + c``): the unconstrained tree accelerations ``a`` of the
    articulated-body algorithm satisfy ``M a = f − h``, so the coupled ones are ``T x`` with
    ``TᵀMT x = TᵀM a`` (``T = diag(I_b, G)``: the equations of the coordinates q, the efforts
    on the masters); ``a`` is overwritten with ``[V̇; G q̈]``.  Returns a status code (3: the
    reduced mass matrix is not positive)."""
    parent, jtype, xi, inert, rootx, axes, grav = C
    b = axes.shape[0]
    nt, nr = Gc.shape[0], Gc.shape[1]
    M = np.empty((b + nt, b + nt))
    st = mass_matrix(parent, jtype, xi, inert, rootx, axes, q, M)
    if st != 0:
        return st
    A = np.empty((b + nr, b + nr))
    x = np.empty(b + nr)
    _reduce_by_coupling(M, a, Gc, b, A, x)
    if not solve_spd(A, x, b + nr):
        return 3
    for i in range(b):
        a[i] = x[i]
    for k in range(nt):
        s = 0.0
        for j in range(nr):
            s += Gc[k, j] * x[b + j]
        a[b + k] = s
    return 0


@njit(**OPT)
def _weighted(coef, K, count, r):
    """``Σ_{j < count} coef[j] K[j, r]``: a Runge–Kutta combination of stage slopes (row ``i``
    of the tableau for a stage, the weights ``b`` for the step's end)."""
    acc = 0.0
    for j in range(count):
        acc += coef[j] * K[j, r]
    return acc


@njit(**OPT)
def _stage_begin(C, form, presc, gri, tab_a, dt, i, g, m, q, qd, pq, pqd, ws, sc):
    """Stage ``i`` of an RKMK step from ``(g, m, q, q̇)``: the stage state from the slopes of
    the earlier stages (``Θ_i = dt Σ_j a_ij K_j``, …), its pose ``g exp(ι₀Θ_i)`` (``sc[4]``) and
    velocity V (LP-3, ``sc[20]``); q, q̇ of the stage in ``sc[17]``, ``sc[18]``."""
    axes = C[5]
    b = axes.shape[0]
    n = q.shape[0]
    gs, g_s, h_s = sc[3], sc[4], sc[5]
    KT, Km, Kq, Kqd = sc[10], sc[11], sc[12], sc[13]
    Th, ms, qs, qds, Vs, t6 = sc[15], sc[16], sc[17], sc[18], sc[20], sc[22]
    a = tab_a[i]
    for r in range(6):
        acc = _weighted(a, KT, i, r)
        Th[r] = -dt * acc                     # −Θ (the argument of dexp⁻¹ in stage_end)
        t6[r] = dt * acc
    for r in range(b):
        ms[r] = m[r] + dt * _weighted(a, Km, i, r)
    for r in range(n):
        if presc:
            qs[r] = pq[i, r]
            qds[r] = pqd[i, r]
        else:
            qs[r] = q[r] + dt * _weighted(a, Kq, i, r)
            qds[r] = qd[r] + dt * _weighted(a, Kqd, i, r)
    se3_exp(t6, gs)
    _mul4(g, gs, g_s)
    hk = sc[24]
    _mul4(gri, g, hk)
    _mul4(hk, gs, h_s)
    return _stage_velocity(C, form, g_s, h_s, ms, qs, qds, ws, sc, Vs)


@njit(**OPT)
def _stage_end(C, E, form, presc, i, qdd_p, tau, bw, bwi, fw_body, fw, ws, sc):
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


@njit(**OPT)
def _stage_finish(C, form, presc, gri, tab_b, dt, g, m, q, qd, W, pq, pqd, g_out, m_out, q_out,
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
        t6[r] = dt * _weighted(tab_b, KT, s, r)
    se3_exp(t6, gs)
    _mul4(g, gs, g_out)
    _orthonormalize(g_out)
    for r in range(b):
        m_out[r] = m[r] + dt * _weighted(tab_b, Km, s, r)
    for r in range(n):
        if presc:
            q_out[r] = pq[s, r]
            qd_out[r] = pqd[s, r]
        else:
            q_out[r] = q[r] + dt * _weighted(tab_b, Kq, s, r)
            qd_out[r] = qd[r] + dt * _weighted(tab_b, Kqd, s, r)
    for r in range(2):
        W_out[r] = W[r] + dt * _weighted(tab_b, KW, s, r)
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


@njit(**OPT)
def _engine_step(C, E, tab_a, tab_b, form, presc, gri, dt, g, m, q, qd, W, tau, bw, bwi,
                fw_body, fw, pq, pqd, pqdd, g_out, m_out, q_out, qd_out, V_out, W_out, ws, sc):
    """One RKMK step of size ``dt`` with the inputs held (docs/corrections.md, "Time integration").

    ``g(t) = g_k exp(ι₀Θ)``, ``Θ̇ = dexp⁻¹_{−Θ}(ι₀V)``; the vector part (m, q, q̇, W) by the
    explicit Runge–Kutta tableau ``(tab_a, tab_b)``: :func:`stage_begin` and :func:`stage_end`
    for every stage, then :func:`stage_finish`.  With ``presc`` the joints follow the rows of
    ``pq, pqd, pqdd`` (one per stage, then the end of the step) and only (g, m, W) are
    integrated.  ``gri = g_ref⁻¹`` (spatial-momentum frame).  Returns a status code.
    """
    for i in range(tab_b.shape[0]):
        st = _stage_begin(C, form, presc, gri, tab_a, dt, i, g, m, q, qd, pq, pqd, ws, sc)
        if st != 0:
            return st
        st = _stage_end(C, E, form, presc, i, pqdd[i], tau, bw, bwi, fw_body, fw, ws, sc)
        if st != 0:
            return st
    return _stage_finish(C, form, presc, gri, tab_b, dt, g, m, q, qd, W, pq, pqd, g_out, m_out,
                        q_out, qd_out, V_out, W_out, ws, sc)


@njit(**OPT)
def _engine_stage_state(C, form, gri, g, Theta, m, q, qd, g_s, V, ws, sc):
    """The pose ``g_s = g exp(ι₀Θ)`` and velocity V of a stage state (for a controller called
    at the stage).  Returns a status code."""
    se3_exp(Theta, sc[3])
    _mul4(g, sc[3], g_s)
    _mul4(gri, g_s, sc[5])
    return _stage_velocity(C, form, g_s, sc[5], m, q, qd, ws, sc, V)


@njit(**OPT)
def _engine_stage(C, E, form, presc, gri, g, Theta, m, q, qd, qdd_p, tau, bw, bwi, fw_body, fw,
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


@njit(**OPT)
def _momentum_variable(C, form, gri, g, V, q, qd, m, ws, sc):
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
    kinematics(parent, jtype, xi, inert, q, Rw, Pw, S, IA)
    momentum_terms(parent, axes, qd, S, IA, vel, cacc, Ic0, hm)
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
    coad(sc[5], six, sc[8], True)
    for r in range(b):
        m[r] = sc[8][axes[r]]


@njit(**OPT)
def _energy(C, g, V, q, qd, ws, sc):
    """(kinetic, gravitational potential) energy: ``½Σ_k v_kᵀI_kv_k + ½VᵀM_AV`` and
    ``−aᵀ(m p_g + R_g h)`` with the total first moment h of the rigid masses."""
    parent, jtype, xi, inert, rootx, axes, grav = C
    Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs = ws
    n = q.shape[0]
    b = axes.shape[0]
    kinematics(parent, jtype, xi, inert, q, Rw, Pw, S, IA)
    velocities(parent, S, axes, V, qd, vel, cacc)
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




@njit(**OPT)
def engine_rollout(C, E, tab_a, tab_b, form, presc, gri, dt, g, m, q, qd, W, tau, bw, bwi,
                   fw_body, fw, PQ, PQD, PQDD, G, M, Q, QD, VV, WW, buf):
    """``len(G)`` steps of :func:`engine_step` with the same held inputs, looped in compiled
    code; step k writes row k of the trajectory arrays.  With ``presc``, ``PQ[k]`` … are the
    prescribed rows of step k.  Returns (status, number of steps completed)."""
    ws, sc = _views(C, buf)
    for k in range(G.shape[0]):
        kp = k if presc else 0
        if k == 0:
            st = _engine_step(C, E, tab_a, tab_b, form, presc, gri, dt, g, m, q, qd, W, tau, bw,
                             bwi, fw_body, fw, PQ[kp], PQD[kp], PQDD[kp], G[k], M[k], Q[k],
                             QD[k], VV[k], WW[k], ws, sc)
        else:
            st = _engine_step(C, E, tab_a, tab_b, form, presc, gri, dt, G[k - 1], M[k - 1],
                             Q[k - 1], QD[k - 1], WW[k - 1], tau, bw, bwi, fw_body, fw, PQ[kp],
                             PQD[kp], PQDD[kp], G[k], M[k], Q[k], QD[k], VV[k], WW[k], ws, sc)
        if st != 0:
            return st, k
    return 0, G.shape[0]


@njit(**OPT)
def engine_rollout_law(C, E, tab_a, tab_b, tab_c, form, gri, dt, TS, g, m, q, qd, W, CL, li,
                       times, coef, first, last, osc, kp, kd, gd, kp6, kd6, G, M, Q, QD, VV, WW,
                       TAU, BW, buf):
    """``len(G)`` RKMK steps whose joint efforts and base wrench come from the compiled
    computed-torque law (:func:`.laws.computed_torque`) on the controller's model ``CL``
    (the constants of its own, possibly mismatched, model) evaluated at every stage state, at
    ``TS[k] + tab_c[i] dt``.  Step k writes row k of the trajectory arrays and ``TAU[k]``,
    ``BW[k]``, the inputs of its first stage (= the law at the state the step starts from).
    Returns (status, number of steps completed)."""
    ws, sc = _views(C, buf)
    b = C[5].shape[0]
    n = q.shape[0]                      # joints of the integrated state (the tree's)
    nr = first.shape[0]                 # the model's coordinates (the masters with mimics)
    indep = E[11]
    z6 = np.zeros(6)
    fwb, fw = np.zeros(0, dtype=np.int64), np.zeros((0, 6))
    tau, tau_r, bw = np.zeros(n), np.empty(nr), np.empty(b)
    nop = np.zeros((1, n))
    for k in range(G.shape[0]):
        if k == 0:
            gk, mk, qk, qdk, Wk = g, m, q, qd, W
        else:
            gk, mk, qk, qdk, Wk = G[k - 1], M[k - 1], Q[k - 1], QD[k - 1], WW[k - 1]
        for i in range(tab_b.shape[0]):
            st = _stage_begin(C, form, False, gri, tab_a, dt, i, gk, mk, qk, qdk, nop, nop, ws,
                              sc)
            if st != 0:
                return st, k
            st = computed_torque(CL, E, li, times, coef, first, last, osc, kp, kd, gd, kp6, kd6,
                                 TS[k] + tab_c[i] * dt, sc[4], sc[20], sc[17][:n],
                                 sc[18][:n], tau_r, bw)
            if st != 0:
                return st, k
            if indep.shape[0] > 0:          # efforts on the masters of the tree
                for j in range(nr):
                    tau[indep[j]] = tau_r[j]
            else:
                for j in range(n):
                    tau[j] = tau_r[j]
            if i == 0:
                for j in range(nr):
                    TAU[k, j] = tau_r[j]
                for r in range(b):
                    BW[k, r] = bw[r]
            st = _stage_end(C, E, form, False, i, nop[0], tau, bw, z6, fwb, fw, ws, sc)
            if st != 0:
                return st, k
        st = _stage_finish(C, form, False, gri, tab_b, dt, gk, mk, qk, qdk, Wk, nop, nop, G[k],
                           M[k], Q[k], QD[k], VV[k], WW[k], ws, sc)
        if st != 0:
            return st, k
    return 0, G.shape[0]


# ----------------------------------------------------------------------------- public entry points
# Each takes the one buffer of buffer_views instead of the (ws, sc) tuples.
@njit(**OPT)
def stage_begin(C, form, presc, gri, tab_a, dt, i, g, m, q, qd, pq, pqd, buf):
    ws, sc = _views(C, buf)
    return _stage_begin(C, form, presc, gri, tab_a, dt, i, g, m, q, qd, pq, pqd, ws, sc)


@njit(**OPT)
def stage_end(C, E, form, presc, i, qdd_p, tau, bw, bwi, fw_body, fw, buf):
    ws, sc = _views(C, buf)
    return _stage_end(C, E, form, presc, i, qdd_p, tau, bw, bwi, fw_body, fw, ws, sc)


@njit(**OPT)
def stage_finish(C, form, presc, gri, tab_b, dt, g, m, q, qd, W, pq, pqd, g_out, m_out, q_out,
                 qd_out, V_out, W_out, buf):
    ws, sc = _views(C, buf)
    return _stage_finish(C, form, presc, gri, tab_b, dt, g, m, q, qd, W, pq, pqd, g_out, m_out,
                         q_out, qd_out, V_out, W_out, ws, sc)


@njit(**OPT)
def engine_step(C, E, tab_a, tab_b, form, presc, gri, dt, g, m, q, qd, W, tau, bw, bwi,
                fw_body, fw, pq, pqd, pqdd, g_out, m_out, q_out, qd_out, V_out, W_out, buf):
    """One whole RKMK step in one call (:func:`_engine_step`)."""
    ws, sc = _views(C, buf)
    return _engine_step(C, E, tab_a, tab_b, form, presc, gri, dt, g, m, q, qd, W, tau, bw, bwi,
                        fw_body, fw, pq, pqd, pqdd, g_out, m_out, q_out, qd_out, V_out, W_out,
                        ws, sc)


@njit(**OPT)
def engine_stage_state(C, form, gri, g, Theta, m, q, qd, g_s, V, buf):
    ws, sc = _views(C, buf)
    return _engine_stage_state(C, form, gri, g, Theta, m, q, qd, g_s, V, ws, sc)


@njit(**OPT)
def engine_stage(C, E, form, presc, gri, g, Theta, m, q, qd, qdd_p, tau, bw, bwi, fw_body, fw,
                 dTheta, dm, qdd, pw, V, buf):
    ws, sc = _views(C, buf)
    return _engine_stage(C, E, form, presc, gri, g, Theta, m, q, qd, qdd_p, tau, bw, bwi,
                         fw_body, fw, dTheta, dm, qdd, pw, V, ws, sc)


@njit(**OPT)
def momentum_variable(C, form, gri, g, V, q, qd, m, buf):
    ws, sc = _views(C, buf)
    _momentum_variable(C, form, gri, g, V, q, qd, m, ws, sc)


@njit(**OPT)
def energy(C, g, V, q, qd, buf):
    ws, sc = _views(C, buf)
    return _energy(C, g, V, q, qd, ws, sc)
