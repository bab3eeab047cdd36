"""Compliant contact between a chaser primitive and the target's shape.

**Geometry.**  A chaser primitive is a :class:`~vm_dynamics.capture.shapes.Sphere`,
:class:`~vm_dynamics.capture.shapes.Capsule` or :class:`~vm_dynamics.capture.shapes.Box` fixed at
``pose`` in a named chaser frame.  For a sphere (centre ``c``, radius ``r``) against the target
shape with signed distance ``φ_T``: penetration ``δ = r − φ_T(c)``, normal ``n = ∇φ_T(c)``
(pointing out of the target, towards the chaser), contact point ``p = c − ½(r + φ_T(c)) n`` (midway
between the two surfaces).  A capsule is the sphere at the point of its axis segment where
``φ_T`` is smallest (``φ_T`` is convex along the segment: a golden-section search to 1e-12 of
the length).  A chaser box against a target sphere: the sphere against the box (roles
swapped, ``n`` reversed); against a target box or cylinder: a manifold of several points
(:mod:`.collide_box`: clipping of the separating axis' faces, resp. corners, edges and rim
points), each point a contact of its own with the forces below.

Because ``p − c ∥ n``, the penetration rate is ``δ̇ = −n·v_rel`` with ``v_rel = v_C(p) − v_T(p)``
the velocity of the chaser's material point at ``p`` relative to the target's (docs/capture.md).

**Normal force** (Hunt & Crossley 1975, ASME J. Appl. Mech. 42:440):

    f_n = max(0, k δⁿ (1 + χ δ̇ / v₀))                                          (C1)

with ``k`` in N/mⁿ, exponent ``n`` (3/2 for Hertzian sphere contact), ``v₀`` the penetration
rate at the onset of this contact (floored at ``v_min``) and ``χ`` from the coefficient of
restitution ``e`` by one of

* ``exact``                ``χ(1 + e) = ln((1 + χ)/(1 − χe))``  (the default)
* ``hunt_crossley``        ``χ = 3(1 − e)/2``        (Hunt & Crossley 1975)
* ``lankarani_nikravesh``  ``χ = 3(1 − e²)/4``       (Lankarani & Nikravesh 1990, J. Mech. Des. 112:369)
* ``flores``               ``χ = 8(1 − e)/(5e)``     (Flores et al. 2011, Mech. Mach. Theory 46:1266)

The ``exact`` relation (Carvalho & Martins 2019, Mech. Mach. Theory 133:1) follows from (C1) in
1-D: with ``u = δ̇/v₀``, ``m v₀² u du/(1 + χu) = −k δⁿ dδ``; integrated over the whole contact
(δ from 0 back to 0, u from 1 to −e) the right side vanishes, so
``∫₁^{−e} u/(1 + χu) du = 0``, which is the relation above, independent of k, n and the mass.
:meth:`HuntCrossley.predicted_restitution` solves it for e given χ: the rebound every model
predicts (the others are approximations of it for e near 1: at e = 0.8 ``hunt_crossley`` gives
4 % more, ``flores`` 1.4 % less).

**Friction**: regularised Coulomb, ``f_t = −μ f_n v_t / √(|v_t|² + v_ε²)`` with ``v_t`` the
tangential part of ``v_rel`` (C2).

The force ``f = f_n n + f_t`` acts on the chaser at ``p`` and ``−f`` on the target at ``p``: the
spatial wrenches ``±[f; p × f]`` are exactly opposite, so contact never changes the total momentum.
The elastic energy is ``U = k δⁿ⁺¹/(n + 1)`` and the dissipated power
``P_d = (k δⁿ n − f)·v_rel ≥ 0`` (C3): ``T_C + T_T + U + ∫P_d dt`` is constant without inputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..core.validation import as_pose, as_positive
from .collide_box import box_box_manifold, box_cylinder_manifold
from .shapes import Box, Capsule, Cylinder, Shape, Sphere, shape_from_config

__all__ = ["HuntCrossley", "CoulombFriction", "ContactModel", "ChaserPrimitive",
           "ContactGeometry", "ContactForce", "DAMPING_MODELS", "contact_geometry",
           "contact_manifold", "contact_force", "contact_model_from_config", "primitive_from_config"]

def _bisect(f, lo: float, hi: float, atol: float = 0.0, rtol: float = 0.0) -> float:
    """The root of ``f`` in ``(lo, hi)`` where ``f(lo) > 0 >= f(hi)``, by bisection until the
    bracket is at most ``atol + rtol·hi`` wide (or 200 halvings); its midpoint."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= atol + rtol * hi:
            break
    return 0.5 * (lo + hi)


