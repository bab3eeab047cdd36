"""Forward dynamics: the articulated-body algorithm with a floating vehicle (Featherstone
2008, Table 7.1), single, ranged and batched (parallel).

Every kernel takes the model as its record ``C``
(:class:`~vm_dynamics.dynamics.fast.records.ModelConstants`), the state and input arrays, and
the recursions' workspace ``ws`` (:class:`~vm_dynamics.dynamics.fast.records.Workspace`); the
batched ones take their states as one :class:`~vm_dynamics.dynamics.fast.records.ForwardInputs`.
"""
from __future__ import annotations

import numpy as np

from .algebra import check_pose, cross
from .jit import OPT, get_num_threads, njit, prange
from .kinematics import add_external, bias, body_bias, gravity_local, kinematics, workspace

__all__ = ["solve_spd", "aba_dynamics", "aba_core", "velocity_pass", "free_joint_backward",
           "root_solve", "block_solve6",
           "forward_dynamics", "forward_dynamics_range", "forward_dynamics_batch", "num_threads"]


@njit(inline="always", **OPT)
def solve_spd(K, rhs, b):
    """Solve K x = rhs in place (rhs ← x) for the leading b×b block of the symmetric K (its
    lower triangle and diagonal are read; K is overwritten).  Returns False if K is not
    positive definite.

    Root-free LDLᵀ with reciprocal pivots: row j of L from ``a_jk = K_jk − Σ_{m<k} a_jm L_km``
    (``a_jk = L_jk d_k``, kept in the upper triangle), ``L_jk = a_jk / d_k`` by multiplying
    with the stored ``1/d_k``, ``d_j = K_jj − Σ_k a_jk L_jk``: b divisions and no square root
    (a Cholesky factor takes b roots and ~b²/2 + 2b divisions, whose latency dominates a 6×6
    solve).  Inlined into its callers, a floating vehicle's b = 6 with the size a constant so
    that the loops unroll (the same operations in the same order: the same numbers); called,
    with its loops' bounds unknown, it cost the articulated-body pass twice as much."""
    if b == 6:
        return _ldl_solve(K, rhs, 6)
    return _ldl_solve(K, rhs, b)


@njit(inline="always", **OPT)
def _adjugate3(a00, a01, a02, a11, a12, a22):
    """The adjugate (six upper entries) and the determinant of the symmetric 3×3 with the
    upper entries ``a``."""
    c00 = a11 * a22 - a12 * a12
    c01 = a02 * a12 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    c11 = a00 * a22 - a02 * a02
    c12 = a01 * a02 - a00 * a12
    c22 = a00 * a11 - a01 * a01
    return c00, c01, c02, c11, c12, c22, a00 * c00 + a01 * c01 + a02 * c02


