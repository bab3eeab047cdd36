"""Parameter tables of the nodes: ``name: (default, description)``, flat ROS parameter names.

:data:`ROBOT_PARAMETERS` are shared by both nodes (robot description, frames, rates);
:data:`DYNAMICS_PARAMETERS` add the dynamics node's own.  The initial-state entries come from
:data:`vm_dynamics.config.sections.INITIAL_PARAMETERS`, the scenario's own table.
"""
from __future__ import annotations

from typing import Any

from ..config.sections import INITIAL_PARAMETERS
from ..model.mounting import ROBOT_MODEL_PARAMETERS
from ..model.xacro_expansion import DEFAULT_XACRO

__all__ = ["ROBOT_PARAMETERS", "DYNAMICS_PARAMETERS", "DYNAMICS_BACKENDS"]

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
    "robot_description_xacro": (DEFAULT_XACRO, "xacro expansion of robot_description_file: "
                                "safe (arithmetic ${} only; xacro files are code), full "
                                "(trusted files), off (plain URDF only); always within a time "
                                "and size budget"),
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
    "ee_path_length": (200, "number of poses kept in ee_path and base_path, one per "
                       "1/publish_rate of simulated time (also in lockstep)"),
    "max_wall_publish_rate": (100.0, "when real_time_factor x publish_rate exceeds it (or "
                              "real_time_factor is 0), send the state (joint_states, odom, tf) "
                              "at most this many times per wall second; 0 = always every "
                              "1/publish_rate of simulated time"),
    "path_rate": (2.0, "ee_path/base_path: sent with every 10th state, but at most this many "
                  "times per wall second (paths of hundreds of poses are costly to send)"),
    **{f"initial.{k}": v for k, v in INITIAL_PARAMETERS.items()},
    # where the joints come from (hardware in the loop: nodes/joint_source.py)
    "joint_source": ("simulated", "simulated (effort commands drive the arm), measured (a real "
                     "arm's JointState on measured.topic drives the simulated vehicle) or "
                     "prescribed (the prescribed section's motion)"),
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
    "prescribed.type": ("", "prescribed motion (joint_source prescribed): sinusoid or "
                        "wheel_loop"),
    "prescribed.joints": (None, "wheel_loop: the two joint indices of the loop"),
    "prescribed.amplitude": (None, "wheel_loop: loop radius (rad); sinusoid: one per joint"),
    "prescribed.period": (None, "wheel_loop: seconds per loop"),
    "prescribed.frequency": (None, "sinusoid: Hz"),
    "prescribed.phase": (None, "sinusoid: one phase per joint (rad)"),
}

DYNAMICS_BACKENDS = ("auto", "numba", "lp")
