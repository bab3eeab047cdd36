"""The orbit of a scenario or a node: the central body (``two_body`` section), the reference
orbit and its LVLH frame (``orbit`` section) and the frame of the outputs (``world_frame``),
read the same way by ``vm-sim`` (:func:`vm_dynamics.config.scenario.load_scenario`) and the
dynamics node.

There is a reference orbit when the ``orbit`` section gives its size (``radius``, ``altitude``
or ``semi_major_axis``); it needs the central body (``two_body.mu`` > 0) and an SE(3) vehicle.
``orbit.initial_frame`` (default ``lvlh``) says the initial base pose and twist are relative to
the LVLH frame at t = 0; ``orbit.reference_frame`` (default ``lvlh``) that the vehicle's pose
reference of an actuated-base controller is; ``world_frame`` (``inertial`` or ``lvlh``) is the
frame of /odom, TF, recordings, plots and the viewer (how they are formed:
:mod:`vm_dynamics.forces.orbit`).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from ..forces.orbit import WORLD_FRAMES, ReferenceOrbit
from ..forces.two_body import TwoBody

__all__ = ["OrbitSetup", "orbit_setup"]

_SIZE = ("radius", "altitude", "semi_major_axis")
_FRAMES = ("lvlh", "inertial")


class OrbitSetup(NamedTuple):
    """``orbit``: the :class:`ReferenceOrbit` or None; the frames (``world_frame``,
    ``initial_frame``, ``reference_frame``)."""

    orbit: ReferenceOrbit | None
    world_frame: str
    initial_frame: str
    reference_frame: str

    def initial_pose(self, g, V):
        """The initial base pose and twist inertially: ``(g, V)`` as given, or mapped from the
        LVLH frame at t = 0 when there is an orbit and ``initial_frame`` is ``lvlh``."""
        if self.orbit is not None and self.initial_frame == "lvlh":
            return self.orbit.from_lvlh(0.0, g, V)
        return g, V


def _frame(value, name, options):
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name}: unknown {value!r}; choose one of {', '.join(options)}")
    return value


def orbit_setup(forces, orbit: Mapping | None, world_frame="inertial",
                base_type: str = "SE3") -> OrbitSetup:
    """Check and build the orbit of the ``orbit`` section around the central body of the
    two_body element among ``forces`` (the force elements of
    :func:`vm_dynamics.config.forces.model_forces`); every error names its parameter."""
    world = _frame(world_frame, "world_frame", WORLD_FRAMES)
    central = next((f for f in forces or () if isinstance(f, TwoBody)), None)
    section = dict(orbit or {})
    initial = _frame(section.pop("initial_frame", "lvlh"), "orbit.initial_frame", _FRAMES)
    reference = _frame(section.pop("reference_frame", "lvlh"), "orbit.reference_frame", _FRAMES)
    if not any(section.get(k) not in (None, 0, 0.0) for k in _SIZE):
        if world == "lvlh":
            raise ValueError("world_frame: lvlh needs a reference orbit (an orbit section with "
                             "radius, altitude or semi_major_axis, and two_body.mu)")
        return OrbitSetup(None, world, initial, reference)
    if central is None:
        raise ValueError("orbit: a reference orbit needs a central body: set two_body.mu")
    if base_type != "SE3":
        raise ValueError(f"orbit: a reference orbit needs base_type SE3, got {base_type}")
    return OrbitSetup(ReferenceOrbit.from_config(section, central.mu, "orbit"),
                      world, initial, reference)
