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
from collections.abc import Mapping
from typing import Any

from ..config.params import unflatten
from ..config.sections import prescribed_motion
from ..config.spec import JOINT_SOURCES
from ..ros import messages as rm
from ..sim.measured import MeasuredJointMotion
from .sample_timing import SampleTiming

__all__ = ["JOINT_SOURCES", "MeasuredJointInput", "Arrival", "measured_joint_input",
           "prescribed_from_params", "joint_motion"]


class Arrival:
    """What :meth:`MeasuredJointInput.add` decided about one sample."""

    ACCEPTED, REJECTED, OUT_OF_ORDER, RESTARTED = "accepted", "rejected", "out_of_order", \
        "restarted"


class MeasuredJointInput(SampleTiming):
    """The measured joint states of a real arm (module docstring); counts and timing of the
    samples in :class:`~vm_dynamics.nodes.sample_timing.SampleTiming`.

    ``names`` are the joint names expected in the messages, in the model's joint order.
    """

    def __init__(self, names, motion: MeasuredJointMotion, max_gap: float, timeout: float):
        self.names = list(names)
        self.motion = motion
        super().__init__("joint state", "measured", max_gap, timeout)

    def reset(self) -> None:
        """No sample received: the first one anchors the time axis."""
        super().reset()
        self.anchor: tuple[float, float] | None = None      # (stamp s, sim time s)

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
            self.note_rejected(exc, log, "reject-measured", "the vehicle holds")
            return False
        stamp = wall if stamp is None else stamp
        motion = self.motion
        first = self.anchor is None
        t_new = self.place(stamp, sim_t)
        interval = None if first else t_new - motion.t_latest
        if interval is not None and interval <= 0:
            self.note_out_of_order(stamp, interval, log, "measured-out-of-order")
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
        self.note_accepted(stamp, wall, interval)
        if self.accepted == 50 and self.intervals and dt > 1.5 * self.median_interval():
            h = self.median_interval()
            log.emit("WARN", "measured-dt",
                     f"dt={dt:g} s is longer than the measured sample interval ({h:.4g} s): "
                     f"the steps see noise between samples only at their RK stages and its "
                     f"error accumulates; set dt to {h:.4g} s (one step per sample) for noisy "
                     f"measurements", throttle=False)
        self.note_resumed(sim_t, log, "measured-resumed", "joint states")
        return True

    def check_watchdog(self, wall_now: float, sim_t: float, log) -> None:
        """Warn on ``log`` (once per silence) when the samples stopped: the vehicle holds."""
        if self.holding:
            return
        age = self.silence(wall_now)
        if age is not None:
            self.holding = True
            log.emit("WARN", "measured-watchdog",
                     f"watchdog: no measured joint states for {age:.3f} s (measured.timeout "
                     f"{self.timeout:g} s) at t={sim_t:.3f} s; the vehicle holds",
                     throttle=False)

    def statistics(self) -> dict:
        """Counts, sample intervals, arrival jitter and latency (ms) for ``/diagnostics``."""
        return {
            "samples_accepted": self.accepted, "samples_rejected": self.rejected,
            "samples_out_of_order": self.out_of_order, "dropouts_bridged": self.dropouts,
            "gaps_restarted": self.gaps,
            **self.timing_statistics(),
            "filter_lag_ms": 1e3 * self.filter_lag(),
            "last_rejection": self.last_error,
        }

    def filter_lag(self) -> float:
        """The estimator's lag (s): the simulation trails the newest sample by up to one
        interval; a differenced velocity lags h/2 and its low-pass 1/(2π f_c)."""
        h = self.median_interval()
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


def prescribed_from_params(p: Mapping[str, Any], q0, missing: str):
    """The ``prescribed`` section's joint motion ``t -> (q, q̇, q̈)`` from the flat parameters
    ``p`` (:func:`vm_dynamics.config.sections.prescribed_motion`, starting at ``q0``): the
    entries that are set (not None, not empty); ``ValueError(missing)`` when
    ``prescribed.type`` is not.  The dynamics node (``joint_source: prescribed``) and the fake
    arm driver read the section the same way."""
    section = {k: v for k, v in unflatten(p, "prescribed").items()
               if v is not None and v != ""}
    if not section.get("type"):
        raise ValueError(missing)
    return prescribed_motion(section, q0)


def joint_motion(robot, p: Mapping[str, Any], q0) -> tuple:
    """``(prescribed, measured)``: where the dynamics node's joints come from
    (``joint_source``) -- efforts (simulated: both None), the prescribed section's motion from
    ``q0``, or a real arm's joint states (measured: hardware in the loop)."""
    if p["joint_source"] == "prescribed":
        return prescribed_from_params(
            p, q0, "joint_source prescribed: set prescribed.type (sinusoid or wheel_loop) and "
            "its parameters"), None
    if p["joint_source"] == "measured":
        return None, measured_joint_input(robot, p)
    return None, None
