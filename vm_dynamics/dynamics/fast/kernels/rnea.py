"""Inverse dynamics: the recursive Newton–Euler algorithm (Featherstone 2008, Table 5.1)
and the free-floating inverse dynamics of docs/corrections.md, "Inverse dynamics".  Both take
the model as its record ``C`` (:class:`~vm_dynamics.dynamics.fast.records.ModelConstants`).

The passes are also exposed one by one (:func:`rnea_forward`, :func:`rnea_backward`,
:func:`free_floating_solve`) for callers that hold the kinematics already (the compiled
control law evaluates them on the plant's kinematics at every stage).
"""
from __future__ import annotations

import numpy as np

from .algebra import check_pose, cross
from .jit import OPT, njit
from .kinematics import (
    add_frame_wrenches,
    inertia_times,
    joint_motion,
    kinematics,
    moved_inertia,
    root_pose,
    workspace,
)

__all__ = ["inverse_dynamics", "rnea", "body_wrench", "root_acceleration", "added_inertia_force",
           "free_floating_inverse_dynamics", "rnea_forward", "rnea_backward", "free_floating_solve",
           "all_finite", "wrench", "inertia_of", "cholesky_solve", "rigid_solve",
           "composite_inertia"]


@njit(**OPT)
def inverse_dynamics(C, g, V, q, qd, Vdot, qdd, fw_body, fw, out):
    """Recursive Newton–Euler in the vehicle frame: writes ``[base wrench; τ]`` into ``out``
    for the accelerations ``(V̇, q̈)`` at the state ``(g, V, q, q̇)`` with the frame wrenches
    ``fw`` on the bodies ``fw_body``.  The vehicle's added inertia ``C.rootx`` (M_A) adds
    ``M_A ι₀V̇ − ad_Vᵀ(M_A V)`` to the root force (no gravity on M_A)."""
    if not check_pose(g):
        return 1
    return rnea(C, g, V, q, qd, Vdot, qdd, fw_body, fw, out, workspace(q.shape[0]))


@njit(inline="always", **OPT)
def rnea_forward(C, g, V, qd, Vdot, qdd, ws):
    """The forward pass of RNEA after :func:`.kinematics.kinematics` (``ws.Rw, ws.S, ws.IA``
    at the configuration): body twists ``ws.vel`` and accelerations ``ws.acc``, and
    ``ws.pA[k] = I_k a_k − ad_{v_k}ᵀ(I_k v_k)``, the wrench body ``k`` needs (vehicle axes,
    about the vehicle origin; the root's with the added inertia's ``M_A ι₀V̇ − ad_Vᵀ(M_A V)``),
    no external wrench.  Inlined: the records' fields are read at the call site (see
    :func:`.kinematics.kinematics`)."""
    _rnea_forward(C.parent, C.rootx, C.axes, C.grav, g, V, qd, Vdot, qdd, ws.S, ws.IA, ws.vel,
                  ws.pA, ws.acc)


@njit(**OPT)
def _rnea_forward(parent, rootx, axes, grav, g, V, qd, Vdot, qdd, S, Ib, vel, f, acc):
    """:func:`rnea_forward` on the arrays, in one sweep from the root as :func:`_rnea_fused`
    (twist, acceleration and wrench of each body in turn), the products with the 6×6 body
    inertias in their compact form (:func:`inertia_of`: 2 × 24 multiplications instead of
    2 × 36).  Indexes the arrays instead of taking row views (a view is a reference count
    update in a compiled call)."""
    n = qd.shape[0]
    for r in range(6):
        vel[0, r] = 0.0
    for i in range(axes.shape[0]):
        vel[0, axes[i]] = V[i]
    root_acceleration(axes, grav, g, Vdot, acc)
    _store_wrench(Ib, vel, acc, f, 0)
    for j in range(n):
        p = parent[j]
        k = j + 1
        u, ud = qd[j], qdd[j]
        s0, s1, s2 = S[j, 0] * u, S[j, 1] * u, S[j, 2] * u
        s3, s4, s5 = S[j, 3] * u, S[j, 4] * u, S[j, 5] * u
        v0, v1, v2, w0, w1, w2 = vel[p, 0], vel[p, 1], vel[p, 2], vel[p, 3], vel[p, 4], vel[p, 5]
        # ad_{v_p}(S q̇) = [ω × s_v + v × s_ω ; ω × s_ω]
        a0, a1, a2 = cross(w0, w1, w2, s0, s1, s2)
        b0, b1, b2 = cross(v0, v1, v2, s3, s4, s5)
        c0, c1, c2 = cross(w0, w1, w2, s3, s4, s5)
        vel[k, 0] = v0 + s0
        vel[k, 1] = v1 + s1
        vel[k, 2] = v2 + s2
        vel[k, 3] = w0 + s3
        vel[k, 4] = w1 + s4
        vel[k, 5] = w2 + s5
        acc[k, 0] = acc[p, 0] + (a0 + b0) + S[j, 0] * ud
        acc[k, 1] = acc[p, 1] + (a1 + b1) + S[j, 1] * ud
        acc[k, 2] = acc[p, 2] + (a2 + b2) + S[j, 2] * ud
        acc[k, 3] = acc[p, 3] + c0 + S[j, 3] * ud
        acc[k, 4] = acc[p, 4] + c1 + S[j, 4] * ud
        acc[k, 5] = acc[p, 5] + c2 + S[j, 5] * ud
        _store_wrench(Ib, vel, acc, f, k)
    added_inertia_force(rootx, axes, vel, Vdot, f)


