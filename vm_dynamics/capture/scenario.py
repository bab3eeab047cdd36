"""Capture scenario files (``config/capture_*.yaml``): the chaser as in every scenario plus a
``capture`` section::

    robot_description_file: spacecraft_arm.urdf.xacro      # the chaser (base SE3, no gravity)
    gravity: [0, 0, 0]
    dt: 0.002
    duration: 30.0
    initial: {base_position, base_orientation, base_twist, joint_positions, joint_velocities}
    capture:
      target:                      # vm_dynamics.capture.body.target_from_config
        mass: 250.0
        inertia: [40.0, 55.0, 60.0]
        shape: {type: box, size: [1.0, 0.9, 0.8]}
        fixture: {position: [0.62, 0, 0], orientation: [0, -0.7071068, 0, 0.7071068]}
        initial: {position: [...], orientation: [x, y, z, w], twist: [v; w]}   # body twist
      contact:                     # vm_dynamics.capture.contact.contact_model_from_config
        stiffness: 2.0e5           # N/m^n
        exponent: 1.5
        restitution: 0.5
        damping: exact
        friction: {mu: 0.3, v_reg: 0.001}
        primitives: {tip: {frame: ee_link, shape: {type: sphere, radius: 0.03},
                           position: [0, 0, 0.1]}}
      grasp: {frame: ee_link, position_tol: 0.02, angle_tol: 0.1, command_time: 14.0,
              release_time: null}
      approach: {standoff: 0.3, start: 0.0, arrive: 12.0}
      control_rate: 100.0
      track: {name: task_space, mode: free_floating, kp_lin: 16, kd_lin: 8, ...}
      detumble: {name: computed_torque, mode: actuated_base, kp: 4, kd: 4, ...}
    two_body: {mu: 3.986004418e14, gradient: true}     # in orbit (optional, with orbit)
    orbit: {altitude: 400000.0, inclination_deg: 51.6, initial_frame: lvlh}

With an ``orbit`` section the pair is integrated in the chief frame of that reference orbit
(:mod:`.orbit`, docs/capture.md "In orbit"): two-body gravity with the gravity gradient on both
bodies, and the initial poses and twists are relative to LVLH at t = 0 (``initial_frame:
lvlh``, default) or to the chief frame (``chief``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import lie
from ..core.validation import as_vector
from ..model.model import load_model
from .body import target_from_config
from .contact import contact_model_from_config, primitive_from_config
from .grasp import grasp_spec_from_config
from .mission import CaptureMission, FixtureReference
from .orbit import from_lvlh, orbit_forces
from .system import CaptureSimulator, CaptureSystem

__all__ = ["CaptureScenario", "capture_scenario", "CAPTURE_KEYS", "TOP_LEVEL"]

TOP_LEVEL = ("scenario", "description", "robot_description_file", "base_type", "gravity",
             "integrator", "dt", "duration", "joints", "initial", "capture", "publish_rate",
             "control_rate", "real_time_factor", "command_timeout", "two_body", "orbit")
CAPTURE_KEYS = ("target", "contact", "grasp", "approach", "control_rate", "track", "detumble")


@dataclass
class CaptureScenario:
    """Everything a capture run needs, built from a scenario file's parameters."""

    name: str
    system: CaptureSystem
    sim: CaptureSimulator
    mission: CaptureMission
    duration: float
    initial: dict
    orbit: object = None


def _initial_chaser(model, init):
    init = init or {}
    n = model.nq
    g = lie.pose(init.get("base_position", [0.0, 0.0, 0.0]),
                 init.get("base_orientation", [0.0, 0.0, 0.0, 1.0]))
    V = as_vector(init.get("base_twist", np.zeros(6)), 6, "initial.base_twist")
    q = as_vector(init.get("joint_positions", model.neutral_configuration()), n,
                  "initial.joint_positions")
    qd = as_vector(init.get("joint_velocities", np.zeros(n)), n, "initial.joint_velocities")
    return g, V, q, qd


