"""The simulation behind the dynamics node, independent of any transport (no ROS, no DDS).

:class:`DynamicsCore` integrates the Lagrange–Poincaré equations of paper 000
(docs/corrections.md, "LP equations", (LP-1)–(LP-4)) one time step ``dt`` at a time with the simulation engine,
:class:`vm_dynamics.sim.engine.Simulator` — the same engine as ``vm.simulate`` (formulation
``auto``: the total momentum is conserved to round-off without gravity and external wrenches):

* ``dynamics_backend: auto`` (numba when importable, else the engine's kernels as plain
  Python) or ``numba``: one compiled call per step, or per run of steps between two checks;
* ``lp``: the closed-form LP reference (slow; for comparisons).

Inputs are held constant over a step (zero-order hold, as a digital controller applies them):
joint efforts (``std_msgs/Float64MultiArray`` in the order of the ``joints`` parameter, the
forward_command_controller convention) and a vehicle wrench (``geometry_msgs/WrenchStamped``).
The environment (hydrodynamic damping and buoyancy of the vehicle and of the arm links) is
evaluated at every RK stage, inside the engine.

Safety, in the order it acts:

1. **Bad messages** (wrong length, NaN/Inf, unknown frame, wrong type) are rejected with a
   throttled warning; the last valid input stays applied.
2. **Watchdog**: an input channel that has not been refreshed for ``command_timeout`` seconds of
   simulated time is zeroed (warning; ``watchdog`` = ``tripped`` in the diagnostics) until a
   fresh message arrives.
3. **Divergence**: a non-finite state, or (``joint_source: simulated``; with measured or
   prescribed joints the work of the motion source is unknown) an energy balance that fails — the residual
   ``r = E(t) − E(0) − W(t)`` (``E`` kinetic + gravitational energy, ``W`` the work of all
   applied efforts and wrenches) exceeding ``divergence_threshold`` times the energy scale
   ``K(0) + K(t) + |U(t) − U(0)| + ∫|P| dt`` — pauses the simulation with an error and rolls
   back to the last state that passed the check.  Only checked states are ever published.

Time is simulated time ``t = steps · dt``; pacing to the wall clock (``real_time_factor``) is
the node's job (:class:`~vm_dynamics.nodes.pacing.Pacer`), so the core is deterministic: the same inputs give
bit-identical states.  With ``lockstep`` the core advances one control period
(``1 / control_rate``) only when a fresh command has arrived
(:meth:`DynamicsCore.advance_lockstep`).
"""
from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Mapping
from typing import Any, Callable, Iterator

import numpy as np

from ..config.params import flatten, parameter_defaults, unflatten
from ..config.sections import initial_state, prescribed_motion
from ..core.validation import as_positive
from ..ros import messages as rm
from ..sim.engine import SimulationError, Simulator, State
from ..sim.integrators import METHODS
from ..sim.interaction import arm_interaction
from ..sim.measured import MeasuredJointMotion
from .event_log import EventLog, reason_key
from .joint_source import JOINT_SOURCES, MeasuredJointInput
from .parameters import DYNAMICS_BACKENDS, DYNAMICS_PARAMETERS
from .robot import Robot, load_robot

__all__ = ["DynamicsCore"]

_INERTIAL_ALIASES = ("world",)

# ------------------------------------------------------------------------------ the core
class _Channel:
    """One input (effort or wrench): last valid value, when it arrived, watchdog state."""

    def __init__(self, size: int):
        self.value = np.zeros(size)
        self.time = None          # sim time of the last accepted message
        self.stale = False
        self.fresh = False        # arrived since the last lockstep advance
        self.accepted = 0
        self.rejected = 0
        self.last_error = ""

    def applied(self) -> np.ndarray:
        return np.zeros_like(self.value) if (self.time is None or self.stale) else self.value


