"""The compiled dispatcher over the force-element kinds (numba has no polymorphic lists: one
call per registered kind, each a loop over its rows of :class:`~.registry.Forces`, zero rows
when the kind is absent).  A new kind adds its call here."""
from __future__ import annotations

from ..dynamics.fast.kernels.jit import OPT, njit
from .hydrodynamics import link_buoyancy_wrenches, vehicle_hydrodynamics_wrenches
from .spring import spring_potential, spring_wrenches
from .two_body import two_body_potential, two_body_wrenches

__all__ = ["add_wrenches", "potential"]


@njit(inline="always", **OPT)
def add_wrenches(F, axes, g, V, Rw, Pw, ext, cons, w6):
    """Add the wrenches of the elements (vehicle frame, about its origin, per body) at the
    vehicle pose ``g``, velocity ``V`` and body poses ``Rw, Pw``: those of the conservative
    kinds to ``cons`` (whose power is not work: their potential is in :func:`potential`), the
    others to ``ext``; ``w6`` is scratch."""
    vehicle_hydrodynamics_wrenches(F.vehicle_hydrodynamics, axes, g, V, ext, w6)
    link_buoyancy_wrenches(F.link_buoyancy, g, Rw, Pw, ext)
    spring_wrenches(F.spring, g, Rw, Pw, cons)
    two_body_wrenches(F.two_body, g, Rw, Pw, cons)


@njit(**OPT)
def potential(F, g, Rw, Pw):
    """Potential energy of the conservative elements at the vehicle pose ``g`` and body poses
    ``Rw, Pw``."""
    return spring_potential(F.spring, g, Rw, Pw) + two_body_potential(F.two_body, g, Rw, Pw)
