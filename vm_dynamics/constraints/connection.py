"""Kinematic connection of a kinematically constrained system with symmetry (paper 002, §4).

The configuration space is a trivial principal bundle ``Q = G × R^δ``: a group element ``g``
(the vehicle pose, in a :class:`~vm_dynamics.core.groups.VehicleGroup`) and shape coordinates
``r`` (wheel angles, arm joints, the contact point of a ball).  The ``m̄ = dim G`` velocity
constraints are invariant under the group and are written as (002, (4.1))

    u^α := ξ^α + 𝒜^α_I(r) ṙ^I = 0,

where ξ is the *left*-trivialised (body) velocity ``g⁻¹ġ`` for left-invariant constraints and
the *right*-trivialised (spatial) velocity ``ġg⁻¹`` for right-invariant ones (the rolling ball,
002 §4(d)).  This is the "principal kinematic case" (dim G = number of constraints): the motion
in G follows from the shape motion by the reconstruction equation (4.10)

    ξ = −𝒜(r) ṙ,   ġ = g ξ^ (left)  or  ġ = ξ^ g (right).

**Curvature** (002 (4.3) left, (4.7) right; Prop. 4.1: the curvature coefficients are the
Hamel coefficients γ^α_IJ of the constrained system):

    ℬ_IJ = ∂𝒜_I/∂r^J − ∂𝒜_J/∂r^I ± [𝒜_I, 𝒜_J]     (+ left, − right),

with ``𝒜_I`` the I-th column of 𝒜 and ``[x, y] = ad_x y`` the bracket of 𝔥 (structure constants
``c^α_λμ``).  ℬ is antisymmetric in I, J and vanishes iff the constraints are holonomic.  This is
002's sign convention (Rem. 5.3); it is the *negative* of the convention of
:func:`vm_dynamics.dynamics.lp.curvature` (Marsden–Scheurle, docs/corrections.md) — both are
tested against physics, not copied (docs/nonholonomic.md).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..core import lie
from ..core.groups import VehicleGroup, get_group

__all__ = ["KinematicConnection", "TRIVIALISATIONS"]

TRIVIALISATIONS = ("left", "right")


class KinematicConnection:
    """𝒜(r) and ∂𝒜/∂r of G-invariant velocity constraints ``ξ + 𝒜(r) ṙ = 0`` (002 (4.1)).

    ``A(r)`` returns the m̄×δ matrix 𝒜 (m̄ = ``group.dim``); ``dA(r)`` returns the δ×m̄×δ array
    with ``dA[K] = ∂𝒜/∂r^K`` (``None``: 𝒜 is constant).  ``trivialisation`` is ``"left"``
    (ξ = g⁻¹ġ, body velocity; left-invariant constraints) or ``"right"`` (ξ = ġg⁻¹, spatial
    velocity; right-invariant constraints).
    """

    def __init__(self, group, shape_dim: int, A: Callable, dA: Callable | None = None,
                 trivialisation: str = "left"):
        self.group: VehicleGroup = get_group(group)
        if trivialisation not in TRIVIALISATIONS:
            raise ValueError(f"trivialisation={trivialisation!r}: choose 'left' or 'right'")
        if int(shape_dim) != shape_dim or shape_dim < 1:
            raise ValueError(f"shape_dim={shape_dim!r}: expected a positive integer")
        if self.group.dim == 0:
            raise ValueError("group: a kinematic connection needs a non-trivial group (got 'fixed')")
        self.m = self.group.dim
        self.d = int(shape_dim)
        self.trivialisation = trivialisation
        self._A = A
        self._dA = dA
        #: ``dA`` is ``None``: 𝒜 does not depend on r
        self.constant = dA is None

    # ------------------------------------------------------------------ the connection
    def A(self, r) -> np.ndarray:
        """𝒜(r), m̄×δ (002 (4.1)); checked for shape and finiteness."""
        A = np.asarray(self._A(np.asarray(r, dtype=float)), dtype=float)
        if A.shape != (self.m, self.d) or not np.all(np.isfinite(A)):
            raise ValueError(f"connection A(r): expected a finite {self.m}x{self.d} array, got "
                             f"shape {A.shape}")
        return A

    def dA(self, r) -> np.ndarray:
        """∂𝒜/∂r as a δ×m̄×δ array (``dA[K] = ∂𝒜/∂r^K``); zero when 𝒜 is constant."""
        if self._dA is None:
            return np.zeros((self.d, self.m, self.d))
        dA = np.asarray(self._dA(np.asarray(r, dtype=float)), dtype=float)
        if dA.shape != (self.d, self.m, self.d) or not np.all(np.isfinite(dA)):
            raise ValueError(f"connection dA(r): expected a finite {self.d}x{self.m}x{self.d} "
                             f"array, got shape {dA.shape}")
        return dA

    def bracket(self, x, y) -> np.ndarray:
        """``[x, y] = ad_x y`` on 𝔥 (the structure constants ``c^α_λμ x^λ y^μ``)."""
        return self.group.ad(np.asarray(x, dtype=float)) @ np.asarray(y, dtype=float)

    def curvature(self, r) -> np.ndarray:
        """ℬ as a δ×δ×m̄ array, ``B[I, J] = ∂_J𝒜_I − ∂_I𝒜_J ± [𝒜_I, 𝒜_J]``: 002 (4.3) (+, left)
        and (4.7) (−, right); equal to the Hamel coefficients γ^α_IJ (Prop. 4.1)."""
        A, dA = self.A(r), self.dA(r)
        sign = 1.0 if self.trivialisation == "left" else -1.0
        B = np.zeros((self.d, self.d, self.m))
        for i in range(self.d):
            for j in range(i + 1, self.d):
                Bij = dA[j][:, i] - dA[i][:, j] + sign * self.bracket(A[:, i], A[:, j])
                B[i, j] = Bij
                B[j, i] = -Bij
        return B

    # ------------------------------------------------------------------ reconstruction
    def fiber_velocity(self, r, rd) -> np.ndarray:
        """ξ = −𝒜(r) ṙ: the group velocity the constraints impose (002 (4.10), Rem. 4.2)."""
        return -self.A(r) @ np.asarray(rd, dtype=float)

    def body_velocity(self, g, xi) -> np.ndarray:
        """The body velocity g⁻¹ġ (in 𝔥 coordinates) of the fiber velocity ξ: ξ itself for
        the left trivialisation, ``Ad_{g⁻¹} ξ`` for the right one (ġ = ξ^g ⇔ g⁻¹ġ =
        (Ad_{g⁻¹}ξ)^); this is what the body-velocity RKMK integrator reconstructs."""
        if self.trivialisation == "left":
            return np.asarray(xi, dtype=float)
        X = self.group.embed(xi)                 # Ad_{g⁻¹}[v; ω] = [Rᵀ(v − p×ω); Rᵀω]
        R, p, w = g[:3, :3], g[:3, 3], X[3:]
        v = X[:3] - np.array([p[1] * w[2] - p[2] * w[1], p[2] * w[0] - p[0] * w[2],
                              p[0] * w[1] - p[1] * w[0]])
        return self.group.project(np.concatenate([R.T @ v, R.T @ w]))

    def constraint_residual(self, g, V_body, r, rd) -> np.ndarray:
        """u = ξ + 𝒜(r) ṙ (002 (4.1)) for a body velocity ``V_body`` at pose ``g``: zero on an
        admissible motion."""
        V = np.asarray(V_body, dtype=float)
        xi = V if self.trivialisation == "left" else self.group.project(
            lie.Ad(g) @ self.group.embed(V))
        return xi + self.A(r) @ np.asarray(rd, dtype=float)
