"""The measured wrench of a force/torque sensor, for hardware in the loop (``wrench_source:
measured``): a ``geometry_msgs/WrenchStamped`` from a real sensor at a frame of the chaser
model acts on the simulated chaser as a frame wrench (force and torque in the sensor frame's
axes, the torque about its origin: the ``WrenchStamped`` convention and the engine's
``frame_wrenches``).  The message is the wrench the environment (a mock-up of the target,
a test rig) exerts on the chaser at that frame.

:class:`MeasuredWrenchInput` keeps the newest valid sample and the statistics a test bench
needs in ``/diagnostics``; the mechanisms are those of the measured joint states
(:mod:`~vm_dynamics.nodes.joint_source`), adapted to a force, which acts at once:

* **Hold.**  The newest accepted sample is applied from its arrival until the next
  (zero-order hold, as the effort commands); the simulation keeps its own pace (a force does
  not prescribe the motion, so the bodies keep moving when the sensor is silent).
* **Time.**  Header stamps order the samples: a sample stamped at or before the newest is
  dropped and counted (late or out of order).  A sample without a stamp (zero) takes its
  arrival time.  The latency (arrival − stamp, system clock) is reported.
* **Gaps.**  A stamp interval longer than ``measured_wrench.max_gap`` is a gap (counted, and a
  warning at most every 2 s; the previous sample was held over it, up to the watchdog);
  longer than 1.5 median intervals a drop-out (counted).
* **Watchdog.**  No sample for ``measured_wrench.timeout`` wall seconds: a warning,
  diagnostics WARN, and the wrench is zeroed until samples resume.  A silence is confirmed at
  the node's next check (one timer tick later): after a tick that stepped for longer than the
  timeout, samples queued meanwhile are taken before the watchdog decides, so a slow step is
  not mistaken for a silent sensor.
* **Bad samples** (wrong type, NaN/Inf, a force or torque beyond the sensor's range
  ``measured_wrench.force_limit`` / ``torque_limit``, a frame not of the chaser model or not
  the configured ``measured_wrench.frame``) are rejected with a warning naming the field; the
  last valid sample stays applied.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core.validation import as_positive
from ..ros import messages as rm
from .sample_timing import SampleTiming

__all__ = ["MeasuredWrenchInput", "measured_wrench_input"]


class MeasuredWrenchInput(SampleTiming):
    """A force/torque sensor's wrench on the chaser (module docstring); counts and timing of the
    samples in :class:`~vm_dynamics.nodes.sample_timing.SampleTiming`.

    ``frames`` are the frames of the chaser model a sample may name; ``frame`` the configured
    sensor frame ("" : each message's ``header.frame_id``)."""

    def __init__(self, frames, frame: str, max_gap: float, timeout: float,
                 force_limit: float, torque_limit: float):
        self.frames = list(frames)
        if frame and frame not in self.frames:
            raise ValueError(f"measured_wrench.frame: unknown frame {frame!r}; the chaser's "
                             f"frames are {', '.join(self.frames)}")
        self.frame = frame
        self.force_limit = as_positive(force_limit, "measured_wrench.force_limit")
        self.torque_limit = as_positive(torque_limit, "measured_wrench.torque_limit")
        super().__init__("wrench", "measured_wrench", max_gap, timeout)

    def reset(self) -> None:
        """No sample received: nothing applied (``holding``: the watchdog zeroed it)."""
        super().reset()
        self.value = np.zeros(6)
        self.sample_frame = self.frame
        self.last_stamp: float | None = None
        self.silence_seen: float | None = None   # last_wall of a silence seen, to confirm

    # ------------------------------------------------------------------ what is applied
    @property
    def active(self) -> bool:
        """A sample is applied (one has arrived and the watchdog has not tripped)."""
        return self.last_wall is not None and not self.holding

    def frame_wrenches(self) -> dict:
        """The engine's ``frame_wrenches`` of the applied sample (``{}`` when none is)."""
        return {self.sample_frame: self.value.copy()} if self.active else {}

    # ------------------------------------------------------------------ samples
    def parse(self, msg: Any) -> tuple[float | None, str, np.ndarray]:
        """``(stamp s or None, frame, [f; n])``; ``ValueError`` names the field or frame."""
        try:
            w = rm.parse_wrench_stamped(msg, force_limit=self.force_limit,
                                        torque_limit=self.torque_limit)
        except (TypeError, AttributeError) as exc:
            raise ValueError(f"not a readable WrenchStamped ({type(exc).__name__}: {exc})") \
                from None
        frame = w.frame_id
        if self.frame:
            if frame and frame != self.frame:
                raise ValueError(f"WrenchStamped.header.frame_id {frame!r} is not the sensor "
                                 f"frame measured_wrench.frame={self.frame!r}")
            frame = self.frame
        elif frame not in self.frames:
            raise ValueError(f"WrenchStamped.header.frame_id {frame!r} is not a frame of the "
                             f"chaser; frames are {', '.join(self.frames)} (or set "
                             f"measured_wrench.frame)")
        return (w.stamp_ns * 1e-9 if w.stamp_ns else None), frame, w.wrench

    def receive(self, msg: Any, wall: float, sim_t: float, log) -> bool:
        """A sample arriving at ``wall`` (system clock, s) while the simulation is at
        ``sim_t``: checked, ordered by its stamp and held; rejections, late samples, gaps and
        a resumption after the watchdog are logged on ``log``.  False if not used."""
        try:
            stamp, frame, w = self.parse(msg)
        except ValueError as exc:
            self.note_rejected(exc, log, "reject-measured-wrench",
                               "the sample is ignored (the wrench applied stays as it was)")
            return False
        stamp = wall if stamp is None else stamp
        interval = None if self.last_stamp is None else stamp - self.last_stamp
        if interval is not None and interval <= 0:
            self.note_out_of_order(stamp, interval, log, "measured-wrench-out-of-order")
            return False
        if interval is not None and interval > self.max_gap:
            self.gaps += 1
            log.emit("WARN", "measured-wrench-gap",
                     f"gap of {interval:.3f} s in the measured wrenches (longer than "
                     f"measured_wrench.max_gap={self.max_gap:g} s) at t={sim_t:.3f} s: the "
                     f"previous sample was held"
                     + (" until the watchdog zeroed it" if self.holding else "")
                     + " (counted in /diagnostics; this warning at most every 2 s)")
        self.value[:] = w
        self.sample_frame = frame
        self.last_stamp = stamp
        self.note_accepted(stamp, wall, interval)
        self.note_resumed(sim_t, log, "measured-wrench-resumed", "wrenches")
        return True

    def check_watchdog(self, wall_now: float, sim_t: float, log) -> bool:
        """Zero the wrench (once per silence, a warning on ``log``) when no sample arrived for
        ``timeout`` wall seconds at two consecutive checks (module docstring); True if it
        tripped now (the held inputs change)."""
        age = None if self.holding else self.silence(wall_now)
        if age is None:
            return False
        if self.silence_seen != self.last_wall:      # first seen: confirm at the next check
            self.silence_seen = self.last_wall
            return False
        self.holding = True
        log.emit("WARN", "measured-wrench-watchdog",
                 f"watchdog: no measured wrench for {age:.3f} s (measured_wrench.timeout "
                 f"{self.timeout:g} s) at t={sim_t:.3f} s; wrench zeroed", throttle=False)
        return True

    def statistics(self) -> dict:
        """Counts, sample intervals, arrival jitter, latency (ms) and the applied wrench for
        ``/diagnostics``."""
        applied = self.value if self.active else np.zeros(6)
        return {
            "frame": self.sample_frame,
            "force_N": float(np.linalg.norm(applied[:3])),
            "torque_Nm": float(np.linalg.norm(applied[3:])),
            "samples_accepted": self.accepted, "samples_rejected": self.rejected,
            "samples_out_of_order": self.out_of_order, "dropouts": self.dropouts,
            "gaps": self.gaps,
            **self.timing_statistics(),
            "last_rejection": self.last_error,
        }

    def status(self) -> tuple[str, str]:
        """``(level, text)`` for ``/diagnostics``."""
        if self.last_wall is None:
            return "WARN", "waiting for measured wrenches (none applied)"
        if self.holding:
            return "WARN", "measured wrenches stopped: wrench zeroed"
        return "OK", f"measured wrench applied at {self.sample_frame!r}"


def measured_wrench_input(robot, p: Mapping[str, Any]) -> MeasuredWrenchInput:
    """The measured wrench input of ``robot`` (``wrench_source: measured``) from the node
    parameters ``p`` (``measured_wrench.*``)."""
    return MeasuredWrenchInput(robot.model.frame_names, p["measured_wrench.frame"],
                               p["measured_wrench.max_gap"], p["measured_wrench.timeout"],
                               p["measured_wrench.force_limit"],
                               p["measured_wrench.torque_limit"])
