"""Small spatial algebra for the kernels: cross products, pose checks, the SE(3)
exponential and dexp⁻¹ applied to a vector, coadjoint maps.

The exponential, dexp⁻¹, the 4×4 product and the re-orthonormalisation, called at every stage
of a step, are inlined into their callers (``inline="always"``): LLVM does not inline a call
into another module's kernel, and such a call passes every array as flattened arguments.
"""
from __future__ import annotations

import numpy as np

from .jit import OPT, njit

__all__ = ["cross", "check_pose", "within", "so3_coeffs", "se3_exp", "dexp_inv_apply", "coad",
           "mul4", "orthonormalize", "SMALL"]


@njit(**OPT)
def cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(**OPT)
def check_pose(g):
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


@njit(**OPT)
def within(x, limit):
    """True if every entry of the vector x has a magnitude at most ``limit`` (NaN has none): the
    range test of core.validation.check_range, without its scan in Python."""
    for i in range(x.shape[0]):
        if not abs(x[i]) <= limit:
            return False
    return True


@njit(**OPT)
def so3_coeffs(th):
    """(sinθ/θ, (1−cosθ)/θ², (θ−sinθ)/θ³) with Taylor series below SMALL."""
    t2 = th * th
    if th < SMALL:
        A = 1.0 - t2 / 6.0 * (1.0 - t2 / 20.0 * (1.0 - t2 / 42.0 * (1.0 - t2 / 72.0)))
        B = 0.5 * (1.0 - t2 / 12.0 * (1.0 - t2 / 30.0 * (1.0 - t2 / 56.0 * (1.0 - t2 / 90.0))))
        C = (1.0 - t2 / 20.0 * (1.0 - t2 / 42.0 * (1.0 - t2 / 72.0 * (1.0 - t2 / 110.0)))) / 6.0
        return A, B, C
    s, c = np.sin(th), np.cos(th)
    return s / th, (1.0 - c) / t2, (th - s) / (t2 * th)


@njit(inline="always", **OPT)
def se3_exp(X, out):
    """out (4×4) = exp(X^) for a twist X = [ρ; φ] (paper 000, (11)); equals lie.se3_exp."""
    f0, f1, f2 = X[3], X[4], X[5]
    th = np.sqrt(f0 * f0 + f1 * f1 + f2 * f2)
    A, B, C = so3_coeffs(th)
    W = ((0.0, -f2, f1), (f2, 0.0, -f0), (-f1, f0, 0.0))      # φ~ (a tuple: no allocation)
    for r in range(3):
        for c in range(3):
            W2 = W[r][0] * W[0][c] + W[r][1] * W[1][c] + W[r][2] * W[2][c]
            out[r, c] = (1.0 if r == c else 0.0) + A * W[r][c] + B * W2
    x0, x1, x2 = X[0], X[1], X[2]
    a0, a1, a2 = cross(f0, f1, f2, x0, x1, x2)
    b0, b1, b2 = cross(f0, f1, f2, a0, a1, a2)
    out[0, 3] = x0 + B * a0 + C * b0
    out[1, 3] = x1 + B * a1 + C * b1
    out[2, 3] = x2 + B * a2 + C * b2
    out[3, 0] = 0.0
    out[3, 1] = 0.0
    out[3, 2] = 0.0
    out[3, 3] = 1.0


@njit(inline="always", **OPT)
def dexp_inv_apply(X, W, out):
    """out = dexp⁻¹_X W (= lie.dexp_inv(X) @ W), matrix-free:
    ``[J⁻¹(w_v − Q J⁻¹ w_ω); J⁻¹ w_ω]`` with the SO(3) left Jacobian J and the SE(3) block Q
    (Barfoot & Furgale 2014, eq. 102) applied by cross products."""
    r0, r1, r2 = X[0], X[1], X[2]
    f0, f1, f2 = X[3], X[4], X[5]
    t2 = f0 * f0 + f1 * f1 + f2 * f2
    th = np.sqrt(t2)
    if th < SMALL:
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
    x0, x1, x2 = cross(f0, f1, f2, w0, w1, w2)
    y0, y1, y2 = cross(f0, f1, f2, x0, x1, x2)
    a0, a1, a2 = w0 - 0.5 * x0 + k * y0, w1 - 0.5 * x1 + k * y1, w2 - 0.5 * x2 + k * y2
    # Q a
    ra = cross(r0, r1, r2, a0, a1, a2)                       # ρ×a
    fa = cross(f0, f1, f2, a0, a1, a2)                       # φ×a
    fra = cross(f0, f1, f2, ra[0], ra[1], ra[2])             # φ×(ρ×a)
    rfa = cross(r0, r1, r2, fa[0], fa[1], fa[2])             # ρ×(φ×a)
    frfa = cross(f0, f1, f2, rfa[0], rfa[1], rfa[2])         # φ×(ρ×(φ×a))
    ffra = cross(f0, f1, f2, fra[0], fra[1], fra[2])         # φ×(φ×(ρ×a))
    ffa = cross(f0, f1, f2, fa[0], fa[1], fa[2])             # φ×(φ×a)
    rffa = cross(r0, r1, r2, ffa[0], ffa[1], ffa[2])         # ρ×(φ×(φ×a))
    frffa = cross(f0, f1, f2, rffa[0], rffa[1], rffa[2])     # φ×(ρ×(φ×(φ×a)))   (PRP P)
    ffrfa = cross(f0, f1, f2, frfa[0], frfa[1], frfa[2])     # φ×(φ×(ρ×(φ×a)))   (P PRP)
    z0 = W[0] - (0.5 * ra[0] + c1 * (fra[0] + rfa[0] + frfa[0])
                 + c2 * (ffra[0] + rffa[0] - 3.0 * frfa[0]) + c3 * (frffa[0] + ffrfa[0]))
    z1 = W[1] - (0.5 * ra[1] + c1 * (fra[1] + rfa[1] + frfa[1])
                 + c2 * (ffra[1] + rffa[1] - 3.0 * frfa[1]) + c3 * (frffa[1] + ffrfa[1]))
    z2 = W[2] - (0.5 * ra[2] + c1 * (fra[2] + rfa[2] + frfa[2])
                 + c2 * (ffra[2] + rffa[2] - 3.0 * frfa[2]) + c3 * (frffa[2] + ffrfa[2]))
    # out_v = J⁻¹ z (z = w_v − Q a, held in scalars: no allocation)
    x0, x1, x2 = cross(f0, f1, f2, z0, z1, z2)
    y0, y1, y2 = cross(f0, f1, f2, x0, x1, x2)
    out[0] = z0 - 0.5 * x0 + k * y0
    out[1] = z1 - 0.5 * x1 + k * y1
    out[2] = z2 - 0.5 * x2 + k * y2
    out[3] = a0
    out[4] = a1
    out[5] = a2


