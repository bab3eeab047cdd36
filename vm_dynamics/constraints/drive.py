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

__all__ = ["ConstrainedStepper", "WheelVelocityController", "WheelOdometry"]


class ConstrainedStepper:
    """State ``(t, g, r, ṙ)`` of a constrained system, advanced by :meth:`step`."""

    def __init__(self, system: HamelSystem, g0, r0, rd0, forces: Callable | None = None,
                 method: str = "rkmk4"):
        if method not in TABLEAUX or TABLEAUX[method].adaptive:
            raise ValueError(f"method={method!r}: choose a fixed-step method (rkmk4, lie_euler)")
        self.system, self.forces, self.tab = system, forces, TABLEAUX[method]
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
        Theta, y, *_ = rkmk_step(self._rhs, self.system.connection.group, self.tab, self.t,
                                 self.g, self.y, h)
        if not np.all(np.isfinite(y)) or not np.all(np.isfinite(Theta)):
            raise ValueError(f"the state is no longer finite after t = {self.t:.6g} s")
        self.g = reorthonormalize(self.g @ self.system.connection.group.exp(Theta))
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
