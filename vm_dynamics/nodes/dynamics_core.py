"""The simulation behind the dynamics node, independent of any transport (no ROS, no DDS).

:class:`DynamicsCore` integrates the Lagrange–Poincaré equations of paper 000 (docs/corrections.md, "LP equations",
(LP-1)–(LP-4)) one time step ``dt`` at a time with the simulation engine,
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
3. **Divergence**: a non-finite state, or an energy balance that fails — the residual
   ``r = E(t) − E(0) − W(t)`` (``E`` kinetic + gravitational energy, ``W`` the work of all
   applied efforts and wrenches) exceeding ``divergence_threshold`` times the energy scale
   ``K(0) + K(t) + |U(t) − U(0)| + ∫|P| dt`` — pauses the simulation with an error and rolls
   back to the last state that passed the check.  Only checked states are ever published.

Time is simulated time ``t = steps · dt``; pacing to the wall clock (``real_time_factor``) is
the node's job (:class:`Pacer`), so the core is deterministic: the same inputs give
bit-identical states.  With ``lockstep`` the core advances one control period
(``1 / control_rate``) only when a fresh command has arrived
(:meth:`DynamicsCore.advance_lockstep`).
"""
from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..ros import messages as rm
from ..sim.engine import SimulationError, Simulator, State
from ..model.hydrodynamics import load_hydrodynamics
from ..sim.integrators import METHODS
from ..model.model import load_model
from ..model.mounting import ROBOT_MODEL_PARAMETERS, effective_urdf, model_options
from ..config.params import flatten, parameter_defaults, unflatten
from ..config.sections import INITIAL_PARAMETERS, initial_state
from ..config.scenario import share_dir
from ..core.validation import MAX_MAGNITUDE, as_positive, as_vector
from ..model.urdf import read_urdf_source, resolve_package_path

__all__ = ["ROBOT_PARAMETERS", "DYNAMICS_PARAMETERS", "DYNAMICS_BACKENDS", "Robot",
           "load_robot", "DynamicsCore", "Pacer", "EventLog"]

#: Parameters shared by the dynamics and controller nodes: ``name: (default, description)``.
ROBOT_PARAMETERS: dict[str, tuple[Any, str]] = {
    "robot_description": ("", "URDF XML (as robot_state_publisher takes it); overrides "
                          "robot_description_file"),
    "robot_description_file": ("", "URDF or xacro file; relative paths are looked up in the "
                               "package's urdf/ directory"),
    "hydrodynamics_file": ("", "optional hydrodynamics YAML (added mass, damping, buoyancy), "
                           "relative to urdf/"),
    "base_type": ("SE3", "vehicle subgroup: SE3, SE2, SO3 or fixed"),
    "gravity": ([0.0, 0.0, -9.81], "gravitational acceleration in the odom frame, m/s^2"),
    "joints": ([], "joint order of effort commands (Float64MultiArray); default: all joints "
               "in URDF order"),
    "odom_frame": ("odom", "inertial frame of the odometry, TF parent and world-frame wrenches"),
    "base_frame": ("", "vehicle frame (TF child, Odometry child_frame_id); default: the URDF "
                   "root link"),
    "control_rate": (200.0, "controller rate, Hz (lockstep advances 1/control_rate per "
                     "command)"),
    "lockstep": (False, "advance one control period only when a fresh command arrived"),
    "robot_description_xacro": ("safe", "xacro expansion of robot_description_file: safe "
                                "(arithmetic ${} only; xacro files are code), full (trusted "
                                "files), off (plain URDF only)"),
    **ROBOT_MODEL_PARAMETERS,
}

