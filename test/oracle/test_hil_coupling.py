"""Hardware-in-the-loop coupling in the library: measured joint samples drive the vehicle
(vm_dynamics.sim.measured) and the arm's interaction with the vehicle (vm_dynamics.sim.interaction).

Oracles: the analytic prescribed motion and vm.simulate with it (the measured path must reproduce
the vehicle's motion to the interpolation error, O(h⁴)); the closed-form LP inverse dynamics
(lp.py, no code shared with the recursions) for the coupled efforts; the vehicle's own
Newton–Euler equation, with V̇ from central finite differences of the simulated V, for the
base-reaction wrench."""
from __future__ import annotations

import numpy as np
import pytest

import vm_dynamics as vm
from vm_dynamics.config.scenario import load_scenario
from vm_dynamics.core import lie
from vm_dynamics.dynamics import lp
from vm_dynamics.sim.engine import Simulator
from vm_dynamics.sim.interaction import arm_interaction
from vm_dynamics.sim.measured import MeasuredJointMotion


def _hat(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def _rotation_error(Ra, Rb) -> float:
    return float(np.linalg.norm(lie.so3_log(Ra.T @ Rb)))


def test_hermite_reconstruction_is_exact_for_cubics_and_consistent():
    """Samples of a cubic (positions and velocities) give it back exactly; q̇ is dq/dt."""
    c = np.array([[0.3, -1.0], [1.2, 0.5], [-0.7, 0.25], [0.1, -0.05]])   # q = Σ c_k t^k

    def path(t):
        return (c[0] + c[1] * t + c[2] * t**2 + c[3] * t**3,
                c[1] + 2 * c[2] * t + 3 * c[3] * t**2, 2 * c[2] + 6 * c[3] * t)
    mm = MeasuredJointMotion(2)
    for t in np.arange(0, 1.0001, 0.1):
        q, qd, _ = path(t)
        assert mm.add(t, q, qd)
    for t in (0.05, 0.333, 0.91, 1.0):
        for got, want in zip(mm(t), path(t)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    eps = 1e-6
    fd = (mm(0.4321 + eps)[0] - mm(0.4321 - eps)[0]) / (2 * eps)
    np.testing.assert_allclose(fd, mm(0.4321)[1], atol=1e-8)
    assert not mm.add(1.0, [0, 0]) and mm.out_of_order == 1          # not after the newest
    with pytest.raises(ValueError, match="after the newest sample"):
        mm(1.5)
    with pytest.raises(ValueError, match="position"):
        mm.add(2.0, [0.0, np.nan])


def test_differenced_velocity_and_filtered_acceleration_are_causal_estimates():
    """Without measured velocities: backward differences (lag h/2) and a first-order low-pass;
    for a ramp the estimates are exact once the filter has settled."""
    mm = MeasuredJointMotion(1, velocity_cutoff=0.0, acceleration_cutoff=20.0)
    for t in np.arange(0, 2.0, 0.001):
        mm.add(t, [0.5 * t * t])                     # q̈ = 1
    h = 0.001
    assert abs(mm.latest.qd[0] - (mm.latest.t - h / 2)) < 1e-9     # lag h/2
    assert abs(mm.acceleration()[0] - 1.0) < 1e-6


@pytest.mark.parametrize("rate", [1000.0])
def test_measured_wheel_loop_reproduces_the_prescribed_simulation(rate):
    """The satellite wheel loop sampled at 1 kHz (positions and velocities) drives the vehicle
    as the analytic motion does: bus attitude within 1e-10 rad after a full loop (interpolation
    error O(h⁴); the loop's geometric phase itself is 1.5e-3 rad)."""
    scn = load_scenario("satellite_wheels")
    presc = scn.prescribed_motion()
    T = presc.period
    ref = vm.simulate(scn.model, scn.g0, scn.V0, None, None, T, 0.005, prescribed=presc)
    mm = MeasuredJointMotion(scn.model.n, history=20000)
    for t in np.arange(0.0, T + 0.5 / rate, 1.0 / rate):
        q, qd, _ = presc(t)
        mm.add(t, q, qd)
    sim = Simulator(scn.model, 0.005, prescribed=mm).reset(scn.g0, scn.V0)
    sim.run(int(round(T / 0.005)))
    err = _rotation_error(ref.g[-1][:3, :3], sim.state.g[:3, :3])
    phase = np.linalg.norm(lie.so3_log(ref.g[0][:3, :3].T @ ref.g[-1][:3, :3]))
    assert phase > 1e-3 and err < 1e-10, (phase, err)


@pytest.mark.parametrize("name", ["spacecraft_arm", "satellite_wheels"])
def test_interaction_efforts_match_lp_and_reaction_matches_newton_euler(name):
    """τ and V̇ of the coupled system against the closed-form LP inverse dynamics (free floating:
    its base row is zero); the base reaction against 𝔐₀V̇ − ad_Vᵀ𝔐₀V of the vehicle alone, with
    V̇ from central differences of the simulated twist."""
    scn = load_scenario(name)
    model = scn.model
    assert not np.any(model.gravity)          # in orbit: the arm's wrench is the only one
    n = model.n
    rng = np.random.default_rng(3)
    a, w = rng.uniform(0.2, 0.6, n), rng.uniform(0.5, 1.5, n)

    def motion(t):
        return scn.q0 + a * np.sin(w * t), a * w * np.cos(w * t), -a * w * w * np.sin(w * t)
    V0 = np.array([0.01, -0.02, 0.005, 0.02, 0.01, -0.03])[:model.b]
    dt, t1 = 1e-4, 0.7
    sim = Simulator(model, dt, prescribed=motion).reset(scn.g0, V0)
    sim.run(int(round(t1 / dt)) - 1)
    Vm = sim.state.V.copy()
    sim.step()
    out = arm_interaction(sim, motion(sim.t)[2])
    _, g, V, q, qd = sim.arrays()
    sim.step()
    Vp = sim.state.V.copy()
    # LP closed form: base wrench 0 (free floating) and the same efforts at the returned V̇
    f0, tau = lp.inverse_dynamics(model, g, V, q, qd, out.Vdot, motion(t1)[2])
    scale = 1.0 + np.abs(tau).max()
    assert np.abs(f0).max() < 1e-9 * scale and np.abs(tau - out.tau).max() < 1e-9 * scale
    # the vehicle's Newton–Euler equation: its only wrench is the arm's
    Vdot_fd = (Vp - Vm) / (2 * dt)
    np.testing.assert_allclose(out.Vdot, Vdot_fd, atol=1e-6 * (1 + np.abs(Vdot_fd).max()))
    M0 = model.vehicle_inertia
    v, om = V[:3], V[3:]
    ad = np.block([[_hat(om), _hat(v)], [np.zeros((3, 3)), _hat(om)]])
    want = M0 @ out.Vdot - ad.T @ (M0 @ V)
    np.testing.assert_allclose(out.base_reaction, want, rtol=0, atol=1e-9 * (1 + np.abs(want).max()))
    assert np.abs(want).max() > 1e-3          # the arm does push the vehicle