@njit(inline="always", **OPT)
def inertia_of(Ib, k):
    """Body ``k``'s 6×6 inertia ``Ib[k]`` (as :func:`.kinematics.body_inertia` lays it out,
    ``[[m 1, −h~], [h~, I_o]]``) in the compact form ``(m, h, I_o)`` of
    :func:`.kinematics.moved_inertia`, for :func:`.kinematics.inertia_times`."""
    return (Ib[k, 0, 0], (Ib[k, 1, 5], Ib[k, 2, 3], Ib[k, 0, 4]),
            (Ib[k, 3, 3], Ib[k, 3, 4], Ib[k, 3, 5], Ib[k, 4, 4], Ib[k, 4, 5], Ib[k, 5, 5]))


@njit(inline="always", **OPT)
def _row6(X, k):
    """Row ``k`` of ``X`` (n × 6) as a tuple (loads, no view)."""
    return X[k, 0], X[k, 1], X[k, 2], X[k, 3], X[k, 4], X[k, 5]


@njit(inline="always", **OPT)
def _store_wrench(Ib, vel, acc, f, k):
    """``f[k] = I_k a_k − ad_{v_k}ᵀ(I_k v_k)`` (:func:`wrench`) with the inertia ``Ib[k]``."""
    m, nn, Io = inertia_of(Ib, k)
    w = wrench(m, nn, Io, _row6(vel, k), _row6(acc, k))
    f[k, 0], f[k, 1], f[k, 2], f[k, 3], f[k, 4], f[k, 5] = w


@njit(inline="always", **OPT)
def root_acceleration(axes, grav, g, Vdot, acc):
    """The root's acceleration in RNEA into ``acc[0]``: ``a0 = ι₀V̇ − [Rᵀa_g; 0]`` (gravity as
    a fictitious acceleration of the root, ``R`` the rotation of ``g``)."""
    for r in range(6):
        acc[0, r] = 0.0
    for i in range(axes.shape[0]):
        acc[0, axes[i]] = Vdot[i]
    for r in range(3):
        acc[0, r] -= g[0, r] * grav[0] + g[1, r] * grav[1] + g[2, r] * grav[2]


@njit(inline="always", **OPT)
def added_inertia_force(rootx, axes, vel, Vdot, f):
    """``f[0] += M_A ι₀V̇ − ad_{v0}ᵀ(M_A v0)``: the vehicle's added inertia ``rootx`` (M_A) in
    the root's wrench (no gravity on M_A; ``v0 = vel[0]``).  Nothing when M_A is zero (the
    common case; a zero M_A would add zeros)."""
    nz = False
    for r in range(6):
        for c in range(6):
            if rootx[r, c] != 0.0:
                nz = True
    if not nz:
        return
    v = _row6(vel, 0)
    h = (_mv(rootx, 0, v), _mv(rootx, 1, v), _mv(rootx, 2, v), _mv(rootx, 3, v),
         _mv(rootx, 4, v), _mv(rootx, 5, v))
    a0, a1, a2 = cross(v[3], v[4], v[5], h[0], h[1], h[2])
    b0, b1, b2 = cross(v[0], v[1], v[2], h[0], h[1], h[2])
    c0, c1, c2 = cross(v[3], v[4], v[5], h[3], h[4], h[5])
    bias = (a0, a1, a2, b0 + c0, b1 + c1, b2 + c2)
    for r in range(6):
        s = bias[r]
        for i in range(axes.shape[0]):
            s += rootx[r, axes[i]] * Vdot[i]
        f[0, r] += s


