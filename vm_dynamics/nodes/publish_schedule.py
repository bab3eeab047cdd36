"""When the dynamics node sends what: the publish schedule of the state, ``/clock``, the paths
and ``/diagnostics``.

State and clock follow simulated time (``publish_rate``, ``clock_rate``; in lockstep the state
after every advance); faster than real time they go out at most ``max_wall_publish_rate`` /
``clock_rate`` times per wall second; ``diagnostics`` follow wall time (``diagnostics_rate``);
paths go with every 10th state, at most ``path_rate`` times per wall second.  While the
simulation does not advance, the state is re-sent as a heartbeat, its stamp nudged by one
nanosecond per heartbeat while paused (see
:attr:`~vm_dynamics.nodes.dynamics_core.DynamicsCore.stamp_ns`).  Part of
:class:`~vm_dynamics.nodes.dynamics_core.DynamicsCore`; pure bookkeeping over step counts and
wall times, it builds no message.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, NamedTuple

from ..ros import messages as rm

__all__ = ["PublishSchedule", "Due"]


class Due(NamedTuple):
    """What is due now: the state (joint_states, odom, tf, ...), /clock, /diagnostics."""

    state: bool
    clock: bool
    diagnostics: bool


class PublishSchedule:
    """The publish counters of a simulation of step ``dt`` (see the module docstring);
    ``params`` are the node's (rates, ``real_time_factor``, ``max_wall_publish_rate``)."""

    def __init__(self, params: Mapping[str, Any], dt: float, lockstep: bool,
                 steps_per_period: int):
        self.dt, self.lockstep, self.steps_per_period = dt, lockstep, steps_per_period
        self.publish_rate = float(params["publish_rate"])
        self.clock_rate = float(params["clock_rate"])
        self.diagnostics_rate = float(params["diagnostics_rate"])
        self.path_rate = float(params["path_rate"])
        self.wall_cap = float(params["max_wall_publish_rate"])
        self.real_time_factor = float(params["real_time_factor"])
        self.state_every = max(1, int(round(1.0 / (self.publish_rate * dt))))
        self.clock_every = max(1, int(round(1.0 / (self.clock_rate * dt))))
        self.max_heartbeat_ns = rm.stamp_to_ns(dt) // 2
        self.reset()

    def reset(self) -> None:
        """Nothing sent yet: the initial state goes out at once."""
        self.next_state = self.next_clock = 0
        self.path_counter = 0
        self.next_path_sample = 0
        self.path_sample = False     # the state last planned is a path sample (see plan)
        self.path_wall: dict = {}
        self.state_pending = True    # publish the (initial) state at once
        self.last_publish_wall = None
        self.last_pop_steps = -1
        self.heartbeat_ns = 0        # stamp nudge of the heartbeats while paused
        self.last_clock_wall = None
        self.next_diag_wall = None

    @property
    def path_sample_period(self) -> float:
        """Simulated time between two path poses: the state period ``1/publish_rate``."""
        return self.state_every * self.dt

    def clock_allowed(self, wall_now: float) -> bool:
        """/clock goes out at ``clock_rate`` Hz of simulated time but, faster than real time,
        at most ``clock_rate`` times per wall second (subscribers need a monotonic clock, not
        20 000 messages a second)."""
        return (self.last_clock_wall is None
                or wall_now - self.last_clock_wall >= 1.0 / self.clock_rate - 1e-9)

    def state_allowed(self, wall_now: float) -> bool:
        """Faster than real time, state messages go out at most ``max_wall_publish_rate`` times
        per wall second (0: no limit, every ``1/publish_rate`` of simulated time)."""
        cap, rtf = self.wall_cap, self.real_time_factor
        if cap <= 0 or self.lockstep or (0 < rtf and rtf * self.publish_rate <= cap):
            return True                   # paced slowly enough: every state goes out
        return (self.last_publish_wall is None
                or wall_now - self.last_publish_wall >= 1.0 / cap - 1e-9)

    def path_due(self, wall_now: float, key: str) -> bool:
        """True (and noted) if the path ``key`` may be sent now: at most ``path_rate`` per wall
        second."""
        last = self.path_wall.get(key)
        if last is not None and wall_now - last < 1.0 / self.path_rate - 1e-9:
            return False
        self.path_wall[key] = wall_now
        return True

    def ee_path_due(self, wall_now: float) -> bool:
        """With every 10th state, if :meth:`path_due` allows it."""
        self.path_counter += 1
        return self.path_counter % 10 == 1 and self.path_due(wall_now, "ee_path")

    def steps_until_due(self, steps: int, wall_now: float | None = None) -> int:
        """Steps until the next state or clock message is due (≥ 1)."""
        nxt = self.next_state if not self.lockstep else steps + self.steps_per_period
        if not self.lockstep and wall_now is not None and not self.state_allowed(wall_now):
            nxt = steps + max(1, self.state_every)     # not yet: the next publish point
        if wall_now is None or self.clock_allowed(wall_now):
            nxt = min(nxt, self.next_clock)
        return max(1, nxt - steps)

    def plan(self, wall_now: float, steps: int, paused: bool, check_state: Callable[[], int],
             idle_republish: float | None = None) -> Due:
        """Decide what is due at ``wall_now`` with the simulation at ``steps`` and note it.

        ``check_state()`` runs before a state is sent (the energy check, which may roll the
        simulation back) and returns the steps then.  While the simulation does not advance,
        the state is due every ``idle_republish`` wall seconds (default ``1 /
        publish_rate``)."""
        if idle_republish is None:
            idle_republish = 1.0 / self.publish_rate
        s = steps
        state = self.state_pending or (not self.lockstep and s >= self.next_state
                                       and self.state_allowed(wall_now))
        idle = s == self.last_pop_steps
        self.last_pop_steps = s
        if not idle:
            self.heartbeat_ns = 0
        if not state and idle and (self.last_publish_wall is None
                                   or wall_now - self.last_publish_wall
                                   >= idle_republish - 1e-9):
            state = True                  # not advancing: heartbeat
            if paused and self.heartbeat_ns + 1 < self.max_heartbeat_ns:
                self.heartbeat_ns += 1
        # /clock goes with every state, not only at clock_rate: ROS time must reach the stamp
        # of each state sent (in lockstep every period), or a controller on ROS-time timers
        # (use_sim_time) would not answer it, and a reset shows as ROS time going back
        clock = state or (s >= self.next_clock and self.clock_allowed(wall_now))
        if state:
            s = check_state()
            self.state_pending = False
            self.last_publish_wall = wall_now
            self.next_state = (s // self.state_every + 1) * self.state_every
            # ee_path and the node's base_path take one pose per path_sample_period
            self.path_sample = s >= self.next_path_sample
            if self.path_sample:
                self.next_path_sample = (s // self.state_every + 1) * self.state_every
        if clock:
            self.last_clock_wall = wall_now
            self.next_clock = (s // self.clock_every + 1) * self.clock_every
        diagnostics = self.next_diag_wall is None or wall_now >= self.next_diag_wall
        if diagnostics:
            self.next_diag_wall = wall_now + 1.0 / self.diagnostics_rate
        return Due(state, clock, diagnostics)
