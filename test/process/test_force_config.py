"""The force elements of a scenario file, read once (vm_dynamics.config.forces) for vm-sim's
library path and both node cores: a spring given in the file's ``forces`` section moves the
dynamics node's core exactly as simulate() moves the scenario, the controller node's core
compensates the same elements, and the file stays a valid ROS 2 parameter file.

Oracle: simulate() with the scenario's elements (what vm-sim runs); the ROS 2 parameter-file
rules (vm_dynamics.transport.ros_yaml, rcl's).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vm_dynamics as vm
from vm_dynamics.config.params import flatten, read_params_file
from vm_dynamics.config.scenario import load_scenario
from vm_dynamics.forces import Spring, UniformGravity
from vm_dynamics.nodes.controller_core import ControllerCore, controller_parameter_defaults
from vm_dynamics.nodes.dynamics_core import DynamicsCore
from vm_dynamics.nodes.dynamics_node import node_parameter_defaults
from vm_dynamics.nodes.parameters import unknown_parameter_warning
from vm_dynamics.transport.ros_yaml import load_params_file

REPO = Path(__file__).resolve().parents[2]

TETHER = """\
    forces:
      tether:
        kind: spring
        frame: ee_link
        point: [0.0, 0.0, 0.05]
        anchor: [1.0, 0.5, 0.0]
        stiffness: 50.0
"""


def _scenario_file(tmp_path, extra: str, **top) -> Path:
    """config/tumbling.yaml with ``extra`` under ros__parameters and top-level values
    replaced (its URDF is found in the package's urdf/)."""
    text = (REPO / "config" / "tumbling.yaml").read_text()
    for key, value in top.items():
        lines = [ln for ln in text.splitlines() if not ln.startswith(f"    {key}:")]
        text = "\n".join(lines + [f"    {key}: {value}"]) + "\n"
    path = tmp_path / "tethered.yaml"
    path.write_text(text + extra)
    return path


def test_a_spring_in_the_forces_section_moves_the_node_core_as_simulate(tmp_path):
    path = _scenario_file(tmp_path, TETHER)
    assert load_params_file(str(path))                  # still a ROS 2 parameter file
    scn = load_scenario(path)
    spring = Spring("ee_link", [0.0, 0.0, 0.05], [1.0, 0.5, 0.0], 50.0)
    assert scn.forces == (spring,)
    T = 0.2
    traj = vm.simulate(scn.model, scn.g0, scn.V0, scn.q0, scn.qd0, T, scn.dt,
                       forces=scn.forces)                        # vm-sim's library path
    free = vm.simulate(scn.model, scn.g0, scn.V0, scn.q0, scn.qd0, T, scn.dt)
    params = flatten(read_params_file(path))
    dyn = DynamicsCore.from_params(params, folders=[str(tmp_path)])
    assert dyn.robot.forces == (spring,) and dyn.sim.forces == (spring,)
    steps = int(round(T / scn.dt))
    assert dyn.run(steps) == steps
    for key in ("g", "V", "q", "qd"):
        a, b = getattr(dyn, key), getattr(traj, key)[-1]
        assert np.abs(a - b).max() <= 1e-12 * (1.0 + np.abs(b).max()), key
    assert np.abs(free.g[-1] - traj.g[-1]).max() > 1e-4           # the spring acts
    ctrl = ControllerCore.from_params(dict(params, controller="computed_torque"),
                                      folders=[str(tmp_path)])
    assert ctrl.robot.forces == (spring,)                # compensated by the controller node


def test_the_nodes_declare_the_forces_section_and_report_its_errors(tmp_path):
    params = flatten(read_params_file(_scenario_file(tmp_path, TETHER)))
    names = [k for k in params if k.startswith("forces.")]
    assert len(names) == 5
    assert set(names) <= set(node_parameter_defaults(params))
    assert set(names) <= set(controller_parameter_defaults(params))
    assert unknown_parameter_warning(params, node_parameter_defaults(params)) is None
    bad = dict(params, **{"forces.tether.stifness": 5.0})
    with pytest.raises(ValueError, match=r"^forces\.tether: unknown keys stifness \(did you "
                                         r"mean 'stiffness'\?\); a spring element has"):
        DynamicsCore.from_params(bad)
    with pytest.raises(ValueError, match=r"^forces\.tether\.kind: unknown 'sprin' \(did you "
                                         r"mean 'spring'\?\)"):
        ControllerCore.from_params(dict(params, controller="computed_torque",
                                        **{"forces.tether.kind": "sprin"}))


def test_uniform_gravity_in_the_forces_section_is_the_models_gravity(tmp_path):
    weight = "    forces:\n      weight: {kind: uniform_gravity, g: [0.0, -1.0, -1.62]}\n"
    path = _scenario_file(tmp_path, weight)                 # tumbling: gravity [0, 0, 0]
    scn = load_scenario(path)
    assert scn.forces == () and np.array_equal(scn.model.gravity, [0.0, -1.0, -1.62])
    dyn = DynamicsCore.from_params(flatten(read_params_file(path)))
    assert np.array_equal(dyn.model.gravity, [0.0, -1.0, -1.62]) and dyn.sim.forces == ()
    same = _scenario_file(tmp_path, weight, gravity="[0.0, -1.0, -1.62]")
    assert np.array_equal(load_scenario(same).model.gravity, [0.0, -1.0, -1.62])
    other = _scenario_file(tmp_path, weight, gravity="[0.0, 0.0, -9.81]")
    with pytest.raises(ValueError, match=r"^forces\.weight: uniform_gravity g = \[0\.0, -1\.0, "
                                         r"-1\.62\] conflicts with the model's gravity"):
        load_scenario(other)
    with pytest.raises(ValueError, match=r"^forces\.weight: uniform_gravity g"):
        DynamicsCore.from_params(flatten(read_params_file(other)))
    assert UniformGravity([0.0, -1.0, -1.62]) not in scn.forces