@njit(inline="always", **OPT)
def _mv(A, r, v):
    """``(A v)[r]`` of a 6×6 ``A`` and a 6-tuple ``v``, summed from 0.0 in column order."""
    s = 0.0
    for c in range(6):
        s += A[r, c] * v[c]
    return s


@njit(inline="always", **OPT)
def rnea_backward(C, out, ws):
    """The backward pass of RNEA after :func:`rnea_forward` (and the external wrenches taken
    off ``ws.pA``): ``ws.pA[k]`` becomes the wrench across joint k (its subtree's), ``out``
    ``[base wrench; τ]``.  Inlined, as :func:`rnea_forward`."""
    _rnea_backward(C.parent, C.axes, ws.S, ws.pA, out)


@njit(**OPT)
def _rnea_backward(parent, axes, S, f, out):
    """:func:`rnea_backward` on the arrays."""
    n = S.shape[0]
    b = axes.shape[0]
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


@njit(**OPT)
def all_finite(x):
    """True if every entry of the vector ``x`` is finite."""
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


@njit(inline="always", **OPT)
def rnea(C, g, V, q, qd, Vdot, qdd, fw_body, fw, out, ws):
    """:func:`inverse_dynamics` of a rigid transform ``g`` on the workspace ``ws``: the
    kinematics and the forward pass fused body by body (:func:`_rnea_fused`), the frame
    wrenches, the backward pass.  Fills ``ws.Rw, ws.Pw, ws.S, ws.vel, ws.acc, ws.pA`` (not
    ``ws.IA``: callers that need the 6×6 inertias run :func:`.kinematics.kinematics` and
    :func:`rnea_forward`).  Inlined (the records' fields are read at the call site, see
    :func:`.kinematics.kinematics`)."""
    _rnea_fused(C.parent, C.jtype, C.xi, C.inert, C.rootx, C.axes, C.grav, g, V, q, qd, Vdot,
                qdd, ws.Rw, ws.Pw, ws.S, ws.vel, ws.acc, ws.pA)
    add_frame_wrenches(fw_body, fw, ws.Rw, ws.Pw, ws.pA, -1.0)   # (the vehicle wrench is the unknown)
    rnea_backward(C, out, ws)
    return 0 if all_finite(out) else 2


@njit(**OPT)
def _rnea_fused(parent, jtype, xi, inert, rootx, axes, grav, g, V, q, qd, Vdot, qdd, Rw, Pw, S,
                vel, acc, f):
    """Kinematics and the forward pass of RNEA in one sweep from the root: body k's pose
    (:func:`.kinematics.joint_motion`), twist ``v_k = v_p + S_j q̇_j``, acceleration
    ``a_k = a_p + ad_{v_p}(S_j q̇_j) + S_j q̈_j``, and wrench ``f_k = I_k a_k − ad_{v_k}ᵀ(I_k v_k)``
    with its inertia in the compact form of :func:`.kinematics.moved_inertia` (held in
    registers: the 6×6 matrices are never written), as :func:`rnea_forward` computes them."""
    n = q.shape[0]
    for r in range(6):
        vel[0, r] = 0.0
    for i in range(axes.shape[0]):
        vel[0, axes[i]] = V[i]
    root_acceleration(axes, grav, g, Vdot, acc)
    root_pose(Rw[0], Pw[0])
    body_wrench(inert[0], Rw[0], Pw[0], vel[0], acc[0], f[0])
    for j in range(n):
        p = parent[j]
        k = j + 1
        joint_motion(xi, jtype, q, j, p, k, Rw, Pw, S)
        u, ud = qd[j], qdd[j]
        vp = vel[p]
        s0, s1, s2 = S[j, 0] * u, S[j, 1] * u, S[j, 2] * u
        s3, s4, s5 = S[j, 3] * u, S[j, 4] * u, S[j, 5] * u
        # ad_{v_p}(S q̇) = [ω × s_v + v × s_ω ; ω × s_ω]
        a0, a1, a2 = cross(vp[3], vp[4], vp[5], s0, s1, s2)
        b0, b1, b2 = cross(vp[0], vp[1], vp[2], s3, s4, s5)
        c0, c1, c2 = cross(vp[3], vp[4], vp[5], s3, s4, s5)
        vel[k, 0] = vp[0] + s0
        vel[k, 1] = vp[1] + s1
        vel[k, 2] = vp[2] + s2
        vel[k, 3] = vp[3] + s3
        vel[k, 4] = vp[4] + s4
        vel[k, 5] = vp[5] + s5
        ap = acc[p]
        acc[k, 0] = ap[0] + (a0 + b0) + S[j, 0] * ud
        acc[k, 1] = ap[1] + (a1 + b1) + S[j, 1] * ud
        acc[k, 2] = ap[2] + (a2 + b2) + S[j, 2] * ud
        acc[k, 3] = ap[3] + c0 + S[j, 3] * ud
        acc[k, 4] = ap[4] + c1 + S[j, 4] * ud
        acc[k, 5] = ap[5] + c2 + S[j, 5] * ud
        body_wrench(inert[k], Rw[k], Pw[k], vel[k], acc[k], f[k])
    added_inertia_force(rootx, axes, vel, Vdot, f)


