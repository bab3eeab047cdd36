"""The capture of a tumbling target in the dynamics node: the chaser and a second free body
integrated together (:class:`vm_dynamics.capture.CaptureSimulator`), the target's outputs, and
grasp and release as services.

A scenario with a ``capture`` section -- ``capture.target`` (the target body, its shape,
grapple fixture and ``initial`` pose and twist), ``capture.contact`` (the Hunt–Crossley law and
the chaser's contact primitives) and ``capture.grasp`` (grasp frame and tolerances), read as
``vm-sim`` reads them (:mod:`vm_dynamics.capture.scenario`; the mission keys ``approach``,
``track``, ``detumble``, ``control_rate`` and the grasp's ``command_time``/``release_time``
are vm-sim's and ignored here: in the nodes a controller and ``~/grasp`` play that part) --
makes :class:`~.dynamics_core.DynamicsCore` integrate the capture system instead of the chaser
alone:

* :class:`CaptureEngine` gives the capture simulator the engine's interface (held inputs,
  steps, state arrays, energy and work accounts, snapshot and restore), so the command inputs,
  watchdog, energy guard, publishing and pacing work unchanged.  The energy balance covers
  both bodies: ``E = T_C + T_T + U`` (kinetic energies and the contacts' elastic energy) and
  ``W`` the work of the inputs plus the measured wrench's, minus the contact dissipation.  A
  grasp is an inelastic impulse (kinetic energy is lost, momentum kept): the guard's
  references restart there.
* :class:`CapturePart` builds the target's messages: ``target/odom`` (nav_msgs/Odometry, pose
  in the odometry frame, body twist), its TF transform ``odom_frame -> target.name`` (in the
  same ``/tf`` message as the chaser's), ``target/marker`` (visualization_msgs/Marker of its
  shape, for RViz) and ``contact_wrench`` (geometry_msgs/WrenchStamped: the sum of the contact
  wrenches on the target about its origin, in its axes; zero while apart or grasped).
* ``~/grasp`` and ``~/release`` (std_srvs/Trigger): the grasp succeeds only when the grasp
  condition holds (the grasp frame within ``grasp.position_tol`` and ``grasp.angle_tol`` of
  the target's fixture); otherwise the response says by how much it misses.

With ``wrench_source: measured`` the sensor's wrench replaces the simulated contact: it acts on
the chaser at its frame and the opposite wrench on the target (the capture simulator's
measured wrench).  Capture needs a free-flying chaser (``base_type: SE3``) without gravity and
force elements, and simulated joints.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ..capture import (
    CaptureSimulator,
    CaptureSystem,
    MeasuredWrench,
    contact_model_from_config,
    grasp_spec_from_config,
    pose_from_config,
    primitive_from_config,
    target_from_config,
)
from ..config.params import unflatten
from ..core import lie
from ..core.validation import as_vector
from ..ros import messages as rm

__all__ = ["CaptureEngine", "CapturePart", "CaptureInputs", "capture_part", "has_target",
           "CAPTURE_SECTIONS", "CAPTURE_PUBLICATIONS", "CAPTURE_SERVICES", "shape_marker"]

#: The scenario section of a capture (its own readers check its keys).
CAPTURE_SECTIONS = ("capture",)
#: The dynamics node's outputs with a target: core key -> (topic, message type, QoS profile).
CAPTURE_PUBLICATIONS = {
    "target_odom": ("target/odom", "nav_msgs/msg/Odometry", "default"),
    "target_marker": ("target/marker", "visualization_msgs/msg/Marker", "default"),
    "contact_wrench": ("contact_wrench", "geometry_msgs/msg/WrenchStamped", "default"),
}
#: The dynamics node's services with a target.
CAPTURE_SERVICES = {"~/grasp": "std_srvs/srv/Trigger", "~/release": "std_srvs/srv/Trigger"}


def has_target(params: Mapping[str, Any]) -> bool:
    """The (flat) parameters describe a capture: a ``capture.target`` section is given."""
    return any(k.startswith("capture.target.") and v not in (None, "")
               for k, v in params.items())


class CaptureInputs(NamedTuple):
    """Inputs held over the next steps: efforts (model order), the body wrench on the chaser
    (body frame, or None), a wrench in inertial axes at the chaser's origin (or None) and the
    measured wrench (or None)."""

    tau: np.ndarray
    base_wrench: np.ndarray | None
    base_wrench_inertial: np.ndarray | None
    measured: MeasuredWrench | None

    @property
    def frames(self) -> dict:
        """The frame wrenches held, as the engine's inputs name them."""
        m = self.measured
        return {} if m is None else {m.frame: m.wrench}


