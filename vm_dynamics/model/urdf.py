"""URDF → kinematic tree of rigid bodies (fixed joints merged), with validation.

``parse_urdf(source, locked_joints=None, xacro="safe")`` reads a URDF file path, a URDF XML
string, or a ``.xacro`` file (expanded with the PyPI ``xacro`` package) and returns a
:class:`KinematicTree`:

* the root link is the vehicle (body 0);
* every revolute, continuous or prismatic joint starts a new body; fixed joints are merged into
  their parent body (inertias lumped exactly, the child link kept as a *frame*);
* joint axes, origins (xyz / fixed-axis rpy) and full inertia tensors (off-diagonal terms,
  rotated inertial frames) are taken exactly as the URDF specification defines them;
* bodies are numbered depth-first in document order, so ``parent[i] < i``;
* ``<mimic joint= multiplier= offset=>`` is recorded on the mimicking body as a linear coupling
  ``q_mimic = multiplier · q_master + offset`` (chains of mimics are composed down to an
  independent joint, which may sit in another branch; the model turns them into
  ``q_full = G q + c``); a ``<mimic>`` on a fixed joint is ignored (the joint stays fixed);
* ``locked_joints={name: value}`` freezes movable joints at a value: the joint becomes a fixed
  joint whose origin includes the joint motion at that value (as Pinocchio's
  ``buildReducedModel``), and its child link is merged into the parent body.

Everything unsupported or physically impossible raises ``ValueError`` naming the link or joint:
self-loops, links not connected to the root (islands, closed loops), several roots, masses,
inertias and lengths outside the physical range below (:data:`MAX_MASS`, :data:`MAX_INERTIA`,
:data:`MAX_LENGTH`), non-physical inertia tensors.

**Xacro files are code.** ``.xacro`` files are expanded by
:func:`~.xacro_expansion.expand_xacro` (one policy for every entry point, with a time and
size budget): ``xacro="safe"`` (the default) evaluates only arithmetic ``${…}`` expressions
and the ``$(arg …)``, ``$(find …)``, ``$(cwd)`` and ``$(dirname)`` substitutions;
``xacro="full"`` trusts the file (every xacro feature: it can run any code); ``xacro="off"``
accepts plain URDF only.

Size limits: a URDF (file, string or expansion) of at most
:data:`~.xacro_expansion.MAX_URDF_BYTES` bytes and at most :data:`MAX_LINKS` links; loading
costs O(links²) memory and O(links³) time (the mass-matrix checks): 140 MB and ~10 s at the
limit (a loaded 2-core machine).
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from ..core import lie
from ..core.rotations import rpy_to_matrix
from .packages import resolve_package_path
from .urdf_attributes import check_inertial
from .xacro_expansion import DEFAULT_XACRO, MAX_URDF_BYTES, XACRO_MODES, expand_xacro, xacro_mode
from .xacro_worker import SAFE_XACRO_FUNCTIONS

__all__ = ["Body", "Frame", "KinematicTree", "parse_urdf", "read_urdf_source",
           "resolve_package_path", "origin_transform", "transform_inertia", "joint_axis",
           "spatial_inertia", "joint_motion", "MAX_MASS", "MAX_INERTIA", "MAX_LENGTH",
           "MAX_LINKS", "MAX_URDF_BYTES", "XACRO_MODES", "DEFAULT_XACRO", "SAFE_XACRO_FUNCTIONS"]

MOVABLE = ("revolute", "continuous", "prismatic")
_UNSUPPORTED = ("floating", "planar")

#: Physical range accepted by the loader (larger values are rejected as input errors: they
#: overflow the eigen-decompositions and mean a unit or typing error, not a real robot).
MAX_MASS = 1e9          # kg, per link (a large ship is ~1e8 kg)
MAX_INERTIA = 1e15      # kg m^2, per entry of a link's rotational inertia about its CoM
MAX_LENGTH = 1e4        # m, per coordinate of a joint origin or a CoM offset
#: Most ``<link>`` elements of a URDF: the model's arrays and checks grow with the square of
#: the links (memory) and their cube (time): 140 MB and ~10 s at this limit.
MAX_LINKS = 1000


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
    mimic: tuple | None = None   # (independent master joint, multiplier, offset) if a mimic


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
    locked: dict = field(default_factory=dict)   # {joint: value} frozen (mimics of locked included)

    @property
    def n_joints(self) -> int:
        return len(self.bodies) - 1


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


def transform_inertia(M: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Spatial inertia of a body given in frame B, re-expressed in frame A where g = pose of B in A."""
    Ai = lie.Ad_inv(g)
    return Ai.T @ M @ Ai