@njit(inline="always", **OPT)
def body_wrench(row, R, p, v, a, f):
    """``f = I a − ad_vᵀ(I v)`` for the body of home inertia ``row`` at the pose ``(R, p)``
    (compact inertia, :func:`.kinematics.moved_inertia`)."""
    m, nn, Io = moved_inertia(row, R, p)
    f[0], f[1], f[2], f[3], f[4], f[5] = wrench(m, nn, Io, v, a)


@njit(inline="always", **OPT)
def wrench(m, nn, Io, v, a):
    """``I a − ad_vᵀ(I v)`` (a 6-tuple) of the compact inertia ``(m, nn, Io)``
    (:func:`.kinematics.moved_inertia`) for the twist ``v`` and acceleration ``a`` (6-vectors
    or tuples)."""
    h = inertia_times(m, nn, Io, v)
    e = inertia_times(m, nn, Io, a)
    x0, x1, x2 = cross(v[3], v[4], v[5], h[0], h[1], h[2])
    y0, y1, y2 = cross(v[0], v[1], v[2], h[0], h[1], h[2])
    z0, z1, z2 = cross(v[3], v[4], v[5], h[3], h[4], h[5])
    return (e[0] + x0, e[1] + x1, e[2] + x2, e[3] + (y0 + z0), e[4] + (y1 + z1),
            e[5] + (y2 + z2))


@njit(inline="always", **OPT)
def free_floating_solve(C, bw, Ic, out, ws):
    """The free-floating inverse dynamics after :func:`rnea_forward` at ``V̇ = 0`` (and the
    external wrenches taken off ``ws.pA``): writes ``[V̇; τ]`` into ``out``; a status code.
    ``Ic``: ``Σ_k I_k`` of the body inertias ``ws.IA`` (:func:`composite_inertia`; the
    plant's own sum when they are the plant's).

    All the bodies' inertias are in the vehicle frame about its origin, so a vehicle
    acceleration ``ι₀V̇`` adds ``I_k ι₀V̇`` to every body's wrench: the base row is
    ``F₀(0) + M₀V̇`` with ``F₀(0) = ι₀ᵀΣ_k f_k(0)`` and ``M₀ = ι₀ᵀ(Σ_k I_k + M_A)ι₀`` (the
    locked inertia, (65)), so ``V̇ = M₀⁻¹(bw − F₀(0))`` (:func:`rigid_solve` for a free
    rigid base, else a b×b Cholesky); then ``f_k += I_k ι₀V̇`` within the one backward pass
    that gives ``τ_j = S_jᵀ Σ_{k ∈ subtree(j)} f_k``.  One kinematics, one forward and one
    backward pass and one solve, no mass matrix.  ``ws.pA`` is left with the
    wrenches across the joints (the root's is not formed), ``ws.K`` with scratch.  Inlined,
    as :func:`rnea_forward`."""
    return _free_floating_solve(C.parent, C.rootx, C.axes, bw, Ic, out, ws.S, ws.IA, ws.pA,
                                ws.K, ws.rhs)


