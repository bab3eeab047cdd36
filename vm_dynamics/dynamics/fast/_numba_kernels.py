"""Numba kernels of the fast path (imported lazily, only when numba is installed).

Scalar-loop implementations of the recursions described in :mod:`vm_dynamics.dynamics.fast`; every
kernel works in the vehicle frame with the constant arrays of :class:`~vm_dynamics.dynamics.fast.FastModel`
(body index 0 is the vehicle, body ``j + 1`` is moved by joint ``j``, ``parent[j] < j + 1``).
``cache=True`` stores the compiled code next to this file (or in numba's user cache), so the
compile cost (tens of seconds for all kernels) is paid once per machine, not per process.

Status codes returned by the kernels: 0 ok, 1 ``g`` is not a rigid transform, 2 non-finite
result (a NaN/Inf input), 3 a non-positive articulated pivot (cannot happen for a valid model).
"""
from __future__ import annotations

import numpy as np

try:
    from numba import get_num_threads, njit, prange
    NUMBA = True
except ImportError:     # the same code runs as plain Python (slow; vm_dynamics.dynamics.fast uses numpy)
    NUMBA = False
    prange = range

    def njit(*args, **kwargs):
        """Stand-in for numba.njit when numba is not installed: returns the function as is."""
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

    def get_num_threads() -> int:
        return 1

_OPT = dict(cache=True, nogil=True, error_model="numpy", boundscheck=False)

_SMALL = 0.1   # |φ| below which the Taylor series of the SO(3)/SE(3) coefficients are used


# ----------------------------------------------------------------------------- small algebra
@njit(**_OPT)
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(**_OPT)
def _check_pose(g):
    """True if g is a rigid transform (same test as core.validation.as_pose)."""
    for i in range(4):
        for j in range(4):
            if not np.isfinite(g[i, j]):
                return False
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += g[k, i] * g[k, j]
            if abs(s - (1.0 if i == j else 0.0)) > 1e-6:
                return False
    det = (g[0, 0] * (g[1, 1] * g[2, 2] - g[1, 2] * g[2, 1])
           - g[0, 1] * (g[1, 0] * g[2, 2] - g[1, 2] * g[2, 0])
           + g[0, 2] * (g[1, 0] * g[2, 1] - g[1, 1] * g[2, 0]))
    if det < 0.0:
        return False
    return (abs(g[3, 0]) <= 1e-12 and abs(g[3, 1]) <= 1e-12 and abs(g[3, 2]) <= 1e-12
            and abs(g[3, 3] - 1.0) <= 1e-12)


