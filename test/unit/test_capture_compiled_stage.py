"""The compiled capture stage (vm_dynamics.capture.stage_kernels) against the simulator's Python
right-hand side: the same velocities and rates to round-off, free and grasped, in free space
and in orbit; a stage with a possible contact is left to Python."""
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

from vm_dynamics.capture.scenario import capture_scenario  # noqa: E402
from vm_dynamics.config.params import read_params_file  # noqa: E402
from vm_dynamics.config.scenario import find_file  # noqa: E402
from vm_dynamics.sim.integrators import RKMK4  # noqa: E402

CONFIG = Path(__file__).resolve().parents[2] / "config"


def _mission(name):
    path = CONFIG / f"{name}.yaml"
    params = read_params_file(path)
    urdf = find_file(params.get("robot_description_file"), "robot_description_file", [CONFIG])
    mission = capture_scenario(params, urdf, name).mission
    mission.start()
    return mission


def _agree(sim, tau, bw):
    G, y = sim._G, sim._y
    out = sim._stage.rates(sim.t + 0.3, G, y, tau, bw)
    assert out is not None
    vel, ydot = out
    inp = sim._inputs(None, tau, bw, None, 0, 0, 0)
    vel_py, ydot_py, contacts = sim._evaluate(sim.t + 0.3, G, y, inp)
    assert contacts == []
    np.testing.assert_allclose(vel, vel_py, rtol=0, atol=1e-13 * (1 + np.abs(vel_py).max()))
    scale = 1 + np.abs(ydot_py).max()
    np.testing.assert_allclose(ydot, ydot_py, rtol=0, atol=1e-12 * scale)
    V, V_T, g_T = sim._stage.velocities(G, y)
    _, V_py, _, _, g_T_py, V_T_py, _, _ = sim._split(G, y)
    np.testing.assert_allclose(V, V_py, rtol=0, atol=1e-14)
    np.testing.assert_allclose(V_T, V_T_py, rtol=0, atol=1e-14)
    np.testing.assert_allclose(g_T, g_T_py, rtol=0, atol=1e-14)


@pytest.mark.parametrize("name", ["capture_tumbling", "capture_orbit"])
def test_the_compiled_stage_is_the_python_right_hand_side(name):
    mission = _mission(name)
    sim = mission.sim
    for _ in range(50):
        mission.step()
    assert sim._stage is not None and not sim.grasped
    n = sim.model.nq
    tau = np.linspace(-2.0, 3.0, n)
    bw = np.array([1.0, -2.0, 0.5, 0.3, -0.1, 0.2])
    _agree(sim, tau, None)
    _agree(sim, tau, bw)
    # one whole step compiled: the Python RKMK step with the same inputs
    inp = sim._inputs(None, tau, bw, None, 0, 0, 0)
    done = sim._stage.step(sim.t, sim._G, sim._y, sim.dt, RKMK4, tau, bw)
    from vm_dynamics.capture.stepping import advance
    from vm_dynamics.capture.system import ProductGroup
    G_py, y_py, _ = advance(lambda t, G, y: sim._evaluate(t, G, y, inp), ProductGroup, RKMK4,
                            sim.t, sim._G, sim._y, sim.dt)
    np.testing.assert_allclose(done[0], G_py, rtol=0, atol=1e-14)
    np.testing.assert_allclose(done[1], y_py, rtol=0, atol=1e-12 * (1 + np.abs(y_py).max()))
    assert sim.grasp(force=True)
    assert sim._stage is not None and sim._stage.grasped
    _agree(sim, tau, bw)


def test_a_stage_near_contact_is_left_to_python():
    mission = _mission("capture_tumbling")
    sim = mission.sim
    apart = sim._stage.apart(sim._G, sim._y)
    assert apart.all()                        # 0.3 m from the fixture face
    G = sim._G.copy()
    # the target moved onto the finger pad: the stage reports it (the caller evaluates it)
    g_pad = G[:4, :4] @ sim.model.frame_pose(sim._y[6:13], "ee_link")
    pad = g_pad[:3, :3] @ np.array([0.0, 0.0, 0.092]) + g_pad[:3, 3]
    G[4:7, 7] = pad + G[4:7, :3] @ np.array([0.49, 0.0, 0.0])     # the pad 1 cm inside a face
    assert not sim._stage.apart(G, sim._y).all()
    assert sim._stage.rates(0.0, G, sim._y, None, None) is None