#: Parameters of the dynamics node (in addition to :data:`ROBOT_PARAMETERS`).
DYNAMICS_PARAMETERS: dict[str, tuple[Any, str]] = {
    **ROBOT_PARAMETERS,
    "integrator": ("rkmk4", "rkmk4, lie_euler or dopri5"),
    "dynamics_backend": ("auto", "auto|numba (the compiled engine; auto falls back to plain "
                         "Python without numba) or lp (the closed-form LP reference, slow)"),
    "dt": (0.001, "integration step, s"),
    "publish_rate": (50.0, "joint_states/odom/tf rate, Hz of simulated time"),
    "clock_rate": (1000.0, "/clock rate, Hz of simulated time (at most one per step, and at "
                   "most this many per wall second when faster than real time)"),
    "diagnostics_rate": (1.0, "/diagnostics rate, Hz of wall time"),
    "real_time_factor": (1.0, "simulated seconds per wall second; 0 = as fast as possible"),
    "command_timeout": (0.5, "watchdog: zero an input not refreshed for this long "
                        "(simulated s); 0 disables"),
    "lockstep_wrench": (True, "lockstep also waits for a fresh base_wrench every period (set "
                        "false for controllers that publish efforts only)"),
    "divergence_threshold": (0.25, "pause when the energy-balance residual exceeds this "
                             "fraction of the energy scale"),
    "ee_frame": ("", "frame whose path is published on ee_path; default ee_link if present"),
    "ee_path_length": (200, "number of poses kept in ee_path"),
    "max_wall_publish_rate": (100.0, "when real_time_factor x publish_rate exceeds it (or "
                              "real_time_factor is 0), send the state (joint_states, odom, tf) "
                              "at most this many times per wall second; 0 = always every "
                              "1/publish_rate of simulated time"),
    "path_rate": (2.0, "ee_path/base_path: sent with every 10th state, but at most this many "
                  "times per wall second (paths of hundreds of poses are costly to send)"),
    **{f"initial.{k}": v for k, v in INITIAL_PARAMETERS.items()},
}

DYNAMICS_BACKENDS = ("auto", "numba", "lp")
_INERTIAL_ALIASES = ("world",)


# ------------------------------------------------------------------------------ robot
@dataclass
class Robot:
    """The model plus the naming the nodes need."""

    model: Any
    hydrodynamics: Any
    joints: list           # command order (``joints`` parameter)
    joint_index: np.ndarray  # model index of each command entry
    odom_frame: str
    base_frame: str
    source: str            # where the URDF came from (for messages)
    urdf_xml: str = ""     # the (xacro-expanded) URDF text


def _share_file(path: str, sub: str, what: str) -> Path:
    p = Path(path).expanduser()
    if not p.is_absolute():
        p = share_dir() / sub / p
    if not p.is_file():
        raise ValueError(f"{what}: file not found: {str(p)!r}")
    return p


def load_robot(params: Mapping[str, Any]) -> Robot:
    """Model, hydrodynamics and frame/joint names from (flat) node parameters."""
    p = parameter_defaults(ROBOT_PARAMETERS)
    p.update(flatten(params))
    gravity = as_vector(p["gravity"], 3, "gravity", limit=MAX_MAGNITUDE)
    base = p["base_type"]
    xml = p["robot_description"]
    if not isinstance(xml, str) or not isinstance(p["robot_description_file"], str):
        raise ValueError("robot_description/robot_description_file must be strings")
    if xml.strip():
        source = "robot_description"
    elif p["robot_description_file"]:
        rdf = p["robot_description_file"]
        path = (resolve_package_path(rdf) if rdf.startswith("package://") else
                _share_file(rdf, "urdf", "robot_description_file"))
        xml, source = read_urdf_source(str(path), xacro=p["robot_description_xacro"])
    else:
        raise ValueError("no robot: set robot_description (URDF XML) or robot_description_file")
    opts = model_options(p)
    model = load_model(xml, base=base, gravity=gravity, **opts)
    if opts["locked_joints"] or opts["vehicle"]:   # the URDF of that model, for viewers
        xml = effective_urdf(xml, **opts)
    hydro = None
    if p["hydrodynamics_file"]:
        hpath = _share_file(p["hydrodynamics_file"], "urdf", "hydrodynamics_file")
        hydro = load_hydrodynamics(hpath, gravity_magnitude=float(np.linalg.norm(gravity)))
        model = model.with_added_vehicle_inertia(hydro.added_mass)
        missing = [k for k in hydro.link_buoyancy if k not in model.frame_body]
        if missing:
            raise ValueError(f"hydrodynamics_file: links {missing} are not in the URDF")
    joints = list(p["joints"] or model.joint_names)
    unknown = [j for j in joints if j not in model.joint_names]
    if unknown:
        raise ValueError(f"joints: unknown joint(s) {unknown}; the URDF's joints are "
                         f"{model.joint_names}")
    dup = sorted({j for j in joints if joints.count(j) > 1})
    if dup:
        raise ValueError(f"joints: duplicate joint(s) {dup}")
    index = np.array([model.joint_names.index(j) for j in joints], dtype=int)
    odom = p["odom_frame"]
    base_frame = p["base_frame"] or model.vehicle_link
    if not odom or odom == base_frame:
        raise ValueError(f"odom_frame {odom!r} must be non-empty and differ from base_frame "
                         f"{base_frame!r}")
    return Robot(model, hydro, joints, index, odom, base_frame, source, xml)


