"""What the viewer draws, independent of how it is drawn (numpy only).

* :func:`urdf_visuals`: the ``<visual>`` elements of a URDF (box, cylinder, sphere, mesh) with
  their link, origin and colour.
* :class:`Playback`: poses of every URDF link in a fixed (inertial) frame at a sequence of
  times, plus the end-effector path.  Built sample by sample with :class:`PlaybackBuilder` (from
  a running simulation) or read from a recording with :func:`playback_from_mcap`: any MCAP
  with ``/robot_description`` and the robot's TF (``/tf_static`` and ``/tf``), such as
  ``vm-sim``'s ``trajectory.mcap`` or a ``ros2 bag record`` of the nodes and
  robot_state_publisher.
* :class:`Body`: a free body drawn besides the robot (a capture target): its primitive shape
  and, in a :class:`Playback`, its pose at every sample.  In a recording it is described by a
  ``visualization_msgs/Marker`` on ``/target/marker`` (as the dynamics node publishes it) and
  placed by the TF of the marker's frame.
"""
from __future__ import annotations

import importlib
import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..core.rotations import matrix_from_pose
from ..model.packages import SEARCHED, resolve_resource
from ..model.urdf import origin_transform
from ..ros.urdf_tf import UrdfTree
from . import VIZ_HINT

__all__ = ["Visual", "urdf_visuals", "mesh_problem", "load_mesh", "Playback", "PlaybackBuilder", "playback_from_mcap",
           "default_ee_frame", "Body", "body_from_marker", "body_from_shape", "BODY_TOPICS"]

#: Topics whose ``visualization_msgs/Marker`` describe free bodies in a recording.
BODY_TOPICS = ("/target/marker",)

_DEFAULT_RGBA = (0.7, 0.7, 0.72, 1.0)


@dataclass(frozen=True)
class Visual:
    """One ``<visual>`` of a link: ``kind`` is ``box`` (``size`` = x, y, z), ``cylinder``
    (radius, length; axis z), ``sphere`` (radius,) or ``mesh`` (``size`` = scale, ``mesh`` =
    file); ``origin`` is its pose in the link frame, ``rgba`` its colour in [0, 1]."""

    link: str
    kind: str
    size: tuple
    origin: np.ndarray
    rgba: tuple
    mesh: str | None = None


def _rgba(material: Any, named: Mapping[str, tuple], what: str) -> tuple:
    if material is None:
        return _DEFAULT_RGBA
    color = material.find("color")
    if color is not None and color.get("rgba"):
        try:
            vals = tuple(float(v) for v in color.get("rgba").split())
        except ValueError:
            raise ValueError(f"{what}: material colour is not numeric") from None
        if len(vals) != 4:
            raise ValueError(f"{what}: material rgba needs 4 values")
        return tuple(min(max(v, 0.0), 1.0) for v in vals)
    return named.get(material.get("name"), _DEFAULT_RGBA)


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def mesh_problem(path: str) -> str | None:
    """Why the mesh file ``path`` cannot be read here (a missing optional reader), or None.
    trimesh reads STL, OBJ and PLY itself; COLLADA (``.dae``) needs pycollada."""
    if not _importable("trimesh"):
        return f"trimesh is not installed ({VIZ_HINT})"
    if Path(path).suffix.lower() == ".dae" and not _importable("collada"):
        return "COLLADA (.dae) meshes need pycollada (pip install pycollada)"
    return None


