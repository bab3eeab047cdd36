"""Decisions the launch files make from their arguments and the scenario, as plain functions
(the launch files call them; the unit tests check them without ROS)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["launch_lockstep", "parse_bool_argument", "launch_scenario", "rviz_fixed_frame"]


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
