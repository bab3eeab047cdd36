"""Reference trajectories for the controllers: joint space and poses on SE(3).

Every trajectory is a callable ``traj(t) -> (position, velocity, acceleration)``:

* joint trajectories return ``(q_d, qd_d, qdd_d)``, three n-vectors;
* pose trajectories return ``(g_d, V_d, Vdot_d)``: a 4×4 pose in the inertial frame, its **body**
  twist ``[v; ω]`` (``g_d⁻¹ ġ_d = V_d^``) and the derivative of that twist.  With ``group``
  (``"SE2"``, ``"SO3"``, ...) they return b-vectors of the subgroup instead of 6-vectors.

:class:`Reference` bundles a joint trajectory with optional vehicle (``base``) and end-effector
(``ee``) pose trajectories; that bundle is what ``Controller.compute`` receives.  Poses are
interpolated with exp/log of SE(3) (the relative motion between waypoints is one screw motion
timed by a minimum-jerk profile), so there are no Euler angles and no singular attitudes.
"""
from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..core import lie
from ..core.groups import get_group
from ..core.validation import as_array, as_pose

__all__ = ["JointWaypoints", "JointSinusoid", "JointSetpoint", "PoseWaypoints", "PoseSetpoint",
           "Reference", "as_reference", "reference_from_config", "pose_from_config",
           "minimum_jerk", "quintic"]


# ---------------------------------------------------------------------------- scalar profiles
def minimum_jerk(tau):
    """``s(τ) = 10τ³ − 15τ⁴ + 6τ⁵`` on [0, 1] and its first two τ-derivatives (Flash–Hogan)."""
    tau = np.clip(tau, 0.0, 1.0)
    s = tau ** 3 * (10.0 + tau * (-15.0 + 6.0 * tau))
    ds = 30.0 * tau ** 2 * (1.0 - tau) ** 2
    dds = 60.0 * tau * (1.0 - tau) * (1.0 - 2.0 * tau)
    return s, ds, dds


def quintic(T: float, p0, v0, a0, p1, v1, a1) -> np.ndarray:
    """Coefficients ``c[0..5]`` (rows) of ``p(τ) = Σ c_k τ^k`` matching position, velocity and
    acceleration at ``τ = 0`` and ``τ = T``.  With zero end velocities and accelerations this is
    the minimum-jerk rest-to-rest motion."""
    p0, v0, a0, p1, v1, a1 = (np.asarray(x, dtype=float) for x in (p0, v0, a0, p1, v1, a1))
    T2, T3 = T * T, T ** 3
    h = p1 - p0 - v0 * T - 0.5 * a0 * T2
    dv = v1 - v0 - a0 * T
    da = a1 - a0
    c3 = (10.0 * h - 4.0 * dv * T + 0.5 * da * T2) / T3
    c4 = (-15.0 * h + 7.0 * dv * T - da * T2) / (T3 * T)
    c5 = (6.0 * h - 3.0 * dv * T + 0.5 * da * T2) / (T3 * T2)
    return np.array([p0, v0, 0.5 * a0, c3, c4, c5])