class CaptureEngine:
    """The capture simulator behind the engine's interface (module docstring).

    ``g_T0, V_T0`` are the target's initial pose and body twist, restored by :meth:`reset`."""

    backend = "capture"
    formulation = "spatial_momentum"

    def __init__(self, system: CaptureSystem, dt: float, method: str, g_T0, V_T0):
        self.system = system
        self.model = system.model
        self.dt = float(dt)
        self.cs = CaptureSimulator(system, dt, method)
        self.g_T0, self.V_T0 = np.asarray(g_T0, dtype=float), as_vector(V_T0, 6, "target twist")
        self.steps = 0
        self._cache = None

    # ------------------------------------------------------------------ state
    @property
    def t(self) -> float:
        return self.steps * self.dt

    def reset(self, g, V, q=None, qd=None) -> None:
        if q is None or qd is None:
            raise ValueError("capture: the joints must be simulated (joint_source simulated)")
        self.cs.reset(g, V, q, qd, self.g_T0, self.V_T0)
        self.steps = 0
        self._cache = None

    def invalidate(self) -> None:
        """The state changed outside a step (grasp, release): recompute it when read."""
        self._cache = None

    def capture_state(self):
        """The :class:`~vm_dynamics.capture.CaptureState` now (computed once per step)."""
        if self._cache is None or self._cache[0] != self.steps:
            self._cache = (self.steps, self.cs.state)
        return self._cache[1]

    def arrays(self):
        """``(t, g, V, q, q̇)`` of the chaser (the engine's state arrays)."""
        s = self.capture_state()
        return self.t, s.g, s.V, s.q, s.qd

    def energy(self) -> tuple[float, float]:
        """``(kinetic, potential)``: both bodies' kinetic energy and the contacts' elastic
        energy."""
        e = self.cs.energy()
        return e["chaser"] + e["target"], e["elastic"]

    @property
    def work(self) -> float:
        """Work of the inputs and of the measured wrench, minus the contact dissipation and the
        kinetic energy lost in the plastic welds (J)."""
        s = self.capture_state()
        return s.work + s.exchanged - s.dissipated - self.cs.weld_loss

    @property
    def abs_work(self) -> float:
        """The energy scale of the accounts: ``|W| + |X| + D + weld loss`` (J)."""
        s = self.capture_state()
        return abs(s.work) + abs(s.exchanged) + s.dissipated + self.cs.weld_loss

    def snapshot(self):
        """A copy of the state to :meth:`restore` (the system and models shared)."""
        memo = {id(self.system): self.system, id(self.cs.model): self.cs.model,
                id(self.model): self.model}
        return self.steps, copy.deepcopy(self.cs, memo)

    def restore(self, snap) -> None:
        self.steps, cs = snap
        self.cs = copy.deepcopy(cs, {id(self.system): self.system, id(cs.model): cs.model,
                                     id(self.model): self.model})
        self._cache = None

    def set_joints(self) -> None:
        raise ValueError("capture: the joints must be simulated (joint_source simulated)")

    # ------------------------------------------------------------------ stepping
    def held_inputs(self, tau=None, base_wrench=None, base_wrench_inertial=None,
                    frame_wrenches=None) -> CaptureInputs:
        """The inputs as the capture simulator takes them; ``frame_wrenches`` is the measured
        wrench (one frame)."""
        m = self.model
        tau = np.zeros(m.n) if tau is None else as_vector(tau, m.n, "tau")
        bw = None if base_wrench is None else as_vector(base_wrench, 6, "base_wrench")
        bwi = None if base_wrench_inertial is None else \
            as_vector(base_wrench_inertial, 6, "base_wrench_inertial")
        measured = None
        if frame_wrenches:
            if len(frame_wrenches) != 1:
                raise ValueError(f"capture: one measured wrench at a time, got frames "
                                 f"{sorted(frame_wrenches)}")
            (frame, w), = frame_wrenches.items()
            measured = MeasuredWrench(frame, as_vector(w, 6, f"frame_wrenches[{frame!r}]"))
        return CaptureInputs(tau, bw, bwi, measured)

    def step(self, inputs: CaptureInputs | None = None) -> None:
        self.run(1, inputs)

    def run(self, steps: int, inputs: CaptureInputs | None = None) -> None:
        """``steps`` steps with the held ``inputs``; a failure raises (the state of the last
        completed step kept)."""
        inp = inputs if inputs is not None else self.held_inputs()
        stage = None
        if inp.base_wrench_inertial is not None:      # constant in inertial axes
            wi = inp.base_wrench_inertial

            def stage(t, s):
                Rt = s.g[:3, :3].T
                bw = np.concatenate([Rt @ wi[:3], Rt @ wi[3:]])
                return inp.tau, bw if inp.base_wrench is None else bw + inp.base_wrench
        for _ in range(int(steps)):
            if stage is None:
                self.cs.step(inp.tau, inp.base_wrench, measured_wrench=inp.measured)
            else:
                self.cs.step(stage_inputs=stage, measured_wrench=inp.measured)
            self.steps += 1
            self._cache = None


