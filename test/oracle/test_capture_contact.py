"""Contact between the chaser and the target (vm_dynamics.capture.contact, .system) against
independent oracles.

* Impact: a free sphere (the chaser) hits a free sphere / a heavy box / a heavy cylinder head on;
  the coefficient of restitution of the relative normal velocity equals (a) an independent
  scipy DOP853 integration of the 1-D contact ODE ``m* δ̈ = −k δⁿ (1 + χ δ̇/v₀)`` with the
  reduced mass ``m* = m₁m₂/(m₁+m₂)`` and (b) the closed-form prediction
  ``χ(1 + e) = ln((1 + χ)/(1 − χe))`` within 1 %.
* Conservation: the spacecraft arm's end effector strikes a tumbling box obliquely, with friction:
  the total momentum (the chaser's momentum map + the target's) is unchanged to 1e-10 relative,
  and the energy balance ``T_C + T_T + U + D`` (D the integrated dissipation) closes.
"""
from __future__ import annotations

import numpy as np
import pytest
from capture_fixtures import ARM_URDF, free_ball, head_on, relative_velocity, restitution_1d

import vm_dynamics as vm
from vm_dynamics.capture import (
    Box,
    CaptureSimulator,
    CaptureSystem,
    ChaserPrimitive,
    ContactModel,
    CoulombFriction,
    Cylinder,
    HuntCrossley,
    MeasuredWrench,
    Sphere,
    TargetBody,
)


@pytest.fixture(scope="module")
def ball():
    return free_ball(0.02, 0.02, 0.02)


CASES = {   # target shape, mass, where the ball starts (touching at x = 0 of the target's side)
    "sphere": (Sphere(0.15), 3.0, -0.252),
    "heavy_box": (Box([0.4, 0.6, 0.6]), 5.0e3, -0.302),
    "heavy_cylinder": (Cylinder(0.2, 0.8), 5.0e3, -0.302),
}


@pytest.mark.parametrize("case, damping, e", [
    ("sphere", "exact", 0.8), ("heavy_box", "exact", 0.8), ("heavy_cylinder", "exact", 0.8),
    ("sphere", "exact", 0.4), ("heavy_box", "hunt_crossley", 0.9),
    ("sphere", "lankarani_nikravesh", 0.7)])
def test_head_on_impact_restitution(ball, case, damping, e):
    shape, m_T, x0 = CASES[case]
    law = HuntCrossley(stiffness=2.0e5, exponent=1.5, restitution=e, damping=damping)
    target = TargetBody(mass=m_T, com=np.zeros(3), inertia=np.eye(3) * m_T * 0.05, shape=shape)
    v0 = 0.2
    run = head_on(ball, target, law, x0, 5e-5, 20000, v0)
    sim, s, h0, E0 = run.sim, run.s, run.h0, run.E0
    assert run.touched and not sim.contacts
    e_sim = -relative_velocity(s)[0] / v0
    m_eff = 2.0 * m_T / (2.0 + m_T)
    e_ode = restitution_1d(law.stiffness, law.exponent, law.chi, m_eff, v0)
    assert abs(e_sim - e_ode) <= 1e-6 * e_ode, (e_sim, e_ode)
    assert abs(e_sim - law.predicted_restitution()) <= 0.01 * law.predicted_restitution()
    if damping == "exact":
        assert abs(e_sim - e) <= 0.01 * e
    h1 = sim.momentum()["total"]
    assert np.abs(h1 - h0).max() <= 1e-10 * np.abs(h0).max()
    assert abs(sim.energy()["balance"] - E0) <= 1e-7 * E0
    assert s.dissipated > 0.0


@pytest.fixture(scope="module")
def arm():
    return vm.load_model(ARM_URDF, gravity=(0, 0, 0))


def oblique_strike(arm, dt, steps, measured=None):
    q0 = np.array([0.0, -1.2, 0.0, 2.2, 0.0, -1.0, 0.0])
    g_ee = arm.frame_pose(q0, "ee_link")
    prim = ChaserPrimitive("tip", "ee_link", Sphere(0.05), vm.pose([0.0, 0.0, 0.03]))
    target = TargetBody(mass=60.0, com=[0.02, -0.01, 0.03],
                        inertia=[[5.0, 0.2, 0.0], [0.2, 4.0, 0.1], [0.0, 0.1, 6.0]],
                        shape=Box([0.5, 0.5, 0.5]))
    law = HuntCrossley(stiffness=5.0e5, exponent=1.5, restitution=0.6)
    system = CaptureSystem(arm, target, [prim], ContactModel(law, CoulombFriction(0.4, 1e-3)))
    sim = CaptureSimulator(system, dt)
    tip = (g_ee @ prim.pose)[:3, 3]
    g_T = vm.pose(tip + np.array([0.0, 0.0, 0.05 + 0.25 + 0.004]), [0.05, 0.02, 0.0,
                                                                     np.sqrt(1 - 0.0029)])
    V_T = np.array([0.01, 0.02, -0.15, 0.05, -0.1, 0.2])
    sim.reset(np.eye(4), [0.0, 0.01, 0.0, 0.0, 0.0, 0.01], q0, np.full(7, 0.02), g_T, V_T)
    h0, E0 = sim.momentum()["total"], sim.energy()["balance"]
    oblique_strike.h0_T = sim.momentum()["target"]
    fmax = 0.0
    for _ in range(steps):
        sim.step(measured_wrench=measured)
        fmax = max([fmax] + [c.normal_force for c in sim.contacts])
    return sim, h0, E0, fmax


def test_oblique_strike_with_friction_conserves_momentum_and_closes_energy(arm):
    sim, h0, E0, fmax = oblique_strike(arm, 2e-4, 400)
    h0_T = oblique_strike.h0_T
    s = sim.state
    assert fmax > 1.0 and s.dissipated > 0.0
    h1 = sim.momentum()["total"]
    assert np.abs(h1 - h0).max() <= 1e-10 * np.abs(h0).max(), np.abs(h1 - h0).max()
    E = sim.energy()
    assert abs(E["balance"] - E0) <= 1e-7 * E0, (E["balance"] - E0, E0)
    assert np.abs(sim.momentum()["target"] - h0_T).max() > 1e-3   # contact moved momentum


def test_measured_wrench_is_applied_equal_and_opposite(arm):
    """HIL path: a measured wrench at the end effector replaces the contact; the total momentum
    is unchanged and its work is the ``exchanged`` account of the energy balance."""
    w = MeasuredWrench("ee_link", np.array([3.0, -2.0, 5.0, 0.1, 0.2, -0.3]))
    sim, h0, E0, fmax = oblique_strike(arm, 1e-3, 100, measured=w)
    h1 = sim.momentum()["total"]
    assert np.abs(h1 - h0).max() <= 1e-10 * np.abs(h0).max()
    assert np.abs(sim.momentum()["target"] - oblique_strike.h0_T).max() > 1e-2
    E = sim.energy()
    assert abs(E["exchanged"]) > 1e-4
    assert abs(E["balance"] - E0) <= 1e-8 * E0