# ----------------------------------------------------------------------------- kinematics
@njit(**_OPT)
def _kinematics(parent, jtype, xi, inert, q, Rw, Pw, S, Ib):
    """Product of exponentials (13)-(17): G_j = G_parent exp(ξ̂_j q_j) as (Rw, Pw);
    S_j = Ad_{G_parent} ξ_j (29); Ib[k] = Ad_{G_k}^{-T} 𝔐_k Ad_{G_k}^{-1} (the body inertia (55)
    at the current configuration, vehicle axes, about the vehicle origin)."""
    n = q.shape[0]
    for r in range(3):
        for c in range(3):
            Rw[0, r, c] = 1.0 if r == c else 0.0
        Pw[0, r] = 0.0
    _body_inertia(inert[0], Rw[0], Pw[0], Ib[0])
    for j in range(n):
        p = parent[j]
        k = j + 1
        Rp = Rw[p]
        pp = Pw[p]
        # ω, v of the joint twist ξ_j (vehicle frame, home)
        v0, v1, v2 = xi[j, 0], xi[j, 1], xi[j, 2]
        w0, w1, w2 = xi[j, 3], xi[j, 4], xi[j, 5]
        # S_j = Ad_{G_p} ξ_j = [R v + p × R ω; R ω]
        rw0 = Rp[0, 0] * w0 + Rp[0, 1] * w1 + Rp[0, 2] * w2
        rw1 = Rp[1, 0] * w0 + Rp[1, 1] * w1 + Rp[1, 2] * w2
        rw2 = Rp[2, 0] * w0 + Rp[2, 1] * w1 + Rp[2, 2] * w2
        rv0 = Rp[0, 0] * v0 + Rp[0, 1] * v1 + Rp[0, 2] * v2
        rv1 = Rp[1, 0] * v0 + Rp[1, 1] * v1 + Rp[1, 2] * v2
        rv2 = Rp[2, 0] * v0 + Rp[2, 1] * v1 + Rp[2, 2] * v2
        x0, x1, x2 = _cross(pp[0], pp[1], pp[2], rw0, rw1, rw2)
        S[j, 0] = rv0 + x0
        S[j, 1] = rv1 + x1
        S[j, 2] = rv2 + x2
        S[j, 3] = rw0
        S[j, 4] = rw1
        S[j, 5] = rw2
        # E = exp(ξ̂ q) (11): revolute with unit ω (Rodrigues), or prismatic (ω = 0)
        th = q[j]
        if jtype[j] == 0:
            s, c1 = np.sin(th), 1.0 - np.cos(th)
            # R_E = I + s ω~ + c1 ω~²,  ω~² = ωωᵀ - I
            E00 = 1.0 + c1 * (w0 * w0 - 1.0)
            E11 = 1.0 + c1 * (w1 * w1 - 1.0)
            E22 = 1.0 + c1 * (w2 * w2 - 1.0)
            E01 = -s * w2 + c1 * w0 * w1
            E10 = s * w2 + c1 * w0 * w1
            E02 = s * w1 + c1 * w0 * w2
            E20 = -s * w1 + c1 * w0 * w2
            E12 = -s * w0 + c1 * w1 * w2
            E21 = s * w0 + c1 * w1 * w2
            # t_E = (I - R_E)(ω × v) + ω (ω·v) θ
            a0, a1, a2 = _cross(w0, w1, w2, v0, v1, v2)
            wv = (w0 * v0 + w1 * v1 + w2 * v2) * th
            t0 = a0 - (E00 * a0 + E01 * a1 + E02 * a2) + w0 * wv
            t1 = a1 - (E10 * a0 + E11 * a1 + E12 * a2) + w1 * wv
            t2 = a2 - (E20 * a0 + E21 * a1 + E22 * a2) + w2 * wv
            Rk = Rw[k]
            for r in range(3):
                Rk[r, 0] = Rp[r, 0] * E00 + Rp[r, 1] * E10 + Rp[r, 2] * E20
                Rk[r, 1] = Rp[r, 0] * E01 + Rp[r, 1] * E11 + Rp[r, 2] * E21
                Rk[r, 2] = Rp[r, 0] * E02 + Rp[r, 1] * E12 + Rp[r, 2] * E22
                Pw[k, r] = pp[r] + Rp[r, 0] * t0 + Rp[r, 1] * t1 + Rp[r, 2] * t2
        else:
            for r in range(3):
                for c in range(3):
                    Rw[k, r, c] = Rp[r, c]
            Pw[k, 0] = pp[0] + rv0 * th
            Pw[k, 1] = pp[1] + rv1 * th
            Pw[k, 2] = pp[2] + rv2 * th
        _body_inertia(inert[k], Rw[k], Pw[k], Ib[k])


@njit(**_OPT)
def _body_inertia(row, R, p, out):
    """Spatial inertia ``[[m I, -h~], [h~, I_o]]`` of a body whose home inertia (vehicle frame,
    about the vehicle origin) is ``row = (m, h = m c, I_o)``, after the motion ``(R, p)``:
    ``h' = R h + m p``, ``I_o' = R I_o Rᵀ − p (Rh)ᵀ − (Rh) pᵀ + 2 (p·Rh) I − m (p pᵀ − |p|² I)``."""
    m = row[0]
    h0, h1, h2 = row[1], row[2], row[3]
    Rh0 = R[0, 0] * h0 + R[0, 1] * h1 + R[0, 2] * h2
    Rh1 = R[1, 0] * h0 + R[1, 1] * h1 + R[1, 2] * h2
    Rh2 = R[2, 0] * h0 + R[2, 1] * h1 + R[2, 2] * h2
    p0, p1, p2 = p[0], p[1], p[2]
    n0, n1, n2 = Rh0 + m * p0, Rh1 + m * p1, Rh2 + m * p2
    # R I_o Rᵀ
    T = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            T[r, c] = R[r, 0] * row[4 + c] + R[r, 1] * row[7 + c] + R[r, 2] * row[10 + c]
    pr = p0 * Rh0 + p1 * Rh1 + p2 * Rh2
    pp = p0 * p0 + p1 * p1 + p2 * p2
    Rh = (Rh0, Rh1, Rh2)
    pv = (p0, p1, p2)
    for r in range(3):
        for c in range(r, 3):
            s = T[r, 0] * R[c, 0] + T[r, 1] * R[c, 1] + T[r, 2] * R[c, 2]
            s -= pv[r] * Rh[c] + Rh[r] * pv[c] + m * pv[r] * pv[c]
            if r == c:
                s += 2.0 * pr + m * pp
            out[3 + r, 3 + c] = s
            out[3 + c, 3 + r] = s
    for r in range(3):
        for c in range(3):
            out[r, c] = m if r == c else 0.0
    # -h~ (upper right) and h~ (lower left)
    out[0, 3] = 0.0
    out[0, 4] = n2
    out[0, 5] = -n1
    out[1, 3] = -n2
    out[1, 4] = 0.0
    out[1, 5] = n0
    out[2, 3] = n1
    out[2, 4] = -n0
    out[2, 5] = 0.0
    for r in range(3):
        for c in range(3):
            out[3 + r, c] = out[c, 3 + r]


