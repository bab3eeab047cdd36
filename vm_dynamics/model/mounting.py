"""Mount an arm URDF on a vehicle body without editing XML.

``mount_on_vehicle(tree, vehicle)`` returns the kinematic tree of the URDF obtained by adding a
new root link (the vehicle, with the given mass, CoM and rotational inertia) and a fixed joint
from it to the arm's root link at the pose ``mount``.  The result is identical to parsing that
hand-spliced URDF: the vehicle body's spatial inertia is the vehicle's own (paper 000, eq. 49)
plus the arm root's (and everything fixed to it) moved by ``Ad⁻¹(mount)ᵀ · Ad⁻¹(mount)`` (55),
the arm's first joints start at ``mount · ḡ`` and every link fixed to the old root becomes a
frame at ``mount · placement``.  The vehicle frame (the group element ``g``) is the new root.

``vehicle`` keys (``mass`` required, the others optional):

* ``mass`` — kg;
* ``com`` — the vehicle's centre of mass in the vehicle frame, m (default 0);
* ``inertia`` — rotational inertia about the CoM in vehicle axes, kg m²: a 3×3 matrix, the six
  numbers ``[ixx, ixy, ixz, iyy, iyz, izz]`` of a URDF ``<inertia>``, or three principal
  moments ``[ixx, iyy, izz]`` (default 0);
* ``mount`` — pose of the arm's root link in the vehicle frame: a 4×4 matrix, or
  ``{position: [x, y, z], orientation: [x, y, z, w]}`` (ROS quaternion order), or
  ``{xyz: [...], rpy: [...]}`` (URDF ``<origin>``) (default identity);
* ``name`` — name of the vehicle link and frame (default ``"vehicle"``).
"""
from __future__ import annotations

import copy

import numpy as np

from ..core import lie
from ..core.paramtree import flatten
from ..core.rotations import matrix_to_rpy, rpy_to_matrix
from ..core.validation import as_array
from .urdf import (
    MAX_INERTIA,
    MAX_LENGTH,
    MAX_MASS,
    Frame,
    KinematicTree,
    check_rigid_body_inertia,
    joint_axis,
    joint_motion,
    origin_transform,
    parse_urdf,
    spatial_inertia,
    transform_inertia,
)

__all__ = ["mount_on_vehicle", "pose_from_spec", "model_options", "effective_urdf",
           "kinematic_urdf", "VEHICLE_KEYS", "ROBOT_MODEL_PARAMETERS"]

VEHICLE_KEYS = ("mass", "com", "inertia", "mount", "name")


def pose_from_spec(spec, what="mount") -> np.ndarray:
    """4×4 pose from a matrix, ``{position, orientation (x y z w)}`` or ``{xyz, rpy}``."""
    if isinstance(spec, dict):
        keys = set(spec)
        if keys <= {"position", "orientation"}:
            p = as_array(spec.get("position", [0, 0, 0]), (3,), f"{what}.position")
            R = lie.quaternion_to_matrix(spec.get("orientation", [0, 0, 0, 1]),
                                         f"{what}.orientation")
        elif keys <= {"xyz", "rpy"}:
            p = as_array(spec.get("xyz", [0, 0, 0]), (3,), f"{what}.xyz")
            R = rpy_to_matrix(as_array(spec.get("rpy", [0, 0, 0]), (3,), f"{what}.rpy"))
        else:
            raise ValueError(f"{what}: unknown keys {sorted(keys)}; give {{position, "
                             f"orientation}} (quaternion x y z w), {{xyz, rpy}} or a 4x4 matrix")
        g = lie.make_pose(R, p)
    else:
        g = as_array(spec, (4, 4), what)
        R = g[:3, :3]
        if (np.abs(R.T @ R - np.eye(3)).max() > 1e-9 or np.linalg.det(R) < 0
                or np.abs(g[3] - [0, 0, 0, 1]).max() > 0):
            raise ValueError(f"{what}: not a rigid transform")
    if np.abs(g[:3, 3]).max() > MAX_LENGTH:
        raise ValueError(f"{what}: position beyond MAX_LENGTH = {MAX_LENGTH:g} m")
    return g


def _rotational_inertia(x, what) -> np.ndarray:
    a = np.asarray(x, dtype=float) if not isinstance(x, (str, bytes)) else None
    if a is None or a.dtype.kind not in "fiu":
        raise ValueError(f"{what}: expected a 3x3 matrix, 6 numbers (ixx ixy ixz iyy iyz izz) "
                         f"or 3 principal moments, got {x!r}")
    if a.shape == (3,):
        a = np.diag(a)
    elif a.shape == (6,):
        xx, xy, xz, yy, yz, zz = a
        a = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    elif a.shape != (3, 3):
        raise ValueError(f"{what}: expected a 3x3 matrix, 6 numbers (ixx ixy ixz iyy iyz izz) "
                         f"or 3 principal moments, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: contains NaN or Inf")
    if np.abs(a - a.T).max() > 1e-12 * max(1.0, np.abs(a).max()):
        raise ValueError(f"{what}: not symmetric")
    if np.abs(a).max() > MAX_INERTIA:
        raise ValueError(f"{what}: beyond the physical range (MAX_INERTIA = {MAX_INERTIA:g})")
    return 0.5 * (a + a.T)


