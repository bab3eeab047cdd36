"""The dynamics node's command inputs: joint efforts and the vehicle wrench, each a channel
with its last valid value, its watchdog, and the inputs the engine holds over the next steps.

Bad messages (wrong length, NaN/Inf, unknown frame, wrong type) are rejected with a throttled
warning and the last valid input stays applied; a channel not refreshed for
``command_timeout`` seconds of simulated time is zeroed until a fresh message arrives (not in
lockstep, where the simulation waits for commands instead).  Kinematically driven joints
(:mod:`~vm_dynamics.nodes.driven_commands`) take position or velocity commands on the same
channel, applied from each control period's start; when their command stops they hold
velocity zero.  Part of :class:`~vm_dynamics.nodes.dynamics_core.DynamicsCore`.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..ros import messages as rm
from .driven_commands import DrivenJointCommands, parse_joint_command
from .event_log import EventLog, reason_key

__all__ = ["InputChannel", "CommandInputs", "INERTIAL_ALIASES"]

#: Frame names taken as the inertial frame besides ``odom_frame``.
INERTIAL_ALIASES = ("world",)


class InputChannel:
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

    def clear(self) -> None:
        self.value[:] = 0.0
        self.time, self.stale, self.fresh = None, False, False


class CommandInputs:
    """The effort and wrench channels of a simulation ``sim`` of ``robot``, with the inputs
    held over the next steps (:attr:`held`, the engine's held-inputs object).

    ``now()`` is the simulated time; efforts are rejected when the joints follow a measured
    or prescribed motion (``joint_source``).  ``driven``: the kinematically driven joints (the
    effort channel then holds each joint's command of its kind), None if there are none."""

    def __init__(self, robot, sim, log: EventLog, now: Callable[[], float], timeout: float,
                 lockstep: bool, joint_source: str,
                 heartbeat_ns: Callable[[], int] = lambda: 0,
                 driven: DrivenJointCommands | None = None):
        self.robot, self.model, self.sim, self.log, self.now = robot, robot.model, sim, log, now
        self.timeout, self.lockstep, self.joint_source = timeout, lockstep, joint_source
        self.heartbeat_ns = heartbeat_ns   # stamps of the paused heartbeats: t + 1..this ns
        # lockstep: stamps this much older than the state still answer it (a controller
        # manager's hardware component may stamp from a clock /clock samples behind;
        # nodes/ros2_control.py sets it once that lockstep has started)
        self.stamp_tolerance_ns = 0
        self.effort = InputChannel(len(robot.joints))
        self.wrench = InputChannel(6)
        self.wrench_inertial = False     # the held wrench is in inertial axes
        # wrenches at frames of the model, {frame: [f; n]} in frame axes, held with the
        # commands (a force/torque sensor's measured wrench: nodes/wrench_source.py)
        self.frame_wrenches: dict = {}
        # the held inputs (update()): efforts in model order, wrench, its body-frame
        # b-vector (None when inertial) and the engine's held-inputs object; an accepted
        # command only marks them out of date, and they are rebuilt once when next read (in
        # lockstep the efforts and the wrench of a period arrive one after the other)
        self._tau_model = self._wrench6 = self._bw_cmd = self._held = None
        self._out_of_date = False
        self.driven = driven
        self.driven_at = -1          # the step at which the driven velocities were last set

    def reset(self) -> None:
        """No input received, inputs zero."""
        self.effort.clear()
        self.wrench.clear()
        self.wrench_inertial = False
        self.driven_at = -1
        self.update()

    @property
    def watchdog(self) -> str:
        """``waiting`` (no input yet), ``ok`` or ``tripped``."""
        chans = [c for c in (self.effort, self.wrench) if c.time is not None]
        if not chans:
            return "waiting"
        return "tripped" if any(c.stale for c in chans) else "ok"

    # ---------------------------------------------------------------- accept / reject
    def reject(self, ch: InputChannel, what: str, text: str) -> bool:
        """Count and log a rejected input (one throttle key per reason, numbers and quoted
        values stripped, so each kind of bad message reaches the log); returns False."""
        ch.rejected += 1
        ch.last_error = text
        self.log.emit("WARN", f"reject-{what}-{reason_key(text)}",
                      f"rejected {what}: {text}; keeping the last valid input")
        return False

    def accept(self, ch: InputChannel, what: str, value: np.ndarray, fresh: bool = True) -> bool:
        ch.value[:] = value
        if ch.stale:
            self.log.emit("INFO", f"resume-{what}", f"{what} commands resumed at "
                          f"t={self.now():.3f} s", throttle=False)
        ch.time, ch.stale = self.now(), False
        ch.fresh = ch.fresh or fresh
        ch.accepted += 1
        self._out_of_date = True
        return True

    def efforts_ignored(self, by_name: bool = False) -> bool:
        """True (the command rejected, logged) if efforts are not applied: the joints follow
        a measured or prescribed motion, or (an effort vector, not ``by_name``) some are
        driven by position or velocity commands, which only a JointState carries."""
        if self.joint_source != "simulated":
            text = (f"joint_source is {self.joint_source}: the joints follow the "
                    f"{self.joint_source} motion and efforts are not applied")
        elif self.driven is not None and not by_name:
            text = (f"the joints {self.driven.describe()} are driven (driven_joints.*): "
                    "send sensor_msgs/JointState commands by name on joint_commands")
        else:
            return False
        self.reject(self.effort, "effort command", text)
        return True

    def apply_effort_command(self, msg: Any) -> bool:
        """Float64MultiArray of efforts in the order of ``joints``; False if rejected."""
        if self.efforts_ignored():
            return False
        n = len(self.robot.joints)
        try:
            values = rm.parse_float64_multi_array(msg, expected_len=n, reshape=False)
        except ValueError as exc:
            return self.reject(self.effort, "effort command", str(exc))
        return self.accept(self.effort, "effort command", values)

    def answers_current_state(self, stamp_ns: int, what: str) -> bool:
        """Lockstep: a command counts for the current period only if stamped with the state
        being waited on, ``t`` (or one of its heartbeats while paused).  One stamped with an
        older state — a late answer, or a second answer to a state re-sent while waiting — is
        logged and ignored, so no period applies another period's command."""
        t_ns = rm.stamp_to_ns(self.now())
        if not self.lockstep or \
                t_ns - self.stamp_tolerance_ns <= stamp_ns <= t_ns + self.heartbeat_ns():
            return True
        self.log.emit("WARN", f"stale-{what.replace(' ', '-')}",
                      f"lockstep: ignored a {what} stamped {stamp_ns * 1e-9:.6g} s at "
                      f"t={self.now():.6g} s (it answers an earlier state)")
        return False

    def apply_joint_command(self, msg: Any) -> bool:
        """``sensor_msgs/JointState`` command by joint name: ``effort`` for every joint of
        ``joints`` (any order), ``position``/``velocity`` empty or full, no unknown names;
        with driven joints each joint's field of its kind
        (:func:`~vm_dynamics.nodes.driven_commands.parse_joint_command`).  Stamped with the
        state it answers (:meth:`answers_current_state`; 0: unstamped, applied as it arrives,
        like a Float64MultiArray).  False if rejected or ignored."""
        if self.efforts_ignored(by_name=True):
            return False
        try:
            if self.driven is None:
                js = rm.parse_joint_state(msg, self.robot.joints, required="effort",
                                          extra_names=False)
                stamp_ns, values = js.stamp_ns, js.effort
            else:
                stamp_ns, values = parse_joint_command(msg, self.driven.joints,
                                                       self.driven.kinds)
        except (ValueError, TypeError, AttributeError, ArithmeticError) as exc:
            return self.reject(self.effort, "joint command", str(exc))
        return self.command_values(stamp_ns, values)

    def command_values(self, stamp_ns: int, values: np.ndarray) -> bool:
        """A joint command's stamp and finite efforts (``joints`` order), parsed from the
        message or read from its CDR (:mod:`~vm_dynamics.nodes.lockstep_wire`), once
        :meth:`efforts_ignored` said they apply: the rest of :meth:`apply_joint_command`."""
        if stamp_ns and not self.answers_current_state(stamp_ns, "joint command"):
            return False
        return self.accept(self.effort, "effort command", values)

    def apply_base_wrench(self, msg: Any) -> bool:
        """WrenchStamped in ``base_frame`` (body) or ``odom_frame``/``world`` (inertial axes,
        moment about the vehicle origin: rotated into the body frame), stamped with the state
        it answers (:meth:`answers_current_state`); False if rejected or ignored."""
        try:
            w = rm.parse_wrench_stamped(msg)
        except ValueError as exc:
            return self.reject(self.wrench, "base wrench", str(exc))
        return self.wrench_values(w.stamp_ns, w.wrench, w.frame_id)

    def wrench_values(self, stamp_ns: int, wrench6: np.ndarray, frame_id: str) -> bool:
        """A base wrench's stamp, finite ``[f; n]`` and frame, parsed from the message or
        read from its CDR: the rest of :meth:`apply_base_wrench`."""
        if not self.answers_current_state(stamp_ns, "base wrench"):
            return False
        return self.set_base_wrench(wrench6, frame_id)

    def set_effort(self, tau) -> bool:
        """In-process input: efforts in the order of ``joints`` (same checks as a message)."""
        if self.efforts_ignored():
            return False
        n = len(self.robot.joints)
        try:
            a = np.asarray(tau, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            return self.reject(self.effort, "effort command", f"not numeric: {tau!r}")
        if a.shape != (n,):
            return self.reject(self.effort, "effort command",
                               f"expected {n} values, got {a.size}")
        if not np.all(np.isfinite(a)):
            return self.reject(self.effort, "effort command", "contains NaN/Inf")
        return self.accept(self.effort, "effort command", a)

    def set_base_wrench(self, wrench6, frame_id: str) -> bool:
        """A 6-vector ``[f; n]`` in ``frame_id``: ``base_frame`` (body-fixed) or ``odom_frame``
        / ``world`` (inertial axes, moment about the vehicle origin; constant in the inertial
        frame while held, rotated into the body frame at every RK stage)."""
        w = np.asarray(wrench6, dtype=float).reshape(-1)
        if w.shape != (6,) or not np.isfinite(w).all():
            return self.reject(self.wrench, "base wrench",
                               f"expected 6 finite numbers, got {wrench6!r}")
        r = self.robot
        if frame_id == r.base_frame:
            inertial = False
        elif frame_id == r.odom_frame or frame_id in INERTIAL_ALIASES:
            inertial = True
        else:
            return self.reject(self.wrench, "base wrench",
                               f"frame_id {frame_id!r} is neither the body frame "
                               f"{r.base_frame!r} nor the inertial frame {r.odom_frame!r}")
        self.wrench_inertial = inertial
        return self.accept(self.wrench, "base wrench", w)

    # ---------------------------------------------------------------- held inputs
    def update(self) -> None:
        """The inputs held over the next steps, from the channels' applied values."""
        tau = np.zeros(self.model.n)
        tau[self.robot.joint_index] = self.effort.applied()
        if self.driven is not None:          # commands of other kinds (the engine ignores
            tau[self.driven.model_index] = 0.0   # efforts of driven joints)
        self._tau_model = tau
        self._wrench6 = self.wrench.applied().copy()
        inertial = self.wrench_inertial and bool(np.any(self._wrench6))
        self._bw_cmd = None if inertial else self.model.group.project(self._wrench6)
        self._held_args = (tau, self._bw_cmd, self._wrench6 if inertial else None,
                           self.frame_wrenches or None)
        self._held = self.sim.held_inputs(*self._held_args)
        self._out_of_date = False

    def _current(self, value):
        if self._out_of_date:
            self.update()
        return value(self)

    tau_model = property(lambda self: self._current(lambda s: s._tau_model),
                         doc="Efforts held, model (URDF) order.")
    wrench6 = property(lambda self: self._current(lambda s: s._wrench6),
                       doc="The commanded vehicle wrench held, ``[f; n]`` as received.")
    bw_cmd = property(lambda self: self._current(lambda s: s._bw_cmd),
                      doc="Its body-frame b-vector, or None while it is held in inertial "
                          "axes.")
    held = property(lambda self: self._current(lambda s: s._held),
                    doc="The engine's held-inputs object (:meth:`Simulator.held_inputs`).")

    def state_effort(self) -> np.ndarray:
        """The joint efforts of the current state, model order: the held efforts, and at
        driven joints the efforts that realise their motion (``Simulator.driven_effort``
        with the held inputs)."""
        tau = self.tau_model
        if self.driven is None:
            return tau
        tau = tau.copy()
        tau[self.driven.model_index] = self.sim.driven_effort(*self._held_args)
        return tau

    # ---------------------------------------------------------------- driven joints
    def steps_to_period_end(self, steps: int) -> int:
        """Steps from ``steps`` to the next control-period boundary, where driven joints take
        their next velocity (large without driven joints)."""
        if self.driven is None:
            return 1 << 30
        return self.driven.steps - steps % self.driven.steps

    def drive(self, steps: int) -> None:
        """At a control-period boundary (``steps`` a multiple of the period's steps), once:
        set the driven joints' velocities from the command in force (module docstring of
        :mod:`~vm_dynamics.nodes.driven_commands`)."""
        d = self.driven
        if d is None or steps % d.steps or steps == self.driven_at:
            return
        self.driven_at = steps
        ch = self.effort
        values = None if (ch.time is None or ch.stale) else ch.value
        self.sim.set_driven_velocity(d.velocity(values, self.sim.arrays()[3]))

    def base_wrench_at(self, g) -> np.ndarray:
        """Commanded vehicle wrench (b-vector, body frame) at the pose ``g``."""
        bw = self.bw_cmd
        if bw is not None:
            return bw
        Rt = g[:3, :3].T
        w = self.wrench6
        return self.model.group.project(np.concatenate([Rt @ w[:3], Rt @ w[3:]]))

    # ---------------------------------------------------------------- watchdog
    def check_watchdog(self) -> None:
        """Zero the inputs of channels not refreshed for ``timeout`` (simulated s)."""
        if self.timeout <= 0 or self.lockstep:
            return
        changed = False
        t = self.now()
        for ch, what in ((self.effort, "effort command"), (self.wrench, "base wrench")):
            if ch.time is not None and not ch.stale and t - ch.time > self.timeout + 1e-12:
                ch.stale = changed = True
                self.log.emit("WARN", f"watchdog-{what}",
                              f"watchdog: no {what} for {t - ch.time:.3f} s (timeout "
                              f"{self.timeout:g} s) at t={t:.3f} s; input zeroed",
                              throttle=False)
        if changed:
            self.update()
            if self.driven is not None and self.effort.stale:   # driven joints stop now
                self.sim.set_driven_velocity(self.driven.velocity(None, None))

    def steps_to_watchdog(self, dt: float) -> int:
        """Steps of ``dt`` until a channel's watchdog would trip (large if none can)."""
        if self.timeout <= 0 or self.lockstep:
            return 1 << 30
        left = 1 << 30
        for ch in (self.effort, self.wrench):
            if ch.time is not None and not ch.stale:
                due = ch.time + self.timeout - self.now()
                left = min(left, max(1, int(math.floor(due / dt + 1e-9)) + 1))
        return left
