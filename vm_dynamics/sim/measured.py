"""Joint motion from measured samples, for hardware in the loop: a real arm's joint states drive
the simulated vehicle.

Given the arm's ``q, q̇, q̈`` the vehicle's motion follows from (LP-1) and the reconstruction
equation alone (docs/corrections.md, "LP equations"): the block-diagonal inertia of paper 000
separates the locked vehicle dynamics from the arm's reduced dynamics (LP-2), so the engine
runs with *prescribed* joint motion (:class:`~vm_dynamics.sim.engine.Simulator`,
``prescribed=``) and this class supplies it from the samples, causally.

**The estimator** (all causal: an estimate at time ``t`` uses samples up to ``t`` only):

* *Velocity*: the sample's own velocity when it carries one (``sensor_msgs/JointState.velocity``),
  else the backward difference ``(q_k − q_{k−1}) / (t_k − t_{k−1})`` (lag ``h/2`` for a sample
  interval ``h``), optionally low-passed.
* *Between samples* the motion is the cubic Hermite interpolant of ``(q, q̇)`` at the two
  samples around ``t``; its derivative is exactly the interpolated velocity, so the vehicle
  integrates a motion whose ``q`` and ``q̇`` agree (the coupling the engine sees is consistent).
  The simulation runs at most up to the newest sample (one sample interval behind the arm).
* *Acceleration* (only for the efforts and the base-reaction wrench that are published, never
  for the vehicle's motion, which depends on ``q`` and ``q̇`` only): backward difference of the
  velocity, low-passed with a first-order filter of cut-off ``acceleration_cutoff``.

The low-pass filter is ``y_k = y_{k−1} + α (x_k − y_{k−1})``, ``α = 1 − exp(−2π f_c h)``: a
first-order lag of time constant ``1 / (2π f_c)`` (``f_c = 0``: no filtering).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from ..core.validation import MAX_MAGNITUDE, as_vector

__all__ = ["MeasuredJointMotion", "MeasuredSample", "hermite"]


@dataclass(frozen=True)
class MeasuredSample:
    """One accepted sample: time, position, velocity (measured or estimated), filtered
    acceleration."""

    t: float
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    velocity_measured: bool


def hermite(t: float, ta: float, qa, va, tb: float, qb, vb):
    """``(q, q̇, q̈)`` at ``t`` of the cubic Hermite interpolant through ``(q, q̇)`` at ``ta`` and
    ``tb`` (its derivative is exactly the interpolated velocity)."""
    h = tb - ta
    s = (t - ta) / h
    s2, s3 = s * s, s * s * s
    h00, h10, h01, h11 = 2 * s3 - 3 * s2 + 1, s3 - 2 * s2 + s, -2 * s3 + 3 * s2, s3 - s2
    d00, d10, d01, d11 = 6 * s2 - 6 * s, 3 * s2 - 4 * s + 1, -6 * s2 + 6 * s, 3 * s2 - 2 * s
    e00, e10, e01, e11 = 12 * s - 6, 6 * s - 4, 6 - 12 * s, 6 * s - 2
    q = h00 * qa + h10 * h * va + h01 * qb + h11 * h * vb
    qd = (d00 * qa + d01 * qb) / h + d10 * va + d11 * vb
    qdd = (e00 * qa + e01 * qb) / (h * h) + (e10 * va + e11 * vb) / h
    return q, qd, qdd


def _lowpass(previous: np.ndarray, x: np.ndarray, cutoff: float, h: float) -> np.ndarray:
    if cutoff <= 0:
        return x
    alpha = 1.0 - math.exp(-2.0 * math.pi * cutoff * h)
    return previous + alpha * (x - previous)


class MeasuredJointMotion:
    """Causal reconstruction of ``(q, q̇, q̈)(t)`` from timed joint samples (module docstring).

    ``add(t, q, qd=None)`` appends a sample (times strictly increasing; a sample at or before
    the newest one is refused and counted); calling the object, ``motion(t)``, returns
    ``(q, q̇, q̈)`` at ``t`` for ``t`` up to the newest sample, as the engine's ``prescribed``
    callable.  ``velocity_cutoff`` low-passes differenced velocities (Hz, 0: none);
    ``acceleration_cutoff`` the acceleration estimate (Hz, 0: none); ``history`` how many
    samples are kept (the engine asks for times back to the start of its current step).
    """

    def __init__(self, n: int, velocity_cutoff: float = 0.0, acceleration_cutoff: float = 50.0,
                 history: int = 4096):
        self.n = int(n)
        for name, v in (("velocity_cutoff", velocity_cutoff),
                        ("acceleration_cutoff", acceleration_cutoff)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or v < 0:
                raise ValueError(f"{name}: expected a finite frequency >= 0 Hz, got {v!r}")
        self.velocity_cutoff = float(velocity_cutoff)
        self.acceleration_cutoff = float(acceleration_cutoff)
        self.samples: deque[MeasuredSample] = deque(maxlen=max(2, int(history)))
        self.out_of_order = 0

    # ------------------------------------------------------------------ input
    @property
    def latest(self) -> MeasuredSample | None:
        return self.samples[-1] if self.samples else None

    @property
    def t_latest(self) -> float:
        """Time of the newest sample (``-inf`` before the first)."""
        return self.samples[-1].t if self.samples else -math.inf

    def clear(self) -> None:
        self.samples.clear()

    def add(self, t: float, q, qd=None) -> bool:
        """Append a sample; False (and counted in ``out_of_order``) if ``t`` is not after the
        newest sample.  ``ValueError`` naming the field for a wrong length or a non-finite or
        huge value."""
        t = float(t)
        if not math.isfinite(t):
            raise ValueError(f"t: expected a finite time, got {t!r}")
        q = as_vector(q, self.n, "position", limit=MAX_MAGNITUDE)
        measured = qd is not None
        if measured:
            qd = as_vector(qd, self.n, "velocity", limit=MAX_MAGNITUDE)
        prev = self.latest
        if prev is not None and t <= prev.t:
            self.out_of_order += 1
            return False
        if prev is None:
            if qd is None:
                qd = np.zeros(self.n)
            qdd = np.zeros(self.n)
        else:
            h = t - prev.t
            if qd is None:
                qd = _lowpass(prev.qd, (q - prev.q) / h, self.velocity_cutoff, h)
            qdd = _lowpass(prev.qdd, (qd - prev.qd) / h, self.acceleration_cutoff, h)
        self.samples.append(MeasuredSample(t, q, qd, qdd, measured))
        return True

    def restart(self, t: float, q, qd=None) -> None:
        """Forget the history and start again from one sample (after a gap too long to
        bridge)."""
        self.samples.clear()
        self.add(t, q, qd)

    # ------------------------------------------------------------------ output
    def _bracket(self, t: float) -> tuple[MeasuredSample, MeasuredSample | None, float]:
        """The samples around ``t`` and ``t`` clamped to their span."""
        s = self.samples
        if not s:
            raise ValueError("measured motion: no sample yet")
        if t > s[-1].t + 1e-9 * max(1.0, abs(s[-1].t)):
            raise ValueError(f"measured motion: t={t:.9g} s is after the newest sample "
                             f"({s[-1].t:.9g} s); the simulation cannot run ahead of the "
                             f"measurements")
        if len(s) == 1:
            return s[0], None, t
        if t < s[0].t - 1e-9 * max(1.0, abs(s[0].t)):
            raise ValueError(f"measured motion: t={t:.9g} s is before the oldest sample kept "
                             f"({s[0].t:.9g} s; history={self.samples.maxlen})")
        t = min(max(t, s[0].t), s[-1].t)
        for k in range(len(s) - 1, 0, -1):       # usually the last interval
            if s[k - 1].t <= t:
                return s[k - 1], s[k], t
        return s[0], s[1], t                       # pragma: no cover

    def __call__(self, t: float):
        """``(q, q̇, q̈)`` at ``t``: the cubic Hermite interpolant of the samples' ``(q, q̇)``
        and its first two derivatives."""
        a, b, t = self._bracket(float(t))
        if b is None:
            return a.q.copy(), a.qd.copy(), np.zeros(self.n)
        return hermite(t, a.t, a.q, a.qd, b.t, b.q, b.qd)

    def acceleration(self) -> np.ndarray:
        """The filtered acceleration estimate at the newest sample (for published efforts)."""
        if not self.samples:
            return np.zeros(self.n)
        return self.samples[-1].qdd.copy()