def _exact_chi(e: float) -> float:
    """χ with ``χ(1 + e) = ln((1 + χ)/(1 − χe))`` (bisection, χ ∈ (0, 1/e))."""
    if e >= 1.0:
        return 0.0

    def f(a):
        return a * (1.0 + e) - math.log((1.0 + a) / (1.0 - a * e))

    return _bisect(f, 1e-9, (1.0 - 1e-15) / e, rtol=1e-15)      # f(lo) > 0 > f(hi)


DAMPING_MODELS = {
    "exact": _exact_chi,
    "hunt_crossley": lambda e: 1.5 * (1.0 - e),
    "lankarani_nikravesh": lambda e: 0.75 * (1.0 - e * e),
    "flores": lambda e: 1.6 * (1.0 - e) / e,
}


@dataclass(frozen=True)
class HuntCrossley:
    """Hunt–Crossley normal force (C1): ``stiffness`` k (N/mⁿ), ``exponent`` n, ``restitution``
    e ∈ (0, 1], ``damping`` one of :data:`DAMPING_MODELS`, ``v_min`` (m/s) the smallest impact
    speed the damping is scaled by (a grazing contact)."""

    stiffness: float
    exponent: float = 1.5
    restitution: float = 0.8
    damping: str = "exact"
    v_min: float = 1e-3

    def __post_init__(self):
        as_positive(self.stiffness, "contact.stiffness")
        as_positive(self.exponent, "contact.exponent")
        as_positive(self.v_min, "contact.v_min")
        if not 0.0 < float(self.restitution) <= 1.0:
            raise ValueError(f"contact.restitution: expected 0 < e <= 1, got {self.restitution!r}")
        if self.damping not in DAMPING_MODELS:
            raise ValueError(f"contact.damping: {self.damping!r} is not one of "
                             f"{', '.join(DAMPING_MODELS)}")
        object.__setattr__(self, "chi", DAMPING_MODELS[self.damping](float(self.restitution)))

    #: The dimensionless damping factor χ(e) of the chosen model (set at construction).
    chi: float = field(init=False, repr=False, compare=False, default=0.0)

    def predicted_restitution(self) -> float:
        """The coefficient of restitution that (C1) with this χ produces in a 1-D impact:
        the root ``e`` of ``χ(1 + e) = ln((1 + χ)/(1 − χe))`` (equals ``restitution`` for the
        ``exact`` damping; module docstring)."""
        chi = self.chi
        if chi <= 0.0:
            return 1.0

        def f(e):
            return chi * (1.0 + e) - math.log((1.0 + chi) / (1.0 - chi * e))

        hi = min(1.0, (1.0 - 1e-15) / chi)
        if f(hi) >= 0.0:
            return hi
        return _bisect(f, 0.0, hi, atol=1e-15)     # f(0) = χ − ln(1 + χ) > 0 > f(hi)

    def force(self, delta: float, delta_dot: float, v0: float) -> tuple[float, float]:
        """``(f_n, k δⁿ)``: the normal force (C1) and its elastic part."""
        if delta <= 0.0:
            return 0.0, 0.0
        el = self.stiffness * delta ** self.exponent
        return max(0.0, el * (1.0 + self.chi * delta_dot / max(v0, self.v_min))), el

    def elastic_energy(self, delta: float) -> float:
        """``U = k δⁿ⁺¹/(n + 1)`` (zero without penetration)."""
        if delta <= 0.0:
            return 0.0
        return self.stiffness * delta ** (self.exponent + 1.0) / (self.exponent + 1.0)


@dataclass(frozen=True)
class CoulombFriction:
    """Regularised Coulomb friction (C2): coefficient ``mu``, regularisation speed
    ``v_reg`` (m/s: below it the force grows linearly with the slip speed)."""

    mu: float = 0.3
    v_reg: float = 1e-3

    def __post_init__(self):
        if not float(self.mu) >= 0.0:
            raise ValueError(f"contact.friction: expected mu >= 0, got {self.mu!r}")
        as_positive(self.v_reg, "contact.v_reg")

    def force(self, f_n: float, v_t: np.ndarray) -> np.ndarray:
        s = math.hypot(v_t[0], v_t[1], v_t[2])
        return (-self.mu * f_n / math.sqrt(s * s + self.v_reg * self.v_reg)) * v_t


@dataclass(frozen=True)
class ContactModel:
    """The normal law and the friction law used for every pair."""

    normal: HuntCrossley
    friction: CoulombFriction | None = None


