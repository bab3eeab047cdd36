"""Pacing of the dynamics node to the wall clock (real-time factor, tick budget, jitter)."""
from __future__ import annotations

import math
from collections import deque

import numpy as np

__all__ = ["Pacer"]


class Pacer:
    """Wall-clock pacing of a simulation for the node's timer (the core never sleeps).

    ``steps_due(wall_now, steps)`` says how many steps of ``dt`` to take now so that simulated
    time follows ``real_time_factor`` × wall time (anchored at :meth:`reset`).  A sim that falls
    more than ``max_lag`` wall seconds behind is re-anchored (counted in ``overruns``) instead of
    bursting to catch up.  With ``real_time_factor == 0`` it returns a batch sized to fill
    ``budget`` seconds of wall time.  Also measures the real-time factor and the jitter of the
    timer ticks.
    """

    def __init__(self, dt: float, real_time_factor: float, tick_period: float,
                 max_lag: float = 0.1, budget: float = 0.01):
        if not (dt > 0 and real_time_factor >= 0 and tick_period > 0):
            raise ValueError("Pacer: dt and tick_period must be > 0, real_time_factor >= 0")
        self.dt, self.rtf, self.tick_period = float(dt), float(real_time_factor), tick_period
        self.max_lag, self.budget = max_lag, budget
        self.overruns = 0
        self._anchor = None
        self._last_tick = None
        self._intervals: deque = deque(maxlen=500)
        self._hist: deque = deque(maxlen=4000)
        self._step_time = 1e-4

    def reset(self, wall_now: float, steps: int) -> None:
        self._anchor = (wall_now, steps)

    def note_step_time(self, seconds: float) -> None:
        self._step_time = 0.9 * self._step_time + 0.1 * max(seconds, 1e-7)

    def steps_due(self, wall_now: float, steps: int) -> int:
        """Steps to take now (free-running): see the class docstring.  Also records the tick
        for :meth:`stats`."""
        self.note_tick(wall_now, steps)
        if self.rtf == 0.0:
            return max(1, int(self.budget / self._step_time))
        return self._paced_due(wall_now, steps)

    def may_advance(self, wall_now: float, steps: int, count: int) -> bool:
        """Lockstep pacing: True if ``count`` more steps keep simulated time at or behind
        ``real_time_factor`` × wall time (always with ``real_time_factor == 0``).  A lockstep
        simulation that falls behind is re-anchored like a free-running one (``overruns``), so
        it never bursts to catch up; one that is ahead waits for the wall clock."""
        self._hist.append((wall_now, steps))
        while len(self._hist) > 2 and wall_now - self._hist[0][0] > 2.0:
            self._hist.popleft()
        return self.rtf == 0.0 or self._paced_due(wall_now, steps) >= count

    def note_tick(self, wall_now: float, steps: int) -> None:
        """Record a timer tick (for the jitter and real-time factor of :meth:`stats`)."""
        if self._last_tick is not None:
            self._intervals.append(wall_now - self._last_tick)
        self._last_tick = wall_now
        self._hist.append((wall_now, steps))
        while len(self._hist) > 2 and wall_now - self._hist[0][0] > 2.0:
            self._hist.popleft()

    def _paced_due(self, wall_now: float, steps: int) -> int:
        if self._anchor is None:
            self.reset(wall_now, steps)
        w0, s0 = self._anchor
        target = s0 + int(math.floor((wall_now - w0) * self.rtf / self.dt + 1e-9))
        due = target - steps
        if due * self.dt / self.rtf > self.max_lag:
            self.overruns += 1
            self.reset(wall_now - self.max_lag / 2, steps)
            due = int(self.max_lag / 2 * self.rtf / self.dt)
        return max(0, due)

    def stats(self) -> dict:
        out = {"real_time_factor_target": self.rtf, "overruns": self.overruns}
        if len(self._hist) >= 2 and self._hist[-1][0] > self._hist[0][0]:
            (w0, s0), (w1, s1) = self._hist[0], self._hist[-1]
            out["real_time_factor"] = (s1 - s0) * self.dt / (w1 - w0)
        if self._intervals:
            iv = np.asarray(self._intervals)
            out["tick_period_ms"] = 1e3 * float(np.mean(iv))
            out["tick_jitter_ms"] = 1e3 * float(np.std(iv))
            out["tick_late_max_ms"] = 1e3 * float(max(0.0, np.max(iv) - self.tick_period))
        return out
