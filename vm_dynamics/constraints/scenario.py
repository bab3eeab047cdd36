"""Scenario files of constrained systems (``config/rolling_ball*.yaml``, ``config/diff_drive*.yaml``).

A scenario with a ``constraints`` section is run by :func:`simulate_constrained` instead of the
unconstrained engine.  The section's ``type`` is ``rolling_ball`` or ``diff_drive``::

    constraints: {type: rolling_ball, radius: 0.2, mass: 1.0, incline_deg: 0.0}
    initial: {contact_point: [x, y], contact_velocity: [vx, vy], base_orientation: [x,y,z,w]}

    constraints: {type: diff_drive, wheel_radius: 0.1, wheel_separation: 0.5,
                  left_wheel: left_wheel_joint, right_wheel: right_wheel_joint}
    initial: {base_position: [x, y], base_yaw: 0.0, joint_positions: [...],
              joint_velocities: [...]}
    cmd_vel: {linear: 0.5, angular: 0.3, gain: 2.0}   # wheel-velocity controller
    arm: {positions: [...], kp: 20.0, kd: 6.0}         # arm joints: PD + gravity compensation

The wheel-velocity controller is the ``diff_drive_controller`` convention: a body velocity
command (v, ω) (``geometry_msgs/Twist`` on ``/cmd_vel``) becomes wheel speeds
``φ̇_ref = ((v − bω)/ρ, (v + bω)/ρ)`` and each wheel gets the effort ``gain (φ̇_ref − φ̇)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..core.rotations import matrix_from_quat
from ..model.model import load_model
from .ball import rolling_ball
from .drive import WheelVelocityController
from .hamel import HamelSystem
from .wheeled import differential_drive

__all__ = ["ConstrainedScenario", "constrained_scenario", "check_names", "CONSTRAINT_TYPES",
           "TOP_LEVEL", "SECTIONS"]

CONSTRAINT_TYPES = ("rolling_ball", "diff_drive")

#: The names a constrained scenario file may hold (top level, then per section and type); any
#: other name is an error naming it (a misspelled name would silently take its default).
TOP_LEVEL = ("scenario", "description", "robot_description_file", "gravity", "dt", "duration",
             "constraints", "initial", "cmd_vel", "arm")
SECTIONS = {
    "rolling_ball": {"constraints": ("type", "radius", "mass", "incline_deg"),
                     "initial": ("contact_point", "contact_velocity", "base_orientation")},
    "diff_drive": {"constraints": ("type", "wheel_radius", "wheel_separation", "left_wheel",
                                   "right_wheel"),
                   "initial": ("base_position", "base_yaw", "joint_positions",
                               "joint_velocities"),
                   "cmd_vel": ("linear", "angular", "gain"),
                   "arm": ("positions", "kp", "kd")},
}


def check_names(params: dict) -> None:
    """``ValueError`` naming the first parameter a constrained scenario does not know."""
    kind = (params.get("constraints") or {}).get("type")
    for key, value in params.items():
        if key not in TOP_LEVEL:
            raise ValueError(f"unknown parameter {key!r}; a constrained scenario has "
                             f"{', '.join(TOP_LEVEL)}")
        known = SECTIONS.get(kind, {}).get(key)
        if isinstance(value, dict) and known is not None:
            for sub in value:
                if sub not in known:
                    raise ValueError(f"unknown parameter '{key}.{sub}'; {kind} has "
                                     f"{', '.join(f'{key}.{k}' for k in known)}")
        elif key in ("cmd_vel", "arm") and kind != "diff_drive":
            raise ValueError(f"parameter {key!r}: only a diff_drive scenario has it")


@dataclass
class ConstrainedScenario:
    """Everything to run and record one constrained scenario."""

    kind: str
    system: HamelSystem
    g0: np.ndarray
    r0: np.ndarray
    rd0: np.ndarray
    forces: Callable | None
    joint_names: list = field(default_factory=list)
    height: float = 0.0          # the vehicle frame's height above the plane (recording)
    drive: WheelVelocityController | None = None    # the /cmd_vel controller (diff drive)

    def efforts(self, t, g, r, rd) -> np.ndarray:
        """The shape efforts at one sample (zero without forces)."""
        if self.forces is None:
            return np.zeros(self.system.d)
        Qr = self.forces(t, g, r, rd)[1]
        return np.zeros(self.system.d) if Qr is None else np.asarray(Qr, dtype=float)


def _vector(section, key, n, default=None):
    value = section.get(key, default)
    if value is None:
        raise ValueError(f"initial.{key}: missing ({n} numbers)")
    a = np.asarray(value, dtype=float)
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{key}: expected {n} finite numbers, got {value!r}")
    return a


def _number(section, key, default, where):
    value = section.get(key, default)
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}.{key}: expected a number, got {value!r}") from None
    if not np.isfinite(v):
        raise ValueError(f"{where}.{key}: expected a finite number, got {value!r}")
    return v


def _ball(section, initial, gravity):
    ball = rolling_ball(_number(section, "radius", 0.2, "constraints"),
                        _number(section, "mass", 1.0, "constraints"),
                        np.radians(_number(section, "incline_deg", 0.0, "constraints")), gravity)
    g0 = np.eye(4)
    g0[:3, :3] = matrix_from_quat(_vector(initial, "base_orientation", 4, [0, 0, 0, 1]))
    return ConstrainedScenario("rolling_ball", ball, g0, _vector(initial, "contact_point", 2),
                               _vector(initial, "contact_velocity", 2), None,
                               height=ball.radius)


def _arm_law(params, system, arm_idx, model):
    arm = params.get("arm") or {}
    if not arm:
        return None
    q_ref = _vector(arm, "positions", len(arm_idx))
    kp, kd = _number(arm, "kp", 20.0, "arm"), _number(arm, "kd", 6.0, "arm")

    def law(r, rd):
        grav = system.potential_gradient(r)[arm_idx]
        return kp * (q_ref - r[arm_idx]) - kd * rd[arm_idx] + grav
    return law


def _diff_drive(params, section, initial, urdf_path, gravity):
    model = load_model(str(urdf_path), base="SE2", gravity=(0.0, 0.0, -gravity))
    system = differential_drive(model, _number(section, "wheel_radius", 0.1, "constraints"),
                                _number(section, "wheel_separation", 0.5, "constraints"),
                                section.get("left_wheel", "left_wheel_joint"),
                                section.get("right_wheel", "right_wheel_joint"))
    wheels = list(system.wheels)
    arm_idx = [i for i in range(model.n) if i not in wheels]
    cmd = params.get("cmd_vel") or {}
    v, w = _number(cmd, "linear", 0.0, "cmd_vel"), _number(cmd, "angular", 0.0, "cmd_vel")
    drive = WheelVelocityController(system.wheel_radius, system.wheel_separation, wheels,
                                    _number(cmd, "gain", 2.0, "cmd_vel"))
    drive.set_command(v, w)
    arm_law = _arm_law(params, system, arm_idx, model)

    def forces(t, g, r, rd):
        Q = np.zeros(model.n)
        Q[wheels] = drive.efforts(rd)
        if arm_law is not None:
            Q[arm_idx] = arm_law(r, rd)
        return None, Q
    xy = _vector(initial, "base_position", 2, [0.0, 0.0])
    yaw = _number(initial, "base_yaw", 0.0, "initial")
    g0 = np.eye(4)
    g0[:2, :2] = [[np.cos(yaw), -np.sin(yaw)], [np.sin(yaw), np.cos(yaw)]]
    g0[:2, 3] = xy
    return ConstrainedScenario(
        "diff_drive", system, g0, _vector(initial, "joint_positions", model.n, np.zeros(model.n)),
        _vector(initial, "joint_velocities", model.n, np.zeros(model.n)), forces,
        joint_names=list(model.joint_names), height=system.wheel_radius, drive=drive)


def constrained_scenario(params: dict, urdf_path) -> ConstrainedScenario:
    """Build the constrained scenario of a parsed scenario file (``ros__parameters``)."""
    section = params.get("constraints")
    if not isinstance(section, dict) or section.get("type") not in CONSTRAINT_TYPES:
        raise ValueError(f"constraints.type: expected one of {', '.join(CONSTRAINT_TYPES)}, got "
                         f"{(section or {}).get('type')!r}")
    check_names(params)
    initial = params.get("initial") or {}
    gvec = np.asarray(params.get("gravity", [0.0, 0.0, -9.81]), dtype=float)
    if gvec.shape != (3,) or not np.all(np.isfinite(gvec)):
        raise ValueError(f"gravity: expected 3 finite numbers, got {params.get('gravity')!r}")
    gravity = float(np.linalg.norm(gvec))
    if section["type"] == "rolling_ball":
        return _ball(section, initial, gravity)
    return _diff_drive(params, section, initial, urdf_path, gravity)
