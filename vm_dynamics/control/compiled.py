"""Control laws the simulation engine can evaluate in compiled code at every RK stage.

A controller whose law is a fixed formula over the O(n) recursions can describe it as a
:class:`CompiledLaw` (:meth:`vm_dynamics.control.Controller.compiled_law`).  ``vm.simulate``
given the ``inputs()`` of such a controller then runs the law inside the engine's compiled
step (:func:`vm_dynamics.dynamics.fast.kernels.engine.engine_rollout_law`) instead of calling
:meth:`~vm_dynamics.control.Controller.compute` from Python four times per RKMK4 step; the
efforts are the same (the tests compare both paths).  Everything else keeps the Python path.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .references import JointSetpoint, JointWaypoints

__all__ = ["CompiledLaw", "joint_reference_arrays"]


@dataclass(frozen=True)
class CompiledLaw:
    """Free-floating joint-space computed torque (``kind = "free_floating_computed_torque"``):
    ``q̈_cmd = q̈_d + K_d(q̇_d − q̇) + K_p(q_d − q)``, ``τ`` by the free-floating inverse
    dynamics, no base wrench.  The reference is piecewise quintic: ``times (K,)``,
    ``coef (max(K−1, 1), 6, n)``, held at ``first`` before and ``last`` after."""

    kind: str
    times: np.ndarray
    coef: np.ndarray
    first: np.ndarray
    last: np.ndarray
    kp: np.ndarray
    kd: np.ndarray

    def arrays(self) -> tuple:
        """The kernel's arguments ``(times, coef, first, last, kp, kd)``."""
        return self.times, self.coef, self.first, self.last, self.kp, self.kd


def joint_reference_arrays(traj, n: int, hold) -> tuple | None:
    """``(times, coef, first, last)`` of a joint reference the kernels evaluate: none (hold
    ``hold``), :class:`JointSetpoint` or :class:`JointWaypoints` with ``n`` joints; None for
    any other reference (sinusoids, user callables: the Python path)."""
    def c(a):
        return np.ascontiguousarray(a, dtype=float)
    if traj is None or type(traj) is JointSetpoint:
        q = np.asarray(hold if traj is None else traj.q, dtype=float).reshape(-1)
        if q.shape != (n,):
            return None
        return c([0.0]), np.zeros((1, 6, n)), c(q), c(q)
    if type(traj) is JointWaypoints and traj.n == n:
        coef = traj.coefficients if traj.times.size > 1 else np.zeros((1, 6, n))
        return c(traj.times), c(coef), c(traj.positions[0]), c(traj.positions[-1])
    return None