@njit(**_OPT)
def _velocities(parent, S, axes, V, qd, vel, cacc):
    """Body twists in the vehicle frame, v_k = ι₀V + Σ_{path} S_i q̇_i, and the velocity-product
    accelerations c_j = ad_{v_parent}(S_j q̇_j)."""
    n = qd.shape[0]
    for r in range(6):
        vel[0, r] = 0.0
    for i in range(axes.shape[0]):
        vel[0, axes[i]] = V[i]
    for j in range(n):
        p = parent[j]
        k = j + 1
        u = qd[j]
        s0, s1, s2 = S[j, 0] * u, S[j, 1] * u, S[j, 2] * u
        s3, s4, s5 = S[j, 3] * u, S[j, 4] * u, S[j, 5] * u
        vp = vel[p]
        # ad_v W = [ω × w_v + v × w_ω ; ω × w_ω]
        a0, a1, a2 = _cross(vp[3], vp[4], vp[5], s0, s1, s2)
        b0, b1, b2 = _cross(vp[0], vp[1], vp[2], s3, s4, s5)
        c0, c1, c2 = _cross(vp[3], vp[4], vp[5], s3, s4, s5)
        cacc[j, 0] = a0 + b0
        cacc[j, 1] = a1 + b1
        cacc[j, 2] = a2 + b2
        cacc[j, 3] = c0
        cacc[j, 4] = c1
        cacc[j, 5] = c2
        vel[k, 0] = vp[0] + s0
        vel[k, 1] = vp[1] + s1
        vel[k, 2] = vp[2] + s2
        vel[k, 3] = vp[3] + s3
        vel[k, 4] = vp[4] + s4
        vel[k, 5] = vp[5] + s5


@njit(**_OPT)
def _bias(I, v, out):
    """out = −ad_vᵀ (I v) = v ×* (I v): the gyroscopic wrench of a body."""
    h = np.empty(6)
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += I[r, c] * v[c]
        h[r] = s
    a0, a1, a2 = _cross(v[3], v[4], v[5], h[0], h[1], h[2])
    b0, b1, b2 = _cross(v[0], v[1], v[2], h[0], h[1], h[2])
    c0, c1, c2 = _cross(v[3], v[4], v[5], h[3], h[4], h[5])
    out[0] = a0
    out[1] = a1
    out[2] = a2
    out[3] = b0 + c0
    out[4] = b1 + c1
    out[5] = b2 + c2


@njit(**_OPT)
def _add_external(axes, bw, fw_body, fw, Rw, Pw, out, sign):
    """out[k] += sign · (external wrenches on body k), in vehicle axes about the vehicle origin.

    ``bw`` (b) is the vehicle wrench on the axes of ι₀; ``fw[i]`` is already
    ``Ad⁻ᵀ(ḡ_frame at home) w_i`` on body ``fw_body[i]``; the current one is ``Ad_{G_k}⁻ᵀ`` of
    it: ``[R f; p × R f + R n]``.
    """
    for i in range(axes.shape[0]):
        out[0, axes[i]] += sign * bw[i]
    for i in range(fw_body.shape[0]):
        k = fw_body[i]
        R = Rw[k]
        p = Pw[k]
        f0 = R[0, 0] * fw[i, 0] + R[0, 1] * fw[i, 1] + R[0, 2] * fw[i, 2]
        f1 = R[1, 0] * fw[i, 0] + R[1, 1] * fw[i, 1] + R[1, 2] * fw[i, 2]
        f2 = R[2, 0] * fw[i, 0] + R[2, 1] * fw[i, 1] + R[2, 2] * fw[i, 2]
        m0 = R[0, 0] * fw[i, 3] + R[0, 1] * fw[i, 4] + R[0, 2] * fw[i, 5]
        m1 = R[1, 0] * fw[i, 3] + R[1, 1] * fw[i, 4] + R[1, 2] * fw[i, 5]
        m2 = R[2, 0] * fw[i, 3] + R[2, 1] * fw[i, 4] + R[2, 2] * fw[i, 5]
        x0, x1, x2 = _cross(p[0], p[1], p[2], f0, f1, f2)
        out[k, 0] += sign * f0
        out[k, 1] += sign * f1
        out[k, 2] += sign * f2
        out[k, 3] += sign * (x0 + m0)
        out[k, 4] += sign * (x1 + m1)
        out[k, 5] += sign * (x2 + m2)


