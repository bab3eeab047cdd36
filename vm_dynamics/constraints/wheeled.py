"""Differential-drive (unicycle) vehicles on SE(2), with or without an arm (paper 002 §4).

The vehicle is the root body of a :class:`~vm_dynamics.model.Model` with base group ``SE2``
(body velocity ξ = [vx, vy, ωz] of the vehicle frame); two of its joints are the wheels
(continuous joints about the vehicle's y axis, on the axle through the vehicle-frame origin at
y = ±b).  The wheels roll without slipping and the vehicle does not slip sideways:

    vx = ρ(φ̇_L + φ̇_R)/2,   vy = 0,   ωz = ρ(φ̇_R − φ̇_L)/(2b),

three left-invariant constraints for the three dimensions of SE(2) — the principal kinematic
case, with the constant kinematic connection ``ξ + 𝒜ṙ = 0``:

    𝒜 = −[[ρ/2, ρ/2, 0…], [0, 0, 0…], [−ρ/(2b), ρ/(2b), 0…]]

(the arm columns are zero: the arm joints do not move the vehicle).  Its curvature (4.3) is the
bracket term ``ℬ_LR = [𝒜_L, 𝒜_R]`` in the lateral direction: it couples the wheels through the
fiber momentum π = ∂l/∂ξ whenever the centre of mass is off the axle (the term that the sign
correction of (4.9) decides).

The reduced Lagrangian is the model's: ``M(r) = [[M₀, M₀𝔪], [M₀𝔪ᵀ, M_𝔪]]`` (locked inertia,
coupling, joint inertia; paper 000 (65)–(67)) with their closed-form derivatives, and the
gravity potential of the joints (gravity must be normal to the plane, so the Lagrangian is
SE(2)-invariant).  The wheel and arm efforts are joint torques ``Q_r``.

**Fast path.**  With an arm, M depends on r and the reference terms (``lp.inertia_terms`` with
derivatives, Python) cost milliseconds per evaluation.  Because 𝒜 is constant, the corrected
(4.9) is the d'Alembert projection of the unconstrained Euler–Poincaré equations onto the
admissible velocities ν = Hṙ, H = [−𝒜; I]:

    HᵀM(r)H r̈ = Q_c − Hᵀ b(r, ν),   b = the unconstrained bias at ν (zero acceleration),

since Hᵀ(Ṁν − [ad*_ξ ∂l/∂ξ; ½νᵀ∂_r Mν] + ∂U) = bias + curvature of :class:`HamelSystem`
(the ad* term projected on the columns −𝒜_I is πᵀ[𝒜_J, 𝒜_I]ṙ^J = πᵀℬ_IJ ṙ^J).  M is the
composite-rigid-body mass matrix and b the recursive Newton–Euler inverse dynamics at zero
acceleration of :mod:`vm_dynamics.dynamics.fast` (compiled): :meth:`DifferentialDrive.accelerations`
uses them; :meth:`HamelSystem.accelerations` stays the reference they are tested against.
"""
from __future__ import annotations

import numpy as np

from ..dynamics import lp
from ..dynamics.fast import fast_model
from ..forces.two_body import link_mass_properties
from .connection import KinematicConnection
from .hamel import HamelSystem, ReducedLagrangian

__all__ = ["DifferentialDrive", "differential_drive", "diff_drive_connection_matrix"]


def diff_drive_connection_matrix(wheel_radius: float, wheel_separation: float, n: int,
                                 left: int, right: int) -> np.ndarray:
    """𝒜 (3×n) of a differential drive whose wheel joints are columns ``left``, ``right``."""
    rho, b = wheel_radius, 0.5 * wheel_separation
    A = np.zeros((3, n))
    A[0, left], A[0, right] = -0.5 * rho, -0.5 * rho
    A[2, left], A[2, right] = 0.5 * rho / b, -0.5 * rho / b
    return A


