"""The target: a free rigid body on SE(3) (mass, CoM, inertia, a primitive shape, a grapple fixture).

State: the pose ``g_T`` (4×4, body frame B in the inertial frame) and the body twist
``V_T = [v; ω]`` (B's velocity in B's axes, left-trivialised, as the chaser's V).  The body frame
need not be at the CoM: the spatial inertia about B's origin is (paper 000, eq. 49)

    𝕄 = [[m I, −m c~], [m c~, I_c − m c~ c~]]

with ``c`` the CoM in B and ``I_c`` the rotational inertia about the CoM in B's axes.

Dynamics (Newton–Euler on SE(3) in body coordinates, the Euler–Poincaré equation of SE(3)):

    𝕄 V̇ = ad_Vᵀ 𝕄 V + F                         (docs/capture.md, (T1))

with ``F = [f; n]`` the body wrench at B's origin.  It is integrated through the *spatial*
momentum ``μ = Ad_{g⁻¹}ᵀ 𝕄 V`` (inertial frame, about its origin): ``μ̇ = Ad_{g⁻¹}ᵀ F`` (T2), so
without wrenches μ is constant and the target conserves its momentum to round-off, like the
chaser's ``spatial_momentum`` formulation (:mod:`vm_dynamics.sim.engine`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core import lie
from ..core.validation import as_pose, as_positive, as_vector
from ..model.urdf import check_rigid_body_inertia, parse_urdf, spatial_inertia
from .shapes import Shape, shape_from_config

__all__ = ["TargetBody", "target_from_config", "target_from_urdf", "pose_from_config"]


@dataclass(frozen=True, eq=False)
class TargetBody:
    """A free-flying rigid body: ``mass`` (kg), ``com`` (m, in B), ``inertia`` (3×3, kg·m², about
    the CoM, B's axes), ``shape`` (a :class:`~vm_dynamics.capture.shapes.Shape` placed at
    ``shape_pose`` in B) and the grapple ``fixture`` (4×4 pose of the fixture frame in B: the
    frame the chaser's grasp frame must match).  ``name`` labels topics and frames."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray
    shape: Shape
    fixture: np.ndarray = field(default_factory=lambda: np.eye(4))
    shape_pose: np.ndarray = field(default_factory=lambda: np.eye(4))
    name: str = "target"

    def __post_init__(self):
        m = as_positive(self.mass, "target.mass")
        c = as_vector(self.com, 3, "target.com")
        I = np.asarray(self.inertia, dtype=float)
        if I.shape != (3, 3) or not np.all(np.isfinite(I)):
            raise ValueError(f"target.inertia: expected a finite 3x3 matrix, got shape {I.shape}")
        if not np.allclose(I, I.T, rtol=1e-9, atol=1e-12 * max(1.0, np.abs(I).max())):
            raise ValueError("target.inertia: must be symmetric")
        M = spatial_inertia(m, c, 0.5 * (I + I.T))
        check_rigid_body_inertia(M, "target.inertia")
        if np.linalg.eigvalsh(M)[0] <= 0:
            raise ValueError("target.inertia: a free body needs a positive definite inertia")
        if not isinstance(self.shape, Shape):
            raise ValueError(f"target.shape: expected a Sphere, Box or Cylinder, got "
                             f"{type(self.shape).__name__}")
        object.__setattr__(self, "mass", m)
        object.__setattr__(self, "com", c)
        object.__setattr__(self, "inertia", 0.5 * (I + I.T))
        object.__setattr__(self, "fixture", as_pose(self.fixture, "target.fixture"))
        object.__setattr__(self, "shape_pose", as_pose(self.shape_pose, "target.shape_pose"))
        object.__setattr__(self, "spatial_inertia", M)
        object.__setattr__(self, "spatial_inertia_inv", np.linalg.inv(M))

    spatial_inertia: np.ndarray = field(init=False, repr=False)
    spatial_inertia_inv: np.ndarray = field(init=False, repr=False)

    # ---------------------------------------------------------------- mechanics
    def momentum(self, g, V) -> np.ndarray:
        """Spatial momentum ``[linear; angular]`` in the inertial frame about its origin:
        ``Ad_{g⁻¹}ᵀ 𝕄 V``."""
        return lie.Ad_inv(g).T @ (self.spatial_inertia @ np.asarray(V, dtype=float))

    def velocity_from_momentum(self, g, mu) -> np.ndarray:
        """Body twist from the spatial momentum: ``V = 𝕄⁻¹ Ad_gᵀ μ`` (inverse of :meth:`momentum`)."""
        return self.spatial_inertia_inv @ (lie.Ad(g).T @ np.asarray(mu, dtype=float))

    def kinetic_energy(self, V) -> float:
        """½ Vᵀ 𝕄 V."""
        V = np.asarray(V, dtype=float)
        return float(0.5 * V @ self.spatial_inertia @ V)

    def acceleration(self, V, wrench=None) -> np.ndarray:
        """``V̇ = 𝕄⁻¹ (ad_Vᵀ 𝕄 V + F)`` (T1); ``wrench`` F at B's origin in B's axes."""
        V = np.asarray(V, dtype=float)
        rhs = lie.ad(V).T @ (self.spatial_inertia @ V)
        if wrench is not None:
            rhs = rhs + np.asarray(wrench, dtype=float)
        return self.spatial_inertia_inv @ rhs

    def fixture_pose(self, g) -> np.ndarray:
        """Inertial pose of the grapple fixture: ``g · fixture``."""
        return np.asarray(g, dtype=float) @ self.fixture

    def shape_world_pose(self, g) -> np.ndarray:
        """Inertial pose of the shape's frame: ``g · shape_pose``."""
        return np.asarray(g, dtype=float) @ self.shape_pose


# ---------------------------------------------------------------------- construction
def target_from_config(cfg: dict, name: str = "target") -> TargetBody:
    """A :class:`TargetBody` from a scenario's ``target`` section::

        mass: 120.0                     # kg
        com: [0, 0, 0]                  # m, in the body frame
        inertia: [Ixx, Iyy, Izz]        # or [Ixx, Iyy, Izz, Ixy, Ixz, Iyz], kg m^2 about the CoM
        shape: {type: box, size: [1.0, 0.8, 0.6]}      # sphere: radius; cylinder: radius, length
        fixture: {position: [0.5, 0, 0], orientation: [0, 0, 0, 1]}   # x y z w

    or ``urdf: file`` (one link) for mass, CoM and inertia (``shape`` and ``fixture`` stay)."""
    if not isinstance(cfg, dict):
        raise ValueError(f"{name}: expected a mapping, got {type(cfg).__name__}")
    shape = shape_from_config(cfg.get("shape"), f"{name}.shape")
    fixture = pose_from_config(cfg.get("fixture"), f"{name}.fixture")
    shape_pose = pose_from_config(cfg.get("shape_pose"), f"{name}.shape_pose")
    if "urdf" in cfg:
        return target_from_urdf(cfg["urdf"], shape, fixture=fixture, shape_pose=shape_pose,
                                name=str(cfg.get("name", name)))
    missing = [k for k in ("mass", "inertia") if k not in cfg]
    if missing:
        raise ValueError(f"{name}: missing {', '.join(missing)} (or give urdf: a one-link file)")
    return TargetBody(mass=cfg["mass"], com=cfg.get("com", [0.0, 0.0, 0.0]),
                      inertia=_inertia_matrix(cfg["inertia"], f"{name}.inertia"), shape=shape,
                      fixture=fixture, shape_pose=shape_pose, name=str(cfg.get("name", name)))


def target_from_urdf(source, shape: Shape, fixture=None, shape_pose=None,
                     name: str | None = None) -> TargetBody:
    """A :class:`TargetBody` with the mass properties of a one-link URDF (path or XML)."""
    tree = parse_urdf(source)
    if len(tree.bodies) != 1:
        raise ValueError(f"target urdf: expected one rigid body (no moving joints), got "
                         f"{len(tree.bodies)} bodies")
    M = tree.bodies[0].inertia
    m = float(M[0, 0])
    if not m > 0:
        raise ValueError("target urdf: the link has no mass")
    c = lie.unskew(M[3:, :3]) / m
    C = lie.skew(c)
    return TargetBody(mass=m, com=c, inertia=M[3:, 3:] + m * C @ C, shape=shape,
                      fixture=np.eye(4) if fixture is None else fixture,
                      shape_pose=np.eye(4) if shape_pose is None else shape_pose,
                      name=name or tree.name)


def _inertia_matrix(v, what) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if a.shape == (3, 3):
        return a
    if a.shape == (3,):
        return np.diag(a)
    if a.shape == (6,):
        xx, yy, zz, xy, xz, yz = a
        return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    raise ValueError(f"{what}: expected [Ixx, Iyy, Izz], [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] or a 3x3 "
                     f"matrix, got shape {a.shape}")


def pose_from_config(cfg, what) -> np.ndarray:
    """4×4 pose of ``{position: [x, y, z], orientation: [x, y, z, w]}`` (identity for None)."""
    if cfg is None:
        return np.eye(4)
    if not isinstance(cfg, dict):
        raise ValueError(f"{what}: expected {{position: [x, y, z], orientation: [x, y, z, w]}}")
    unknown = set(cfg) - {"position", "orientation"}
    if unknown:
        raise ValueError(f"{what}: unknown keys {sorted(unknown)}; expected position, orientation")
    return lie.pose(cfg.get("position", [0.0, 0.0, 0.0]), cfg.get("orientation", [0, 0, 0, 1]))

