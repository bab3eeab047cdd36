"""Decisions the launch files make from their arguments and the scenario, as plain functions
(the launch files call them; the unit tests check them without ROS)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["launch_lockstep", "parse_bool_argument"]


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
