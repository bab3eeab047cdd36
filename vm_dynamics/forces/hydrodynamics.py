"""Hydrodynamic force elements of an underwater vehicle (Fossen's model, paper 004 §3.3), from the
parameters of :class:`vm_dynamics.model.hydrodynamics.Hydrodynamics` (whose added mass is a model
property, :meth:`~vm_dynamics.Model.with_added_vehicle_inertia`):

* :class:`VehicleHydrodynamics` — damping ``−(D_lin + D_quad|ν|)ν`` with ``ν = V − [Rᵀc; 0]``
  for a current ``c``, and the buoyancy ``B Rᵀ up`` at the centre of buoyancy: a vehicle wrench
  ``f₀`` (94);
* :class:`LinkBuoyancy` — the buoyancy of one arm link, a force along ``up`` at its centre of
  buoyancy: a frame wrench (90)–(91).

Buoyancy is counted as applied work (not as potential energy), as the engine's work account has
always done, so these elements are not :attr:`~.base.ForceElement.conservative`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..dynamics.fast.kernels.algebra import cross
from ..dynamics.fast.kernels.jit import OPT, njit
from .base import ForceElement
from .points import body_point

__all__ = ["VehicleHydrodynamics", "LinkBuoyancy", "VehicleHydrodynamicsParams",
           "LinkBuoyancyParams", "hydrodynamics_elements", "up_direction"]


def up_direction(gravity) -> np.ndarray:
    """The unit vector against gravity (zero without gravity)."""
    n = np.linalg.norm(gravity)
    return -np.asarray(gravity, dtype=float) / n if n > 0 else np.zeros(3)


class VehicleHydrodynamicsParams(NamedTuple):
    """Compiled parameters, one row per element: diagonal damping ``linear``, ``quadratic``
    (k×6), ``buoyancy`` force (k), centre of buoyancy ``cob`` and water ``current`` (k×3,
    vehicle frame / inertial frame), ``up`` (k×3, inertial)."""

    linear: np.ndarray
    quadratic: np.ndarray
    buoyancy: np.ndarray
    cob: np.ndarray
    current: np.ndarray
    up: np.ndarray


class LinkBuoyancyParams(NamedTuple):
    """Compiled parameters, one row per link: ``body`` index, centre of buoyancy ``point``
    (vehicle frame at the home configuration, k×3), ``force`` (k), ``up`` (k×3, inertial)."""

    body: np.ndarray
    point: np.ndarray
    force: np.ndarray
    up: np.ndarray


class VehicleHydrodynamics(ForceElement):
    """Damping and buoyancy of the vehicle (see the module docstring)."""

    kind = "vehicle_hydrodynamics"
    acts_on_frames = False

    def __init__(self, hydrodynamics):
        self.params = hydrodynamics

    def key(self):
        return (id(self.params),)

    def wrenches(self, model, g, V, q):
        return self.vehicle_wrench(model, g, V, q), {}

    def vehicle_wrench(self, model, g, V, q):
        grp = model.group
        return grp.project(self.params.vehicle_wrench(g, grp.embed(V), model.gravity))

    def compiled(self, model) -> VehicleHydrodynamicsParams:
        h = self.params
        return VehicleHydrodynamicsParams(
            np.array([h.linear_damping], dtype=float), np.array([h.quadratic_damping], dtype=float),
            np.array([h.buoyancy_force], dtype=float),
            np.array([h.center_of_buoyancy], dtype=float), np.array([h.current], dtype=float),
            up_direction(model.gravity)[None].copy())


class LinkBuoyancy(ForceElement):
    """The buoyancy ``force`` (N, along ``up``) of ``link`` at ``cob`` (link frame)."""

    kind = "link_buoyancy"

    def __init__(self, link: str, force: float, cob):
        self.link, self.force = str(link), float(force)
        self.cob = np.asarray(cob, dtype=float)

    def key(self):
        return (self.link, self.force, self.cob.tobytes())

    def _check(self, model):
        if self.link not in model.frame_body:
            raise ValueError(f"hydrodynamics: arm_links: unknown link {self.link!r}; links are "
                             f"{', '.join(model.frame_names)}")

    def wrenches(self, model, g, V, q):
        self._check(model)
        up = up_direction(model.gravity)
        Rl = g[:3, :3] @ model.frame_pose(q, self.link)[:3, :3]     # O(n) kinematics
        f = self.force * (Rl.T @ up)
        return None, {self.link: np.concatenate([f, np.cross(self.cob, f)])}

    def vehicle_wrench(self, model, g, V, q):
        return None

    def compiled(self, model) -> LinkBuoyancyParams:
        self._check(model)
        home = model.frame_home[self.link]
        return LinkBuoyancyParams(np.array([model.frame_body[self.link]], dtype=np.int64),
                                  (home[:3, :3] @ self.cob + home[:3, 3])[None].copy(),
                                  np.array([self.force]), up_direction(model.gravity)[None].copy())


def hydrodynamics_elements(h) -> list:
    """The elements of a :class:`~vm_dynamics.model.hydrodynamics.Hydrodynamics`: the vehicle's
    damping and buoyancy, then the buoyancy of each arm link."""
    return [VehicleHydrodynamics(h)] + [LinkBuoyancy(link, force, cob)
                                        for link, (force, cob) in h.link_buoyancy.items()]


# ----------------------------------------------------------------------------- compiled
@njit(**OPT)
def _up_local(R, up):
    """``Rᵀ up``: the up direction in vehicle axes."""
    return (R[0, 0] * up[0] + R[1, 0] * up[1] + R[2, 0] * up[2],
            R[0, 1] * up[0] + R[1, 1] * up[1] + R[2, 1] * up[2],
            R[0, 2] * up[0] + R[1, 2] * up[1] + R[2, 2] * up[2])


@njit(**OPT)
def vehicle_hydrodynamics_wrenches(P, axes, R, V, ext, w6):
    """Add the damping and buoyancy wrench of every row of ``P`` to ``ext[0]`` (vehicle frame,
    about its origin); ``R`` is the vehicle pose, ``w6`` scratch."""
    for e in range(P.buoyancy.shape[0]):
        lin, quad, cob, cur = P.linear[e], P.quadratic[e], P.cob[e], P.current[e]
        u0, u1, u2 = _up_local(R, P.up[e])
        for r in range(6):
            w6[r] = 0.0
        for i in range(axes.shape[0]):
            w6[axes[i]] = V[i]
        for r in range(3):
            w6[r] -= R[0, r] * cur[0] + R[1, r] * cur[1] + R[2, r] * cur[2]
        for r in range(6):
            ext[0, r] -= (lin[r] + quad[r] * abs(w6[r])) * w6[r]
        buoy = P.buoyancy[e]
        f0, f1, f2 = buoy * u0, buoy * u1, buoy * u2
        x0, x1, x2 = cross(cob[0], cob[1], cob[2], f0, f1, f2)
        ext[0, 0] += f0
        ext[0, 1] += f1
        ext[0, 2] += f2
        ext[0, 3] += x0
        ext[0, 4] += x1
        ext[0, 5] += x2


@njit(**OPT)
def link_buoyancy_wrenches(P, R, Rw, Pw, ext):
    """Add the buoyancy of every row of ``P`` to ``ext[body]`` (vehicle frame, about its
    origin); ``Rw, Pw`` the bodies' poses in the vehicle frame."""
    for i in range(P.body.shape[0]):
        u0, u1, u2 = _up_local(R, P.up[i])
        k = P.body[i]
        p0, p1, p2 = body_point(Rw, Pw, k, P.point[i])
        F = P.force[i]
        x0, x1, x2 = cross(p0, p1, p2, F * u0, F * u1, F * u2)
        ext[k, 0] += F * u0
        ext[k, 1] += F * u1
        ext[k, 2] += F * u2
        ext[k, 3] += x0
        ext[k, 4] += x1
        ext[k, 5] += x2
