"""Inverse dynamics: the recursive Newton–Euler algorithm (Featherstone 2008, Table 5.1)
and the free-floating inverse dynamics of docs/corrections.md, "Inverse dynamics".  Both take
the model as its record ``C`` (:class:`~vm_dynamics.dynamics.fast.records.ModelConstants`).
"""
from __future__ import annotations

import numpy as np

from .aba import solve_spd
from .algebra import check_pose
from .crba import mass_matrix
from .jit import OPT, njit
from .kinematics import add_frame_wrenches, bias, kinematics, velocities, workspace

__all__ = ["inverse_dynamics", "rnea", "free_floating_inverse_dynamics"]


@njit(**OPT)
def inverse_dynamics(C, g, V, q, qd, Vdot, qdd, fw_body, fw, out):
    """Recursive Newton–Euler in the vehicle frame: writes ``[base wrench; τ]`` into ``out``
    for the accelerations ``(V̇, q̈)`` at the state ``(g, V, q, q̇)`` with the frame wrenches
    ``fw`` on the bodies ``fw_body``.  The vehicle's added inertia ``C.rootx`` (M_A) adds
    ``M_A ι₀V̇ − ad_Vᵀ(M_A V)`` to the root force (no gravity on M_A)."""
    if not check_pose(g):
        return 1
    return rnea(C, g, V, q, qd, Vdot, qdd, fw_body, fw, out, workspace(q.shape[0]))


@njit(**OPT)
def rnea(C, g, V, q, qd, Vdot, qdd, fw_body, fw, out, ws):
    """:func:`inverse_dynamics` of a rigid transform ``g`` on the workspace ``ws``."""
    n = q.shape[0]
    parent, rootx, axes, grav = C.parent, C.rootx, C.axes, C.grav
    b = axes.shape[0]
    kinematics(C, q, ws)
    velocities(C, V, qd, ws)
    Rw, Pw, S, Ib, vel, cacc, f, acc, rhs = ws.Rw, ws.Pw, ws.S, ws.IA, ws.vel, ws.cacc, ws.pA, \
        ws.acc, ws.rhs
    for r in range(6):
        acc[0, r] = 0.0
    for i in range(b):
        acc[0, axes[i]] = Vdot[i]
    for r in range(3):
        acc[0, r] -= g[0, r] * grav[0] + g[1, r] * grav[1] + g[2, r] * grav[2]
    for j in range(n):
        k = j + 1
        p = parent[j]
        for r in range(6):
            acc[k, r] = acc[p, r] + cacc[j, r] + S[j, r] * qdd[j]
    for k in range(n + 1):
        bias(Ib[k], vel[k], f[k])
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += Ib[k, r, c] * acc[k, c]
            f[k, r] += s
    bias(rootx, vel[0], rhs)
    for r in range(6):
        s = rhs[r]
        for i in range(b):
            s += rootx[r, axes[i]] * Vdot[i]
        f[0, r] += s
    add_frame_wrenches(fw_body, fw, Rw, Pw, f, -1.0)      # (the vehicle wrench is the unknown)
    for j in range(n - 1, -1, -1):
        k = j + 1
        p = parent[j]
        s = 0.0
        for r in range(6):
            s += S[j, r] * f[k, r]
            f[p, r] += f[k, r]
        out[b + j] = s
    for i in range(b):
        out[i] = f[0, axes[i]]
    for i in range(b + n):
        if not np.isfinite(out[i]):
            return 2
    return 0


@njit(**OPT)
def free_floating_inverse_dynamics(C, g, V, q, qd, qdd, bw, fw_body, fw, out):
    """Joint efforts for ``q̈`` with the vehicle free under the known wrench ``bw``: writes
    ``[V̇; τ]`` into ``out``.  The base row of RNEA is affine in V̇ with slope M₀ (65), so
    ``V̇ = M₀⁻¹(bw − RNEA₀(V̇ = 0))`` makes the base wrench the applied one and
    ``τ = RNEA_𝔪(V̇, q̈)`` — the arm equation (LP-2) of the coupled system,
    ``τ = M̂q̈ + Ĉq̇ + N̂ + ∂u/∂q + 𝒜ᵀF_η`` (docs/corrections.md, "Inverse dynamics"), without forming M̂."""
    n = q.shape[0]
    b = C.axes.shape[0]
    Vdot = np.zeros(b)
    st = inverse_dynamics(C, g, V, q, qd, Vdot, qdd, fw_body, fw, out)
    if st != 0:
        return st
    if b > 0:
        M = np.empty((b + n, b + n))
        st = mass_matrix(C, q, M)
        if st != 0:
            return st
        K = np.empty((6, 6))
        for r in range(b):
            Vdot[r] = bw[r] - out[r]
            for c in range(b):
                K[r, c] = M[r, c]
        if not solve_spd(K, Vdot, b):
            return 3
        st = inverse_dynamics(C, g, V, q, qd, Vdot, qdd, fw_body, fw, out)
        if st != 0:
            return st
    for r in range(b):
        out[r] = Vdot[r]
    return 0
