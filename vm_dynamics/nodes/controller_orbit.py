"""The controller node in orbit: the measured state and the vehicle's pose reference relative
to the reference orbit's LVLH frame (``docs/orbit.md``).

The controller node reads the same ``two_body``, ``orbit`` and ``world_frame`` parameters as the
dynamics node and ``vm-sim`` (:func:`vm_dynamics.config.orbit_setup.orbit_setup`; the scenario
file is both nodes' parameter file).  With a reference orbit:

* ``world_frame: lvlh``: ``/odom`` arrives relative to the LVLH frame (frame ``lvlh``); the
  state is mapped back to inertial at its own stamp (:meth:`ReferenceOrbit.from_lvlh`) and the
  law is computed on the inertial state, as in ``vm-sim``.  ``world_frame: inertial``: ``/odom``
  is inertial (``odom_frame``) and used as it is.
* ``orbit.reference_frame: lvlh`` (station keeping): the vehicle's pose reference
  (``reference.base``, or the first state's pose held) is relative to the LVLH frame and mapped
  by :func:`~vm_dynamics.forces.orbit.station_keeping_reference`, the function ``vm-sim`` uses.
  A ``~/base_pose`` target may be given in the frame ``lvlh``.
* The law compensates the ``two_body`` force element with the other force elements
  (``Robot.forces``, as the dynamics node applies them).

Reference times are then the simulation's (``reference_start: zero``): the LVLH frame moves
with that time, so ``first_state`` is refused.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..config.orbit_setup import orbit_setup
from ..config.params import unflatten
from ..forces.orbit import station_keeping_reference
from .robot import Robot

__all__ = ["ControllerOrbit", "LVLH_FRAME"]

#: The frame of /odom and of ``~/base_pose`` targets relative to the LVLH frame.
LVLH_FRAME = "lvlh"


class ControllerOrbit:
    """The controller node's orbit (module docstring); ``orbit`` is None without one, and
    every method is then the identity."""

    def __init__(self, robot: Robot, p: Mapping[str, Any]):
        setup = orbit_setup(robot.forces, unflatten(p, "orbit"), p["world_frame"],
                            p["base_type"])
        self.orbit = setup.orbit
        self.relative = self.orbit is not None and setup.world_frame == "lvlh"
        self.lvlh_reference = self.orbit is not None and setup.reference_frame == "lvlh"
        #: the frame ``/odom`` must be given in
        self.odom_frame = LVLH_FRAME if self.relative else robot.odom_frame
        if self.orbit is not None and p["reference_start"] != "zero":
            raise ValueError(f"reference_start: {p['reference_start']!r} with a reference "
                             f"orbit; the LVLH frame moves with the simulation's time, so "
                             f"reference times must be it (reference_start: zero)")

    def inertial(self, t: float, g, V6):
        """``(g, V6)``: a measured pose and 6-vector body twist at time ``t`` in the inertial
        frame (mapped from LVLH with ``world_frame: lvlh``)."""
        if not self.relative:
            return g, V6
        return self.orbit.from_lvlh(t, g, V6)

    def scenario_reference(self, reference):
        """The scenario's reference with a ``reference.base`` given in LVLH mapped to inertial
        (station keeping); without one it is mapped at :meth:`bind`."""
        if self.lvlh_reference and reference.base is not None:
            return station_keeping_reference(self.orbit, reference, 0.0, None)
        return reference

    def bind(self, reference, t: float, g):
        """The reference the controller starts with, given the first state (inertial pose
        ``g`` at time ``t``): without a vehicle pose reference, that pose held in LVLH."""
        if self.lvlh_reference and reference.base is None:
            return station_keeping_reference(self.orbit, reference, t, g)
        return reference

    def frames(self, odom_frame: str) -> tuple[str, ...]:
        """The frames a ``~/base_pose`` target may be given in."""
        return (odom_frame, "world") + ((LVLH_FRAME,) if self.orbit is not None else ())

    def base_motion(self, frame: str, make, now: float, desired):
        """A vehicle pose trajectory to a target given in ``frame``: ``make(start)`` builds it
        from the start pose ``start`` in that frame; ``desired`` is the current desired
        inertial pose.  A target in ``lvlh`` gives an LVLH trajectory, mapped to inertial."""
        if frame != LVLH_FRAME:
            return make(np.asarray(desired, dtype=float))
        start = self.orbit.to_lvlh(now, desired)[0]
        return self.orbit.pose_reference(make(start))
