"""Pure-numpy fallback of the fast path: the same recursions as :mod:`.kernels`,
vectorised over a leading batch axis of N states (a single call is N = 1).

Used when numba is not installed (or on request, ``backend="numpy"``); same results to rounding,
slower per call.  Each function takes the constant arrays of a
:class:`~vm_dynamics.dynamics.fast.FastModel` and returns the result plus a per-state status array with the
codes of the numba kernels (0 ok, 1 bad pose, 2 non-finite result, 3 non-positive pivot).
"""
from __future__ import annotations

import numpy as np

from ...core import lie
from ...core.validation import MAX_COORDINATE, MAX_MAGNITUDE


def _skew(w: np.ndarray) -> np.ndarray:
    """Batched ``w~``: (..., 3) → (..., 3, 3)."""
    W = np.zeros(w.shape[:-1] + (3, 3))
    W[..., 0, 1], W[..., 0, 2] = -w[..., 2], w[..., 1]
    W[..., 1, 0], W[..., 1, 2] = w[..., 2], -w[..., 0]
    W[..., 2, 0], W[..., 2, 1] = -w[..., 1], w[..., 0]
    return W


def _mv(A, x):
    return np.einsum("...ij,...j->...i", A, x)


def _ad(V, W):
    """Batched ``ad_V W = [ω × w_v + v × w_ω; ω × w_ω]``."""
    return np.concatenate([np.cross(V[..., 3:], W[..., :3]) + np.cross(V[..., :3], W[..., 3:]),
                           np.cross(V[..., 3:], W[..., 3:])], axis=-1)


def _bias(I, v):
    """Batched ``−ad_vᵀ (I v)``."""
    h = _mv(I, v)
    return np.concatenate([np.cross(v[..., 3:], h[..., :3]),
                           np.cross(v[..., :3], h[..., :3]) + np.cross(v[..., 3:], h[..., 3:])],
                          axis=-1)


def check_poses(g: np.ndarray) -> np.ndarray:
    """Per-state bool: g is a rigid transform (same test as ``Model.as_pose``)."""
    R = g[..., :3, :3]
    with np.errstate(invalid="ignore"):
        ok = np.all(np.isfinite(g), axis=(-2, -1))
        ok &= np.max(np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)), axis=(-2, -1)) <= 1e-6
        ok &= np.linalg.det(np.where(ok[..., None, None], R, np.eye(3))) >= 0.0
        ok &= np.max(np.abs(g[..., 3, :] - [0.0, 0.0, 0.0, 1.0]), axis=-1) <= 1e-12
    return ok


def body_inertia(row, R, p):
    """Spatial inertia of a body with home row ``(m, h, I_o)`` after the motion ``(R, p)``."""
    N = R.shape[0]
    m, h, Io = row[0], row[1:4], row[4:13].reshape(3, 3)
    Rh = R @ h
    hn = Rh + m * p
    pr = np.einsum("ni,ni->n", p, Rh)
    pp = np.einsum("ni,ni->n", p, p)
    Ioc = (R @ Io @ np.swapaxes(R, 1, 2) - p[:, :, None] * Rh[:, None, :]
           - Rh[:, :, None] * p[:, None, :] - m * p[:, :, None] * p[:, None, :]
           + (2.0 * pr + m * pp)[:, None, None] * np.eye(3))
    out = np.zeros((N, 6, 6))
    out[:, :3, :3] = m * np.eye(3)
    H = _skew(hn)
    out[:, :3, 3:] = -H
    out[:, 3:, :3] = H
    out[:, 3:, 3:] = 0.5 * (Ioc + np.swapaxes(Ioc, 1, 2))
    return out