def read_urdf_source(source, xacro: str = DEFAULT_XACRO) -> tuple[str, str]:
    """Return ``(xml_text, description)`` for a path, ``.xacro`` path, or XML string.

    ``xacro`` (see the module docstring; xacro files are code): ``"safe"`` (default) expands
    ``.xacro`` files with arithmetic expressions only, ``"full"`` with every xacro feature
    (trusted files only), ``"off"`` refuses ``.xacro`` files and xacro markup in any source.
    Every source is at most :data:`MAX_URDF_BYTES` long.
    """
    xacro = xacro_mode(xacro)
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise ValueError(f"URDF source must be a path or an XML string, got {type(source).__name__}")
    stripped = source.lstrip()
    if source.startswith("package://"):
        source = resolve_package_path(source)
    elif stripped.startswith("<"):
        if len(source) > MAX_URDF_BYTES:
            raise ValueError(f"URDF string: {len(source)} characters; at most {MAX_URDF_BYTES} "
                             f"are allowed")
        if xacro == "off" and "xmlns:xacro" in source:
            raise ValueError("URDF string: contains xacro markup (xmlns:xacro) but xacro='off' "
                             "accepts plain URDF only")
        return source, "URDF string"
    path = source
    if not os.path.isfile(path):
        raise ValueError(f"URDF file not found: {path!r}")
    if path.endswith(".xacro"):
        return expand_xacro(path, xacro), path
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(MAX_URDF_BYTES + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") \
            from None
    if len(text) > MAX_URDF_BYTES:
        raise ValueError(f"{path}: larger than {MAX_URDF_BYTES} bytes, the limit of a URDF")
    if xacro == "off" and "xmlns:xacro" in text:
        raise ValueError(f"{path}: contains xacro markup (xmlns:xacro) but xacro='off' accepts "
                         f"plain URDF only")
    return text, path


def _floats(text, n, what):
    try:
        vals = [float(v) for v in text.split()]
    except ValueError:
        raise ValueError(f"{what}: cannot parse {text!r} as {n} numbers") from None
    if len(vals) != n or not np.all(np.isfinite(vals)):
        raise ValueError(f"{what}: expected {n} finite numbers, got {text!r}")
    return np.array(vals)


def origin_transform(o, what: str) -> np.ndarray:
    """4×4 transform of a URDF ``<origin xyz rpy>`` element (identity if ``o`` is None), with the
    loader's range checks; ``ValueError`` naming ``what`` otherwise."""
    g = np.eye(4)
    if o is not None:
        g[:3, 3] = _floats(o.get("xyz", "0 0 0"), 3, f"{what} origin xyz")
        if np.abs(g[:3, 3]).max() > MAX_LENGTH:
            raise ValueError(f"{what} origin xyz {g[:3, 3]} is beyond the physical range "
                             f"(|coordinate| <= MAX_LENGTH = {MAX_LENGTH:g} m)")
        rpy = _floats(o.get("rpy", "0 0 0"), 3, f"{what} origin rpy")
        if np.abs(rpy).max() > 1e6:
            raise ValueError(f"{what} origin rpy {rpy}: angles beyond 1e6 rad")
        g[:3, :3] = rpy_to_matrix(rpy)
    return g


def _origin_of(elem, what) -> np.ndarray:
    return origin_transform(elem.find("origin") if elem is not None else None, what)


def _link_inertia(link) -> np.ndarray:
    name = link.get("name")
    inertial = link.find("inertial")
    if inertial is None:
        return np.zeros((6, 6))
    what = f"link '{name}'"
    check_inertial(inertial, what)
    m_el = inertial.find("mass")
    mass = 0.0 if m_el is None else float(_floats(m_el.get("value", "0"), 1, f"{what} mass")[0])
    if mass < 0.0:
        raise ValueError(f"{what}: negative mass {mass}")
    if mass > MAX_MASS:
        raise ValueError(f"{what}: mass {mass:g} kg is beyond the physical range "
                         f"(MAX_MASS = {MAX_MASS:g} kg)")
    i_el = inertial.find("inertia")
    I = np.zeros((3, 3))
    if i_el is not None:
        keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        v = {}
        for k in keys:
            v[k] = float(_floats(i_el.get(k, "0"), 1, f"{what} inertia {k}")[0])
        big = [k for k in keys if abs(v[k]) > MAX_INERTIA]
        if big:
            raise ValueError(f"{what}: inertia {', '.join(f'{k}={v[k]:g}' for k in big)} "
                             f"beyond the physical range (MAX_INERTIA = {MAX_INERTIA:g} kg m^2)")
        I = np.array([[v["ixx"], v["ixy"], v["ixz"]],
                      [v["ixy"], v["iyy"], v["iyz"]],
                      [v["ixz"], v["iyz"], v["izz"]]])
    g = _origin_of(inertial, f"{what} inertial")
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


def joint_motion(jtype: str, axis: np.ndarray, value: float) -> np.ndarray:
    """4×4 motion of a joint at ``value`` in its own frame: ``exp(ξ̂ value)`` with the unit
    ``axis`` (rotation for revolute/continuous, translation for prismatic)."""
    local = (np.concatenate([np.zeros(3), axis]) if jtype != "prismatic"
             else np.concatenate([axis, np.zeros(3)]))
    return lie.se3_exp(local * float(value))


def joint_axis(joint) -> np.ndarray:
    jname = joint.get("name")
    ax_el = joint.find("axis")
    axis = _floats(ax_el.get("xyz", "1 0 0"), 3, f"joint '{jname}' axis") \
        if ax_el is not None else np.array([1.0, 0.0, 0.0])
    norm = np.linalg.norm(axis)
    if norm < 1e-12:
        raise ValueError(f"joint '{jname}': zero-length axis")
    return axis / norm


def _joint_limits(joint) -> dict:
    jname = joint.get("name")
    limits = {}
    lim = joint.find("limit")
    if lim is not None:
        for key in ("lower", "upper", "effort", "velocity"):
            if lim.get(key) is not None:
                limits[key] = float(_floats(lim.get(key), 1, f"joint '{jname}' limit {key}")[0])
    if joint.get("type") == "continuous":
        limits.pop("lower", None)
        limits.pop("upper", None)
    return limits


def _resolve_mimics(joints: dict, raw: dict) -> dict:
    """``{mimic joint: (independent master, multiplier, offset)}``, chains composed:
    ``a = m₁ b + o₁``, ``b = m₂ c + o₂`` → ``a = m₁m₂ c + (m₁o₂ + o₁)``."""
    out = {}
    for name in raw:
        chain, cur, mult, off = [name], name, 1.0, 0.0
        while cur in raw:
            master, m, o = raw[cur]
            mult, off = mult * m, mult * o + off
            if master in chain:
                loop = " -> ".join(chain[chain.index(master):] + [master])
                raise ValueError(f"joint '{name}': its mimic joints form a loop ({loop}); one "
                                 f"of them must be an independent joint")
            chain.append(master)
            cur = master
        out[name] = (cur, mult, off)
    return out


def _new_name(element, tag: str, seen, desc: str) -> str:
    """The ``name`` of the ``<tag>`` ``element``: present, and not one of ``seen``."""
    name = element.get("name")
    if not name:
        raise ValueError(f"{desc}: a <{tag}> has no name")
    if name in seen:
        raise ValueError(f"{desc}: duplicate {tag} '{name}'")
    return name


def _collect_links(root, desc: str) -> dict:
    """``{name: <link> element}``; names present and unique."""
    links = {}
    for link in root.findall("link"):
        links[_new_name(link, "link", links, desc)] = link
    if not links:
        raise ValueError(f"{desc}: no <link> elements")

    return links


def _collect_joints(root, links: dict, desc: str):
    """The joints, each link's child joints, each link's parent joint and the raw mimic
    relations; rejects unknown types, missing links, self-loops and links with two parents."""
    joints = {}
    children_of = {name: [] for name in links}
    parent_joint = {}
    raw_mimic = {}
    for joint in root.findall("joint"):
        jname = _new_name(joint, "joint", joints, desc)
        jtype = joint.get("type")
        if jtype in _UNSUPPORTED:
            raise ValueError(f"joint '{jname}': type '{jtype}' is not supported inside the tree "
                             f"(the vehicle's motion is set by load_model(base=...))")
        if jtype not in MOVABLE + ("fixed",):
            raise ValueError(f"joint '{jname}': unknown joint type {jtype!r}")
        p_el, c_el = joint.find("parent"), joint.find("child")
        if p_el is None or c_el is None:
            raise ValueError(f"joint '{jname}': missing <parent> or <child>")
        parent, child = p_el.get("link"), c_el.get("link")
        for role, lk in (("parent", parent), ("child", child)):
            if lk not in links:
                raise ValueError(f"joint '{jname}': {role} link {lk!r} does not exist")
        if parent == child:
            raise ValueError(f"joint '{jname}': parent and child are the same link '{parent}' "
                             f"(a self-loop)")
        if child in parent_joint:
            raise ValueError(f"joint '{jname}': link '{child}' already has parent joint "
                             f"'{parent_joint[child]}' (closed loop)")
        m_el = joint.find("mimic")
        if m_el is not None and jtype != "fixed":   # a <mimic> on a fixed joint is moot
            master = m_el.get("joint")
            mult = float(_floats(m_el.get("multiplier", "1"), 1, f"joint '{jname}' mimic "
                                 f"multiplier")[0])
            off = float(_floats(m_el.get("offset", "0"), 1, f"joint '{jname}' mimic offset")[0])
            raw_mimic[jname] = (master, mult, off)
        parent_joint[child] = jname
        joints[jname] = joint
        children_of[parent].append(jname)

    for jname, (master, _, _) in raw_mimic.items():
        if master not in joints:
            raise ValueError(f"joint '{jname}': mimics joint {master!r}, which does not exist")
        if joints[master].get("type") not in MOVABLE:
            raise ValueError(f"joint '{jname}': mimics joint '{master}', which is "
                             f"{joints[master].get('type')} (only movable joints can be mimicked)")
    return joints, children_of, parent_joint, raw_mimic


def _locked_values(locked_joints, joints: dict, mimic: dict) -> dict:
    """``{joint: value}`` of the joints to freeze, validated, with the mimics of a locked joint."""
    locked = {}
    for jname, value in dict(locked_joints or {}).items():
        if jname not in joints:
            movable = [j for j in joints if joints[j].get("type") in MOVABLE]
            raise ValueError(f"locked_joints: unknown joint {jname!r}; movable joints are "
                             f"{', '.join(movable)}")
        jtype = joints[jname].get("type")
        if jtype == "fixed":
            raise ValueError(f"locked_joints: joint '{jname}' is already fixed")
        if jname in mimic:
            raise ValueError(f"locked_joints: joint '{jname}' mimics '{mimic[jname][0]}'; lock "
                             f"'{mimic[jname][0]}' instead (its mimic joints follow it)")
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"locked_joints[{jname!r}]: expected a number, got {value!r}") \
                from None
        if not np.isfinite(v) or abs(v) > 1e6:
            raise ValueError(f"locked_joints[{jname!r}]: expected a finite value, got {value!r}")
        lim = _joint_limits(joints[jname])
        lo, hi = lim.get("lower", -np.inf), lim.get("upper", np.inf)
        if lo <= hi and not (lo - 1e-12 <= v <= hi + 1e-12):
            raise ValueError(f"locked_joints[{jname!r}] = {v:g} is outside the joint limits "
                             f"[{lo:g}, {hi:g}]")
        locked[jname] = v
    for jname, (master, mult, off) in mimic.items():
        if master in locked:
            locked[jname] = mult * locked[master] + off

    return locked