@njit(**_OPT)
def _solve_spd(K, rhs, b):
    """Solve K x = rhs in place (rhs ← x) for the leading b×b block (Cholesky; K overwritten).
    Returns False if K is not positive definite."""
    for j in range(b):
        s = K[j, j]
        for k in range(j):
            s -= K[j, k] * K[j, k]
        if not s > 0.0:
            return False
        d = np.sqrt(s)
        K[j, j] = d
        for i in range(j + 1, b):
            s = K[i, j]
            for k in range(j):
                s -= K[i, k] * K[j, k]
            K[i, j] = s / d
    for i in range(b):
        s = rhs[i]
        for k in range(i):
            s -= K[i, k] * rhs[k]
        rhs[i] = s / K[i, i]
    for i in range(b - 1, -1, -1):
        s = rhs[i]
        for k in range(i + 1, b):
            s -= K[k, i] * rhs[k]
        rhs[i] = s / K[i, i]
    return True


# ----------------------------------------------------------------------------- workspace
@njit(**_OPT)
def _workspace(n):
    Rw = np.empty((n + 1, 3, 3))
    Pw = np.empty((n + 1, 3))
    S = np.empty((n, 6))
    IA = np.empty((n + 1, 6, 6))
    vel = np.empty((n + 1, 6))
    cacc = np.empty((n, 6))
    pA = np.empty((n + 1, 6))
    U = np.empty((n, 6))
    aux = np.empty((n, 2))      # 1/D_j, u_j
    acc = np.empty((n + 1, 6))
    K = np.empty((6, 6))
    rhs = np.empty(6)
    return Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs


# ----------------------------------------------------------------------------- forward dynamics
@njit(**_OPT)
def _aba(parent, jtype, xi, inert, rootx, axes, gloc, V, q, qd, tau, bw, fw_body, fw, out,
         Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs):
    """Articulated-body forward dynamics with the vehicle as a root moving in the subgroup ι₀.

    ``gloc`` is the gravitational acceleration in vehicle axes, Rᵀa; ``rootx`` the constant
    extra (added) inertia of the vehicle, on which gravity does not act.  Writes ``[V̇; q̈]`` into
    ``out``; returns a status code (see the module docstring).
    """
    _kinematics(parent, jtype, xi, inert, q, Rw, Pw, S, IA)
    return _aba_dynamics(parent, rootx, axes, gloc, V, qd, tau, bw, fw_body, fw, out, Rw, Pw, S,
                         IA, vel, cacc, pA, U, aux, acc, K, rhs)


@njit(**_OPT)
def _aba_dynamics(parent, rootx, axes, gloc, V, qd, tau, bw, fw_body, fw, out, Rw, Pw, S, IA,
                  vel, cacc, pA, U, aux, acc, K, rhs):
    """The three ABA passes after :func:`_kinematics` (IA holds the body inertias on entry and
    is overwritten by the articulated inertias).  The vehicle's added inertia ``rootx`` (M_A)
    enters the root only: its gyroscopic wrench −ad_Vᵀ(M_A V) in p^A₀ and M_A in the root
    pivot, not the gravity term (the root acceleration ι₀V̇ − a_g acts on the rigid masses, ι₀V̇
    on M_A)."""
    ext = np.zeros((qd.shape[0] + 1, 6))
    _add_external(axes, bw, fw_body, fw, Rw, Pw, ext, 1.0)
    return _aba_core(parent, rootx, axes, gloc, V, qd, tau, ext, out, S, IA, vel, cacc, pA, U,
                     aux, acc, K, rhs)


@njit(**_OPT)
def _aba_core(parent, rootx, axes, gloc, V, qd, tau, ext, out, S, IA, vel, cacc, pA, U, aux,
              acc, K, rhs):
    """ABA passes with the external wrenches ``ext[k]`` (vehicle axes, about the vehicle
    origin) already summed per body; ``vel`` holds the body twists on return."""
    n = qd.shape[0]
    b = axes.shape[0]
    _velocities(parent, S, axes, V, qd, vel, cacc)
    for k in range(n + 1):
        _bias(IA[k], vel[k], pA[k])
        for r in range(6):
            pA[k, r] -= ext[k, r]
    _bias(rootx, vel[0], rhs)
    for r in range(6):
        pA[0, r] += rhs[r]
    # leaves → root: articulated inertias I^A and bias forces p^A
    for j in range(n - 1, -1, -1):
        k = j + 1
        p = parent[j]
        Ik = IA[k]
        Sj = S[j]
        cj = cacc[j]
        D = 0.0
        Uc = 0.0
        Sp = 0.0
        Ic = np.empty(6)
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
            return 3
        Dinv = 1.0 / D
        u = tau[j] - Sp
        aux[j, 0] = Dinv
        aux[j, 1] = u
        coef = (u - Uc) * Dinv
        Ip = IA[p]
        for r in range(6):
            Ur = U[j, r] * Dinv
            for c in range(6):
                Ip[r, c] += Ik[r, c] - Ur * U[j, c]
            pA[p, r] += pA[k, r] + Ic[r] + U[j, r] * coef
    # the vehicle: ι₀ᵀ I^A₀ ι₀ V̇ = ι₀ᵀ (I^A₀ a_g − p^A₀); a₀ = ι₀V̇ − a_g
    g0, g1, g2 = gloc[0], gloc[1], gloc[2]
    I0 = IA[0]
    for r in range(6):
        acc[0, r] = 0.0
    if b > 0:
        for r in range(b):
            ar = axes[r]
            rhs[r] = I0[ar, 0] * g0 + I0[ar, 1] * g1 + I0[ar, 2] * g2 - pA[0, ar]
            for c in range(b):
                K[r, c] = I0[ar, axes[c]] + rootx[ar, axes[c]]
        if not _solve_spd(K, rhs, b):
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