@njit(**OPT)
def _free_floating_solve(parent, rootx, axes, bw, Ic, out, S, Ib, f, K, x):
    """:func:`free_floating_solve` on the arrays."""
    n = S.shape[0]
    b = axes.shape[0]
    for r in range(6):                   # ι₀V̇ (zero for a fixed base) in K's first row
        K[0, r] = 0.0
    if b > 0:
        for r in range(b):
            s = 0.0
            for k in range(n + 1):
                s += f[k, axes[r]]
            x[r] = bw[r] - s
        if not _locked_solve(rootx, axes, Ic, K, x):
            return 3
        for r in range(6):
            K[0, r] = 0.0
        for i in range(b):
            K[0, axes[i]] = x[i]
            out[i] = x[i]
    a = _row6(K, 0)
    for j in range(n - 1, -1, -1):       # the root's wrench is not needed: V̇ is solved for
        k = j + 1
        p = parent[j]
        if b > 0:
            m, nn, Io = inertia_of(Ib, k)
            d = inertia_times(m, nn, Io, a)
            f[k, 0] += d[0]
            f[k, 1] += d[1]
            f[k, 2] += d[2]
            f[k, 3] += d[3]
            f[k, 4] += d[4]
            f[k, 5] += d[5]
        s = 0.0
        for r in range(6):
            s += S[j, r] * f[k, r]
            f[p, r] += f[k, r]
        out[b + j] = s
    return 0 if all_finite(out) else 2


@njit(inline="always", **OPT)
def _locked_solve(rootx, axes, Ic, K, x):
    """``x ← M₀⁻¹x`` with ``M₀ = ι₀ᵀ(Ic + M_A)ι₀``: :func:`rigid_solve` for a free rigid
    base (all six axes) without added inertia, else :func:`cholesky_solve` of the b×b
    block in ``K``.  False if ``M₀`` is not positive definite."""
    b = axes.shape[0]
    rigid = b == 6
    for i in range(b):
        if axes[i] != i:
            rigid = False
    if rigid:
        for r in range(6):
            for c in range(6):
                if rootx[r, c] != 0.0:
                    rigid = False
    if rigid:
        return rigid_solve(Ic, x)
    for r in range(b):
        for c in range(b):
            K[r, c] = Ic[axes[r], axes[c]] + rootx[axes[r], axes[c]]
    return cholesky_solve(K, x, b)


@njit(inline="always", **OPT)
def rigid_solve(Ic, x):
    """``x ← Ic⁻¹x`` for the 6×6 spatial inertia ``Ic = [[m 1, −c~], [c~, J]]`` of a rigid
    body (or a sum of them, as :func:`.kinematics.body_inertia` lays them out) and
    ``x = [f; n]``: ``m a − c × α = f`` and ``c × a + J α = n`` give ``J_c α = n − c × f / m``
    with ``J_c = J + c~c~ / m`` (the rotational inertia about the centre of mass; a 3×3
    solve by its adjugate) and ``a = (f + c × α) / m``.  Two divisions and no square root
    instead of a 6×6 Cholesky.  False if ``Ic`` is not positive definite.  Inlined (straight
    scalar code, solved at every stage of the engine's step: called from another module, LLVM
    does not inline it)."""
    m = Ic[0, 0]
    if not m > 0.0:
        return False
    im = 1.0 / m
    c0, c1, c2 = Ic[1, 5], Ic[2, 3], Ic[0, 4]
    j00 = Ic[3, 3] - im * (c1 * c1 + c2 * c2)
    j11 = Ic[4, 4] - im * (c0 * c0 + c2 * c2)
    j22 = Ic[5, 5] - im * (c0 * c0 + c1 * c1)
    j01 = Ic[3, 4] + im * c0 * c1
    j02 = Ic[3, 5] + im * c0 * c2
    j12 = Ic[4, 5] + im * c1 * c2
    a00 = j11 * j22 - j12 * j12
    a01 = j02 * j12 - j01 * j22
    a02 = j01 * j12 - j02 * j11
    a11 = j00 * j22 - j02 * j02
    a12 = j01 * j02 - j00 * j12
    a22 = j00 * j11 - j01 * j01
    det = j00 * a00 + j01 * a01 + j02 * a02
    if not (j00 > 0.0 and a22 > 0.0 and det > 0.0):
        return False
    f0, f1, f2 = x[0], x[1], x[2]
    y0, y1, y2 = cross(c0, c1, c2, f0, f1, f2)
    r0, r1, r2 = x[3] - im * y0, x[4] - im * y1, x[5] - im * y2
    idet = 1.0 / det
    w0 = idet * (a00 * r0 + a01 * r1 + a02 * r2)
    w1 = idet * (a01 * r0 + a11 * r1 + a12 * r2)
    w2 = idet * (a02 * r0 + a12 * r1 + a22 * r2)
    z0, z1, z2 = cross(c0, c1, c2, w0, w1, w2)
    x[0], x[1], x[2] = im * (f0 + z0), im * (f1 + z1), im * (f2 + z2)
    x[3], x[4], x[5] = w0, w1, w2
    return True


