"""Joint trajectories for the controller node: a ``trajectory_msgs/JointTrajectory`` read
point by point, checked against the URDF joint limits, and the partial references that let a
trajectory of some joints replace only theirs.  Used by
:class:`~vm_dynamics.nodes.controller_core.ControllerCore`.

Joint limits: a ``JointTrajectory`` is **rejected** (not clamped: a clamped trajectory is a
different motion than the one planned), with a warning naming the joint, the point and the
limit, if

* a point's position is outside the URDF ``<limit lower upper>`` of its joint; joints without
  position limits (``continuous``) must stay within ``±position_bound`` (1e6 rad by default:
  float64 still resolves 1e-10 rad there; far beyond any sensible multi-turn target);
* a point's given velocity exceeds the URDF ``<limit velocity>`` (a velocity limit of 0 or
  none means unlimited);
* the motion the controller will follow — the quintic segments from the current desired
  state through the points, sampled 64 times per segment — exceeds the velocity limit (or the
  speed the current reference already has, if that is higher), or leaves ``±position_bound``.
  A rest-to-rest segment peaks at 15/8 of its mean speed: "1 rad in 1 s" needs a velocity
  limit of at least 1.875 rad/s.

A ``~/base_pose`` target farther than ``position_bound`` from the origin is rejected too (the
vehicle has no URDF limits).  The scenario's ``reference.*`` is configuration and not checked.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..control.references import JointWaypoints

__all__ = ["JointLimits", "joint_limits", "SAMPLES", "sampled_motion", "monotone_velocities",
           "PartialJointReference", "Hold", "trajectory_points", "check_waypoints",
           "check_motion"]


def monotone_velocities(t: np.ndarray, p: np.ndarray, v_start: np.ndarray) -> np.ndarray:
    """Waypoint velocities when a trajectory gives positions only: ``v_start`` at the first
    point, zero at the last, and at interior points the mean of the adjacent slopes, or zero
    where the slopes differ in sign (no overshoot at local extrema; Fritsch–Carlson idea)."""
    v = np.zeros_like(p)
    v[0] = v_start
    if len(t) > 2:
        s = np.diff(p, axis=0) / np.diff(t)[:, None]
        inner = 0.5 * (s[:-1] + s[1:])
        inner[s[:-1] * s[1:] <= 0.0] = 0.0
        v[1:-1] = inner
    return v


class JointLimits:
    """Per model joint: position limits (``lower``/``upper``; ``±bound`` for joints without
    URDF position limits, ``limited`` False), velocity limit (``inf`` if the URDF gives none
    or 0), and ``bound`` for the interpolated motion."""

    def __init__(self, names, lower, upper, limited, velocity, bound):
        self.names, self.lower, self.upper = names, lower, upper
        self.limited, self.velocity, self.bound = limited, velocity, bound


def joint_limits(model, bound: float) -> JointLimits:
    n = model.n
    lower, upper = np.full(n, -bound), np.full(n, bound)
    limited = np.zeros(n, dtype=bool)
    velocity = np.full(n, np.inf)
    for j, lim in enumerate(model.joint_limits):
        lo, hi = lim.get("lower"), lim.get("upper")
        if lo is not None and hi is not None and lo <= hi:
            lower[j], upper[j], limited[j] = lo, hi, True
        v = lim.get("velocity")
        if v is not None and v > 0:
            velocity[j] = v
    return JointLimits(list(model.joint_names), lower, upper, limited, velocity, bound)


#: samples per segment of the interpolated motion in the velocity and bound checks
SAMPLES = 64


def sampled_motion(wp: JointWaypoints) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Times (from ``wp.times[0]``), positions and velocities of ``wp`` sampled at
    :data:`SAMPLES` + 1 points per segment: ``(m,)``, ``(m, k)``, ``(m, k)``."""
    coef = wp.coefficients                                # (K - 1, 6, k)
    h = np.diff(wp.times)
    s = h[:, None] * np.linspace(0.0, 1.0, SAMPLES + 1)[None, :]       # (K - 1, S)
    powers = s[..., None] ** np.arange(6)                                # (K - 1, S, 6)
    dpowers = np.zeros_like(powers)
    dpowers[..., 1:] = powers[..., :-1] * np.arange(1, 6)
    with np.errstate(over="ignore", invalid="ignore"):
        q = np.einsum("ksi,kij->ksj", powers, coef)
        v = np.einsum("ksi,kij->ksj", dpowers, coef)
    t = (wp.times[:-1, None] + s - wp.times[0]).reshape(-1)
    k = coef.shape[2]
    return t, q.reshape(-1, k), v.reshape(-1, k)


