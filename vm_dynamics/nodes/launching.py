"""What the launch files (launch/*.launch.py) share: the decisions they make from their
arguments and the scenario, as plain functions (the unit tests check them without ROS), and the
wiring they have in common -- the arguments they declare alike, the scenario's lookup,
robot_state_publisher, RViz, vm_dynamics' own nodes and the inclusion of another launch file --
so that each launch file says only what differs.

The wiring imports ``launch``, ``launch_ros`` and ``ament_index_python`` when called, not at
import: this module stays importable without ROS.  A bad argument or scenario raises a
``RuntimeError`` naming it (what ``ros2 launch`` reports as the launch's failure).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["launch_lockstep", "parse_bool_argument", "launch_scenario", "rviz_fixed_frame",
           "PACKAGE", "ARGUMENTS", "declare", "argument", "bool_argument", "scenario_argument",
           "share", "string_parameter", "vm_node", "robot_state_publisher", "rviz", "include",
           "scenario_launch_description", "node_parameters_yaml", "composed_node"]

#: the ROS package of the nodes, launch files, RViz configs and scenarios
PACKAGE = "vm_dynamics"

#: ``{name: (default, description, choices)}`` of the launch arguments several launch files
#: declare alike; :func:`declare` takes a file's own default or description instead
ARGUMENTS = {
    "scenario": ("spacecraft_arm", "scenario name (config/<name>.yaml) or YAML path", None),
    "rviz": ("true", "start RViz", ["true", "false"]),
    "use_sim_time": ("true", "controller, robot_state_publisher and RViz follow /clock",
                     ["true", "false"]),
    "real_time_factor": ("", "simulated s per wall s; empty: the scenario's", None),
    "path_length": ("3000", "poses kept in the ee_path and base_path trails", None),
    "composed": ("false", "run dynamics_node and controller_node in one process "
                 "(composed_nodes: one executor, in-process delivery between them)",
                 ["true", "false"]),
}


def parse_bool_argument(text: str, name: str) -> bool:
    """``true``/``false`` (any case, surrounding blanks ignored) of launch argument ``name``."""
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"{name}:={text!r}: expected true or false")
    return value == "true"


def launch_lockstep(argument: str, scenario: Mapping[str, Any], controller_started: bool) -> bool:
    """Whether ``sim.launch.py`` runs the dynamics and controller nodes in lockstep.

    ``argument`` (the ``lockstep`` launch argument) wins when given; else the scenario's
    ``lockstep`` parameter; else lockstep exactly when the launch starts the controller node.
    Lockstep is the default of the closed loop because it makes the loop the same on any
    machine: the command for the state at step k gates the steps after k, so a slow or busy
    machine runs the simulation slower than real time instead of closing the loop over a delay
    (free-running, a computed-torque law on a state 0.2 s old each way diverged spacecraft_arm
    within 5 s).  The dynamics node still paces lockstep to ``real_time_factor``.
    """
    if argument.strip():
        return parse_bool_argument(argument, "lockstep")
    if "lockstep" in scenario:
        value = scenario["lockstep"]
        if not isinstance(value, bool):
            raise ValueError(f"scenario parameter lockstep: expected true or false, got "
                             f"{value!r}")
        return value
    return bool(controller_started)


def launch_scenario(scenario: str) -> tuple[str, dict, str, str]:
    """``(path, parameters, node URDF, model URDF)`` of a scenario name or YAML path: the
    library's lookup and bounded reader (:func:`vm_dynamics.config.scenario.scenario_path`,
    :func:`~vm_dynamics.config.params.read_params_file`), as vm-sim and the nodes read it; the
    URDF the nodes take and the URDF of the model they build
    (:func:`~vm_dynamics.nodes.robot.robot_descriptions`), its file looked up next to the
    scenario first.  ``ValueError`` naming the problem."""
    from ..config.params import read_params_file
    from ..config.scenario import scenario_path
    from .robot import robot_descriptions
    path = scenario_path(scenario)
    params = read_params_file(path)
    node_urdf, model_urdf = robot_descriptions(params, [str(Path(path).resolve().parent)])
    return str(path), params, node_urdf, model_urdf


def rviz_fixed_frame(scenario: Mapping[str, Any]) -> str:
    """RViz's fixed frame for a scenario's parameters: the root of the dynamics node's TF —
    ``lvlh`` in orbit with ``world_frame: lvlh`` (the node publishes /odom and TF relative to
    the LVLH frame, and there is no ``odom`` frame), else ``odom_frame`` (default ``odom``)."""
    if scenario.get("world_frame") == "lvlh":
        return "lvlh"
    return str(scenario.get("odom_frame") or "odom")


# ------------------------------------------------------------------ launch wiring
def declare(name: str, default: str | None = None, description: str | None = None,
            choices: list | None = None):
    """``DeclareLaunchArgument`` of ``name``: :data:`ARGUMENTS`' default, description and
    choices unless given (any argument that is not there needs ``default`` and
    ``description``)."""
    from launch.actions import DeclareLaunchArgument
    base_default, base_description, base_choices = ARGUMENTS.get(name, (None, None, None))
    return DeclareLaunchArgument(
        name, default_value=base_default if default is None else default,
        description=base_description if description is None else description,
        choices=base_choices if choices is None else choices)


def argument(context, name: str) -> str:
    """The text of launch argument ``name`` in ``context``."""
    from launch.substitutions import LaunchConfiguration
    return LaunchConfiguration(name).perform(context)


def bool_argument(context, name: str) -> bool:
    """Launch argument ``name`` as ``true``/``false`` (:func:`parse_bool_argument`)."""
    try:
        return parse_bool_argument(argument(context, name), name)
    except ValueError as exc:
        raise RuntimeError(str(exc)) from None


def scenario_argument(context) -> tuple[str, dict, str, str]:
    """:func:`launch_scenario` of the ``scenario`` argument: ``(path, parameters, node URDF,
    model URDF)``."""
    try:
        return launch_scenario(argument(context, "scenario"))
    except ValueError as exc:
        raise RuntimeError(f"scenario: {exc}") from None


def share(*parts: str) -> str:
    """A path in the package's installed share directory (``launch/``, ``rviz/``,
    ``config/``)."""
    from ament_index_python.packages import get_package_share_directory
    return os.path.join(get_package_share_directory(PACKAGE), *parts)


def string_parameter(text: str):
    """``text`` as a string parameter value (a URDF: not parsed as YAML by launch_ros)."""
    from launch_ros.parameter_descriptions import ParameterValue
    return ParameterValue(text, value_type=str)


def vm_node(executable: str, *parameters, **options):
    """The vm_dynamics node ``executable`` (named as its executable, output on the screen)
    with its ``parameters`` (parameter files and dicts, later ones win)."""
    from launch_ros.actions import Node
    return Node(package=PACKAGE, executable=executable, name=executable, output="screen",
                parameters=list(parameters), **options)


def robot_state_publisher(urdf: str, use_sim_time: bool):
    """robot_state_publisher with ``urdf`` (the model the nodes build, e.g.
    :func:`launch_scenario`'s model URDF) as ``robot_description``.

    It publishes TF for every joint state (``ignore_timestamp``), not only for one stamped
    1/publish_frequency after its last: while the simulation is paused or the measured input
    holds, the dynamics node's heartbeat states advance the stamp by nanoseconds only, and a TF
    listener started meanwhile (RViz, tf2_echo) would never get the arm's frames ("two or more
    unconnected trees"); tf2 drops exact repeats silently."""
    from launch_ros.actions import Node
    return Node(package="robot_state_publisher", executable="robot_state_publisher",
                name="robot_state_publisher", output="screen",
                parameters=[{"robot_description": string_parameter(urdf),
                             "use_sim_time": use_sim_time, "ignore_timestamp": True}])


def node_parameters_yaml(per_node: Mapping[str, Mapping[str, Any]]) -> str:
    """A ROS 2 parameter file (YAML text) with a section per node: ``{node name: {parameter:
    value}}`` -> ``<node name>: {ros__parameters: {...}}``.  What a composed process gets for
    the parameters its nodes would each get in a process of their own (a ``-p`` or a ``/**``
    section applies to every node of a process)."""
    import yaml
    return yaml.dump({name: {"ros__parameters": dict(params)}
                      for name, params in per_node.items()}, default_flow_style=False)


def composed_node(parameter_file: str, per_node: Mapping[str, Mapping[str, Any]]):
    """The ``composed_nodes`` process (:mod:`vm_dynamics.nodes.composed`: dynamics_node and
    controller_node on one executor) with ``parameter_file`` (the scenario, for both nodes)
    and each node's own parameters ``per_node`` (plain values; written to a parameter file
    with a section per node, :func:`node_parameters_yaml`).  No ``name``: a launch node's
    name would rename both nodes."""
    import tempfile

    from launch_ros.actions import Node
    with tempfile.NamedTemporaryFile("w", prefix="vm_dynamics_composed_", suffix=".yaml",
                                     delete=False) as fh:
        fh.write(node_parameters_yaml(per_node))
    return Node(package=PACKAGE, executable="composed_nodes", output="screen",
                parameters=[parameter_file, fh.name])


def rviz(use_sim_time: bool, fixed_frame: str | None = None, config: str = "vm_dynamics.rviz",
         when_argument: bool = True):
    """RViz with ``rviz/<config>`` and, when given, ``fixed_frame``
    (:func:`rviz_fixed_frame`); started only when the ``rviz`` argument is true unless
    ``when_argument`` is False (the caller decided)."""
    from launch.conditions import IfCondition
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node
    arguments = ["-d", share("rviz", config)]
    if fixed_frame is not None:
        arguments += ["-f", fixed_frame]
    condition = IfCondition(LaunchConfiguration("rviz")) if when_argument else None
    return Node(package="rviz2", executable="rviz2", name="rviz2", output="log",
                arguments=arguments, parameters=[{"use_sim_time": use_sim_time}],
                condition=condition)


def include(launch_file: str, arguments: Mapping[str, str]):
    """Another launch file of the package (``launch/<launch_file>``) with ``arguments``."""
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    return IncludeLaunchDescription(PythonLaunchDescriptionSource(share("launch", launch_file)),
                                    launch_arguments=dict(arguments).items())


def scenario_launch_description(scenario: str):
    """The launch description of a scenario's own launch file: ``sim.launch.py`` with
    ``scenario:=<scenario>`` (its other arguments passed on as given)."""
    from launch import LaunchDescription
    return LaunchDescription([include("sim.launch.py", {"scenario": scenario})])