def mount_on_vehicle(tree: KinematicTree, vehicle: dict) -> KinematicTree:
    """The tree of ``tree`` mounted on a new root body described by ``vehicle`` (module doc)."""
    if not isinstance(vehicle, dict):
        raise ValueError(f"vehicle: expected a dict with keys {', '.join(VEHICLE_KEYS)}, got "
                         f"{type(vehicle).__name__}")
    unknown = sorted(set(vehicle) - set(VEHICLE_KEYS))
    if unknown:
        raise ValueError(f"vehicle: unknown key(s) {unknown}; valid keys are "
                         f"{', '.join(VEHICLE_KEYS)}")
    if "mass" not in vehicle:
        raise ValueError("vehicle: 'mass' is required (kg)")
    try:
        mass = float(vehicle["mass"])
    except (TypeError, ValueError):
        raise ValueError(f"vehicle.mass: expected a number, got {vehicle['mass']!r}") from None
    if not np.isfinite(mass) or mass < 0 or mass > MAX_MASS:
        raise ValueError(f"vehicle.mass: expected 0 <= mass <= {MAX_MASS:g} kg, got {mass!r}")
    com = as_array(vehicle.get("com", [0.0, 0.0, 0.0]), (3,), "vehicle.com")
    if np.abs(com).max() > MAX_LENGTH:
        raise ValueError(f"vehicle.com: beyond MAX_LENGTH = {MAX_LENGTH:g} m")
    I_c = _rotational_inertia(vehicle.get("inertia", np.zeros((3, 3))), "vehicle.inertia")
    mount = pose_from_spec(vehicle.get("mount", np.eye(4)), "vehicle.mount")
    name = vehicle.get("name", "vehicle")
    if not isinstance(name, str) or not name:
        raise ValueError(f"vehicle.name: expected a non-empty string, got {name!r}")
    if name in tree.frames:
        raise ValueError(f"vehicle.name: the URDF already has a link named '{name}'; choose "
                         f"another name")
    M_vehicle = spatial_inertia(mass, com, I_c)
    check_rigid_body_inertia(M_vehicle, f"vehicle '{name}'")

    old = tree.bodies
    root = copy.copy(old[0])
    root.name = name
    # same operations as parsing <link vehicle/> + <joint fixed origin=mount/> + the arm root
    root.inertia = (np.zeros((6, 6)) + transform_inertia(M_vehicle, np.eye(4))
                    + transform_inertia(old[0].inertia, mount))
    bodies = [root]
    for bd in old[1:]:
        nb = copy.copy(bd)
        if bd.parent == 0:
            nb.home = mount @ bd.home
        bodies.append(nb)
    frames = {name: Frame(name, 0, np.eye(4))}
    for fname, fr in tree.frames.items():
        frames[fname] = Frame(fname, fr.body, mount @ fr.placement if fr.body == 0
                              else fr.placement)
    check_rigid_body_inertia(root.inertia, f"link '{name}' (with the links fixed to it)")
    return KinematicTree(tree.name, bodies, frames)


#: Node/scenario parameters that describe a mounted vehicle and locked joints (ROS parameter
#: files cannot hold free-form dicts, so names and values are parallel lists).
ROBOT_MODEL_PARAMETERS = {
    "locked_joints.names": ([], "joints to freeze (like pinocchio.buildReducedModel)"),
    "locked_joints.values": ([], "their values, rad or m, same order as locked_joints.names"),
    "vehicle.mass": (0.0, "mount the URDF on a new vehicle link of this mass, kg (0: no "
                          "mounting, the URDF root link is the vehicle)"),
    "vehicle.com": ([0.0, 0.0, 0.0], "vehicle centre of mass in the vehicle frame, m"),
    "vehicle.inertia": ([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], "vehicle inertia about its CoM, "
                        "[ixx, ixy, ixz, iyy, iyz, izz] kg m^2"),
    "vehicle.mount.position": ([0.0, 0.0, 0.0], "arm root link position in the vehicle frame"),
    "vehicle.mount.orientation": ([0.0, 0.0, 0.0, 1.0], "arm root link orientation in the "
                                  "vehicle frame, quaternion x y z w"),
    "vehicle.name": ("vehicle", "name of the vehicle link (TF frame)"),
}