@njit(inline="always", **OPT)
def block_solve6(K, x):
    """Solve ``K y = x`` in place (``x ← y``) for a symmetric positive definite 6×6 ``K`` (its
    upper triangle is read) by its 3×3 blocks ``[[A, B], [Bᵀ, E]]``: ``W = A⁻¹B``, the Schur
    complement ``Σ = E − BᵀW``, ``y₂ = Σ⁻¹(x₂ − BᵀA⁻¹x₁)``, ``y₁ = A⁻¹x₁ − W y₂``, both 3×3
    inverses by their adjugates.  Two divisions instead of the six pivots in series of a 6×6
    LDLᵀ: the root's solve of a floating vehicle in one compiled loop, 59 -> 42 ns.  False if
    ``K`` is not positive definite (a leading minor of A or Σ not positive)."""
    c00, c01, c02, c11, c12, c22, det = _adjugate3(K[0, 0], K[0, 1], K[0, 2], K[1, 1], K[1, 2],
                                                   K[2, 2])
    if not (K[0, 0] > 0.0 and c22 > 0.0 and det > 0.0):
        return False
    i = 1.0 / det
    a00, a01, a02, a11, a12, a22 = c00 * i, c01 * i, c02 * i, c11 * i, c12 * i, c22 * i
    b00, b01, b02 = K[0, 3], K[0, 4], K[0, 5]
    b10, b11, b12 = K[1, 3], K[1, 4], K[1, 5]
    b20, b21, b22 = K[2, 3], K[2, 4], K[2, 5]
    w00 = a00 * b00 + a01 * b10 + a02 * b20
    w01 = a00 * b01 + a01 * b11 + a02 * b21
    w02 = a00 * b02 + a01 * b12 + a02 * b22
    w10 = a01 * b00 + a11 * b10 + a12 * b20
    w11 = a01 * b01 + a11 * b11 + a12 * b21
    w12 = a01 * b02 + a11 * b12 + a12 * b22
    w20 = a02 * b00 + a12 * b10 + a22 * b20
    w21 = a02 * b01 + a12 * b11 + a22 * b21
    w22 = a02 * b02 + a12 * b12 + a22 * b22
    s00 = K[3, 3] - (b00 * w00 + b10 * w10 + b20 * w20)
    s01 = K[3, 4] - (b00 * w01 + b10 * w11 + b20 * w21)
    s02 = K[3, 5] - (b00 * w02 + b10 * w12 + b20 * w22)
    s11 = K[4, 4] - (b01 * w01 + b11 * w11 + b21 * w21)
    s12 = K[4, 5] - (b01 * w02 + b11 * w12 + b21 * w22)
    s22 = K[5, 5] - (b02 * w02 + b12 * w12 + b22 * w22)
    d00, d01, d02, d11, d12, d22, sdet = _adjugate3(s00, s01, s02, s11, s12, s22)
    if not (s00 > 0.0 and d22 > 0.0 and sdet > 0.0):
        return False
    x0, x1, x2 = x[0], x[1], x[2]
    y0 = a00 * x0 + a01 * x1 + a02 * x2
    y1 = a01 * x0 + a11 * x1 + a12 * x2
    y2 = a02 * x0 + a12 * x1 + a22 * x2
    r0 = x[3] - (b00 * y0 + b10 * y1 + b20 * y2)
    r1 = x[4] - (b01 * y0 + b11 * y1 + b21 * y2)
    r2 = x[5] - (b02 * y0 + b12 * y1 + b22 * y2)
    j = 1.0 / sdet
    z0 = j * (d00 * r0 + d01 * r1 + d02 * r2)
    z1 = j * (d01 * r0 + d11 * r1 + d12 * r2)
    z2 = j * (d02 * r0 + d12 * r1 + d22 * r2)
    x[0] = y0 - (w00 * z0 + w01 * z1 + w02 * z2)
    x[1] = y1 - (w10 * z0 + w11 * z1 + w12 * z2)
    x[2] = y2 - (w20 * z0 + w21 * z1 + w22 * z2)
    x[3], x[4], x[5] = z0, z1, z2
    return True


@njit(inline="always", **OPT)
def _ldl_solve(K, rhs, b):
    """The LDLᵀ solve of :func:`solve_spd`."""
    for j in range(b):
        for k in range(j):
            a = K[j, k]
            for m in range(k):
                a -= K[m, j] * K[k, m]
            K[k, j] = a                 # a_jk = L_jk d_k (upper triangle)
            K[j, k] = a * K[k, k]       # L_jk (K[k, k] holds 1/d_k)
        s = K[j, j]
        for k in range(j):
            s -= K[k, j] * K[j, k]
        if not s > 0.0:
            return False
        K[j, j] = 1.0 / s
    for i in range(b):                  # L y = rhs
        s = rhs[i]
        for k in range(i):
            s -= K[i, k] * rhs[k]
        rhs[i] = s
    for i in range(b - 1, -1, -1):      # Lᵀ x = D⁻¹ y
        s = rhs[i] * K[i, i]
        for k in range(i + 1, b):
            s -= K[k, i] * rhs[k]
        rhs[i] = s
    return True


