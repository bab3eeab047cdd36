"""The capture's right-hand side at one RK stage as one compiled call (:func:`stage_rates`).

:meth:`~vm_dynamics.capture.system.CaptureSimulator._evaluate` written out in Python costs
~60 µs free and ~250 µs grasped per stage (the velocities from the momenta, the grasp frame's
twist, the force elements per link, the forward dynamics: tens of small numpy calls each).
This kernel does the same arithmetic in one call on the state ``(G, y)`` whenever no contact
can act (every chaser primitive's bounding sphere apart from the target's), no wrench is
measured and the force elements are tidal gravity (:class:`~.orbit.TidalGravity` or its
family): the common stage.  It reports a possible contact (or a failed forward dynamics) by
its status, and the simulator then evaluates that stage in Python.  It reuses the compiled
kinematics, the composite-rigid-body mass matrix and the articulated-body forward dynamics of
:mod:`vm_dynamics.dynamics.fast.kernels` and the per-body tidal gravity of :mod:`.orbit_kernels`.

The two kernels are long on purpose (``noqa: C901``): one compiled pass per stage and per
step, since every compiled call across modules passes the arrays again (tens of arguments).
A module of its own, importing only kernel-level code, so that the package's kernel-cache
stamp (:mod:`vm_dynamics.dynamics.fast.kernels.cache`) covers the kernels and what they import
only.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.validation import MAX_MAGNITUDE
from ..dynamics.fast.kernels import checked
from ..dynamics.fast.kernels.algebra import (
    dexp_inv_apply,
    mul4,
    orthonormalize,
    se3_exp,
    within,
)
from ..dynamics.fast.kernels.jit import OPT, njit
from ..dynamics.fast.kernels.kinematics import kinematics, workspace
from .orbit_kernels import tidal_body

__all__ = ["stage_rates", "rkmk_step", "VELOCITIES", "GAPS", "RATES", "NEAR"]

#: ``mode`` of :func:`stage_rates`: the velocities only, also the primitives' gaps, everything.
VELOCITIES, GAPS, RATES = 0, 1, 2
#: A gap (m) at or below which a contact may act: the caller evaluates the stage in Python,
#: whose own test (distance ≤ radii + 1e-9) then decides; wider than that test by far more
#: than the rounding of the two ways of computing the distance.
NEAR = 1e-6


@njit(inline="always", **OPT)
def _frame(Rw, Pw, body, home, out):
    """``G_body ḡ_frame`` (vehicle frame), as :func:`.kinematics.frame_pose` writes it."""
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


@njit(inline="always", **OPT)
def _coad_inv(g, w, out):
    """``Ad_{g⁻¹}ᵀ w``: a wrench ``[f; n]`` in g's axes at its origin, in the outer frame about
    its origin: ``[R f; p × R f + R n]``."""
    f0 = g[0, 0] * w[0] + g[0, 1] * w[1] + g[0, 2] * w[2]
    f1 = g[1, 0] * w[0] + g[1, 1] * w[1] + g[1, 2] * w[2]
    f2 = g[2, 0] * w[0] + g[2, 1] * w[1] + g[2, 2] * w[2]
    p0, p1, p2 = g[0, 3], g[1, 3], g[2, 3]
    out[0], out[1], out[2] = f0, f1, f2
    out[3] = p1 * f2 - p2 * f1 + g[0, 0] * w[3] + g[0, 1] * w[4] + g[0, 2] * w[5]
    out[4] = p2 * f0 - p0 * f2 + g[1, 0] * w[3] + g[1, 1] * w[4] + g[1, 2] * w[5]
    out[5] = p0 * f1 - p1 * f0 + g[2, 0] * w[3] + g[2, 1] * w[4] + g[2, 2] * w[5]


@njit(inline="always", **OPT)
def _body_momentum(g, mu, out):
    """``Ad_gᵀ μ = [Rᵀf; Rᵀ(n − p × f)]``: a spatial momentum in the body's axes."""
    f0, f1, f2 = mu[0], mu[1], mu[2]
    p0, p1, p2 = g[0, 3], g[1, 3], g[2, 3]
    n0 = mu[3] - (p1 * f2 - p2 * f1)
    n1 = mu[4] - (p2 * f0 - p0 * f2)
    n2 = mu[5] - (p0 * f1 - p1 * f0)
    for i in range(3):
        out[i] = g[0, i] * f0 + g[1, i] * f1 + g[2, i] * f2
        out[3 + i] = g[0, i] * n0 + g[1, i] * n1 + g[2, i] * n2


