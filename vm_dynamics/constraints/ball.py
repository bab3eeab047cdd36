"""The homogeneous ball rolling without slipping or spinning on a plane (paper 002, §4(d)).

Configuration ``SO(3) × R²``: the orientation R of the ball and the contact point ``p = r``
in the plane (plane coordinates: axes 1, 2 in the plane, axis 3 along the normal; on an
inclined plane axis 1 points down the slope).  ``ρ = (0, 0, R_b)`` runs from the contact point
to the centre (= COM).  With the spatial angular velocity ω (ω~ = ṘRᵀ, right trivialisation):

* rolling without slipping ``ṗ + ρ~ω = 0`` (002 §4(d)),
* no spin about the normal ``ρᵀω = 0``, i.e. ω₃ = 0.

Hence ω₁ = −ṗ₂/R_b, ω₂ = ṗ₁/R_b and, in ``ω + 𝒜ṙ = 0``,

    𝒜 = [[0, 1/R_b], [−1/R_b, 0], [0, 0]]      (𝒜¹₅ = 1/R_b, 𝒜²₄ = −1/R_b).

**Correction:** 002 (4.12) prints 𝒜^α_I = (1/R)ε_{α3Ī}, i.e. 𝒜²₄ = −𝒜¹₅ = +1/R, which is the
*negative* of the connection of its own rolling condition (it would roll the ball backwards);
the intermediate "0 = ω + (1/R²)ρ~ṗ" should read ω = (1/R²)ρ~ṗ.  The curvature is quadratic in
𝒜 and is unaffected: (4.7) gives ℬ³₅₄ = −ℬ³₄₅ = 1/R_b², as printed in (4.13).

The reduced Lagrangian is ``l = ½m|ṙ|² + ½Θ|ω|² − U(r)`` with Θ = (2/5)mR_b² (isotropic: the
only inertia for which l is invariant under the right action).  **Correction:** (4.15) prints
the inertia ``mδ_IJ − Θ_αβ𝒜^α_I𝒜^β_J``; the sign is +, i.e. (7/5)m δ_IJ (the effective mass of a
rolling ball).  Its gyroscopic term contains π₃ = Θω₃ = 0 and vanishes identically.  On a plane
inclined by α the potential is ``U = −m g sinα r¹`` (a function of the shape only, so still
invariant), and the centre accelerates at (5/7) g sinα down the slope.
"""
from __future__ import annotations

import numpy as np

from ..core.groups import SO3
from .connection import KinematicConnection
from .hamel import HamelSystem, ReducedLagrangian

__all__ = ["RollingBall", "rolling_ball", "ball_connection_matrix"]


class RollingBall(HamelSystem):
    """A :class:`HamelSystem` that also holds the ball's data (radius, mass, slope, gravity)."""

    radius: float
    mass: float
    incline: float
    gravity: float

    def center(self, r) -> np.ndarray:
        """The centre of the ball in plane coordinates: ``(r¹, r², R_b)``."""
        r = np.asarray(r, dtype=float)
        return np.array([r[0], r[1], self.radius])


def ball_connection_matrix(radius: float) -> np.ndarray:
    """𝒜 of the rolling, non-spinning ball (002 (4.12), sign corrected)."""
    return np.array([[0.0, 1.0 / radius], [-1.0 / radius, 0.0], [0.0, 0.0]])


def _positive(value, name):
    v = float(value)
    if not np.isfinite(v) or v <= 0.0:
        raise ValueError(f"{name}={value!r}: expected a finite positive number")
    return v


def rolling_ball(radius: float = 0.1, mass: float = 1.0, incline: float = 0.0,
                 gravity: float = 9.81) -> RollingBall:
    """The rolling ball of 002 §4(d) as a :class:`HamelSystem` (right trivialisation, G = SO(3)).

    ``incline`` is the plane's slope α in radians (|α| < π/2), ``gravity`` the magnitude of
    the gravitational acceleration."""
    R = _positive(radius, "radius")
    m = _positive(mass, "mass")
    alpha = float(incline)
    if not np.isfinite(alpha) or abs(alpha) >= 0.5 * np.pi:
        raise ValueError(f"incline={incline!r}: expected a slope in (-pi/2, pi/2) rad")
    g = float(gravity)
    if not np.isfinite(g):
        raise ValueError(f"gravity={gravity!r}: expected a finite number")
    A = ball_connection_matrix(R)
    conn = KinematicConnection(SO3, 2, lambda r: A, None, trivialisation="right")
    theta = 0.4 * m * R * R
    M = np.diag([theta, theta, theta, m, m])
    f = m * g * np.sin(alpha)
    lag = ReducedLagrangian(M=lambda r: M, U=lambda r: -f * r[0],
                            dU=lambda r: np.array([-f, 0.0]))
    system = RollingBall(conn, lag)
    system.radius, system.mass, system.incline, system.gravity = R, m, alpha, g
    return system