@njit(**OPT)
def aba_dynamics(C, gloc, V, qd, tau, bw, fw_body, fw, out, ws):
    """The three ABA passes after :func:`.kinematics.kinematics` (``ws.IA`` holds the body
    inertias on entry and is overwritten by the articulated inertias), with the vehicle wrench
    ``bw`` and the frame wrenches ``fw`` on the bodies ``fw_body``.  ``gloc`` is the
    gravitational acceleration in vehicle axes, Rᵀa.  Writes ``[V̇; q̈]`` into ``out``; returns a
    status code (see the package docstring).  The vehicle's added inertia ``C.rootx`` (M_A)
    enters the root only: its gyroscopic wrench −ad_Vᵀ(M_A V) in p^A₀ and M_A in the root
    pivot, not the gravity term (the root acceleration ι₀V̇ − a_g acts on the rigid masses, ι₀V̇
    on M_A)."""
    ext = np.zeros((qd.shape[0] + 1, 6))
    add_external(C.axes, bw, fw_body, fw, ws.Rw, ws.Pw, ext, 1.0)
    return aba_core(C, gloc, V, qd, tau, ext, out, ws)


@njit(inline="always", **OPT)
def _bias_less_external(IA, vel, ext, pA, k):
    """``pA[k] = −ad_{v_k}ᵀ(I_k v_k) − ext[k]`` of body ``k``'s inertia in the layout of
    :func:`.kinematics.kinematics` (:func:`.kinematics.body_bias`)."""
    f0, f1, f2, f3, f4, f5 = body_bias(IA[k], vel[k])
    pA[k, 0] = f0 - ext[k, 0]
    pA[k, 1] = f1 - ext[k, 1]
    pA[k, 2] = f2 - ext[k, 2]
    pA[k, 3] = f3 - ext[k, 3]
    pA[k, 4] = f4 - ext[k, 4]
    pA[k, 5] = f5 - ext[k, 5]


@njit(inline="always", **OPT)
def velocity_pass(parent, rootx, axes, V, qd, ext, S, IA, vel, cacc, pA, rhs):
    """The first pass of the ABA, root → leaves, in one sweep: each body's twist ``vel[k]``
    (``ι₀V + Σ_{path} S_i q̇_i``), its joint's ``cacc[j] = ad_{v_parent}(S_j q̇_j)`` (as
    :func:`.kinematics.body_velocities`, the same operations) and its bias force ``pA[k]``
    (:func:`_bias_less_external`) while its twist is at hand; the added inertia's gyroscopic
    wrench −ad_Vᵀ(M_A V) on the root only if ``rootx`` has a nonzero entry (a vehicle without
    M_A skips a 6×6 product).  ``rhs``: scratch.  Inlined into :func:`aba_core` and
    :func:`.hybrid.hybrid_core`."""
    n = qd.shape[0]
    for r in range(6):
        vel[0, r] = 0.0
    for i in range(axes.shape[0]):
        vel[0, axes[i]] = V[i]
    _bias_less_external(IA, vel, ext, pA, 0)
    added = False
    for r in range(6):
        for c in range(6):
            if rootx[r, c] != 0.0:
                added = True
    if added:
        bias(rootx, vel[0], rhs)
        for r in range(6):
            pA[0, r] += rhs[r]
    for j in range(n):
        p = parent[j]
        k = j + 1
        u = qd[j]
        s0, s1, s2 = S[j, 0] * u, S[j, 1] * u, S[j, 2] * u
        s3, s4, s5 = S[j, 3] * u, S[j, 4] * u, S[j, 5] * u
        vp0, vp1, vp2 = vel[p, 0], vel[p, 1], vel[p, 2]
        vp3, vp4, vp5 = vel[p, 3], vel[p, 4], vel[p, 5]
        # ad_v W = [ω × w_v + v × w_ω ; ω × w_ω]
        a0, a1, a2 = cross(vp3, vp4, vp5, s0, s1, s2)
        b0, b1, b2 = cross(vp0, vp1, vp2, s3, s4, s5)
        c0, c1, c2 = cross(vp3, vp4, vp5, s3, s4, s5)
        cacc[j, 0] = a0 + b0
        cacc[j, 1] = a1 + b1
        cacc[j, 2] = a2 + b2
        cacc[j, 3] = c0
        cacc[j, 4] = c1
        cacc[j, 5] = c2
        vel[k, 0] = vp0 + s0
        vel[k, 1] = vp1 + s1
        vel[k, 2] = vp2 + s2
        vel[k, 3] = vp3 + s3
        vel[k, 4] = vp4 + s4
        vel[k, 5] = vp5 + s5
        _bias_less_external(IA, vel, ext, pA, k)