@njit(**_OPT)
def _gravity_local(g, grav, out):
    """out = Rᵀ a: the gravitational acceleration in vehicle axes."""
    for c in range(3):
        out[c] = g[0, c] * grav[0] + g[1, c] * grav[1] + g[2, c] * grav[2]


@njit(**_OPT)
def forward_dynamics(parent, jtype, xi, inert, rootx, axes, grav, g, V, q, qd, tau, bw, fw_body,
                     fw, out):
    if not _check_pose(g):
        return 1
    Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs = _workspace(q.shape[0])
    gloc = np.empty(3)
    _gravity_local(g, grav, gloc)
    return _aba(parent, jtype, xi, inert, rootx, axes, gloc, V, q, qd, tau, bw, fw_body, fw,
                out, Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs)


@njit(**_OPT)
def forward_dynamics_range(parent, jtype, xi, inert, rootx, axes, grav, g, V, q, qd, tau, bw,
                           fw_body, fw, out, status, lo, hi):
    """``forward_dynamics`` of states ``lo..hi-1`` of a batch, sharing one workspace (so the
    per-state cost carries no allocation)."""
    Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs = _workspace(q.shape[1])
    gloc = np.empty(3)
    for i in range(lo, hi):
        if not _check_pose(g[i]):
            status[i] = 1
            continue
        _gravity_local(g[i], grav, gloc)
        status[i] = _aba(parent, jtype, xi, inert, rootx, axes, gloc, V[i], q[i], qd[i], tau[i],
                         bw[i], fw_body, fw[i], out[i], Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc,
                         K, rhs)


