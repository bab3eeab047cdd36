"""Where the dynamics node's joints come from: simulated (efforts drive the arm), prescribed (the
``prescribed`` section's motion, e.g. the satellite wheel loop) or measured (a real arm's
``sensor_msgs/JointState`` drives the simulated vehicle: hardware in the loop).

:class:`MeasuredJointInput` turns the arm driver's samples into the engine's prescribed motion
(:class:`vm_dynamics.sim.measured.MeasuredJointMotion`, the causal estimator) and keeps the
statistics a test bench needs in ``/diagnostics``:

* **Time.**  Samples are placed on the simulation's time axis by their header stamps:
  ``t = t_anchor + (stamp − stamp_anchor)``, anchored at the first sample (and again after a
  long gap).  A sample without a stamp (zero) takes its arrival time.  The simulation runs up to
  the newest sample, so it follows the arm's clock, not the node's.
* **Late or out-of-order samples** (a stamp not after the newest) are dropped and counted.
* **Gaps.**  A gap up to ``measured.max_gap`` is bridged by the interpolant once the next sample
  arrives (counted as a drop-out when longer than 1.5 median intervals).  A longer gap cannot be
  reconstructed: the vehicle holds its pose and velocity, and the motion restarts from the next
  sample (a warning; the momentum and energy baselines restart there too).
* **Watchdog.**  No sample for ``measured.timeout`` wall seconds: a warning, diagnostics WARN,
  the vehicle holds (nothing drives it) until samples resume.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..config.spec import JOINT_SOURCES
from ..ros import messages as rm
from ..sim.measured import MeasuredJointMotion
from .event_log import reason_key

__all__ = ["JOINT_SOURCES", "MeasuredJointInput", "Arrival", "measured_joint_input"]


class Arrival:
    """What :meth:`MeasuredJointInput.add` decided about one sample."""

    ACCEPTED, REJECTED, OUT_OF_ORDER, RESTARTED = "accepted", "rejected", "out_of_order", \
        "restarted"


class MeasuredJointInput:
    """The measured joint states of a real arm (module docstring).

    ``names`` are the joint names expected in the messages, in the model's joint order.
    """

    def __init__(self, names, motion: MeasuredJointMotion, max_gap: float, timeout: float):
        self.names = list(names)
        self.motion = motion
        for key, v in (("measured.max_gap", max_gap), ("measured.timeout", timeout)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or v <= 0:
                raise ValueError(f"{key}: expected a positive number of seconds, got {v!r}")
        self.max_gap, self.timeout = float(max_gap), float(timeout)
        self.reset()

    def reset(self) -> None:
        self.anchor: tuple[float, float] | None = None      # (stamp s, sim time s)
        self.accepted = self.rejected = self.out_of_order = self.gaps = self.dropouts = 0
        self.last_error = ""
        self.last_wall: float | None = None
        self.holding = False
        self.intervals: deque = deque(maxlen=1000)          # stamp intervals (s)
        self.arrival_intervals: deque = deque(maxlen=1000)  # wall intervals (s)
        self.latencies: deque = deque(maxlen=1000)          # arrival − stamp (s)

    def parse(self, msg: Any):
        """``(stamp s or None, q, q̇ or None)`` in model order; ``ValueError`` names the problem
        (missing joint names, lengths, NaN/Inf, huge values)."""
        js = rm.parse_joint_state(msg, self.names)
        stamp = js.stamp_ns * 1e-9 if js.stamp_ns else None
        return stamp, js.position, js.velocity

    def place(self, stamp: float, sim_t: float) -> float:
        """The simulation time of a sample stamped ``stamp`` (anchoring the first one at
        ``sim_t``)."""
        if self.anchor is None:
            self.anchor = (stamp, sim_t)
        return self.anchor[1] + (stamp - self.anchor[0])

    def note_arrival(self, stamp: float, wall: float, interval: float | None) -> None:
        if self.last_wall is not None:
            self.arrival_intervals.append(wall - self.last_wall)
        self.last_wall = wall
        self.latencies.append(wall - stamp)
        if interval is not None:
            if len(self.intervals) >= 10 and interval > 1.5 * float(np.median(self.intervals)):
                self.dropouts += 1
            self.intervals.append(interval)

    def watchdog(self, wall_now: float) -> float | None:
        """Seconds since the last sample if that exceeds ``timeout`` (else None)."""
        if self.last_wall is None:
            return None
        age = wall_now - self.last_wall
        return age if age > self.timeout else None

    def receive(self, msg: Any, wall: float, sim_t: float, dt: float, log,
                restart) -> bool:
        """A sample arriving at ``wall`` (system clock) while the simulation is at ``sim_t``:
        parsed, placed on the simulation's time line and added to the motion; after a gap
        longer than ``max_gap`` (or for the first sample) the motion restarts there and
        ``restart()`` re-syncs the engine.  Rejections, out-of-order samples, gaps and a
        ``dt`` longer than the sample interval are logged on ``log``.  False if not used."""
        try:
            stamp, q, qd = self.parse(msg)
        except ValueError as exc:
            self.rejected += 1
            self.last_error = str(exc)
            log.emit("WARN", f"reject-measured-{reason_key(str(exc))}",
                     f"rejected measured joint state: {exc}; the vehicle holds")
            return False
        stamp = wall if stamp is None else stamp
        motion = self.motion
        first = self.anchor is None
        t_new = self.place(stamp, sim_t)
        interval = None if first else t_new - motion.t_latest
        if interval is not None and interval <= 0:
            self.out_of_order += 1
            log.emit("WARN", "measured-out-of-order",
                     f"dropped a measured joint state stamped {stamp:.6f} s: not after the "
                     f"newest sample ({interval * 1e3:.3f} ms; late or out of order)")
            return False
        if first or interval > self.max_gap:
            if not first:
                self.gaps += 1
                self.anchor = (stamp, sim_t)
                log.emit("WARN", "measured-gap",
                         f"gap of {interval:.3f} s in the measured joint states (longer than "
                         f"measured.max_gap={self.max_gap:g} s): the vehicle held its pose; "
                         f"restarting from the new sample at t={sim_t:.3f} s", throttle=False)
            motion.restart(sim_t, q, qd)
            restart()
            interval = None
        else:
            motion.add(t_new, q, qd)
        self.accepted += 1
        self.note_arrival(stamp, wall, interval)
        if self.accepted == 50 and self.intervals and dt > 1.5 * float(np.median(self.intervals)):
            h = float(np.median(self.intervals))
            log.emit("WARN", "measured-dt",
                     f"dt={dt:g} s is longer than the measured sample interval ({h:.4g} s): "
                     f"the steps see noise between samples only at their RK stages and its "
                     f"error accumulates; set dt to {h:.4g} s (one step per sample) for noisy "
                     f"measurements", throttle=False)
        if self.holding:
            self.holding = False
            log.emit("INFO", "measured-resumed", f"measured joint states resumed at "
                     f"t={sim_t:.3f} s", throttle=False)
        return True

    def check_watchdog(self, wall_now: float, sim_t: float, log) -> None:
        """Warn on ``log`` (once per silence) when the samples stopped: the vehicle holds."""
        if self.holding:
            return
        age = self.watchdog(wall_now)
        if age is not None:
            self.holding = True
            log.emit("WARN", "measured-watchdog",
                     f"watchdog: no measured joint states for {age:.3f} s (measured.timeout "
                     f"{self.timeout:g} s) at t={sim_t:.3f} s; the vehicle holds",
                     throttle=False)

    def statistics(self) -> dict:
        """Counts, sample intervals, arrival jitter and latency (ms) for ``/diagnostics``."""
        def ms(values, fn):
            return 1e3 * float(fn(np.asarray(values))) if len(values) else 0.0
        return {
            "samples_accepted": self.accepted, "samples_rejected": self.rejected,
            "samples_out_of_order": self.out_of_order, "dropouts_bridged": self.dropouts,
            "gaps_restarted": self.gaps,
            "sample_interval_mean_ms": ms(self.intervals, np.mean),
            "sample_interval_max_ms": ms(self.intervals, np.max),
            "arrival_jitter_std_ms": ms(self.arrival_intervals, np.std),
            "arrival_interval_max_ms": ms(self.arrival_intervals, np.max),
            "latency_mean_ms": ms(self.latencies, np.mean),
            "latency_max_ms": ms(self.latencies, np.max),
            "filter_lag_ms": 1e3 * self.filter_lag(),
            "last_rejection": self.last_error,
        }

    def filter_lag(self) -> float:
        """The estimator's lag (s): the simulation trails the newest sample by up to one
        interval; a differenced velocity lags h/2 and its low-pass 1/(2π f_c)."""
        h = float(np.median(self.intervals)) if self.intervals else 0.0
        lag = h
        latest = self.motion.latest
        if latest is not None and not latest.velocity_measured:
            lag += h / 2
            if self.motion.velocity_cutoff > 0:
                lag += 1.0 / (2 * math.pi * self.motion.velocity_cutoff)
        return lag


def measured_joint_input(robot, p: Mapping[str, Any]) -> MeasuredJointInput:
    """The measured joint input of ``robot`` (``joint_source: measured``) from the node
    parameters ``p``: ``measured.joint_names`` are the driver's names of the ``joints``, in
    that order; the filters and watchdog from ``measured.*``."""
    m = robot.model
    if len(robot.joints) != m.n:
        raise ValueError(f"joint_source measured: joints must list all {m.n} joints of the "
                         f"model (the real arm drives every joint), got {robot.joints}")
    names = list(p["measured.joint_names"] or robot.joints)
    if len(names) != len(robot.joints) or not all(isinstance(x, str) and x for x in names):
        raise ValueError(f"measured.joint_names: expected {len(robot.joints)} names (the "
                         f"driver's names of {robot.joints}, in that order), got {names}")
    if len(set(names)) != len(names):
        raise ValueError(f"measured.joint_names: duplicate names in {names}")
    in_model_order = [""] * m.n
    for k, j in enumerate(robot.joint_index):
        in_model_order[int(j)] = names[k]
    motion = MeasuredJointMotion(m.n, velocity_cutoff=p["measured.velocity_cutoff"],
                                 acceleration_cutoff=p["measured.acceleration_cutoff"])
    return MeasuredJointInput(in_model_order, motion, p["measured.max_gap"],
                              p["measured.timeout"])
