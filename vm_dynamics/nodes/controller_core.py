"""The controller node's logic, independent of any transport (no ROS, no DDS).

:class:`ControllerCore` wraps a controller plug-in (:func:`vm_dynamics.control.get_controller`,
parameter ``controller`` or ``controller.name`` plus ``controller.*`` gains) and feeds it the
measured state:

* ``sensor_msgs/JointState`` (``/joint_states``) -> ``q``, ``q̇`` (names mapped to the model);
* ``nav_msgs/Odometry`` (``/odom``) -> the vehicle pose ``g`` and its **body** twist, which
  Odometry carries in ``child_frame_id`` (REP-105, Odometry.msg) and which restricted to the
  vehicle subgroup is ``𝒱 = ι₀ᵀ V`` (paper 000 (37)/(39)).

References: the scenario's ``reference.*`` parameters (:func:`reference_from_config`), replaced
at run time by ``trajectory_msgs/JointTrajectory`` (``~/joint_trajectory``: joint names mapped,
unknown names rejected, interpolated by quintic segments from the current desired state) and
``geometry_msgs/PoseStamped`` (``~/base_pose``: a minimum-jerk screw motion on SE(3) from the
current desired vehicle pose, arriving at ``header.stamp`` if that lies in the future, else
after ``base_pose_duration``).

Outputs, every control period: efforts as ``std_msgs/Float64MultiArray`` in the order of the
``joints`` parameter and the vehicle wrench as ``geometry_msgs/WrenchStamped`` in the body frame
(``base_frame``).  Nothing is published without a state, with a stale state
(``state_timeout``), or if the controller returns non-finite values.

Reference time: with ``reference_start: zero`` reference times are ROS times (simulated time
with ``use_sim_time``, the scenario's references start at the simulation's t = 0); with
``first_state`` they count from the stamp of the first state received.

Joint limits: a ``JointTrajectory`` or ``~/base_pose`` that breaks them is **rejected** with a
warning naming the joint, point and limit (the rules: :mod:`~vm_dynamics.nodes.joint_trajectories`).

In orbit (``two_body``, ``orbit``, ``world_frame``: :mod:`~vm_dynamics.nodes.controller_orbit`)
``/odom`` may be relative to the LVLH frame and the vehicle's pose reference held in it; the
law runs on the inertial state and compensates the two-body gravity.

Time order of the state: a joint state (or odometry) older than the latest accepted one is
ignored (throttled warning; a spoofed or replayed one changes nothing) unless ROS time went
back too since it was accepted -- ``~/reset`` of the dynamics node restarts ``/clock``: the
controller re-initialises, references from messages dropped -- or no newer state came for
``state_timeout`` of wall time (1 s if disabled): it re-synchronises on the older ones.  Never
a reset while another publisher of the state or ``/clock`` is seen (``competing_sources``).
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from ..config.params import flatten, parameter_defaults, unflatten, unflatten_reference
from ..config.sections import resolve_controller_params
from ..config.spec import CONTROLLER_PARAMETERS, checked_values
from ..control import available_controllers, get_controller
from ..control.references import JointWaypoints, PoseWaypoints, Reference, reference_from_config
from ..ros import messages as rm
from ..ros.fields import all_finite, duplicate_names
from ..sim.simulate import State
from .controller_capture import capture_control
from .controller_orbit import ControllerOrbit
from .event_log import EventLog
from .joint_trajectories import (
    Hold,
    PartialJointReference,
    check_motion,
    check_waypoints,
    joint_limits,
    monotone_velocities,
    trajectory_points,
)
from .parameters import section_parameters
from .robot import Robot, load_robot

__all__ = ["CONTROLLER_PARAMETERS", "ControllerCore", "controller_parameter_defaults",
           "JOINT_TRAJECTORY", "POSE_STAMPED", "PartialJointReference"]

JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
POSE_STAMPED = "geometry_msgs/msg/PoseStamped"

#: Rejection reasons: each gets its own throttle key, so one reason flooding the log does not
#: hide another.  (keyword in the error text, reason tag); first match wins.
_REASONS = (("max_", "limit"), ("URDF", "joint-limits"), ("position_bound", "joint-limits"),
            ("NaN/Inf", "nonfinite"), ("expected a", "type"),
            ("values for", "size"), ("entries", "size"), ("empty", "size"),
            ("given for some", "size"),
            ("joint name", "names"), ("duplicate", "names"), ("joint_names", "names"),
            ("time", "time"), ("frame", "frame"), ("quaternion", "quaternion"),
            ("no joint state", "no-state"), ("no state", "no-state"))


def _reason(text: str) -> str:
    return next((tag for word, tag in _REASONS if word in text), "invalid")


def controller_parameter_defaults(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Parameter defaults of the controller node given the overrides it will receive
    (flat names): the fixed table, ``controller.<key>`` for every parameter of the selected
    controller (default ``None`` = dynamically typed; unset ones keep the controller's own
    default), and every ``controller.*``, ``reference.*`` and ``forces.*`` key present in the
    overrides (so that the core sees a misspelled gain and reports it, and the file's gains of
    another plug-in, which it drops with a warning; the force elements it compensates)."""
    out = parameter_defaults(CONTROLLER_PARAMETERS)
    ov = flatten(overrides)
    name = ov.get("controller") or ov.get("controller.name") or ""
    if isinstance(name, str) and name:
        # the plug-in's parameter table, from a default-configured instance (public API)
        for key in getattr(get_controller(name, None), "PARAMS", {}):
            if key != "name":
                out.setdefault(f"controller.{key}", None)
    for key in ov:
        if key.startswith(("reference.", "controller.")):
            out.setdefault(key, None)
    # the force elements it compensates; the capture it runs (nodes/controller_capture.py)
    out.update(section_parameters(ov, ("forces", "capture")))
    return out