def load_mesh(visual: Visual):
    """The trimesh of a mesh :class:`Visual`, scaled; raises ValueError naming the file if it
    cannot be read."""
    import trimesh
    try:
        mesh = trimesh.load(visual.mesh, force="mesh")
        mesh.apply_scale(np.asarray(visual.size))
    except Exception as exc:  # noqa: BLE001 - any reader error is "unreadable"
        raise ValueError(f"mesh {visual.mesh!r}: cannot be read "
                         f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") \
            from None
    if len(mesh.faces) == 0:
        raise ValueError(f"mesh {visual.mesh!r}: no triangles")
    return mesh


def _shapes(parent: ET.Element, tag: str, lname: str, named: Mapping[str, tuple],
            base: Path | None, rgba_default: tuple | None = None):
    """``[(what, Visual or None, problem)]`` for the ``<visual>`` or ``<collision>`` elements
    of a link: a drawable Visual and no problem, or None and why (a mesh that cannot be found
    or read, a geometry that is not drawn).  Malformed elements raise ValueError."""
    out = []
    for k, el in enumerate(parent.findall(tag)):
        what = f"link {lname!r} {tag} {k}"
        geom = el.find("geometry")
        if geom is None or len(geom) == 0:
            raise ValueError(f"{what}: no <geometry>")
        shape = geom[0]
        origin = origin_transform(el.find("origin"), what)
        material = el.find("material")
        rgba = (_rgba(material, named, what) if material is not None or rgba_default is None
                else rgba_default)

        def floats(attr, n, default=None):
            text = shape.get(attr, default)
            try:
                vals = tuple(float(v) for v in (text or "").split())
            except ValueError:
                raise ValueError(f"{what}: {shape.tag} {attr} is not numeric") from None
            if len(vals) != n or not all(math.isfinite(v) and v >= 0 for v in vals):
                raise ValueError(f"{what}: {shape.tag} {attr} needs {n} finite "
                                 f"non-negative values, got {text!r}")
            return vals

        if shape.tag == "box":
            out.append((what, Visual(lname, "box", floats("size", 3), origin, rgba), None))
        elif shape.tag == "cylinder":
            out.append((what, Visual(lname, "cylinder", floats("radius", 1) +
                                     floats("length", 1), origin, rgba), None))
        elif shape.tag == "sphere":
            out.append((what, Visual(lname, "sphere", floats("radius", 1), origin, rgba), None))
        elif shape.tag == "mesh":
            fname = shape.get("filename", "")
            scale = floats("scale", 3, "1 1 1")
            path = resolve_resource(fname, base)
            if path is None:
                out.append((what, None, ("not found", fname)))
                continue
            problem = mesh_problem(path)
            if problem is not None:
                out.append((what, None, (problem, fname)))
                continue
            out.append((what, Visual(lname, "mesh", scale, origin, rgba, path), None))
        else:
            out.append((what, None, (f"geometry <{shape.tag}> is not drawn", shape.tag)))
    return out


def _mesh_warning(problems: list, substituted: list, dropped: list) -> str:
    """One line for every visual that could not be drawn: how many, why (with an example
    file), which links show their collision shapes instead and which show nothing."""
    reasons: dict[str, list[str]] = {}
    for reason, name in problems:
        reasons.setdefault(reason, []).append(name)
    why = []
    for reason, names in reasons.items():
        if reason == "not found":
            reason = f"not found (searched {SEARCHED}, and relative to the URDF)"
        why.append(f"{len(names)}: {reason}, e.g. {names[0]!r}" if len(names) > 1 else
                   f"{names[0]!r}: {reason}")
    n = len(problems)
    line = f"{n} visual{'s' if n > 1 else ''} cannot be drawn ({'; '.join(why)})"
    if substituted:
        line += f"; drawn with their collision shapes instead: links {', '.join(substituted)}"
    if dropped:
        line += f"; not drawn: links {', '.join(dropped)}"
    return line


def urdf_visuals(urdf_xml: str, base_dir: str | os.PathLike | None = None
                 ) -> tuple[list[Visual], list[str]]:
    """The visuals of every link and the warnings for those that cannot be drawn.

    A visual that cannot be drawn (a mesh file that is not found, a COLLADA mesh without
    pycollada) is replaced by the link's ``<collision>`` shapes that can be, so the robot
    keeps its shape; all such cases make a single warning line.  ``package://`` names are
    resolved like the URDF loader does (:mod:`vm_dynamics.model.packages`), relative ones
    against ``base_dir``."""
    try:
        robot = ET.fromstring(urdf_xml)
    except ET.ParseError as exc:
        raise ValueError(f"robot_description: not valid XML: {exc}") from None
    named = {}
    for m in robot.findall("material"):
        if m.get("name"):
            named[m.get("name")] = _rgba(m, {}, f"material {m.get('name')!r}")
    out: list[Visual] = []
    problems, substituted, dropped = [], [], []
    base = Path(base_dir) if base_dir is not None else None
    for link in robot.findall("link"):
        lname = link.get("name")
        visuals = _shapes(link, "visual", lname, named, base)
        failed = [problem for _, v, problem in visuals if v is None]
        out += [v for _, v, _ in visuals if v is not None]
        if not failed:
            continue
        problems += failed
        first = next((el for el in link.findall("visual")), None)
        rgba = _rgba(first.find("material") if first is not None else None, named,
                     f"link {lname!r} visual 0")
        collisions = [v for _, v, _ in _shapes(link, "collision", lname, named, base, rgba)
                      if v is not None]
        if collisions:
            out += collisions
            substituted.append(lname)
        elif len(failed) == len(visuals):
            dropped.append(lname)
    warnings = [_mesh_warning(problems, substituted, dropped)] if problems else []
    return out, warnings


@dataclass(frozen=True)
class Body:
    """A free body drawn besides the robot: ``frame`` (its TF frame), ``kind`` ``box`` (``size``
    = x, y, z), ``sphere`` (radius,) or ``cylinder`` (radius, length; axis z), ``origin`` the
    shape's pose in the body frame, ``rgba`` its colour."""

    frame: str
    kind: str
    size: tuple
    origin: np.ndarray
    rgba: tuple

    def visual(self) -> Visual:
        """The shape as a :class:`Visual` of a link named like the frame."""
        return Visual(self.frame, self.kind, self.size, self.origin, self.rgba)


#: visualization_msgs/Marker types drawn as bodies (CUBE, SPHERE, CYLINDER).
_MARKER_KINDS = {1: "box", 2: "sphere", 3: "cylinder"}


def body_from_marker(msg: Any) -> Body:
    """The :class:`Body` a ``visualization_msgs/Marker`` (CUBE, SPHERE or CYLINDER) draws in its
    ``header.frame_id``; ValueError naming the field for anything else."""
    kind = _MARKER_KINDS.get(int(msg.type))
    if kind is None:
        raise ValueError(f"Marker.type {int(msg.type)}: only CUBE (1), SPHERE (2) and "
                         f"CYLINDER (3) are drawn as bodies")
    if not msg.header.frame_id:
        raise ValueError("Marker.header.frame_id: empty (the body's frame is needed)")
    sc = np.array([msg.scale.x, msg.scale.y, msg.scale.z], dtype=float)
    if not np.all(np.isfinite(sc)) or np.any(sc <= 0):
        raise ValueError(f"Marker.scale: expected positive sizes, got {sc.tolist()}")
    size = {"box": tuple(float(x) for x in sc), "sphere": (0.5 * float(sc[0]),),
            "cylinder": (0.5 * float(sc[0]), float(sc[2]))}[kind]
    pose, o = msg.pose, msg.pose.orientation
    quat = [o.x, o.y, o.z, o.w] if any((o.x, o.y, o.z, o.w)) else [0.0, 0.0, 0.0, 1.0]
    origin = matrix_from_pose([pose.position.x, pose.position.y, pose.position.z], quat)
    c = msg.color
    rgba = tuple(min(max(float(v), 0.0), 1.0) for v in (c.r, c.g, c.b, c.a))
    return Body(msg.header.frame_id, kind, size, origin, rgba if rgba[3] > 0 else
                (*rgba[:3], 1.0))


def body_from_shape(frame: str, shape: Any, origin=None,
                    rgba=(0.55, 0.6, 0.75, 0.9)) -> Body:
    """The :class:`Body` of a capture shape (``kind`` box with ``size``, sphere with
    ``radius``, cylinder or capsule with ``radius`` and ``length``; a capsule is drawn as the
    cylinder of its full length)."""
    kind = shape.kind
    if kind == "box":
        size = tuple(float(x) for x in shape.size)
    elif kind == "sphere":
        size = (float(shape.radius),)
    elif kind in ("cylinder", "capsule"):
        extra = 2 * shape.radius if kind == "capsule" else 0.0
        size, kind = (float(shape.radius), float(shape.length) + extra), "cylinder"
    else:
        raise ValueError(f"body {frame!r}: shape {kind!r} is not drawn")
    return Body(frame, kind, size, np.eye(4) if origin is None else np.asarray(origin, float),
                tuple(rgba))


def default_ee_frame(tree: UrdfTree) -> str:
    """``ee_link`` if the URDF has it, else the last leaf link in depth-first order."""
    if "ee_link" in tree.links:
        return "ee_link"
    parents = {j.parent for j in tree.joints}
    leaves = [j.child for j in tree.joints if j.child not in parents]
    return leaves[-1] if leaves else tree.root


@dataclass
class Playback:
    """Link poses over time: ``poses[k, i]`` is the 4x4 pose of ``links[i]`` in
    ``fixed_frame`` at ``t[k]`` (s).  ``urdf`` is the robot description it belongs to."""

    t: np.ndarray
    links: list
    poses: np.ndarray
    urdf: str
    fixed_frame: str = "odom"
    ee_frame: str | None = None
    meta: dict = field(default_factory=dict)
    #: free bodies (:class:`Body`) and their poses ``body_poses[k, j]`` in ``fixed_frame``
    #: (NaN where a body's pose is unknown at a sample: not drawn there)
    bodies: list = field(default_factory=list)
    body_poses: np.ndarray | None = None

    def __post_init__(self):
        self.t = np.asarray(self.t, dtype=float)
        self.poses = np.asarray(self.poses, dtype=float)
        self.body_poses = np.zeros((self.t.size, 0, 4, 4)) if self.body_poses is None else \
            np.asarray(self.body_poses, dtype=float)
        if self.body_poses.shape != (self.t.size, len(self.bodies), 4, 4):
            raise ValueError(f"Playback: body_poses must have shape ({self.t.size}, "
                             f"{len(self.bodies)}, 4, 4), got {self.body_poses.shape}")
        if self.t.ndim != 1 or self.t.size == 0:
            raise ValueError("Playback: t must be a non-empty 1-D array")
        if self.poses.shape != (self.t.size, len(self.links), 4, 4):
            raise ValueError(f"Playback: poses must have shape ({self.t.size}, "
                             f"{len(self.links)}, 4, 4), got {self.poses.shape}")
        if self.ee_frame is not None and self.ee_frame not in self.links:
            raise ValueError(f"Playback: end-effector frame {self.ee_frame!r} is not a link; "
                             f"links are {', '.join(self.links)}")

    def __len__(self) -> int:
        return self.t.size

    def index(self, time: float) -> int:
        """Index of the last sample at or before ``time`` (clamped to the range)."""
        k = int(np.searchsorted(self.t, float(time), side="right")) - 1
        return min(max(k, 0), self.t.size - 1)

    def at(self, k: int) -> dict:
        """``{link: 4x4}`` at sample ``k``."""
        return {name: self.poses[k, i] for i, name in enumerate(self.links)}

    def bodies_at(self, k: int) -> dict:
        """``{body frame: 4x4}`` at sample ``k`` (NaN: unknown there)."""
        return {b.frame: self.body_poses[k, j] for j, b in enumerate(self.bodies)}

    def ee_path(self) -> np.ndarray:
        """(K, 3) positions of the end-effector frame (empty without one)."""
        if self.ee_frame is None:
            return np.zeros((0, 3))
        return self.poses[:, self.links.index(self.ee_frame), :3, 3].copy()


class PlaybackBuilder:
    """Collects link poses from simulation samples at most ``max_rate`` per simulated second
    (the first sample at or after each grid time), computed from the URDF's joint tree."""

    def __init__(self, urdf: str | os.PathLike, joint_names, max_rate: float | None = 30.0,
                 ee_frame: str | None = None, fixed_frame: str = "odom"):
        if max_rate is not None and not (math.isfinite(max_rate) and max_rate > 0):
            raise ValueError(f"max_rate must be a finite positive number, got {max_rate!r}")
        self.tree = UrdfTree(urdf)
        self.names = [str(n) for n in joint_names]
        missing = [j for j in self.tree.position_joints if j not in self.names]
        if missing:
            raise ValueError(f"joint_names lack the URDF joints {missing}")
        self.ee_frame = ee_frame or default_ee_frame(self.tree)
        if self.ee_frame not in self.tree.links:
            raise ValueError(f"end-effector frame {self.ee_frame!r} is not a link of the URDF")
        self.max_rate = max_rate
        self.fixed_frame = fixed_frame
        self.bodies: list[Body] = []
        self._body_poses: list = []
        self._t, self._poses = [], []
        self._slot = None
        self._t0 = None

    def link_poses(self, g, q) -> dict:
        """``{link: 4x4}`` in the fixed frame for base pose ``g`` and joint positions ``q``."""
        return self.tree.link_poses(dict(zip(self.names, np.asarray(q, float))),
                                    root_pose=np.asarray(g, float))

    def add_body(self, body: Body) -> None:
        """Draw ``body`` too; its pose comes with each sample (:meth:`add`'s ``bodies``)."""
        if self._t:
            raise ValueError("add_body: add the bodies before the first sample")
        self.bodies.append(body)

    def add(self, t: float, g, q, bodies: Mapping | None = None) -> dict | None:
        """Offer a sample (``bodies``: ``{body frame: 4x4}`` of the bodies added); returns its
        link poses if it was kept, else None."""
        t = float(t)
        if self._t0 is None:
            self._t0 = t
        if self.max_rate is not None:
            slot = math.floor((t - self._t0) * self.max_rate + 1e-9)
            if slot == self._slot:
                return None
            self._slot = slot
        poses = self.link_poses(g, q)
        self._t.append(t)
        self._poses.append(np.stack([poses[name] for name in self.tree.links]))
        nan = np.full((4, 4), np.nan)
        self._body_poses.append(np.stack(
            [np.asarray((bodies or {}).get(b.frame, nan), float) for b in self.bodies])
            if self.bodies else np.zeros((0, 4, 4)))
        return poses

    def playback(self) -> Playback:
        """The samples kept so far."""
        if not self._t:
            raise ValueError("no sample was collected")
        return Playback(np.array(self._t), list(self.tree.links), np.stack(self._poses),
                        self.tree.xml, self.fixed_frame, self.ee_frame,
                        bodies=list(self.bodies), body_poses=np.stack(self._body_poses))


def _mcap_file(path: str | os.PathLike) -> Path:
    p = Path(path)
    if p.is_dir():  # a rosbag2 directory: metadata.yaml + one .mcap
        files = sorted(p.glob("*.mcap"))
        if len(files) != 1:
            raise ValueError(f"{p}: expected one .mcap file in the bag directory, found "
                             f"{len(files)}")
        return files[0]
    if not p.is_file():
        raise ValueError(f"{p}: no such recording")
    return p


# complexity: one branch per recorded topic and per malformed-recording rejection
def _read_tf_messages(f):
    """``(description, static, groups, bodies)`` of the MCAP file ``f``: the first
    ``/robot_description``, the ``/tf_static`` transforms by child frame, the ``/tf``
    transforms grouped by log time (``[(log_time, [(parent, child, T), ...]), ...]``) and the
    free bodies of the :data:`BODY_TOPICS` markers (the first marker of each frame)."""
    from mcap.exceptions import McapError
    from mcap.reader import make_reader

    from ..ros import messages as rm

    description = None
    static: dict[str, tuple[str, np.ndarray]] = {}
    groups: list[tuple[int, list]] = []   # (log_time, [(parent, child, T), ...])
    bodies: dict[str, Body] = {}
    try:
        with open(f, "rb") as fh:
            reader = make_reader(fh)
            for schema, channel, message in reader.iter_messages(
                    topics=["/robot_description", "/tf_static", "/tf", *BODY_TOPICS]):
                if channel.message_encoding != "cdr" or schema is None:
                    continue
                if channel.topic == "/robot_description":
                    if description is None:
                        description = rm.deserialize(message.data, schema.name).data
                    continue
                if channel.topic in BODY_TOPICS:
                    body = body_from_marker(rm.deserialize(message.data, schema.name))
                    bodies.setdefault(body.frame, body)
                    continue
                tfs = [(tr.parent, tr.child, tr.g) for tr in (
                    rm.parse_tf(rm.deserialize(message.data, schema.name)))]
                if channel.topic == "/tf_static":
                    for parent, child, T in tfs:
                        static[child] = (parent, T)
                elif groups and groups[-1][0] == message.log_time:
                    groups[-1][1].extend(tfs)
                else:
                    groups.append((message.log_time, tfs))
    except (McapError, OSError, EOFError) as exc:
        raise ValueError(f"{f}: cannot read the MCAP file: {exc}") from None
    return description, static, groups, list(bodies.values())


def _poses_in_root(links, current):
    """The pose of each of ``links`` in the root of the transforms ``current``
    (``{child: (parent, T)}``), and the set of roots reached (one for a connected tree)."""
    world: dict[str, np.ndarray] = {}
    roots: set = set()

    def pose(frame, seen=()):
        if frame in world:
            return world[frame]
        if frame not in current or frame in seen:   # a root of the TF tree (or a cycle)
            roots.add(frame)
            world[frame] = np.eye(4)
            return world[frame]
        parent, T = current[frame]
        world[frame] = pose(parent, seen + (frame,)) @ T
        return world[frame]

    return [pose(link) for link in links], roots


def playback_from_mcap(path: str | os.PathLike, max_rate: float | None = 30.0,  # noqa: C901
                       ee_frame: str | None = None) -> Playback:
    """Read a recording: the robot from ``/robot_description`` (std_msgs/String), the link
    poses from ``/tf_static`` and ``/tf`` (TF messages with the same log time form one
    sample), kept at most ``max_rate`` samples per second.  Link poses are expressed in the
    root of the TF tree (e.g. ``odom``).  Raises ValueError naming what is missing."""
    f = _mcap_file(path)
    description, static, groups, bodies = _read_tf_messages(f)
    if description is None:
        raise ValueError(f"{f}: no /robot_description in the recording (vm-sim writes it; "
                         f"with ros2 bag record, record /robot_description too)")
    tree = UrdfTree(description)
    ee = ee_frame or default_ee_frame(tree)
    if ee not in tree.links:
        raise ValueError(f"end-effector frame {ee!r} is not a link of the robot description")
    if not groups and not static:
        raise ValueError(f"{f}: no /tf or /tf_static messages")
    if not groups:
        groups = [(0, [])]
    current: dict[str, tuple[str, np.ndarray]] = dict(static)
    times, poses, body_poses = [], [], []
    slot_prev, t0 = None, None
    fixed = None
    missing: set = set(tree.links)
    for log_time, tfs in groups:
        for parent, child, T in tfs:
            current[child] = (parent, T)
        t = log_time * 1e-9
        if t0 is None:
            t0 = t
        if max_rate is not None:
            slot = math.floor((t - t0) * max_rate + 1e-9)
            if slot == slot_prev:
                continue
        lacking = {lk for lk in tree.links if lk != tree.root and lk not in current}
        if lacking:
            missing = lacking
            continue
        stack, roots = _poses_in_root(tree.links, current)
        if len(roots) != 1:
            missing = {f"(several fixed frames: {', '.join(sorted(roots))})"}
            continue
        if max_rate is not None:
            slot_prev = slot
        fixed = next(iter(roots))
        times.append(t)
        poses.append(np.stack(stack))
        body_poses.append(_body_poses(bodies, current, roots))
    if not times:
        raise ValueError(f"{f}: the TF never connects every link of the robot description to "
                         f"one fixed frame (no transform for: {', '.join(sorted(missing))})")
    return Playback(np.array(times), list(tree.links), np.stack(poses), tree.xml,
                    fixed, ee, meta={"file": str(f)}, bodies=bodies,
                    body_poses=np.stack(body_poses))


def _body_poses(bodies, current, roots) -> np.ndarray:
    """(len(bodies), 4, 4) poses of the bodies' frames in the robot's fixed frame (NaN for a
    body whose frame is not connected to it)."""
    out = np.full((len(bodies), 4, 4), np.nan)
    for j, b in enumerate(bodies):
        if b.frame in current:
            (T,), r = _poses_in_root([b.frame], current)
            if r == roots:
                out[j] = T
    return out
