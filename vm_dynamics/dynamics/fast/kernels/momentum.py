"""The locked momentum P (77) and the vehicle velocity from it (LP-3).
"""
from __future__ import annotations

from .aba import solve_spd
from .algebra import cross
from .jit import OPT, njit
from .kinematics import joint_motion, moved_inertia, root_pose, store_inertia
from .rnea import inertia_of, rigid_solve

__all__ = ["momentum_terms", "kinematics_momentum", "velocity_from_momentum"]


@njit(inline="always", **OPT)
def momentum_terms(C, qd, ws, Ic0, hm):
    """Ic0 = Σ_k I_k (composite inertia of the whole system) and hm = Σ_k I_k v_k at V = 0, so
    that the locked momentum (77) is ``P = ι₀ᵀ(Ic0 ι₀V + hm) = M₀V + M₀𝔪q̇`` (the body
    inertias ``ws.IA`` of :func:`.kinematics.kinematics`; ``ws.vel`` is overwritten).
    Inlined, as :func:`.kinematics.kinematics`."""
    _momentum_sums(C.parent, qd, ws.S, ws.IA, ws.vel, Ic0, hm)


@njit(inline="always", **OPT)
def kinematics_momentum(C, q, qd, ws, Ic0, hm):
    """:func:`.kinematics.kinematics` and :func:`momentum_terms` in one sweep over the bodies:
    each body's compact inertia (:func:`.kinematics.moved_inertia`) is summed and multiplied
    by its twist while it is in registers, not read back from ``ws.IA`` in a second loop (the
    same operations in the same order: the same numbers).  Inlined, as
    :func:`.kinematics.kinematics`."""
    _kinematics_momentum(C.parent, C.jtype, C.xi, C.inert, q, qd, ws.Rw, ws.Pw, ws.S, ws.IA,
                         ws.vel, Ic0, hm)


@njit(inline="always", **OPT)
def _add_inertia(s, m, c, Io):
    """The running sums ``s = (m, n0, n1, n2, I00, I01, I02, I11, I12, I22)`` of the bodies'
    compact inertias plus one body's ``(m, c, Io)``."""
    return (s[0] + m, s[1] + c[0], s[2] + c[1], s[3] + c[2], s[4] + Io[0], s[5] + Io[1],
            s[6] + Io[2], s[7] + Io[3], s[8] + Io[4], s[9] + Io[5])


@njit(inline="always", **OPT)
def _add_body_momentum(h, m, c, Io, parent, S, qd, vel, j):
    """Body ``k = j + 1``'s twist at V = 0, ``vel[k] = v_parent + S_j q̇_j``, and the running
    sum ``h`` plus ``I_k v_k = [m v − c × ω; c × v + I_o ω]`` (not a 6×6 product)."""
    k = j + 1
    p = parent[j]
    u = qd[j]
    v0, v1, v2 = vel[p, 0] + S[j, 0] * u, vel[p, 1] + S[j, 1] * u, vel[p, 2] + S[j, 2] * u
    w0, w1, w2 = vel[p, 3] + S[j, 3] * u, vel[p, 4] + S[j, 4] * u, vel[p, 5] + S[j, 5] * u
    vel[k, 0], vel[k, 1], vel[k, 2] = v0, v1, v2
    vel[k, 3], vel[k, 4], vel[k, 5] = w0, w1, w2
    a0, a1, a2 = cross(c[0], c[1], c[2], w0, w1, w2)
    b0, b1, b2 = cross(c[0], c[1], c[2], v0, v1, v2)
    return (h[0] + (m * v0 - a0), h[1] + (m * v1 - a1), h[2] + (m * v2 - a2),
            h[3] + (b0 + Io[0] * w0 + Io[1] * w1 + Io[2] * w2),
            h[4] + (b1 + Io[1] * w0 + Io[3] * w1 + Io[4] * w2),
            h[5] + (b2 + Io[2] * w0 + Io[4] * w1 + Io[5] * w2))


@njit(inline="always", **OPT)
def _write_sums(s, h, Ic0, hm):
    """``Ic0`` (6×6, the layout of :func:`.kinematics.store_inertia`) from the sums ``s`` of
    :func:`_add_inertia`, ``hm`` from ``h``."""
    for r in range(6):
        hm[r] = h[r]
    store_inertia(s[0], (s[1], s[2], s[3]), (s[4], s[5], s[6], s[7], s[8], s[9]), Ic0)


