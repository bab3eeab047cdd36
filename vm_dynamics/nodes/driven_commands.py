"""Kinematically driven joints of the dynamics node: position and velocity commands.

A joint listed in ``driven_joints.position`` or ``driven_joints.velocity`` (parameters of the
scenario model, :data:`vm_dynamics.config.spec.DYNAMICS_PARAMETERS`) is driven by the engine
(``Simulator(driven_joints=...)``): within a step it keeps a constant velocity (``q̈ = 0``),
whatever effort that takes, while the vehicle and the other joints follow the dynamics.  Its
command comes in the ``sensor_msgs/JointState`` of ``joint_commands``, by joint name, as
ros2_control's topic system sends it (docs/ros2_control.md):

* **velocity** ``v`` stamped ``t_k``: at ``t_k`` the joint's velocity is set to ``v``
  (an impulsive jump at constant configuration: total momentum conserved, the jump of kinetic
  energy into the engine's work account), and it moves at ``v`` over ``[t_k, t_k+1)``;
* **position** ``q*`` stamped ``t_k``: the velocity ``(q* − q(t_k)) / T`` (``T`` the control
  period ``1/control_rate``), so the joint reaches ``q*`` at ``t_k+1`` exactly (to rounding):
  a command takes effect exactly one period later.  A position held (no new command) holds
  the joint there.

The command applies from a period boundary (``steps`` a multiple of the period's steps): in
lockstep the period the command answers, otherwise the next boundary after it arrived.  No
command in force (none yet, or the watchdog tripped): the driven joints hold velocity zero;
the watchdog stops them at once.  The joints of ``joints`` not listed take efforts.

:func:`parse_joint_command` reads the command message: ``name`` lists every joint of
``joints`` (any order, no others); each of ``effort``, ``position``, ``velocity`` has one entry
per name (the usual JointState layout), or one per joint that takes it, in the order of
``name`` (the layout of JointStateTopicSystem's ``write()``: a joint's entry goes to the field
of its command interface only), or none when no joint takes it.
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..ros import messages as rm
from ..ros.fields import duplicate_names, expect_msgtype, finite_field

__all__ = ["KINDS", "DrivenJointCommands", "driven_joint_commands", "parse_joint_command"]

#: The command each joint takes: its field of the JointState command.
KINDS = ("effort", "position", "velocity")


def _listed(names: Sequence[str], at_most: int = 20) -> str:
    return ", ".join(names) if len(names) <= at_most else \
        f"{', '.join(names[:at_most])} … ({len(names)} joints)"


def parse_joint_command(msg: Any, joints: Sequence[str], kinds: Sequence[str]
                        ) -> tuple[int, np.ndarray]:
    """``(stamp ns, values)`` of a ``sensor_msgs/JointState`` command: for each joint of
    ``joints`` the value of its field ``kinds[i]`` (effort, position or velocity; module
    docstring for the layouts accepted).  ``ValueError`` naming the field and the joint."""
    expect_msgtype(msg, rm.JOINT_STATE)
    names = list(msg.name)
    dup = duplicate_names(names)
    if dup:
        raise ValueError(f"JointState: duplicate joint names {dup}")
    kind_of = dict(zip(joints, kinds))
    unknown = [nm for nm in names if nm not in kind_of]
    if unknown:
        raise ValueError(f"JointState: unknown joint names {unknown[:10]} (the joints are "
                         f"{_listed(list(joints))})")
    missing = [j for j in joints if j not in set(names)]
    if missing:
        raise ValueError(f"JointState: missing joint names {missing[:10]} (message has "
                         f"{_listed(names)})")
    value = dict.fromkeys(names, 0.0)
    for field in KINDS:
        arr = np.asarray(getattr(msg, field), dtype=np.float64).reshape(-1)
        takers = [i for i, nm in enumerate(names) if kind_of[nm] == field]
        if arr.size == len(names) and names:
            picked = arr[takers]                       # one entry per name
        elif arr.size == len(takers) and takers:
            picked = arr                               # one per joint that takes it
        elif arr.size == 0 and not takers:
            continue
        else:
            who = [names[i] for i in takers]
            need = (f"one per name ({len(names)}) or one per joint it commands "
                    f"({len(who)}: {_listed(who)})" if who else
                    f"none or one per name ({len(names)}): no joint takes {field} commands")
            what = "is empty" if arr.size == 0 else f"has {arr.size} entries"
            raise ValueError(f"JointState: {field} {what}; expected {need}")
        if not takers:
            continue
        who = [names[i] for i in takers]
        for nm, v in zip(who, finite_field(picked, f"JointState.{field}", who)):
            value[nm] = v
    return rm.time_msg_to_ns(msg.header.stamp), np.array([value[j] for j in joints])


class DrivenJointCommands:
    """The driven joints of a robot (module docstring).

    ``kinds``: the command kind of each joint of ``joints``; ``model_index``: the driven
    joints' model indices (the engine's ``driven_joints``, in this order); ``command_index``:
    their places in ``joints``; ``position``: which of them are position-driven; ``steps``,
    ``period``: the control period in steps and seconds."""

    def __init__(self, joints: Sequence[str], kinds: Sequence[str],
                 joint_index: Sequence[int], steps: int, dt: float):
        self.joints, self.kinds = list(joints), list(kinds)
        driven = [i for i, k in enumerate(self.kinds) if k != "effort"]
        self.command_index = np.array(driven, dtype=int)
        self.model_index = np.array([int(joint_index[i]) for i in driven], dtype=int)
        self.position = np.array([self.kinds[i] == "position" for i in driven], dtype=bool)
        self.effort_mask = np.array([k == "effort" for k in self.kinds], dtype=bool)
        self.steps, self.period = int(steps), int(steps) * float(dt)
        self.names = [self.joints[i] for i in driven]

    def velocity(self, values: np.ndarray | None, q: np.ndarray) -> np.ndarray:
        """The driven joints' velocities over the next period for the command ``values`` (one
        per joint of ``joints``; None: no command in force, velocity zero) at the positions
        ``q`` (model order)."""
        if values is None:
            return np.zeros(len(self.model_index))
        cmd = values[self.command_index]
        return np.where(self.position, (cmd - q[self.model_index]) / self.period, cmd)

    def describe(self) -> str:
        """``joint1 (position), joint3 (velocity)`` for messages."""
        return ", ".join(f"{nm} ({k})" for nm, k in zip(self.names, (
            "position" if p else "velocity" for p in self.position)))


def _checked_names(p: Mapping[str, Any], key: str, joints: Sequence[str]) -> list[str]:
    names = list(p.get(key) or [])
    for nm in names:
        if nm not in joints:
            near = difflib.get_close_matches(nm, joints, n=1, cutoff=0.6)
            raise ValueError(f"{key}: unknown joint {nm!r}"
                             + (f" (did you mean {near[0]!r}?)" if near else "")
                             + f"; the joints (parameter joints) are {_listed(list(joints))}")
    return names


def driven_joint_commands(robot, p: Mapping[str, Any], steps: int, dt: float
                          ) -> DrivenJointCommands | None:
    """The driven joints of ``robot`` from the flat parameters ``p``
    (``driven_joints.position``, ``driven_joints.velocity``), None when there are none;
    ``ValueError`` naming the parameter (unknown or twice-listed joint, a joint source other
    than simulated)."""
    joints = list(robot.joints)
    lists = {k: _checked_names(p, f"driven_joints.{k}", joints) for k in ("position",
                                                                          "velocity")}
    both = sorted(set(lists["position"]) & set(lists["velocity"]))
    if both:
        raise ValueError(f"driven_joints.velocity: joint {both[0]!r} is also in "
                         "driven_joints.position (a joint takes one kind of command)")
    if not (lists["position"] or lists["velocity"]):
        return None
    source = p.get("joint_source", "simulated")
    if source != "simulated":
        key = "driven_joints.position" if lists["position"] else "driven_joints.velocity"
        raise ValueError(f"{key}: driven joints need joint_source simulated (it is {source}: "
                         f"every joint follows the {source} motion)")
    kind = {nm: k for k, names in lists.items() for nm in names}
    return DrivenJointCommands(joints, [kind.get(j, "effort") for j in joints],
                               robot.joint_index, steps, dt)