def _single_root(links: dict, parent_joint: dict, desc: str) -> str:
    """The one link without a parent joint."""
    roots = [name for name in links if name not in parent_joint]
    if len(roots) != 1:
        if not roots:
            raise ValueError(f"{desc}: no root link (the joints form a closed loop)")
        raise ValueError(f"{desc}: several root links {roots}; a URDF must be one tree")

    return roots[0]


def _build_bodies(root_link: str, links: dict, joints: dict, children_of: dict, mimic: dict,
                  locked: dict):
    """Merge the links fixed together into bodies (one per movable joint) and place the
    frames, depth first in document order (the order Pinocchio uses)."""
    bodies = [Body(name=root_link, parent=-1, joint=None, joint_type=None, axis=np.zeros(3),
                   home=np.eye(4), inertia=np.zeros((6, 6)))]
    frames = {}

    # Depth-first pre-order traversal in document order (the order Pinocchio uses).
    # Stack entries: (link, body it belongs to or its parent body, placement, moving joint or None).
    stack = [(root_link, 0, np.eye(4), None)]
    while stack:
        lname, bidx, placement, joint = stack.pop()
        if joint is not None:  # a movable joint starts a new body
            jname, jtype = joint.get("name"), joint.get("type")
            bodies.append(Body(name=lname, parent=bidx, joint=jname, joint_type=jtype,
                               axis=joint_axis(joint), home=placement, inertia=np.zeros((6, 6)),
                               limits=_joint_limits(joint), mimic=mimic.get(jname)))
            bidx, placement = len(bodies) - 1, np.eye(4)
        frames[lname] = Frame(lname, bidx, placement)
        bodies[bidx].inertia = bodies[bidx].inertia + transform_inertia(
            _link_inertia(links[lname]), placement)
        pending = []
        for jname in children_of[lname]:
            cjoint = joints[jname]
            child = cjoint.find("child").get("link")
            origin = placement @ _origin_of(cjoint, f"joint '{jname}'")
            movable = cjoint.get("type") != "fixed"
            if jname in locked:   # frozen: a fixed joint at origin · exp(ξ̂ value)
                origin = origin @ joint_motion(cjoint.get("type"), joint_axis(cjoint),
                                               locked[jname])
                movable = False
            pending.append((child, bidx, origin, cjoint if movable else None))
        stack.extend(reversed(pending))

    return bodies, frames


