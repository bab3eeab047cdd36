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
The force elements of the configuration (``forces``, ``two_body``, the hydrodynamic damping
and buoyancy of the vehicle and of the arm links: :func:`vm_dynamics.config.forces.model_forces`,
as vm-sim reads them) are evaluated at every RK stage, inside the engine.

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

The parts, each its own module: the command inputs and their watchdog
(:mod:`~vm_dynamics.nodes.input_channels`), the energy guard with its roll-back
(:mod:`~vm_dynamics.nodes.energy_guard`), the publish schedule
(:mod:`~vm_dynamics.nodes.publish_schedule`) and the diagnostics
(:mod:`~vm_dynamics.nodes.dynamics_diagnostics`); this class composes them around the engine.

Time is simulated time ``t = steps · dt``; pacing to the wall clock (``real_time_factor``) is
the node's job (:class:`~vm_dynamics.nodes.pacing.Pacer`), so the core is deterministic: the same inputs give
bit-identical states.  With ``lockstep`` the core advances one control period
(``1 / control_rate``) only when a fresh command has arrived
(:meth:`DynamicsCore.advance_lockstep`).
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from typing import Any, Callable, Iterator

import numpy as np

from ..config.orbit_setup import orbit_setup
from ..config.params import flatten, parameter_defaults, unflatten
from ..config.sections import initial_state
from ..config.spec import DYNAMICS_PARAMETERS, checked_values
from ..forces.orbit import OutputFrame
from ..ros import messages as rm
from ..sim.engine import SimulationError, Simulator, State
from ..sim.interaction import arm_interaction
from .capture import capture_part
from .driven_commands import driven_joint_commands
from .dynamics_diagnostics import diagnostics_message
from .dynamics_hil import HilInputs
from .energy_guard import EnergyGuard
from .entities import TargetEntity, VehicleEntity
from .event_log import EventLog
from .input_channels import CommandInputs
from .joint_source import joint_motion
from .publish_schedule import PublishSchedule
from .robot import Robot, load_robot
from .wrench_source import measured_wrench_input

__all__ = ["DynamicsCore", "SKIPPABLE"]

#: outputs the node may leave unbuilt while no subscription is matched
#: (:attr:`DynamicsCore.unsubscribed`): ``joint_states`` and ``odom`` always go out (a
#: lockstep controller waits for them, and ``base_path`` is taken from the odometry).  The
#: paths keep recording their poses; only their messages (up to ``ee_path_length`` poses,
#: built, checked and serialised on the generic path: in lockstep at 1 kHz the largest item
#: of the node's thread after the DDS calls) are skipped.
SKIPPABLE = frozenset({"tf", "ee_path", "base_path"})


