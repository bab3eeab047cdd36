"""The free-floating inverse dynamics (one RNEA pass at V̇ = 0, the locked inertia's b×b solve
and a second backward pass for the vehicle's acceleration) against Pinocchio's forward
dynamics: the efforts it returns, applied with the known vehicle wrench and frame wrenches,
give back the commanded joint accelerations and the vehicle acceleration it reports."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import WRENCH_FRAMES, gravity_for, make_oracle, our_model

from vm_dynamics.dynamics.fast import fast_model

CASES = [("ur5", "SE3"), ("b1_z1", "SE3"), ("random_tree", "SE3"), ("random_tree", "SE2"),
         ("ur5", "SO3"), ("ur5", "fixed")]


@pytest.mark.parametrize("robot,base", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_free_floating_inverse_dynamics_vs_pinocchio_aba(robot, base, seed):
    grav = gravity_for(seed)
    model = our_model(robot, base, grav)
    orc = make_oracle(robot, base, grav, joint_names=list(model.joint_names))
    rng = np.random.default_rng(31 + seed)
    g, V, q, qd = orc.random_state(rng)
    qdd = rng.normal(size=orc.n)
    bw = 20.0 * rng.normal(size=orc.b)
    fw = {f: 10.0 * rng.normal(size=6) for f in WRENCH_FRAMES[robot]}
    for kw in ({}, {"base_wrench": bw, "frame_wrenches": fw}):
        Vdot, tau = fast_model(model).free_floating_inverse_dynamics(
            g, V, q, qd, qdd, kw.get("base_wrench"), kw.get("frame_wrenches"))
        Vdot_p, qdd_p = orc.aba(g, V, q, qd, tau, **kw)
        scale = 1.0 + np.abs(np.r_[Vdot_p, qdd_p]).max()
        np.testing.assert_allclose(qdd_p, qdd, rtol=1e-9, atol=1e-9 * scale)
        np.testing.assert_allclose(Vdot, Vdot_p, rtol=1e-9, atol=1e-9 * scale)
