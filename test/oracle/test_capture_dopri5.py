"""The adaptive ``dopri5`` method of the capture step (vm_dynamics.capture.stepping) against the
oracles of the fixed-step method: the target in orbit against DOP853 of its equations
(test_capture_orbit's oracle) at 50× the fixed step, a head-on impact against the 1-D contact
ODE (capture_fixtures.restitution_1d, test_capture_contact's oracle) at 20× the fixed step,
and contact → grasp → thrusters → release with momentum exact and the energy balance closed to
the tolerance asked for."""
from __future__ import annotations

import numpy as np
import pytest
from capture_fixtures import ARM_URDF, free_ball, head_on, relative_velocity, restitution_1d
from test_capture_orbit import ORBITS, contact_grasp_release, orbit_tumble

import vm_dynamics as vm
from vm_dynamics.capture import HuntCrossley, Sphere, TargetBody
from vm_dynamics.capture.orbit import ChiefFrameGravity


@pytest.fixture(scope="module")
def ball():
    return free_ball(0.02, 0.02, 0.02)


def test_dopri5_target_in_orbit_matches_the_oracle(ball):
    """``dt`` 0.5 s (50× the rkmk4 step of test_capture_orbit), rtol 1e-12: within 1e-9."""
    sim, E0, err = orbit_tumble(ball, ORBITS["elliptical_e0.1"], dt=0.5, method="dopri5",
                                rtol=1e-12, atol=1e-14)
    for k in ("position", "velocity", "attitude", "angular_velocity"):
        assert err[k] <= 1e-9, (k, err)
    assert err["drift"] <= 1e-6, err
    assert sim.stats.steps >= 12 and sim.stats.evals > 6 * sim.stats.steps
    assert abs(sim.energy()["balance"] - E0) <= 1e-11


def test_dopri5_head_on_impact_restitution(ball):
    """A 2 kg sphere at 0.2 m/s on a free 3 kg sphere, ``dt`` 1 ms (20× the fixed step of
    test_capture_contact): restitution within 1e-6 of the 1-D contact ODE; momentum exact."""
    law = HuntCrossley(stiffness=2.0e5, exponent=1.5, restitution=0.8)
    target = TargetBody(mass=3.0, com=np.zeros(3), inertia=np.eye(3) * 0.15, shape=Sphere(0.15))
    v0 = 0.2
    run = head_on(ball, target, law, -0.252, 1e-3, 1000, v0, method="dopri5", rtol=1e-11,
                  atol=1e-14)
    sim, h0 = run.sim, run.h0
    assert run.touched and not sim.contacts
    v_rel = relative_velocity(run.s)
    e_ode = restitution_1d(law.stiffness, law.exponent, law.chi, 2.0 * 3.0 / 5.0, v0)
    assert abs(-v_rel[0] / v0 - e_ode) <= 1e-6 * e_ode, (-v_rel[0] / v0, e_ode)
    assert np.abs(sim.momentum()["total"] - h0).max() <= 1e-12 * np.abs(h0).max()


def test_dopri5_contact_grasp_release_in_orbit_closes_energy():
    """The sequence of test_capture_orbit (0.5 ms steps) with dopri5 at rtol 1e-10: the
    momentum sum rule to 1e-12 and the energy balance to 1e-9 of the energy (rkmk4 at the same
    steps: 4.6e-6, the contact's integration error)."""
    arm = vm.load_model(ARM_URDF, gravity=(0.0, 0.0, 0.0))
    opts = {"method": "dopri5", "rtol": 1e-10, "atol": 1e-12}
    sim, _, out = contact_grasp_release(arm, [ChiefFrameGravity(ORBITS["circular_400km_51.6deg"])],
                                        options=opts)
    s = sim.state
    assert out["touched"] and sim.stats.rejected > 0
    assert np.abs(sim.momentum()["total"] - out["h0"] - s.impulse - s.external_impulse).max() \
        <= 1e-12 * np.abs(out["h0"]).max()
    E = sim.energy()
    assert E["dissipated"] > 0 and E["weld_loss"] > 0
    assert abs(E["balance"] - out["E0"]) <= 1e-9 * out["E0"]
