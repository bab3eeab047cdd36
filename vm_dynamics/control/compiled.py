"""Control laws the simulation engine can evaluate in compiled code at every RK stage.

A controller whose law is a fixed formula over the O(n) recursions can describe it as a
:class:`CompiledLaw` (:meth:`vm_dynamics.control.Controller.compiled_law`).  ``vm.simulate``
given the ``inputs()`` of such a controller then runs the law inside the engine's compiled
step (:func:`vm_dynamics.sim.kernels.engine_rollout_law`, the law in
:mod:`vm_dynamics.control.laws`) instead of calling
:meth:`~vm_dynamics.control.Controller.compute` from Python at every stage; the inputs are the
same (the tests compare both paths).  Everything else keeps the Python path.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .laws import LawParams
from .references import JointSetpoint, JointSinusoid, JointWaypoints, PoseWaypoints

__all__ = ["CompiledLaw", "joint_reference_arrays", "constant_pose"]

MODES = {"free_floating": 0, "actuated_base": 1}
BASE_LAWS = {"exponential": 0, "pd": 1}


def _c(a, dtype=float) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=dtype)


@dataclass(frozen=True)
class CompiledLaw:
    """A law the engine evaluates in compiled code: its ``kind`` (``"computed_torque"``, see
    :mod:`.computed_torque`), its data ``law`` — the kernel's record
    (:class:`vm_dynamics.control.laws.LawParams`: the controller's kernel constants, options,
    joint reference, gains, vehicle pose reference) —, the force elements it compensates
    (``forces``: the engine's, or none) and the controller's ``model`` (the law runs on its
    constants, not on the plant's)."""

    kind: str
    law: LawParams
    forces: tuple = ()
    model: Any = None

    @property
    def consts(self):
        """The controller's kernel constants (``law.model``)."""
        return self.law.model

    def params(self) -> LawParams:
        """The kernel's record (:class:`vm_dynamics.control.laws.LawParams`)."""
        return self.law


def joint_reference_arrays(traj, n: int, hold) -> tuple | None:
    """``(kind, times, coef, first, last, osc)`` of a joint reference the kernels evaluate:
    none (hold ``hold``), :class:`JointSetpoint`, :class:`JointWaypoints` (kind 0) or
    :class:`JointSinusoid` (kind 1) with ``n`` joints; None for any other reference (user
    callables: the Python path)."""
    none = (_c([0.0]), np.zeros((1, 6, n)))
    osc0 = np.zeros((3, n))
    if traj is None or type(traj) is JointSetpoint:
        q = np.asarray(hold if traj is None else traj.q, dtype=float).reshape(-1)
        if q.shape != (n,):
            return None
        return (0, *none, _c(q), _c(q), osc0)
    if type(traj) is JointWaypoints and traj.n == n:
        coef = traj.coefficients if traj.times.size > 1 else np.zeros((1, 6, n))
        return (0, _c(traj.times), _c(coef), _c(traj.positions[0]), _c(traj.positions[-1]),
                osc0)
    if type(traj) is JointSinusoid and traj.n == n:
        return (1, *none, _c(traj.q0), _c(traj.q0),
                _c([traj.amplitude, traj.frequency, traj.phase]))
    return None


def constant_pose(traj, hold) -> np.ndarray | None:
    """The pose of a constant vehicle reference (none: ``hold``; a one-pose
    :class:`PoseWaypoints` or PoseSetpoint), or None if the reference moves."""
    if traj is None:
        return _c(hold)
    if isinstance(traj, PoseWaypoints) and traj.times.size == 1:
        return _c(traj.poses[0])
    return None
