"""The robot of a node: model, force elements, joint order and frame names, from node
parameters."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..config.forces import model_forces
from ..config.params import flatten, parameter_defaults
from ..config.scenario import find_file
from ..config.spec import ROBOT_PARAMETERS, checked_values
from ..model.model import load_model
from ..model.mounting import effective_urdf, kinematic_urdf, model_options
from ..model.packages import resolve_resource
from ..model.urdf import DEFAULT_XACRO, read_urdf_source
from ..model.xacro_expansion import xacro_mode
from ..ros.fields import duplicate_names

__all__ = ["Robot", "load_robot", "robot_descriptions", "ros_resource_uris", "on_ament_index"]


@dataclass
class Robot:
    """The model plus the naming the nodes need."""

    model: Any
    hydrodynamics: Any
    joints: list           # command order (``joints`` parameter)
    joint_index: np.ndarray  # model index of each command entry
    odom_frame: str
    base_frame: str
    source: str            # where the URDF came from (for messages)
    urdf_xml: str = ""     # the (xacro-expanded) URDF text
    #: the force elements the dynamics node integrates and the controller node compensates
    #: (:func:`vm_dynamics.config.forces.model_forces`: ``forces``, ``two_body``, the
    #: hydrodynamics; uniform gravity is in the model)
    forces: tuple = ()


_FILENAME = re.compile(r"""(\bfilename\s*=\s*)(["'])(.*?)\2""")


def on_ament_index(pkg: str) -> bool:
    """True if ROS 2 tools (RViz's ``package://`` lookup, ``ros2 pkg``) find package ``pkg``:
    a prefix of ``AMENT_PREFIX_PATH`` registers it in ``share/ament_index``."""
    marker = os.path.join("share", "ament_index", "resource_index", "packages", pkg)
    return any(os.path.isfile(os.path.join(d, marker))
               for d in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if d)


def ros_resource_uris(urdf_xml: str, base_dir=None) -> str:
    """``urdf_xml`` with every resource (``<mesh filename>``, ``<texture filename>``) named so
    that RViz finds it: ``package://PKG/...`` stays when ``PKG`` is on the ament index
    (:func:`on_ament_index`); otherwise -- e.g. ``example-robot-data`` installed by pip, under
    a ``cmeel.prefix`` folder RViz does not search -- it becomes the ``file://`` URI of the
    file the project's resolver finds (:func:`~vm_dynamics.model.packages.resolve_resource`),
    as do plain paths (relative ones against ``base_dir``, the URDF file's folder).  Names
    that resolve to no file are left as they are (the viewer reports them)."""
    def uri(m):
        name = m.group(3)
        if name.startswith("package://"):
            pkg = name[len("package://"):].partition("/")[0]
            if on_ament_index(pkg):
                return m.group(0)
        elif name.startswith("file://") or "://" in name:
            return m.group(0)
        found = resolve_resource(name, base_dir)
        if found is None:
            return m.group(0)
        return f"{m.group(1)}{m.group(2)}{Path(found).resolve().as_uri()}{m.group(2)}"
    return _FILENAME.sub(uri, urdf_xml)


def robot_descriptions(params: Mapping[str, Any], folders=()) -> tuple[str, str]:
    """``(for the nodes, for robot_state_publisher)`` from scenario or node parameters with a
    ``robot_description_file`` (a ``package://`` URI, or relative to one of ``folders`` -- the
    scenario file's -- else to the package's ``urdf/``: :func:`~vm_dynamics.config.scenario.find_file`):
    the xacro-expanded URDF the nodes take together with the ``vehicle``/``locked_joints``
    parameters, and the URDF of the model they build (vehicle spliced in, locked joints fixed;
    :func:`~vm_dynamics.model.mounting.effective_urdf`), which robot_state_publisher and RViz
    need, without the root link's inertia that KDL rejects
    (:func:`~vm_dynamics.model.mounting.kinematic_urdf`).  The launch files use it, so that all
    three agree on the robot.  The file is expanded as ``robot_description_xacro`` says,
    ``safe`` unless the parameters say ``full`` (:mod:`vm_dynamics.model.xacro_expansion`), as
    the nodes do.  Its mesh names are URIs RViz can open (:func:`ros_resource_uris`)."""
    p = flatten(params)
    path = find_file(p.get("robot_description_file"), "robot_description_file", folders)
    xml, _ = read_urdf_source(str(path), xacro=xacro_mode(
        p.get("robot_description_xacro", DEFAULT_XACRO), "robot_description_xacro"))
    opts = model_options(p)
    effective = effective_urdf(xml, **opts) if opts["locked_joints"] or opts["vehicle"] else xml
    return xml, ros_resource_uris(kinematic_urdf(effective), Path(path).parent)


def load_robot(params: Mapping[str, Any], folders=()) -> Robot:
    """Model, force elements and frame/joint names from (flat) node parameters; relative file
    names are looked up in ``folders`` (those of the parameter files) first
    (:func:`~vm_dynamics.config.scenario.find_file`)."""
    p = parameter_defaults(ROBOT_PARAMETERS)
    p.update(flatten(params))
    p = checked_values(p, ROBOT_PARAMETERS)
    gravity, base, xml = p["gravity"], p["base_type"], p["robot_description"]
    if xml.strip():
        source = "robot_description"
    elif p["robot_description_file"]:
        path = find_file(p["robot_description_file"], "robot_description_file", folders)
        xml, source = read_urdf_source(str(path), xacro=p["robot_description_xacro"])
    else:
        raise ValueError("no robot: set robot_description (URDF XML) or robot_description_file")
    opts = model_options(p)
    model = load_model(xml, base=base, gravity=gravity, **opts)
    if opts["locked_joints"] or opts["vehicle"]:   # the URDF of that model, for viewers
        xml = effective_urdf(xml, **opts)
    model, forces, hydro = model_forces(model, p, folders)     # as vm-sim reads them
    joints = list(p["joints"] or model.joint_names)
    unknown = [j for j in joints if j not in model.joint_names]
    if unknown:
        raise ValueError(f"joints: unknown joint(s) {unknown}; the URDF's joints are "
                         f"{model.joint_names}")
    dup = duplicate_names(joints)
    if dup:
        raise ValueError(f"joints: duplicate joint(s) {dup}")
    index = np.array([model.joint_names.index(j) for j in joints], dtype=int)
    odom = p["odom_frame"]
    base_frame = p["base_frame"] or model.vehicle_link
    if not odom or odom == base_frame:
        raise ValueError(f"odom_frame {odom!r} must be non-empty and differ from base_frame "
                         f"{base_frame!r}")
    return Robot(model, hydro, joints, index, odom, base_frame, source, xml, forces)
