"""The scenario model: every parameter a scenario file, ``vm-sim``, the two nodes and the launch
files read, with its default, its description and its check, in one table.

A scenario file is a ROS 2 parameter file; the same names are the nodes' parameters.  Each
entry is a :class:`Parameter` ``(default, description, check)``; ``check(value, name)``
returns the checked value or raises a ``ValueError`` naming ``name``.  The tables:

* :data:`ROBOT_PARAMETERS` — the robot and its frames (both nodes, ``vm-sim``);
* :data:`DYNAMICS_PARAMETERS` — the simulation (integrator, dt, rates, joint source, ...);
* :data:`CONTROLLER_PARAMETERS` — the controller node's own;
* :data:`DYNAMICS_NODE_PARAMETERS` — the dynamics node's input bounds;
* :data:`SCENARIO_PARAMETERS` — what only ``vm-sim`` reads (name, duration, open-loop input).

:data:`SCENARIO_FILE_PARAMETERS` is their union: a name in none of them (and not under one of
the :data:`OPEN_SECTIONS`, whose keys their own parser checks: ``controller.*`` by the
plug-in, ``reference.*`` by :func:`vm_dynamics.control.reference_from_config`) is a misspelling,
reported by :func:`unknown_parameters` with the valid names.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any, Callable, NamedTuple

from ..core.divergence import ENERGY_BALANCE_THRESHOLD
from ..core.validation import MAX_MAGNITUDE, as_vector
from ..model.mounting import ROBOT_MODEL_PARAMETERS
from ..model.xacro_expansion import DEFAULT_XACRO, xacro_mode
from ..sim.integrators import METHODS
from .params import number, short
from .sections import INITIAL_PARAMETERS

__all__ = ["Parameter", "ROBOT_PARAMETERS", "DYNAMICS_PARAMETERS", "CONTROLLER_PARAMETERS",
           "ORBIT_PARAMETERS", "DYNAMICS_NODE_PARAMETERS", "SCENARIO_PARAMETERS", "SCENARIO_FILE_PARAMETERS",
           "OPEN_SECTIONS", "DYNAMICS_BACKENDS", "JOINT_SOURCES", "WRENCH_SOURCES", "BASE_TYPES",
           "choice",
           "check_integrator", "checked_values", "unknown_parameters", "unknown_parameter_text"]

BASE_TYPES = ("SE3", "SE2", "SO3", "fixed")
DYNAMICS_BACKENDS = ("auto", "numba", "lp")
JOINT_SOURCES = ("simulated", "measured", "prescribed")
#: Where the contact wrench on the chaser comes from (``wrench_source``).
WRENCH_SOURCES = ("simulated", "measured")
#: Sections whose keys are checked by their own parser (the controller plug-in's ``PARAMS``,
#: the reference parser, the force elements' reader), not by this table.
OPEN_SECTIONS = ("controller", "reference", "forces")


class Parameter(NamedTuple):
    """One parameter: its default, what it means, and ``check(value, name) -> value`` (None:
    any value of the default's ROS type)."""

    default: Any
    description: str
    check: Callable[[Any, str], Any] | None = None


# ------------------------------------------------------------------------------ checks
def choice(options: Iterable[str]) -> Callable[[Any, str], str]:
    """A check: the value is one of ``options`` (``"<name>: unknown 'x'; choose one of ..."``)."""
    options = tuple(options)

    def check(value, name):
        if not isinstance(value, str) or value not in options:
            raise ValueError(f"{name}: unknown {short(value)}; choose one of "
                             f"{', '.join(options)}")
        return value
    return check


def check_integrator(value, name: str = "integrator") -> str:
    """The integrator name checked against :data:`vm_dynamics.sim.integrators.METHODS`."""
    return choice(METHODS)(value, name)


def _positive(value, name):
    return number({name: value}, name, None, positive=True)


def _nonnegative(value, name):
    return number({name: value}, name, None, nonnegative=True)


def _count(value, name):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: expected an integer >= 1, got {value!r}")
    return value


def _gravity(value, name):
    return as_vector(value, 3, name, limit=MAX_MAGNITUDE)


def _base_type(value, name):
    if not isinstance(value, str):
        raise ValueError(f"{name}: expected {', '.join(BASE_TYPES)}, got {short(value)}")
    return value


def _text(value, name):
    if not isinstance(value, str):
        raise ValueError(f"{name}: expected a string, got {short(value)}")
    return value


def _flag(value, name):
    if not isinstance(value, bool):
        raise ValueError(f"{name}: expected true or false, got {short(value)}")
    return value


def _joint_list(value, name):
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{name}: expected a list of joint names, got {short(value)}")
    seen = sorted({v for v in value if list(value).count(v) > 1})
    if seen:
        raise ValueError(f"{name}: joint {seen[0]!r} listed twice")
    return list(value)


def checked_values(params: Mapping[str, Any], table: Mapping[str, Parameter]) -> dict:
    """``params`` (flat names) with every entry of ``table`` that has a check checked
    (``ValueError`` naming the first bad one); other entries unchanged."""
    out = dict(params)
    for name, entry in table.items():
        if entry.check is not None and name in out:
            out[name] = entry.check(out[name], name)
    return out


# ------------------------------------------------------------------------------ the tables
def _table(entries: Mapping[str, tuple]) -> dict[str, Parameter]:
    return {k: v if isinstance(v, Parameter) else Parameter(*v) for k, v in entries.items()}


#: The robot and its frames (both nodes and vm-sim).
ROBOT_PARAMETERS: dict[str, Parameter] = _table({
    "robot_description": ("", "URDF XML (as robot_state_publisher takes it); overrides "
                          "robot_description_file", _text),
    "robot_description_file": ("", "URDF or xacro file: absolute, package://, or relative to "
                               "the parameter file's folder, else to the package's urdf/",
                               _text),
    "hydrodynamics_file": ("", "optional hydrodynamics YAML (added mass, damping, buoyancy), "
                           "looked up like robot_description_file", _text),
    "base_type": ("SE3", "vehicle subgroup: SE3, SE2, SO3 or fixed", _base_type),
    "gravity": ([0.0, 0.0, -9.81], "gravitational acceleration in the odom frame, m/s^2",
                _gravity),
    "joints": ([], "joint order of effort commands (Float64MultiArray); default: all joints "
               "in URDF order"),
    "odom_frame": ("odom", "inertial frame of the odometry, TF parent and world-frame wrenches"),
    "base_frame": ("", "vehicle frame (TF child, Odometry child_frame_id); default: the URDF "
                   "root link"),
    "control_rate": (200.0, "controller rate, Hz (lockstep advances 1/control_rate per "
                     "command)", _positive),
    "lockstep": (False, "advance one control period only when a fresh command arrived"),
    "robot_description_xacro": (DEFAULT_XACRO, "xacro expansion of robot_description_file: "
                                "safe (arithmetic ${} only; xacro files are code), full "
                                "(trusted files), off (plain URDF only); always within a time "
                                "and size budget", xacro_mode),
    **ROBOT_MODEL_PARAMETERS,
    # the force elements besides the hydrodynamics_file (vm_dynamics.config.forces, one reader
    # for vm-sim and both nodes): forces.<name>.kind and its parameters (an open section),
    # and the two_body section
    "two_body.mu": (0.0, "gravitational parameter of a central body at the inertial origin, "
                    "m^3/s^2 (Earth 3.986004418e14): two-body gravity and its gradient on every "
                    "body (force element two_body; gravity must be [0, 0, 0]); 0: none",
                    _nonnegative),
    "two_body.gradient": (True, "with two_body.mu, the gravity-gradient force and torque "
                          "(false: point masses at the centres of mass)", _flag),
})

#: The reference orbit and the frame of the outputs (both nodes and vm-sim read them the
#: same way: :func:`vm_dynamics.config.orbit_setup.orbit_setup`).
ORBIT_PARAMETERS: dict[str, Parameter] = _table({
    "orbit.radius": (0.0, "reference orbit, circular, of this radius (m); with "
                     "two_body.mu (vm_dynamics.forces.orbit.ReferenceOrbit)", _nonnegative),
    "orbit.altitude": (0.0, "reference orbit, circular, this far above orbit.body_radius "
                       "(m)", _nonnegative),
    "orbit.body_radius": (6378137.0, "the central body's radius for orbit.altitude, m",
                          _positive),
    "orbit.semi_major_axis": (0.0, "reference orbit, Keplerian, semi-major axis (m)",
                              _nonnegative),
    "orbit.eccentricity": (0.0, "with orbit.semi_major_axis, in [0, 1)", _nonnegative),
    "orbit.inclination_deg": (0.0, "reference orbit's inclination, deg"),
    "orbit.raan_deg": (0.0, "reference orbit's right ascension of the ascending node, "
                       "deg"),
    "orbit.argument_of_periapsis_deg": (0.0, "reference orbit's argument of periapsis, "
                                        "deg"),
    "orbit.true_anomaly_deg": (0.0, "the reference orbit's true anomaly at t = 0 "
                               "(circular: argument of latitude), deg"),
    "orbit.initial_frame": ("lvlh", "the initial section's base pose and twist are "
                            "relative to the LVLH frame of the reference orbit at t = 0 (lvlh) "
                            "or inertial", choice(("lvlh", "inertial"))),
    "orbit.reference_frame": ("lvlh", "the controller's vehicle pose reference "
                              "(reference.base, or the initial pose held) is relative to the "
                              "LVLH frame (lvlh: station keeping) or inertial",
                              choice(("lvlh", "inertial"))),
    "world_frame": ("inertial", "the frame of the outputs (/odom, TF, recording, plots, "
                    "viewer): inertial, or lvlh (the reference orbit's Hill frame; needs an "
                    "orbit section)", choice(("inertial", "lvlh"))),
})

#: The simulation (dynamics node and vm-sim), in addition to :data:`ROBOT_PARAMETERS`.
DYNAMICS_PARAMETERS: dict[str, Parameter] = _table({
    **ROBOT_PARAMETERS,
    "integrator": ("rkmk4", ", ".join(METHODS), check_integrator),
    "two_body.mu": (0.0, "gravitational parameter of a central body at the inertial "
                    "origin, m^3/s^2 (Earth 3.986004418e14): two-body gravity and its gradient "
                    "on every body (force element two_body; gravity must be [0, 0, 0]); 0: none",
                    _nonnegative),
    "two_body.gradient": (True, "with two_body.mu, the gravity-gradient force and "
                          "torque (false: point masses at the centres of mass)", _flag),
    **ORBIT_PARAMETERS,
    "dynamics_backend": ("auto", "auto|numba (the compiled engine; auto falls back to plain "
                         "Python without numba) or lp (the closed-form LP reference, slow)",
                         choice(DYNAMICS_BACKENDS)),
    "dt": (0.001, "integration step, s", _positive),
    "publish_rate": (50.0, "joint_states/odom/tf rate, Hz of simulated time", _positive),
    "clock_rate": (1000.0, "/clock rate, Hz of simulated time (at most one per step, and at "
                   "most this many per wall second when faster than real time)", _positive),
    "diagnostics_rate": (1.0, "/diagnostics rate, Hz of wall time", _positive),
    "real_time_factor": (1.0, "simulated seconds per wall second; 0 = as fast as possible",
                         _nonnegative),
    "command_timeout": (0.5, "watchdog: zero an input not refreshed for this long "
                        "(simulated s); 0 disables", _nonnegative),
    "lockstep_wrench": (True, "lockstep also waits for a fresh base_wrench every period (set "
                        "false for controllers that publish efforts only)"),
    "divergence_threshold": (ENERGY_BALANCE_THRESHOLD, "divergence: the energy-balance residual may reach this "
                             "fraction of the energy scale (the node pauses and rolls back; "
                             "vm-sim flags the run and exits 3)", _nonnegative),
    "ee_frame": ("", "frame whose path is published on ee_path; default ee_link if present"),
    "ee_path_length": (200, "number of poses kept in ee_path and base_path, one per "
                       "1/publish_rate of simulated time (also in lockstep)"),
    "max_wall_publish_rate": (100.0, "when real_time_factor x publish_rate exceeds it (or "
                              "real_time_factor is 0), send the state (joint_states, odom, tf) "
                              "at most this many times per wall second; 0 = always every "
                              "1/publish_rate of simulated time", _nonnegative),
    "path_rate": (2.0, "ee_path/base_path: sent with every 10th state, but at most this many "
                  "times per wall second (paths of hundreds of poses are costly to send)",
                  _positive),
    **{f"initial.{k}": v for k, v in INITIAL_PARAMETERS.items()},
    # where the joints come from (hardware in the loop: nodes/joint_source.py)
    "joint_source": ("simulated", "simulated (effort commands drive the arm), measured (a real "
                     "arm's JointState on measured.topic drives the simulated vehicle) or "
                     "prescribed (the prescribed section's motion)", choice(JOINT_SOURCES)),
    # kinematically driven joints of a simulated arm (the joint_commands input: position or
    # velocity by joint name; ros2_control's position/velocity command interfaces)
    "driven_joints.position": ([], "joints (of joints) driven by position commands: the "
                               "joint_commands position of each is reached one control period "
                               "after its stamp, at constant velocity, whatever effort it takes "
                               "(joint_source simulated)", _joint_list),
    "driven_joints.velocity": ([], "joints (of joints) driven by velocity commands: each moves "
                               "at the joint_commands velocity from the period of its stamp on",
                               _joint_list),
    "measured.topic": ("measured/joint_states", "topic of the real arm's sensor_msgs/JointState "
                       "(joint_source measured)"),
    "measured.joint_names": ([], "the driver's names of the joints, in the order of the joints "
                             "parameter; default: the same names"),
    "measured.velocity_cutoff": (0.0, "low-pass cut-off (Hz) of velocities differenced from "
                                 "positions when the messages carry none; 0 = unfiltered"),
    "measured.acceleration_cutoff": (20.0, "low-pass cut-off (Hz) of the acceleration estimate "
                                     "used for the published efforts and base reaction"),
    "measured.max_gap": (0.05, "longest gap between samples (s) bridged by interpolation; after "
                         "a longer one the vehicle has held and restarts from the new sample"),
    "measured.timeout": (0.2, "wall seconds without a sample before the watchdog warns (the "
                         "vehicle holds meanwhile)"),
    # a force/torque sensor's wrench on the chaser (hardware in the loop:
    # nodes/wrench_source.py)
    "wrench_source": ("simulated", "simulated (contact wrenches from the simulation) or "
                      "measured (a force/torque sensor's geometry_msgs/WrenchStamped on "
                      "measured_wrench.topic acts on the chaser at its frame)",
                      choice(WRENCH_SOURCES)),
    "measured_wrench.topic": ("measured/wrench", "topic of the sensor's "
                              "geometry_msgs/WrenchStamped (wrench_source measured)"),
    "measured_wrench.frame": ("", "the sensor's frame, a frame of the chaser model (empty: "
                              "each message's header.frame_id); a message naming another "
                              "frame is rejected", _text),
    "measured_wrench.max_gap": (0.05, "sample intervals (s of the stamps) longer than this "
                                "are reported as gaps (the wrench was held over them)",
                                _positive),
    "measured_wrench.timeout": (0.2, "wall seconds without a sample before the watchdog "
                                "zeroes the measured wrench", _positive),
    "measured_wrench.force_limit": (1.0e4, "reject a sample whose force exceeds this, N "
                                    "(a sensor fault, not a contact)", _positive),
    "measured_wrench.torque_limit": (1.0e3, "reject a sample whose torque exceeds this, N m",
                                     _positive),
    "prescribed.type": ("", "prescribed motion (joint_source prescribed): sinusoid or "
                        "wheel_loop"),
    "prescribed.joints": (None, "wheel_loop: the two joint indices of the loop"),
    "prescribed.amplitude": (None, "wheel_loop: loop radius (rad); sinusoid: one per joint"),
    "prescribed.period": (None, "wheel_loop: seconds per loop"),
    "prescribed.frequency": (None, "sinusoid: Hz"),
    "prescribed.phase": (None, "sinusoid: one phase per joint (rad)"),
})

#: The controller node, in addition to :data:`ROBOT_PARAMETERS`; the selected plug-in's own
#: parameters are ``controller.<name>``.
CONTROLLER_PARAMETERS: dict[str, Parameter] = _table({
    **ROBOT_PARAMETERS,
    **ORBIT_PARAMETERS,
    "controller": ("", "controller plug-in name; overrides controller.name (the file's "
                   "controller.* values that the plug-in also has are kept, the others "
                   "dropped with a warning)"),
    "controller.name": ("", "controller plug-in name (scenario files: controller: {name: ...})"),
    "state_timeout": (0.1, "do not command when the latest state is older than this (ROS "
                      "time, s; a longer delay destabilises the default gains); 0 disables",
                      _nonnegative),
    "base_pose_duration": (2.0, "duration of the motion to a ~/base_pose target whose stamp "
                           "is not in the future, s", _positive),
    "reference_start": ("zero", "zero: reference times are ROS times; first_state: they start "
                        "at the first state's stamp", choice(("zero", "first_state"))),
    "max_trajectory_points": (1000, "reject a ~/joint_trajectory with more points (checked "
                              "before any point is read)", _count),
    "max_joint_state_names": (1000, "reject a joint_states message naming more joints "
                              "(checked in the serialized sample, before it is decoded)", _count),
    "position_bound": (1.0e6, "|target| bound of joints without URDF position limits "
                       "(continuous), of the interpolated motion of every joint (rad or m) "
                       "and of ~/base_pose positions (m)", _positive),
    "max_message_bytes": (1048576, "drop samples larger than this (serialized bytes) before "
                          "deserialising them", _count),
})

#: The dynamics node's input bounds, in addition to :data:`DYNAMICS_PARAMETERS`.
DYNAMICS_NODE_PARAMETERS: dict[str, Parameter] = _table({
    "max_message_bytes": (65536, "drop command samples larger than this (serialized bytes) "
                          "before deserialising them", _count),
    "max_layout_dims": (8, "reject effort commands whose layout.dim has more entries", _count),
    "command_queue_depth": (1000, "reader history (KEEP_LAST, reliable) of the command topics: "
                            "samples queued between two executor turns", _count),
    "max_commands_per_turn": (10, "command samples handled per executor turn and topic; when "
                             "more are queued the newest are kept and the older dropped "
                             "(effort_dropped / wrench_dropped in /diagnostics): a turn's input "
                             "work stays small next to the stepping that follows it, so that "
                             "no input rate holds up stepping and publishing", _count),
    "controller_manager_sync": (False, "lockstep with a ros2_control controller manager on "
                                "use_sim_time (nodes/ros2_control.py): advance one period per "
                                "1/control_rate wall s until a command answers the current "
                                "state, then one period per command", _flag),
    "controller_manager_state_barrier": ("", "with controller_manager_sync: the "
                                         "rcl_interfaces/srv/ListParameters service of the "
                                         "hardware component's node (/<hardware name>/"
                                         "list_parameters), answered only after that node took "
                                         "the state published before; /clock waits for the "
                                         "answer, so the manager never reads the state of the "
                                         "period before (nodes/ros2_control.py). Empty: no "
                                         "barrier"),
})

#: What only vm-sim reads (the nodes ignore these names).
SCENARIO_PARAMETERS: dict[str, Parameter] = _table({
    "scenario": ("", "scenario name (vm-sim --list; default output directory out/<name>)"),
    "description": ("", "one line for vm-sim --list"),
    "duration": (10.0, "simulated time of a vm-sim run, s", _positive),
    "compare_euler_model": (False, "vm-sim: also integrate a ZYX Euler-angle model and compare",
                            _flag),
    "input.type": ("none", "open-loop joint efforts: none, constant or sinusoid"),
    "input.effort": (None, "constant: one effort per joint"),
    "input.amplitude": (None, "sinusoid: one amplitude per joint"),
    "input.frequency": (None, "sinusoid: Hz"),
    "input.phase": (None, "sinusoid: one phase per joint (rad)"),
    "use_sim_time": (False, "ROS: follow /clock (set by the launch files)"),
    "forces": ([], "vm-sim from Python or -p: the force elements as a list of mappings (a "
               "ROS 2 parameter file holds them by name: forces.<name>.kind, ...; see "
               "vm_dynamics.config.forces)"),
})

#: Every name a scenario file may hold (it is the parameter file of vm-sim and both nodes).
SCENARIO_FILE_PARAMETERS: dict[str, Parameter] = {
    **DYNAMICS_PARAMETERS, **CONTROLLER_PARAMETERS, **DYNAMICS_NODE_PARAMETERS,
    **SCENARIO_PARAMETERS}


def unknown_parameters(names: Iterable[str], valid: Iterable[str] = SCENARIO_FILE_PARAMETERS,
                       open_sections: Iterable[str] = OPEN_SECTIONS) -> list[str]:
    """The flat ``names`` that are neither in ``valid`` nor under one of ``open_sections``
    (sorted)."""
    valid = set(valid)
    prefixes = tuple(f"{s}." for s in open_sections)
    return sorted(n for n in names if n not in valid and not n.startswith(prefixes))


def unknown_parameter_text(unknown: list[str], valid: Iterable[str] = SCENARIO_FILE_PARAMETERS,
                           open_sections: Iterable[str] = OPEN_SECTIONS) -> str:
    """One line for misspelled parameters: each with its nearest valid name, then every valid
    name."""
    valid = sorted(valid)
    parts = []
    for name in unknown:
        near = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
        parts.append(f"{name!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    listed = ", ".join(valid + [f"{s}.*" for s in open_sections])
    return (f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(parts)}; valid "
            f"names: {listed}")
