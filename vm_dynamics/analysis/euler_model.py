"""Classical ZYX Euler-angle model of a vehicle-manipulator — the baseline the LP equations replace.

Paper 004 (From et al. 2010) §3.1–3.2/§5.  This is
the textbook Euler–Lagrange model in *coordinates*: it exists to be compared with (and to show the
weakness of) the singularity-free Lagrange–Poincaré model of :mod:`vm_dynamics.dynamics.lp`.

Generalised coordinates and velocities (SE(3) vehicle only)::

    x  = (p, Θ, q)    p ∈ R³ vehicle origin in the inertial frame, Θ = (φ, θ, ψ) roll–pitch–yaw,
    ẋ  = (ṗ, Θ̇, q̇)    R(Θ) = Rz(ψ) Ry(θ) Rx(φ)  (URDF/Fossen ZYX convention).

They are tied to the quasi-velocities of the LP model, ``z = [V; q̇]`` (V = body twist ``[v; ω]``), by

    z = B(x) ẋ,   B = blockdiag(Rᵀ, T(Θ), I_n),   T(Θ) = [[1, 0, −sθ], [0, cφ, cθ sφ], [0, −sφ, cθ cφ]]

(``ω = T Θ̇``; Fossen's ``T_Θ⁻¹``, paper 004 (42); ``det T = cos θ``).  With ``M(q)`` the LP mass
matrix (paper 000 (64), here :meth:`Model.mass_matrix`) the Lagrangian is

    L(x, ẋ) = ½ ẋᵀ M_E(x) ẋ − U(x),   M_E = Bᵀ M(q) B,

and the equations of motion are Lagrange's equations in these coordinates (no Lie theory used):

    M_E ẍ + C_E(x, ẋ) ẋ + ∂U/∂x = Bᵀ [base_wrench; τ],
    (C_E ẋ)_i = Σ_k ∂_k(M_E)_{ij} ẋ_j ẋ_k − ½ ẋᵀ ∂_i M_E ẋ      (Christoffel symbols of M_E).

``∂M_E/∂Θ`` is analytic (derivatives of R and T); ``∂M_E/∂q_k = Bᵀ (∂M/∂q_k) B`` uses the library's
closed-form ``∂M/∂q`` (paper 000 (117)–(120), verified against finite differences in
``test/oracle/test_model.py``).  ``∂U/∂p`` and ``∂U/∂Θ`` are analytic; ``∂U/∂q`` is the library's closed
form (paper 000 (132)–(133)).  The generalised force is ``Bᵀ F`` because the power is
``zᵀF = ẋᵀ BᵀF`` (input matrix ``S^T`` of paper 004).

:meth:`EulerAngleModel.forward_dynamics` evaluates these equations term by term (the reference).
:meth:`EulerAngleModel.accelerations` evaluates the same ``ẍ`` faster: since both are
Lagrange's equations of one Lagrangian, ``C_E ẋ + ∂U/∂x = Bᵀ(M Ḃ ẋ + h)`` with ``h`` the LP
Coriolis and gravity terms, so ``M_E ẍ = Bᵀ(F − ID(ż = Ḃ ẋ))`` with ``ID`` the compiled recursive
Newton–Euler inverse dynamics (:meth:`~vm_dynamics.dynamics.fast.FastModel.inverse_dynamics`).
``M_E`` is still formed and solved in the Euler coordinates, so the run meets the same
singularity; the two agree to round-off (times ``cond(M_E)``), as the tests check.

At θ = ±π/2, T — hence B and M_E — is singular: ``cond(M_E) ~ 1/cos²θ`` and the Euler rates
``Θ̇ = T⁻¹ω`` blow up.  The LP model has no such set (its mass matrix depends on q only).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..core import lie
from ..core.rotations import rpy_to_matrix
from ..core.validation import as_vector
from ..dynamics import lp

__all__ = ["EulerAngleModel", "EulerSingularityError", "EulerSimulation", "simulate_euler",
           "rotation_zyx", "rotations_zyx", "euler_zyx", "euler_rate_matrix"]

_SINGULAR_COS = 1e-12   # |cos θ| below which the Euler-angle model is declared undefined


class EulerSingularityError(ValueError):
    """The state is (numerically) at pitch θ = ±π/2, where the ZYX Euler-angle model is undefined."""


#: ``R = Rz(ψ) Ry(θ) Rx(φ)`` for ``Θ = (φ, θ, ψ)``: the URDF roll–pitch–yaw rotation.
rotation_zyx = rpy_to_matrix


def _rotation_zyx_derivatives(Theta) -> np.ndarray:
    """``∂R/∂φ = R ê_x``, ``∂R/∂θ = Rz Ry ê_y Rx``, ``∂R/∂ψ = ê_z R``, stacked (3, 3, 3)."""
    phi, th, psi = Theta
    Rx = np.array([[1, 0, 0], [0, np.cos(phi), -np.sin(phi)], [0, np.sin(phi), np.cos(phi)]])
    Ry = np.array([[np.cos(th), 0, np.sin(th)], [0, 1, 0], [-np.sin(th), 0, np.cos(th)]])
    Rz = np.array([[np.cos(psi), -np.sin(psi), 0], [np.sin(psi), np.cos(psi), 0], [0, 0, 1]])
    ex, ey, ez = lie.skew([1.0, 0, 0]), lie.skew([0, 1.0, 0]), lie.skew([0, 0, 1.0])
    R = Rz @ Ry @ Rx
    return np.stack([R @ ex, Rz @ Ry @ ey @ Rx, ez @ R])


def euler_zyx(R) -> np.ndarray:
    """``Θ = (φ, θ, ψ)`` with ``rotation_zyx(Θ) = R``, θ ∈ [−π/2, π/2].

    Raises :class:`EulerSingularityError` at θ = ±π/2, where φ and ψ are not separately defined.
    """
    R = np.asarray(R, dtype=float)
    s = -R[2, 0]
    c = float(np.hypot(R[2, 1], R[2, 2]))
    if c < _SINGULAR_COS:
        raise EulerSingularityError(
            f"R: pitch θ = ±90° (cos θ = {c:.3g}); ZYX Euler angles are singular (gimbal lock)")
    return np.array([np.arctan2(R[2, 1], R[2, 2]), np.arctan2(s, c), np.arctan2(R[1, 0], R[0, 0])])


def rotations_zyx(Thetas) -> np.ndarray:
    """``R(Θ_k)`` of every row of ``Thetas`` (N, 3) at once, (N, 3, 3): :func:`rotation_zyx`'s
    formula on arrays (the comparison's per-sample poses without a Python call per sample)."""
    r, p, y = Thetas[:, 0], Thetas[:, 1], Thetas[:, 2]
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    R = np.empty((len(Thetas), 3, 3))
    R[:, 0, 0], R[:, 0, 1], R[:, 0, 2] = cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr
    R[:, 1, 0], R[:, 1, 1], R[:, 1, 2] = sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr
    R[:, 2, 0], R[:, 2, 1], R[:, 2, 2] = -sp, cp * sr, cp * cr
    return R


def euler_rate_matrix(Theta) -> np.ndarray:
    """``T(Θ)`` with body angular velocity ``ω = T Θ̇`` (Fossen's T_Θ⁻¹; det = cos θ)."""
    phi, th, _ = Theta
    cf, sf, ct, st = np.cos(phi), np.sin(phi), np.cos(th), np.sin(th)
    return np.array([[1.0, 0.0, -st],
                     [0.0, cf, ct * sf],
                     [0.0, -sf, ct * cf]])


def _euler_rate_matrix_derivatives(Theta) -> np.ndarray:
    """``∂T/∂φ, ∂T/∂θ, ∂T/∂ψ`` stacked (3, 3, 3)."""
    phi, th, _ = Theta
    cf, sf, ct, st = np.cos(phi), np.sin(phi), np.cos(th), np.sin(th)
    dphi = np.array([[0.0, 0.0, 0.0], [0.0, -sf, ct * cf], [0.0, -cf, -ct * sf]])
    dth = np.array([[0.0, 0.0, -ct], [0.0, 0.0, -st * sf], [0.0, 0.0, -st * cf]])
    return np.stack([dphi, dth, np.zeros((3, 3))])




class EulerAngleModel:
    """ZYX Euler-angle Euler–Lagrange model of an SE(3)-base :class:`~vm_dynamics.model.Model`."""

    def __init__(self, model):
        if model.group.name != "SE3":
            raise ValueError(f"model: base={model.group.name}; the Euler-angle model needs an SE3 "
                             f"(free-floating 6-DoF) vehicle")
        self.model = model
        self.n = model.n
        self.dim = 6 + model.n
        from ..dynamics import fast
        self._fm = fast.fast_model(model) if fast.numba_available() else None

    # ------------------------------------------------------------------ helpers
    def _x(self, x, name="x"):
        x = as_vector(x, self.dim, name)
        if abs(np.cos(x[4])) < _SINGULAR_COS:
            raise EulerSingularityError(f"{name}: pitch θ = {x[4]!r} is ±90°, where the ZYX "
                                        f"Euler-angle model is undefined")
        return x

    def velocity_map(self, x) -> np.ndarray:
        """``B(x) = blockdiag(R(Θ)ᵀ, T(Θ), I)``, so that ``[V; q̇] = B ẋ``."""
        x = self._x(x)
        B = np.eye(self.dim)
        B[:3, :3] = rotation_zyx(x[3:6]).T
        B[3:6, 3:6] = euler_rate_matrix(x[3:6])
        return B

    def _B_derivatives(self, Theta) -> np.ndarray:
        """``∂B/∂Θ_j`` (3, dim, dim); ∂B/∂p = ∂B/∂q = 0."""
        dR = _rotation_zyx_derivatives(Theta)
        dT = _euler_rate_matrix_derivatives(Theta)
        dB = np.zeros((3, self.dim, self.dim))
        for j in range(3):
            dB[j, :3, :3] = dR[j].T
            dB[j, 3:6, 3:6] = dT[j]
        return dB

    def _lie_mass_and_derivatives(self, q):
        """``M(q)`` (64) and ``∂M/∂q_k`` (117)–(120) of the LP model, SE(3) base."""
        model = self.model
        it = lp.inertia_terms(model, lp.kinematics(model, q), derivatives=True)
        n = self.n
        M = np.block([[it.M0_6, it.M0m_6], [it.M0m_6.T, it.Mm]])
        dM = np.zeros((n, self.dim, self.dim))
        for k in range(n):
            dM[k] = np.block([[it.dM0_6[k], it.dM0m_6[k]], [it.dM0m_6[k].T, it.dMm[k]]])
        return M, dM

    def pose(self, x) -> np.ndarray:
        """4×4 vehicle pose ``g = [[R(Θ), p], [0, 1]]``."""
        x = as_vector(x, self.dim, "x")
        return lie.make_pose(rotation_zyx(x[3:6]), x[:3])

    def poses(self, xs) -> np.ndarray:
        """:meth:`pose` of every row of ``xs`` (N, dim) at once, (N, 4, 4)."""
        xs = np.asarray(xs, dtype=float).reshape(-1, self.dim)
        g = np.zeros((len(xs), 4, 4))
        g[:, :3, :3] = rotations_zyx(xs[:, 3:6])
        g[:, :3, 3] = xs[:, :3]
        g[:, 3, 3] = 1.0
        return g

    def velocity_maps(self, xs) -> np.ndarray:
        """:meth:`velocity_map` of every row of ``xs`` (N, dim) at once, (N, dim, dim); rows
        at pitch ±90° are not rejected here (the caller leaves them out)."""
        xs = np.asarray(xs, dtype=float).reshape(-1, self.dim)
        B = np.zeros((len(xs), self.dim, self.dim))
        B[:, :3, :3] = rotations_zyx(xs[:, 3:6]).transpose(0, 2, 1)
        cf, sf, ct, st = np.cos(xs[:, 3]), np.sin(xs[:, 3]), np.cos(xs[:, 4]), np.sin(xs[:, 4])
        B[:, 3, 3], B[:, 3, 5] = 1.0, -st
        B[:, 4, 4], B[:, 4, 5] = cf, ct * sf
        B[:, 5, 4], B[:, 5, 5] = -sf, ct * cf
        for i in range(6, self.dim):
            B[:, i, i] = 1.0
        return B

    # ------------------------------------------------------------------ state maps
    def from_lie_state(self, g, V, q, qd):
        """``(x, ẋ)`` of a Lie-group state ``(g, V, q, q̇)``; raises at pitch ±90°."""
        g = np.asarray(g, dtype=float)
        if g.shape != (4, 4):
            raise ValueError(f"g: expected shape (4, 4), got {g.shape}")
        Theta = euler_zyx(g[:3, :3])
        x = np.concatenate([g[:3, 3], Theta, as_vector(q, self.n, "q")])
        z = np.concatenate([as_vector(V, 6, "V"), as_vector(qd, self.n, "qd")])
        xd = np.linalg.solve(self.velocity_map(x), z)
        return x, xd

    def to_lie_state(self, x, xd):
        """``(g, V, q, q̇)`` of ``(x, ẋ)``: ``g = [[R(Θ), p], [0, 1]]``, ``[V; q̇] = B ẋ``."""
        x = self._x(x)
        z = self.velocity_map(x) @ as_vector(xd, self.dim, "xd")
        return self.pose(x), z[:6], x[6:].copy(), z[6:]

    def to_lie_acceleration(self, x, xd, xdd):
        """``(V̇, q̈) = Ḃ ẋ + B ẍ`` (time derivative of ``[V; q̇] = B ẋ``)."""
        x = self._x(x)
        xd = as_vector(xd, self.dim, "xd")
        xdd = as_vector(xdd, self.dim, "xdd")
        dB = self._B_derivatives(x[3:6])
        Bdot = np.einsum("jab,j->ab", dB, xd[3:6])
        zd = Bdot @ xd + self.velocity_map(x) @ xdd
        return zd[:6], zd[6:]

    # ------------------------------------------------------------------ inertia
    def mass_matrix(self, x) -> np.ndarray:
        """``M_E(x) = Bᵀ M(q) B`` ((6+n)×(6+n)); singular at θ = ±π/2."""
        x = self._x(x)
        B = self.velocity_map(x)
        M = self.model.mass_matrix(x[6:])
        return B.T @ M @ B

    def condition_number(self, x) -> float:
        """2-norm condition number of :meth:`mass_matrix` (grows like 1/cos²θ)."""
        return float(np.linalg.cond(self.mass_matrix(x)))

    def mass_matrix_derivatives(self, x) -> np.ndarray:
        """``∂M_E/∂x_k`` for all k, (dim, dim, dim); zero for k ∈ p."""
        x = self._x(x)
        B = self.velocity_map(x)
        M, dM = self._lie_mass_and_derivatives(x[6:])
        dB = self._B_derivatives(x[3:6])
        dME = np.zeros((self.dim, self.dim, self.dim))
        for j in range(3):
            t = dB[j].T @ M @ B
            dME[3 + j] = t + t.T
        dME[6:] = np.einsum("ai,kab,bj->kij", B, dM, B)
        return dME

    # ------------------------------------------------------------------ energy and forces
    def potential_energy(self, x) -> float:
        """``U = −aᵀ(m_tot p + R(Θ) Σ_k m_k c_k(q))`` (a = gravitational acceleration)."""
        x = self._x(x)
        c = self._weighted_com(x[6:])
        a = self.model.gravity
        return float(-a @ (self.model.total_mass * x[:3] + rotation_zyx(x[3:6]) @ c))

    def kinetic_energy(self, x, xd) -> float:
        xd = as_vector(xd, self.dim, "xd")
        return float(0.5 * xd @ self.mass_matrix(x) @ xd)

    def energy(self, x, xd) -> float:
        """Kinetic plus gravitational potential energy (must equal :meth:`Model.energy`)."""
        return self.kinetic_energy(x, xd) + self.potential_energy(x)

    def _weighted_com(self, q) -> np.ndarray:
        p = lp.com_positions(self.model, lp.kinematics(self.model, q))
        return self.model.mass @ p

    def potential_gradient(self, x) -> np.ndarray:
        """``∂U/∂x``: analytic in p and Θ, library closed form (132)–(133) in q."""
        x = self._x(x)
        model = self.model
        a = model.gravity
        grad = np.empty(self.dim)
        grad[:3] = -model.total_mass * a
        c = self._weighted_com(x[6:])
        dR = _rotation_zyx_derivatives(x[3:6])
        grad[3:6] = -np.einsum("a,jab,b->j", a, dR, c)
        _, du_dq = lp.gravity_forces(model, lp.kinematics(model, x[6:]), self.pose(x))
        grad[6:] = du_dq
        return grad

    def coriolis_vector(self, x, xd) -> np.ndarray:
        """``C_E ẋ = Ṁ_E ẋ − ½ [ẋᵀ ∂_k M_E ẋ]_k`` (Christoffel symbols of the first kind)."""
        xd = as_vector(xd, self.dim, "xd")
        dME = self.mass_matrix_derivatives(x)
        MEdot = np.einsum("kij,k->ij", dME, xd)
        return MEdot @ xd - 0.5 * np.einsum("i,kij,j->k", xd, dME, xd)

    def forward_dynamics(self, x, xd, tau, base_wrench=None) -> np.ndarray:
        """``ẍ = M_E⁻¹(Bᵀ[base_wrench; τ] − C_E ẋ − ∂U/∂x)``.

        ``base_wrench`` is the body wrench ``[f; n]`` on the vehicle (paired with V), ``tau`` the
        joint efforts — the same inputs as :meth:`Model.forward_dynamics`.
        """
        x = self._x(x)
        xd = as_vector(xd, self.dim, "xd")
        F = np.concatenate([np.zeros(6) if base_wrench is None else as_vector(base_wrench, 6, "base_wrench"),
                            as_vector(tau, self.n, "tau")])
        B = self.velocity_map(x)
        rhs = B.T @ F - self.coriolis_vector(x, xd) - self.potential_gradient(x)
        return np.linalg.solve(self.mass_matrix(x), rhs)

    def accelerations(self, x, xd, tau, base_wrench=None) -> np.ndarray:
        """:meth:`forward_dynamics`'s ``ẍ`` by the compiled LP inverse dynamics pulled back to
        the Euler coordinates (module docstring): ``M_E ẍ = Bᵀ(F − ID(ż = Ḃẋ))``, with
        ``M_E = Bᵀ M B``; :meth:`forward_dynamics` itself without numba."""
        if self._fm is None:
            return self.forward_dynamics(x, xd, tau, base_wrench)
        x = self._x(x)
        xd = as_vector(xd, self.dim, "xd")
        F = np.zeros(self.dim)
        if base_wrench is not None:
            F[:6] = as_vector(base_wrench, 6, "base_wrench")
        F[6:] = as_vector(tau, self.n, "tau")
        return self._pulled_back(x, xd, F)

    def _pulled_back(self, x, xd, F):
        """:meth:`accelerations` for checked ``x, ẋ`` and ``F = [base_wrench; τ]``."""
        cf, sf = np.cos(x[3]), np.sin(x[3])
        ct, st = np.cos(x[4]), np.sin(x[4])
        cp, sp = np.cos(x[5]), np.sin(x[5])
        R = np.array([[cp * ct, cp * st * sf - sp * cf, cp * st * cf + sp * sf],
                      [sp * ct, sp * st * sf + cp * cf, sp * st * cf - cp * sf],
                      [-st, ct * sf, ct * cf]])
        T = np.array([[1.0, 0.0, -st], [0.0, cf, ct * sf], [0.0, -sf, ct * cf]])
        d0, d1 = xd[3], xd[4]
        Tdot = np.array([[0.0, 0.0, -ct * d1],
                         [0.0, -sf * d0, ct * cf * d0 - st * sf * d1],
                         [0.0, -cf * d0, -ct * sf * d0 - st * cf * d1]])
        w = T @ xd[3:6]
        v = R.T @ xd[:3]
        # Ḃ ẋ: d/dt(Rᵀ) ṗ = −ω × (Rᵀ ṗ), d/dt(T) Θ̇; zero for q
        zd = np.zeros(self.dim)
        zd[0] = w[2] * v[1] - w[1] * v[2]
        zd[1] = w[0] * v[2] - w[2] * v[0]
        zd[2] = w[1] * v[0] - w[0] * v[1]
        zd[3:6] = Tdot @ xd[3:6]
        g = np.eye(4)
        g[:3, :3] = R
        g[:3, 3] = x[:3]
        fb, ft = self._fm.inverse_dynamics(g, np.concatenate([v, w]), x[6:], xd[6:],
                                           zd[:6], zd[6:])
        F = F.copy()
        F[:6] -= fb
        F[6:] -= ft
        # M_E = Bᵀ M B and Bᵀ F with B = blockdiag(Rᵀ, T, I), by blocks
        ME = self._fm.mass_matrix(x[6:])
        ME[:3] = R @ ME[:3]
        ME[3:6] = T.T @ ME[3:6]
        ME[:, :3] = ME[:, :3] @ R.T
        ME[:, 3:6] = ME[:, 3:6] @ T
        F[:3] = R @ F[:3]
        F[3:6] = T.T @ F[3:6]
        return np.linalg.solve(ME, F)

    def energies(self, xs, xds) -> tuple[np.ndarray, np.ndarray]:
        """(E, cond(M_E)) at each of the states ``xs, xds`` (N, dim): :meth:`energy` and
        :meth:`condition_number`, NaN where the model is undefined (pitch ±90°, non-finite);
        with numba by the compiled mass matrix and vectorised over the states."""
        xs, xds = np.asarray(xs, dtype=float), np.asarray(xds, dtype=float)
        N = len(xs)
        E, cond = np.full(N, np.nan), np.full(N, np.nan)
        ok = np.all(np.isfinite(xs), axis=1) & np.all(np.isfinite(xds), axis=1) \
            & (np.abs(np.cos(xs[:, 4])) >= _SINGULAR_COS)
        if self._fm is None:
            for k in np.flatnonzero(ok):
                try:
                    E[k] = self.energy(xs[k], xds[k])
                    cond[k] = self.condition_number(xs[k])
                except (ValueError, OverflowError, FloatingPointError, np.linalg.LinAlgError):
                    E[k] = cond[k] = np.nan
            return E, cond
        from .metrics import gravity_potentials
        idx = np.flatnonzero(ok)
        M = np.empty((len(idx), self.dim, self.dim))
        good = np.zeros(len(idx), dtype=bool)
        for i, k in enumerate(idx):
            try:
                M[i] = self._fm.mass_matrix(xs[k, 6:])
                good[i] = True
            except (ValueError, OverflowError, FloatingPointError):
                pass
        idx, M = idx[good], M[good]
        if not len(idx):
            return E, cond
        B = self.velocity_maps(xs[idx])
        ME = B.transpose(0, 2, 1) @ M @ B
        K = 0.5 * np.einsum("ki,kij,kj->k", xds[idx], ME, xds[idx])
        samples = SimpleNamespace(t=np.zeros(len(idx)), q=xs[idx, 6:], g=self.poses(xs[idx]))
        E[idx] = K + gravity_potentials(self.model, samples)
        fin = np.all(np.isfinite(ME), axis=(1, 2))
        if np.any(fin):
            try:
                cond[idx[fin]] = np.linalg.cond(ME[fin])
            except np.linalg.LinAlgError:
                pass
        return E, cond


@dataclass
class EulerSimulation:
    """Result of :func:`simulate_euler`: samples up to the last successful step.

    ``status`` is ``"ok"`` or the reason the integration stopped (singular attitude, non-finite
    state, singular mass matrix).
    """

    t: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    status: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def simulate_euler(emodel: EulerAngleModel, x0, xd0, duration: float, dt: float,
                   tau=None, base_wrench=None, reference: bool = True) -> EulerSimulation:
    """Fixed-step classical RK4 on ``(x, ẋ)`` of the Euler-angle model: its accelerations by
    :meth:`~EulerAngleModel.forward_dynamics` (``reference=True``, term by term) or by
    :meth:`~EulerAngleModel.accelerations` (the same to round-off, tens of times faster).

    ``tau`` / ``base_wrench``: ``None`` (zero), a constant vector, or a callable ``f(t, x, ẋ)``.
    Integration stops early (status explains why) if a stage hits pitch ±90°, the mass matrix is
    singular, or the state becomes non-finite — the failure modes this baseline exists to show.
    """
    if not (np.isfinite(duration) and duration > 0):
        raise ValueError(f"duration: must be a positive number, got {duration!r}")
    if not (np.isfinite(dt) and 0 < dt <= duration):
        raise ValueError(f"dt: must be in (0, duration], got {dt!r}")
    x = as_vector(x0, emodel.dim, "x0").copy()
    xd = as_vector(xd0, emodel.dim, "xd0").copy()
    n = emodel.n

    def inputs(t, xs, xds):
        u = tau(t, xs, xds) if callable(tau) else (np.zeros(n) if tau is None else tau)
        w = base_wrench(t, xs, xds) if callable(base_wrench) else base_wrench
        return u, w

    accel = emodel.forward_dynamics if reference else emodel.accelerations
    fixed = None
    if not reference and emodel._fm is not None and not callable(tau) \
            and not callable(base_wrench):
        fixed = np.zeros(emodel.dim)         # constant inputs, checked once
        if base_wrench is not None:
            fixed[:6] = as_vector(base_wrench, 6, "base_wrench")
        if tau is not None:
            fixed[6:] = as_vector(tau, n, "tau")

    def f(t, xs, xds):
        if fixed is not None:
            return xds, emodel._pulled_back(emodel._x(xs), xds, fixed)
        u, w = inputs(t, xs, xds)
        return xds, accel(xs, xds, u, w)

    steps = int(round(duration / dt))
    if fixed is not None and not emodel._fm.coupled:
        return _simulate_compiled(emodel, x, xd, steps, float(dt), fixed)
    ts, xs, xds = [0.0], [x.copy()], [xd.copy()]
    status = "ok"
    with np.errstate(all="ignore"):
        for k in range(steps):
            t = k * dt
            try:
                k1x, k1v = f(t, x, xd)
                k2x, k2v = f(t + dt / 2, x + dt / 2 * k1x, xd + dt / 2 * k1v)
                k3x, k3v = f(t + dt / 2, x + dt / 2 * k2x, xd + dt / 2 * k2v)
                k4x, k4v = f(t + dt, x + dt * k3x, xd + dt * k3v)
            except EulerSingularityError as err:
                status = f"singular attitude at t = {t:.6g}: {err}"
                break
            except np.linalg.LinAlgError as err:
                status = f"singular mass matrix at t = {t:.6g}: {err}"
                break
            except (OverflowError, FloatingPointError) as err:
                status = f"state overflowed at t = {t:.6g}: {err}"
                break
            except ValueError as err:      # non-finite or out-of-range stage values rejected
                status = f"state rejected at t = {t:.6g}: {err}"
                break
            x_new = x + dt / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
            xd_new = xd + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
            if not (np.all(np.isfinite(x_new)) and np.all(np.isfinite(xd_new))):
                status = f"non-finite state at t = {t + dt:.6g}"
                break
            x, xd = x_new, xd_new
            ts.append((k + 1) * dt)
            xs.append(x.copy())
            xds.append(xd.copy())
    return EulerSimulation(t=np.array(ts), x=np.array(xs), xd=np.array(xds), status=status)


def _simulate_compiled(emodel, x, xd, steps, dt, F) -> EulerSimulation:
    """:func:`simulate_euler`'s loop with constant inputs ``F`` as one compiled call
    (:func:`.euler_kernels.euler_rk4`); the stage it stops at is evaluated again in Python for
    the reason, so that the status reads as the Python loop's."""
    from .euler_kernels import NON_FINITE, euler_rk4
    C = emodel._fm.kernel_constants
    X, XD = np.empty((steps + 1, emodel.dim)), np.empty((steps + 1, emodel.dim))
    fail = np.zeros((2, emodel.dim))
    with np.errstate(all="ignore"):
        st, done = euler_rk4(C, x, xd, F, dt, X, XD, fail, _SINGULAR_COS)
    status, t = "ok", done * dt
    if st == NON_FINITE:
        status = f"non-finite state at t = {t + dt:.6g}"
    elif st:
        try:
            with np.errstate(all="ignore"):
                emodel._pulled_back(emodel._x(fail[0]), fail[1], F)
            status = f"singular mass matrix at t = {t:.6g}: a zero pivot"
        except EulerSingularityError as err:
            status = f"singular attitude at t = {t:.6g}: {err}"
        except np.linalg.LinAlgError as err:
            status = f"singular mass matrix at t = {t:.6g}: {err}"
        except (OverflowError, FloatingPointError) as err:
            status = f"state overflowed at t = {t:.6g}: {err}"
        except ValueError as err:
            status = f"state rejected at t = {t:.6g}: {err}"
    return EulerSimulation(t=np.arange(done + 1) * dt, x=X[:done + 1].copy(),
                           xd=XD[:done + 1].copy(), status=status)


def compare_with_lp(model, traj) -> dict:
    """Run the Euler-angle model from ``traj``'s initial state (no inputs) side by side with an
    LP trajectory and summarise where it degenerates (used by the ``tumbling`` scenario).

    Returns a JSON-ready dict: the pitch closest to ±90° reached by the LP run, the Euler run's
    status, its relative energy error and its worst mass-matrix condition number, the LP run's
    energy error, and the largest pose difference between the two while the Euler run is valid.
    """
    em = EulerAngleModel(model)
    x0, xd0 = em.from_lie_state(traj.g[0], traj.V[0], traj.q[0], traj.qd[0])
    dt = float(traj.t[1] - traj.t[0])
    sim = simulate_euler(em, x0, xd0, float(traj.t[-1] - traj.t[0]), dt, reference=False)
    pitch = np.arcsin(np.clip(-traj.g[:, 2, 0], -1.0, 1.0))   # ZYX pitch, defined at ±90° too
    from .metrics import energy_series
    E_lp = energy_series(model, traj)[0]
    K_scale = max(abs(E_lp[0]), 1e-300)
    with np.errstate(all="ignore"):
        E_eu, cond = em.energies(sim.x, sim.xd)
        m = len(sim.t)
        pose_err = float(np.abs(em.poses(sim.x) - traj.g[:m]).max()) if m else 0.0
    err_eu = np.abs(E_eu - E_eu[0]) / K_scale
    return {
        "max_abs_pitch_deg": float(np.degrees(np.max(np.abs(pitch)))),
        "closest_to_gimbal_lock_deg": float(np.degrees(np.pi / 2 - np.max(np.abs(pitch)))),
        "lp_energy_drift_rel": float(np.max(np.abs(E_lp - E_lp[0])) / K_scale),
        "euler_status": sim.status,
        "euler_completed": bool(sim.ok),
        "euler_steps": int(m - 1),
        "euler_energy_drift_rel": float(np.nanmax(err_eu)) if np.any(np.isfinite(err_eu)) else None,
        "euler_max_condition_number": float(np.nanmax(cond)) if np.any(np.isfinite(cond)) else None,
        "max_pose_difference": pose_err,
        "euler_trajectory": {"t": sim.t, "energy_error_rel": err_eu, "condition_number": cond},
    }
