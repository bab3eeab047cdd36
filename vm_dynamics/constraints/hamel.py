"""Hamel equations of a kinematically constrained system with symmetry (paper 002, (4.9)).

The reduced Lagrangian is quadratic in the velocities ν = [ξ; ṙ] (ξ in the trivialisation of the
connection, see :mod:`~vm_dynamics.constraints.connection`):

    l(r, ξ, ṙ) = ½ νᵀ M(r) ν − U(r),   M = [[L, K], [Kᵀ, S]]       (002 (5.3)–(5.4))

G-invariant (M and U depend on the shape r only).  With the constraint velocities
``u = ξ + 𝒜ṙ`` and ℓ(r, u, ṙ) := l(r, u − 𝒜ṙ, ṙ) (002 (4.14) for the ball), the Hamel
equations in the independent velocities ṙ are — **corrected form** of 002 (4.9), whose printed
curvature term stands on the right-hand side with a + sign (the sign contradicts (2.10), (3.12)
and (5.13); docs/nonholonomic.md derives it and the unicycle test discriminates it):

    d/dt ∂ℓ/∂ṙ^I − ∂ℓ/∂r^I + (∂ℓ/∂u^β) ℬ^β_IJ ṙ^J = Q_I,   then u = 0.

At u = 0, with ``H = [−𝒜; I]`` (so ν = Hṙ), this is the matrix equation

    M_c r̈ + Ṁ_c ṙ − ½ [ṙᵀ ∂_I M_c ṙ]_I + ∂U/∂r + [πᵀ ℬ_IJ ṙ^J]_I = Q_c,

with the constrained inertia ``M_c = Hᵀ M H``, the fiber momentum ``π = ∂l/∂ξ = [L K] H ṙ``
and the constrained forces ``Q_c = Q_r − 𝒜ᵀ Q_ξ`` (``Q_ξ`` dual to ξ, ``Q_r`` dual to ṙ;
Q_I = B^a_I Q_a of (2.10)).  The constraint forces never appear: they do no work on admissible
motions, and the energy ``E = ½ṙᵀM_cṙ + U`` changes only by the power ``Q_c·ṙ``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .connection import KinematicConnection

__all__ = ["ReducedLagrangian", "HamelSystem", "ShapeTerms"]


def _forces(Q, n, name) -> np.ndarray:
    Q = np.asarray(Q, dtype=float)
    if Q.shape != (n,) or not np.all(np.isfinite(Q)):
        raise ValueError(f"{name}: expected {n} finite generalised forces, got {Q.tolist()!r}")
    return Q


@dataclass(frozen=True)
class ReducedLagrangian:
    """``l = ½νᵀM(r)ν − U(r)`` on ν = [ξ; ṙ] (m̄ + δ entries).

    ``M(r)`` returns the (m̄+δ)² inertia, ``dM(r)`` the δ×(m̄+δ)×(m̄+δ) array ``∂M/∂r^K``
    (``None``: constant), ``U(r)`` the potential and ``dU(r)`` its gradient (``None``: zero)."""

    M: Callable
    dM: Callable | None = None
    U: Callable | None = None
    dU: Callable | None = None


@dataclass
class ShapeTerms:
    """The terms of the Hamel equation at one state (for tests and diagnostics)."""

    Mc: np.ndarray          # δ×δ constrained inertia Hᵀ M H
    bias: np.ndarray        # Ṁ_c ṙ − ½[ṙᵀ∂_I M_c ṙ] + ∂U/∂r  (δ)
    curvature: np.ndarray   # [πᵀ ℬ_IJ ṙ^J]_I  (δ): the curvature ("gyroscopic") term of (4.9)
    momentum: np.ndarray    # π = ∂l/∂ξ  (m̄)


class HamelSystem:
    """A kinematic connection plus a reduced Lagrangian: the constrained dynamics on shape space
    (002 (4.9), corrected) and the reconstruction (4.10)."""

    def __init__(self, connection: KinematicConnection, lagrangian: ReducedLagrangian):
        self.connection = connection
        self.lagrangian = lagrangian
        self.m, self.d = connection.m, connection.d
        self.n = self.m + self.d
        #: 𝒜 and M do not depend on r: M_c, H and ℬ are computed once (the rolling ball,
        #: a differential drive without an arm)
        self.constant = connection.constant and lagrangian.dM is None
        self._cache = None

    def _inertia(self, r):
        n = self.n
        M = np.asarray(self.lagrangian.M(r), dtype=float)
        if M.shape != (n, n) or not np.all(np.isfinite(M)):
            raise ValueError(f"lagrangian M(r): expected a finite {n}x{n} array, got {M.shape}")
        if self.lagrangian.dM is None:
            return M, np.zeros((self.d, n, n))
        dM = np.asarray(self.lagrangian.dM(r), dtype=float)
        if dM.shape != (self.d, n, n) or not np.all(np.isfinite(dM)):
            raise ValueError(f"lagrangian dM(r): expected a finite {self.d}x{n}x{n} array, got "
                             f"{dM.shape}")
        return M, dM

    def constrained_inertia(self, r):
        """``(M_c, ∂M_c/∂r, H, M)`` with H = [−𝒜; I] and M_c = HᵀMH."""
        r = np.asarray(r, dtype=float)
        if self.constant:
            if self._cache is None:
                Mc, dMc, H, M = self._constrained_inertia(r)
                self._cache = (Mc, dMc, H, M, self.connection.curvature(r), (M @ H)[:self.m])
            return self._cache[:4]
        return self._constrained_inertia(r)

    def _constrained_inertia(self, r):
        A, dA = self.connection.A(r), self.connection.dA(r)
        M, dM = self._inertia(r)
        H = np.vstack([-A, np.eye(self.d)])
        MH = M @ H
        Mc = H.T @ MH
        dMc = np.empty((self.d, self.d, self.d))
        for k in range(self.d):
            dH = np.vstack([-dA[k], np.zeros((self.d, self.d))])
            t = dH.T @ MH
            dMc[k] = t + t.T + H.T @ dM[k] @ H
        return 0.5 * (Mc + Mc.T), dMc, H, M

    def potential(self, r) -> float:
        return 0.0 if self.lagrangian.U is None else float(self.lagrangian.U(r))

    def potential_gradient(self, r) -> np.ndarray:
        return (np.zeros(self.d) if self.lagrangian.dU is None
                else np.asarray(self.lagrangian.dU(r), dtype=float))

    def terms(self, r, rd) -> ShapeTerms:
        """Every term of the corrected (4.9) at ``(r, ṙ)``."""
        r, rd = np.asarray(r, dtype=float), np.asarray(rd, dtype=float)
        Mc, dMc, H, M = self.constrained_inertia(r)
        Mcdot = np.einsum("kij,k->ij", dMc, rd)
        grad = 0.5 * np.einsum("i,kij,j->k", rd, dMc, rd)
        bias = Mcdot @ rd - grad + self.potential_gradient(r)
        pi = (M @ (H @ rd))[:self.m]
        B = self._cache[4] if self.constant else self.connection.curvature(r)
        curv = np.einsum("ija,a,j->i", B, pi, rd)
        return ShapeTerms(Mc=Mc, bias=bias, curvature=curv, momentum=pi)

    def generalized_forces(self, r, Q_fiber=None, Q_shape=None) -> np.ndarray:
        """``Q_c = Q_r − 𝒜ᵀ Q_ξ``: the forces dual to ṙ on the constrained system."""
        Q = np.zeros(self.d) if Q_shape is None else _forces(Q_shape, self.d, "Q_shape")
        if Q_fiber is not None:
            Q = Q - self.connection.A(r).T @ _forces(Q_fiber, self.m, "Q_fiber")
        return Q

    def accelerations(self, r, rd, Q_fiber=None, Q_shape=None) -> np.ndarray:
        """r̈ from the corrected Hamel equations (4.9): the terms of :meth:`terms` by matrix
        products (no einsum, no :class:`ShapeTerms`: this runs at every integration stage);
        with constant 𝒜 and M the inertia terms vanish and only ∂U/∂r and the curvature
        remain."""
        r, rd = np.asarray(r, dtype=float), np.asarray(rd, dtype=float)
        Q = self.generalized_forces(r, Q_fiber, Q_shape)
        Mc, dMc, H, M = self.constrained_inertia(r)
        if self.constant:                 # dMc = 0: no Ṁ_c ṙ, no ½ṙᵀ∂M_cṙ
            B, C = self._cache[4], self._cache[5]
            bias = self.potential_gradient(r)
        else:
            d = self.d
            dMr = dMc @ rd                                    # [k, i] = Σ_j ∂_k M_c[i, j] ṙ^j
            bias = (rd @ dMc.reshape(d, d * d)).reshape(d, d) @ rd - 0.5 * (dMr @ rd) \
                + self.potential_gradient(r)
            B, C = self.connection.curvature(r), (M @ H)[:self.m]
        curv = (B @ (C @ rd)) @ rd
        return np.linalg.solve(Mc, Q - bias - curv)

    def fiber_velocity(self, r, rd) -> np.ndarray:
        """ξ = −𝒜(r)ṙ (002 (4.10)); the cached 𝒜 when it is constant."""
        if self.constant:
            H = self.constrained_inertia(r)[2]
            return H[:self.m] @ np.asarray(rd, dtype=float)
        return self.connection.fiber_velocity(r, rd)

    def energy(self, r, rd) -> float:
        """``E = ½ṙᵀM_cṙ + U(r)`` (the constraint forces do no work)."""
        rd = np.asarray(rd, dtype=float)
        Mc = self.constrained_inertia(r)[0]
        return 0.5 * float(rd @ Mc @ rd) + self.potential(r)