class DifferentialDrive(HamelSystem):
    """A :class:`HamelSystem` built from a model; also holds the wheel data."""

    model: object
    wheel_radius: float
    wheel_separation: float
    wheels: tuple
    #: the compiled model of the fast path (``None``: M is constant, the reference is cheap)
    fast: object = None

    def accelerations(self, r, rd, Q_fiber=None, Q_shape=None) -> np.ndarray:
        """r̈ of the corrected (4.9) — by the compiled mass matrix and inverse dynamics when M
        depends on r (module docstring, "Fast path"), else by :class:`HamelSystem`."""
        if self.fast is None:
            return super().accelerations(r, rd, Q_fiber, Q_shape)
        r, rd = np.asarray(r, dtype=float), np.asarray(rd, dtype=float)
        H = self._H
        M = self.fast.mass_matrix(r)
        wrench, tau = self.fast.inverse_dynamics(self._eye, H[:self.m] @ rd, r, rd,
                                                 self._zm, self._zd)
        Q = self.generalized_forces(r, Q_fiber, Q_shape)
        Mc = H.T @ M @ H
        return np.linalg.solve(Mc, Q - H[:self.m].T @ wrench - tau)

    def fiber_velocity(self, r, rd) -> np.ndarray:
        """ξ = −𝒜ṙ with the constant 𝒜 of the fast path (no per-call checks of 𝒜(r))."""
        if self.fast is None:
            return super().fiber_velocity(r, rd)
        return self._H[:self.m] @ np.asarray(rd, dtype=float)

    def energy(self, r, rd) -> float:
        """``E = ½ṙᵀM_cṙ + U(r)`` with the compiled mass matrix on the fast path (the
        reference :meth:`HamelSystem.energy` also builds ∂M/∂r, which E does not need)."""
        if self.fast is None:
            return super().energy(r, rd)
        r, rd = np.asarray(r, dtype=float), np.asarray(rd, dtype=float)
        v = self._H @ rd
        return 0.5 * float(v @ self.fast.mass_matrix(r) @ v) + self._potential(r)

    def _potential(self, r) -> float:
        """``U = −Σ m_k aᵀ p_k`` (the vehicle at the origin, as the reference) with the centres
        of mass from the compiled link frame poses (not the reference kinematics)."""
        a = self.model.gravity
        U = 0.0
        for name, m, c_f in self._masses:
            T = self.model.frame_pose(r, name)
            U -= m * float(a @ (T[:3, :3] @ c_f + T[:3, 3]))
        return U

    def potential_gradient(self, r) -> np.ndarray:
        """∂U/∂r: the joint efforts that hold the arm still (inverse dynamics at rest) on the
        fast path, else the reference gradient."""
        if self.fast is None:
            return super().potential_gradient(r)
        return self.fast.inverse_dynamics(self._eye, self._zm, np.asarray(r, dtype=float),
                                          self._zd, self._zm, self._zd)[1].copy()

    def use_fast_path(self, model) -> None:
        """Evaluate (4.9) with the compiled kernels of ``model`` (non-constant M only)."""
        if self.constant:
            return
        self.fast = fast_model(model)
        self._masses = [(name, m, c_f) for name, m, c_f, _ in link_mass_properties(model)]
        self._H = np.vstack([-self.connection.A(np.zeros(self.d)), np.eye(self.d)])
        self._eye, self._zm, self._zd = np.eye(4), np.zeros(self.m), np.zeros(self.d)

    def wheel_speeds(self, v: float, omega: float) -> np.ndarray:
        """(φ̇_L, φ̇_R) of a body velocity (vx = v, ωz = ω): the inverse kinematics of a
        ``diff_drive_controller`` (``/cmd_vel``)."""
        rho, b = self.wheel_radius, 0.5 * self.wheel_separation
        return np.array([(v - b * omega) / rho, (v + b * omega) / rho])


def _joint_index(model, name, what):
    if name not in model.joint_names:
        raise ValueError(f"{what}={name!r}: not a joint of the model; joints: "
                         f"{', '.join(model.joint_names)}")
    return model.joint_names.index(name)


def _check_wheel(model, idx, name):
    """A wheel is a continuous (or revolute) joint on the vehicle, about the vehicle's y axis
    through the vehicle-frame origin's axle (twist [0; 0, 1, 0] at home)."""
    if model.joint_types[idx] not in ("continuous", "revolute"):
        raise ValueError(f"wheel joint {name!r} is {model.joint_types[idx]}: expected a "
                         "continuous joint")
    full = int(model.coupling.independent[idx])
    if model.parent_joint[full] >= 0:
        raise ValueError(f"wheel joint {name!r}: its parent must be the vehicle link "
                         f"{model.vehicle_link!r}")
    if not np.allclose(model.xi[full], [0, 0, 0, 0, 1, 0], atol=1e-9):
        raise ValueError(f"wheel joint {name!r}: its axis must be the vehicle's +y axis through "
                         f"the axle at x = z = 0 (twist [0,0,0,0,1,0]); got "
                         f"{np.round(model.xi[full], 9).tolist()}")


