"""The URDF joint tree as ROS transforms: what robot_state_publisher would broadcast.

:class:`UrdfTree` parses a URDF (a path or the XML text), and gives the fixed joints'
``/tf_static`` transforms and, for joint positions, the movable joints' ``/tf`` transforms and
every link's pose in the root frame.  The MCAP recorder and the live view share it.
"""

from __future__ import annotations

import math
import os
from typing import Any, Mapping, NamedTuple

import numpy as np

from ..model.urdf import MOVABLE, origin_transform
from . import messages as rm

__all__ = ["UrdfJoint", "UrdfTree", "axis_angle_matrix"]


class UrdfJoint(NamedTuple):
    """One URDF joint as robot_state_publisher uses it: ``origin`` is the child link's frame in
    the parent link's frame at zero position, ``axis`` a unit vector in the child frame;
    ``mimic`` is ``(joint, multiplier, offset)`` or None."""

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    mimic: tuple[str, float, float] | None


def axis_angle_matrix(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix of ``angle`` [rad] about the unit ``axis`` (Rodrigues)."""
    x, y, z = axis
    c, s = math.cos(angle), math.sin(angle)
    C = 1.0 - c
    return np.array([[c + x * x * C, x * y * C - z * s, x * z * C + y * s],
                     [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
                     [z * x * C - y * s, z * y * C + x * s, c + z * z * C]])




def _joint_axis(el: Any, jtype: str, what: str) -> np.ndarray:
    """The unit axis of a ``<joint>`` (default x; zero only for a fixed joint)."""
    axis = np.array([1.0, 0.0, 0.0])
    ae = el.find("axis")
    if ae is not None:
        try:
            axis = np.array([float(v) for v in ae.get("xyz", "1 0 0").split()])
        except ValueError:
            raise ValueError(f"{what}: axis is not numeric") from None
        if axis.shape != (3,) or not np.all(np.isfinite(axis)):
            raise ValueError(f"{what}: axis needs 3 finite values")
    norm = float(np.linalg.norm(axis))
    if jtype != "fixed" and norm == 0.0:
        raise ValueError(f"{what}: axis is zero")
    return axis / norm if norm else axis


def _read_joint(el: Any, known: set) -> UrdfJoint:
    """A ``<joint>`` element as a :class:`UrdfJoint` (``ValueError`` naming the joint)."""
    name, jtype = el.get("name"), el.get("type")
    what = f"joint {name!r}"
    if not name:
        raise ValueError("robot_description: a <joint> has no name")
    if jtype not in MOVABLE + ("fixed",):
        raise ValueError(f'{what}: type {jtype!r} has no TF from a joint position '
                         f'(supported: fixed, {", ".join(MOVABLE)})')
    pe, ce = el.find("parent"), el.find("child")
    parent = pe.get("link") if pe is not None else None
    child = ce.get("link") if ce is not None else None
    for role, link in (("parent", parent), ("child", child)):
        if link not in known:
            raise ValueError(f"{what}: {role} link {link!r} is not a <link>")
    axis = _joint_axis(el, jtype, what)
    mimic = None
    me = el.find("mimic")
    if me is not None and jtype != "fixed":
        try:
            mimic = (me.get("joint"), float(me.get("multiplier", "1")),
                     float(me.get("offset", "0")))
        except ValueError:
            raise ValueError(f"{what}: mimic multiplier/offset is not numeric") from None
    return UrdfJoint(name, jtype, parent, child, origin_transform(el.find("origin"), what),
                     axis, mimic)


def _root_link(links: list[str], joints: list[UrdfJoint]) -> str:
    """The one link that is no joint's child (a link with two parents is a closed loop)."""
    children = [j.child for j in joints]
    dup = {c for c in children if children.count(c) > 1}
    if dup:
        raise ValueError(f"robot_description: link {sorted(dup)[0]!r} has several parent "
                         f"joints (closed loop)")
    roots = [lk for lk in links if lk not in set(children)]
    if len(roots) != 1:
        raise ValueError(f"robot_description: expected one root link, found {roots}")
    return roots[0]


def _parent_first(root: str, joints: list[UrdfJoint]) -> list[UrdfJoint]:
    """``joints`` ordered parent-before-child (depth-first from ``root``); a joint not reached
    is on a cycle."""
    by_parent: dict[str, list[UrdfJoint]] = {}
    for j in joints:
        by_parent.setdefault(j.parent, []).append(j)
    ordered, stack = [], [root]
    while stack:
        link = stack.pop()
        for j in reversed(by_parent.get(link, [])):
            ordered.append(j)
            stack.append(j.child)
    if len(ordered) != len(joints):
        lost = sorted({j.name for j in joints} - {j.name for j in ordered})
        raise ValueError(f"robot_description: joints {lost} are not connected to the root "
                         f"link {root!r} (cycle)")
    return ordered


class UrdfTree:
    """The link/joint tree of a URDF, for the TF that robot_state_publisher would publish.

    ``source`` is URDF XML text, a URDF file or a ``.xacro`` file (expanded).  Every fixed joint
    gives a constant ``parent -> child`` transform (``/tf_static``); every revolute, continuous
    or prismatic joint (mimic joints included) a transform that depends on its position
    (``/tf``): ``origin @ motion(axis, q)``.  Floating and planar joints have no position in a
    JointState and are rejected, as are unknown links, several roots and cycles
    (``ValueError`` naming the joint or link).
    """

    MOVABLE = MOVABLE                 # the joint types with a position (model.urdf)

    def __init__(self, source: str | os.PathLike):
        import xml.etree.ElementTree as ET

        from ..model.urdf import read_urdf_source

        self.xml, _ = read_urdf_source(source)
        try:
            robot = ET.fromstring(self.xml)
        except ET.ParseError as exc:
            raise ValueError(f"robot_description: not valid XML: {exc}") from None
        if robot.tag != "robot":
            raise ValueError(f"robot_description: root element is <{robot.tag}>, not <robot>")
        self.name = robot.get("name", "")
        self.links = [lk.get("name") for lk in robot.findall("link")]
        if not self.links or any(not n for n in self.links):
            raise ValueError("robot_description: every <link> needs a name, and one is needed")
        known = set(self.links)
        joints = [_read_joint(el, known) for el in robot.findall("joint")]
        self.root = _root_link(self.links, joints)
        ordered = _parent_first(self.root, joints)
        self.joints = ordered
        names = {j.name for j in ordered}
        for j in ordered:
            if j.mimic is not None and j.mimic[0] not in names:
                raise ValueError(f"joint {j.name!r}: mimics unknown joint {j.mimic[0]!r}")
        #: joints whose position is an input (movable, not mimic), in URDF document order
        self.position_joints = [j.name for j in joints if j.type != "fixed" and j.mimic is None]
        # origin translation, quaternion (x, y, z, w) and axis as floats, for the fast path
        self._origin_pq = {j.name: (tuple(float(v) for v in j.origin[:3, 3]),
                                    tuple(float(v) for v in rm.quat_from_matrix(j.origin[:3, :3],
                                                                                 tol=1e-6)),
                                    j.origin[:3, :3] @ j.axis)
                           for j in ordered}

    def static_transforms(self) -> list[tuple[str, str, np.ndarray]]:
        """``(parent, child, 4x4)`` of every fixed joint (``/tf_static``)."""
        return [(j.parent, j.child, j.origin.copy()) for j in self.joints if j.type == "fixed"]

    @staticmethod
    def joint_position(joint: UrdfJoint, positions: Mapping[str, float]) -> float:
        """Position of ``joint`` at ``positions`` (name -> rad or m); a mimic joint follows its
        source, ``multiplier * q_source + offset``."""
        if joint.mimic is not None:
            src, mult, off = joint.mimic
            if src not in positions:
                raise ValueError(f"joint {src!r} (mimicked by {joint.name!r}) has no position")
            return mult * float(positions[src]) + off
        if joint.name not in positions:
            raise ValueError(f"joint {joint.name!r} has no position")
        return float(positions[joint.name])

    def moving_transforms(self, positions: Mapping[str, float]) -> list[tuple[str, str,
                                                                               np.ndarray]]:
        """``(parent, child, 4x4)`` of every movable joint at ``positions`` (name -> rad or m);
        every joint of :attr:`position_joints` must be given."""
        out = []
        for j in self.joints:
            if j.type == "fixed":
                continue
            x = self.joint_position(j, positions)
            m = np.eye(4)
            if j.type == "prismatic":
                m[:3, 3] = j.axis * x
            else:
                m[:3, :3] = axis_angle_matrix(j.axis, x)
            out.append((j.parent, j.child, j.origin @ m))
        return out

    def moving_transforms_pq(self, positions: Mapping[str, float]) -> list[tuple]:
        """Like :meth:`moving_transforms` but as ``(parent, child, (x, y, z), (qx, qy, qz,
        qw))`` computed in closed form (origin quaternion times the joint's axis-angle
        quaternion): the fast path of the recorder, without matrix checks."""
        out = []
        for j in self.joints:
            if j.type == "fixed":
                continue
            x = self.joint_position(j, positions)
            p, q0, axis_parent = self._origin_pq[j.name]
            if j.type == "prismatic":
                p = (p[0] + axis_parent[0] * x, p[1] + axis_parent[1] * x,
                     p[2] + axis_parent[2] * x)
                q = q0
            else:
                s, c = math.sin(0.5 * x), math.cos(0.5 * x)
                bx, by, bz, bw = j.axis[0] * s, j.axis[1] * s, j.axis[2] * s, c
                ax, ay, az, aw = q0
                q = (aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz)
            out.append((j.parent, j.child, p, q))
        return out

    def link_poses(self, positions: Mapping[str, float],
                   root_pose: Any = None) -> dict[str, np.ndarray]:
        """Pose (4x4) of every link in the frame of ``root_pose`` (default: the root link)."""
        poses = {self.root: np.eye(4) if root_pose is None else np.asarray(root_pose, float)}
        rel = {c: (p, T) for p, c, T in self.static_transforms()
               + self.moving_transforms(positions)}
        for j in self.joints:
            p, T = rel[j.child]
            poses[j.child] = poses[p] @ T
        return poses
