"""The ``simulation_interfaces`` definitions the dynamics node speaks, as the project's own copies.

The ``.msg``/``.srv``/``.action`` files under ``vm_dynamics/ros/interfaces/simulation_interfaces``
are verbatim copies of ros-simulation/simulation_interfaces, branch ``jazzy``, version 1.5.1
(:data:`COMMIT`; licence Apache-2.0, its ``LICENSE`` next to them): only the types the node
implements and the messages they nest.  The DDS transport (no ROS installed) registers them
in its rosbags typestore (:func:`vm_dynamics.transport.types.service_typestore`); under
rclpy the rosidl classes of the installed ``simulation_interfaces`` package are used instead.
A test compares the copies with the package's files when it is installed.

Actions are laid out as rcl_action does (``rosidl_generator`` ``action`` idl): the goal,
result and feedback structs, the ``SendGoal`` and ``GetResult`` services and the
``FeedbackMessage`` (:func:`action_definitions`).
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

__all__ = ["PACKAGE", "VERSION", "COMMIT", "FOLDER", "messages", "services", "actions",
           "action_definitions", "constants"]

PACKAGE = "simulation_interfaces"
VERSION = "1.5.1"
COMMIT = "a3c60ff2715dbe5e9d5cddce410d9a7ffe771960"
#: where the copied files are
FOLDER = Path(__file__).resolve().parent / "interfaces" / PACKAGE


def _read(kind: str) -> dict[str, str]:
    return {f"{PACKAGE}/{kind}/{p.stem}": p.read_text(encoding="utf-8")
            for p in sorted((FOLDER / kind).glob(f"*.{kind}"))}


@functools.lru_cache(maxsize=None)
def messages() -> dict[str, str]:
    """``simulation_interfaces/msg/<Name>`` -> the ``.msg`` text."""
    return _read("msg")


@functools.lru_cache(maxsize=None)
def services() -> dict[str, str]:
    """``simulation_interfaces/srv/<Name>`` -> the ``.srv`` text (request ``---`` response)."""
    return _read("srv")


@functools.lru_cache(maxsize=None)
def actions() -> dict[str, str]:
    """``simulation_interfaces/action/<Name>`` -> the ``.action`` text (goal, result, feedback)."""
    return _read("action")


def _split(text: str, parts: int, what: str) -> list[str]:
    """The sections of a ``.srv``/``.action`` text: lines that are exactly ``---`` separate."""
    out, cur = [], []
    for line in text.splitlines():
        if line.strip() == "---":
            out.append("\n".join(cur) + "\n")
            cur = []
        else:
            cur.append(line)
    out.append("\n".join(cur) + "\n")
    if len(out) != parts:
        raise ValueError(f"{what}: expected {parts} sections separated by ---, got {len(out)}")
    return out


def action_definitions(actiontype: str, text: str) -> tuple[dict[str, str], dict[str, str]]:
    """``(messages, services)`` an action ``pkg/action/A`` defines, as rcl_action lays them
    out: messages ``A_Goal``, ``A_Result``, ``A_Feedback``, ``A_FeedbackMessage``
    (``unique_identifier_msgs/UUID goal_id``, ``A_Feedback feedback``); services
    ``A_SendGoal`` (``goal_id``, ``A_Goal goal`` -> ``bool accepted``,
    ``builtin_interfaces/Time stamp``) and ``A_GetResult`` (``goal_id`` -> ``int8 status``,
    ``A_Result result``)."""
    goal, result, feedback = _split(text, 3, actiontype)
    msgs = {f"{actiontype}_Goal": goal, f"{actiontype}_Result": result,
            f"{actiontype}_Feedback": feedback,
            f"{actiontype}_FeedbackMessage": (f"unique_identifier_msgs/UUID goal_id\n"
                                             f"{actiontype}_Feedback feedback\n")}
    srvs = {f"{actiontype}_SendGoal": (f"unique_identifier_msgs/UUID goal_id\n"
                                       f"{actiontype}_Goal goal\n---\n"
                                       "bool accepted\nbuiltin_interfaces/Time stamp\n"),
            f"{actiontype}_GetResult": (f"unique_identifier_msgs/UUID goal_id\n---\n"
                                        f"int8 status\n{actiontype}_Result result\n")}
    return msgs, srvs


_CONSTANT = re.compile(r"^\s*([a-z][a-z0-9_]*)\s+([A-Z][A-Z0-9_]*)\s*=\s*(-?\d+)\s*(#.*)?$")


def constants(rostype: str) -> dict[str, int]:
    """The integer constants ``NAME = value`` a copied message (``pkg/msg/T``) or service
    (``pkg/srv/S``, both parts) defines, read from the copied text."""
    text = {**messages(), **services(), **actions()}.get(rostype)
    if text is None:
        raise ValueError(f"{rostype}: not among the copied {PACKAGE} definitions")
    out = {}
    for line in text.splitlines():
        m = _CONSTANT.match(line)
        if m:
            out[m.group(2)] = int(m.group(3))
    return out
