"""Convex primitive shapes and their signed distance functions (in the shape's own frame).

Every shape is convex, so its signed distance ``φ(p)`` (negative inside) is a convex function
and its gradient ``∇φ`` is the outward unit normal of the nearest surface point (the deepest
axis inside a box or cylinder).  Contact (:mod:`vm_dynamics.capture.contact`) needs only
``φ`` and ``∇φ``:

* ``Sphere(radius)``          ``φ = |p| − r``
* ``Box(size)``               full edge lengths ``[a, b, c]``, centred; ``φ`` of the box
* ``Cylinder(radius, length)`` axis z, centred
* ``Capsule(radius, length)``  axis z, centred: the segment ``z ∈ [−L/2, L/2]`` swept by a sphere
  (chaser fingers and links); only on the chaser side.

A chaser box against a target box or cylinder needs more than ``φ`` (several points:
:mod:`vm_dynamics.capture.collide_box`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.validation import as_positive, as_vector

__all__ = ["Shape", "Sphere", "Box", "Cylinder", "Capsule", "shape_from_config", "SHAPE_TYPES"]

_Z = np.array([0.0, 0.0, 1.0])


class Shape:
    """A convex primitive: :meth:`signed_distance` ``(φ, ∇φ)`` at a point in its frame."""

    kind = "shape"

    def signed_distance(self, p: np.ndarray) -> tuple[float, np.ndarray]:
        raise NotImplementedError

    def bounding_radius(self) -> float:
        """Radius of a sphere about the origin that contains the shape (broad phase)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Sphere(Shape):
    """Sphere of ``radius`` (m) about the frame origin."""

    radius: float
    kind = "sphere"

    def __post_init__(self):
        object.__setattr__(self, "radius", as_positive(self.radius, "sphere.radius"))

    def signed_distance(self, p):
        d = math.hypot(p[0], p[1], p[2])
        return d - self.radius, (p / d if d > 0 else _Z.copy())

    def bounding_radius(self):
        return self.radius


@dataclass(frozen=True)
class Box(Shape):
    """Box with edge lengths ``size = [a, b, c]`` (m) along x, y, z, centred on the origin."""

    size: tuple
    kind = "box"

    def __post_init__(self):
        s = as_vector(self.size, 3, "box.size")
        if not np.all(s > 0):
            raise ValueError(f"box.size: expected three positive lengths, got {s.tolist()}")
        object.__setattr__(self, "size", tuple(float(x) for x in s))
        object.__setattr__(self, "half", 0.5 * s)

    def signed_distance(self, p):
        q = np.abs(p) - self.half
        out = np.maximum(q, 0.0)
        if np.any(q > 0):
            d = math.hypot(out[0], out[1], out[2])
            return d, np.sign(p) * out / d
        k = int(np.argmax(q))
        n = np.zeros(3)
        n[k] = 1.0 if p[k] >= 0 else -1.0
        return float(q[k]), n

    def bounding_radius(self):
        return float(np.linalg.norm(self.half))


@dataclass(frozen=True)
class Cylinder(Shape):
    """Solid cylinder of ``radius`` and ``length`` (m), axis z, centred on the origin."""

    radius: float
    length: float
    kind = "cylinder"

    def __post_init__(self):
        object.__setattr__(self, "radius", as_positive(self.radius, "cylinder.radius"))
        object.__setattr__(self, "length", as_positive(self.length, "cylinder.length"))

    def signed_distance(self, p):
        rho = math.hypot(p[0], p[1])
        u = np.array([p[0] / rho, p[1] / rho, 0.0]) if rho > 0 else np.array([1.0, 0.0, 0.0])
        dr, dz = rho - self.radius, abs(p[2]) - 0.5 * self.length
        sz = 1.0 if p[2] >= 0 else -1.0
        if dr > 0 or dz > 0:
            a, b = max(dr, 0.0), max(dz, 0.0)
            d = math.hypot(a, b)
            return d, (a * u + b * sz * _Z) / d
        if dr >= dz:
            return dr, u
        return dz, sz * _Z

    def bounding_radius(self):
        return math.hypot(self.radius, 0.5 * self.length)


@dataclass(frozen=True)
class Capsule(Shape):
    """Capsule: the segment ``z ∈ [−length/2, length/2]`` swept by a sphere of ``radius``."""

    radius: float
    length: float
    kind = "capsule"

    def __post_init__(self):
        object.__setattr__(self, "radius", as_positive(self.radius, "capsule.radius"))
        object.__setattr__(self, "length", as_positive(self.length, "capsule.length"))

    def signed_distance(self, p):
        h = 0.5 * self.length
        c = np.array([0.0, 0.0, min(max(p[2], -h), h)])
        d = p - c
        r = math.hypot(d[0], d[1], d[2])
        return r - self.radius, (d / r if r > 0 else np.array([1.0, 0.0, 0.0]))

    def bounding_radius(self):
        return self.radius + 0.5 * self.length


SHAPE_TYPES = {"sphere": Sphere, "box": Box, "cylinder": Cylinder, "capsule": Capsule}


def shape_from_config(cfg, what: str = "shape", allowed=("sphere", "box", "cylinder", "capsule")
                      ) -> Shape:
    """A shape from ``{type: sphere, radius: r}``, ``{type: box, size: [a, b, c]}``,
    ``{type: cylinder, radius: r, length: l}`` or ``{type: capsule, radius: r, length: l}``."""
    if not isinstance(cfg, dict) or "type" not in cfg:
        raise ValueError(f"{what}: expected a mapping with a type ({', '.join(allowed)})")
    kind = str(cfg["type"]).lower()
    if kind not in allowed:
        raise ValueError(f"{what}.type: {cfg['type']!r} is not one of {', '.join(allowed)}")
    keys = {"sphere": ("radius",), "box": ("size",), "cylinder": ("radius", "length"),
            "capsule": ("radius", "length")}[kind]
    unknown = set(cfg) - {"type", *keys}
    missing = [k for k in keys if k not in cfg]
    if unknown or missing:
        raise ValueError(f"{what}: a {kind} takes {', '.join(keys)}"
                         + (f"; missing {', '.join(missing)}" if missing else "")
                         + (f"; unknown {', '.join(sorted(unknown))}" if unknown else ""))
    try:
        return SHAPE_TYPES[kind](*(cfg[k] for k in keys))
    except ValueError as e:         # "box.size: ..." -> "<what>.size: ..." (the YAML path)
        msg = str(e)
        if msg.startswith(f"{kind}."):
            msg = f"{what}.{msg[len(kind) + 1:]}"
        raise ValueError(msg) from None
