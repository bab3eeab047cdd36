"""Console entry points: import the program with Ctrl-C deferred, then run it.

Importing a program (numpy, the model code, DDS or rclpy) takes a noticeable time; a Ctrl-C in
that window must not print a traceback.  Each entry point imports its ``main`` with interrupts
deferred (:func:`vm_dynamics.core.signals.deferred_interrupts`) and exits at once, without
a word, if one arrived: with 0 for the ROS nodes (as ``ros2 launch`` expects) and 130 for
``vm-sim`` (the shell's convention for SIGINT).

A reader that closes the pipe early (``vm-sim --list | head -1``, ``grep -q``) ends the program
quietly with 141, the shell's code for SIGPIPE, as a C tool would, instead of a
``BrokenPipeError`` traceback.
"""
from __future__ import annotations

import importlib
import os
import sys

from ..core.signals import deferred_interrupts

__all__ = ["dynamics_node", "controller_node", "fake_arm_driver", "vm_sim", "vm_foxglove",
           "vm_view", "vm_send"]


def _run(module: str, interrupted: int) -> int:
    with deferred_interrupts() as stop:
        main = importlib.import_module(module).main
    if stop:
        return interrupted
    try:
        return main()
    except BrokenPipeError:
        _silence_stdout()
        return _BROKEN_PIPE


_BROKEN_PIPE = 141  # 128 + SIGPIPE


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout already closed or not a file
        pass


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


def vm_send() -> int:
    return _run("vm_dynamics.app.send", 130)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(vm_sim())
