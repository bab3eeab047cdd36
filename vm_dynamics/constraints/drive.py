"""Driving a constrained system step by step: a stepper for nodes, the wheel-velocity controller
of a differential drive (``/cmd_vel``) and ``diff_drive_controller``-style wheel odometry.

* :class:`ConstrainedStepper` advances a :class:`~vm_dynamics.constraints.hamel.HamelSystem`
  one RKMK step at a time (:func:`vm_dynamics.sim.integrators.rkmk_step`, the same method as
  :func:`~vm_dynamics.constraints.integrate.simulate_constrained`).
* :class:`WheelVelocityController` turns a body-velocity command (v, ω) — the
  ``geometry_msgs/Twist`` of ``/cmd_vel``, linear.x and angular.z — into wheel speeds
  ``((v − bω)/ρ, (v + bω)/ρ)`` and wheel efforts ``gain (φ̇_ref − φ̇)``.
* :class:`WheelOdometry` dead-reckons the base pose from the wheel angles as ROS 2's
  ``diff_drive_controller`` does: between two readings the base is assumed to move on a circular
  arc (exact for constant wheel speeds), so the pose it reports differs from the simulated pose
  only by that assumption.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..sim.integrators import TABLEAUX, reorthonormalize, rkmk_step
from .hamel import HamelSystem

__all__ = ["ConstrainedStepper", "WheelVelocityController", "WheelOdometry", "PlanarGroup"]


class PlanarGroup:
    """SE(2) in the coordinates ``[vx, vy, ωz]`` of :data:`vm_dynamics.core.groups.SE2`, with the
    closed forms of ``exp`` and ``dexp⁻¹_{−Θ}`` in scalars: the same maps as the generic
    6×6 ones (``test_rolling_node``), for :func:`rkmk_step`, whose per-stage group operations
    dominate a differential drive's step otherwise.

    With Θ = (u, θ) and J the 90° rotation: ``exp Θ = (R(θ), V(θ)u)``, V = (sinθ I + (1 − cosθ)J)/θ;
    ``dexp⁻¹_{−Θ}`` = g(ad_Θ) with g(z) = z/(1 − e^{−z}), i.e. on (v, ω):
    ``αv + (θ/2)Jv − ω((α − 1)/θ u + ½Ju), ω`` with α = (θ/2)cot(θ/2)."""

    name, dim = "SE2", 3

    def __init__(self, generic):
        self.generic = generic          # everything else (project, embed, ad) from the generic

    def __getattr__(self, attr):
        return getattr(self.generic, attr)

    @staticmethod
    def exp(Theta) -> np.ndarray:
        a, b, th = float(Theta[0]), float(Theta[1]), float(Theta[2])
        c, s = math.cos(th), math.sin(th)
        if abs(th) < 1e-6:
            v0, v1 = 1.0 - th * th / 6.0, 0.5 * th
        else:
            v0, v1 = s / th, (1.0 - c) / th
        g = np.eye(4)
        g[0, 0], g[0, 1], g[1, 0], g[1, 1] = c, -s, s, c
        g[0, 3], g[1, 3] = v0 * a - v1 * b, v1 * a + v0 * b
        return g

    @staticmethod
    def dexp_inv_body(Theta) -> np.ndarray:
        a, b, th = float(Theta[0]), float(Theta[1]), float(Theta[2])
        if abs(th) < 1e-4:
            alpha, beta = 1.0 - th * th / 12.0, -th / 12.0
        else:
            alpha = 0.5 * th / math.tan(0.5 * th)
            beta = (alpha - 1.0) / th
        h = 0.5 * th
        # columns: v ↦ αv + hJv;  ω ↦ −(βu + ½Ju)
        return np.array([[alpha, -h, -(beta * a - 0.5 * b)],
                         [h, alpha, -(beta * b + 0.5 * a)],
                         [0.0, 0.0, 1.0]])


class ConstrainedStepper:
    """State ``(t, g, r, ṙ)`` of a constrained system, advanced by :meth:`step`."""

    def __init__(self, system: HamelSystem, g0, r0, rd0, forces: Callable | None = None,
                 method: str = "rkmk4"):
        if method not in TABLEAUX or TABLEAUX[method].adaptive:
            raise ValueError(f"method={method!r}: choose a fixed-step method (rkmk4, lie_euler)")
        self.system, self.forces, self.tab = system, forces, TABLEAUX[method]
        group = system.connection.group
        self.group = PlanarGroup(group) if group.name == "SE2" else group
        self.t = 0.0
        self.g = np.array(g0, dtype=float)
        d = system.d
        self.y = np.concatenate([np.asarray(r0, dtype=float), np.asarray(rd0, dtype=float)])
        if self.g.shape != (4, 4) or self.y.shape != (2 * d,) or not np.all(np.isfinite(self.y)):
            raise ValueError(f"g0 (4x4), r0 and rd0 ({d} each): wrong shape or not finite")

    @property
    def r(self) -> np.ndarray:
        return self.y[:self.system.d]

    @property
    def rd(self) -> np.ndarray:
        return self.y[self.system.d:]

    def loads(self, t, g, r, rd):
        """``(Q_ξ, Q_r)`` of the forces callable at a state (``(None, None)`` without one)."""
        return (None, None) if self.forces is None else self.forces(t, g, r, rd)

    def body_velocity(self) -> np.ndarray:
        """g⁻¹ġ of the current state (reconstruction (4.10))."""
        conn = self.system.connection
        return conn.body_velocity(self.g, self.system.fiber_velocity(self.r, self.rd))

    def _rhs(self, t, g, y):
        d, conn = self.system.d, self.system.connection
        r, rd = y[:d], y[d:]
        Q = self.system.generalized_forces(r, *self.loads(t, g, r, rd))
        rdd = self.system.accelerations(r, rd, Q_shape=Q)
        return conn.body_velocity(g, self.system.fiber_velocity(r, rd)), np.concatenate([rd, rdd]), None

    def step(self, h: float) -> None:
        """One step of size h (> 0)."""
        if not (math.isfinite(h) and h > 0):
            raise ValueError(f"h={h!r}: expected a finite positive step")
        Theta, y, *_ = rkmk_step(self._rhs, self.group, self.tab, self.t, self.g, self.y, h)
        if not np.all(np.isfinite(y)) or not np.all(np.isfinite(Theta)):
            raise ValueError(f"the state is no longer finite after t = {self.t:.6g} s")
        self.g = reorthonormalize(self.g @ self.group.exp(Theta))
        self.y, self.t = y, self.t + h


class WheelVelocityController:
    """``/cmd_vel`` → wheel efforts for a differential drive (wheel joints ``wheels``)."""

    def __init__(self, wheel_radius: float, wheel_separation: float, wheels, gain: float = 2.0,
                 max_speed: float = 50.0):
        self.rho, self.b = float(wheel_radius), 0.5 * float(wheel_separation)
        self.wheels, self.gain, self.max_speed = list(wheels), float(gain), float(max_speed)
        self.reference = np.zeros(2)

    def set_command(self, v, omega) -> np.ndarray:
        """Set the body velocity command (m/s, rad/s); ``ValueError`` naming the field for a
        non-finite value or a wheel speed above ``max_speed`` rad/s.  Returns the wheel speeds."""
        for value, name in ((v, "linear.x"), (omega, "angular.z")):
            if not isinstance(value, (int, float, np.number)) or not math.isfinite(value):
                raise ValueError(f"cmd_vel {name}={value!r}: expected a finite number")
        ref = np.array([(v - self.b * omega) / self.rho, (v + self.b * omega) / self.rho])
        if np.max(np.abs(ref)) > self.max_speed:
            raise ValueError(f"cmd_vel (linear.x={v!r}, angular.z={omega!r}): wheel speed "
                             f"{np.max(np.abs(ref)):.3g} rad/s exceeds {self.max_speed:g} rad/s")
        self.reference = ref
        return ref

    def efforts(self, rd) -> np.ndarray:
        """Wheel efforts ``gain (φ̇_ref − φ̇)`` for the shape velocity ṙ."""
        return self.gain * (self.reference - np.asarray(rd, dtype=float)[self.wheels])


class WheelOdometry:
    """Pose (x, y, θ) and body velocity (v, ω) from wheel angle readings (``diff_drive_controller``
    convention: a circular arc between two readings)."""

    def __init__(self, wheel_radius: float, wheel_separation: float, x=0.0, y=0.0, theta=0.0):
        self.rho, self.sep = float(wheel_radius), float(wheel_separation)
        self.x, self.y, self.theta = float(x), float(y), float(theta)
        self.v = self.omega = 0.0
        self.last = None

    def update(self, phi_left: float, phi_right: float, dt: float) -> None:
        """Integrate the motion since the previous reading (the first one only sets it)."""
        if self.last is None:
            self.last = (phi_left, phi_right)
            return
        dl = self.rho * (phi_left - self.last[0])
        dr = self.rho * (phi_right - self.last[1])
        self.last = (phi_left, phi_right)
        ds, dth = 0.5 * (dl + dr), (dr - dl) / self.sep
        if abs(dth) < 1e-9:                      # straight: second-order Runge–Kutta
            mid = self.theta + 0.5 * dth
            self.x += ds * math.cos(mid)
            self.y += ds * math.sin(mid)
        else:                                    # exact arc of radius ds/dθ
            R = ds / dth
            self.x += R * (math.sin(self.theta + dth) - math.sin(self.theta))
            self.y -= R * (math.cos(self.theta + dth) - math.cos(self.theta))
        self.theta += dth
        if dt > 0:
            self.v, self.omega = ds / dt, dth / dt

    def pose(self, height: float = 0.0) -> np.ndarray:
        """The 4×4 pose of the base in ``odom`` at ``height`` above the plane."""
        c, s = math.cos(self.theta), math.sin(self.theta)
        g = np.eye(4)
        g[:2, :2] = [[c, -s], [s, c]]
        g[:3, 3] = [self.x, self.y, height]
        return g