def capture_scenario(params: dict, urdf, name: str | None = None) -> CaptureScenario:
    """Build the capture run of a scenario file's parameters (``urdf``: the chaser's resolved
    robot description file).  Unknown keys raise ``ValueError`` naming them."""
    for key in params:
        if key not in TOP_LEVEL:
            raise ValueError(f"unknown parameter {key!r}; a capture scenario has "
                             f"{', '.join(TOP_LEVEL)}")
    cap = params.get("capture")
    if not isinstance(cap, dict):
        raise ValueError("capture: expected a mapping (target, contact, grasp, approach, ...)")
    for key in cap:
        if key not in CAPTURE_KEYS:
            raise ValueError(f"capture.{key}: unknown; expected {', '.join(CAPTURE_KEYS)}")
    for key in ("target", "grasp", "track", "detumble"):
        if key not in cap:
            raise ValueError(f"capture.{key}: missing")
    gravity = params.get("gravity", [0.0, 0.0, 0.0])
    model = load_model(str(urdf), base=str(params.get("base_type", "SE3")), gravity=gravity)
    tcfg = dict(cap["target"])
    tinit = tcfg.pop("initial", {}) or {}
    target = target_from_config(tcfg, "capture.target")
    ccfg = dict(cap.get("contact") or {})
    prims_cfg = ccfg.pop("primitives", {}) or {}
    if not isinstance(prims_cfg, dict):
        raise ValueError("capture.contact.primitives: expected {name: {frame, shape, ...}}")
    prims = [primitive_from_config(k, v, model.frame_names) for k, v in prims_cfg.items()]
    contact = contact_model_from_config(ccfg, "capture.contact") if ccfg else None
    gcfg = dict(cap["grasp"])
    command_time, release_time = gcfg.pop("command_time", None), gcfg.pop("release_time", None)
    grasp = grasp_spec_from_config(gcfg, model.frame_names)
    forces, orbit, frame = orbit_forces(params.get("two_body"), params.get("orbit"))
    system = CaptureSystem(model, target, prims, contact, grasp, forces)
    dt = float(params.get("dt", 0.002))
    duration = float(params.get("duration", 30.0))
    if not (np.isfinite(dt) and dt > 0 and np.isfinite(duration) and duration >= dt):
        raise ValueError(f"dt={dt!r}, duration={duration!r}: expected 0 < dt <= duration")
    method = str(params.get("integrator", "rkmk4"))
    sim = CaptureSimulator(system, dt, method)
    g, V, q, qd = _initial_chaser(model, params.get("initial"))
    if not isinstance(tinit, dict):
        raise ValueError("capture.target.initial: expected {position, orientation, twist}")
    g_T = lie.pose(tinit.get("position", [0.0, 0.0, 0.0]),
                   tinit.get("orientation", [0.0, 0.0, 0.0, 1.0]))
    V_T = as_vector(tinit.get("twist", np.zeros(6)), 6, "capture.target.initial.twist")
    if frame == "lvlh":
        g, V = from_lvlh(orbit, 0.0, g, V)
        g_T, V_T = from_lvlh(orbit, 0.0, g_T, V_T)
    sim.reset(g, V, q, qd, g_T, V_T)
    acfg = cap.get("approach") or {}
    unknown = set(acfg) - {"standoff", "start", "arrive"}
    if unknown:
        raise ValueError(f"capture.approach: unknown keys {sorted(unknown)}")
    ref = FixtureReference(target, acfg.get("standoff", 0.0), acfg.get("start", 0.0),
                           acfg.get("arrive", 0.0))
    track = dict(cap["track"])
    track.setdefault("frame", grasp.frame)
    mission = CaptureMission(sim, ref, track, dict(cap["detumble"]), command_time,
                             release_time, float(cap.get("control_rate", 100.0)))
    return CaptureScenario(name or str(params.get("scenario", "capture")), system, sim, mission,
                           duration, {"g": g, "V": V, "q": q, "qd": qd, "g_T": g_T, "V_T": V_T},
                           orbit)