class DynamicsCore:
    """Simulation state, inputs and outputs of the dynamics node (see the module docstring).

    Build it with :meth:`from_params` (flat ROS parameter names, e.g. ``initial.joint_positions``,
    or a nested mapping such as a scenario file's ``ros__parameters``).
    """

    def __init__(self, robot: Robot, params: Mapping[str, Any],
                 clock: Callable[[], float] = time.monotonic):
        p = parameter_defaults(DYNAMICS_PARAMETERS)
        p.update(flatten(params))
        self.robot = robot
        self.model = m = robot.model
        self.params = p
        self.log = EventLog(clock)
        self.clock = clock
        self.dt = as_positive(p["dt"], "dt")
        self.method = p["integrator"]
        if self.method not in METHODS:
            raise ValueError(f"integrator: unknown {self.method!r}; choose one of "
                             f"{', '.join(METHODS)}")
        self.backend = p["dynamics_backend"]
        if self.backend not in DYNAMICS_BACKENDS:
            raise ValueError(f"dynamics_backend: unknown {self.backend!r}; choose one of "
                             f"{', '.join(DYNAMICS_BACKENDS)}")
        for key in ("publish_rate", "clock_rate", "diagnostics_rate", "control_rate", "path_rate"):
            if not (isinstance(p[key], (int, float)) and p[key] > 0):
                raise ValueError(f"{key}: expected a positive rate in Hz, got {p[key]!r}")
        for key in ("real_time_factor", "command_timeout", "divergence_threshold",
                    "max_wall_publish_rate"):
            if not (isinstance(p[key], (int, float)) and math.isfinite(p[key]) and p[key] >= 0):
                raise ValueError(f"{key}: expected a finite number >= 0, got {p[key]!r}")
        self.lockstep = bool(p["lockstep"])
        self.timeout = float(p["command_timeout"])
        self.steps_per_period = max(1, int(round(1.0 / (float(p["control_rate"]) * self.dt))))
        self._state_every = max(1, int(round(1.0 / (float(p["publish_rate"]) * self.dt))))
        self._clock_every = max(1, int(round(1.0 / (float(p["clock_rate"]) * self.dt))))
        self.ee_frame = self._ee_frame(p["ee_frame"])
        self.ee_path = deque(maxlen=max(1, int(p["ee_path_length"])))

        # initial state (the scenario's parser: config.sections)
        init = initial_state(unflatten(p, "initial"), m)
        self.g0, self.V0, self.q0, self.qd0 = init.g, init.V, init.q, init.qd

        # where the joints come from: efforts (simulated), the prescribed section, or a real
        # arm's joint states (measured: hardware in the loop, nodes/joint_source.py)
        self.joint_source = p["joint_source"]
        if self.joint_source not in JOINT_SOURCES:
            raise ValueError(f"joint_source: unknown {self.joint_source!r}; choose one of "
                             f"{', '.join(JOINT_SOURCES)}")
        self.prescribed = self.measured = None
        if self.joint_source == "prescribed":
            section = {k: v for k, v in unflatten(p, "prescribed").items()
                       if v is not None and v != ""}
            if not section.get("type"):
                raise ValueError("joint_source prescribed: set prescribed.type (sinusoid or "
                                 "wheel_loop) and its parameters")
            self.prescribed = prescribed_motion(section, self.q0)
        elif self.joint_source == "measured":
            self.measured = self._measured_input(robot, p)
        motion = self.prescribed if self.measured is None else self.measured.motion

        # the engine (environment inside: hydrodynamic damping and buoyancy at every stage)
        try:
            self.sim = Simulator(m, self.dt, self.method, backend=self.backend,
                                 environment=robot.hydrodynamics, prescribed=motion)
        except ValueError as exc:
            raise ValueError(f"dynamics_backend: {exc}") from None

        self.effort = _Channel(len(robot.joints))
        self.wrench = _Channel(6)
        self._wrench_inertial = False
        self._user_paused = False
        self.diverged = False
        self.error = ""
        self.step_times: deque = deque(maxlen=1000)
        self.timing: dict = {}        # filled by the node (Pacer.stats())
        # filled by the node: input samples the transport dropped before they reached the
        # core (more were queued than it handles per turn), e.g. {"effort_dropped": 12}
        self.input_stats: dict = {}
        self._reset_state()

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_params(cls, params: Mapping[str, Any], clock: Callable[[], float] = time.monotonic
                    ) -> "DynamicsCore":
        return cls(load_robot(params), params, clock)

    @staticmethod
    def _measured_input(robot: Robot, p: Mapping[str, Any]) -> MeasuredJointInput:
        """``measured.joint_names``: the driver's names of the ``joints``, in that order."""
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

    def _ee_frame(self, name: str) -> str:
        if name:
            if name not in self.model.frame_body:
                raise ValueError(f"ee_frame: unknown frame {name!r}; frames are "
                                 f"{', '.join(self.model.frame_names)}")
            return name
        return "ee_link" if "ee_link" in self.model.frame_body else ""

    def _reset_state(self) -> None:
        if self.measured is not None:          # the arm rests at the initial state until the
            self.measured.reset()              # first measured sample
            self.measured.motion.restart(0.0, self.q0, self.qd0)
        if self.joint_source == "simulated":
            self.sim.reset(self.g0, self.V0, self.q0, self.qd0)
        else:
            self.sim.reset(self.g0, self.V0)
        for ch in (self.effort, self.wrench):
            ch.value[:] = 0.0
            ch.time, ch.stale, ch.fresh = None, False, False
        self._wrench_inertial = False
        self._update_inputs()
        self.diverged, self.error = False, ""
        self.E0, self.K0, self.U0 = self._energy()
        self.momentum0 = self._momentum()
        self.residual = 0.0
        self._snapshot = self._take_snapshot()
        self._checked_steps = 0
        self._next_state = 0
        self._next_clock = 0
        self._path_counter = 0
        self._next_path_sample = 0
        self.path_sample = False     # the state last popped is a path sample (see iter_due)
        self._path_wall: dict = {}
        self._state_pending = True   # publish the initial state at once
        self._last_publish_wall = None
        self._last_publish_steps = -1
        self._last_pop_steps = -1
        self._heartbeat_ns = 0       # stamp nudge of the heartbeats while paused (stamp_ns)
        self._last_clock_wall = None
        self._next_diag_wall = None
        self.ee_path.clear()

    # ---------------------------------------------------------------- state access
    @property
    def t(self) -> float:
        return self.sim.t

    @property
    def steps(self) -> int:
        return self.sim.steps

    @property
    def work(self) -> float:
        """Work of every applied effort and wrench since the reset (the engine's account)."""
        return self.sim.work

    @property
    def abs_work(self) -> float:
        return self.sim.abs_work

    @property
    def g(self) -> np.ndarray:
        return self.sim.arrays()[1].copy()

    @property
    def V(self) -> np.ndarray:
        return self.sim.arrays()[2].copy()

    @property
    def q(self) -> np.ndarray:
        return self.sim.arrays()[3].copy()

    @property
    def qd(self) -> np.ndarray:
        return self.sim.arrays()[4].copy()

    @property
    def paused(self) -> bool:
        return self._user_paused or self.diverged

    @property
    def stamp_ns(self) -> int:
        """Stamp of the state and clock messages (ns): simulated time ``steps · dt``, plus one
        nanosecond per heartbeat sent while paused, so that each paused state is a new sample
        for TF listeners.  (robot_state_publisher republishes the arm's TF for a heartbeat only
        with ``ignore_timestamp``, as the launch files start it: by default it waits for a stamp
        ``1/publish_frequency`` after its last, and a TF listener that starts during a pause
        would never see the arm's frames, "two or more unconnected trees".)  The nudge stays
        below ``dt / 2`` (a pause of hours at 50 Hz), so stamps stay strictly increasing when
        the simulation resumes."""
        return rm.stamp_to_ns(self.t) + self._heartbeat_ns

    @property
    def stamp(self) -> float:
        """:attr:`stamp_ns` in seconds."""
        return self.stamp_ns * 1e-9

    def state(self) -> State:
        """Snapshot ``State(t, g, V, q, qd)`` (copies)."""
        return State(self.t, self.g, self.V, self.q, self.qd)

    @property
    def watchdog(self) -> str:
        """``waiting`` (no input yet), ``ok`` or ``tripped``."""
        chans = [c for c in (self.effort, self.wrench) if c.time is not None]
        if not chans:
            return "waiting"
        return "tripped" if any(c.stale for c in chans) else "ok"

    def applied_effort(self) -> np.ndarray:
        """Joint efforts applied now, URDF order."""
        return self._tau_model.copy()

    def applied_base_wrench(self) -> np.ndarray:
        """Commanded vehicle wrench applied now (b-vector, body frame at the current pose;
        environment excluded)."""
        return self._bw_command(self.sim.arrays()[1]).copy()

    # ---------------------------------------------------------------- inputs
    def _reject(self, ch: _Channel, what: str, text: str) -> bool:
        ch.rejected += 1
        ch.last_error = text
        # one throttle key per reason (numbers and quoted values stripped), so that each kind
        # of bad message reaches the log at least once per throttle period
        self.log.emit("WARN", f"reject-{what}-{reason_key(text)}",
                      f"rejected {what}: {text}; keeping the last valid input")
        return False

    def _accept(self, ch: _Channel, what: str, value: np.ndarray, fresh: bool = True) -> bool:
        ch.value[:] = value
        if ch.stale:
            self.log.emit("INFO", f"resume-{what}", f"{what} commands resumed at "
                          f"t={self.t:.3f} s", throttle=False)
        ch.time, ch.stale = self.t, False
        ch.fresh = ch.fresh or fresh
        ch.accepted += 1
        self._update_inputs()
        return True

    def _efforts_ignored(self) -> bool:
        if self.joint_source == "simulated":
            return False
        self._reject(self.effort, "effort command",
                     f"joint_source is {self.joint_source}: the joints follow the "
                     f"{self.joint_source} motion and efforts are not applied")
        return True

    def apply_effort_command(self, msg: Any) -> bool:
        """Float64MultiArray of efforts in the order of ``joints``; False if rejected."""
        if self._efforts_ignored():
            return False
        n = len(self.robot.joints)
        try:
            values = rm.parse_float64_multi_array(msg, expected_len=n, reshape=False)
        except ValueError as exc:
            return self._reject(self.effort, "effort command", str(exc))
        return self._accept(self.effort, "effort command", values)

    def reject_effort_command(self, reason: str) -> bool:
        """Count and log an effort command the node rejected before decoding it (``reason``
        names what is wrong, as the decoded check would); returns False."""
        return self._reject(self.effort, "effort command", reason)

    def apply_base_wrench(self, msg: Any) -> bool:
        """WrenchStamped in ``base_frame`` (body) or ``odom_frame``/``world`` (inertial axes,
        moment about the vehicle origin: rotated into the body frame); False if rejected."""
        try:
            w = rm.parse_wrench_stamped(msg)
        except ValueError as exc:
            return self._reject(self.wrench, "base wrench", str(exc))
        t_ns = rm.stamp_to_ns(self.t)
        if self.lockstep and not t_ns <= w.stamp_ns <= t_ns + self._heartbeat_ns:
            # lockstep: a wrench answers the state stamped like it (or one of its heartbeats
            # while paused); an older one is stale
            self.log.emit("WARN", "stale-wrench", f"lockstep: ignored a base wrench stamped "
                          f"{w.stamp_ns * 1e-9:.6g} s at t={self.t:.6g} s")
            return False
        return self.set_base_wrench(w.wrench, w.frame_id)

    def set_effort(self, tau) -> bool:
        """In-process input: efforts in the order of ``joints`` (same checks as a message)."""
        if self._efforts_ignored():
            return False
        n = len(self.robot.joints)
        try:
            a = np.asarray(tau, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            return self._reject(self.effort, "effort command", f"not numeric: {tau!r}")
        if a.shape != (n,):
            return self._reject(self.effort, "effort command",
                                f"expected {n} values, got {a.size}")
        if not np.all(np.isfinite(a)):
            return self._reject(self.effort, "effort command", "contains NaN/Inf")
        return self._accept(self.effort, "effort command", a)

    def set_base_wrench(self, wrench6, frame_id: str) -> bool:
        """In-process input: a 6-vector ``[f; n]`` in ``frame_id``.

        ``base_frame``: body-fixed wrench.  ``odom_frame`` (or ``world``): force and moment in
        inertial axes, the moment taken about the vehicle origin; it stays constant in the
        inertial frame while held (rotated into the body frame at every RK stage).
        """
        w = np.asarray(wrench6, dtype=float).reshape(-1)
        if w.shape != (6,) or not np.all(np.isfinite(w)):
            return self._reject(self.wrench, "base wrench",
                                f"expected 6 finite numbers, got {wrench6!r}")
        r = self.robot
        if frame_id == r.base_frame:
            inertial = False
        elif frame_id == r.odom_frame or frame_id in _INERTIAL_ALIASES:
            inertial = True
        else:
            return self._reject(self.wrench, "base wrench",
                                f"frame_id {frame_id!r} is neither the body frame "
                                f"{r.base_frame!r} nor the inertial frame {r.odom_frame!r}")
        self._wrench_inertial = inertial
        return self._accept(self.wrench, "base wrench", w)

    # ---------------------------------------------------------------- measured joints (HIL)
    def apply_measured_joint_state(self, msg: Any, wall: float | None = None) -> bool:
        """A real arm's ``sensor_msgs/JointState`` (``joint_source: measured``); ``wall`` is
        its arrival time (system clock, s).  False if rejected or out of order."""
        mi = self.measured
        if mi is None:
            return False
        wall = time.time() if wall is None else float(wall)
        try:
            stamp, q, qd = mi.parse(msg)
        except ValueError as exc:
            mi.rejected += 1
            mi.last_error = str(exc)
            self.log.emit("WARN", f"reject-measured-{reason_key(str(exc))}",
                          f"rejected measured joint state: {exc}; the vehicle holds")
            return False
        stamp = wall if stamp is None else stamp
        motion = mi.motion
        first = mi.anchor is None
        t_new = mi.place(stamp, self.t)
        interval = None if first else t_new - motion.t_latest
        if interval is not None and interval <= 0:
            mi.out_of_order += 1
            self.log.emit("WARN", "measured-out-of-order",
                          f"dropped a measured joint state stamped {stamp:.6f} s: not after the "
                          f"newest sample ({interval * 1e3:.3f} ms; late or out of order)")
            return False
        if first or interval > mi.max_gap:
            if not first:
                mi.gaps += 1
                mi.anchor = (stamp, self.t)
                self.log.emit("WARN", "measured-gap",
                              f"gap of {interval:.3f} s in the measured joint states (longer "
                              f"than measured.max_gap={mi.max_gap:g} s): the vehicle held its "
                              f"pose; restarting from the new sample at t={self.t:.3f} s",
                              throttle=False)
            motion.restart(self.t, q, qd)
            self.sim.set_joints()
            self._rebaseline()
            interval = None
        else:
            motion.add(t_new, q, qd)
        mi.accepted += 1
        mi.note_arrival(stamp, wall, interval)
        if mi.accepted == 50 and mi.intervals and self.dt > 1.5 * float(np.median(mi.intervals)):
            h = float(np.median(mi.intervals))
            self.log.emit("WARN", "measured-dt",
                          f"dt={self.dt:g} s is longer than the measured sample interval "
                          f"({h:.4g} s): the steps see noise between samples only at their RK "
                          f"stages and its error accumulates; set dt to {h:.4g} s (one step per "
                          f"sample) for noisy measurements", throttle=False)
        if mi.holding:
            mi.holding = False
            self.log.emit("INFO", "measured-resumed", f"measured joint states resumed at "
                          f"t={self.t:.3f} s", throttle=False)
        return True

    def measured_steps_available(self) -> int:
        """Steps the simulation can take before it would pass the newest measured sample."""
        if self.measured is None:
            return 1 << 30
        ahead = self.measured.motion.t_latest - self.t
        return max(0, int(math.floor(ahead / self.dt + 1e-9)))

    def advance_measured(self) -> int:
        """Run up to the newest measured sample; returns the steps taken."""
        steps = self.measured_steps_available()
        return self.run(steps) if steps and not self.paused else 0

    def check_measured_watchdog(self, wall_now: float) -> None:
        """Warn (once per silence) when the measured joint states stopped: the vehicle holds."""
        mi = self.measured
        if mi is None or mi.holding:
            return
        age = mi.watchdog(wall_now)
        if age is not None:
            mi.holding = True
            self.log.emit("WARN", "measured-watchdog",
                          f"watchdog: no measured joint states for {age:.3f} s (measured.timeout "
                          f"{mi.timeout:g} s) at t={self.t:.3f} s; the vehicle holds",
                          throttle=False)

    def _rebaseline(self) -> None:
        """Energy and momentum references restart at the current state (after the joints were
        replaced by a measured sample: the jump does no work the engine could account for)."""
        E, K, U = self._energy()
        self.E0, self.K0, self.U0 = E - self.work, K, U
        self.momentum0 = self._momentum()
        self.residual = 0.0
        self._checked_steps = self.steps
        self._snapshot = self._take_snapshot()

    def _update_inputs(self) -> None:
        tau = np.zeros(self.model.n)
        tau[self.robot.joint_index] = self.effort.applied()
        self._tau_model = tau
        self._wrench6 = self.wrench.applied().copy()
        inertial = self._wrench_inertial and bool(np.any(self._wrench6))
        self._bw_cmd = None if inertial else self.model.group.project(self._wrench6)
        self._held = self.sim.held_inputs(tau, self._bw_cmd,
                                          self._wrench6 if inertial else None)

    def _bw_command(self, g) -> np.ndarray:
        """Commanded vehicle wrench (b-vector, body frame) at the pose ``g``."""
        if self._bw_cmd is not None:
            return self._bw_cmd
        Rt = g[:3, :3].T
        w = self._wrench6
        return self.model.group.project(np.concatenate([Rt @ w[:3], Rt @ w[3:]]))

    def _watchdog(self) -> None:
        if self.timeout <= 0 or self.lockstep:
            return
        changed = False
        for ch, what in ((self.effort, "effort command"), (self.wrench, "base wrench")):
            if ch.time is not None and not ch.stale and self.t - ch.time > self.timeout + 1e-12:
                ch.stale = changed = True
                self.log.emit("WARN", f"watchdog-{what}",
                              f"watchdog: no {what} for {self.t - ch.time:.3f} s (timeout "
                              f"{self.timeout:g} s) at t={self.t:.3f} s; input zeroed",
                              throttle=False)
        if changed:
            self._update_inputs()

    # ---------------------------------------------------------------- energy
    def _energy(self) -> tuple[float, float, float]:
        K, U = self.sim.energy()
        return K + U, K, U

    def _momentum(self) -> np.ndarray:
        _, g, V, q, qd = self.sim.arrays()
        return self.model.momentum(g, V, q, qd)

    def _take_snapshot(self):
        return self.sim.snapshot()

    def _restore_snapshot(self) -> None:
        self.sim.restore(self._snapshot)

    def _diverge(self, reason: str, t_bad: float | None = None) -> None:
        t_bad = self.t if t_bad is None else t_bad
        self._restore_snapshot()
        self.diverged = True
        self.error = (f"simulation diverged at t={t_bad:.6g} s: {reason}; paused and rolled "
                      f"back to t={self.t:.6g} s (call ~/reset)")
        self.log.emit("ERROR", "diverged", self.error, throttle=False)

    def check_energy(self) -> bool:
        """Energy-balance check of the current state; on failure: roll back and pause."""
        if self.diverged:
            return False
        if self._checked_steps == self.steps:
            return True
        try:
            E, K, U = self._energy()
        except (ArithmeticError, ValueError) as exc:      # overflow in the energy itself
            self._diverge(f"energy not computable ({type(exc).__name__}: {exc})")
            return False
        self.residual = E - self.E0 - self.work
        scale = self.K0 + K + abs(U - self.U0) + self.abs_work + 1e-12 * (1.0 + abs(self.E0))
        if self.joint_source != "simulated":
            # the joints follow a motion from outside, whose work the engine does not know:
            # no balance to check, only a finite state
            self.residual, scale = 0.0, 1.0
        if not (math.isfinite(E) and math.isfinite(scale) and abs(self.residual)
                <= float(self.params["divergence_threshold"]) * scale):
            self._diverge(f"energy balance violated (E - E0 - W = {self.residual:.4g} J, "
                          f"energy scale {scale:.4g} J)")
            return False
        self._checked_steps = self.steps
        self._snapshot = self._take_snapshot()
        return True

    # ---------------------------------------------------------------- stepping
    def _advance(self, steps: int) -> int:
        """Up to ``steps`` engine steps with the held inputs (one compiled call); on a failure
        (non-finite state, overflow, singular inertia) roll back and pause.  Returns the number
        of steps taken."""
        before = self.steps
        start = time.perf_counter()
        try:
            if steps == 1:
                self.sim.step(inputs=self._held)
            else:
                self.sim.run(steps, inputs=self._held)
        except SimulationError as exc:
            self._diverge(f"integrator failed ({exc})", t_bad=exc.t + self.dt)
            return 0
        except (ArithmeticError, ValueError, RuntimeError, np.linalg.LinAlgError) as exc:
            self._diverge(f"integrator failed ({type(exc).__name__}: {exc})",
                          t_bad=self.t + self.dt)
            return 0
        done = self.steps - before
        if done:
            per = (time.perf_counter() - start) / done
            self.step_times.extend([per] * min(done, 64))
        return done

    def _steps_to_watchdog(self) -> int:
        """Steps until an input channel's watchdog would trip (large if none can)."""
        if self.timeout <= 0 or self.lockstep:
            return 1 << 30
        left = 1 << 30
        for ch in (self.effort, self.wrench):
            if ch.time is not None and not ch.stale:
                due = ch.time + self.timeout - self.t
                left = min(left, max(1, int(math.floor(due / self.dt + 1e-9)) + 1))
        return left

    def step(self) -> bool:
        """Advance one step ``dt`` with the current inputs; False if paused or diverged."""
        return self.run(1) == 1

    @property
    def _check_every(self) -> int:
        return max(1, int(round(0.01 / self.dt)))

    def run(self, steps: int) -> int:
        """Up to ``steps`` steps; returns how many were taken (fewer if paused/diverged).

        The steps between two energy checks (and watchdog deadlines) go to the engine in one
        call; every ``_check_every`` steps the energy balance is checked (and the state
        snapshotted for roll-back)."""
        done = 0
        steps = min(int(steps), self.measured_steps_available())
        while done < steps:
            if self.paused:
                break
            self._watchdog()
            chunk = min(steps - done, self._check_every - (self.steps - self._checked_steps),
                        self._steps_to_watchdog())
            taken = self._advance(max(1, chunk))
            if not taken:
                break
            done += taken
            self._watchdog()           # inputs (and JointState.effort) for the next step
            if self.steps - self._checked_steps >= self._check_every and not self.check_energy():
                break
        return done

    def _clock_allowed(self, wall_now: float) -> bool:
        """/clock goes out at ``clock_rate`` Hz of simulated time but, faster than real time,
        at most ``clock_rate`` times per wall second (subscribers need a monotonic clock, not
        20 000 messages a second)."""
        period = 1.0 / float(self.params["clock_rate"])
        return self._last_clock_wall is None or wall_now - self._last_clock_wall >= period - 1e-9

    def _state_allowed(self, wall_now: float) -> bool:
        """Faster than real time, state messages go out at most ``max_wall_publish_rate`` times
        per wall second (0: no limit, every ``1/publish_rate`` of simulated time)."""
        cap = float(self.params["max_wall_publish_rate"])
        rtf = float(self.params["real_time_factor"])
        if cap <= 0 or self.lockstep or (0 < rtf and rtf * float(self.params["publish_rate"])
                                         <= cap):
            return True                   # paced slowly enough: every state goes out
        return (self._last_publish_wall is None
                or wall_now - self._last_publish_wall >= 1.0 / cap - 1e-9)

    @property
    def path_sample_period(self) -> float:
        """Simulated time between two poses of ``ee_path`` and ``base_path`` (s): the state
        period ``1/publish_rate``, also in lockstep, whose states may come far more often
        (``ee_path_length`` poses then span the same time as at the default rate)."""
        return self._state_every * self.dt

    def path_due(self, wall_now: float, key: str) -> bool:
        """True (and noted) if the path ``key`` may be sent now: at most ``path_rate`` per wall
        second."""
        last = self._path_wall.get(key)
        if last is not None and wall_now - last < 1.0 / float(self.params["path_rate"]) - 1e-9:
            return False
        self._path_wall[key] = wall_now
        return True

    def steps_until_due(self, wall_now: float | None = None) -> int:
        """Steps until the next state or clock message is due (≥ 1): the node runs that many
        in one call before publishing."""
        nxt = self._next_state if not self.lockstep else self.steps + self.steps_per_period
        if not self.lockstep and wall_now is not None and not self._state_allowed(wall_now):
            nxt = self.steps + max(1, self._state_every)     # not yet: the next publish point
        if wall_now is None or self._clock_allowed(wall_now):
            nxt = min(nxt, self._next_clock)
        return max(1, nxt - self.steps)

    def lockstep_ready(self) -> bool:
        """Fresh inputs arrived since the last advance: the efforts (if there are joints) and,
        with ``lockstep_wrench`` and a movable vehicle, the base wrench."""
        if self.paused:
            return False
        need = []
        if len(self.robot.joints):
            need.append(self.effort)
        if self.model.b and bool(self.params["lockstep_wrench"]):
            need.append(self.wrench)
        return bool(need) and all(c.fresh for c in need)

    def advance_lockstep(self) -> int:
        """Lockstep: one control period (``steps_per_period`` steps) if :meth:`lockstep_ready`."""
        if not self.lockstep_ready():
            return 0
        for ch in (self.effort, self.wrench):
            ch.fresh = False
        done = self.run(self.steps_per_period)
        if done:
            self._state_pending = True
        return done

    # ---------------------------------------------------------------- services
    def pause(self, flag: bool) -> tuple[bool, str]:
        """``~/pause`` (std_srvs/SetBool)."""
        if not flag and self.diverged:
            return False, f"cannot resume: {self.error}"
        self._user_paused = bool(flag)
        return True, ("paused" if flag else "running") + f" at t={self.t:.6g} s"

    def reset(self) -> tuple[bool, str]:
        """``~/reset`` (std_srvs/Trigger): initial state, t = 0, inputs zero."""
        self._reset_state()
        self.log.emit("INFO", "reset", "simulation reset to the initial state", throttle=False)
        return True, "reset to the initial state at t=0"

    # ---------------------------------------------------------------- outputs
    def state_messages(self) -> list:
        """``[('joint_states', JointState), ('odom', Odometry), ('tf', TFMessage)]`` of the
        current (energy-checked) state."""
        return list(self.iter_state_messages())

    def iter_state_messages(self) -> Iterator[tuple[str, Any]]:
        """:meth:`state_messages`, each message built when it is consumed: a node publishes
        ``joint_states`` and ``odom`` (what a controller waits for) before ``tf`` and the
        hardware-in-the-loop outputs are built.  The energy check runs first."""
        self.check_energy()
        r, m = self.robot, self.model
        t, g, V, q, qd = self.sim.arrays()
        t = self.stamp
        hil = self.interaction() if self.joint_source != "simulated" else None
        tau = self._tau_model if hil is None else hil.tau
        yield "joint_states", rm.joint_state_msg(t, m.joint_names, q, qd, tau)
        yield "odom", rm.odometry_msg(t, g, m.group.embed(V), r.odom_frame, r.base_frame)
        yield "tf", rm.tf_msg(t, [(r.odom_frame, r.base_frame, g)])
        if self.joint_source != "simulated":
            yield "vehicle_pose_command", rm.pose_stamped_msg(t, r.odom_frame, g)
            if hil is not None:
                yield "base_reaction_wrench", rm.wrench_stamped_msg(
                    t, m.group.embed(hil.base_reaction), r.base_frame)
                yield "coupled_joint_efforts", rm.joint_state_msg(
                    t, m.joint_names, q, qd, hil.tau)

    def interaction(self):
        """Joint efforts of the coupled system, the vehicle's acceleration and the wrench the arm
        exerts on the vehicle (:func:`vm_dynamics.sim.interaction.arm_interaction`) at the
        current state, with the estimated (measured) or prescribed joint acceleration; None if
        it cannot be computed (logged)."""
        try:
            qdd = (self.measured.motion.acceleration() if self.measured is not None
                   else self.prescribed(self.t)[2])
            g = self.sim.arrays()[1]
            return arm_interaction(self.sim, qdd, base_wrench=self._bw_command(g))
        except (ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
            self.log.emit("WARN", "interaction", f"base reaction and efforts not computable at "
                          f"t={self.t:.3f} s: {exc}")
            return None

    def clock_message(self) -> Any:
        return rm.clock_msg(self.stamp)

    def ee_path_message(self) -> Any:
        """``nav_msgs/Path`` of the ``ee_frame`` in the odom frame (last ``ee_path_length``)."""
        return rm.path_msg(self.t, self.robot.odom_frame, [pose for _, pose in self.ee_path])

    def _record_ee_pose(self) -> None:
        """Append the current ``ee_frame`` pose (as a PoseStamped, built once) to the path."""
        if self.ee_path and self.ee_path[-1][0] >= self.steps:
            return
        g_e = self.model.frame_pose(self.q, self.ee_frame, self.g)
        pose = rm.pose_stamped_msg(self.t, self.robot.odom_frame, g_e)
        self.ee_path.append((self.steps, pose))

    def diagnostics_message(self) -> Any:
        """``diagnostic_msgs/DiagnosticArray``: simulation and watchdog status."""
        m = self.model
        st = np.asarray(self.step_times) if self.step_times else np.zeros(1)
        if self.diverged:
            level, text = "ERROR", self.error
        elif self._user_paused:
            level, text = "OK", "paused"
        elif self.lockstep and not self.lockstep_ready():
            level, text = "OK", "lockstep: waiting for a command"
        else:
            level, text = "OK", "running"
        rtf = self.timing.get("real_time_factor")
        target = float(self.params["real_time_factor"])
        if level == "OK" and rtf is not None and target > 0 and not self.paused \
                and rtf < 0.9 * target:
            level, text = "WARN", f"real-time factor {rtf:.2f} below target {target:g}"
        scale = abs(self.E0) + self.K0 + self.abs_work
        momentum = self._momentum() if not self.diverged else self.momentum0
        values = {
            "sim_time": self.t, "steps": self.steps, "paused": self.paused,
            "diverged": self.diverged, "integrator": self.method,
            "dynamics_backend": self.sim.backend, "formulation": self.sim.formulation,
            "dt": self.dt, "lockstep": self.lockstep,
            "step_time_mean_ms": 1e3 * float(np.mean(st)),
            "step_time_max_ms": 1e3 * float(np.max(st)),
            "energy": self.E0 + self.work + self.residual,
            "energy_input_work": self.work,
            "energy_balance_residual": self.residual,
            "energy_balance_residual_rel": abs(self.residual) / scale if scale > 0 else 0.0,
            "momentum_change": float(np.linalg.norm(momentum - self.momentum0)),
        }
        values.update({k: v for k, v in self.timing.items()})
        e, w = self.effort, self.wrench
        wd = self.watchdog
        wd_values = {
            "state": wd, "command_timeout": self.timeout,
            "effort_age": "never" if e.time is None else self.t - e.time,
            "wrench_age": "never" if w.time is None else self.t - w.time,
            "effort_accepted": e.accepted, "effort_rejected": e.rejected,
            "wrench_accepted": w.accepted, "wrench_rejected": w.rejected,
            "last_rejection": e.last_error or w.last_error,
            **self.input_stats,
        }
        wd_text = {"waiting": "no command received yet (inputs zero)",
                   "ok": "commands fresh",
                   "tripped": "command timeout: inputs zeroed"}[wd]
        statuses = [
            dict(name="vm_dynamics: simulation", level=level, message=text,
                 hardware_id=m.name, values=values),
            dict(name="vm_dynamics: command watchdog",
                 level="WARN" if wd == "tripped" else "OK", message=wd_text,
                 hardware_id=m.name, values=wd_values),
        ]
        if self.measured is not None:
            mi = self.measured
            if mi.anchor is None:
                js_level, js_text = "WARN", "waiting for measured joint states (vehicle holds)"
            elif mi.holding:
                js_level, js_text = "WARN", "measured joint states stopped: the vehicle holds"
            else:
                js_level, js_text = "OK", "measured joint states drive the vehicle"
            statuses.append(dict(name="vm_dynamics: joint source", level=js_level,
                                 message=js_text, hardware_id=m.name,
                                 values={"joint_source": "measured", **mi.statistics()}))
        elif self.prescribed is not None:
            statuses.append(dict(name="vm_dynamics: joint source", level="OK",
                                 message=f"prescribed motion ({self.prescribed.kind})",
                                 hardware_id=m.name, values={"joint_source": "prescribed"}))
        return rm.diagnostic_array_msg(self.t, statuses)

    def pop_due(self, wall_now: float, idle_republish: float | None = None) -> list:
        """Messages due now, as ``[(key, msg)]`` with keys ``joint_states``, ``odom``, ``tf``,
        ``clock``, ``ee_path``, ``diagnostics``.

        State and clock follow simulated time (``publish_rate``, ``clock_rate``; in lockstep
        the state after every advance); ``diagnostics`` follow wall time.  While the simulation
        does not advance (paused, diverged, lockstep waiting) state and clock are re-sent as a
        heartbeat every ``idle_republish`` wall seconds (default ``1 / publish_rate``), so RViz,
        TF and controllers see a paused robot, not a dead one.
        """
        return list(self.iter_due(wall_now, idle_republish))

    def iter_due(self, wall_now: float, idle_republish: float | None = None
                 ) -> Iterator[tuple[str, Any]]:
        """:meth:`pop_due` as a generator that builds each message when it is consumed, in
        the order ``joint_states``, ``odom``, ``tf``, (``ee_path``), ``clock``,
        ``diagnostics``: a node that publishes while iterating sends what a lockstep
        controller waits for first and builds the rest while the controller computes.  The
        bookkeeping of what is due is done before the first message is yielded, so a consumer
        that stops early (a failed publish) does not leave it half updated."""
        if idle_republish is None:
            idle_republish = 1.0 / float(self.params["publish_rate"])
        s = self.steps
        state_due = self._state_pending or (not self.lockstep and s >= self._next_state
                                            and self._state_allowed(wall_now))
        idle = s == self._last_pop_steps
        self._last_pop_steps = s
        if not idle:
            self._heartbeat_ns = 0
        if not state_due and idle and (self._last_publish_wall is None
                                       or wall_now - self._last_publish_wall
                                       >= idle_republish - 1e-9):
            state_due = True              # not advancing: heartbeat
            if self.paused and self._heartbeat_ns + 1 < rm.stamp_to_ns(self.dt) // 2:
                self._heartbeat_ns += 1    # see stamp_ns
        clock_due = state_due or (s >= self._next_clock and self._clock_allowed(wall_now))
        if state_due:
            self.check_energy()                # first: may roll back
            s = self.steps
            self._state_pending = False
            self._last_publish_wall = wall_now
            self._last_publish_steps = s
            self._next_state = (s // self._state_every + 1) * self._state_every
            # ee_path and the node's base_path take one pose per path_sample_period
            self.path_sample = s >= self._next_path_sample
            if self.path_sample:
                self._next_path_sample = (s // self._state_every + 1) * self._state_every
        if clock_due:
            self._last_clock_wall = wall_now
            self._next_clock = (s // self._clock_every + 1) * self._clock_every
        diag_due = self._next_diag_wall is None or wall_now >= self._next_diag_wall
        if diag_due:
            self._next_diag_wall = wall_now + 1.0 / float(self.params["diagnostics_rate"])
        if state_due:
            yield from self.iter_state_messages()
            if self.ee_frame:
                if self.path_sample:
                    self._record_ee_pose()
                self._path_counter += 1
                if self._path_counter % 10 == 1 and self.path_due(wall_now, "ee_path"):
                    yield "ee_path", self.ee_path_message()
        if clock_due:
            yield "clock", self.clock_message()
        if diag_due:
            yield "diagnostics", self.diagnostics_message()
