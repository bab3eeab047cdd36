"""The mass matrix (64) by the composite-rigid-body algorithm.
"""
from __future__ import annotations

import numpy as np

from .jit import OPT, njit
from .kinematics import kinematics, workspace

__all__ = ["mass_matrix"]


@njit(**OPT)
def mass_matrix(C, q, M):
    """Composite-rigid-body algorithm in the vehicle frame: M = [[M₀, M₀𝔪], [M₀𝔪ᵀ, M_𝔪]] (64)
    of the model ``C`` at ``q``; the vehicle's added inertia ``C.rootx`` adds to M₀."""
    n = q.shape[0]
    parent, rootx, axes = C.parent, C.rootx, C.axes
    b = axes.shape[0]
    ws = workspace(n)
    kinematics(C, q, ws)
    S, Ic = ws.S, ws.IA
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
