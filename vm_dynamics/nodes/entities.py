"""The bodies of a running simulation that a simulator API addresses by name (the
"entities" of ROS' simulation_interfaces, :mod:`~vm_dynamics.nodes.simulation_interfaces`).

An entity reports its ground-truth state -- pose in a reference frame, and the linear and
angular velocity of its origin observed in that frame -- and may accept a new one.  The
:class:`~vm_dynamics.nodes.dynamics_core.DynamicsCore` lists its entities
(:meth:`~vm_dynamics.nodes.dynamics_core.DynamicsCore.entities`); this module holds the
vehicle's.  Another body (a target) joins the list with an object of the same interface
(:class:`Entity`).

Frames (simulation_interfaces ``EntityState``, common_interfaces PR 240 conventions): the
pose is the body frame in ``frame_id``; the twist ``[v; w]`` is the velocity of the body
origin and the angular velocity, both expressed in ``frame_id`` (not the body twist of
``/odom``): ``v = R v_b``, ``w = R w_b`` for the body twist ``[v_b; w_b]`` and the
orientation ``R``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..core import lie
from ..ros.stamps import stamp_to_ns

__all__ = ["Entity", "EntityPose", "InvalidPose", "VehicleEntity", "TargetEntity", "world_twist",
           "body_twist"]

#: Relative tolerance of "the pose/twist lies in the vehicle's motion subgroup".
SUBGROUP_TOL = 1e-9


class InvalidPose(ValueError):
    """A requested pose that is no pose of the entity (bad quaternion, non-finite or
    unreachable position): simulation_interfaces' ``SetEntityState.INVALID_POSE``."""


@dataclass(frozen=True)
class EntityPose:
    """Ground-truth state of an entity at ``stamp_ns``: 4×4 pose ``g`` in ``frame_id`` and
    the twist ``[v; w]`` (6-vector) observed in ``frame_id`` (see the module docstring)."""

    frame_id: str
    stamp_ns: int
    g: np.ndarray
    twist: np.ndarray


class Entity(Protocol):
    """What the simulator API needs of an entity."""

    name: str

    @property
    def settable(self) -> bool:
        """True if :meth:`set_state` can succeed in this configuration."""

    def state(self) -> EntityPose:
        """The current ground-truth state."""

    def set_state(self, g: np.ndarray, twist: np.ndarray) -> None:
        """Set pose and twist (in :meth:`state`'s frame) now; :class:`InvalidPose` for a
        pose it cannot take, ``ValueError`` for a twist it cannot take."""


def world_twist(g: np.ndarray, V6: np.ndarray) -> np.ndarray:
    """Body twist ``[v_b; w_b]`` at pose ``g`` -> ``[R v_b; R w_b]``."""
    R = g[:3, :3]
    return np.concatenate([R @ V6[:3], R @ V6[3:]])


def body_twist(g: np.ndarray, twist: np.ndarray) -> np.ndarray:
    """Inverse of :func:`world_twist`."""
    Rt = g[:3, :3].T
    return np.concatenate([Rt @ twist[:3], Rt @ twist[3:]])


class VehicleEntity:
    """The vehicle (the robot's base): named after the robot (the URDF's ``name``), its
    state in the frame of ``/odom`` (``odom_frame``, or the orbit output frame).  Setting it
    moves the base and keeps the joints, the time and the step count
    (:meth:`vm_dynamics.sim.engine.Simulator.set_vehicle`); the vehicle's motion group limits
    what it can take: a planar (SE2) base stays in its plane, an SO3 base at its position, a
    fixed base where it is.  In orbit the state is read in the output frame and cannot be
    set."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.name = core.model.name or "vehicle"

    @property
    def frame_id(self) -> str:
        core = self.core
        return core.output.frame_id if core.output is not None else core.robot.odom_frame

    @property
    def settable(self) -> bool:
        return self.core.output is None and self.core.capture is None

    def state(self) -> EntityPose:
        core = self.core
        _, g, V, _, _ = core.sim.arrays()
        V6 = core.model.group.embed(V)
        if core.output is not None:
            g, V6, _ = core.output.sample(core.t, g, V6)
        g = np.array(g, dtype=float)
        # simulated time itself: the published stamps add a nanosecond per heartbeat while
        # paused (DynamicsCore.stamp_ns), which is no simulated time
        return EntityPose(self.frame_id, stamp_to_ns(core.t), g,
                          world_twist(g, np.asarray(V6)))

    def set_state(self, g: np.ndarray, twist: np.ndarray) -> None:
        core = self.core
        if core.output is not None:
            raise ValueError(f"entity {self.name}: the state of a vehicle in orbit cannot be "
                             "set (its frame moves with the reference orbit)")
        if core.capture is not None:
            raise ValueError(f"entity {self.name}: the vehicle's state cannot be set in a "
                             "capture simulation (contact and grasp would jump)")
        group = core.model.group
        g = np.asarray(g, dtype=float)
        twist = np.asarray(twist, dtype=float)
        if not np.all(np.isfinite(twist)):
            raise ValueError(f"entity {self.name}: twist is not finite: {twist.tolist()}")
        # reachable: g = g0 exp(xi) with xi in the group's axes (the motion subgroup through
        # the initial pose)
        xi = lie.se3_log(lie.se3_inv(core.g0) @ g)
        off = [k for k in range(6) if k not in group.axes]
        scale = 1.0 + float(np.max(np.abs(xi)))
        if off and np.max(np.abs(xi[off])) > SUBGROUP_TOL * scale:
            raise InvalidPose(f"entity {self.name}: a {group.name} base cannot take this pose "
                              f"(it moves only along twist axes {list(group.axes)} of [v; w] "
                              f"from its initial pose)")
        V6 = body_twist(g, twist)
        vscale = 1.0 + float(np.max(np.abs(V6)))
        if off and np.max(np.abs(V6[off])) > SUBGROUP_TOL * vscale:
            raise ValueError(f"entity {self.name}: a {group.name} base cannot take this twist "
                             f"(body twist {np.round(V6, 12).tolist()} has components off its "
                             f"axes {list(group.axes)} of [v; w])")
        core.set_vehicle_state(g, group.project(V6))


class TargetEntity:
    """The capture target (:mod:`~vm_dynamics.nodes.capture`), named as in the scenario's
    ``capture.target.name``: its pose and twist in the odometry frame (the TF parent of
    ``target``), read only -- a jump of one body of a contact or a weld has no physical
    meaning."""

    settable = False

    def __init__(self, core: Any) -> None:
        self.core = core
        self.name = core.capture.name

    def state(self) -> EntityPose:
        part = self.core.capture
        g_T, V_T = part.target_pose_twist()
        g_T = np.array(g_T, dtype=float)
        return EntityPose(part.world, stamp_to_ns(self.core.t), g_T,
                          world_twist(g_T, np.asarray(V_T, dtype=float)))

    def set_state(self, g: np.ndarray, twist: np.ndarray) -> None:
        raise ValueError(f"entity {self.name}: the target's state cannot be set (it is "
                         "integrated with the chaser, in contact or welded to it)")
