"""Console entry points: import the program with Ctrl-C deferred, then run it.

Importing a program (numpy, the model code, DDS or rclpy) takes a noticeable time; a Ctrl-C in
that window must not print a traceback.  Each entry point imports its ``main`` with interrupts
deferred (:func:`vm_dynamics.core.signals.deferred_interrupts`) and exits at once, without
a word, if one arrived: with 0 for the ROS nodes (as ``ros2 launch`` expects) and 130 for
``vm-sim`` (the shell's convention for SIGINT).
"""
from __future__ import annotations

import importlib
import sys

from ..core.signals import deferred_interrupts

__all__ = ["dynamics_node", "controller_node", "fake_arm_driver", "vm_sim", "vm_foxglove",
           "vm_view"]


def _run(module: str, interrupted: int) -> int:
    with deferred_interrupts() as stop:
        main = importlib.import_module(module).main
    if stop:
        return interrupted
    return main()


def dynamics_node() -> int:
    return _run("vm_dynamics.nodes.dynamics_node", 0)


def controller_node() -> int:
    return _run("vm_dynamics.nodes.controller_node", 0)


def fake_arm_driver() -> int:
    return _run("vm_dynamics.nodes.fake_arm_driver", 0)


def vm_foxglove() -> int:
    return _run("vm_dynamics.nodes.foxglove_bridge", 0)


def vm_sim() -> int:
    return _run("vm_dynamics.app.cli", 130)


def vm_view() -> int:
    return _run("vm_dynamics.viewer.cli", 130)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(vm_sim())
