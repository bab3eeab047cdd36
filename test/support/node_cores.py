"""Inputs of the node-core tests (test/process/test_node_logic.py, test_controller_input.py,
test/unit/test_simulation_interfaces.py): a scenario's parameters on the LP reference backend
(no numba compilation in-process), the planar rover's reference trajectory evaluated
independently of the nodes, and ``trajectory_msgs/JointTrajectory`` messages as a user sends
them."""
from __future__ import annotations

import math

import numpy as np
from processes import REPO

from vm_dynamics.config.params import flatten, read_params_file
from vm_dynamics.control.references import JointSinusoid
from vm_dynamics.ros import messages as rm

TRAJ = "trajectory_msgs/msg/JointTrajectory"


def scenario(name, **overrides) -> dict:
    """The flat parameters of ``config/<name>.yaml`` on the LP backend, with ``overrides``."""
    p = flatten(read_params_file(REPO / "config" / f"{name}.yaml"))
    p.update(dynamics_backend="lp")
    p.update(overrides)
    return p


def rover_reference() -> JointSinusoid:
    """The planar rover's joint reference, read from its parameters file."""
    ref = read_params_file(REPO / "config" / "planar_rover.yaml")["reference"]["joint"]
    return JointSinusoid(ref["q0"], ref["amplitude"], ref["frequency"], ref["phase"])


def traj(names, positions, times, velocities=None, accelerations=None, stamp=0.0):
    """A JointTrajectory of one point per ``positions`` entry, reached ``times`` s after its
    start; point ``k`` has ``velocities[k]`` / ``accelerations[k]`` where given (a shorter list
    leaves the later points without), else none; no efforts."""
    types = rm.TYPESTORE.types

    def entry(values, k):
        return np.array(values[k] if values and k < len(values) else [], dtype=float)
    pts = []
    for k, (pos, tfs) in enumerate(zip(positions, times)):
        sec = math.floor(tfs)
        pts.append(types["trajectory_msgs/msg/JointTrajectoryPoint"](
            positions=np.array(pos, dtype=float), velocities=entry(velocities, k),
            accelerations=entry(accelerations, k), effort=np.zeros(0),
            time_from_start=types["builtin_interfaces/msg/Duration"](
                sec=sec, nanosec=int(round((tfs - sec) * 1e9)))))
    return types[TRAJ](header=rm.header_msg(stamp), joint_names=list(names), points=pts)