class CapturePart:
    """The capture in the dynamics core: the engine, the target's outputs, grasp and release
    (module docstring).  ``world`` is the odometry frame (TF parent of both bodies)."""

    def __init__(self, engine: CaptureEngine, world: str):
        self.engine = engine
        self.world = world
        self.name = engine.system.target.name
        self.grasps = self.releases = 0

    # ------------------------------------------------------------------ services
    def grasp(self) -> tuple[bool, str]:
        """``~/grasp``: weld the target if the grasp condition holds."""
        sysm, cs = self.engine.system, self.engine.cs
        if sysm.grasp is None:
            return False, "no capture.grasp section in the scenario: nothing can be grasped"
        if cs.grasped:
            return False, "already grasped"
        dp, da = cs.grasp_error()
        if not cs.grasp():
            return False, (f"grasp condition not met at t={self.engine.t:.3f} s: the fixture "
                           f"is {dp:.4g} m (grasp.position_tol {sysm.grasp.position_tol:g}) "
                           f"and {da:.4g} rad (grasp.angle_tol {sysm.grasp.angle_tol:g}) "
                           f"from {sysm.grasp.frame!r}")
        self.engine.invalidate()
        self.grasps += 1
        return True, (f"grasped at t={self.engine.t:.3f} s ({dp:.4g} m, {da:.4g} rad from "
                      f"the fixture)")

    def release(self) -> tuple[bool, str]:
        """``~/release``: undo the weld (the target leaves with its attachment's twist)."""
        if not self.engine.cs.release():
            return False, "not grasped: nothing to release"
        self.engine.invalidate()
        self.releases += 1
        return True, f"released at t={self.engine.t:.3f} s"

    # ------------------------------------------------------------------ outputs
    def target_pose_twist(self):
        """``(g_T, V_T)``: the target's pose and body twist now."""
        s = self.engine.capture_state()
        return s.g_T, s.V_T

    def transform(self):
        """The TF transform ``(world, target, g_T)``."""
        return self.world, self.name, self.target_pose_twist()[0]

    def contact_wrench(self) -> np.ndarray:
        """Sum of the wrenches the chaser (contacts, or the measured wrench) exerts on the
        target, about its origin in its axes ``[f; n]``; zero while apart or grasped."""
        eng = self.engine
        s = eng.capture_state()
        if s.grasped:
            return np.zeros(6)
        Ws = np.zeros(6)                          # on the target, inertial, about the origin
        for cf in eng.cs.contacts:
            Ws -= cf.spatial_wrench
        return lie.Ad(s.g_T).T @ Ws

    def messages(self, stamp: float, held: CaptureInputs | None = None):
        """``[(key, message)]``: ``target_odom``, ``target_marker``, ``contact_wrench`` (with
        the ``held`` inputs' measured wrench, its opposite on the target)."""
        g_T, V_T = self.target_pose_twist()
        w = self.contact_wrench()
        measured = None if held is None else held.measured
        if measured is not None and not self.engine.cs.grasped:
            s = self.engine.capture_state()
            g_s = s.g @ self.engine.model.frame_pose(s.q, measured.frame)
            w = lie.Ad(g_T).T @ -(lie.Ad_inv(g_s).T @ measured.wrench)
        return [("target_odom", rm.odometry_msg(stamp, g_T, V_T, self.world, self.name)),
                ("target_marker", self.marker(stamp)),
                ("contact_wrench", rm.wrench_stamped_msg(stamp, w, self.name))]

    def marker(self, stamp: float) -> Any:
        """``visualization_msgs/Marker`` of the target's shape, in the target's frame."""
        tgt = self.engine.system.target
        return shape_marker(stamp, self.name, tgt.shape, tgt.shape_pose, ns="target",
                            grasped=self.engine.cs.grasped)

    def statistics(self) -> dict:
        """For ``/diagnostics``: grasp state, contacts, momenta and energy accounts."""
        eng = self.engine
        s = eng.capture_state()
        h = eng.cs.momentum()
        e = eng.cs.energy()
        dp, da = (eng.cs.grasp_error() if eng.system.grasp is not None and not s.grasped
                  else (0.0, 0.0))
        return {"grasped": s.grasped, "grasps": self.grasps, "releases": self.releases,
                "contacts": len(eng.cs.contacts),
                "contact_force_N": float(np.linalg.norm(self.contact_wrench()[:3])),
                "grasp_position_error_m": dp, "grasp_angle_error_rad": da,
                "total_linear_momentum": float(np.linalg.norm(h["total"][:3])),
                "total_angular_momentum": float(np.linalg.norm(h["total"][3:])),
                "target_kinetic_energy": e["target"], "dissipated_J": e["dissipated"]}