class PartialJointReference:
    """Joint reference assembled from a ``base`` reference and trajectories of some joints.

    ``pieces`` is a list of ``(joints, waypoints, columns)``: model joints ``joints`` follow
    columns ``columns`` of ``waypoints``; the other joints follow ``base`` (None once every
    joint has a piece).  :meth:`over` adds a trajectory of some joints by dropping what it
    replaces, so the structure stays flat: one level, at most one piece per joint plus the
    base, whatever the number of messages (a chain of references, one per message, made
    evaluation recurse through every earlier message).
    """

    def __init__(self, base: Callable | None, n: int, pieces: list):
        self.base, self.n, self.pieces = base, n, pieces

    @classmethod
    def over(cls, prev: Callable, n: int, index: np.ndarray,
             new: JointWaypoints) -> "PartialJointReference":
        """``prev`` for every joint except ``index``, which follow ``new`` (its columns in the
        order of ``index``)."""
        base, pieces = ((prev.base, prev.pieces) if isinstance(prev, cls) else (prev, []))
        index = np.asarray(index, dtype=int)
        kept = []
        for joints, wp, cols in pieces:
            keep = ~np.isin(joints, index)
            if keep.any():
                kept.append((joints[keep], wp, cols[keep]))
        kept.append((index, new, np.arange(index.size)))
        covered = sum(joints.size for joints, _, _ in kept)
        return cls(None if covered == n else base, n, kept)

    def __call__(self, t):
        if self.base is not None:
            q, v, a = (np.array(x, dtype=float) for x in self.base(t))
        else:
            q, v, a = np.zeros(self.n), np.zeros(self.n), np.zeros(self.n)
        for joints, wp, cols in self.pieces:
            qn, vn, an = wp(t)
            q[joints], v[joints], a[joints] = qn[cols], vn[cols], an[cols]
        return q, v, a


class Hold:
    """Hold the joints at ``q`` (an empty trajectory stops the motion)."""

    def __init__(self, q):
        self.q = np.array(q, dtype=float)

    def __call__(self, t):
        return self.q.copy(), np.zeros_like(self.q), np.zeros_like(self.q)


def trajectory_points(points, k: int):
    """``(times_from_start, positions, velocities or None, accelerations or None)`` of the
    points of a JointTrajectory for ``k`` joints, each checked (sizes, NaN/Inf, times
    strictly increasing, velocities and accelerations given for all points or none)."""
    times, pos, vel, acc = [], [], [], []
    have_v = have_a = True
    for i, pt in enumerate(points):
        sec, nsec = int(pt.time_from_start.sec), int(pt.time_from_start.nanosec)
        if not 0 <= nsec < 1_000_000_000:
            raise ValueError(f"points[{i}].time_from_start.nanosec must be in [0, 1e9), "
                             f"got {nsec}")
        tfs = sec + nsec * 1e-9
        times.append(tfs)
        p = np.asarray(pt.positions, dtype=float)
        if p.shape != (k,):
            raise ValueError(f"points[{i}].positions has {p.size} values for {k} joints")
        pos.append(p)
        for field, store in (("velocities", vel), ("accelerations", acc)):
            a = np.asarray(getattr(pt, field), dtype=float)
            if a.size == 0:
                store.append(None)
            elif a.shape != (k,):
                raise ValueError(f"points[{i}].{field} has {a.size} values for {k} joints")
            else:
                store.append(a)
    have_v = all(v is not None for v in vel)
    have_a = all(a is not None for a in acc)
    if any(v is not None for v in vel) and not have_v:
        raise ValueError("velocities given for some points only")
    if any(a is not None for a in acc) and not have_a:
        raise ValueError("accelerations given for some points only")
    P = np.array(pos)
    for label, arr in (("positions", P), ("velocities", np.array(vel) if have_v else None),
                       ("accelerations", np.array(acc) if have_a else None)):
        if arr is not None and not np.all(np.isfinite(arr)):
            raise ValueError(f"points: {label} contain NaN/Inf")
    tfs = np.array(times)
    if not np.all(np.isfinite(tfs)) or np.any(tfs < 0) or np.any(np.diff(tfs) <= 0):
        raise ValueError(f"time_from_start must be >= 0 and strictly increasing, got "
                         f"{tfs.tolist()}")
    return tfs, P, np.array(vel) if have_v else None, np.array(acc) if have_a else None