@njit(inline="always", **OPT)
def free_joint_backward(tau, S, IA, cacc, pA, U, aux, Ic, j, k, p):
    """One step of the ABA's backward pass over the free joint ``j`` (child body ``k``, parent
    ``p``): ``U_j = I^A_k S_j``, ``D_j = S_jᵀU_j``, ``u_j = τ_j − S_jᵀp^A_k`` (``aux[j] =
    (1/D_j, u_j)``), then ``I^A_p += I^A_k − U_j U_jᵀ/D_j`` (symmetric: the upper half
    computed, mirrored) and ``p^A_p += p^A_k + I^A_k c_j + U_j (u_j − U_jᵀc_j)/D_j``.
    ``Ic``: scratch of 6.  False if ``D_j`` is not positive.  Inlined into :func:`aba_core`
    and :func:`.hybrid.hybrid_core`."""
    Ik = IA[k]
    Sj = S[j]
    cj = cacc[j]
    D = 0.0
    Uc = 0.0
    Sp = 0.0
    for r in range(6):
        s = 0.0
        t = 0.0
        for c in range(6):
            s += Ik[r, c] * Sj[c]
            t += Ik[r, c] * cj[c]
        U[j, r] = s
        Ic[r] = t
        D += Sj[r] * s
        Uc += s * cj[r]
        Sp += Sj[r] * pA[k, r]
    if not D > 0.0:
        return False
    Dinv = 1.0 / D
    u = tau[j] - Sp
    aux[j, 0] = Dinv
    aux[j, 1] = u
    coef = (u - Uc) * Dinv
    Ip = IA[p]
    for r in range(6):
        Ur = U[j, r] * Dinv
        for c in range(r, 6):
            x = Ip[r, c] + (Ik[r, c] - Ur * U[j, c])
            Ip[r, c] = x
            Ip[c, r] = x
        pA[p, r] += pA[k, r] + Ic[r] + U[j, r] * coef
    return True


@njit(inline="always", **OPT)
def root_solve(rootx, axes, I0, gloc, pA, K, rhs):
    """The vehicle's row of the ABA: ``rhs ← (ι₀ᵀ(I^A₀ + M_A)ι₀)⁻¹ ι₀ᵀ(I^A₀ a_g − p^A₀)``
    (``gloc`` = a_g in vehicle axes; ``K``: scratch) by :func:`block_solve6` for all six axes,
    else the LDLᵀ of :func:`solve_spd`.  False if the pivot is not positive definite."""
    b = axes.shape[0]
    g0, g1, g2 = gloc[0], gloc[1], gloc[2]
    for r in range(b):
        ar = axes[r]
        rhs[r] = I0[ar, 0] * g0 + I0[ar, 1] * g1 + I0[ar, 2] * g2 - pA[0, ar]
        for c in range(b):
            K[r, c] = I0[ar, axes[c]] + rootx[ar, axes[c]]
    if b == 6:
        return block_solve6(K, rhs)
    return solve_spd(K, rhs, b)


