"""The arrival bookkeeping of a measured input stream (hardware in the loop): the measured joint
states (:mod:`.joint_source`) and the measured wrench (:mod:`.wrench_source`) count and time
their samples the same way, here.

* **Counts.**  Accepted, rejected (with the last reason), late or out-of-order samples, gaps
  (a stamp interval longer than ``max_gap``) and drop-outs (a stamp interval longer than 1.5
  median intervals, once ten are known).
* **Timing.**  The last 1000 stamp intervals, arrival intervals (wall clock: the jitter) and
  latencies (arrival − stamp, system clock), reported in ms.
* **Silence.**  The wall seconds since the last sample, once they exceed ``timeout``: what each
  input's watchdog acts on (the joints hold the vehicle, the wrench is zeroed).

Each input keeps its own messages and consequences; the words ``what`` name its samples in the
shared warnings ("joint state", "wrench").
"""
from __future__ import annotations

from collections import deque

import numpy as np

from ..core.validation import as_positive
from .event_log import reason_key

__all__ = ["SampleTiming"]

#: how many recent samples the interval, jitter and latency statistics cover
WINDOW = 1000


class SampleTiming:
    """Counts and timing of one measured stream (module docstring); a base of the measured
    inputs.  ``what`` names a sample in messages; ``max_gap`` and ``timeout`` (s) are checked
    under the parameter names ``<section>.max_gap`` and ``<section>.timeout``.
    """

    def __init__(self, what: str, section: str, max_gap: float, timeout: float):
        self.what = what
        self.max_gap = as_positive(max_gap, f"{section}.max_gap")
        self.timeout = as_positive(timeout, f"{section}.timeout")
        self.reset()

    def reset(self) -> None:
        """No sample seen: counts zero, no statistics, not holding."""
        self.accepted = self.rejected = self.out_of_order = self.gaps = self.dropouts = 0
        self.last_error = ""
        self.last_wall: float | None = None
        self.holding = False          # the watchdog tripped
        self.intervals: deque = deque(maxlen=WINDOW)           # stamp intervals (s)
        self.arrival_intervals: deque = deque(maxlen=WINDOW)   # wall intervals (s)
        self.latencies: deque = deque(maxlen=WINDOW)           # arrival − stamp (s)

    # ------------------------------------------------------------------ one sample
    def note_rejected(self, exc: Exception, log, key: str, consequence: str) -> None:
        """A sample that could not be parsed: counted, its reason kept for ``/diagnostics``
        and warned on ``log`` under ``key``-<reason>."""
        self.rejected += 1
        self.last_error = str(exc)
        log.emit("WARN", f"{key}-{reason_key(str(exc))}",
                 f"rejected measured {self.what}: {exc}; {consequence}")

    def note_out_of_order(self, stamp: float, interval: float, log, key: str) -> None:
        """A sample stamped ``interval`` s after (at or before) the newest: dropped, counted."""
        self.out_of_order += 1
        log.emit("WARN", key,
                 f"dropped a measured {self.what} stamped {stamp:.6f} s: not after the newest "
                 f"sample ({interval * 1e3:.3f} ms; late or out of order)")

    def note_accepted(self, stamp: float, wall: float, interval: float | None) -> None:
        """An accepted sample stamped ``stamp`` arriving at ``wall``, ``interval`` s after the
        previous one (None: the first, or the first after a restart); an interval up to
        ``max_gap`` enters the statistics, and is a drop-out when longer than 1.5 median
        intervals."""
        self.accepted += 1
        if self.last_wall is not None:
            self.arrival_intervals.append(wall - self.last_wall)
        self.last_wall = wall
        self.latencies.append(wall - stamp)
        if interval is not None and interval <= self.max_gap:
            if len(self.intervals) >= 10 and interval > 1.5 * self.median_interval():
                self.dropouts += 1
            self.intervals.append(interval)

    def note_resumed(self, sim_t: float, log, key: str, plural: str) -> None:
        """After a watchdog silence: not holding any more (an INFO on ``log``)."""
        if self.holding:
            self.holding = False
            log.emit("INFO", key, f"measured {plural} resumed at t={sim_t:.3f} s",
                     throttle=False)

    # ------------------------------------------------------------------ statistics
    def silence(self, wall_now: float) -> float | None:
        """Seconds since the last sample if that exceeds ``timeout`` (else, or before the
        first sample, None)."""
        if self.last_wall is None:
            return None
        age = wall_now - self.last_wall
        return age if age > self.timeout else None

    def median_interval(self) -> float:
        """The median stamp interval (s; 0 before the first)."""
        return float(np.median(self.intervals)) if self.intervals else 0.0

    def timing_statistics(self) -> dict:
        """Sample intervals, arrival jitter and latency (ms) for ``/diagnostics``."""
        def ms(values, fn):
            return 1e3 * float(fn(np.asarray(values))) if len(values) else 0.0
        return {
            "sample_interval_mean_ms": ms(self.intervals, np.mean),
            "sample_interval_max_ms": ms(self.intervals, np.max),
            "arrival_jitter_std_ms": ms(self.arrival_intervals, np.std),
            "arrival_interval_max_ms": ms(self.arrival_intervals, np.max),
            "latency_mean_ms": ms(self.latencies, np.mean),
            "latency_max_ms": ms(self.latencies, np.max),
        }