@np.errstate(invalid="ignore", divide="ignore", over="ignore")   # callers test finiteness
def kinematics(c, q):
    """Batched product of exponentials: G_k = (Rw, Pw), S_j, body inertias Ib (vehicle frame)."""
    N, n = q.shape
    Rw = np.empty((N, n + 1, 3, 3))
    Pw = np.empty((N, n + 1, 3))
    S = np.empty((N, n, 6))
    Ib = np.empty((N, n + 1, 6, 6))
    Rw[:, 0] = np.eye(3)
    Pw[:, 0] = 0.0
    Ib[:, 0] = body_inertia(c.inert[0], Rw[:, 0], Pw[:, 0])
    for j in range(n):
        p, k = c.parent[j], j + 1
        v, w = c.xi[j, :3], c.xi[j, 3:]
        Rp, pp = Rw[:, p], Pw[:, p]
        Rw_, Rv = Rp @ w, Rp @ v
        S[:, j, :3] = Rv + np.cross(pp, Rw_)
        S[:, j, 3:] = Rw_
        th = q[:, j]
        if c.jtype[j] == 0:
            W = lie.skew(w)
            RE = (np.eye(3) + np.sin(th)[:, None, None] * W
                  + (1.0 - np.cos(th))[:, None, None] * (W @ W))
            a = np.cross(w, v)
            tE = a - RE @ a + np.outer(th * (w @ v), w)
            Rw[:, k] = Rp @ RE
            Pw[:, k] = pp + _mv(Rp, tE)
        else:
            Rw[:, k] = Rp
            Pw[:, k] = pp + Rv * th[:, None]
        Ib[:, k] = body_inertia(c.inert[k], Rw[:, k], Pw[:, k])
    return Rw, Pw, S, Ib


def velocities(c, S, V, qd):
    N, n = qd.shape
    vel = np.zeros((N, n + 1, 6))
    vel[:, 0, c.axes] = V
    cacc = np.empty((N, n, 6))
    for j in range(n):
        p = c.parent[j]
        Sq = S[:, j] * qd[:, j, None]
        cacc[:, j] = _ad(vel[:, p], Sq)
        vel[:, j + 1] = vel[:, p] + Sq
    return vel, cacc


def external(c, bw, fw_body, fw, Rw, Pw, n):
    """Per-body external wrenches (vehicle axes, about the vehicle origin), (N, n+1, 6)."""
    N = bw.shape[0]
    F = np.zeros((N, n + 1, 6))
    F[:, 0, c.axes] = bw
    for i, k in enumerate(fw_body):
        f = _mv(Rw[:, k], fw[:, i, :3])
        F[:, k, :3] += f
        F[:, k, 3:] += np.cross(Pw[:, k], f) + _mv(Rw[:, k], fw[:, i, 3:])
    return F


@np.errstate(invalid="ignore", divide="ignore", over="ignore")   # reported via the status
def forward_dynamics(c, g, V, q, qd, tau, bw, fw_body, fw):
    """Batched articulated-body forward dynamics → (out (N, b+n) = [V̇, q̈], status (N,))."""
    N, n = q.shape
    b = len(c.axes)
    ok = check_poses(g)
    Rw, Pw, S, IA = kinematics(c, q)
    vel, cacc = velocities(c, S, V, qd)
    pA = _bias(IA, vel) - external(c, bw, fw_body, fw, Rw, Pw, n)
    pA[:, 0] += _bias(c.root_extra, vel[:, 0])     # added inertia M_A: −ad_Vᵀ(M_A V), no gravity
    U = np.empty((N, n, 6))
    Dinv = np.empty((N, n))
    u = np.empty((N, n))
    for j in range(n - 1, -1, -1):
        k, p = j + 1, c.parent[j]
        Ik = IA[:, k]
        U[:, j] = _mv(Ik, S[:, j])
        D = np.einsum("ni,ni->n", S[:, j], U[:, j])
        Dinv[:, j] = 1.0 / D
        u[:, j] = tau[:, j] - np.einsum("ni,ni->n", S[:, j], pA[:, k])
        Ia = Ik - Dinv[:, j, None, None] * U[:, j, :, None] * U[:, j, None, :]
        IA[:, p] += Ia
        pA[:, p] += pA[:, k] + _mv(Ia, cacc[:, j]) + U[:, j] * (u[:, j] * Dinv[:, j])[:, None]
    ag = np.zeros((N, 6))
    ag[:, :3] = np.einsum("nij,i->nj", g[:, :3, :3], c.grav)
    out = np.empty((N, b + n))
    acc = np.empty((N, n + 1, 6))
    acc[:, 0] = -ag
    if b:
        ax = c.axes
        K = (IA[:, 0] + c.root_extra)[:, ax][:, :, ax]
        rhs = (_mv(IA[:, 0], ag) - pA[:, 0])[:, ax]
        good = ok & np.all(np.isfinite(K), axis=(1, 2))
        K = np.where(good[:, None, None], K, np.eye(b))
        Vd = np.linalg.solve(K, rhs[..., None])[..., 0]
        out[:, :b] = Vd
        acc[:, 0, ax] += Vd
    for j in range(n):
        k, p = j + 1, c.parent[j]
        a = acc[:, p] + cacc[:, j]
        qdd = (u[:, j] - np.einsum("ni,ni->n", U[:, j], a)) * Dinv[:, j]
        acc[:, k] = a + S[:, j] * qdd[:, None]
        out[:, b + j] = qdd
    return out, _status(ok, out)


