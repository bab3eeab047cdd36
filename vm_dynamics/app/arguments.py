"""``vm-sim``'s command line: the argument parser, ``-p NAME:=VALUE`` overrides, and the
options that set scenario parameters (:func:`scenario_overrides`: ``--dt``, ``--duration``,
``--integrator``, the initial-state options), which must not contradict a ``-p``."""
from __future__ import annotations

import argparse
import math
import re

__all__ = ["UsageError", "ArgumentParser", "build_parser", "INITIAL_OPTIONS",
           "parse_param_overrides", "number_list", "positive_finite", "scenario_overrides"]

#: The initial-state options: (parameter under ``initial.``, flag).
INITIAL_OPTIONS = (("joint_positions", "--joint-positions"),
                   ("joint_velocities", "--joint-velocities"),
                   ("base_position", "--base-position"),
                   ("base_orientation", "--base-orientation"),
                   ("base_twist", "--base-twist"))


class UsageError(ValueError):
    """A user error (bad option or value): printed by ``vm-sim`` as one line, exit code 2; a
    ``ValueError`` for library callers of :func:`run_scenario`."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors: :class:`UsageError` instead of usage and exit."""

    def error(self, message):  # one line, exit 2 (argparse prints usage otherwise)
        raise UsageError(message)


def build_parser():
    p = ArgumentParser(prog="vm-sim", description="Simulate a vehicle-manipulator scenario with the "
                "Lagrange-Poincaré equations and write trajectory.mcap, summary.json and plots.")
    p.add_argument("scenario", nargs="?", help="scenario name (see --list) or path to a YAML file")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--compile", action="store_true",
                   help="compile the numba kernels of the shipped scenarios (or of the "
                        "scenarios named after it) into the disk cache, with progress, and "
                        "exit; setup runs it once after install (as the first argument)")
    p.add_argument("--duration", type=float, help="simulated time, s (default: scenario's)")
    p.add_argument("--dt", type=float, help="time step, s (default: scenario's)")
    p.add_argument("--integrator", help="rkmk4 (default), lie_euler or dopri5")
    p.add_argument("--controller", help="controller plug-in name, or 'none' for open loop "
                   "(default: the scenario's)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME:=VALUE",
                   help="set a scenario or controller parameter (ROS 2 syntax, as for the nodes),"
                   " e.g. -p controller.kp:=30.0 -p dt:=0.002; repeatable")
    init = p.add_argument_group("initial state (shorthands for -p initial.<name>:=[...])")
    for key, flag in INITIAL_OPTIONS:
        init.add_argument(flag, metavar="LIST", dest=key,
                          help=f"initial.{key}: numbers as [a, b, ...] or a,b,...")
    p.add_argument("--out", help="output directory (default: out/<scenario>); a new or empty "
                   "directory, or one an earlier vm-sim run wrote (see --force)")
    p.add_argument("--force", action="store_true",
                   help="write into an existing directory that holds other files (never into "
                   "a system directory such as / or /etc)")
    p.add_argument("--record-rate", type=float, default=100.0,
                   help="rate of the MCAP recording, Hz (default 100; 0 = every step)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--view", action="store_true",
                   help="show the robot in the browser as it simulates (at real time), then "
                   "replay it with a time slider until Ctrl-C; prints the URL (needs [viz])")
    p.add_argument("--host", default="127.0.0.1",
                   help="--view: address to serve on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8080,
                   help="--view: port (default 8080; 0 = any free port)")
    p.add_argument("--video", metavar="FILE",
                   help="also render the robot offscreen to FILE (.mp4: 800x600 at 25 fps, "
                   ".gif: 440x330 at 10 fps)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


# ----------------------------------------------------------------------------- arguments

# ----------------------------------------------------------------------------- arguments
def parse_param_overrides(items) -> dict:
    """``["name:=value", ...]`` -> ``{name: value}``, values typed as ROS 2 types them
    (``rcl`` YAML rules: ``30`` is an integer, ``30.0`` a double, ``[1.0, 2.0]`` a list, aliases
    rejected).  A later assignment to the same name replaces an earlier one."""
    from ..transport.ros_args import parse_param_value
    out = {}
    for item in items or []:
        name, sep, value = str(item).partition(":=")
        if not sep or not name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*",
                                                    name):
            raise UsageError(f"-p {item!r}: expected NAME:=VALUE with a parameter name like "
                             f"controller.kp")
        try:
            out[name] = parse_param_value(value, f"-p {name}")
        except ValueError as exc:
            raise UsageError(str(exc).splitlines()[0]) from None
    return out


def number_list(text: str, flag: str) -> list:
    """``"0.1, 0.2"``, ``"[0.1, 0.2]"`` or ``"0.1 0.2"`` -> ``[0.1, 0.2]`` (ints allowed)."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    try:
        return [float(x) for x in re.split(r"[,\s]+", body.strip()) if x]
    except ValueError:
        raise UsageError(f"{flag}: expected numbers like 0.1,0.2 or [0.1, 0.2], got "
                         f"{text!r}") from None


def positive_finite(value, flag):
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{flag} must be positive and finite, got {value:g}")
    return value


def scenario_overrides(args) -> dict:
    """Scenario overrides from ``-p`` and the dedicated options (which must not contradict)."""
    overrides = parse_param_overrides(args.param)
    options = {}
    if args.duration is not None:
        options["duration"] = (positive_finite(args.duration, "--duration"), "--duration")
    if args.dt is not None:
        options["dt"] = (positive_finite(args.dt, "--dt"), "--dt")
    if args.integrator is not None:
        from ..config.spec import check_integrator
        try:
            options["integrator"] = (check_integrator(args.integrator, "--integrator"),
                                     "--integrator")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    for key, flag in INITIAL_OPTIONS:
        text = getattr(args, key)
        if text is not None:
            options[f"initial.{key}"] = (number_list(text, flag), flag)
    for name, (value, flag) in options.items():
        if name in overrides and overrides[name] != value:
            raise UsageError(f"{flag} {value!r} contradicts -p {name}:={overrides[name]!r}; "
                             f"give one")
        overrides[name] = value
    return overrides
