"""The controller node in a capture: it flies the arm to the tumbling target, grasps it through
the dynamics node's ``~/grasp`` service and detumbles the stack (issue 22; ``vm-sim``'s
:class:`~vm_dynamics.capture.mission.CaptureMission` with the phase logic split between the two
nodes).

The controller node reads the same ``capture`` section as the dynamics node and ``vm-sim``
(the scenario file is both nodes' parameter file).  When that section has a ``target`` and no
``controller`` (nor ``controller.name``) is given, the node's law is :class:`CaptureControl`:

1. **Track** -- the ``capture.track`` controller (as in vm-sim, its ``frame`` defaulting to
   ``grasp.frame``) follows :class:`~vm_dynamics.capture.mission.FixtureReference` with the
   ``capture.approach`` standoff profile, fed with the target's pose and body twist from
   ``target/odom`` (nav_msgs/Odometry ``odom_frame -> capture.target.name``).  In lockstep a
   state is answered only once the target's odometry with the same stamp arrived, so the law
   sees chaser and target at the same instant.
2. **Grasp** -- from ``capture.grasp.command_time`` (simulation time) on, before answering a
   state the node calls ``~/grasp`` (std_srvs/Trigger, :data:`GRASP_SERVICE`) until it
   succeeds; the dynamics node welds the target only when the grasp condition holds.  On the
   DDS transport the call waits for the response, so in lockstep the weld happens at exactly
   the state being answered; on rclpy it is asynchronous and the response is taken at a later
   state (the weld pose ``X`` below is constant once welded, so it is the same).
3. **Detumble** -- after the grasp the ``capture.detumble`` controller is reset on the merged
   model (:meth:`~vm_dynamics.Model.with_attached_body` with the target's spatial inertia at
   the measured grasp pose ``X = g_E⁻¹ g_T``, the model the dynamics node integrates), holding
   the state of the grasp.

``capture.control_rate`` and ``capture.grasp.release_time`` are vm-sim's (here the node's
``control_rate``/``lockstep`` apply, and ``~/release`` is called by hand).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..capture import grasp_spec_from_config, target_from_config
from ..capture.mission import FixtureReference, controller_from_config
from ..config.params import unflatten
from ..control.references import Reference
from ..core import lie
from ..ros import messages as rm
from .capture import has_target

__all__ = ["CaptureControl", "capture_control", "GRASP_SERVICE", "TARGET_ODOM"]

#: The dynamics node's grasp service, relative to the controller node's namespace.
GRASP_SERVICE = "dynamics_node/grasp"
#: The target's odometry the dynamics node publishes.
TARGET_ODOM = "target/odom"


def capture_control(robot, p: Mapping[str, Any]) -> "CaptureControl | None":
    """The capture law of the (flat) parameters ``p``, or None: no ``capture.target`` section,
    or a ``controller`` (``controller.name``) is selected and flies the arm instead."""
    if not has_target(p) or p.get("controller") or p.get("controller.name"):
        return None
    return CaptureControl(robot, p)


class CaptureControl:
    """Track, grasp, detumble (module docstring).  It has a controller plug-in's interface
    (``reset(model, state, external=None)``, ``compute(t, state, reference)``), so the
    controller core runs it as its law."""

    def __init__(self, robot, p: Mapping[str, Any]):
        self.robot = robot
        self.model = robot.model
        cap = unflatten(p, "capture")
        for key in ("grasp", "track", "detumble"):
            if not cap.get(key):
                raise ValueError(f"capture.{key}: missing (the controller node runs the capture "
                                 f"mission; or select a controller with controller:=NAME)")
        tcfg = {k: v for k, v in cap["target"].items() if k != "initial"}
        self.target = target_from_config(tcfg, "capture.target")
        gcfg = dict(cap["grasp"])
        command_time = gcfg.pop("command_time", None)
        gcfg.pop("release_time", None)
        self.grasp_spec = grasp_spec_from_config(gcfg, self.model.frame_names)
        self.command_time = None if command_time is None else float(command_time)
        acfg = cap.get("approach") or {}
        unknown = set(acfg) - {"standoff", "start", "arrive"}
        if unknown:
            raise ValueError(f"capture.approach: unknown keys {sorted(unknown)}")
        self.reference = FixtureReference(self.target, acfg.get("standoff", 0.0),
                                          acfg.get("start", 0.0), acfg.get("arrive", 0.0))
        track = dict(cap["track"])
        track.setdefault("frame", self.grasp_spec.frame)
        self.track = controller_from_config(track, "capture.track")
        self.detumble = controller_from_config(dict(cap["detumble"]), "capture.detumble")
        self.world = robot.odom_frame
        self.grasped = False
        self._started = False        # reset() ran: the track phase is on
        self.attempts = 0
        self._target = None          # (stamp s, g_T, V_T)

    def __repr__(self) -> str:
        return f"CaptureControl(track={self.track!r}, detumble={self.detumble!r})"

    # ------------------------------------------------------------------ the target
    def on_target_odometry(self, msg: Any) -> float:
        """``target/odom``: the target's pose and body twist; returns its stamp (s).  Wrong
        frames or a malformed message raise ``ValueError`` naming them."""
        od = rm.parse_odometry(msg)
        if od.frame_id != self.world or od.child_frame_id != self.target.name:
            raise ValueError(f"frames {od.frame_id!r} -> {od.child_frame_id!r}; expected "
                             f"{self.world!r} -> {self.target.name!r}")
        t = od.stamp_ns * 1e-9
        self._target = (t, np.asarray(od.g, dtype=float), np.asarray(od.twist, dtype=float))
        return t

    @property
    def target_stamp(self) -> float | None:
        """Stamp of the latest target odometry (s), None before the first."""
        return None if self._target is None else self._target[0]

    # ------------------------------------------------------------------ phases
    def grasp_due(self, t: float) -> bool:
        """``~/grasp`` is to be called for the state at ``t``: at or after ``command_time``,
        not grasped yet, the target's state known."""
        return (self.command_time is not None and self._started and not self.grasped
                and self._target is not None and t >= self.command_time - 1e-12)

    def on_grasped(self, state) -> None:
        """The dynamics node welded the target at ``state`` (the chaser's, the target's latest
        odometry being of the same instant): the detumble law on the merged model."""
        _, g_T, _ = self._target
        frame = self.grasp_spec.frame
        g_E = np.asarray(state.g) @ self.model.frame_pose(state.q, frame)
        X = lie.se3_inv(g_E) @ g_T
        merged = self.model.with_attached_body(frame, self.target.spatial_inertia, X)
        self.detumble.reset(merged, state)
        self.grasped = True

    # ------------------------------------------------------------------ the law
    def reset(self, model, state, external=None) -> None:
        """Start (again) in the track phase (a simulation reset restores the target too)."""
        self.model = model
        self.grasped = False
        self.track.reset(model, state)
        self._started = True

    def compute(self, t: float, state, reference=None):
        """``(tau, base_wrench)`` of the current phase (``reference`` unused: the fixture is
        the reference).  Before the target's first odometry: ``RuntimeError``."""
        if self.grasped:
            return self.detumble.compute(t, state, Reference())
        if self._target is None:
            raise RuntimeError(f"no {TARGET_ODOM} received yet")
        self.reference.observe(self._target[1], self._target[2])
        tau, bw = self.track.compute(t, state, Reference(ee=self.reference))
        return tau, (np.zeros(self.model.b) if bw is None else bw)