# ---------------------------------------------------------------------------- validation
def _times(times, name="times", min_len=1) -> np.ndarray:
    try:
        t = np.asarray(times, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a list of numbers, got {times!r}") from None
    if t.ndim != 1 or t.size < min_len:
        raise ValueError(f"{name}: expected a list of at least {min_len} times, got shape "
                         f"{t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError(f"{name}: contains NaN or Inf")
    bad = np.flatnonzero(np.diff(t) <= 0.0)
    if bad.size:
        raise ValueError(f"{name}: must be strictly increasing; {name}[{bad[0] + 1}] = "
                         f"{t[bad[0] + 1]} <= {name}[{bad[0]}] = {t[bad[0]]}")
    return t


# ---------------------------------------------------------------------------- joint trajectories
class JointWaypoints:
    """Piecewise-quintic joint trajectory through ``positions[k]`` at ``times[k]``.

    ``velocities``/``accelerations`` (same shape as ``positions``) default to zero, which makes
    every segment a minimum-jerk rest-to-rest motion.  Before ``times[0]`` the trajectory holds
    ``positions[0]``; after ``times[-1]`` it holds ``positions[-1]`` (both at rest).
    """

    def __init__(self, times, positions, velocities=None, accelerations=None):
        self.times = _times(times)
        pos = as_array(positions, None, "positions")
        if pos.ndim == 1:
            pos = pos[:, None]
        if pos.ndim != 2 or pos.shape[0] != self.times.size:
            raise ValueError(f"positions: expected one row per time ({self.times.size} rows), "
                             f"got shape {pos.shape}")
        self.n = pos.shape[1]
        vel = (np.zeros_like(pos) if velocities is None
               else as_array(velocities, pos.shape, "velocities"))
        acc = (np.zeros_like(pos) if accelerations is None
               else as_array(accelerations, pos.shape, "accelerations"))
        self.positions = pos
        self._coef = [np.asarray(quintic(self.times[k + 1] - self.times[k], pos[k], vel[k],
                                         acc[k], pos[k + 1], vel[k + 1], acc[k + 1]),
                                 dtype=float).reshape(6, self.n)
                      for k in range(self.times.size - 1)]
        self._tlist = [float(x) for x in self.times]

    @property
    def coefficients(self) -> np.ndarray:
        """``(K − 1, 6, n)``: segment k is ``Σ_i coefficients[k, i] (t − times[k])^i``."""
        if not self._coef:
            return np.zeros((0, 6, self.n))
        return np.stack(self._coef)

    def __call__(self, t):
        T = self._tlist
        t = float(t)
        if t <= T[0] or len(T) == 1:
            return self.positions[0].copy(), np.zeros(self.n), np.zeros(self.n)
        if t >= T[-1]:
            return self.positions[-1].copy(), np.zeros(self.n), np.zeros(self.n)
        k = bisect.bisect_right(T, t) - 1
        s = t - T[k]
        s2, s3 = s * s, s * s * s
        # rows: position, velocity, acceleration of the quintic Σ c_i s^i (one small product)
        basis = np.array([[1.0, s, s2, s3, s3 * s, s3 * s2],
                          [0.0, 1.0, 2.0 * s, 3.0 * s2, 4.0 * s3, 5.0 * s3 * s],
                          [0.0, 0.0, 2.0, 6.0 * s, 12.0 * s2, 20.0 * s3]])
        p, v, a = basis @ self._coef[k]
        return p, v, a


class JointSinusoid:
    """``q_d(t) = q0 + amplitude · sin(2π · frequency · t + phase)`` (frequency in Hz, phase in
    rad); ``amplitude``, ``frequency`` and ``phase`` are scalars or n-vectors."""

    def __init__(self, q0, amplitude, frequency, phase=0.0):
        self.q0 = as_array(q0, None, "q0").reshape(-1)
        self.n = n = self.q0.size
        self.amplitude, self.frequency, self.phase = (
            np.broadcast_to(as_array(v, None, k), (n,)).astype(float) if np.ndim(v) == 0
            else as_array(v, (n,), k)
            for k, v in (("amplitude", amplitude), ("frequency", frequency), ("phase", phase)))
        if np.any(self.frequency < 0):
            raise ValueError(f"frequency: must be non-negative, got {self.frequency}")

    def __call__(self, t):
        w = 2.0 * np.pi * self.frequency
        arg = w * t + self.phase
        s, c = np.sin(arg), np.cos(arg)
        return (self.q0 + self.amplitude * s, self.amplitude * w * c,
                -self.amplitude * w * w * s)


class JointSetpoint:
    """Constant joint position ``q`` (zero velocity and acceleration)."""

    def __init__(self, q):
        self.q = as_array(q, None, "q").reshape(-1)
        self.n = self.q.size

    def __call__(self, t):
        return self.q.copy(), np.zeros(self.n), np.zeros(self.n)


# ---------------------------------------------------------------------------- pose trajectories
class PoseWaypoints:
    """Pose trajectory on SE(3) through ``poses[k]`` (4×4) at ``times[k]``.

    Segment k is the screw motion ``g(t) = g_k exp(s(τ) X_k)`` with ``X_k = log(g_k⁻¹ g_{k+1})``
    and ``s`` the minimum-jerk profile of ``τ = (t − t_k)/(t_{k+1} − t_k)``; so the body twist
    is exactly ``V = ṡ X_k`` and ``V̇ = s̈ X_k`` (X_k commutes with exp(sX_k)).  The trajectory
    rests at every waypoint.  Each segment must rotate by less than π (log is ambiguous at π):
    insert an intermediate waypoint for larger rotations.  With ``group`` the twists are
    returned as b-vectors of that subgroup, and every segment must lie in it.
    """

    def __init__(self, times, poses, group=None):
        self.times = _times(times)
        try:
            poses = list(poses)
        except TypeError:
            raise ValueError("poses: expected a list of 4x4 poses") from None
        if len(poses) != self.times.size:
            raise ValueError(f"poses: expected {self.times.size} poses (one per time), got "
                             f"{len(poses)}")
        self.poses = [as_pose(g, f"poses[{k}]") for k, g in enumerate(poses)]
        self.group = None if group is None else get_group(group)
        self._X = []
        for k in range(len(self.poses) - 1):
            X = lie.se3_log(lie.se3_inv(self.poses[k]) @ self.poses[k + 1])
            if np.linalg.norm(X[3:]) > np.pi - 1e-6:
                raise ValueError(f"poses[{k}] -> poses[{k + 1}]: rotates by π or more; insert an "
                                 f"intermediate waypoint")
            if self.group is not None:
                off = np.delete(X, list(self.group.axes))
                if off.size and np.abs(off).max() > 1e-9 * max(1.0, np.abs(X).max()):
                    raise ValueError(f"poses[{k}] -> poses[{k + 1}]: the relative motion leaves "
                                     f"the {self.group.name} subgroup")
            self._X.append(X)

    def _out(self, g, V, Vdot):
        if self.group is None:
            return g, V, Vdot
        return g, self.group.project(V), self.group.project(Vdot)

    def __call__(self, t):
        T = self.times
        zero = np.zeros(6)
        if t <= T[0] or T.size == 1:
            return self._out(self.poses[0].copy(), zero, zero.copy())
        if t >= T[-1]:
            return self._out(self.poses[-1].copy(), zero, zero.copy())
        k = int(np.searchsorted(T, t, side="right")) - 1
        D = T[k + 1] - T[k]
        s, ds, dds = minimum_jerk((t - T[k]) / D)
        X = self._X[k]
        return self._out(self.poses[k] @ lie.se3_exp(s * X), (ds / D) * X, (dds / D ** 2) * X)


class PoseSetpoint(PoseWaypoints):
    """Constant pose (zero twist and acceleration)."""

    def __init__(self, pose, group=None):
        super().__init__([0.0], [pose], group)


# ---------------------------------------------------------------------------- the bundle
@dataclass
class Reference:
    """What a controller tracks: ``joint`` (required by joint-space controllers), ``base``
    (vehicle pose, for an actuated vehicle) and ``ee`` (end-effector pose, for task space).

    Each field is a trajectory (callable ``t -> triple``) or ``None``; a controller holds the
    value captured at ``reset`` for every reference it needs that is ``None``.
    """

    joint: object = None
    base: object = None
    ee: object = None

    def __post_init__(self):
        for k in ("joint", "base", "ee"):
            v = getattr(self, k)
            if v is not None and not callable(v):
                raise ValueError(f"Reference.{k}: expected a trajectory (callable t -> triple) "
                                 f"or None, got {type(v).__name__}")


def as_reference(ref) -> Reference:
    """Wrap a bare joint trajectory (or ``None``) as a :class:`Reference`."""
    if ref is None:
        return Reference()
    if isinstance(ref, Reference):
        return ref
    if all(hasattr(ref, k) for k in ("joint", "base", "ee")):
        return ref
    if isinstance(ref, (PoseWaypoints,)):
        raise ValueError("reference: a bare pose trajectory is ambiguous; use "
                         "Reference(base=...) or Reference(ee=...)")
    if callable(ref):
        return Reference(joint=ref)
    raise ValueError(f"reference: expected a Reference or a joint trajectory, got "
                     f"{type(ref).__name__}")


# ---------------------------------------------------------------------------- config
def _keys(cfg, allowed, name):
    if not isinstance(cfg, Mapping):
        raise ValueError(f"{name}: expected a mapping, got {type(cfg).__name__}")
    for k in cfg:
        if k not in allowed:
            raise ValueError(f"{name}: unknown key {k!r}; valid keys are: {', '.join(allowed)}")


def _need(cfg, key, name):
    if key not in cfg:
        raise ValueError(f"{name}: missing key {key!r}")
    return cfg[key]


def pose_from_config(cfg, name="pose") -> np.ndarray:
    """A pose from ``{position: [x, y, z], orientation: [qx, qy, qz, qw]}`` (ROS quaternion
    order; both optional, default identity) or from a 4×4 nested list."""
    if isinstance(cfg, Mapping):
        _keys(cfg, ("position", "orientation"), name)
        g = np.eye(4)
        if "orientation" in cfg:
            g[:3, :3] = lie.quaternion_to_matrix(cfg["orientation"], f"{name}.orientation")
        if "position" in cfg:
            g[:3, 3] = as_array(cfg["position"], (3,), f"{name}.position")
        return g
    return as_pose(cfg, name)


_JOINT_KEYS = {"waypoints": ("type", "times", "positions", "velocities", "accelerations"),
               "sinusoid": ("type", "q0", "amplitude", "frequency", "phase"),
               "setpoint": ("type", "q")}
_POSE_KEYS = {"waypoints": ("type", "times", "poses", "group"),
              "setpoint": ("type", "pose", "group")}


def _section_kind(cfg, name, table) -> str:
    """The ``type`` of a reference section, its keys checked against ``table[type]``."""
    if not isinstance(cfg, Mapping):
        raise ValueError(f"{name}: expected a mapping with a 'type' key, got {type(cfg).__name__}")
    kind = _need(cfg, "type", name)
    if kind not in table:
        raise ValueError(f"{name}.type: {kind!r}; choose one of {', '.join(table)}")
    _keys(cfg, table[kind], name)
    return kind


def _joint_from_config(cfg, name):
    kind = _section_kind(cfg, name, _JOINT_KEYS)
    if kind == "waypoints":
        return JointWaypoints(_need(cfg, "times", name), _need(cfg, "positions", name),
                              cfg.get("velocities"), cfg.get("accelerations"))
    if kind == "sinusoid":
        return JointSinusoid(_need(cfg, "q0", name), _need(cfg, "amplitude", name),
                             _need(cfg, "frequency", name), cfg.get("phase", 0.0))
    return JointSetpoint(_need(cfg, "q", name))


def _pose_traj_from_config(cfg, name):
    kind = _section_kind(cfg, name, _POSE_KEYS)
    group = cfg.get("group")
    if kind == "waypoints":
        poses = _need(cfg, "poses", name)
        if not isinstance(poses, (list, tuple)):
            raise ValueError(f"{name}.poses: expected a list of poses")
        poses = [pose_from_config(p, f"{name}.poses[{k}]") for k, p in enumerate(poses)]
        return PoseWaypoints(_need(cfg, "times", name), poses, group)
    return PoseSetpoint(pose_from_config(_need(cfg, "pose", name), f"{name}.pose"), group)


def reference_from_config(cfg) -> Reference:
    """Build a :class:`Reference` from a YAML-style mapping.

    Keys (all optional)::

        joint:                              # joint-space reference
          type: waypoints                   #   quintic/minimum-jerk segments
          times: [0.0, 1.0, 2.5]            #   strictly increasing, s
          positions: [[...], [...], [...]]  #   one n-list per time, rad or m
          velocities: ...                   #   optional, same shape (default 0)
          accelerations: ...                #   optional, same shape (default 0)
        # or  {type: sinusoid, q0: [...], amplitude: a, frequency: f_Hz, phase: phi_rad}
        # or  {type: setpoint, q: [...]}
        base:                               # vehicle pose reference (inertial frame)
          type: waypoints                   #   minimum-jerk screw motions (exp/log of SE(3))
          times: [0.0, 2.0]
          poses:
            - {position: [0, 0, 0], orientation: [0, 0, 0, 1]}    # quaternion x, y, z, w
            - {position: [1, 0, 0], orientation: [0, 0.7071068, 0, 0.7071068]}
          group: SE3                        #   optional: return b-vectors of this subgroup
        # or  {type: setpoint, pose: {...}}
        ee: ...                             # end-effector pose reference, same form as base
    """
    _keys(cfg, ("joint", "base", "ee"), "reference")
    return Reference(
        joint=_joint_from_config(cfg["joint"], "reference.joint") if cfg.get("joint") else None,
        base=_pose_traj_from_config(cfg["base"], "reference.base") if cfg.get("base") else None,
        ee=_pose_traj_from_config(cfg["ee"], "reference.ee") if cfg.get("ee") else None)