@dataclass(frozen=True, eq=False)
class ChaserPrimitive:
    """A contact primitive (sphere, capsule or box) at ``pose`` in the chaser frame ``frame``."""

    name: str
    frame: str
    shape: Shape
    pose: np.ndarray = None

    def __post_init__(self):
        if not isinstance(self.shape, (Sphere, Capsule, Box)):
            raise ValueError(f"contact primitive {self.name!r}: the chaser side takes a sphere, "
                             f"capsule or box, got {type(self.shape).__name__}")
        object.__setattr__(self, "pose", np.eye(4) if self.pose is None
                           else as_pose(self.pose, f"primitive {self.name!r} pose"))


@dataclass
class ContactGeometry:
    """``delta`` penetration (m, > 0 in contact; −gap otherwise), ``normal`` (inertial, unit, out
    of the target towards the chaser), ``point`` (inertial, m)."""

    delta: float
    normal: np.ndarray
    point: np.ndarray


@dataclass
class ContactForce:
    """The contact of one pair at one instant: ``force`` on the chaser at ``point`` (inertial,
    N; the target gets ``−force``), ``normal_force``, ``delta``, ``delta_dot``, ``power``
    dissipated (W, (C3)), ``elastic_energy`` (J) and the chaser ``primitive``'s name."""

    primitive: str
    point: np.ndarray
    normal: np.ndarray
    force: np.ndarray
    normal_force: float
    delta: float
    delta_dot: float
    power: float
    elastic_energy: float

    @property
    def spatial_wrench(self) -> np.ndarray:
        """``[f; p × f]``: the wrench on the chaser in the inertial frame about its origin."""
        return np.concatenate([self.force, np.cross(self.point, self.force)])


def _sphere_vs(shape: Shape, g_shape: np.ndarray, c: np.ndarray, r: float):
    R, o = g_shape[:3, :3], g_shape[:3, 3]
    phi, n = shape.signed_distance(R.T @ (c - o))
    return phi - r, R @ n, phi


_GOLD = 0.5 * (math.sqrt(5.0) - 1.0)


