"""The dynamics node's energy guard: the energy balance of the running simulation, checked
at intervals, with a snapshot to roll back to when it fails.

The balance is the residual ``r = E(t) − E(0) − W(t)`` (``E`` kinetic + gravitational energy,
``W`` the work of all applied efforts and wrenches, the engine's account); it fails -- the
simulation has diverged -- when it exceeds ``divergence_threshold`` times the energy scale
``K(0) + K(t) + |U(t) − U(0)| + ∫|P| dt`` (:func:`vm_dynamics.core.divergence.energy_balance_violated`,
the test vm-sim applies too), or when the energy is not computable.  With measured or
prescribed joints (``balance_checked`` False) the work of the motion source is unknown and
only a finite state is required.  Part of :class:`~vm_dynamics.nodes.dynamics_core.DynamicsCore`.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.divergence import energy_balance_violated
from .event_log import EventLog

__all__ = ["EnergyGuard"]


class EnergyGuard:
    """Energy and momentum references, the last checked state and the divergence state of
    the engine ``sim`` (see the module docstring)."""

    def __init__(self, sim, model, log: EventLog, threshold: float, balance_checked: bool):
        self.sim, self.model, self.log = sim, model, log
        self.threshold, self.balance_checked = float(threshold), balance_checked
        # set by reset(), once the engine holds the initial state
        self.diverged, self.error, self.residual = False, "", 0.0
        self.E0 = self.K0 = self.U0 = 0.0
        self.momentum0 = self.snapshot = None
        self.checked_steps = 0

    def reset(self) -> None:
        """References at the current state (after the engine's reset); not diverged."""
        self.diverged, self.error = False, ""
        self.E0, self.K0, self.U0 = self.energy()
        self.momentum0 = self.momentum()
        self.residual = 0.0
        self.snapshot = self.sim.snapshot()
        self.checked_steps = 0

    def rebaseline(self) -> None:
        """References restart at the current state (after the joints were replaced by a
        measured sample: the jump does no work the engine could account for)."""
        E, K, U = self.energy()
        self.E0, self.K0, self.U0 = E - self.sim.work, K, U
        self.momentum0 = self.momentum()
        self.residual = 0.0
        self.checked_steps = self.sim.steps
        self.snapshot = self.sim.snapshot()

    def energy(self) -> tuple[float, float, float]:
        """``(E, K, U)`` of the current state."""
        K, U = self.sim.energy()
        return K + U, K, U

    def momentum(self) -> np.ndarray:
        _, g, V, q, qd = self.sim.arrays()
        return self.model.momentum(g, V, q, qd)

    def diverge(self, reason: str, t_bad: float | None = None) -> None:
        """Roll back to the last checked state and pause, with an error naming ``reason``."""
        t_bad = self.sim.t if t_bad is None else t_bad
        self.sim.restore(self.snapshot)
        self.diverged = True
        self.error = (f"simulation diverged at t={t_bad:.6g} s: {reason}; paused and rolled "
                      f"back to t={self.sim.t:.6g} s (call ~/reset)")
        self.log.emit("ERROR", "diverged", self.error, throttle=False)

    def check(self) -> bool:
        """Energy-balance check of the current state; on failure: roll back and pause."""
        if self.diverged:
            return False
        if self.checked_steps == self.sim.steps:
            return True
        try:
            E, K, U = self.energy()
        except (ArithmeticError, ValueError) as exc:      # overflow in the energy itself
            self.diverge(f"energy not computable ({type(exc).__name__}: {exc})")
            return False
        self.residual = E - self.E0 - self.sim.work
        scale = self.K0 + K + abs(U - self.U0) + self.sim.abs_work + 1e-12 * (1.0 + abs(self.E0))
        if not self.balance_checked:
            # the joints follow a motion from outside, whose work the engine does not know:
            # no balance to check, only a finite state
            self.residual, scale = 0.0, 1.0
        if not math.isfinite(E) or energy_balance_violated(self.residual, scale, self.threshold):
            self.diverge(f"energy balance violated (E - E0 - W = {self.residual:.4g} J, "
                         f"energy scale {scale:.4g} J)")
            return False
        self.checked_steps = self.sim.steps
        self.snapshot = self.sim.snapshot()
        return True
