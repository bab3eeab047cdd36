"""URDF → kinematic tree of rigid bodies (fixed joints merged), with validation.

``parse_urdf(source)`` reads a URDF file path, a URDF XML string, or a ``.xacro`` file (expanded
with the PyPI ``xacro`` package) and returns a :class:`KinematicTree`:

* the root link is the vehicle (body 0);
* every revolute, continuous or prismatic joint starts a new body; fixed joints are merged into
  their parent body (inertias lumped exactly, the child link kept as a *frame*);
* joint axes, origins (xyz / fixed-axis rpy) and full inertia tensors (off-diagonal terms,
  rotated inertial frames) are taken exactly as the URDF specification defines them;
* bodies are numbered depth-first in document order, so ``parent[i] < i``.

Everything unsupported or physically impossible raises ``ValueError`` naming the link or joint.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from . import lie

__all__ = ["Body", "Frame", "KinematicTree", "parse_urdf", "read_urdf_source",
           "rpy_to_matrix", "spatial_inertia"]

MOVABLE = ("revolute", "continuous", "prismatic")
_UNSUPPORTED = ("floating", "planar")


@dataclass
class Body:
    """A rigid body: a URDF link plus the links fixed to it.

    ``home`` is the body frame (= the frame of the joint that moves it, URDF child-link frame) in
    the parent body's frame at q = 0; ``axis`` is the joint axis in the body frame; ``inertia``
    is the 6×6 spatial inertia about the body-frame origin in body axes (paper 000, eq. 49).
    """

    name: str
    parent: int
    joint: str | None
    joint_type: str | None
    axis: np.ndarray
    home: np.ndarray
    inertia: np.ndarray
    limits: dict = field(default_factory=dict)


@dataclass
class Frame:
    """A named frame rigidly attached to a body (``placement`` in body coordinates)."""

    name: str
    body: int
    placement: np.ndarray


@dataclass
class KinematicTree:
    name: str
    bodies: list
    frames: dict

    @property
    def n_joints(self) -> int:
        return len(self.bodies) - 1


def rpy_to_matrix(rpy) -> np.ndarray:
    """URDF fixed-axis roll–pitch–yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def spatial_inertia(mass: float, com: np.ndarray, I_com: np.ndarray) -> np.ndarray:
    """6×6 spatial inertia about the frame origin, twist order ``[v; ω]`` (paper 000, eq. 49).

    ``[[m I, -m c~], [m c~, I_c - m c~ c~]]`` with ``I_c`` the rotational inertia about the CoM
    (expressed in the frame's axes).
    """
    C = lie.skew(com)
    M = np.zeros((6, 6))
    M[:3, :3] = mass * np.eye(3)
    M[:3, 3:] = -mass * C
    M[3:, :3] = mass * C
    M[3:, 3:] = I_com - mass * C @ C
    return M


