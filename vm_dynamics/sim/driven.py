"""Kinematically driven joints of the simulation engine (``Simulator(driven_joints=[...])``).

A driven joint moves at the velocity it is given: during a step its acceleration is zero,
whatever effort that takes, while the vehicle and the other joints follow the hybrid dynamics
(:mod:`vm_dynamics.dynamics.fast.kernels.hybrid`, Featherstone 2008 §9.2) in the same RKMK
step as an ordinary one: the compiled stage solves it in place of the articulated-body
algorithm (``StepSpec.driven``) and writes the realising efforts into its copy of the efforts,
so the work account integrates their power ``τ_p·q̇_p`` with the other inputs'.  Effort inputs
of driven joints are ignored.

A new velocity is set by :meth:`DrivenJoints.set_driven_velocity`, an impulsive jump at the
current configuration with no impulse on the vehicle or the free joints
(:func:`~vm_dynamics.dynamics.fast.kernels.hybrid.driven_impulse`): the total momentum is
unchanged, and the jump of kinetic energy ``ΔK`` is the work of the impulse, added to the work
account so that the energy balance ``E − E₀ − W`` stays closed.  A position command ``q*`` for
the next period ``T`` is the velocity ``(q* − q)/T`` (:meth:`DrivenJoints.drive_to`): the joint
then reaches ``q*`` at the end of the period exactly (up to rounding), since it moves at
constant velocity.

Supported: the compiled stages (backend ``numba`` or ``python``) of a fixed-step method, force
elements, held or per-stage inputs, :meth:`Simulator.run`; not: the LP reference or a user's
forward dynamics, adaptive methods, prescribed motion, mimic joints (``ValueError`` naming
the reason).
"""
from __future__ import annotations

import numpy as np

from ..core.validation import as_positive

__all__ = ["driven_joint_mask", "DrivenJoints"]


def driven_joint_mask(sim, joints) -> np.ndarray:
    """The mask of the driven ``joints`` (names or indices) of the simulator ``sim`` being
    built: empty for None (no driven joints); ``ValueError`` naming what the engine cannot
    combine with driven joints."""
    if joints is None:
        return np.zeros(0, dtype=np.bool_)
    from ..dynamics.fast import driven_mask
    if isinstance(joints, (str, int, np.integer)):
        joints = [joints]
    mask = driven_mask(sim.model, list(joints))
    reason = ("backend 'lp' (the LP reference stages)" if sim.backend == "lp" else
              "a user forward_dynamics (Python stages)" if sim.python_stages else
              f"the adaptive method {sim.method!r}" if sim.tab.adaptive else
              "prescribed motion" if sim.prescribed is not None else
              f"mimic joints (model {sim.model.name!r})" if sim.tree.active else None)
    if reason is not None:
        raise ValueError(f"driven_joints: not supported with {reason}; use a fixed-step method "
                         "(rkmk4, lie_euler) with backend 'auto' or 'numba'")
    return mask


class DrivenJoints:
    """The part of :class:`~vm_dynamics.sim.engine.Simulator` about driven joints (a base
    class of it: the methods act on the simulator's state)."""

    @property
    def driven_joints(self) -> tuple:
        """Indices (model order) of the driven joints, in the order they were given."""
        return self._driven_order

    def _driven_setup(self, joints) -> None:
        self._driven = driven_joint_mask(self, joints)
        if joints is not None and isinstance(joints, (str, int, np.integer)):
            joints = [joints]
        names = list(self.model.joint_names)
        self._driven_order = tuple(names.index(j) if isinstance(j, str) else int(j)
                                   for j in (joints or ()))

    def driven_inputs(self, k):
        """The kernel inputs ``k`` of a step with driven joints: the efforts copied (the stage
        writes the driven joints' realising efforts into them)."""
        return k if self._driven.shape[0] == 0 else k._replace(tau=k.tau.copy())

    def _require_driven(self, what):
        self._require_state()
        if self._driven.shape[0] == 0:
            raise ValueError(f"{what}: the simulator has no driven joints (Simulator("
                             "driven_joints=[...]))")

    def set_driven_velocity(self, qd) -> None:
        """Set the driven joints' velocities to ``qd`` (one value per driven joint, in the order
        of :attr:`driven_joints`) now, by an impulsive jump at constant configuration: the
        vehicle's twist and the free joints' velocities jump so that the total momentum is
        unchanged; the kinetic energy's jump goes into the work account."""
        from ..dynamics.fast.kernels.hybrid import driven_impulse
        self._require_driven("set_driven_velocity")
        order = self._driven_order
        names = self.model.joint_names
        try:
            v = np.array(qd, dtype=float).reshape(-1) if np.ndim(qd) <= 1 else None
        except (TypeError, ValueError):
            v = None
        if v is None or v.shape != (len(order),):
            raise ValueError(f"set_driven_velocity: expected {len(order)} values (joints "
                             f"{', '.join(names[j] for j in order)}), got {qd!r}")
        for i, j in enumerate(order):
            if not np.isfinite(v[i]):
                raise ValueError(f"set_driven_velocity: velocity of joint {names[j]!r} is "
                                 f"{float(v[i])}, expected a finite number")
        d = np.zeros(self.model.n)
        d[list(order)] = v - self._qd[list(order)]
        if not np.any(d):
            return
        K0, _ = self.energy()
        b, n = self.model.b, self.model.n
        jump, impulse = np.empty(b + n), np.empty(n)         # (the state's own: no validation)
        st = driven_impulse(self.stages.C, self._q, d, self._driven, jump, impulse)
        if st:
            self.fail(st, " (set_driven_velocity)")
        V, qd_new = self._V + jump[:b], self._qd + jump[b:]
        qd_new[list(order)] = v                     # exactly the velocities asked for
        self._V, self._qd = V, qd_new
        self._m = self.stages.momentum_variable(self.spec, self._g, V, self._q, qd_new)
        self._xrec = None
        dK = self.energy()[0] - K0
        self._W = self._W + np.array([dK, abs(dK)])

    def drive_to(self, q_target, duration: float) -> np.ndarray:
        """Set the driven joints' velocities to ``(q_target − q)/duration`` (one target per
        driven joint, order of :attr:`driven_joints`), so that they reach ``q_target`` after
        ``duration`` seconds of steps; returns the velocities set."""
        self._require_driven("drive_to")
        duration = as_positive(duration, "duration")
        order = list(self._driven_order)
        target = np.asarray(q_target, dtype=float)
        if target.shape != (len(order),):
            raise ValueError(f"drive_to: expected {len(order)} targets, got shape {target.shape}")
        v = (target - self._q[order]) / duration
        self.set_driven_velocity(v)
        return v

    def driven_effort(self, tau=None, base_wrench=None, base_wrench_inertial=None,
                      frame_wrenches=None) -> np.ndarray:
        """Efforts of the driven joints (order of :attr:`driven_joints`) at the current state,
        with the inputs given (as :meth:`step`'s; default zero) and the force elements: the
        efforts that keep their acceleration zero, as a step applies them."""
        self._require_driven("driven_effort")
        inputs = self.held_inputs(tau, base_wrench, base_wrench_inertial, frame_wrenches)
        k = self.kernel_inputs(inputs)
        st = self.stages.stage(self.spec, self._g, np.zeros(self.model.b), self._m, self._q,
                               self._qd, np.zeros(self.model.n), inputs._replace(kernel=k))[0]
        if st:
            self.fail(st, " (driven_effort)")
        return k.tau[list(self._driven_order)].copy()