def _lagrangian(model) -> ReducedLagrangian:
    eye = np.eye(4)
    memo = {}

    ax = list(model.group.axes)

    def blocks(r):
        key = np.asarray(r, dtype=float).tobytes()
        if key not in memo:
            kin = lp.kinematics(model, np.asarray(r, dtype=float))
            it = lp.inertia_terms(model, kin, derivatives=True)     # paper 000 (65)–(67), (117)–(120)
            M = np.block([[it.M0_6[np.ix_(ax, ax)], it.M0m_6[ax, :]],
                          [it.M0m_6[ax, :].T, it.Mm]])
            dM = np.array([np.block([[it.dM0_6[i][np.ix_(ax, ax)], it.dM0m_6[i][ax, :]],
                                     [it.dM0m_6[i][ax, :].T, it.dMm[i]]])
                           for i in range(model.n)])
            memo.clear()
            memo[key] = (kin, M, dM)
        return memo[key]

    if model.n == 2:
        # wheels only: if ∂M/∂φ and ∂U/∂φ vanish at a generic angle, each wheel is axisymmetric
        # about its axle (d/dφ of the wheel's inertia is a commutator with the axis), so M and
        # U are constant
        probe = np.array([0.7318, -1.2093])
        _, M, dM = blocks(probe)
        dU = lp.gravity_forces(model, blocks(probe)[0], eye)[1]
        if np.max(np.abs(dM)) <= 1e-13 * np.max(np.abs(M)) and np.max(np.abs(dU)) <= 1e-13:
            return ReducedLagrangian(M=lambda r, M=M: M)
    return ReducedLagrangian(
        M=lambda r: blocks(r)[1], dM=lambda r: blocks(r)[2],
        U=lambda r: lp.potential_energy(model, blocks(r)[0], eye),
        dU=lambda r: lp.gravity_forces(model, blocks(r)[0], eye)[1])


def differential_drive(model, wheel_radius: float, wheel_separation: float,
                       left: str = "left_wheel_joint",
                       right: str = "right_wheel_joint", fast: bool = True) -> DifferentialDrive:
    """The differential drive of ``model`` (base ``SE2``) as a :class:`HamelSystem` (left
    trivialisation); ``left``/``right`` name the wheel joints (rotation about +y, positive
    forward), ``wheel_separation`` = 2b is the distance between the wheel contact points.
    ``fast=False`` keeps the reference evaluation of (4.9) (``lp``, for comparisons)."""
    if model.group.name != "SE2":
        raise ValueError(f"model base={model.group.name!r}: a differential drive moves in SE2 "
                         "(load the model with base='SE2')")
    if np.any(np.abs(model.gravity[:2]) > 0.0):
        raise ValueError(f"model gravity={model.gravity.tolist()}: must be normal to the plane "
                         "(0, 0, -g) for an SE(2)-invariant Lagrangian")
    for value, name in ((wheel_radius, "wheel_radius"), (wheel_separation, "wheel_separation")):
        if not np.isfinite(value) or value <= 0.0:
            raise ValueError(f"{name}={value!r}: expected a finite positive number")
    il, ir = _joint_index(model, left, "left"), _joint_index(model, right, "right")
    if il == ir:
        raise ValueError(f"left={left!r}, right={right!r}: the two wheels must differ")
    for idx, name in ((il, left), (ir, right)):
        _check_wheel(model, idx, name)
    A = diff_drive_connection_matrix(float(wheel_radius), float(wheel_separation), model.n, il, ir)
    conn = KinematicConnection("SE2", model.n, lambda r: A, None, trivialisation="left")
    system = DifferentialDrive(conn, _lagrangian(model))
    system.model, system.wheels = model, (il, ir)
    system.wheel_radius, system.wheel_separation = float(wheel_radius), float(wheel_separation)
    if fast:
        system.use_fast_path(model)
    return system
