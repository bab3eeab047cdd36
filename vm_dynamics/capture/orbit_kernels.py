"""Compiled per-body tidal gravity of :class:`vm_dynamics.capture.orbit.TidalGravity` (its module
docstring has the equations).  A module of its own, importing only the compiled algebra, so that
the package's kernel-cache stamp (:mod:`vm_dynamics.dynamics.fast.kernels.cache`) covers the
kernels and what they import only."""
from __future__ import annotations

import math

import numpy as np

from ..dynamics.fast.kernels.algebra import cross
from ..dynamics.fast.kernels.jit import OPT, njit

__all__ = ["SERIES", "tidal_body"]

# (1+d)^(-1/2) - 1 + d/2 = sum_k c_k d^k, k >= 2
SERIES = (3.0 / 8.0, -5.0 / 16.0, 35.0 / 128.0, -63.0 / 256.0, 231.0 / 1024.0,
           -429.0 / 2048.0, 6435.0 / 32768.0)



@njit(**OPT)
def _remainder(d):
    """``(1+d)^(−1/2) − 1 + d/2`` without cancellation (:mod:`.orbit` ``_inv_sqrt_remainder``), compiled."""
    if abs(d) < 1e-3:
        acc = 0.0
        for k in range(len(SERIES) - 1, -1, -1):
            acc = acc * d + SERIES[k]
        return acc * d * d
    return math.expm1(-0.5 * math.log1p(d)) + 0.5 * d


@njit(**OPT)
def tidal_body(mu, m, rc, T, c_f, I_f, gradient, w, spatial, dU):
    """One body of :meth:`.orbit.TidalGravity.evaluate`, compiled: the link frame at ``T`` (4×4, in
    the chief frame), its CoM ``c_f`` and inertia ``I_f`` in the link axes.  Writes the link
    frame wrench ``w`` (6), adds the spatial wrench about the origin to ``spatial`` and
    ``∂U/∂r_c`` to ``dU``; returns U.  The arithmetic of :func:`.orbit.tidal_terms`."""
    p = np.empty(3)
    Rc = np.empty(3)
    for i in range(3):
        p[i] = T[i, 3] + T[i, 0] * c_f[0] + T[i, 1] * c_f[1] + T[i, 2] * c_f[2]
    r2 = rc[0] * rc[0] + rc[1] * rc[1] + rc[2] * rc[2]
    r = math.sqrt(r2)
    rc_rho = rc[0] * p[0] + rc[1] * p[1] + rc[2] * p[2]
    rho2 = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
    d = (2.0 * rc_rho + rho2) / r2
    r3 = r2 * r
    e3 = math.expm1(-1.5 * math.log1p(d))
    F = np.empty(3)
    tau = np.zeros(3)
    k0 = -mu * m / r3
    for i in range(3):
        F[i] = k0 * (p[i] * (1.0 + e3) + rc[i] * e3)
    U = -mu * m / r * (_remainder(d) - 0.5 * rho2 / r2)
    for i in range(3):
        dU[i] += -F[i] - (m * mu / r3) * (p[i] - (3.0 * rc_rho / r2) * rc[i])
    if gradient:
        I = np.zeros((3, 3))                   # R I_f Rᵀ
        for i in range(3):
            for j in range(3):
                s = 0.0
                for a in range(3):
                    for b in range(3):
                        s += T[i, a] * I_f[a, b] * T[j, b]
                I[i, j] = s
        x = np.empty(3)
        for i in range(3):
            x[i] = rc[i] + p[i]
        xx = x[0] * x[0] + x[1] * x[1] + x[2] * x[2]
        xn = math.sqrt(xx)
        Ix = np.empty(3)
        for i in range(3):
            Ix[i] = I[i, 0] * x[0] + I[i, 1] * x[1] + I[i, 2] * x[2]
        trI = I[0, 0] + I[1, 1] + I[2, 2]
        sx = (x[0] * Ix[0] + x[1] * Ix[1] + x[2] * Ix[2]) / xx
        x5 = xx * xx * xn
        c2 = 1.5 * mu / x5
        c3 = 3.0 * mu / x5
        t0, t1, t2 = cross(x[0], x[1], x[2], Ix[0], Ix[1], Ix[2])
        tau[0], tau[1], tau[2] = c3 * t0, c3 * t1, c3 * t2
        U += -0.5 * mu / (xx * xn) * (trI - 3.0 * sx)
        for i in range(3):
            F2 = c2 * ((5.0 * sx - trI) * x[i] - 2.0 * Ix[i])
            F[i] += F2
            dU[i] -= F2
    for i in range(3):                         # link axes: Rᵀ F, c_f × Rᵀ F + Rᵀ τ
        Rc[i] = T[0, i] * F[0] + T[1, i] * F[1] + T[2, i] * F[2]
        w[i] = Rc[i]
    a0, a1, a2 = cross(c_f[0], c_f[1], c_f[2], Rc[0], Rc[1], Rc[2])
    for i in range(3):
        w[3 + i] = T[0, i] * tau[0] + T[1, i] * tau[1] + T[2, i] * tau[2]
    w[3] += a0
    w[4] += a1
    w[5] += a2
    b0, b1, b2 = cross(p[0], p[1], p[2], F[0], F[1], F[2])
    for i in range(3):
        spatial[i] += F[i]
    spatial[3] += b0 + tau[0]
    spatial[4] += b1 + tau[1]
    spatial[5] += b2 + tau[2]
    return U
