"""A linear spring from a point of the system to a fixed point of the inertial frame.

The spring pulls the point ``x`` (a point fixed in a frame of the model: the vehicle's or a
link's) towards the inertial ``anchor`` with ``F = −k (x − anchor)`` (zero rest length), so it is
conservative with the potential energy ``U = ½ k |x − anchor|²`` (``F = −∂U/∂x``).  It acts on
its frame as the wrench ``[Rᵀ F; p × Rᵀ F]`` at the frame's origin, frame axes (``R`` the
frame's orientation, ``p`` the point in frame coordinates).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core.validation import as_vector
from ..dynamics.fast.kernels.algebra import cross
from ..dynamics.fast.kernels.jit import OPT, njit
from .base import ForceElement
from .points import body_point

__all__ = ["Spring", "SpringParams"]


class SpringParams(NamedTuple):
    """Compiled parameters, one row per spring: ``body`` index, the attachment ``point``
    (vehicle frame at the home configuration, k×3), the inertial ``anchor`` (k×3) and the
    ``stiffness`` (k)."""

    body: np.ndarray
    point: np.ndarray
    anchor: np.ndarray
    stiffness: np.ndarray


class Spring(ForceElement):
    """Spring of ``stiffness`` (N/m, ≥ 0) from ``point`` (frame coordinates, m) of ``frame`` to
    the inertial ``anchor`` (m)."""

    kind = "spring"
    conservative = True
    parameters = ("frame", "point", "anchor", "stiffness")

    def __init__(self, frame: str, point, anchor, stiffness: float):
        self.frame = str(frame)
        self.point = as_vector(point, 3, "spring point").copy()
        self.anchor = as_vector(anchor, 3, "spring anchor").copy()
        k = float(stiffness)
        if not (np.isfinite(k) and k >= 0):
            raise ValueError(f"spring stiffness: expected a finite number >= 0, got {stiffness!r}")
        self.stiffness = k

    @classmethod
    def from_config(cls, spec: dict, where: str) -> "Spring":
        """``{kind: spring, frame, point: [x, y, z], anchor: [x, y, z], stiffness}``."""
        try:
            frame, stiffness = spec["frame"], spec["stiffness"]
        except KeyError as exc:
            raise ValueError(f"{where}: missing key {exc}") from None
        if not isinstance(frame, str):
            raise ValueError(f"{where}.frame: expected a frame name, got {frame!r}")
        try:
            return cls(frame, spec.get("point", [0.0, 0.0, 0.0]),
                       spec.get("anchor", [0.0, 0.0, 0.0]), float(stiffness))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from None

    def key(self):
        return (self.frame, self.point.tobytes(), self.anchor.tobytes(), self.stiffness)

    def __repr__(self):
        return (f"Spring({self.frame!r}, point={self.point.tolist()}, "
                f"anchor={self.anchor.tolist()}, stiffness={self.stiffness:g})")

    def _pose(self, model, g, q):
        if self.frame not in model.frame_body:
            raise ValueError(f"spring: unknown frame {self.frame!r}; frames are "
                             f"{', '.join(model.frame_names)}")
        return g @ model.frame_pose(q, self.frame)

    def position(self, model, g, q) -> np.ndarray:
        """The attachment point in the inertial frame."""
        T = self._pose(model, g, q)
        return T[:3, :3] @ self.point + T[:3, 3]

    def wrenches(self, model, g, V, q):
        T = self._pose(model, g, q)
        F = -self.stiffness * (T[:3, :3] @ self.point + T[:3, 3] - self.anchor)
        f = T[:3, :3].T @ F
        return None, {self.frame: np.concatenate([f, np.cross(self.point, f)])}

    def vehicle_wrench(self, model, g, V, q):
        return None

    def potential_energy(self, model, g, q) -> float:
        d = self.position(model, g, q) - self.anchor
        return 0.5 * self.stiffness * float(d @ d)

    def compiled(self, model) -> SpringParams:
        self._pose(model, np.eye(4), model.neutral_configuration())     # checks the frame
        home = model.frame_home[self.frame]
        return SpringParams(np.array([model.frame_body[self.frame]], dtype=np.int64),
                            (home[:3, :3] @ self.point + home[:3, 3])[None].copy(),
                            self.anchor[None].copy(), np.array([self.stiffness]))


# ----------------------------------------------------------------------------- compiled
@njit(**OPT)
def _stretch(P, i, g, Rw, Pw):
    """The attachment point ``p`` of spring ``i`` in vehicle axes and its inertial offset from
    the anchor ``d = x − anchor``: ``(p0, p1, p2, d0, d1, d2)``."""
    p0, p1, p2 = body_point(Rw, Pw, P.body[i], P.point[i])
    a = P.anchor[i]
    d0 = g[0, 0] * p0 + g[0, 1] * p1 + g[0, 2] * p2 + g[0, 3] - a[0]
    d1 = g[1, 0] * p0 + g[1, 1] * p1 + g[1, 2] * p2 + g[1, 3] - a[1]
    d2 = g[2, 0] * p0 + g[2, 1] * p1 + g[2, 2] * p2 + g[2, 3] - a[2]
    return p0, p1, p2, d0, d1, d2


@njit(**OPT)
def spring_wrenches(P, g, Rw, Pw, ext):
    """Add every spring's wrench to ``ext[body]`` (vehicle frame, about its origin)."""
    for i in range(P.body.shape[0]):
        p0, p1, p2, d0, d1, d2 = _stretch(P, i, g, Rw, Pw)
        s = -P.stiffness[i]
        f0 = s * (g[0, 0] * d0 + g[1, 0] * d1 + g[2, 0] * d2)     # Rᵀ F
        f1 = s * (g[0, 1] * d0 + g[1, 1] * d1 + g[2, 1] * d2)
        f2 = s * (g[0, 2] * d0 + g[1, 2] * d1 + g[2, 2] * d2)
        x0, x1, x2 = cross(p0, p1, p2, f0, f1, f2)
        k = P.body[i]
        ext[k, 0] += f0
        ext[k, 1] += f1
        ext[k, 2] += f2
        ext[k, 3] += x0
        ext[k, 4] += x1
        ext[k, 5] += x2


@njit(**OPT)
def spring_potential(P, g, Rw, Pw):
    """``Σ ½ k |x − anchor|²`` over the springs."""
    U = 0.0
    for i in range(P.body.shape[0]):
        p0, p1, p2, d0, d1, d2 = _stretch(P, i, g, Rw, Pw)
        U += 0.5 * P.stiffness[i] * (d0 * d0 + d1 * d1 + d2 * d2)
    return U