@njit(parallel=True, **_OPT)
def forward_dynamics_batch(parent, jtype, xi, inert, rootx, axes, grav, g, V, q, qd, tau, bw,
                           fw_body, fw, out, status, nchunk):
    """``forward_dynamics`` over the leading axis (N states) in ``nchunk`` parallel chunks."""
    N = q.shape[0]
    for ch in prange(nchunk):
        forward_dynamics_range(parent, jtype, xi, inert, rootx, axes, grav, g, V, q, qd, tau,
                               bw, fw_body, fw, out, status, (ch * N) // nchunk,
                               ((ch + 1) * N) // nchunk)


def num_threads() -> int:
    """Threads numba's parallel kernels use (numba.get_num_threads())."""
    return get_num_threads()


# ----------------------------------------------------------------------------- inverse dynamics
@njit(**_OPT)
def inverse_dynamics(parent, jtype, xi, inert, rootx, axes, grav, g, V, q, qd, Vdot, qdd, fw_body,
                     fw, out):
    """Recursive Newton–Euler in the vehicle frame: writes ``[base wrench; τ]`` into ``out``.
    The vehicle's added inertia ``rootx`` (M_A) adds ``M_A ι₀V̇ − ad_Vᵀ(M_A V)`` to the root
    force (no gravity on M_A)."""
    if not _check_pose(g):
        return 1
    n = q.shape[0]
    b = axes.shape[0]
    Rw, Pw, S, Ib, vel, cacc, f, U, aux, acc, K, rhs = _workspace(n)
    _kinematics(parent, jtype, xi, inert, q, Rw, Pw, S, Ib)
    _velocities(parent, S, axes, V, qd, vel, cacc)
    for r in range(6):
        acc[0, r] = 0.0
    for i in range(b):
        acc[0, axes[i]] = Vdot[i]
    for r in range(3):
        acc[0, r] -= g[0, r] * grav[0] + g[1, r] * grav[1] + g[2, r] * grav[2]
    for j in range(n):
        k = j + 1
        p = parent[j]
        for r in range(6):
            acc[k, r] = acc[p, r] + cacc[j, r] + S[j, r] * qdd[j]
    zero = np.zeros(b)
    for k in range(n + 1):
        _bias(Ib[k], vel[k], f[k])
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += Ib[k, r, c] * acc[k, c]
            f[k, r] += s
    _bias(rootx, vel[0], rhs)
    for r in range(6):
        s = rhs[r]
        for i in range(b):
            s += rootx[r, axes[i]] * Vdot[i]
        f[0, r] += s
    _add_external(axes, zero, fw_body, fw, Rw, Pw, f, -1.0)
    for j in range(n - 1, -1, -1):
        k = j + 1
        p = parent[j]
        s = 0.0
        for r in range(6):
            s += S[j, r] * f[k, r]
            f[p, r] += f[k, r]
        out[b + j] = s
    for i in range(b):
        out[i] = f[0, axes[i]]
    for i in range(b + n):
        if not np.isfinite(out[i]):
            return 2
    return 0


# ----------------------------------------------------------------------------- mass matrix
@njit(**_OPT)
def mass_matrix(parent, jtype, xi, inert, rootx, axes, q, M):
    """Composite-rigid-body algorithm in the vehicle frame: M = [[M₀, M₀𝔪], [M₀𝔪ᵀ, M_𝔪]] (64);
    the vehicle's added inertia ``rootx`` adds to M₀."""
    n = q.shape[0]
    b = axes.shape[0]
    Rw, Pw, S, Ic, vel, cacc, pA, U, aux, acc, K, rhs = _workspace(n)
    _kinematics(parent, jtype, xi, inert, q, Rw, Pw, S, Ic)
    M[:, :] = 0.0                   # joints on different branches do not couple
    for j in range(n - 1, -1, -1):
        p = parent[j]
        for r in range(6):
            for c in range(6):
                Ic[p, r, c] += Ic[j + 1, r, c]
    F = np.empty(6)
    for j in range(n):
        k = j + 1
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += Ic[k, r, c] * S[j, c]
            F[r] = s
        i = j
        while i >= 0:
            s = 0.0
            for r in range(6):
                s += S[i, r] * F[r]
            M[b + i, b + j] = s
            M[b + j, b + i] = s
            i = parent[i] - 1
        for r in range(b):
            M[r, b + j] = F[axes[r]]
            M[b + j, r] = F[axes[r]]
    for r in range(b):
        for c in range(b):
            M[r, c] = Ic[0, axes[r], axes[c]] + rootx[axes[r], axes[c]]
    for i in range(b + n):
        for j in range(b + n):
            if not np.isfinite(M[i, j]):
                return 2
    return 0


# ----------------------------------------------------------------------------- Lie group helpers
@njit(**_OPT)
def _so3_coeffs(th):
    """(sinθ/θ, (1−cosθ)/θ², (θ−sinθ)/θ³) with Taylor series below _SMALL."""
    t2 = th * th
    if th < _SMALL:
        A = 1.0 - t2 / 6.0 * (1.0 - t2 / 20.0 * (1.0 - t2 / 42.0 * (1.0 - t2 / 72.0)))
        B = 0.5 * (1.0 - t2 / 12.0 * (1.0 - t2 / 30.0 * (1.0 - t2 / 56.0 * (1.0 - t2 / 90.0))))
        C = (1.0 - t2 / 20.0 * (1.0 - t2 / 42.0 * (1.0 - t2 / 72.0 * (1.0 - t2 / 110.0)))) / 6.0
        return A, B, C
    s, c = np.sin(th), np.cos(th)
    return s / th, (1.0 - c) / t2, (th - s) / (t2 * th)


@njit(**_OPT)
def se3_exp(X, out):
    """out (4×4) = exp(X^) for a twist X = [ρ; φ] (paper 000, (11)); equals lie.se3_exp."""
    f0, f1, f2 = X[3], X[4], X[5]
    th = np.sqrt(f0 * f0 + f1 * f1 + f2 * f2)
    A, B, C = _so3_coeffs(th)
    W = np.array([[0.0, -f2, f1], [f2, 0.0, -f0], [-f1, f0, 0.0]])
    for r in range(3):
        for c in range(3):
            W2 = W[r, 0] * W[0, c] + W[r, 1] * W[1, c] + W[r, 2] * W[2, c]
            out[r, c] = (1.0 if r == c else 0.0) + A * W[r, c] + B * W2
    x0, x1, x2 = X[0], X[1], X[2]
    a0, a1, a2 = _cross(f0, f1, f2, x0, x1, x2)
    b0, b1, b2 = _cross(f0, f1, f2, a0, a1, a2)
    out[0, 3] = x0 + B * a0 + C * b0
    out[1, 3] = x1 + B * a1 + C * b1
    out[2, 3] = x2 + B * a2 + C * b2
    out[3, 0] = 0.0
    out[3, 1] = 0.0
    out[3, 2] = 0.0
    out[3, 3] = 1.0


@njit(**_OPT)
def dexp_inv_apply(X, W, out):
    """out = dexp⁻¹_X W (= lie.dexp_inv(X) @ W), matrix-free:
    ``[J⁻¹(w_v − Q J⁻¹ w_ω); J⁻¹ w_ω]`` with the SO(3) left Jacobian J and the SE(3) block Q
    (Barfoot & Furgale 2014, eq. 102) applied by cross products."""
    r0, r1, r2 = X[0], X[1], X[2]
    f0, f1, f2 = X[3], X[4], X[5]
    t2 = f0 * f0 + f1 * f1 + f2 * f2
    th = np.sqrt(t2)
    if th < _SMALL:
        k = 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0 + t2 * t2 * t2 / 1209600.0
        c1 = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0 - t2 * t2 * t2 / 362880.0
        c2 = 1.0 / 24.0 - t2 / 720.0 + t2 * t2 / 40320.0 - t2 * t2 * t2 / 3628800.0
        c3 = 1.0 / 120.0 - t2 / 2520.0 + t2 * t2 / 120960.0 - t2 * t2 * t2 / 9979200.0
    else:
        s, c = np.sin(th), np.cos(th)
        k = 1.0 / t2 - 0.5 / (th * np.tan(0.5 * th))
        c1 = (th - s) / (t2 * th)
        c2 = (t2 + 2.0 * c - 2.0) / (2.0 * t2 * t2)
        c3 = (2.0 * th - 3.0 * s + th * c) / (2.0 * t2 * t2 * th)
    # a = J⁻¹ w_ω = w − ½ φ×w + k φ×(φ×w)
    w0, w1, w2 = W[3], W[4], W[5]
    x0, x1, x2 = _cross(f0, f1, f2, w0, w1, w2)
    y0, y1, y2 = _cross(f0, f1, f2, x0, x1, x2)
    a0, a1, a2 = w0 - 0.5 * x0 + k * y0, w1 - 0.5 * x1 + k * y1, w2 - 0.5 * x2 + k * y2
    # Q a
    ra = _cross(r0, r1, r2, a0, a1, a2)                       # ρ×a
    fa = _cross(f0, f1, f2, a0, a1, a2)                       # φ×a
    fra = _cross(f0, f1, f2, ra[0], ra[1], ra[2])             # φ×(ρ×a)
    rfa = _cross(r0, r1, r2, fa[0], fa[1], fa[2])             # ρ×(φ×a)
    frfa = _cross(f0, f1, f2, rfa[0], rfa[1], rfa[2])         # φ×(ρ×(φ×a))
    ffra = _cross(f0, f1, f2, fra[0], fra[1], fra[2])         # φ×(φ×(ρ×a))
    ffa = _cross(f0, f1, f2, fa[0], fa[1], fa[2])             # φ×(φ×a)
    rffa = _cross(r0, r1, r2, ffa[0], ffa[1], ffa[2])         # ρ×(φ×(φ×a))
    frffa = _cross(f0, f1, f2, rffa[0], rffa[1], rffa[2])     # φ×(ρ×(φ×(φ×a)))   (PRP P)
    ffrfa = _cross(f0, f1, f2, frfa[0], frfa[1], frfa[2])     # φ×(φ×(ρ×(φ×a)))   (P PRP)
    z = np.empty(3)
    for i in range(3):
        Qa = (0.5 * ra[i] + c1 * (fra[i] + rfa[i] + frfa[i])
              + c2 * (ffra[i] + rffa[i] - 3.0 * frfa[i]) + c3 * (frffa[i] + ffrfa[i]))
        z[i] = W[i] - Qa
    # out_v = J⁻¹ z
    x0, x1, x2 = _cross(f0, f1, f2, z[0], z[1], z[2])
    y0, y1, y2 = _cross(f0, f1, f2, x0, x1, x2)
    out[0] = z[0] - 0.5 * x0 + k * y0
    out[1] = z[1] - 0.5 * x1 + k * y1
    out[2] = z[2] - 0.5 * x2 + k * y2
    out[3] = a0
    out[4] = a1
    out[5] = a2


# ----------------------------------------------------------------------------- momentum
@njit(**_OPT)
def _momentum_terms(parent, axes, qd, S, Ib, vel, cacc, Ic0, hm):
    """Ic0 = Σ_k I_k (composite inertia of the whole system) and hm = Σ_k I_k v_k at V = 0, so
    that the locked momentum (77) is ``P = ι₀ᵀ(Ic0 ι₀V + hm) = M₀V + M₀𝔪q̇``."""
    n = qd.shape[0]
    zero = np.zeros(axes.shape[0])
    _velocities(parent, S, axes, zero, qd, vel, cacc)
    for r in range(6):
        hm[r] = 0.0
        for c in range(6):
            Ic0[r, c] = 0.0
    for k in range(n + 1):
        for r in range(6):
            s = 0.0
            for c in range(6):
                Ic0[r, c] += Ib[k, r, c]
                s += Ib[k, r, c] * vel[k, c]
            hm[r] += s


@njit(**_OPT)
def _velocity_from_momentum(axes, P, Ic0, rootx, hm, K, V):
    """V = M₀⁻¹(P − M₀𝔪q̇) (LP-3) with M₀ = ι₀ᵀ(Ic0 + M_A)ι₀."""
    b = axes.shape[0]
    for r in range(b):
        V[r] = P[r] - hm[axes[r]]
        for c in range(b):
            K[r, c] = Ic0[axes[r], axes[c]] + rootx[axes[r], axes[c]]
    return _solve_spd(K, V, b)


@njit(**_OPT)
def _coad(G, W, out, inverse):
    """out = Ad_Gᵀ W (inverse=False) or Ad_G⁻ᵀ W (inverse=True) for a wrench W = [f; n]."""
    f0, f1, f2 = W[0], W[1], W[2]
    n0, n1, n2 = W[3], W[4], W[5]
    p0, p1, p2 = G[0, 3], G[1, 3], G[2, 3]
    if inverse:          # [R f; p × R f + R n]
        for r in range(3):
            out[r] = G[r, 0] * f0 + G[r, 1] * f1 + G[r, 2] * f2
            out[3 + r] = G[r, 0] * n0 + G[r, 1] * n1 + G[r, 2] * n2
        x0, x1, x2 = _cross(p0, p1, p2, out[0], out[1], out[2])
        out[3] += x0
        out[4] += x1
        out[5] += x2
    else:                # [Rᵀ f; Rᵀ(n − p × f)]
        x0, x1, x2 = _cross(p0, p1, p2, f0, f1, f2)
        m0, m1, m2 = n0 - x0, n1 - x1, n2 - x2
        for r in range(3):
            out[r] = G[0, r] * f0 + G[1, r] * f1 + G[2, r] * f2
            out[3 + r] = G[0, r] * m0 + G[1, r] * m1 + G[2, r] * m2


# ----------------------------------------------------------------------------- free-floating ID
@njit(**_OPT)
def free_floating_inverse_dynamics(parent, jtype, xi, inert, rootx, axes, grav, g, V, q, qd,
                                   qdd, bw, fw_body, fw, out):
    """Joint efforts for ``q̈`` with the vehicle free under the known wrench ``bw``: writes
    ``[V̇; τ]`` into ``out``.  The base row of RNEA is affine in V̇ with slope M₀ (65), so
    ``V̇ = M₀⁻¹(bw − RNEA₀(V̇ = 0))`` makes the base wrench the applied one and
    ``τ = RNEA_𝔪(V̇, q̈)`` — the arm equation (LP-2) of the coupled system,
    ``τ = M̂q̈ + Ĉq̇ + N̂ + ∂u/∂q + 𝒜ᵀF_η`` (docs/corrections.md, "Inverse dynamics"), without forming M̂."""
    n = q.shape[0]
    b = axes.shape[0]
    Vdot = np.zeros(b)
    st = inverse_dynamics(parent, jtype, xi, inert, rootx, axes, grav, g, V, q, qd, Vdot, qdd,
                          fw_body, fw, out)
    if st != 0:
        return st
    if b > 0:
        M = np.empty((b + n, b + n))
        st = mass_matrix(parent, jtype, xi, inert, rootx, axes, q, M)
        if st != 0:
            return st
        K = np.empty((6, 6))
        for r in range(b):
            Vdot[r] = bw[r] - out[r]
            for c in range(b):
                K[r, c] = M[r, c]
        if not _solve_spd(K, Vdot, b):
            return 3
        st = inverse_dynamics(parent, jtype, xi, inert, rootx, axes, grav, g, V, q, qd, Vdot,
                              qdd, fw_body, fw, out)
        if st != 0:
            return st
    for r in range(b):
        out[r] = Vdot[r]
    return 0


# ----------------------------------------------------------------------------- frame poses
@njit(**_OPT)
def frame_pose(parent, jtype, xi, inert, q, body, home, out):
    """Pose (4×4, vehicle frame) of a frame fixed to ``body`` whose home pose is ``home``:
    ``G_body ḡ_frame`` with the product of exponentials (13)–(16)."""
    n = q.shape[0]
    Rw, Pw, S, Ib, vel, cacc, pA, U, aux, acc, K, rhs = _workspace(n)
    _kinematics(parent, jtype, xi, inert, q, Rw, Pw, S, Ib)
    R = Rw[body]
    p = Pw[body]
    for r in range(3):
        for c in range(4):
            out[r, c] = R[r, 0] * home[0, c] + R[r, 1] * home[1, c] + R[r, 2] * home[2, c]
        out[r, 3] += p[r]
    out[3, 0] = 0.0
    out[3, 1] = 0.0
    out[3, 2] = 0.0
    out[3, 3] = 1.0
    for r in range(3):
        for c in range(4):
            if not np.isfinite(out[r, c]):
                return 2
    return 0