def _capsule_point(shape: Shape, g_shape, a, u, h):
    """Point of the segment ``a + s u``, ``s ∈ [−h, h]`` where the (convex) signed distance to
    ``shape`` is smallest: golden-section search to 1e-12·h."""
    R, o = g_shape[:3, :3], g_shape[:3, 3]

    def f(s):
        return shape.signed_distance(R.T @ (a + s * u - o))[0]

    lo, hi = -h, h
    x1, x2 = hi - _GOLD * (hi - lo), lo + _GOLD * (hi - lo)
    f1, f2 = f(x1), f(x2)
    while hi - lo > 1e-12 * h:
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - _GOLD * (hi - lo)
            f1 = f(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + _GOLD * (hi - lo)
            f2 = f(x2)
    return a + (0.5 * (lo + hi)) * u


def contact_geometry(prim: ChaserPrimitive, g_prim: np.ndarray, target_shape: Shape,
                     g_shape: np.ndarray) -> ContactGeometry:
    """Penetration, normal and contact point of a chaser primitive at the inertial pose
    ``g_prim`` against the target's shape at ``g_shape`` (module docstring); for a box against
    a box or a cylinder the deepest point of :func:`contact_manifold` (while apart: an estimate
    of the gap, ``delta < 0``)."""
    s = prim.shape
    if isinstance(s, Box) and not isinstance(target_shape, Sphere):
        d, n, p = _box_manifold(s, g_prim, target_shape, g_shape)[0]
        return ContactGeometry(d, n, p)
    if isinstance(s, Box):
        c = g_shape[:3, 3]
        gap, n, phi = _sphere_vs(s, g_prim, c, target_shape.radius)
        return ContactGeometry(-gap, -n, c - 0.5 * (target_shape.radius + phi) * n)
    if isinstance(s, Capsule):
        u = g_prim[:3, 2]
        c = _capsule_point(target_shape, g_shape, g_prim[:3, 3], u, 0.5 * s.length)
    else:
        c = g_prim[:3, 3]
    gap, n, phi = _sphere_vs(target_shape, g_shape, c, s.radius)
    return ContactGeometry(-gap, n, c - 0.5 * (s.radius + phi) * n)


def _box_manifold(box: Box, g_box, target_shape: Shape, g_shape):
    if isinstance(target_shape, Box):
        return box_box_manifold(box, g_box, target_shape, g_shape)
    if isinstance(target_shape, Cylinder):
        return box_cylinder_manifold(box, g_box, target_shape, g_shape)
    raise ValueError(f"a chaser box against a target {target_shape.kind}: not available "
                     f"(target shapes: sphere, box, cylinder)")


def contact_manifold(prim: ChaserPrimitive, g_prim: np.ndarray, target_shape: Shape,
                     g_shape: np.ndarray) -> list:
    """The penetrating contact points (:class:`ContactGeometry`, ``delta > 0``) of a chaser
    primitive against the target's shape: at most one for a sphere or a capsule or a box
    against a sphere; up to 8 for a box against a box, the corners, edges and rim points inside
    for a box against a cylinder (:mod:`.collide_box`).  Empty while apart."""
    if isinstance(prim.shape, Box) and not isinstance(target_shape, Sphere):
        pts = _box_manifold(prim.shape, g_prim, target_shape, g_shape)[1]
        return [ContactGeometry(d, n, p) for d, n, p in pts]
    geom = contact_geometry(prim, g_prim, target_shape, g_shape)
    return [geom] if geom.delta > 0.0 else []


def contact_force(model: ContactModel, prim: str, geom: ContactGeometry, v_rel: np.ndarray,
                  v0: float) -> ContactForce:
    """The force (C1)+(C2) on the chaser for the geometry ``geom`` and the relative velocity
    ``v_rel = v_C(p) − v_T(p)`` of the material points at the contact point; ``v0`` the
    penetration rate at the onset of this contact."""
    n = geom.normal
    vn = float(n @ v_rel)
    delta_dot = -vn
    f_n, el = model.normal.force(geom.delta, delta_dot, v0)
    f = f_n * n
    if model.friction is not None and f_n > 0.0:
        f = f + model.friction.force(f_n, v_rel - vn * n)
    power = float((el * n - f) @ v_rel)
    return ContactForce(primitive=prim, point=geom.point, normal=n, force=f, normal_force=f_n,
                        delta=geom.delta, delta_dot=delta_dot, power=power,
                        elastic_energy=model.normal.elastic_energy(geom.delta))


def contact_model_from_config(cfg: dict, what: str = "contact") -> ContactModel:
    """``{stiffness, exponent, restitution, damping, v_min, friction: {mu, v_reg}}``."""
    if not isinstance(cfg, dict):
        raise ValueError(f"{what}: expected a mapping")
    keys = {"stiffness", "exponent", "restitution", "damping", "v_min", "friction", "primitives"}
    unknown = set(cfg) - keys
    if unknown:
        raise ValueError(f"{what}: unknown keys {sorted(unknown)}; expected {sorted(keys)}")
    if "stiffness" not in cfg:
        raise ValueError(f"{what}: missing stiffness (N/m^n)")
    nums = {}       # YAML 1.1 reads 2.0e5 as text: numbers in text are taken
    for k in ("stiffness", "exponent", "restitution", "v_min"):
        if k in cfg:
            try:
                nums[k] = float(cfg[k])
            except (TypeError, ValueError):
                raise ValueError(f"{what}.{k}: expected a number, got {cfg[k]!r}") from None
    normal = HuntCrossley(**nums, **({"damping": str(cfg["damping"])} if "damping" in cfg
                                     else {}))
    fr = cfg.get("friction")
    friction = None
    if fr is not None:
        if not isinstance(fr, dict) or set(fr) - {"mu", "v_reg"}:
            raise ValueError(f"{what}.friction: expected {{mu, v_reg}}")
        friction = CoulombFriction(**fr)
    return ContactModel(normal, friction)


def primitive_from_config(name: str, cfg: dict, frames=None) -> ChaserPrimitive:
    """``{frame: ee_link, shape: {type: sphere, radius: 0.05}, position: [...],
    orientation: [x, y, z, w]}``; ``frames`` (the chaser's frame names) checks ``frame``."""
    from .body import pose_from_config
    what = f"contact.primitives.{name}"
    if not isinstance(cfg, dict) or "frame" not in cfg or "shape" not in cfg:
        raise ValueError(f"{what}: expected {{frame, shape, position, orientation}}")
    if frames is not None and cfg["frame"] not in frames:
        raise ValueError(f"{what}.frame: unknown chaser frame {cfg['frame']!r}; frames are "
                         f"{', '.join(frames)}")
    pose = pose_from_config({k: cfg[k] for k in ("position", "orientation") if k in cfg}, what)
    shape = shape_from_config(cfg["shape"], f"{what}.shape", allowed=("sphere", "capsule", "box"))
    return ChaserPrimitive(name, str(cfg["frame"]), shape, pose)
