"""Parameter tables of the nodes: ``name: (default, description, check)``, flat ROS parameter
names.  They are the scenario model's (:mod:`vm_dynamics.config.spec`), named here for the
nodes: :data:`ROBOT_PARAMETERS` shared by both nodes, :data:`DYNAMICS_PARAMETERS` the dynamics
node's, :data:`CONTROLLER_PARAMETERS` the controller node's.  :func:`unknown_parameter_warning`
reports the names a node was given that no table has (ROS itself ignores them silently).
"""
from __future__ import annotations

from pathlib import Path

from ..config.params import flatten
from ..config.spec import (
    CONTROLLER_PARAMETERS,
    DYNAMICS_BACKENDS,
    DYNAMICS_NODE_PARAMETERS,
    DYNAMICS_PARAMETERS,
    OPEN_SECTIONS,
    ROBOT_PARAMETERS,
    SCENARIO_FILE_PARAMETERS,
    unknown_parameter_text,
    unknown_parameters,
)

__all__ = ["ROBOT_PARAMETERS", "DYNAMICS_PARAMETERS", "DYNAMICS_BACKENDS", "CONTROLLER_PARAMETERS",
           "DYNAMICS_NODE_PARAMETERS", "command_line_parameters", "unknown_parameter_warning",
           "checked_command_line", "section_parameters"]


#: Names every ROS 2 node has, and sections rclpy declares by itself (``qos_overrides.*``).
ROS_NODE_NAMES = ("use_sim_time", "start_type_description_service")
ROS_OPEN_SECTIONS = ("qos_overrides",)


def command_line_parameters(argv: list, node_name: str) -> tuple[dict, list]:
    """``(overrides, folders)`` of a node's command line: the parameter values its ROS
    arguments give it (``--params-file``, ``-p``; rcl's rules,
    :mod:`vm_dynamics.transport.ros_args`) and the folders of its parameter files, where
    relative file names are looked up first.  A command line the transport will reject gives
    ``({}, [])`` (the transport says why)."""
    from ..transport import ros_args as rargs
    try:
        ra = rargs.parse_ros_args(argv)
        name, ns = rargs.node_identity(ra, node_name)
        overrides = rargs.parameter_overrides_for(ra, f"{ns.rstrip('/')}/{name}")
    except ValueError:
        return {}, []
    return overrides, [str(Path(f).resolve().parent) for f in ra.params_files]


def unknown_parameter_warning(overrides, declared) -> str | None:
    """The warning for parameters a node was given that are neither its own (``declared``)
    nor in the scenario model (a scenario file is every node's parameter file): one line
    naming each with its nearest valid name and listing the valid names; None if all are
    known.  ROS ignores undeclared parameters; the node says so instead of staying silent."""
    valid = set(declared) | set(SCENARIO_FILE_PARAMETERS) | set(ROS_NODE_NAMES)
    sections = OPEN_SECTIONS + ROS_OPEN_SECTIONS
    unknown = unknown_parameters(overrides, valid, sections)
    if not unknown:
        return None
    return f"{unknown_parameter_text(unknown, valid, sections)}; ignored"


def checked_command_line(argv: list, node_name: str, defaults_of, logger) -> list:
    """The folders of a starting node's parameter files (:func:`command_line_parameters`),
    after warning on ``logger`` about the parameters it was given that neither
    ``defaults_of(overrides)`` (the node's declarations) nor the scenario model know
    (:func:`unknown_parameter_warning`)."""
    overrides, folders = command_line_parameters(argv, node_name)
    warning = unknown_parameter_warning(overrides, defaults_of(overrides))
    if warning:
        logger.warn(warning)
    return folders


def section_parameters(overrides, sections=("forces",)) -> dict:
    """``{name: None}`` for every parameter under one of ``sections`` that ``overrides`` (a
    node's command-line values, flat or nested) hold: the names a node declares (dynamically
    typed) so that it receives them, e.g. ``forces.tether.stiffness``, whose own reader
    (:func:`vm_dynamics.config.forces.model_forces`) checks them."""
    prefixes = tuple(f"{s}." for s in sections)
    return {k: None for k in flatten(overrides or {}) if k.startswith(prefixes)}
