"""The Euler-angle comparison run compiled: classical RK4 on ``(x, ẋ)`` with the accelerations of
:meth:`~vm_dynamics.analysis.euler_model.EulerAngleModel.accelerations` (the LP inverse dynamics
pulled back to the ZYX coordinates, ``M_E ẍ = Bᵀ(F − ID(ż = Ḃẋ))``), one compiled loop over the
steps instead of a Python call per stage.  It stops at the first stage the model cannot
evaluate and returns that stage's state, so that the caller names the reason exactly as the
Python loop does (it evaluates that one stage again in Python)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..dynamics.fast.kernels.checked import inverse_dynamics, mass_matrix
from ..dynamics.fast.kernels.jit import OPT, njit

__all__ = ["euler_rk4", "SINGULAR", "STAGE_FAILED", "NON_FINITE", "EulerScratch"]

#: Statuses of :func:`euler_rk4` (0: every step done).
SINGULAR, STAGE_FAILED, NON_FINITE = 10, 11, 12


class EulerScratch(NamedTuple):
    """The work arrays of one stage: the pose ``g`` (4×4), the mass matrix ``M``, no frame
    wrenches (``ib``, ``fw``), the inverse dynamics' output ``idout`` and the right-hand side
    ``rhs``."""

    g: np.ndarray
    M: np.ndarray
    ib: np.ndarray
    fw: np.ndarray
    idout: np.ndarray
    rhs: np.ndarray


@njit(**OPT)
def _solve(A, b, out):
    """``A out = b`` by Gaussian elimination with partial pivoting (A, b overwritten); False if
    a pivot is zero or the result not finite."""
    n = b.shape[0]
    for c in range(n):
        p = c
        for r in range(c + 1, n):
            if abs(A[r, c]) > abs(A[p, c]):
                p = r
        if A[p, c] == 0.0:
            return False
        if p != c:
            for k in range(n):
                A[c, k], A[p, k] = A[p, k], A[c, k]
            b[c], b[p] = b[p], b[c]
        for r in range(c + 1, n):
            f = A[r, c] / A[c, c]
            for k in range(c, n):
                A[r, k] -= f * A[c, k]
            b[r] -= f * b[c]
    for r in range(n - 1, -1, -1):
        s = b[r]
        for k in range(r + 1, n):
            s -= A[r, k] * out[k]
        out[r] = s / A[r, r]
    return np.all(np.isfinite(out))


@njit(**OPT)
def _rows(A, L, r0):
    """``A[r0:r0+3] = L @ A[r0:r0+3]`` (3×3 ``L``)."""
    for c in range(A.shape[1]):
        a0, a1, a2 = A[r0, c], A[r0 + 1, c], A[r0 + 2, c]
        for r in range(3):
            A[r0 + r, c] = L[r, 0] * a0 + L[r, 1] * a1 + L[r, 2] * a2


@njit(**OPT)
def _cols(A, L, c0):
    """``A[:, c0:c0+3] = A[:, c0:c0+3] @ Lᵀ`` (3×3 ``L``)."""
    for r in range(A.shape[0]):
        a0, a1, a2 = A[r, c0], A[r, c0 + 1], A[r, c0 + 2]
        for c in range(3):
            A[r, c0 + c] = a0 * L[c, 0] + a1 * L[c, 1] + a2 * L[c, 2]


@njit(**OPT)
def _accel(C, x, xd, F, work, out, sing):
    """``ẍ`` at ``(x, ẋ)`` of the model ``C`` into ``out`` (``work``: an :class:`EulerScratch`);
    a status (0 ok)."""
    g, M, idout, rhs = work.g, work.M, work.idout, work.rhs
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(xd))):
        return STAGE_FAILED
    cf, sf = np.cos(x[3]), np.sin(x[3])
    ct, st = np.cos(x[4]), np.sin(x[4])
    cp, sp = np.cos(x[5]), np.sin(x[5])
    if abs(ct) < sing:
        return SINGULAR
    R = np.empty((3, 3))
    R[0, 0], R[0, 1], R[0, 2] = cp * ct, cp * st * sf - sp * cf, cp * st * cf + sp * sf
    R[1, 0], R[1, 1], R[1, 2] = sp * ct, sp * st * sf + cp * cf, sp * st * cf - cp * sf
    R[2, 0], R[2, 1], R[2, 2] = -st, ct * sf, ct * cf
    T = np.array([[1.0, 0.0, -st], [0.0, cf, ct * sf], [0.0, -sf, ct * cf]])
    d0, d1 = xd[3], xd[4]
    Tdot = np.array([[0.0, 0.0, -ct * d1],
                     [0.0, -sf * d0, ct * cf * d0 - st * sf * d1],
                     [0.0, -cf * d0, -ct * sf * d0 - st * cf * d1]])
    dim = x.shape[0]
    V = np.empty(6)
    zd = np.zeros(dim)
    for r in range(3):
        V[r] = R[0, r] * xd[0] + R[1, r] * xd[1] + R[2, r] * xd[2]           # Rᵀ ṗ
        V[3 + r] = T[r, 0] * xd[3] + T[r, 1] * xd[4] + T[r, 2] * xd[5]       # T Θ̇
        zd[3 + r] = Tdot[r, 0] * xd[3] + Tdot[r, 1] * xd[4] + Tdot[r, 2] * xd[5]
    zd[0] = V[5] * V[1] - V[4] * V[2]
    zd[1] = V[3] * V[2] - V[5] * V[0]
    zd[2] = V[4] * V[0] - V[3] * V[1]
    for r in range(3):
        for c in range(3):
            g[r, c] = R[r, c]
        g[r, 3] = x[r]
    q = np.ascontiguousarray(x[6:])
    qd = np.ascontiguousarray(xd[6:])
    st_ = inverse_dynamics(C, g, V, q, qd, np.ascontiguousarray(zd[:6]),
                           np.ascontiguousarray(zd[6:]), work.ib, work.fw, idout)
    if st_:
        return STAGE_FAILED
    st_ = mass_matrix(C, q, M)
    if st_:
        return STAGE_FAILED
    for i in range(dim):
        rhs[i] = F[i] - idout[i]
    Tt = np.ascontiguousarray(T.T)
    _rows(M, R, 0)          # Bᵀ M B, B = blockdiag(Rᵀ, T, I)
    _rows(M, Tt, 3)
    _cols(M, R, 0)
    _cols(M, Tt, 3)
    r0, r1, r2 = rhs[0], rhs[1], rhs[2]
    for r in range(3):
        rhs[r] = R[r, 0] * r0 + R[r, 1] * r1 + R[r, 2] * r2
    r0, r1, r2 = rhs[3], rhs[4], rhs[5]
    for r in range(3):
        rhs[3 + r] = T[0, r] * r0 + T[1, r] * r1 + T[2, r] * r2
    if not _solve(M, rhs, out):
        return STAGE_FAILED
    return 0


@njit(**OPT)
def euler_rk4(C, x0, xd0, F, dt, X, XD, fail, sing):
    """RK4 steps of the model ``C`` (:class:`~vm_dynamics.dynamics.fast.records.ModelConstants`)
    from ``(x0, ẋ0)`` with constant inputs ``F = [base wrench; τ]`` into ``X, XD`` (rows
    0..steps, row 0 the start); returns ``(status, steps done)``; on a failed stage ``fail``
    (2, dim) holds that stage's ``(x, ẋ)``."""
    dim = x0.shape[0]
    work = EulerScratch(np.eye(4), np.empty((dim, dim)), np.zeros(0, dtype=np.int64),
                        np.zeros((0, 6)), np.empty(dim), np.empty(dim))
    K = np.empty((4, dim))      # stage accelerations
    S = np.empty((4, dim))      # stage velocities (S[0] = ẋ)
    xs = np.empty(dim)
    X[0] = x0
    XD[0] = xd0
    steps = X.shape[0] - 1
    h = dt / 2
    for k in range(steps):
        x, xd = X[k], XD[k]
        S[0] = xd
        for s in range(4):
            if s == 0:
                pos, vel = x, xd
            else:
                c = dt if s == 3 else h
                for i in range(dim):
                    S[s, i] = xd[i] + c * K[s - 1, i]
                    xs[i] = x[i] + c * S[s - 1, i]
                pos, vel = xs, S[s]
            st_ = _accel(C, pos, vel, F, work, K[s], sing)
            if st_:
                fail[0], fail[1] = pos, vel
                return st_, k
        for i in range(dim):
            X[k + 1, i] = x[i] + dt / 6 * (xd[i] + 2 * S[1, i] + 2 * S[2, i] + S[3, i])
            XD[k + 1, i] = xd[i] + dt / 6 * (K[0, i] + 2 * K[1, i] + 2 * K[2, i] + K[3, i])
        if not (np.all(np.isfinite(X[k + 1])) and np.all(np.isfinite(XD[k + 1]))):
            return NON_FINITE, k
    return 0, steps