@njit(**OPT)
def _momentum_sums(parent, qd, S, Ib, vel, Ic0, hm):
    """:func:`momentum_terms` on the arrays.  A body inertia of :func:`.kinematics.kinematics`
    is ``[[m I, −n~], [n~, I_o]]``: its ten independent entries are summed (not 36), and
    ``I_k v_k`` from them (:func:`_add_body_momentum`).  The body twists at V = 0 are
    ``v_k = v_parent + S_j q̇_j`` (``ws.vel``)."""
    n = qd.shape[0]
    for r in range(6):
        vel[0, r] = 0.0
    s = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    h = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for k in range(n + 1):
        m, c, Io = inertia_of(Ib, k)
        s = _add_inertia(s, m, c, Io)
        if k > 0:           # the vehicle: v_0 = 0 at V = 0
            h = _add_body_momentum(h, m, c, Io, parent, S, qd, vel, k - 1)
    _write_sums(s, h, Ic0, hm)


@njit(**OPT)
def _kinematics_momentum(parent, jtype, xi, inert, q, qd, Rw, Pw, S, Ib, vel, Ic0, hm):
    """:func:`kinematics_momentum` on the arrays."""
    n = q.shape[0]
    root_pose(Rw[0], Pw[0])
    m, c, Io = moved_inertia(inert[0], Rw[0], Pw[0])
    store_inertia(m, c, Io, Ib[0])
    s = _add_inertia((0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), m, c, Io)
    h = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for r in range(6):
        vel[0, r] = 0.0
    for j in range(n):
        k = j + 1
        joint_motion(xi, jtype, q, j, parent[j], k, Rw, Pw, S)
        m, c, Io = moved_inertia(inert[k], Rw[k], Pw[k])
        store_inertia(m, c, Io, Ib[k])
        s = _add_inertia(s, m, c, Io)
        h = _add_body_momentum(h, m, c, Io, parent, S, qd, vel, j)
    _write_sums(s, h, Ic0, hm)


@njit(inline="always", **OPT)
def velocity_from_momentum(C, P, Ic0, hm, K, V):
    """V = M₀⁻¹(P − M₀𝔪q̇) (LP-3) with M₀ = ι₀ᵀ(Ic0 + M_A)ι₀ (``K``: scratch).  Inlined, as
    :func:`.kinematics.kinematics`."""
    return _locked_velocity(C.axes, C.rootx, P, Ic0, hm, K, V)


@njit(inline="always", **OPT)
def _locked_velocity(axes, rootx, P, Ic0, hm, K, V):
    """:func:`velocity_from_momentum` on the arrays.  A free rigid base (all six axes, no added
    inertia) has ``M₀ = Ic0``, the inertia of a rigid body: :func:`.rnea.rigid_solve` (a 3×3
    solve about the centre of mass, two divisions) instead of the 6×6 LDLᵀ (six pivots in
    series); in one compiled loop of the stage's kinematics, momentum terms and this solve,
    floating UR5: 0.60 -> 0.52 µs.  Otherwise the LDLᵀ of the b×b block
    (:func:`_locked_ldl`).

    Inlined with the rigid solve (the engine's stages are its only callers, at every stage):
    called, it and :func:`.rnea.rigid_solve` were two calls per stage passing seven arrays for
    a 3×3 solve.  The LDLᵀ stays a call (:func:`_locked_ldl`): inlined, its two copies of the
    solve (b = 6 unrolled, any b) in every caller of the stages made the first compile longer
    for a path a floating base does not take."""
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
    return _locked_ldl(axes, rootx, P, Ic0, hm, K, V)


@njit(**OPT)
def _locked_ldl(axes, rootx, P, Ic0, hm, K, V):
    """The general case of :func:`_locked_velocity`: ``V = M₀⁻¹(P − hm)`` on the axes of ι₀
    with ``M₀ = ι₀ᵀ(Ic0 + M_A)ι₀`` by the LDLᵀ of :func:`.aba.solve_spd` (``K``: scratch).
    False if ``M₀`` is not positive definite."""
    b = axes.shape[0]
    for r in range(b):
        V[r] = P[r] - hm[axes[r]]
        for c in range(b):
            K[r, c] = Ic0[axes[r], axes[c]] + rootx[axes[r], axes[c]]
    return solve_spd(K, V, b)
