"""The arithmetic that combines a Runge–Kutta step's stage slopes (:mod:`.kernels`): the
weighted sums of the slopes, and the finiteness check of the end state."""
from __future__ import annotations

import numpy as np

from ..dynamics.fast.kernels.jit import OPT, njit

__all__ = ["weighted", "finite_state"]


@njit(inline="always", **OPT)
def weighted(coef, K, count, r):
    """``Σ_{j < count} coef[j] K[j, r]``: a Runge–Kutta combination of stage slopes (row ``i``
    of the tableau for a stage, the weights ``b`` for the step's end).  Inlined: a call from
    :mod:`.kernels` (another module) is not inlined by LLVM and cost 4.6 % of a UR5 rollout
    step.  No test for zero coefficients: skipping them (exact) made a step 5 % slower."""
    acc = 0.0
    for j in range(count):
        acc += coef[j] * K[j, r]
    return acc


@njit(inline="always", **OPT)
def finite_state(y):
    """0 if every entry of the state ``y`` is finite, else 2."""
    for r in range(4):
        for c in range(4):
            if not np.isfinite(y.g[r, c]):
                return 2
    for r in range(y.V.shape[0]):
        if not (np.isfinite(y.V[r]) and np.isfinite(y.m[r])):
            return 2
    for j in range(y.q.shape[0]):
        if not (np.isfinite(y.q[j]) and np.isfinite(y.qd[j])):
            return 2
    return 0 if np.isfinite(y.W[0]) and np.isfinite(y.W[1]) else 2