@njit(**OPT)
def stage_rates(C, parent, G, y, grasped, tau, bw, has_bw, MinvT,  # noqa: C901 (one pass)
                grasp_body, grasp_home, X, XiAd,
                prim_body, prim_home, prim_radius, shape_pose, r_T, t_half,
                el_mu, el_rc, el_vc, el_grad,
                link_body, link_home, link_m, link_c, link_I, link_fb, link_T,
                t_m, t_c, t_I, t_home, t_AdT, grasp_fb, grasp_T,
                mode, vel, g_T, gaps, ydot):
    """The capture's rates at the stage state ``(G, y)`` (:mod:`.system`: ``G`` the 8×8
    ``diag(g, g_T)`` free or the chaser's 4×4 pose grasped, ``y`` its vector state) of the
    chaser model ``C`` (``parent``: each joint's parent joint, −1 at the vehicle), joint efforts
    ``tau`` and, if ``has_bw``, the body wrench ``bw``.

    Writes the body velocities ``vel = [V; V_T]`` (the target's from the weld while
    grasped) and the target's pose ``g_T``; with ``mode`` ≥ :data:`GAPS` (free phase)
    ``gaps[k]``, a lower bound of the distance between primitive k (on chaser body
    ``prim_body[k]`` at ``prim_home[k]``, bounding radius ``prim_radius[k]``) and the target's
    shape at ``g_T·shape_pose`` (its bounding sphere of radius ``r_T``, or the box of half
    extents ``t_half`` if ``t_half[0] > 0``); with :data:`RATES` the rate ``ydot`` of ``y``.
    Returns 0, or 1 if a gap is ≤ :data:`NEAR` (a contact may act: the caller evaluates the
    stage), or the forward dynamics' status + 10.

    The grasp weld: ``grasp_body``/``grasp_home`` the grasp frame, ``X`` the target in it,
    ``XiAd = Ad_{X⁻¹}``; ``MinvT`` the target's inverse spatial inertia; per tidal element e
    ``el_mu[e], el_rc[e], el_vc[e], el_grad[e]``; per chaser link ``link_*`` (body, home pose,
    mass, CoM, inertia, and its row of the forward dynamics' frame wrenches: body ``link_fb``
    and map ``link_T``), the target's ``t_*`` (``t_AdT = Ad_{home⁻¹}ᵀ``) and the grasp frame's
    row ``grasp_fb``/``grasp_T``."""
    n = tau.shape[0]
    ws = workspace(n)
    q = y[6:6 + n]
    qd = y[6 + n:6 + 2 * n]
    g = G[:4, :4]
    kinematics(C, q, ws)
    Rw, Pw, S = ws.Rw, ws.Pw, ws.S
    # V = M₀⁻¹(Ad_gᵀ μ − M₀𝔪 q̇)  (LP-3)
    M = np.empty((6 + n, 6 + n))
    st = checked.mass_matrix(C, q, M)
    if st:
        return 10 + st
    P = np.empty(6)
    _body_momentum(g, y[:6], P)
    rhs = np.empty(6)
    for r in range(6):
        s = P[r]
        for c in range(n):
            s -= M[r, 6 + c] * qd[c]
        rhs[r] = s
    V = np.linalg.solve(np.ascontiguousarray(M[:6, :6]), rhs)
    for r in range(6):
        vel[r] = V[r]
    gf = np.empty((4, 4))
    gw = np.empty((4, 4))
    V_T = np.empty(6)
    if grasped:
        _frame(Rw, Pw, grasp_body, grasp_home, gf)
        mul4(g, gf, gw)
        mul4(gw, X, g_T)
        # the grasp frame's body twist: V + Σ_{j ∈ anc} S_j q̇_j, then Ad_{g_f⁻¹}
        W = np.empty(6)
        for r in range(6):
            W[r] = V[r]
        j = grasp_body - 1
        while j >= 0:
            for r in range(6):
                W[r] += S[j, r] * qd[j]
            j = parent[j]
        a0 = W[0] - (gf[1, 3] * W[5] - gf[2, 3] * W[4])
        a1 = W[1] - (gf[2, 3] * W[3] - gf[0, 3] * W[5])
        a2 = W[2] - (gf[0, 3] * W[4] - gf[1, 3] * W[3])
        Vf = np.empty(6)
        for i in range(3):
            Vf[i] = gf[0, i] * a0 + gf[1, i] * a1 + gf[2, i] * a2
            Vf[3 + i] = gf[0, i] * W[3] + gf[1, i] * W[4] + gf[2, i] * W[5]
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += XiAd[r, c] * Vf[c]
            V_T[r] = s
            vel[6 + r] = s
    else:
        for r in range(4):
            for c in range(4):
                g_T[r, c] = G[4 + r, 4 + c]
        PT = np.empty(6)
        _body_momentum(g_T, y[6 + 2 * n:12 + 2 * n], PT)
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += MinvT[r, c] * PT[c]
            V_T[r] = s
            vel[6 + r] = s
    if mode == VELOCITIES:
        return 0
    near = False
    if not grasped and prim_body.shape[0] > 0:
        gs = np.empty((4, 4))
        mul4(g_T, shape_pose, gs)
        for k in range(prim_body.shape[0]):
            _frame(Rw, Pw, prim_body[k], prim_home[k], gf)
            mul4(g, gf, gw)
            d0, d1, d2 = gw[0, 3] - gs[0, 3], gw[1, 3] - gs[1, 3], gw[2, 3] - gs[2, 3]
            if t_half[0] > 0.0:                # a box: the primitive's centre to the box
                e = 0.0
                for i in range(3):
                    o = abs(gs[0, i] * d0 + gs[1, i] * d1 + gs[2, i] * d2) - t_half[i]
                    if o > 0.0:
                        e += o * o
                gaps[k] = math.sqrt(e) - prim_radius[k]
            else:
                gaps[k] = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - (prim_radius[k] + r_T)
            if gaps[k] <= NEAR:
                near = True
    if mode == GAPS or near:
        return 1 if near else 0
    # the force elements: per chaser link, then the target (its one-link model's frame)
    L = link_body.shape[0]
    E = el_mu.shape[0]
    rows = 0 if E == 0 else L + (1 if grasped else 0)
    fb = np.empty(rows, dtype=np.int64)
    fw = np.zeros((rows, 6))
    ext_C = np.zeros(6)
    ext_T = np.zeros(6)
    P_a = 0.0
    w = np.empty(6)
    dU = np.zeros(3)
    if rows:
        for k in range(L):
            fb[k] = link_fb[k]
        if grasped:
            fb[L] = grasp_fb
    bw_T = np.zeros(6)
    for e in range(E):
        dU[0] = 0.0
        dU[1] = 0.0
        dU[2] = 0.0
        for k in range(L):
            _frame(Rw, Pw, link_body[k], link_home[k], gf)
            mul4(g, gf, gw)
            tidal_body(el_mu[e], link_m[k], el_rc[e], gw, link_c[k], link_I[k], el_grad[e], w,
                       ext_C, dU)
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += link_T[k, r, c] * w[c]
                fw[k, r] += s
        P_a += dU[0] * el_vc[e, 0] + dU[1] * el_vc[e, 1] + dU[2] * el_vc[e, 2]
    for e in range(E):
        dU[0] = 0.0
        dU[1] = 0.0
        dU[2] = 0.0
        mul4(g_T, t_home, gw)
        tidal_body(el_mu[e], t_m, el_rc[e], gw, t_c, t_I, el_grad[e], w, ext_T, dU)
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += t_AdT[r, c] * w[c]
            bw_T[r] += s
        P_a += dU[0] * el_vc[e, 0] + dU[1] * el_vc[e, 1] + dU[2] * el_vc[e, 2]
    if grasped and rows:                       # the target's wrench at the grasp frame
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += XiAd[c, r] * bw_T[c]
            w[r] = s
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += grasp_T[r, c] * w[c]
            fw[L, r] = s
    out = np.empty(6 + n)
    bwa = np.zeros(6)
    if has_bw:
        for r in range(6):
            bwa[r] = bw[r]
    st = checked.forward_dynamics(C, g, V, q, qd, tau, bwa, fb, fw, out)
    if st:
        return 10 + st
    # ẏ = [μ̇; q̇; q̈; (μ̇_T); impulse rate; elements' impulse rate; P_in, P_d, P_x, A-rate]
    imp = np.zeros(6)
    P_in = 0.0
    for c in range(n):
        P_in += tau[c] * qd[c]
    if has_bw:
        _coad_inv(g, bw, imp)
        P_in += bw[0] * V[0] + bw[1] * V[1] + bw[2] * V[2] + bw[3] * V[3] + bw[4] * V[4] \
            + bw[5] * V[5]
    for r in range(6):
        ydot[r] = ext_C[r] + imp[r] + (ext_T[r] if grasped else 0.0)
    for c in range(n):
        ydot[6 + c] = qd[c]
        ydot[6 + n + c] = out[6 + c]
    k = 6 + 2 * n
    if not grasped:
        for r in range(6):
            ydot[k + r] = ext_T[r]
        k += 6
    for r in range(6):
        ydot[k + r] = imp[r]
        ydot[k + 6 + r] = ext_C[r] + ext_T[r]
    ydot[k + 12] = P_in
    ydot[k + 13] = 0.0
    ydot[k + 14] = 0.0
    ydot[k + 15] = P_a
    return 0