def _check_connected(links, frames, joints, parent_joint, root_link: str, desc: str) -> None:
    """Every link was reached from the root; else name the cycle of joints the rest hangs on."""
    missing = [name for name in links if name not in frames]
    if missing:
        # every link has at most one parent and only one link has none, so the links the
        # traversal missed hang off a cycle of joints: name it
        cur, seen = missing[0], []
        while cur not in seen:
            seen.append(cur)
            cur = joints[parent_joint[cur]].find("parent").get("link")
        cycle = seen[seen.index(cur):]
        raise ValueError(f"{desc}: links {missing} are not connected to the root link "
                         f"'{root_link}': joints {[parent_joint[l] for l in reversed(cycle)]} form "
                         f"a closed loop (an island); a URDF must be one tree")


def parse_urdf(source, locked_joints=None, xacro: str = DEFAULT_XACRO) -> KinematicTree:
    """Parse and validate a URDF into a :class:`KinematicTree` (see module docstring).

    ``locked_joints`` — ``{joint name: value}`` (rad or m) of movable joints to freeze; a joint
    that mimics a locked joint is locked with it; a mimic joint itself cannot be locked (lock
    its master).  ``xacro`` — ``"safe"`` (default), ``"full"`` or ``"off"``
    (:func:`read_urdf_source`).  At most :data:`MAX_LINKS` links.
    """
    text, desc = read_urdf_source(source, xacro=xacro)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f"{desc}: malformed XML: {exc}") from None
    if root.tag != "robot":
        raise ValueError(f"{desc}: root element is <{root.tag}>, expected <robot>")
    robot_name = root.get("name", "robot")
    n_links = len(root.findall("link"))
    if n_links > MAX_LINKS:
        raise ValueError(f"{desc}: {n_links} links; at most {MAX_LINKS} are supported (the "
                         f"model's memory grows with the square of the links)")

    links = _collect_links(root, desc)
    joints, children_of, parent_joint, raw_mimic = _collect_joints(root, links, desc)
    mimic = _resolve_mimics(joints, raw_mimic)
    locked = _locked_values(locked_joints, joints, mimic)
    root_link = _single_root(links, parent_joint, desc)
    bodies, frames = _build_bodies(root_link, links, joints, children_of, mimic, locked)
    _check_connected(links, frames, joints, parent_joint, root_link, desc)

    # mimics of a joint that is not a degree of freedom any more
    dofs = {b.joint for b in bodies[1:]}
    for bd in bodies[1:]:
        if bd.mimic is not None and bd.mimic[0] not in dofs:
            raise ValueError(f"joint '{bd.joint}': mimics joint '{bd.mimic[0]}', which is not "
                             f"a degree of freedom of the model")

    # Bodies were appended in discovery order, which is a valid topological order (parent < child)
    merged = {f.body for f in frames.values() if f.name != bodies[f.body].name}
    for i, body in enumerate(bodies):
        what = f"link '{body.name}'" + (" (with the links fixed to it)" if i in merged else "")
        check_rigid_body_inertia(body.inertia, what)
    return KinematicTree(robot_name, bodies, frames, locked)