@np.errstate(invalid="ignore", divide="ignore", over="ignore")
def inverse_dynamics(c, g, V, q, qd, Vdot, qdd, fw_body, fw):
    """Batched recursive Newton–Euler → (out (N, b+n) = [base wrench, τ], status (N,))."""
    N, n = q.shape
    b = len(c.axes)
    ok = check_poses(g)
    Rw, Pw, S, Ib = kinematics(c, q)
    vel, cacc = velocities(c, S, V, qd)
    acc = np.zeros((N, n + 1, 6))
    acc[:, 0, c.axes] = Vdot
    acc[:, 0, :3] -= np.einsum("nij,i->nj", g[:, :3, :3], c.grav)
    for j in range(n):
        acc[:, j + 1] = acc[:, c.parent[j]] + cacc[:, j] + S[:, j] * qdd[:, j, None]
    f = _mv(Ib, acc) + _bias(Ib, vel) - external(c, np.zeros((N, b)), fw_body, fw, Rw, Pw, n)
    f[:, 0] += Vdot @ c.root_extra[:, c.axes].T + _bias(c.root_extra, vel[:, 0])   # M_A
    out = np.empty((N, b + n))
    for j in range(n - 1, -1, -1):
        out[:, b + j] = np.einsum("ni,ni->n", S[:, j], f[:, j + 1])
        f[:, c.parent[j]] += f[:, j + 1]
    out[:, :b] = f[:, 0, c.axes]
    return out, _status(ok, out)


@np.errstate(invalid="ignore", divide="ignore", over="ignore")   # callers test finiteness
def mass_matrix(c, q):
    """Composite-rigid-body algorithm for one configuration q (n,) → M (b+n, b+n); the vehicle's
    added inertia ``c.root_extra`` adds to M₀."""
    n = q.shape[0]
    b = len(c.axes)
    _, _, S, Ic = kinematics(c, q[None])
    S, Ic = S[0], Ic[0]
    for j in range(n - 1, -1, -1):
        Ic[c.parent[j]] += Ic[j + 1]
    M = np.zeros((b + n, b + n))
    M[:b, :b] = (Ic[0] + c.root_extra)[np.ix_(c.axes, c.axes)]
    for j in range(n):
        F = Ic[j + 1] @ S[j]
        i = j
        while i >= 0:
            M[b + i, b + j] = M[b + j, b + i] = S[i] @ F
            i = c.parent[i] - 1
        M[:b, b + j] = M[b + j, :b] = F[c.axes]
    return M


def _status(ok, out):
    st = np.where(ok, 0, 1)
    bad = ok & ~np.all(np.isfinite(out), axis=1)
    st[bad] = 2
    return st


def states_in_range(X, status) -> bool:
    """:func:`.kernels.checked.states_in_range` vectorised with numpy (the numba-free path)."""
    g, V, q, qd, tau, bw = X.g, X.V, X.q, X.qd, X.tau, X.bw
    with np.errstate(invalid="ignore"):
        good = check_poses(g)
        status[~good] = 1
        inr = np.all(np.abs(g[:, :3, 3]) <= MAX_MAGNITUDE, axis=-1)
        inr &= np.all(np.abs(q) <= MAX_COORDINATE, axis=-1)
        for a in (V, qd, tau, bw):
            inr &= np.all(np.abs(a) <= MAX_MAGNITUDE, axis=-1)
    status[good & ~inr] = 4
    return bool(np.all(good & inr))