@njit(**OPT)
def _block_exp(G, Theta, nblk, out, E):
    """``out = G exp(Θ)`` block by block (``G = diag(g₁, …)``, ``Θ = [Θ₁; …]``)."""
    for k in range(nblk):
        se3_exp(Theta[6 * k:6 * k + 6], E)
        o = 4 * k
        for r in range(4):
            for c in range(4):
                out[o + r, o + c] = G[o + r, o] * E[0, c] + G[o + r, o + 1] * E[1, c] \
                    + G[o + r, o + 2] * E[2, c] + G[o + r, o + 3] * E[3, c]


@njit(**OPT)
def rkmk_step(C, parent, grasped, tau, bw, has_bw, MinvT,  # noqa: C901 (the step in one call)
              grasp_body, grasp_home, X, XiAd,
              prim_body, prim_home, prim_radius, shape_pose, r_T, t_half, el_mu, el_rc, el_vc,
              el_grad, link_body, link_home, link_m, link_c, link_I, link_fb, link_T,
              t_m, t_c, t_I, t_home, t_AdT, grasp_fb, grasp_T, A, Bw, h, G, y, G_out, y_out):
    """One RKMK step of size ``h`` (tableau ``A``, weights ``Bw``) of the capture state
    ``(G, y)`` into ``(G_out, y_out)``, the stages by :func:`stage_rates` (the element arrays
    ``el_*`` per stage: ``el_mu[i]`` …), the algebra per SE(3) block
    (:func:`vm_dynamics.sim.integrators.rkmk_step` on :class:`~.system.ProductGroup` or the
    chaser's group); the rotation blocks reorthonormalized.  Returns 0, or a stage's non-zero
    status (a contact may act, the forward dynamics failed), 20 if an algebra increment is out
    of range or 21 if the new state is not finite: the caller then takes the step in Python."""
    s = Bw.shape[0]
    m = y.shape[0]
    nblk = 1 if grasped else 2
    dim = 6 * nblk
    K = np.zeros((s, dim))
    L = np.zeros((s, m))
    Theta = np.zeros(dim)
    yi = np.empty(m)
    Gi = np.zeros((4 * nblk, 4 * nblk))
    E = np.empty((4, 4))
    vel = np.empty(12)
    g_T = np.empty((4, 4))
    gaps = np.empty(prim_body.shape[0])
    ydot = np.empty(m)
    dx = np.empty(6)
    for i in range(s):
        moved = False
        for r in range(dim):
            acc = 0.0
            for j in range(i):
                acc += A[i, j] * K[j, r]
            Theta[r] = h * acc
            if Theta[r] != 0.0:
                moved = True
        for r in range(m):
            acc = 0.0
            for j in range(i):
                acc += A[i, j] * L[j, r]
            yi[r] = y[r] + h * acc
        if moved:
            if not within(Theta, MAX_MAGNITUDE):
                return 20
            _block_exp(G, Theta, nblk, Gi, E)
        else:
            for r in range(4 * nblk):
                for c in range(4 * nblk):
                    Gi[r, c] = G[r, c]
        st = stage_rates(C, parent, Gi, yi, grasped, tau, bw, has_bw, MinvT, grasp_body,
                         grasp_home, X, XiAd, prim_body, prim_home, prim_radius, shape_pose, r_T,
                         t_half, el_mu[i], el_rc[i], el_vc[i], el_grad, link_body, link_home, link_m,
                         link_c, link_I, link_fb, link_T, t_m, t_c, t_I, t_home, t_AdT,
                         grasp_fb, grasp_T, RATES, vel, g_T, gaps, ydot)
        if st:
            return st
        for k in range(nblk):                  # Θ̇ = dexp⁻¹_{−Θ} V per block
            if moved:
                for r in range(6):
                    dx[r] = -Theta[6 * k + r]
                dexp_inv_apply(dx, vel[6 * k:6 * k + 6], K[i, 6 * k:6 * k + 6])
            else:
                for r in range(6):
                    K[i, 6 * k + r] = vel[6 * k + r]
        for r in range(m):
            L[i, r] = ydot[r]
    for r in range(dim):
        acc = 0.0
        for i in range(s):
            acc += Bw[i] * K[i, r]
        Theta[r] = h * acc
    for r in range(m):
        acc = 0.0
        for i in range(s):
            acc += Bw[i] * L[i, r]
        y_out[r] = y[r] + h * acc
    if not within(Theta, MAX_MAGNITUDE):
        return 20
    for r in range(4 * nblk):
        for c in range(4 * nblk):
            G_out[r, c] = 0.0
    _block_exp(G, Theta, nblk, G_out, E)
    for k in range(nblk):
        orthonormalize(G_out[4 * k:4 * k + 4, 4 * k:4 * k + 4])
    for r in range(4 * nblk):
        for c in range(4 * nblk):
            if not np.isfinite(G_out[r, c]):
                return 21
    for r in range(m):
        if not np.isfinite(y_out[r]):
            return 21
    return 0
