"""The locked momentum P (77) and the vehicle velocity from it (LP-3).
"""
from __future__ import annotations

from .aba import solve_spd
from .algebra import cross
from .jit import OPT, njit
from .rnea import rigid_solve

__all__ = ["momentum_terms", "velocity_from_momentum"]


@njit(inline="always", **OPT)
def momentum_terms(C, qd, ws, Ic0, hm):
    """Ic0 = Σ_k I_k (composite inertia of the whole system) and hm = Σ_k I_k v_k at V = 0, so
    that the locked momentum (77) is ``P = ι₀ᵀ(Ic0 ι₀V + hm) = M₀V + M₀𝔪q̇`` (the body
    inertias ``ws.IA`` of :func:`.kinematics.kinematics`; ``ws.vel`` is overwritten).
    Inlined, as :func:`.kinematics.kinematics`."""
    _momentum_sums(C.parent, C.axes, qd, ws.S, ws.IA, ws.vel, ws.cacc, Ic0, hm)


@njit(**OPT)
def _momentum_sums(parent, axes, qd, S, Ib, vel, cacc, Ic0, hm):
    """:func:`momentum_terms` on the arrays.  A body inertia of :func:`.kinematics.kinematics`
    is ``[[m I, −n~], [n~, I_o]]``: its ten independent entries are summed (not 36), and
    ``I_k v_k = [m v − n × ω; n × v + I_o ω]`` (not a 6×6 product).  The body twists at
    V = 0 are ``v_k = v_parent + S_j q̇_j`` (``ws.vel``; ``cacc`` is not needed here)."""
    n = qd.shape[0]
    for r in range(6):
        vel[0, r] = 0.0
        hm[r] = 0.0
    M = 0.0
    n0 = n1 = n2 = 0.0
    i00 = i01 = i02 = i11 = i12 = i22 = 0.0
    for k in range(n + 1):
        I = Ib[k]
        m, c0, c1, c2 = I[0, 0], I[1, 5], I[2, 3], I[0, 4]
        M += m
        n0 += c0
        n1 += c1
        n2 += c2
        i00 += I[3, 3]
        i01 += I[3, 4]
        i02 += I[3, 5]
        i11 += I[4, 4]
        i12 += I[4, 5]
        i22 += I[5, 5]
        if k == 0:          # the vehicle: v_0 = 0 at V = 0
            continue
        j = k - 1
        p = parent[j]
        u = qd[j]
        v0, v1, v2 = vel[p, 0] + S[j, 0] * u, vel[p, 1] + S[j, 1] * u, vel[p, 2] + S[j, 2] * u
        w0, w1, w2 = vel[p, 3] + S[j, 3] * u, vel[p, 4] + S[j, 4] * u, vel[p, 5] + S[j, 5] * u
        vel[k, 0], vel[k, 1], vel[k, 2] = v0, v1, v2
        vel[k, 3], vel[k, 4], vel[k, 5] = w0, w1, w2
        a0, a1, a2 = cross(c0, c1, c2, w0, w1, w2)
        b0, b1, b2 = cross(c0, c1, c2, v0, v1, v2)
        hm[0] += m * v0 - a0
        hm[1] += m * v1 - a1
        hm[2] += m * v2 - a2
        hm[3] += b0 + I[3, 3] * w0 + I[3, 4] * w1 + I[3, 5] * w2
        hm[4] += b1 + I[4, 3] * w0 + I[4, 4] * w1 + I[4, 5] * w2
        hm[5] += b2 + I[5, 3] * w0 + I[5, 4] * w1 + I[5, 5] * w2
    for r in range(3):
        for c in range(3):
            Ic0[r, c] = M if r == c else 0.0
    Ic0[0, 3], Ic0[0, 4], Ic0[0, 5] = 0.0, n2, -n1
    Ic0[1, 3], Ic0[1, 4], Ic0[1, 5] = -n2, 0.0, n0
    Ic0[2, 3], Ic0[2, 4], Ic0[2, 5] = n1, -n0, 0.0
    Ic0[3, 3], Ic0[3, 4], Ic0[3, 5] = i00, i01, i02
    Ic0[4, 3], Ic0[4, 4], Ic0[4, 5] = i01, i11, i12
    Ic0[5, 3], Ic0[5, 4], Ic0[5, 5] = i02, i12, i22
    for r in range(3):
        for c in range(3):
            Ic0[3 + r, c] = Ic0[c, 3 + r]


@njit(inline="always", **OPT)
def velocity_from_momentum(C, P, Ic0, hm, K, V):
    """V = M₀⁻¹(P − M₀𝔪q̇) (LP-3) with M₀ = ι₀ᵀ(Ic0 + M_A)ι₀ (``K``: scratch).  Inlined, as
    :func:`.kinematics.kinematics`."""
    return _locked_velocity(C.axes, C.rootx, P, Ic0, hm, K, V)


@njit(**OPT)
def _locked_velocity(axes, rootx, P, Ic0, hm, K, V):
    """:func:`velocity_from_momentum` on the arrays.  A free rigid base (all six axes, no added
    inertia) has ``M₀ = Ic0``, the inertia of a rigid body: :func:`.rnea.rigid_solve` (a 3×3
    solve about the centre of mass, two divisions) instead of the 6×6 LDLᵀ (six pivots in
    series); in one compiled loop of the stage's kinematics, momentum terms and this solve,
    floating UR5: 0.60 -> 0.52 µs.  Otherwise the LDLᵀ of the b×b block."""
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
        for r in range(6):
            V[r] = P[r] - hm[r]
        return rigid_solve(Ic0, V)
    for r in range(b):
        V[r] = P[r] - hm[axes[r]]
        for c in range(b):
            K[r, c] = Ic0[axes[r], axes[c]] + rootx[axes[r], axes[c]]
    return solve_spd(K, V, b)
