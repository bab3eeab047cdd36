"""Compiled accounts of an engine state (:class:`vm_dynamics.sim.engine.Simulator`): its momentum
variable and its energy, evaluated once per state asked for (at a reset, a sample, a check),
never inside the step.  They use the step's scratch buffer (:mod:`.buffer`, through
:func:`.resume.work`: the next step computes its first stage again) and the kernels of
:mod:`vm_dynamics.dynamics.fast.kernels`; ``spec.form`` as in :mod:`.kernels`.
"""
from __future__ import annotations

from ..dynamics.fast.kernels.algebra import coad
from ..dynamics.fast.kernels.jit import OPT, njit
from ..dynamics.fast.kernels.kinematics import kinematics, velocities
from ..dynamics.fast.kernels.momentum import momentum_terms
from ..forces.kernels import potential
from .resume import work

__all__ = ["momentum_variable", "energy"]


@njit(**OPT)
def _momentum_variable(C, spec, g, V, q, qd, m, wk):
    """The momentum variable ``m`` of ``spec.form`` at the state (g, V, q, q̇): V,
    μ = Ad*_{h⁻¹}P or P = M₀V + M₀𝔪q̇ (77)."""
    ws, sc = wk
    axes = C.axes
    b = axes.shape[0]
    if spec.form == 0:
        for r in range(b):
            m[r] = V[r]
        return
    kinematics(C, q, ws)
    momentum_terms(C, qd, ws, sc.Ic0, sc.hm)
    six = sc.six
    for r in range(6):
        six[r] = 0.0
    for r in range(b):
        f = sc.hm[axes[r]]
        for c in range(b):
            f += (sc.Ic0[axes[r], axes[c]] + C.rootx[axes[r], axes[c]]) * V[c]
        six[axes[r]] = f
    if spec.form == 2:
        for r in range(b):
            m[r] = six[axes[r]]
        return
    h, gri = sc.rel, spec.gri                 # h = g_ref⁻¹ g
    for r in range(4):
        for c in range(4):
            h[r, c] = gri[r, 0] * g[0, c] + gri[r, 1] * g[1, c] + gri[r, 2] * g[2, c] \
                + gri[r, 3] * g[3, c]
    coad(h, six, sc.six2, True)
    for r in range(b):
        m[r] = sc.six2[axes[r]]


@njit(**OPT)
def _energy(C, F, g, V, q, qd, wk):
    """(kinetic, potential) energy: ``½Σ_k v_kᵀI_kv_k + ½VᵀM_AV`` and the gravitational
    ``−aᵀ(m p_g + R_g h)`` (h the total first moment of the rigid masses) plus the conservative
    force elements' potential."""
    ws = wk.ws
    n = q.shape[0]
    axes = C.axes
    b = axes.shape[0]
    kinematics(C, q, ws)
    velocities(C, V, qd, ws)
    T = 0.0
    h0 = 0.0
    h1 = 0.0
    h2 = 0.0
    mass = 0.0
    for k in range(n + 1):
        for r in range(6):
            f = 0.0
            for c in range(6):
                f += ws.IA[k, r, c] * ws.vel[k, c]
            T += 0.5 * ws.vel[k, r] * f
        mass += ws.IA[k, 0, 0]
        h0 += ws.IA[k, 5, 1]
        h1 += ws.IA[k, 3, 2]
        h2 += ws.IA[k, 4, 0]
    for r in range(b):
        for c in range(b):
            T += 0.5 * V[r] * C.rootx[axes[r], axes[c]] * V[c]
    U = 0.0
    for r in range(3):
        U -= C.grav[r] * (mass * g[r, 3] + g[r, 0] * h0 + g[r, 1] * h1 + g[r, 2] * h2)
    return T, U + potential(F, g, ws.Rw, ws.Pw)


@njit(**OPT)
def momentum_variable(C, spec, g, V, q, qd, m, buf):
    """:func:`_momentum_variable` into ``m``, with the step's buffer ``buf`` as scratch."""
    _momentum_variable(C, spec, g, V, q, qd, m, work(C, buf))


@njit(**OPT)
def energy(C, F, g, V, q, qd, buf):
    """:func:`_energy`: (kinetic, potential), with the step's buffer ``buf`` as scratch."""
    return _energy(C, F, g, V, q, qd, work(C, buf))