def _text(exc: BaseException) -> str:
    """Error text for the log: the exception's message, its type if the message is empty or
    not a plain sentence (e.g. ``(34, 'Numerical result out of range')``)."""
    msg = str(exc)
    if not msg or isinstance(exc, (ArithmeticError, TypeError, AttributeError, KeyError)):
        return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    return msg


class ControllerCore:
    """Controller plug-in + state reconstruction + references (see the module docstring)."""

    RESEND_PERIOD = 0.5

    def __init__(self, robot: Robot, params: Mapping[str, Any],
                 clock: Callable[[], float] = time.monotonic):
        p = parameter_defaults(CONTROLLER_PARAMETERS)
        p.update(flatten(params))
        p = checked_values(p, CONTROLLER_PARAMETERS)     # the scenario model's checks
        self.robot = robot
        self.model = m = robot.model
        self.params = p
        self.log = EventLog(clock)
        #: the capture mission's law, with a capture section and no controller selected
        self.capture = capture_control(robot, p)
        if self.capture is not None:
            self.controller_name, self.ctrl = "capture", self.capture
        else:
            self.controller_name, gains = self._controller_parameters(p)
            self.ctrl = get_controller(self.controller_name, gains)
        ref_cfg = unflatten(p, "reference")
        self.orbit = ControllerOrbit(robot, p)       # in orbit: frames of /odom, references
        self.scenario_reference = self.orbit.scenario_reference(
            reference_from_config(unflatten_reference(ref_cfg, m.n)) if ref_cfg else Reference())
        self.reference = self.scenario_reference
        self._limits = joint_limits(m, float(p["position_bound"]))
        self.period = 1.0 / float(p["control_rate"])
        self.lockstep = bool(p["lockstep"])
        self._external = list(robot.forces) or None     # the dynamics node's elements
        self._js = None          # (t, q, qd)
        self._od = None          # (t, g, V)
        # ROS time at which the latest joint state / odometry was accepted (None: unknown),
        # and the wall time (``clock``)
        self._accepted_at: dict[str, float | None] = {"joint state": None, "odometry": None}
        self._accepted_wall: dict[str, float] = {"joint state": 0.0, "odometry": 0.0}
        #: set by the node while another publisher of the state or /clock is seen: time
        #: jumps back are then never taken for a simulation reset
        self.competing_sources = False
        self.ignored = 0         # states older than the latest accepted one, not used
        self.resets = 0          # re-initialisations (simulation reset or re-synchronisation)
        self._new_js = self._new_od = False
        self._bound = False
        self._answered = None    # (state stamp, wall time) of the last compute
        self._hold = None        # State used for reset (hold values)
        self.t0 = None if p["reference_start"] == "first_state" else 0.0
        self.rejected = 0
        self.failed = 0
        self.last_error = ""
        self.computed = 0
        self.last_t = None

    def _controller_parameters(self, p: Mapping[str, Any]) -> tuple[str, dict]:
        """The plug-in name (``controller``, else ``controller.name``) and its parameters: the
        file's ``controller.*`` values, of which those the plug-in does not have are dropped
        with a warning when ``controller`` selects another plug-in than the file's
        (:func:`~vm_dynamics.config.sections.resolve_controller_params`, as in vm-sim)."""
        override, file_name = p["controller"], p["controller.name"]
        name = override or file_name
        if not name:
            raise ValueError("no controller: set the parameter 'controller' (or controller.name)"
                             f"; available: {', '.join(available_controllers())}")
        if name not in available_controllers():
            which = "controller" if override else "controller.name"
            raise ValueError(f"{which}: unknown {name!r}; available: "
                             f"{', '.join(available_controllers())}")
        section = {k[len("controller."):]: v for k, v in p.items()
                   if k.startswith("controller.") and k != "controller.name" and v is not None}
        gains, kept, dropped = resolve_controller_params(dict(section, name=file_name), name)
        if dropped:
            self.log.emit("WARN", "gains", f"controller {name!r} overrides controller.name "
                          f"{file_name!r}: kept {', '.join(kept) or 'no parameters'}; dropped "
                          f"{', '.join(dropped)} (not {name} parameters)", throttle=False)
        return name, gains

    @classmethod
    def from_params(cls, params: Mapping[str, Any],
                    clock: Callable[[], float] = time.monotonic,
                    folders=()) -> "ControllerCore":
        """The core of (flat or nested) parameters; relative file names are looked up in
        ``folders`` (those of the parameter files) first."""
        return cls(load_robot(params, folders), params, clock)

    # ---------------------------------------------------------------- messages in
    def _reject(self, what: str, text: str) -> bool:
        self.rejected += 1
        self.last_error = f"{what}: {text}"
        self.log.emit("WARN", f"reject-{what}-{_reason(text)}", f"rejected {what}: {text}")
        return False

    def _reinitialise(self, text: str) -> None:
        self.resets += 1
        self.log.emit("INFO", "time-back", f"{text}: controller re-initialised, references "
                      f"from messages dropped", throttle=False)
        self._bound = False
        self._answered = None
        self._od = None
        self._new_od = False
        self._accepted_at["odometry"] = None
        self.reference = self.scenario_reference
        if self.params["reference_start"] == "first_state":
            self.t0 = None

    @property
    def resync_period(self) -> float:
        """Wall time (``clock``) without a newer state after which older states are taken
        (re-synchronisation): the ``state_timeout`` but at least 1 s, so that a simulation
        that stalls for a moment on a busy machine is not taken for a source that went away.
        Wall time, not ROS time: with two sources of ``/clock`` ROS time jumps back and
        forth."""
        return max(float(self.params["state_timeout"]), 1.0)

    def _order(self, what: str, t: float, last: float | None, now: float | None) -> str:
        """Where a state stamped ``t`` stands relative to the latest accepted one (stamp
        ``last``), given the node's ROS time ``now``: ``"new"`` (not older), ``"reset"``
        (older, and ROS time went back too since ``last`` was accepted: the simulation was
        reset; not while :attr:`competing_sources`), ``"resync"`` (older, but no newer state
        for :attr:`resync_period`: the newer source is gone, or that state was stamped in the
        future; re-synchronise on this one) or ``"stale"`` (older while ROS time did not go
        back: a second publisher or a replayed or spoofed message; ignored).  ``now=None``
        (no ROS time known): stamps alone decide, an older state is a reset."""
        if last is None or t >= last - 1e-9:
            return "new"
        if now is None:
            return "reset"
        at = self._accepted_at[what]
        if at is None:
            return "reset"
        if now < at - 1e-9 and not self.competing_sources:
            return "reset"
        if self.log.clock() - self._accepted_wall[what] > self.resync_period:
            return "resync"
        return "stale"

    def _stale(self, what: str, t: float, last: float) -> bool:
        self.ignored += 1
        why = ("another node publishes the state or /clock (see the ERROR about it)"
               if self.competing_sources else
               "ROS time did not go back, so this is no simulation reset: a second publisher, "
               "or a replayed or spoofed message")
        self.log.emit("WARN", f"stale-{what}", f"ignored a {what} stamped {t:.6g} s, older "
                      f"than the latest accepted one ({last:.6g} s): {why}")
        return False

    def on_joint_state(self, msg: Any, now: float | None = None) -> bool:
        """``sensor_msgs/JointState``: every model joint must be present (extras ignored).
        ``now``: the node's ROS time (see :meth:`_order` for states older than the latest)."""
        try:
            limit = int(self.params["max_joint_state_names"])
            if len(msg.name) > limit:
                raise ValueError(f"name has {len(msg.name)} entries, more than "
                                 f"max_joint_state_names={limit}")
            js = rm.parse_joint_state(msg, self.model.joint_names)
            if js.velocity is None and self.model.n:
                raise ValueError("velocity is empty; the controller needs joint velocities")
        except (ValueError, TypeError, AttributeError, ArithmeticError) as exc:
            return self._reject("joint state", _text(exc))
        return self.accept_joint_state(js.stamp_ns, js.position, js.velocity, now)

    def accept_joint_state(self, stamp_ns: int, q: np.ndarray, qd: np.ndarray | None,
                           now: float | None = None) -> bool:
        """A joint state's stamp and finite arrays (model order), parsed or from its CDR."""
        t = stamp_ns * 1e-9
        last = self._js[0] if self._js is not None else None
        order = self._order("joint state", t, last, now)
        if order == "stale":
            return self._stale("joint state", t, last)
        if order == "reset":
            self._reinitialise(f"time jumped back from {last:.6g} s to {t:.6g} s "
                               f"(simulation reset)")
        elif order == "resync":
            self._reinitialise(f"no joint state newer than {last:.6g} s for "
                               f"{self.resync_period:g} s (wall time): re-synchronised on the "
                               f"states at {t:.6g} s")
        self._js = (t, q, qd if qd is not None else np.zeros(0))
        self._accepted_at["joint state"] = now
        self._accepted_wall["joint state"] = self.log.clock()
        self._new_js = True
        return True

    def on_odometry(self, msg: Any, now: float | None = None) -> bool:
        """``nav_msgs/Odometry`` of ``base_frame`` in ``odom_frame`` (in orbit with
        ``world_frame: lvlh``: in ``lvlh``, mapped to inertial at its stamp); twist in the body
        frame.  Older than the latest accepted one: used only after a reset (see
        :meth:`_order`)."""
        r, odom = self.robot, self.orbit.odom_frame
        try:
            od = rm.parse_odometry(msg)
            if od.frame_id != odom or od.child_frame_id != r.base_frame:
                raise ValueError(f"frames {od.frame_id!r} -> {od.child_frame_id!r}; expected "
                                 f"{odom!r} -> {r.base_frame!r}")
        except (ValueError, TypeError, AttributeError, ArithmeticError) as exc:
            return self._reject("odometry", _text(exc))
        return self.accept_odometry(od.stamp_ns, od.g, od.twist, now)

    def accept_odometry(self, stamp_ns: int, g: np.ndarray, V6: np.ndarray,
                        now: float | None = None) -> bool:
        """An odometry's stamp, pose and body twist (frames checked), parsed or from its CDR."""
        try:
            t = stamp_ns * 1e-9
            g, V6 = self.orbit.inertial(t, g, V6)
            twist = self.model.group.project(V6)
        except (ValueError, TypeError, AttributeError, ArithmeticError) as exc:
            return self._reject("odometry", _text(exc))
        last = self._od[0] if self._od is not None else None
        if last is not None and now is not None \
                and self._order("odometry", t, last, now) == "stale":
            return self._stale("odometry", t, last)
        self._od = (t, g, twist)
        self._accepted_at["odometry"] = now
        self._accepted_wall["odometry"] = self.log.clock()
        self._new_od = True
        return True

    def on_target_odometry(self, msg: Any) -> bool:
        """``target/odom`` of a capture (:mod:`~vm_dynamics.nodes.controller_capture`)."""
        try:
            self.capture.on_target_odometry(msg)
        except (ValueError, TypeError, AttributeError, ArithmeticError) as exc:
            return self._reject("target odometry", _text(exc))
        return True

    def state(self) -> State | None:
        """The latest measured ``State`` (time = joint-state stamp), or None if incomplete."""
        if self._js is None:
            return None
        t, q, qd = self._js
        if self._od is not None:
            _, g, V = self._od
        elif self.model.b == 0:
            g, V = np.eye(4), np.zeros(0)
        else:
            return None
        return State(t, g, V, q, qd)

    def lockstep_ready(self) -> bool:
        """Lockstep: a new joint state and odometry with equal stamps arrived since the last
        compute, for a state not answered yet — or re-sent by the dynamics node (it re-sends
        a state it got no command for) at least ``RESEND_PERIOD`` s after our answer."""
        if self._js is None or not self._new_js:
            return False
        if self.model.b and not (self._od is not None and self._new_od
                                 and abs(self._od[0] - self._js[0]) < 1e-9):
            return False
        if self.capture is not None and not (self.capture.target_stamp is not None and abs(
                self.capture.target_stamp - self._js[0]) < 1e-9):
            return False         # the target of the same instant
        if self._answered is not None and self._answered[0] == self._js[0]:
            return self.log.clock() - self._answered[1] >= self.RESEND_PERIOD
        return True

    # ---------------------------------------------------------------- references
    def _ref_time(self, t: float) -> float:
        if self.t0 is None:
            self.t0 = t
        return t - self.t0

    def now_ref(self) -> float | None:
        """Reference time of the latest state (or of the latest compute, if later)."""
        s = self.state()
        ts = [x for x in (s.t if s is not None else None, self.last_t) if x is not None]
        return self._ref_time(max(ts)) if ts else None

    def _joint_desired(self, tr: float):
        if self.reference.joint is not None:
            return tuple(np.asarray(x, dtype=float) for x in self.reference.joint(tr))
        q = self._hold.q if self._hold is not None else self.state().q
        return np.array(q, dtype=float), np.zeros(self.model.n), np.zeros(self.model.n)

    def _base_desired(self, tr: float) -> np.ndarray:
        if self.reference.base is not None:
            return np.asarray(self.reference.base(tr)[0], dtype=float)
        return np.array(self._hold.g if self._hold is not None else self.state().g, dtype=float)

    def on_joint_trajectory(self, msg: Any) -> bool:
        """``trajectory_msgs/JointTrajectory``: follow it from now (see module docstring)."""
        try:
            self.reference = replace(self.reference, joint=self._trajectory(msg))
        except (ValueError, TypeError, AttributeError, ArithmeticError,
                np.linalg.LinAlgError) as exc:
            return self._reject("joint trajectory", _text(exc))
        return True

    def _trajectory(self, msg: Any):
        """The reference of a JointTrajectory, from the current desired state through its
        points (checked: bounds, names, limits; :mod:`~vm_dynamics.nodes.joint_trajectories`)."""
        got = rm.msgtype_of(msg)
        if got != JOINT_TRAJECTORY:
            raise ValueError(f"expected a {JOINT_TRAJECTORY} message, got {got}")
        model_names = self.model.joint_names
        # bounds first: nothing below iterates over more than these
        limit = int(self.params["max_trajectory_points"])
        if len(msg.points) > limit:
            raise ValueError(f"{len(msg.points)} points, more than max_trajectory_points="
                             f"{limit}")
        if len(msg.joint_names) > len(model_names):
            raise ValueError(f"joint_names has {len(msg.joint_names)} entries for a model "
                             f"with {len(model_names)} joints")
        names = list(msg.joint_names)
        unknown = [nm for nm in names if nm not in model_names]
        if unknown:
            raise ValueError(f"unknown joint name(s) {unknown}; the model's joints are "
                             f"{model_names}")
        dup = duplicate_names(names)
        if dup:
            raise ValueError(f"duplicate joint names {dup}")
        now = self.now_ref()
        if now is None:
            raise ValueError("no joint state received yet; cannot start a trajectory")
        index = np.array([model_names.index(nm) for nm in names], dtype=int)
        q_d, v_d, a_d = self._joint_desired(now)
        if not msg.points:               # JTC convention: an empty trajectory stops motion
            return Hold(q_d)
        if not names:
            raise ValueError("joint_names is empty")
        tfs, P, vel, acc = trajectory_points(msg.points, len(names))
        check_waypoints(self._limits, names, index, P, vel)
        stamp_ns = rm.time_msg_to_ns(msg.header.stamp)
        start = now if stamp_ns == 0 else self._ref_time(stamp_ns * 1e-9)
        T = start + tfs
        keep = T > now + 1e-9
        if not np.any(keep):
            raise ValueError(f"trajectory ends at reference time {T[-1]:.6g} s, before now "
                             f"({now:.6g} s)")
        T, P = T[keep], P[keep]
        times = np.concatenate([[now], T])
        pos = np.vstack([q_d[index], P])
        if vel is not None:
            V = np.vstack([v_d[index], vel[keep]])
        else:
            V = monotone_velocities(times, pos, v_d[index])
        A = np.vstack([a_d[index], acc[keep]]) if acc is not None else np.zeros_like(pos)
        A[0] = a_d[index]
        wp = JointWaypoints(times, pos, V, A)
        check_motion(self._limits, names, index, wp, v_d[index])
        if len(index) == self.model.n and np.array_equal(index, np.arange(self.model.n)):
            return wp
        prev = self.reference.joint if self.reference.joint is not None else Hold(q_d)
        return PartialJointReference.over(prev, self.model.n, index, wp)

    def on_base_pose(self, msg: Any) -> bool:
        """``geometry_msgs/PoseStamped`` target of the vehicle in ``odom_frame`` (in orbit
        also ``lvlh``: relative to the LVLH frame)."""
        try:
            self.reference = replace(self.reference, base=self._base_motion(msg))
        except (ValueError, TypeError, AttributeError, ArithmeticError,
                np.linalg.LinAlgError) as exc:
            return self._reject("base pose", _text(exc))
        return True

    def _base_motion(self, msg: Any):
        got = rm.msgtype_of(msg)
        if got != POSE_STAMPED:
            raise ValueError(f"expected a {POSE_STAMPED} message, got {got}")
        r, m = self.robot, self.model
        if m.b == 0:
            raise ValueError("the vehicle is fixed (base_type fixed): no base pose reference")
        frame = msg.header.frame_id
        if frame not in self.orbit.frames(r.odom_frame):
            raise ValueError(f"frame_id {frame!r}; a base pose must be given in one of "
                             f"{', '.join(self.orbit.frames(r.odom_frame))}")
        pos = msg.pose.position
        ori = msg.pose.orientation
        p = np.array([pos.x, pos.y, pos.z], dtype=float)
        qv = np.array([ori.x, ori.y, ori.z, ori.w], dtype=float)
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(qv))):
            raise ValueError("pose contains NaN/Inf")
        if np.any(np.abs(p) > self._limits.bound):
            raise ValueError(f"position {p.tolist()} is beyond position_bound "
                             f"±{self._limits.bound:g} m")
        nq = float(np.linalg.norm(qv))
        if abs(nq - 1.0) > rm.QUAT_NORM_TOL:
            raise ValueError(f"orientation is not a unit quaternion (norm {nq:.6g})")
        now = self.now_ref()
        if now is None:
            raise ValueError("no state received yet; cannot start a base motion")
        g_new = rm.matrix_from_pose(p, qv / nq)
        stamp_ns = rm.time_msg_to_ns(msg.header.stamp)
        end = self._ref_time(stamp_ns * 1e-9) if stamp_ns else -math.inf
        if end <= now + 1e-3:
            end = now + float(self.params["base_pose_duration"])
        group = m.group.name if m.b < 6 else None
        return self.orbit.base_motion(
            frame, lambda start: PoseWaypoints([now, end], [start, g_new], group), now,
            self._base_desired(now))

    # ---------------------------------------------------------------- control
    def compute(self, now: float | None = None):
        """``(tau (n, URDF order), base_wrench (b, body))`` for the latest state, or None if
        there is no valid state, it is stale, or the output is not finite.

        The law is evaluated at the **state's own stamp** (the reference too), never at
        ``now``: pairing a delayed state with the current reference time adds the delay to
        the error the gains act on.  ``now`` (ROS time, default: the state's stamp) only
        decides staleness: a state older than ``state_timeout`` is not answered, since a
        computed-torque law closing the loop over a long delay is unstable."""
        s = self.state()
        if s is None or (self.capture is not None and self.capture.target_stamp is None):
            return None
        now = s.t if now is None else float(now)
        timeout = float(self.params["state_timeout"])
        if timeout > 0 and now - s.t > timeout:
            self.log.emit("WARN", "stale", f"latest state is {now - s.t:.3f} s old (> "
                          f"state_timeout {timeout:g} s): not commanding")
            return None
        t = s.t
        try:
            # everything that runs plug-in or model code: a node never dies from it
            # (OverflowError for huge angles, LinAlgError, ZeroDivisionError, FloatingPointError
            # under np.errstate(raise), or any bug of a third-party plug-in)
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                if not self._bound:
                    self.ctrl.reset(self.model, s, external=self._external)
                    self._hold = s
                    self._bound = True
                    self.reference = self.orbit.bind(self.reference, s.t, s.g)
                tr = self._ref_time(t)
                tau, bw = self.ctrl.compute(tr, State(tr, s.g, s.V, s.q, s.qd), self.reference)
                tau = np.asarray(tau, dtype=float).reshape(self.model.n)
                bw = np.asarray(bw, dtype=float).reshape(self.model.b)
        except Exception as exc:  # noqa: BLE001 - see above
            self.failed += 1
            self.log.emit("ERROR", f"compute-{type(exc).__name__}",
                          f"controller {self.controller_name!r} failed at t={t:.6g} s: "
                          f"{type(exc).__name__}: {exc}; nothing published")
            return None
        if not (all_finite(tau) and all_finite(bw)):
            self.log.emit("ERROR", "nonfinite", f"controller {self.controller_name!r} returned "
                          f"NaN/Inf at t={t:.6g} s; nothing published")
            return None
        self._new_js = self._new_od = False
        self._answered = (s.t, self.log.clock())
        self.computed += 1
        self.last_t = t
        return tau, bw

    def command_messages(self, now: float | None = None, wire=None) -> list:
        """``[('effort_commands', Float64MultiArray), ('base_wrench', WrenchStamped)]`` or [];
        the wrench is stamped with the state it answers (see :meth:`compute`).  In lockstep
        the efforts go as ``('joint_commands', JointState)`` by joint name, stamped with that
        state too, so the dynamics node applies each answer to its own period only (as CDR
        bytes with a ``wire``, :class:`~vm_dynamics.nodes.lockstep_wire.CommandWire`)."""
        out = self.compute(now)
        if out is None:
            return []
        tau, bw = out
        stamp = self.last_t
        tau = tau[self.robot.joint_index]
        try:
            out = None if wire is None or not self.lockstep else wire.commands(
                rm.stamp_to_ns(stamp), tau, self.model.group.embed(bw))
            if out is not None:
                return out
            stamp_msg = rm.time_msg(stamp)       # converted once, for both messages
            efforts = (("joint_commands", rm.joint_state_msg(stamp_msg, self.robot.joints, None,
                                                              effort=tau))
                       if self.lockstep else
                       ("effort_commands", rm.float64_multi_array_msg(tau)))
            return [efforts,
                    ("base_wrench", rm.wrench_stamped_msg(stamp_msg, self.model.group.embed(bw),
                                                          self.robot.base_frame))]
        except (ValueError, ArithmeticError) as exc:  # e.g. a stamp outside int32 seconds
            self.log.emit("ERROR", "output", f"cannot build the command messages at "
                          f"t={stamp:.6g} s: {_text(exc)}; nothing published")
            return []

    def joint_error(self, t: float | None = None) -> np.ndarray | None:
        """``q_d(t) − q`` of the latest state (for monitoring and tests)."""
        s = self.state()
        if s is None:
            return None
        tr = self._ref_time(s.t if t is None else t)
        return self._joint_desired(tr)[0] - s.q
