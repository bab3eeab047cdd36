"""Capture of a tumbling target (issue 22): a second free rigid body, compliant contact between
chaser primitives and the target, and grasp/release as a change of topology with the exact
momentum-conserving velocity update (docs/capture.md).

* :mod:`.body` — :class:`TargetBody` (mass, CoM, inertia, shape, grapple fixture) and its
  Newton–Euler equations on SE(3);
* :mod:`.shapes` — sphere, box, cylinder, capsule and their signed distances;
* :mod:`.contact` — Hunt–Crossley normal force, regularised Coulomb friction, dissipation;
* :mod:`.grasp` — grasp condition, weld Jacobian, impulsive update (G2), release (G3);
* :mod:`.system` — :class:`CaptureSimulator`: chaser + target in one RKMK step on
  SE(3) × SE(3) × R^m with the spatial momenta as state, with force elements on both bodies;
* :mod:`.orbit` — capture in orbit: the chief frame and its gravity
  (:class:`ChiefFrameGravity`, :class:`TidalGravity`).
"""
from .body import TargetBody, pose_from_config, target_from_config, target_from_urdf
from .contact import (
    DAMPING_MODELS,
    ChaserPrimitive,
    ContactForce,
    ContactGeometry,
    ContactModel,
    CoulombFriction,
    HuntCrossley,
    contact_force,
    contact_geometry,
    contact_manifold,
    contact_model_from_config,
    primitive_from_config,
)
from .grasp import (
    GraspSpec,
    grasp_error,
    grasp_jacobian,
    grasp_spec_from_config,
    grasp_velocity,
    release_velocity,
)
from .orbit import ChiefFrameGravity, TidalGravity
from .shapes import SHAPE_TYPES, Box, Capsule, Cylinder, Shape, Sphere, shape_from_config
from .system import CaptureSimulator, CaptureState, CaptureSystem, MeasuredWrench, ProductGroup

__all__ = ["TargetBody", "pose_from_config", "target_from_config", "target_from_urdf",
           "DAMPING_MODELS", "ChaserPrimitive", "ContactForce", "ContactGeometry",
           "ContactModel", "CoulombFriction", "HuntCrossley", "contact_force", "contact_geometry",
           "contact_manifold",
           "contact_model_from_config", "primitive_from_config", "GraspSpec", "grasp_error",
           "grasp_jacobian", "grasp_spec_from_config", "grasp_velocity", "release_velocity",
           "SHAPE_TYPES", "Box", "Capsule", "Cylinder", "Shape", "Sphere", "shape_from_config",
           "CaptureSimulator", "CaptureState", "CaptureSystem", "MeasuredWrench", "ProductGroup",
           "ChiefFrameGravity", "TidalGravity"]