@njit(**OPT)
def coad(G, W, out, inverse):
    """out = Ad_Gᵀ W (inverse=False) or Ad_G⁻ᵀ W (inverse=True) for a wrench W = [f; n]."""
    f0, f1, f2 = W[0], W[1], W[2]
    n0, n1, n2 = W[3], W[4], W[5]
    p0, p1, p2 = G[0, 3], G[1, 3], G[2, 3]
    if inverse:          # [R f; p × R f + R n]
        for r in range(3):
            out[r] = G[r, 0] * f0 + G[r, 1] * f1 + G[r, 2] * f2
            out[3 + r] = G[r, 0] * n0 + G[r, 1] * n1 + G[r, 2] * n2
        x0, x1, x2 = cross(p0, p1, p2, out[0], out[1], out[2])
        out[3] += x0
        out[4] += x1
        out[5] += x2
    else:                # [Rᵀ f; Rᵀ(n − p × f)]
        x0, x1, x2 = cross(p0, p1, p2, f0, f1, f2)
        m0, m1, m2 = n0 - x0, n1 - x1, n2 - x2
        for r in range(3):
            out[r] = G[0, r] * f0 + G[1, r] * f1 + G[2, r] * f2
            out[3 + r] = G[0, r] * m0 + G[1, r] * m1 + G[2, r] * m2


SMALL = 0.1   # |φ| below which the Taylor series of the SO(3)/SE(3) coefficients are used


@njit(inline="always", **OPT)
def mul4(A, B, out):
    """``out = A B`` of 4×4 matrices (no allocation; ``out`` is neither ``A`` nor ``B``)."""
    for r in range(4):
        for c in range(4):
            out[r, c] = A[r, 0] * B[0, c] + A[r, 1] * B[1, c] + A[r, 2] * B[2, c] \
                + A[r, 3] * B[3, c]


@njit(inline="always", **OPT)
def orthonormalize(g):
    """One Newton–Schulz step ``R ← R(3I − RᵀR)/2`` (removes round-off drift of RᵀR − I), in
    place and without allocating: ``T = (3I − RᵀR)/2`` from the whole ``R`` first, then each
    row of ``R T`` (it reads only its own row of ``R``)."""
    s00 = g[0, 0] * g[0, 0] + g[1, 0] * g[1, 0] + g[2, 0] * g[2, 0]
    s01 = g[0, 0] * g[0, 1] + g[1, 0] * g[1, 1] + g[2, 0] * g[2, 1]
    s02 = g[0, 0] * g[0, 2] + g[1, 0] * g[1, 2] + g[2, 0] * g[2, 2]
    s11 = g[0, 1] * g[0, 1] + g[1, 1] * g[1, 1] + g[2, 1] * g[2, 1]
    s12 = g[0, 1] * g[0, 2] + g[1, 1] * g[1, 2] + g[2, 1] * g[2, 2]
    s22 = g[0, 2] * g[0, 2] + g[1, 2] * g[1, 2] + g[2, 2] * g[2, 2]
    t00, t01, t02 = 1.5 - 0.5 * s00, 0.0 - 0.5 * s01, 0.0 - 0.5 * s02
    t11, t12, t22 = 1.5 - 0.5 * s11, 0.0 - 0.5 * s12, 1.5 - 0.5 * s22
    for r in range(3):
        a0, a1, a2 = g[r, 0], g[r, 1], g[r, 2]
        g[r, 0] = 0.0 + a0 * t00 + a1 * t01 + a2 * t02
        g[r, 1] = 0.0 + a0 * t01 + a1 * t11 + a2 * t12
        g[r, 2] = 0.0 + a0 * t02 + a1 * t12 + a2 * t22