def check_waypoints(lim: JointLimits, names: list, index: np.ndarray, P: np.ndarray,
                V: np.ndarray | None) -> None:
    """Every waypoint position within the URDF position limits (``position_bound`` for
    joints without them), every given velocity within the URDF velocity limit."""
    lo, hi = lim.lower[index], lim.upper[index]
    tol = 1e-9 * np.maximum(1.0, hi - lo)
    bad = (P < lo - tol) | (P > hi + tol)
    if bad.any():
        i, c = (int(x) for x in np.argwhere(bad)[0])
        j = index[c]
        where = (f"the URDF limits [{lo[c]:.6g}, {hi[c]:.6g}]" if lim.limited[j] else
                 f"position_bound ±{lim.bound:g} (the joint has no URDF position limits)")
        raise ValueError(f"joint {names[c]!r}: points[{i}].positions = {P[i, c]:.6g} is "
                         f"outside {where}")
    if V is not None:
        vmax = lim.velocity[index]
        over = np.abs(V) > vmax * (1 + 1e-9)
        if over.any():
            i, c = (int(x) for x in np.argwhere(over)[0])
            raise ValueError(f"joint {names[c]!r}: points[{i}].velocities = "
                             f"{V[i, c]:.6g}, above the URDF velocity limit {vmax[c]:.6g}")

def check_motion(lim: JointLimits, names: list, index: np.ndarray, wp: JointWaypoints,
             v_start: np.ndarray) -> None:
    """The motion the controller will follow (the quintics from the current desired
    state, sampled :data:`SAMPLES` times per segment): speed within the URDF velocity
    limit (or the speed the current reference already has, if higher) and |position|
    within ``position_bound`` (absurd given accelerations or velocities)."""
    t, q, v = sampled_motion(wp)
    vmax = np.maximum(lim.velocity[index], np.abs(v_start)) * (1 + 1e-9)
    over = ~(np.abs(v) <= vmax)               # NaN (overflow) counts as over
    if over.any():
        m, c = (int(x) for x in np.argwhere(over)[0])
        peak = float(np.nanmax(np.abs(v[:, c]))) if np.any(np.isfinite(v[:, c])) \
            else math.inf
        raise ValueError(f"joint {names[c]!r}: the interpolated motion reaches "
                         f"{peak:.6g}/s, above the URDF velocity limit "
                         f"{lim.velocity[index[c]]:.6g} (first at {t[m]:.6g} s from now); "
                         f"give the points more time")
    far = ~(np.abs(q) <= lim.bound)
    if far.any():
        m, c = (int(x) for x in np.argwhere(far)[0])
        raise ValueError(f"joint {names[c]!r}: the interpolated motion reaches "
                         f"{q[m, c]:.6g} at {t[m]:.6g} s from now, beyond position_bound "
                         f"±{lim.bound:g}")