@njit(**OPT)
def cholesky_solve(K, rhs, b):
    """Solve ``K x = rhs`` in place (``rhs ← x``) for the leading b×b block of the symmetric
    positive definite ``K`` (Cholesky, the reciprocals of the pivots kept on the diagonal:
    b divisions instead of 3b; ``K`` overwritten).  False if ``K`` is not positive
    definite."""
    for j in range(b):
        s = K[j, j]
        for k in range(j):
            s -= K[j, k] * K[j, k]
        if not s > 0.0:
            return False
        d = 1.0 / np.sqrt(s)
        K[j, j] = d
        for i in range(j + 1, b):
            s = K[i, j]
            for k in range(j):
                s -= K[i, k] * K[j, k]
            K[i, j] = s * d
    for i in range(b):
        s = rhs[i]
        for k in range(i):
            s -= K[i, k] * rhs[k]
        rhs[i] = s * K[i, i]
    for i in range(b - 1, -1, -1):
        s = rhs[i]
        for k in range(i + 1, b):
            s -= K[k, i] * rhs[k]
        rhs[i] = s * K[i, i]
    return True


@njit(**OPT)
def composite_inertia(Ib, Ic):
    """``Ic = Σ_k Ib[k]`` (6×6) of body inertias laid out by :func:`.kinematics.body_inertia`:
    the ten entries of their compact form (:func:`inertia_of`) summed from 0.0 body by body,
    the rest of the layout written from them.  Entry by entry the same numbers as
    :func:`.momentum.momentum_terms`' full sum ``Ic0`` (the same additions in the same
    order; its other entries add exact zeros or mirror these), at 10 additions a body
    instead of 36."""
    m = 0.0
    n0, n1, n2 = 0.0, 0.0, 0.0
    i00, i01, i02, i11, i12, i22 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for k in range(Ib.shape[0]):
        m += Ib[k, 0, 0]
        n0 += Ib[k, 1, 5]
        n1 += Ib[k, 2, 3]
        n2 += Ib[k, 0, 4]
        i00 += Ib[k, 3, 3]
        i01 += Ib[k, 3, 4]
        i02 += Ib[k, 3, 5]
        i11 += Ib[k, 4, 4]
        i12 += Ib[k, 4, 5]
        i22 += Ib[k, 5, 5]
    for r in range(3):
        for c in range(3):
            Ic[r, c] = m if r == c else 0.0
    Ic[3, 3], Ic[3, 4], Ic[3, 5] = i00, i01, i02
    Ic[4, 3], Ic[4, 4], Ic[4, 5] = i01, i11, i12
    Ic[5, 3], Ic[5, 4], Ic[5, 5] = i02, i12, i22
    Ic[0, 3], Ic[0, 4], Ic[0, 5] = 0.0, n2, -n1
    Ic[1, 3], Ic[1, 4], Ic[1, 5] = -n2, 0.0, n0
    Ic[2, 3], Ic[2, 4], Ic[2, 5] = n1, -n0, 0.0
    for r in range(3):
        for c in range(3):
            Ic[3 + r, c] = Ic[c, 3 + r]


@njit(**OPT)
def free_floating_inverse_dynamics(C, g, V, q, qd, qdd, bw, fw_body, fw, out):
    """Joint efforts for ``q̈`` with the vehicle free under the known wrench ``bw``: writes
    ``[V̇; τ]`` into ``out``.  The base row of RNEA is affine in V̇ with slope M₀ (65), so
    ``V̇ = M₀⁻¹(bw − RNEA₀(V̇ = 0))`` makes the base wrench the applied one and
    ``τ = RNEA_𝔪(V̇, q̈)`` — the arm equation (LP-2) of the coupled system,
    ``τ = M̂q̈ + Ĉq̇ + N̂ + ∂u/∂q + 𝒜ᵀF_η`` (docs/corrections.md, "Inverse dynamics"), without
    forming M̂ (:func:`free_floating_solve`)."""
    if not check_pose(g):
        return 1
    n = q.shape[0]
    ws = workspace(n)
    kinematics(C, q, ws)
    zb = np.zeros(C.axes.shape[0])
    rnea_forward(C, g, V, qd, zb, qdd, ws)
    add_frame_wrenches(fw_body, fw, ws.Rw, ws.Pw, ws.pA, -1.0)
    Ic = np.empty((6, 6))
    composite_inertia(ws.IA, Ic)
    return free_floating_solve(C, bw, Ic, out, ws)
