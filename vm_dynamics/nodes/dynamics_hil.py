"""The hardware-in-the-loop inputs of :class:`~vm_dynamics.nodes.dynamics_core.DynamicsCore`:
a real arm's joint states (``joint_source: measured``, :mod:`.joint_source`) and a
force/torque sensor's wrench (``wrench_source: measured``, :mod:`.wrench_source`).

A base class of the core: it reads the core's ``measured``, ``measured_wrench``, ``sim``,
``energy_guard``, ``inputs``, ``log``, ``t``, ``dt``, ``paused`` and ``run``.
"""
from __future__ import annotations

import math
import time
from typing import Any

__all__ = ["HilInputs"]


class HilInputs:
    """The measured joint states and the measured wrench entering the core (module docstring)."""

    # ---------------------------------------------------------------- measured joints (HIL)
    def apply_measured_joint_state(self, msg: Any, wall: float | None = None) -> bool:
        """A real arm's ``sensor_msgs/JointState`` (``joint_source: measured``); ``wall`` is
        its arrival time (system clock, s).  False if rejected or out of order
        (:meth:`MeasuredJointInput.receive`)."""
        if self.measured is None:
            return False

        def restart():      # after a gap: the joints jump to the new sample
            self.sim.set_joints()
            self.energy_guard.rebaseline()
        wall = time.time() if wall is None else float(wall)
        return self.measured.receive(msg, wall, self.t, self.dt, self.log, restart)

    def measured_steps_available(self) -> int:
        """Steps the simulation can take before it would pass the newest measured sample."""
        if self.measured is None:
            return 1 << 30
        ahead = self.measured.motion.t_latest - self.t
        return max(0, int(math.floor(ahead / self.dt + 1e-9)))

    def advance_measured(self) -> int:
        """Run up to the newest measured sample; returns the steps taken."""
        steps = self.measured_steps_available()
        return self.run(steps) if steps and not self.paused else 0

    def check_measured_watchdog(self, wall_now: float) -> None:
        """Warn (once per silence) when the measured joint states stopped: the vehicle holds."""
        if self.measured is not None:
            self.measured.check_watchdog(wall_now, self.t, self.log)

    # ---------------------------------------------------------------- measured wrench (HIL)
    def apply_measured_wrench(self, msg: Any, wall: float | None = None) -> bool:
        """A force/torque sensor's ``geometry_msgs/WrenchStamped`` (``wrench_source:
        measured``), arriving at ``wall`` (system clock, s): held on the chaser at its frame
        from now on; False if rejected or out of order (:class:`MeasuredWrenchInput`)."""
        mw = self.measured_wrench
        if mw is None:
            return False
        wall = time.time() if wall is None else float(wall)
        if not mw.receive(msg, wall, self.t, self.log):
            return False
        self.inputs.frame_wrenches = mw.frame_wrenches()
        self.inputs.update()
        return True

    def check_measured_wrench_watchdog(self, wall_now: float) -> None:
        """Zero the measured wrench (a warning, once per silence) when the sensor stopped."""
        mw = self.measured_wrench
        if mw is not None and mw.check_watchdog(wall_now, self.t, self.log):
            self.inputs.frame_wrenches = mw.frame_wrenches()
            self.inputs.update()