def model_options(params) -> dict:
    """``{"locked_joints": …, "vehicle": …}`` keyword arguments of ``load_model`` from scenario
    or node parameters, nested (``vehicle: {mass: …}``) or flat (``vehicle.mass``); see
    :data:`ROBOT_MODEL_PARAMETERS`.  Empty names / ``vehicle.mass`` 0 mean none."""
    p = flatten({k: v for k, v in dict(params).items()
               if k.split(".")[0] in ("locked_joints", "vehicle")})
    unknown = sorted(k for k in p if k not in ROBOT_MODEL_PARAMETERS)
    if unknown:
        raise ValueError(f"unknown parameter(s) {unknown}; valid: "
                         f"{', '.join(ROBOT_MODEL_PARAMETERS)}")
    out = {"locked_joints": None, "vehicle": None}
    names = p.get("locked_joints.names") or []
    values = p.get("locked_joints.values") or []
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise ValueError(f"locked_joints.names: expected a list of joint names, got {names!r}")
    if isinstance(values, str) or not isinstance(values, (list, tuple)) \
            or len(values) != len(names):
        raise ValueError(f"locked_joints.values: expected {len(names)} numbers (one per "
                         f"locked_joints.names entry), got {values!r}")
    if names:
        if len(set(names)) != len(names):
            raise ValueError(f"locked_joints.names: duplicate names in {names}")
        out["locked_joints"] = dict(zip(names, values))
    mass = p.get("vehicle.mass", 0.0)
    try:
        active = float(mass) != 0.0
    except (TypeError, ValueError):
        raise ValueError(f"vehicle.mass: expected a number, got {mass!r}") from None
    if active:
        out["vehicle"] = {
            "mass": mass,
            "com": p.get("vehicle.com", [0.0, 0.0, 0.0]),
            "inertia": p.get("vehicle.inertia", [0.0] * 6),
            "mount": {"position": p.get("vehicle.mount.position", [0.0, 0.0, 0.0]),
                      "orientation": p.get("vehicle.mount.orientation", [0.0, 0.0, 0.0, 1.0])},
            "name": p.get("vehicle.name", "vehicle"),
        }
    return out


def _origin_xml(g) -> dict:
    return {"xyz": " ".join(repr(float(v)) for v in g[:3, 3]),
            "rpy": " ".join(repr(float(v)) for v in matrix_to_rpy(g[:3, :3]))}


def effective_urdf(xml: str, locked_joints=None, vehicle=None) -> str:
    """The URDF text of the model ``load_model(xml, locked_joints=…, vehicle=…)`` builds, for
    robot_state_publisher, RViz and Foxglove: locked joints become fixed joints whose origin
    includes the joint motion (their mimics too), and the vehicle link plus its fixed mount
    joint are spliced in.  Loading the result gives the same model (tested to 1e-12)."""
    import xml.etree.ElementTree as ET
    tree = parse_urdf(xml, locked_joints=locked_joints)      # validates and resolves mimics
    root = ET.fromstring(xml)
    for joint in root.findall("joint"):
        name = joint.get("name")
        if name not in tree.locked:
            continue
        origin = origin_transform(joint.find("origin"), f"joint '{name}'")
        g = origin @ joint_motion(joint.get("type"), joint_axis(joint),
                                                             tree.locked[name])
        for child in list(joint):
            if child.tag not in ("parent", "child"):
                joint.remove(child)
        joint.set("type", "fixed")
        ET.SubElement(joint, "origin", _origin_xml(g))
    if vehicle is not None:
        mounted = mount_on_vehicle(tree, vehicle)            # validates the vehicle
        name = mounted.bodies[0].name
        mass = float(vehicle["mass"])
        com = np.asarray(vehicle.get("com", [0.0, 0.0, 0.0]), dtype=float)
        I = _rotational_inertia(vehicle.get("inertia", np.zeros((3, 3))), "vehicle.inertia")
        mount = pose_from_spec(vehicle.get("mount", np.eye(4)), "vehicle.mount")
        link = ET.Element("link", {"name": name})
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "origin", {"xyz": " ".join(repr(float(v)) for v in com),
                                           "rpy": "0 0 0"})
        ET.SubElement(inertial, "mass", {"value": repr(mass)})
        ET.SubElement(inertial, "inertia", {k: repr(float(I[i, j])) for k, (i, j) in (
            ("ixx", (0, 0)), ("ixy", (0, 1)), ("ixz", (0, 2)), ("iyy", (1, 1)), ("iyz", (1, 2)),
            ("izz", (2, 2)))})
        joint = ET.Element("joint", {"name": f"{name}_mount", "type": "fixed"})
        ET.SubElement(joint, "parent", {"link": name})
        ET.SubElement(joint, "child", {"link": tree.bodies[0].name})
        ET.SubElement(joint, "origin", _origin_xml(mount))
        root.insert(0, joint)
        root.insert(0, link)
    return ET.tostring(root, encoding="unicode")


def kinematic_urdf(xml: str) -> str:
    """``xml`` without the ``<inertial>`` of its root link, for consumers that only need the
    kinematics (robot_state_publisher, RViz).  KDL cannot represent an inertia on the root
    segment and robot_state_publisher warns about it at every start ("The root link … has an
    inertia specified in the URDF, but KDL does not support a root link with an inertia");
    the TF tree is unchanged, and the dynamics keep the full URDF."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(xml)
    links = {ln.get("name"): ln for ln in root.findall("link")}
    children = {j.find("child").get("link") for j in root.findall("joint")
                if j.find("child") is not None}
    roots = [name for name in links if name not in children]
    if len(roots) != 1:
        return xml                    # not a single tree: left to the URDF's own checks
    inertial = links[roots[0]].find("inertial")
    if inertial is None:
        return xml
    links[roots[0]].remove(inertial)
    return ET.tostring(root, encoding="unicode")