class DynamicsCore(HilInputs):
    """Simulation state, inputs and outputs of the dynamics node (see the module docstring).

    Build it with :meth:`from_params` (flat ROS parameter names, e.g. ``initial.joint_positions``,
    or a nested mapping such as a scenario file's ``ros__parameters``).
    """

    def __init__(self, robot: Robot, params: Mapping[str, Any],
                 clock: Callable[[], float] = time.monotonic):
        p = parameter_defaults(DYNAMICS_PARAMETERS)
        p.update(flatten(params))
        p = checked_values(p, DYNAMICS_PARAMETERS)     # the scenario model's checks
        self.robot = robot
        self.model = m = robot.model
        self.params = p
        self.log = EventLog(clock)
        self.clock = clock
        self.dt = p["dt"]
        self.method = p["integrator"]
        self.backend = p["dynamics_backend"]
        self.lockstep = bool(p["lockstep"])
        self.timeout = float(p["command_timeout"])
        self.steps_per_period = max(1, int(round(1.0 / (float(p["control_rate"]) * self.dt))))
        self.schedule = PublishSchedule(p, self.dt, self.lockstep, self.steps_per_period)
        self.ee_frame = self._ee_frame(p["ee_frame"])
        self.ee_path = deque(maxlen=max(1, int(p["ee_path_length"])))

        # initial state (the scenario's parser: config.sections)
        init = initial_state(unflatten(p, "initial"), m)
        self.g0, self.V0, self.q0, self.qd0 = init.g, init.V, init.q, init.qd
        # in orbit: two-body gravity, the reference orbit (initial state relative to its LVLH
        # frame) and the frame of /odom and TF (config.orbit_setup)
        orbit = orbit_setup(robot.forces, unflatten(p, "orbit"), p["world_frame"],
                            m.base_type)
        self.g0, self.V0 = orbit.initial_pose(self.g0, self.V0)
        self.output = None if orbit.orbit is None else OutputFrame(
            orbit.orbit, orbit.world_frame, robot.odom_frame)
        self.joint_source = p["joint_source"]
        self.prescribed, self.measured = joint_motion(robot, p, self.q0)
        motion = self.prescribed if self.measured is None else self.measured.motion
        # position- and velocity-driven joints (nodes/driven_commands.py)
        driven = driven_joint_commands(robot, p, self.steps_per_period, self.dt)

        # with a capture section: the chaser and the target together (nodes/capture.py)
        self.capture = capture_part(robot, p, self.dt, self.method, robot.odom_frame)
        # the engine (the force elements inside, evaluated at every stage)
        if self.capture is not None:
            if driven is not None:
                raise ValueError("driven_joints: not with a capture section")
            self.sim = self.capture.engine
        else:
            try:
                self.sim = Simulator(m, self.dt, self.method, backend=self.backend,
                                     forces=robot.forces, prescribed=motion, **(
                                         {} if driven is None else
                                         {"driven_joints": list(driven.model_index)}))
            except ValueError as exc:
                text = str(exc)
                raise ValueError(text if text.startswith("driven_joints") else
                                 f"dynamics_backend: {text}") from None

        self.inputs = CommandInputs(robot, self.sim, self.log, lambda: self.sim.t, self.timeout,
                                    self.lockstep, self.joint_source,
                                    heartbeat_ns=lambda: self.schedule.heartbeat_ns,
                                    driven=driven)
        # a force/torque sensor's wrench on the chaser (nodes/wrench_source.py)
        self.measured_wrench = (measured_wrench_input(robot, p)
                                if p["wrench_source"] == "measured" else None)
        self.energy_guard = EnergyGuard(self.sim, m, self.log, p["divergence_threshold"],
                                        balance_checked=self.joint_source == "simulated")
        self.user_paused = False
        self.step_times: deque = deque(maxlen=1000)
        self.timing: dict = {}        # filled by the node (Pacer.stats())
        # filled by the node: input samples the transport dropped before they reached the
        # core (more were queued than it handles per turn), e.g. {"effort_dropped": 12}
        self.input_stats: dict = {}
        #: outputs of :data:`SKIPPABLE` nobody subscribes to (set by the node): not built
        self.unsubscribed: frozenset = frozenset()
        self.wire = None     # the node's lockstep_wire.StateWire: states as CDR (None: messages)
        self._reset_state()

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_params(cls, params: Mapping[str, Any], clock: Callable[[], float] = time.monotonic,
                    folders=()) -> "DynamicsCore":
        """The core of (flat or nested) parameters; relative file names are looked up in
        ``folders`` (those of the parameter files) first."""
        return cls(load_robot(params, folders), params, clock)

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
        if self.measured_wrench is not None:   # nothing applied until the next sample
            self.measured_wrench.reset()
        self.inputs.frame_wrenches = {}
        self.inputs.reset()
        self.energy_guard.reset()
        self.schedule.reset()
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

    # copies of the current state's arrays
    g = property(lambda self: self.sim.arrays()[1].copy())
    V = property(lambda self: self.sim.arrays()[2].copy())
    q = property(lambda self: self.sim.arrays()[3].copy())
    qd = property(lambda self: self.sim.arrays()[4].copy())

    @property
    def paused(self) -> bool:
        return self.user_paused or self.diverged

    # the parts' state, by the names the node and the tests read
    effort = property(lambda self: self.inputs.effort, doc="The effort input channel.")
    wrench = property(lambda self: self.inputs.wrench, doc="The base-wrench input channel.")
    watchdog = property(lambda self: self.inputs.watchdog,
                        doc="``waiting`` (no input yet), ``ok`` or ``tripped``.")
    diverged = property(lambda self: self.energy_guard.diverged)
    error = property(lambda self: self.energy_guard.error)
    residual = property(lambda self: self.energy_guard.residual,
                        doc="Energy-balance residual E - E0 - W at the last check (J).")
    E0 = property(lambda self: self.energy_guard.E0)
    K0 = property(lambda self: self.energy_guard.K0)
    path_sample = property(lambda self: self.schedule.path_sample,
                           doc="The state last popped is a path sample (see iter_due).")

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
        return rm.stamp_to_ns(self.t) + self.schedule.heartbeat_ns

    @property
    def stamp(self) -> float:
        """:attr:`stamp_ns` in seconds."""
        return self.stamp_ns * 1e-9

    def state(self) -> State:
        """Snapshot ``State(t, g, V, q, qd)`` (copies)."""
        return State(self.t, self.g, self.V, self.q, self.qd)

    def applied_effort(self) -> np.ndarray:
        """Joint efforts applied now, URDF order (at driven joints: those realising their
        motion)."""
        return self.inputs.state_effort().copy()

    def applied_base_wrench(self) -> np.ndarray:
        """Commanded vehicle wrench applied now (b-vector, body frame at the current pose;
        environment excluded)."""
        return self.inputs.base_wrench_at(self.sim.arrays()[1]).copy()

    def energy(self) -> tuple[float, float, float]:
        """``(E, K, U)``: total, kinetic and potential energy of the current state."""
        return self.energy_guard.energy()

    @property
    def checked_steps(self) -> int:
        """Steps of the last state that passed the energy check (the roll-back point)."""
        return self.energy_guard.checked_steps

    # ---------------------------------------------------------------- inputs
    def apply_effort_command(self, msg: Any) -> bool:
        """Float64MultiArray of efforts in the order of ``joints``; False if rejected."""
        return self.inputs.apply_effort_command(msg)

    def reject_effort_command(self, reason: str) -> bool:
        """Count and log an effort command the node rejected before decoding it (``reason``
        names what is wrong, as the decoded check would); returns False."""
        return self.inputs.reject(self.effort, "effort command", reason)

    def apply_base_wrench(self, msg: Any) -> bool:
        """WrenchStamped in ``base_frame`` or ``odom_frame``/``world``; False if rejected
        (see :meth:`CommandInputs.apply_base_wrench`)."""
        return self.inputs.apply_base_wrench(msg)

    def apply_joint_command(self, msg: Any) -> bool:
        """JointState effort command by joint name, stamped with the state it answers; False
        if rejected or ignored (see :meth:`CommandInputs.apply_joint_command`)."""
        return self.inputs.apply_joint_command(msg)

    def apply_command(self, key: str, msg: Any) -> bool:
        """A controller's command by its key in ``ControllerCore.command_messages``."""
        return {"effort_commands": self.apply_effort_command,
                "joint_commands": self.apply_joint_command,
                "base_wrench": self.apply_base_wrench}[key](msg)

    def set_effort(self, tau) -> bool:
        """In-process input: efforts in the order of ``joints`` (same checks as a message)."""
        return self.inputs.set_effort(tau)

    def set_base_wrench(self, wrench6, frame_id: str) -> bool:
        """In-process input: a 6-vector ``[f; n]`` in ``frame_id`` (``base_frame``: body-fixed;
        ``odom_frame`` or ``world``: inertial axes, moment about the vehicle origin)."""
        return self.inputs.set_base_wrench(wrench6, frame_id)

    # ---------------------------------------------------------------- energy
    def check_energy(self) -> bool:
        """Energy-balance check of the current state; on failure: roll back and pause
        (:class:`~vm_dynamics.nodes.energy_guard.EnergyGuard`)."""
        return self.energy_guard.check()

    # ---------------------------------------------------------------- stepping
    def _advance(self, steps: int) -> int:
        """Up to ``steps`` engine steps with the held inputs (one compiled call); on a failure
        (non-finite state, overflow, singular inertia) roll back and pause.  Returns the number
        of steps taken."""
        before = self.steps
        start = time.perf_counter()
        try:
            if steps == 1:
                self.sim.step(inputs=self.inputs.held)
            else:
                self.sim.run(steps, inputs=self.inputs.held)
        except SimulationError as exc:
            self.energy_guard.diverge(f"integrator failed ({exc})", t_bad=exc.t + self.dt)
            return 0
        except (ArithmeticError, ValueError, RuntimeError, np.linalg.LinAlgError) as exc:
            self.energy_guard.diverge(f"integrator failed ({type(exc).__name__}: {exc})",
                                      t_bad=self.t + self.dt)
            return 0
        done = self.steps - before
        if done:
            per = (time.perf_counter() - start) / done
            self.step_times.extend([per] * min(done, 64))
        return done

    def step(self) -> bool:
        """Advance one step ``dt`` with the current inputs; False if paused or diverged."""
        return self.run(1) == 1

    @property
    def check_every(self) -> int:
        """Steps between two energy checks (0.01 s of simulated time)."""
        return max(1, int(round(0.01 / self.dt)))

    def run(self, steps: int) -> int:
        """Up to ``steps`` steps; returns how many were taken (fewer if paused/diverged).

        The steps between two energy checks (and watchdog deadlines) go to the engine in one
        call; every :attr:`check_every` steps the energy balance is checked (and the state
        snapshotted for roll-back)."""
        done = 0
        steps = min(int(steps), self.measured_steps_available())
        inputs = self.inputs
        while done < steps:
            if self.paused:
                break
            inputs.check_watchdog()
            inputs.drive(self.steps)          # driven joints: a period's command at its start
            chunk = min(steps - done, self.check_every - (self.steps - self.checked_steps),
                        inputs.steps_to_watchdog(self.dt), inputs.steps_to_period_end(self.steps))
            taken = self._advance(max(1, chunk))
            if not taken:
                break
            done += taken
            inputs.check_watchdog()           # inputs (and JointState.effort) for the next step
            if self.steps - self.checked_steps >= self.check_every and not self.check_energy():
                break
        return done

    @property
    def path_sample_period(self) -> float:
        """Simulated time between two poses of ``ee_path`` and ``base_path`` (s): the state
        period ``1/publish_rate``, also in lockstep, whose states may come far more often
        (``ee_path_length`` poses then span the same time as at the default rate)."""
        return self.schedule.path_sample_period

    def path_due(self, wall_now: float, key: str) -> bool:
        """True (and noted) if the path ``key`` may be sent now: at most ``path_rate`` per wall
        second."""
        return self.schedule.path_due(wall_now, key)

    def steps_until_due(self, wall_now: float | None = None) -> int:
        """Steps until the next state or clock message is due (≥ 1): the node runs that many
        in one call before publishing."""
        return self.schedule.steps_until_due(self.steps, wall_now)

    def lockstep_ready(self) -> bool:
        """Fresh inputs arrived since the last advance: the efforts (if there are joints) and,
        with ``lockstep_wrench`` and a movable vehicle, the base wrench."""
        if self.user_paused or self.energy_guard.diverged:
            return False
        inputs = self.inputs
        joints = bool(len(self.robot.joints))
        wrench = bool(self.model.b) and bool(self.params["lockstep_wrench"])
        return (joints or wrench) and (not joints or inputs.effort.fresh) \
            and (not wrench or inputs.wrench.fresh)

    def advance_lockstep(self) -> int:
        """Lockstep: one control period (``steps_per_period`` steps) if :meth:`lockstep_ready`."""
        if not self.lockstep_ready():
            return 0
        for ch in (self.effort, self.wrench):
            ch.fresh = False
        done = self.run(self.steps_per_period)
        if done:
            self.schedule.state_pending = True
        return done

    # ---------------------------------------------------------------- services
    def pause(self, flag: bool) -> tuple[bool, str]:
        """``~/pause`` (std_srvs/SetBool)."""
        if not flag and self.diverged:
            return False, f"cannot resume: {self.error}"
        self.user_paused = bool(flag)
        return True, ("paused" if flag else "running") + f" at t={self.t:.6g} s"

    def reset(self) -> tuple[bool, str]:
        """``~/reset`` (std_srvs/Trigger): initial state, t = 0, inputs zero."""
        self._reset_state()
        self.log.emit("INFO", "reset", "simulation reset to the initial state", throttle=False)
        return True, "reset to the initial state at t=0"

    # ---------------------------------------------------------------- entities
    def entities(self) -> list:
        """The bodies a simulator API addresses by name
        (:class:`~vm_dynamics.nodes.entities.Entity`): the vehicle, and the capture target
        when there is one."""
        if self.capture is None:
            return [VehicleEntity(self)]
        return [VehicleEntity(self), TargetEntity(self)]

    def set_vehicle_state(self, g, V) -> None:
        """Move the vehicle to pose ``g`` with body velocity ``V`` (b-vector) now, keeping the
        joints, the time and the step count; the energy balance restarts here (the jump does
        no work the engine accounts for) and the state is published at once."""
        self.sim.set_vehicle(g, V)
        self.energy_guard.rebaseline()
        self.schedule.state_pending = True

    def grasp(self) -> tuple[bool, str]:
        """``~/grasp`` (std_srvs/Trigger): weld the target to the grasp frame if the grasp
        condition holds (nodes/capture.py)."""
        return self._capture_event(lambda c: c.grasp())

    def release(self) -> tuple[bool, str]:
        """``~/release`` (std_srvs/Trigger): undo the weld."""
        return self._capture_event(lambda c: c.release())

    def _capture_event(self, act) -> tuple[bool, str]:
        if self.capture is None:
            return False, "no target in this simulation (the scenario has no capture section)"
        ok, text = act(self.capture)
        if ok:
            self.schedule.state_pending = True
        self.log.emit("INFO" if ok else "WARN", "capture-event", text, throttle=False)
        return ok, text

    # ---------------------------------------------------------------- outputs
    def state_messages(self) -> list:
        """``[(key, message)]`` of the current (energy-checked) state, see below."""
        return list(self.iter_state_messages())

    def iter_state_messages(self) -> Iterator[tuple[str, Any]]:
        """:meth:`state_messages`, each message built when it is consumed: a node publishes
        ``joint_states`` and ``odom`` (what a controller waits for) before ``tf`` and the
        hardware-in-the-loop outputs are built.  The energy check runs first."""
        self.check_energy()
        r, m = self.robot, self.model
        t, g, V, q, qd = self.sim.arrays()      # copied: the messages keep them, steps reuse them
        g, V, q, qd = g.copy(), V.copy(), q.copy(), qd.copy()
        # one builtin_interfaces/Time for the messages of the state (none if the wire writes all)
        stamp_ns = self.stamp_ns
        t = stamp_ns * 1e-9
        hil = self.interaction() if self.joint_source != "simulated" else None
        tau = self.inputs.state_effort() if hil is None else hil.tau
        # the node's wire: CDR from the arrays (a path sample's odometry: a message, base_path)
        wire = self.wire if hil is None else None
        data = None if wire is None else wire.joint_state(stamp_ns, q, qd, tau)
        stamp = None if data else rm.ns_to_time_msg(stamp_ns)
        yield "joint_states", data or rm.joint_state_msg(stamp, m.joint_names, q, qd, tau)
        world, extra = r.odom_frame, ()
        if self.output is not None:             # in orbit: /odom and TF in the output frame
            g, V6, extra = self.output.sample(self.t, g, m.group.embed(V))
            world, V = self.output.frame_id, V6
        V6 = m.group.embed(V)
        data = None if wire is None or self.path_sample else wire.odometry(stamp_ns, g, V6, world)
        if stamp is None and not (data and "tf" in self.unsubscribed
                                  and self.joint_source == "simulated"):
            stamp = rm.ns_to_time_msg(stamp_ns)
        yield "odom", data or rm.odometry_msg(stamp, g, V6, world, r.base_frame)
        if self.capture is not None:            # the target: its transform in the same /tf
            extra = (*extra, self.capture.transform())
        if "tf" not in self.unsubscribed:
            yield "tf", rm.tf_msg(stamp, [(world, r.base_frame, g), *extra])
        if self.capture is not None:
            yield from self.capture.messages(t, self.inputs.held)
        if self.joint_source != "simulated":
            yield "vehicle_pose_command", rm.pose_stamped_msg(stamp, world, g)
            if hil is not None:
                yield "base_reaction_wrench", rm.wrench_stamped_msg(
                    stamp, m.group.embed(hil.base_reaction), r.base_frame)
                yield "coupled_joint_efforts", rm.joint_state_msg(
                    stamp, m.joint_names, q, qd, hil.tau)

    def interaction(self):
        """Joint efforts of the coupled system, the vehicle's acceleration and the wrench the arm
        exerts on the vehicle (:func:`vm_dynamics.sim.interaction.arm_interaction`) at the
        current state, with the estimated (measured) or prescribed joint acceleration; None if
        it cannot be computed (logged)."""
        try:
            qdd = (self.measured.motion.acceleration() if self.measured is not None
                   else self.prescribed(self.t)[2])
            g = self.sim.arrays()[1]
            return arm_interaction(self.sim, qdd, base_wrench=self.inputs.base_wrench_at(g))
        except (ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
            self.log.emit("WARN", "interaction", f"base reaction and efforts not computable at "
                          f"t={self.t:.3f} s: {exc}")
            return None

    def clock_message(self) -> Any:
        data = None if self.wire is None else self.wire.clock(self.stamp_ns)
        return data or rm.clock_msg(rm.ns_to_time_msg(self.stamp_ns))

    def ee_path_message(self) -> Any:
        """``nav_msgs/Path`` of the ``ee_frame`` in the odom frame (last ``ee_path_length``)."""
        return rm.path_msg(self.t, self._world_frame(), [pose for _, pose in self.ee_path])

    def _world_frame(self) -> str:
        """The frame of /odom, TF's root and the path: ``odom_frame``, or ``lvlh`` in orbit
        with ``world_frame: lvlh``."""
        return self.output.frame_id if self.output is not None else self.robot.odom_frame

    def _record_ee_pose(self) -> None:
        """Append the current ``ee_frame`` pose (as a PoseStamped, built once) to the path."""
        if self.ee_path and self.ee_path[-1][0] >= self.steps:
            return
        g = self.g
        if self.output is not None:
            g = self.output.sample(self.t, g, None)[0]
        g_e = self.model.frame_pose(self.q, self.ee_frame, g)
        pose = rm.pose_stamped_msg(self.t, self._world_frame(), g_e)
        self.ee_path.append((self.steps, pose))

    def diagnostics_message(self) -> Any:
        """``diagnostic_msgs/DiagnosticArray``: simulation and watchdog status
        (:mod:`~vm_dynamics.nodes.dynamics_diagnostics`)."""
        return diagnostics_message(self)

    def pop_due(self, wall_now: float, idle_republish: float | None = None) -> list:
        """Messages due now, ``[(key, msg)]`` (``joint_states``, ``odom``, ``tf``, ``clock``,
        ``ee_path``, ``diagnostics``; CDR bytes for the first three while :attr:`wire` is set).
        State and clock follow simulated time (``publish_rate``, ``clock_rate``; in lockstep
        the state after every advance); ``diagnostics`` follow wall time.  While the simulation
        does not advance (paused, diverged, lockstep waiting) state and clock are re-sent as a
        heartbeat every ``idle_republish`` wall seconds (default ``1 / publish_rate``), so RViz,
        TF and controllers see a paused robot, not a dead one (:mod:`.publish_schedule`).
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
        def checked_steps():
            self.check_energy()                # first: may roll back
            return self.steps
        due = self.schedule.plan(wall_now, self.steps, self.paused, checked_steps,
                                 idle_republish)
        if due.state:
            yield from self.iter_state_messages()
            if self.ee_frame:
                if self.path_sample:
                    self._record_ee_pose()
                if self.schedule.ee_path_due(wall_now) and "ee_path" not in self.unsubscribed:
                    yield "ee_path", self.ee_path_message()
        if due.clock:
            yield "clock", self.clock_message()
        if due.diagnostics:
            yield "diagnostics", self.diagnostics_message()