# complexity: compiled kernel: the three ABA passes stay in one function (numba keeps the work
# arrays local)
@njit(**OPT)
def aba_core(C, gloc, V, qd, tau, ext, out, ws):  # noqa: C901
    """ABA passes with the external wrenches ``ext[k]`` (vehicle axes, about the vehicle
    origin) already summed per body; ``ws.vel`` holds the body twists on return.  The velocity
    pass and the bias forces in one sweep (:func:`velocity_pass`), the backward pass by
    :func:`free_joint_backward`."""
    parent, rootx, axes = C.parent, C.rootx, C.axes
    S, IA, vel, cacc, pA, U, aux, acc, K, rhs = ws.S, ws.IA, ws.vel, ws.cacc, ws.pA, ws.U, \
        ws.aux, ws.acc, ws.K, ws.rhs
    n = qd.shape[0]
    b = axes.shape[0]
    velocity_pass(parent, rootx, axes, V, qd, ext, S, IA, vel, cacc, pA, rhs)
    # leaves → root: articulated inertias I^A and bias forces p^A (rhs is free until the
    # root's solve below)
    for j in range(n - 1, -1, -1):
        if not free_joint_backward(tau, S, IA, cacc, pA, U, aux, rhs, j, j + 1, parent[j]):
            return 3
    # the vehicle: ι₀ᵀ I^A₀ ι₀ V̇ = ι₀ᵀ (I^A₀ a_g − p^A₀); a₀ = ι₀V̇ − a_g
    g0, g1, g2 = gloc[0], gloc[1], gloc[2]
    I0 = IA[0]
    for r in range(6):
        acc[0, r] = 0.0
    if b > 0:
        if not root_solve(rootx, axes, I0, gloc, pA, K, rhs):
            return 3
        for r in range(b):
            acc[0, axes[r]] = rhs[r]
            out[r] = rhs[r]
    acc[0, 0] -= g0
    acc[0, 1] -= g1
    acc[0, 2] -= g2
    # root → leaves: accelerations
    for j in range(n):
        k = j + 1
        p = parent[j]
        s = 0.0
        for r in range(6):
            a = acc[p, r] + cacc[j, r]
            acc[k, r] = a
            s += U[j, r] * a
        qdd = (aux[j, 1] - s) * aux[j, 0]
        for r in range(6):
            acc[k, r] += S[j, r] * qdd
        out[b + j] = qdd
    for i in range(b + n):
        if not np.isfinite(out[i]):
            return 2
    return 0


@njit(**OPT)
def forward_dynamics(C, g, V, q, qd, tau, bw, fw_body, fw, out):
    """``[V̇; q̈]`` into ``out`` at the state ``(g, V, q, q̇)`` with the efforts ``tau``, the
    vehicle wrench ``bw`` and the frame wrenches ``fw`` on the bodies ``fw_body``
    (:func:`.kinematics.add_external`); a status code."""
    if not check_pose(g):
        return 1
    ws = workspace(q.shape[0])
    gloc = np.empty(3)
    gravity_local(g, C.grav, gloc)
    kinematics(C, q, ws)
    return aba_dynamics(C, gloc, V, qd, tau, bw, fw_body, fw, out, ws)


@njit(**OPT)
def forward_dynamics_range(C, X, out, status, lo, hi):
    """``forward_dynamics`` of the states ``lo..hi-1`` of the batch ``X``
    (:class:`~vm_dynamics.dynamics.fast.records.ForwardInputs`) into the rows of ``out`` and
    ``status``, sharing one workspace (so the per-state cost carries no allocation)."""
    ws = workspace(X.q.shape[1])
    gloc = np.empty(3)
    for i in range(lo, hi):
        if not check_pose(X.g[i]):
            status[i] = 1
            continue
        gravity_local(X.g[i], C.grav, gloc)
        kinematics(C, X.q[i], ws)
        status[i] = aba_dynamics(C, gloc, X.V[i], X.qd[i], X.tau[i], X.bw[i], X.fw_body,
                                 X.fw[i], out[i], ws)


@njit(parallel=True, **OPT)
def forward_dynamics_batch(C, X, out, status, nchunk):
    """``forward_dynamics`` over the leading axis (N states) in ``nchunk`` parallel chunks."""
    N = X.q.shape[0]
    for ch in prange(nchunk):
        forward_dynamics_range(C, X, out, status, (ch * N) // nchunk, ((ch + 1) * N) // nchunk)


def num_threads() -> int:
    """Threads numba's parallel kernels use (numba.get_num_threads())."""
    return get_num_threads()
