"""The locked momentum P (77) and the vehicle velocity from it (LP-3).
"""
from __future__ import annotations

from .aba import solve_spd
from .jit import OPT, njit
from .kinematics import body_velocities

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
    """:func:`momentum_terms` on the arrays."""
    n = qd.shape[0]
    # at V = 0: no vehicle axes (vel[0] = 0; qd stands in for the unread V, no zero array)
    body_velocities(parent, axes[:0], qd, qd, S, vel, cacc)
    for r in range(6):
        hm[r] = 0.0
        for c in range(6):
            Ic0[r, c] = 0.0
    for k in range(n + 1):
        for r in range(6):
            s = 0.0
            for c in range(6):
                Ic0[r, c] += Ib[k, r, c]
                s += Ib[k, r, c] * vel[k, c]
            hm[r] += s


@njit(inline="always", **OPT)
def velocity_from_momentum(C, P, Ic0, hm, K, V):
    """V = M₀⁻¹(P − M₀𝔪q̇) (LP-3) with M₀ = ι₀ᵀ(Ic0 + M_A)ι₀ (``K``: scratch).  Inlined, as
    :func:`.kinematics.kinematics`."""
    return _locked_velocity(C.axes, C.rootx, P, Ic0, hm, K, V)


@njit(**OPT)
def _locked_velocity(axes, rootx, P, Ic0, hm, K, V):
    """:func:`velocity_from_momentum` on the arrays."""
    b = axes.shape[0]
    for r in range(b):
        V[r] = P[r] - hm[axes[r]]
        for c in range(b):
            K[r, c] = Ic0[axes[r], axes[c]] + rootx[axes[r], axes[c]]
    return solve_spd(K, V, b)