def _transform_inertia(M: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Spatial inertia of a body given in frame B, re-expressed in frame A where g = pose of B in A."""
    Ai = lie.Ad_inv(g)
    return Ai.T @ M @ Ai


def read_urdf_source(source) -> tuple[str, str]:
    """Return ``(xml_text, description)`` for a path, ``.xacro`` path, or XML string."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise ValueError(f"URDF source must be a path or an XML string, got {type(source).__name__}")
    stripped = source.lstrip()
    if stripped.startswith("<"):
        return source, "URDF string"
    path = source
    if not os.path.isfile(path):
        raise ValueError(f"URDF file not found: {path!r}")
    if path.endswith(".xacro"):
        try:
            import xacro
        except ImportError as exc:  # pragma: no cover - xacro is a dependency
            raise ValueError(f"{path}: expanding .xacro needs the 'xacro' package") from exc
        try:
            doc = xacro.process_file(path)
        except Exception as exc:  # xacro raises its own XacroException and others
            raise ValueError(f"{path}: xacro expansion failed: {exc}") from exc
        return doc.toprettyxml(indent="  "), path
    with open(path, encoding="utf-8") as fh:
        return fh.read(), path


def _floats(text, n, what):
    try:
        vals = [float(v) for v in text.split()]
    except ValueError:
        raise ValueError(f"{what}: cannot parse {text!r} as {n} numbers") from None
    if len(vals) != n or not np.all(np.isfinite(vals)):
        raise ValueError(f"{what}: expected {n} finite numbers, got {text!r}")
    return np.array(vals)


def _origin(elem, what) -> np.ndarray:
    o = elem.find("origin") if elem is not None else None
    g = np.eye(4)
    if o is not None:
        g[:3, 3] = _floats(o.get("xyz", "0 0 0"), 3, f"{what} origin xyz")
        g[:3, :3] = rpy_to_matrix(_floats(o.get("rpy", "0 0 0"), 3, f"{what} origin rpy"))
    return g


def _link_inertia(link) -> np.ndarray:
    name = link.get("name")
    inertial = link.find("inertial")
    if inertial is None:
        return np.zeros((6, 6))
    what = f"link '{name}'"
    m_el = inertial.find("mass")
    mass = 0.0 if m_el is None else float(_floats(m_el.get("value", "0"), 1, f"{what} mass")[0])
    if mass < 0.0:
        raise ValueError(f"{what}: negative mass {mass}")
    i_el = inertial.find("inertia")
    I = np.zeros((3, 3))
    if i_el is not None:
        keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        v = {}
        for k in keys:
            v[k] = float(_floats(i_el.get(k, "0"), 1, f"{what} inertia {k}")[0])
        I = np.array([[v["ixx"], v["ixy"], v["ixz"]],
                      [v["ixy"], v["iyy"], v["iyz"]],
                      [v["ixz"], v["iyz"], v["izz"]]])
    g = _origin(inertial, f"{what} inertial")
    R, c = g[:3, :3], g[:3, 3]
    return spatial_inertia(mass, c, R @ I @ R.T)


def check_rigid_body_inertia(M: np.ndarray, what: str) -> None:
    """Raise ValueError unless ``M`` is a physically realisable spatial inertia.

    Checks mass ≥ 0, rotational inertia about the CoM positive semi-definite, and the triangle
    inequality of its principal moments, each up to a relative rounding tolerance of 1e-6.
    """
    m = M[0, 0]
    if m < 0:
        raise ValueError(f"{what}: negative mass {m}")
    if m == 0.0:
        I_c = M[3:, 3:]
    else:
        c = lie.unskew(M[3:, :3]) / m
        C = lie.skew(c)
        I_c = M[3:, 3:] + m * C @ C
    I_c = 0.5 * (I_c + I_c.T)
    eig = np.linalg.eigvalsh(I_c)
    scale = max(float(np.sum(np.abs(eig))), 1e-300)
    tol = 1e-6 * scale + 1e-15
    if eig[0] < -tol:
        raise ValueError(f"{what}: rotational inertia is not positive semi-definite "
                         f"(principal moments {eig})")
    a, b, cc = eig
    if a + b < cc - tol:
        raise ValueError(f"{what}: principal moments {eig} break the triangle inequality "
                         f"({a:.6g} + {b:.6g} < {cc:.6g})")
    if m == 0.0 and scale > 1e-12:
        raise ValueError(f"{what}: zero mass with nonzero rotational inertia")


def parse_urdf(source) -> KinematicTree:
    """Parse and validate a URDF into a :class:`KinematicTree` (see module docstring)."""
    text, desc = read_urdf_source(source)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f"{desc}: malformed XML: {exc}") from None
    if root.tag != "robot":
        raise ValueError(f"{desc}: root element is <{root.tag}>, expected <robot>")
    robot_name = root.get("name", "robot")

    links = {}
    for link in root.findall("link"):
        name = link.get("name")
        if not name:
            raise ValueError(f"{desc}: a <link> has no name")
        if name in links:
            raise ValueError(f"{desc}: duplicate link '{name}'")
        links[name] = link
    if not links:
        raise ValueError(f"{desc}: no <link> elements")

    joints = {}
    children_of = {name: [] for name in links}
    parent_joint = {}
    for joint in root.findall("joint"):
        jname = joint.get("name")
        if not jname:
            raise ValueError(f"{desc}: a <joint> has no name")
        if jname in joints:
            raise ValueError(f"{desc}: duplicate joint '{jname}'")
        jtype = joint.get("type")
        if jtype in _UNSUPPORTED:
            raise ValueError(f"joint '{jname}': type '{jtype}' is not supported inside the tree "
                             f"(the vehicle's motion is set by load_model(base=...))")
        if jtype not in MOVABLE + ("fixed",):
            raise ValueError(f"joint '{jname}': unknown joint type {jtype!r}")
        if joint.find("mimic") is not None:
            raise ValueError(f"joint '{jname}': mimic joints are not supported")
        p_el, c_el = joint.find("parent"), joint.find("child")
        if p_el is None or c_el is None:
            raise ValueError(f"joint '{jname}': missing <parent> or <child>")
        parent, child = p_el.get("link"), c_el.get("link")
        for role, lk in (("parent", parent), ("child", child)):
            if lk not in links:
                raise ValueError(f"joint '{jname}': {role} link {lk!r} does not exist")
        if child in parent_joint:
            raise ValueError(f"joint '{jname}': link '{child}' already has parent joint "
                             f"'{parent_joint[child]}' (closed loop)")
        parent_joint[child] = jname
        joints[jname] = joint
        children_of[parent].append(jname)

    roots = [name for name in links if name not in parent_joint]
    if len(roots) != 1:
        if not roots:
            raise ValueError(f"{desc}: no root link (the joints form a closed loop)")
        raise ValueError(f"{desc}: several root links {roots}; a URDF must be one tree")

    bodies = [Body(name=roots[0], parent=-1, joint=None, joint_type=None, axis=np.zeros(3),
                   home=np.eye(4), inertia=np.zeros((6, 6)))]
    frames = {}

    # Depth-first pre-order traversal in document order (the order Pinocchio uses).
    # Stack entries: (link, body it belongs to or its parent body, placement, moving joint or None).
    stack = [(roots[0], 0, np.eye(4), None)]
    while stack:
        lname, bidx, placement, joint = stack.pop()
        if joint is not None:  # a movable joint starts a new body
            jname, jtype = joint.get("name"), joint.get("type")
            ax_el = joint.find("axis")
            axis = _floats(ax_el.get("xyz", "1 0 0"), 3, f"joint '{jname}' axis") \
                if ax_el is not None else np.array([1.0, 0.0, 0.0])
            norm = np.linalg.norm(axis)
            if norm < 1e-12:
                raise ValueError(f"joint '{jname}': zero-length axis")
            limits = {}
            lim = joint.find("limit")
            if lim is not None:
                for key in ("lower", "upper", "effort", "velocity"):
                    if lim.get(key) is not None:
                        limits[key] = float(_floats(lim.get(key), 1,
                                                    f"joint '{jname}' limit {key}")[0])
            if jtype == "continuous":
                limits.pop("lower", None)
                limits.pop("upper", None)
            bodies.append(Body(name=lname, parent=bidx, joint=jname, joint_type=jtype,
                               axis=axis / norm, home=placement, inertia=np.zeros((6, 6)),
                               limits=limits))
            bidx, placement = len(bodies) - 1, np.eye(4)
        frames[lname] = Frame(lname, bidx, placement)
        bodies[bidx].inertia = bodies[bidx].inertia + _transform_inertia(
            _link_inertia(links[lname]), placement)
        pending = []
        for jname in children_of[lname]:
            cjoint = joints[jname]
            child = cjoint.find("child").get("link")
            origin = placement @ _origin(cjoint, f"joint '{jname}'")
            movable = cjoint.get("type") != "fixed"
            pending.append((child, bidx, origin, cjoint if movable else None))
        stack.extend(reversed(pending))

    # Bodies were appended in discovery order, which is a valid topological order (parent < child)
    for i, body in enumerate(bodies):
        what = f"link '{body.name}'" + (" (with the links fixed to it)" if any(
            f.body == i and f.name != body.name for f in frames.values()) else "")
        check_rigid_body_inertia(body.inertia, what)
    return KinematicTree(robot_name, bodies, frames)
