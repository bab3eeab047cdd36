"""Time integration of a :class:`~vm_dynamics.constraints.hamel.HamelSystem` on ``G × R^δ``.

The state is the group element ``g`` (4×4, in the connection's vehicle group) and
``y = [r; ṙ]``.  The shape equations are the corrected Hamel equations (002 (4.9)); the group
motion is the reconstruction equation (4.10) ``ξ = −𝒜(r)ṙ``, handed to the Runge–Kutta–Munthe-Kaas
integrators of :mod:`vm_dynamics.sim.integrators` as the body velocity g⁻¹ġ (for the right
trivialisation ``Ad_{g⁻¹}ξ``).  That is 002 (4.11) with the re-centred canonical coordinates
``g = g_k exp(Θ)``, ``Θ̇ = dexp⁻¹_{−Θ} g⁻¹ġ``.

The constraints hold by construction: the group velocity is *defined* by them, so there is no
drift and no stabilisation (only ``g``'s integration error, which is the method's order).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..sim.integrators import METHODS, integrate
from .hamel import HamelSystem

__all__ = ["ConstrainedTrajectory", "simulate_constrained"]


@dataclass
class ConstrainedTrajectory:
    """Samples of a constrained motion: ``g[k]`` (4×4), ``r[k]``, ``rd[k]``, the fiber velocity
    ``xi[k] = −𝒜ṙ``, the body velocity ``V[k] = g⁻¹ġ`` and the energy ``E = ½ṙᵀM_cṙ + U``."""

    t: np.ndarray
    g: np.ndarray
    r: np.ndarray
    rd: np.ndarray
    xi: np.ndarray
    V: np.ndarray
    energy: np.ndarray
    work: np.ndarray      # ∫ Q_c·ṙ dt, integrated with the state (same method and order)


def _check_inputs(system, t, g0, r0, rd0, method):
    if method not in METHODS:
        raise ValueError(f"method={method!r}: choose one of {', '.join(METHODS)}")
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size < 1 or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise ValueError("t: expected a finite, strictly increasing 1-D time grid")
    g0 = np.asarray(g0, dtype=float)
    if g0.shape != (4, 4) or not np.all(np.isfinite(g0)):
        raise ValueError(f"g0: expected a finite 4x4 pose, got shape {g0.shape}")
    y0 = []
    for name, v in (("r0", r0), ("rd0", rd0)):
        v = np.asarray(v, dtype=float)
        if v.shape != (system.d,) or not np.all(np.isfinite(v)):
            raise ValueError(f"{name}: expected {system.d} finite numbers, got shape {v.shape}")
        y0.append(v)
    return t, g0, np.concatenate(y0)


def simulate_constrained(system: HamelSystem, t, g0, r0, rd0, method: str = "rkmk4",
                         substeps: int = 1, forces: Callable | None = None,
                         rtol: float = 1e-10, atol: float = 1e-12) -> ConstrainedTrajectory:
    """Integrate the constrained system over the sample times ``t``.

    ``forces(t, g, r, ṙ) -> (Q_ξ, Q_r)`` gives the generalised forces dual to ξ and ṙ (either
    may be ``None``), e.g. the wheel torques of a differential drive as ``Q_r``.  ``method`` is
    one of :data:`vm_dynamics.sim.integrators.METHODS` (``rkmk4``: ``substeps`` steps per sample
    interval; ``dopri5``: adaptive with ``rtol``/``atol``)."""
    t, g0, y0 = _check_inputs(system, t, g0, r0, rd0, method)
    conn, d = system.connection, system.d

    def loads(tt, g, r, rd):
        if forces is None:
            return None, None
        return forces(tt, g, r, rd)

    def rhs(tt, g, y):
        r, rd = y[:d], y[d:2 * d]
        Qx, Qr = loads(tt, g, r, rd)
        Q = system.generalized_forces(r, Qx, Qr)
        rdd = system.accelerations(r, rd, Q_shape=Q)
        xi = system.fiber_velocity(r, rd)
        return conn.body_velocity(g, xi), np.concatenate([rd, rdd, [Q @ rd]]), None

    N = t.size
    out = {"g": np.empty((N, 4, 4)), "y": np.empty((N, 2 * d + 1))}

    def on_sample(k, tk, g, y, aux):
        out["g"][k] = g
        out["y"][k] = y
        return False

    integrate(rhs, conn.group, method, t, g0, np.append(y0, 0.0), on_sample, substeps=substeps, rtol=rtol,
              atol=atol)
    r, rd, work = out["y"][:, :d], out["y"][:, d:2 * d], out["y"][:, 2 * d]
    xi = np.array([system.fiber_velocity(r[k], rd[k]) for k in range(N)])
    V = np.array([conn.body_velocity(out["g"][k], xi[k]) for k in range(N)])
    E = np.array([system.energy(r[k], rd[k]) for k in range(N)])
    return ConstrainedTrajectory(t=t, g=out["g"], r=r, rd=rd, xi=xi, V=V, energy=E, work=work)
