"""The compiled computed-torque law allocates nothing per stage (its work is allocated once per
rollout, :func:`vm_dynamics.control.laws.law_work`), and it takes the plant's kinematics only
where the controller's model has the same tree (:func:`~vm_dynamics.control.laws.
shared_kinematics`, checked entry by entry), with the same efforts as on its own kinematics."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from numba_allocations import allocations  # noqa: E402
from urdf_factory import random_tree_urdf  # noqa: E402

import vm_dynamics as vm  # noqa: E402
from vm_dynamics.control import get_controller  # noqa: E402
from vm_dynamics.control.inputs import compiled_law_of  # noqa: E402
from vm_dynamics.control.references import JointSinusoid, JointWaypoints, PoseSetpoint, Reference  # noqa: E402


def _model(seed=3, base="SE3"):
    return vm.load_model(random_tree_urdf(seed=seed), base=base, gravity=(0.0, 0.0, -9.81))


def _law(model, mode, plant=None):
    rng = np.random.default_rng(4)
    q0 = 0.3 * rng.normal(size=model.n)
    if mode == "free_floating":
        ref = Reference(joint=JointWaypoints([0.0, 0.05], [q0, q0 + 0.2]))
    else:
        ref = Reference(joint=JointSinusoid(q0, 0.2, 0.5, np.zeros(model.n)),
                        base=PoseSetpoint(vm.lie.se3_exp([0.1, -0.1, 0.05, 0.2, -0.1, 0.3])))
    ctrl = get_controller("computed_torque", {"mode": mode})
    ctrl.reset(model, vm.State(0.0, np.eye(4), np.zeros(model.b), q0, np.zeros(model.n)))
    return compiled_law_of(*ctrl.inputs(ref)), q0


@pytest.mark.parametrize("mode", ["free_floating", "actuated_base"])
def test_a_law_rollout_allocates_nothing_per_step(mode):
    m = _model()
    law, q0 = _law(m, mode)
    sim = vm.Simulator(m, 1e-3)
    rng = np.random.default_rng(1)
    start = (np.eye(4), 0.1 * rng.normal(size=m.b), q0, rng.normal(size=m.n))
    sim.reset(*start)
    sim.run_law(3, law)

    def run(k):
        sim.reset(*start)
        sim.run_law(k, law)
    assert allocations(lambda: run(40)) == allocations(lambda: run(1))


@pytest.mark.parametrize("mode", ["free_floating", "actuated_base"])
def test_the_law_shares_only_equal_kinematics_and_gives_the_same_efforts(mode):
    from vm_dynamics.control.laws import (
        computed_torque,
        computed_torque_into,
        computed_torque_stage,
        law_work,
    )
    from vm_dynamics.dynamics.fast import fast_model
    from vm_dynamics.dynamics.fast.kernels.kinematics import kinematics, workspace
    from vm_dynamics.dynamics.fast.kernels.momentum import momentum_terms
    m = _model()
    law, q0 = _law(m, mode)
    P = fast_model(m).kernel_constants
    F = vm.Simulator(m, 1e-3).stages.F
    rng = np.random.default_rng(2)
    g = vm.lie.se3_exp(0.3 * rng.normal(size=6))
    V, q, qd = 0.2 * rng.normal(size=m.b), q0 + 0.1 * rng.normal(size=m.n), rng.normal(size=m.n)
    plant = workspace(m.n)
    kinematics(P, q, plant)
    Ic0, hm = np.empty((6, 6)), np.empty(6)
    momentum_terms(P, qd, plant, Ic0, hm)
    C = law.law.model
    heavier = C.inert.copy()
    heavier[2] *= 1.1                                   # a dispersed mass (and its moments)
    moved = C.xi.copy()
    moved[1, :3] += 1e-3                                # a joint axis placed elsewhere
    variants = {2: C, 1: C._replace(inert=heavier), 0: C._replace(xi=moved)}
    efforts = {}
    for share, Cv in variants.items():
        lp = law.law._replace(model=Cv)
        lw = law_work(lp, P)
        assert lw.share == share
        tau, bw = np.empty(m.n), np.empty(m.b)
        assert computed_torque_into(lp, F, 0.02, g, V, q, qd, tau, bw, lw, plant) == 0
        tau0, bw0 = np.empty(m.n), np.empty(m.b)
        assert computed_torque(lp, F, 0.02, g, V, q, qd, tau0, bw0) == 0    # own kinematics
        np.testing.assert_array_equal(tau, tau0)
        np.testing.assert_array_equal(bw, bw0)
        # the engine's call also hands over the plant's Σ_k I_k (momentum_terms' Ic0): taken
        # only when the inertias are the plant's (share 2), the same numbers as the law's sum
        tau1, bw1 = np.empty(m.n), np.empty(m.b)
        assert computed_torque_stage(lp, F, 0.02, g, V, q, qd, tau1, bw1, lw, plant, Ic0,
                                     True) == 0
        np.testing.assert_array_equal(tau1, tau0)
        np.testing.assert_array_equal(bw1, bw0)
        efforts[share] = tau
    assert np.abs(efforts[1] - efforts[2]).max() > 1e-6   # the controller's inertias, not the plant's
    assert np.abs(efforts[0] - efforts[2]).max() > 1e-6   # the controller's geometry