# ------------------------------------------------------------------------------ logging
class EventLog:
    """Warnings/errors of a core, throttled per key (at most one per ``period`` s of ``clock``).

    ``records`` keeps everything emitted (bounded); :meth:`pop` hands new records to the node.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, period: float = 2.0):
        self.clock = clock
        self.period = float(period)
        self.records: deque = deque(maxlen=500)
        self._pending: list = []
        self._last: dict = {}
        self._suppressed: dict = {}

    def emit(self, level: str, key: str, text: str, throttle: bool = True) -> bool:
        now = self.clock()
        if throttle:
            last = self._last.get(key)
            if last is not None and now - last < self.period:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return False
            n = self._suppressed.pop(key, 0)
            if n:
                text += f" ({n} similar message(s) suppressed)"
            self._last[key] = now
        self.records.append((level, key, text))
        self._pending.append((level, text))
        return True

    def pop(self) -> list:
        out, self._pending = self._pending, []
        return out


# ------------------------------------------------------------------------------ pacing
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
        if self._last_tick is not None:
            self._intervals.append(wall_now - self._last_tick)
        self._last_tick = wall_now
        self._hist.append((wall_now, steps))
        while len(self._hist) > 2 and wall_now - self._hist[0][0] > 2.0:
            self._hist.popleft()
        if self.rtf == 0.0:
            return max(1, int(self.budget / self._step_time))
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

        # the engine (environment inside: hydrodynamic damping and buoyancy at every stage)
        try:
            self.sim = Simulator(m, self.dt, self.method, backend=self.backend,
                                 environment=robot.hydrodynamics)
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
        self._reset_state()

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_params(cls, params: Mapping[str, Any], clock: Callable[[], float] = time.monotonic
                    ) -> "DynamicsCore":
        return cls(load_robot(params), params, clock)

    def _ee_frame(self, name: str) -> str:
        if name:
            if name not in self.model.frame_body:
                raise ValueError(f"ee_frame: unknown frame {name!r}; frames are "
                                 f"{', '.join(self.model.frame_names)}")
            return name
        return "ee_link" if "ee_link" in self.model.frame_body else ""

    def _reset_state(self) -> None:
        self.sim.reset(self.g0, self.V0, self.q0, self.qd0)
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
        self._path_wall: dict = {}
        self._state_pending = True   # publish the initial state at once
        self._last_publish_wall = None
        self._last_publish_steps = -1
        self._last_pop_steps = -1
        self._last_clock_wall = None
        self._next_diag_wall = None
        self.ee_path.clear()

    # ---------------------------------------------------------------- state access
    @property
    def t(self) -> float:
        return self.steps * self.dt

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
        self.log.emit("WARN", f"reject-{what}", f"rejected {what}: {text}; keeping the last "
                      f"valid input")
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

    def apply_effort_command(self, msg: Any) -> bool:
        """Float64MultiArray of efforts in the order of ``joints``; False if rejected."""
        n = len(self.robot.joints)
        try:
            values = rm.parse_float64_multi_array(msg, expected_len=n, reshape=False)
        except ValueError as exc:
            return self._reject(self.effort, "effort command", str(exc))
        return self._accept(self.effort, "effort command", values)

    def apply_base_wrench(self, msg: Any) -> bool:
        """WrenchStamped in ``base_frame`` (body) or ``odom_frame``/``world`` (inertial axes,
        moment about the vehicle origin: rotated into the body frame); False if rejected."""
        try:
            w = rm.parse_wrench_stamped(msg)
        except ValueError as exc:
            return self._reject(self.wrench, "base wrench", str(exc))
        if self.lockstep and w.stamp_ns != rm.stamp_to_ns(self.t):
            # lockstep: a wrench answers the state stamped like it; an older one is stale
            self.log.emit("WARN", "stale-wrench", f"lockstep: ignored a base wrench stamped "
                          f"{w.stamp_ns * 1e-9:.6g} s at t={self.t:.6g} s")
            return False
        return self.set_base_wrench(w.wrench, w.frame_id)

    def set_effort(self, tau) -> bool:
        """In-process input: efforts in the order of ``joints`` (same checks as a message)."""
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
        steps = int(steps)
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
        self.check_energy()
        r, m = self.robot, self.model
        t, g, V, q, qd = self.sim.arrays()
        t = self.t
        return [
            ("joint_states", rm.joint_state_msg(t, m.joint_names, q, qd, self._tau_model)),
            ("odom", rm.odometry_msg(t, g, m.group.embed(V), r.odom_frame, r.base_frame)),
            ("tf", rm.tf_msg(t, [(r.odom_frame, r.base_frame, g)])),
        ]

    def clock_message(self) -> Any:
        return rm.clock_msg(self.t)

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
                and not self.lockstep and rtf < 0.9 * target:
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
        }
        wd_text = {"waiting": "no command received yet (inputs zero)",
                   "ok": "commands fresh",
                   "tripped": "command timeout: inputs zeroed"}[wd]
        return rm.diagnostic_array_msg(self.t, [
            dict(name="vm_dynamics: simulation", level=level, message=text,
                 hardware_id=m.name, values=values),
            dict(name="vm_dynamics: command watchdog",
                 level="WARN" if wd == "tripped" else "OK", message=wd_text,
                 hardware_id=m.name, values=wd_values),
        ])

    def pop_due(self, wall_now: float, idle_republish: float | None = None) -> list:
        """Messages due now, as ``[(key, msg)]`` with keys ``joint_states``, ``odom``, ``tf``,
        ``clock``, ``ee_path``, ``diagnostics``.

        State and clock follow simulated time (``publish_rate``, ``clock_rate``; in lockstep
        the state after every advance); ``diagnostics`` follow wall time.  While the simulation
        does not advance (paused, diverged, lockstep waiting) state and clock are re-sent as a
        heartbeat every ``idle_republish`` wall seconds (default ``1 / publish_rate``), so RViz,
        TF and controllers see a paused robot, not a dead one.
        """
        if idle_republish is None:
            idle_republish = 1.0 / float(self.params["publish_rate"])
        out = []
        s = self.steps
        state_due = self._state_pending or (not self.lockstep and s >= self._next_state
                                            and self._state_allowed(wall_now))
        idle = s == self._last_pop_steps
        self._last_pop_steps = s
        if not state_due and idle and (self._last_publish_wall is None
                                       or wall_now - self._last_publish_wall
                                       >= idle_republish - 1e-9):
            state_due = True              # not advancing: heartbeat
        clock_due = state_due or (s >= self._next_clock and self._clock_allowed(wall_now))
        if state_due:
            msgs = self.state_messages()       # energy check first: may roll back
            s = self.steps
            out.extend(msgs)
            self._state_pending = False
            self._last_publish_wall = wall_now
            self._last_publish_steps = s
            self._next_state = (s // self._state_every + 1) * self._state_every
            if self.ee_frame:
                self._record_ee_pose()
                self._path_counter += 1
                if self._path_counter % 10 == 1 and self.path_due(wall_now, "ee_path"):
                    out.append(("ee_path", self.ee_path_message()))
        if clock_due:
            self._last_clock_wall = wall_now
            out.append(("clock", self.clock_message()))
            self._next_clock = (s // self._clock_every + 1) * self._clock_every
        period = 1.0 / float(self.params["diagnostics_rate"])
        if self._next_diag_wall is None or wall_now >= self._next_diag_wall:
            out.append(("diagnostics", self.diagnostics_message()))
            self._next_diag_wall = wall_now + period
        return out