def shape_marker(stamp: float, frame: str, shape, pose, ns: str, grasped: bool = False) -> Any:
    """A Marker drawing ``shape`` at ``pose`` in ``frame`` (a capsule as the cylinder of its
    full length; grey-blue, green once grasped)."""
    kind = shape.kind
    if kind == "box":
        scale = shape.size
    elif kind == "sphere":
        scale = (2 * shape.radius,) * 3
    else:                                         # cylinder, capsule: axis z
        extra = 2 * shape.radius if kind == "capsule" else 0.0
        scale, kind = (2 * shape.radius, 2 * shape.radius, shape.length + extra), "cylinder"
    color = (0.2, 0.8, 0.3, 0.9) if grasped else (0.55, 0.6, 0.75, 0.9)
    return rm.marker_msg(stamp, frame, kind, scale, pose, color, ns=ns)


def capture_part(robot, p: Mapping[str, Any], dt: float, method: str, world: str):
    """The capture of the (flat) parameters ``p`` with the chaser ``robot``, or None without a
    ``capture.target`` section.  ``ValueError`` names the culprit (a section's key, an
    unsupported combination)."""
    if not has_target(p):
        return None
    m = robot.model
    if p["joint_source"] != "simulated":
        raise ValueError(f"capture (a capture.target section): joint_source must be "
                         f"simulated, got {p['joint_source']!r}")
    if robot.forces:
        raise ValueError("capture (a capture.target section): force elements (forces, "
                         "two_body, hydrodynamics) are not supported with a target")
    cap = unflatten(p, "capture")
    tcfg = dict(cap.get("target") or {})
    initial = tcfg.pop("initial", None) or {}
    if not isinstance(initial, dict) or set(initial) - {"position", "orientation", "twist"}:
        raise ValueError(f"capture.target.initial: expected {{position, orientation, twist}}, "
                         f"got {initial!r:.120}")
    target = target_from_config(tcfg, "capture.target")
    g_T0 = pose_from_config({k: initial[k] for k in ("position", "orientation")
                             if k in initial}, "capture.target.initial")
    V_T0 = as_vector(initial.get("twist", [0.0] * 6), 6, "capture.target.initial.twist")
    ccfg = dict(cap.get("contact") or {})
    prims = ccfg.pop("primitives", None) or {}
    if not isinstance(prims, dict):
        raise ValueError("capture.contact.primitives: expected a mapping {name: {frame, shape, "
                         "...}}")
    primitives = [primitive_from_config(name, c, m.frame_names) for name, c in prims.items()]
    contact = contact_model_from_config(ccfg, "capture.contact") if ccfg else None
    gcfg = {k: v for k, v in (cap.get("grasp") or {}).items()
            if k not in ("command_time", "release_time")}       # vm-sim's mission
    grasp = grasp_spec_from_config(gcfg, m.frame_names) if gcfg else None
    if method not in ("rkmk4", "lie_euler"):
        raise ValueError(f"integrator: capture takes rkmk4 or lie_euler, got {method!r}")
    system = CaptureSystem(m, target, primitives, contact, grasp)
    return CapturePart(CaptureEngine(system, dt, method, g_T0, V_T0), world)
