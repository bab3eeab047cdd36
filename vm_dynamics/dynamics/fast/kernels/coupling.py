"""Mimic joints in compiled form: the tree's accelerations projected onto the coupling
``q_tree = G q + c`` (``G = C.coupling`` of :class:`vm_dynamics.dynamics.fast.records.ModelConstants`)."""
from __future__ import annotations

import numpy as np

from .aba import solve_spd
from .crba import mass_matrix
from .jit import OPT, njit

__all__ = ["couple"]


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
def couple(C, q, a):
    """Mimic joints (``q_tree = G q + c``): the unconstrained tree accelerations ``a`` of the
    articulated-body algorithm satisfy ``M a = f − h``, so the coupled ones are ``T x`` with
    ``TᵀMT x = TᵀM a`` (``T = diag(I_b, G)``: the equations of the coordinates q, the efforts
    on the masters); ``a`` is overwritten with ``[V̇; G q̈]``.  Returns a status code (3: the
    reduced mass matrix is not positive)."""
    Gc = C.coupling
    b = C.axes.shape[0]
    nt, nr = Gc.shape[0], Gc.shape[1]
    M = np.empty((b + nt, b + nt))
    st = mass_matrix(C, q, M)
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
