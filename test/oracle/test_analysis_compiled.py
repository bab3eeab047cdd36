"""The run analysis (energy balance, Euler-angle comparison) by the compiled kernels: the same
numbers as the reference path (the term-by-term formulas of lp.py and of the Euler-angle
model) to round-off, and the same as independent oracles (scipy's quadrature of the input
power, scipy's DOP853 on the Euler-angle model's own equations at tight tolerance).  How long
they take is bench/'s business; here it is checked that the per-sample reference kinematics
(milliseconds a sample, what made the analysis take longer than the simulation) is not used."""
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.integrate import simpson, solve_ivp
from urdf_factory import random_tree_urdf

import vm_dynamics as vm
from vm_dynamics.analysis import euler_model, metrics
from vm_dynamics.core import lie
from vm_dynamics.dynamics import fast, lp
from vm_dynamics.sim.simulate import simulate

pytestmark = pytest.mark.skipif(not fast.numba_available(), reason="needs numba")

GRAVITY = (0.5, -1.0, -9.7)


def _no_reference_kinematics(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the reference kinematics (lp.kinematics) was used per sample")
    monkeypatch.setattr(lp, "kinematics", refuse)


@pytest.mark.parametrize("base", ["SE3", "SE2", "fixed"])
def test_gravity_potentials_are_the_models_potential_energy(base):
    m = vm.load_model(random_tree_urdf(seed=4, n=4), base=base, gravity=GRAVITY)
    rng = np.random.default_rng(1)
    N = 20
    g = np.array([lie.make_pose(lie.so3_exp(rng.normal(size=3)) if base == "SE3" else
                                lie.so3_exp([0, 0, rng.normal()]), rng.normal(size=3))
                  if base != "fixed" else np.eye(4) for _ in range(N)])
    q = rng.uniform(-1.5, 1.5, (N, m.n))
    ref = np.array([m.potential_energy(g[k], q[k]) for k in range(N)])
    got = metrics.gravity_potentials(m, SimpleNamespace(t=np.arange(N) * 0.1, g=g, q=q))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_energy_balance_closes_without_the_reference_kinematics(monkeypatch):
    """A short run under gravity with constant joint efforts: E(t) is the reference energy
    (Model.energy per sample) to round-off, and E(T) − E(0) equals scipy's Simpson quadrature
    of the input power τ·q̇ to the integrator's accuracy."""
    m = vm.load_model(random_tree_urdf(seed=2, n=3), base="SE3", gravity=GRAVITY)
    rng = np.random.default_rng(5)
    tau = rng.normal(size=m.n)
    tr = simulate(m, np.eye(4), 0.2 * rng.normal(size=6), rng.uniform(-1, 1, m.n),
                  0.3 * rng.normal(size=m.n), 0.2, 1e-3, tau=tau, method="rkmk4")
    E_ref = np.array([m.energy(tr.g[k], tr.V[k], tr.q[k], tr.qd[k]) for k in range(len(tr.t))])
    _no_reference_kinematics(monkeypatch)
    E, K = metrics.energy_series(m, tr)
    np.testing.assert_allclose(E, E_ref, rtol=1e-12, atol=1e-12 * np.abs(E_ref).max())
    P = tr.qd @ tau
    W = simpson(P, x=tr.t)
    assert abs(E[-1] - E[0] - W) <= 1e-8 * max(abs(W), np.abs(E_ref).max())
    checks = metrics.conservation_checks(m, tr)
    assert checks.summary()["energy_balance_rel"] < 1e-8


def test_momentum_series_is_the_models_momentum(monkeypatch):
    m = vm.load_model(random_tree_urdf(seed=6, n=4), base="SE3", gravity=(0, 0, 0))
    rng = np.random.default_rng(2)
    g0 = lie.make_pose(lie.so3_exp(rng.normal(size=3)), rng.normal(size=3))
    tr = simulate(m, g0, rng.normal(size=6), rng.uniform(-1, 1, m.n), rng.normal(size=m.n),
                  0.05, 1e-3, tau=np.zeros(m.n), method="rkmk4")
    ref = np.array([m.momentum(tr.g[k], tr.V[k], tr.q[k], tr.qd[k]) for k in range(len(tr.t))])
    _no_reference_kinematics(monkeypatch)
    pi, _ = metrics.momentum_series(m, tr)
    np.testing.assert_allclose(pi, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    checks = metrics.conservation_checks(m, tr)
    assert checks.momentum_conserved and checks.summary()["momentum_drift_rel"] < 1e-12


def _tumbler():
    m = vm.load_model(random_tree_urdf(seed=3, n=3), base="SE3", gravity=GRAVITY)
    rng = np.random.default_rng(7)
    em = euler_model.EulerAngleModel(m)
    g0 = lie.make_pose(euler_model.rotation_zyx([0.3, 0.6, -0.2]), rng.normal(size=3))
    x0, xd0 = em.from_lie_state(g0, rng.normal(size=6), rng.uniform(-1, 1, m.n),
                                rng.normal(size=m.n))
    return m, em, x0, xd0


def test_pulled_back_accelerations_are_the_euler_lagrange_ones():
    m, em, _, _ = _tumbler()
    rng = np.random.default_rng(11)
    for _ in range(10):
        Theta = rng.uniform(-np.pi, np.pi, 3)
        Theta[1] = rng.uniform(-1.4, 1.4)
        x = np.concatenate([rng.normal(size=3), Theta, rng.uniform(-2, 2, m.n)])
        xd = rng.normal(size=em.dim)
        tau, w = rng.normal(size=m.n), rng.normal(size=6)
        ref = em.forward_dynamics(x, xd, tau, w)
        np.testing.assert_allclose(em.accelerations(x, xd, tau, w), ref, rtol=1e-9,
                                   atol=1e-10 * np.abs(ref).max())


def test_fast_euler_run_matches_the_reference_and_dop853(monkeypatch):
    m, em, x0, xd0 = _tumbler()
    T, dt = 0.1, 1e-3
    ref = euler_model.simulate_euler(em, x0, xd0, T, dt)

    def rhs(t, y):
        return np.concatenate([y[em.dim:], em.forward_dynamics(y[:em.dim], y[em.dim:],
                                                               np.zeros(m.n))])
    oracle = solve_ivp(rhs, (0.0, T), np.concatenate([x0, xd0]), method="DOP853",
                       rtol=1e-12, atol=1e-12, t_eval=ref.t)
    _no_reference_kinematics(monkeypatch)
    run = euler_model.simulate_euler(em, x0, xd0, T, dt, reference=False)
    assert run.ok and ref.ok
    np.testing.assert_allclose(run.x, ref.x, rtol=0, atol=1e-11)
    np.testing.assert_allclose(run.xd, ref.xd, rtol=0, atol=1e-10)
    np.testing.assert_allclose(run.x, oracle.y[:em.dim].T, rtol=0, atol=1e-9)
    np.testing.assert_allclose(run.xd, oracle.y[em.dim:].T, rtol=0, atol=1e-8)


def test_euler_comparison_of_a_tumble_is_the_reference_one(monkeypatch):
    """compare_with_lp by the compiled path: the reference numbers (energies, conditions,
    pose difference) to round-off, and no reference kinematics per sample."""
    m, em, x0, xd0 = _tumbler()
    m0 = vm.load_model(random_tree_urdf(seed=3, n=3), base="SE3", gravity=(0, 0, 0))
    g0, V0, q0, qd0 = em.to_lie_state(x0, xd0)
    tr = simulate(m0, g0, V0, q0, qd0, 0.05, 1e-3, tau=np.zeros(m0.n), method="rkmk4")
    em0 = euler_model.EulerAngleModel(m0)
    sim = euler_model.simulate_euler(em0, *em0.from_lie_state(g0, V0, q0, qd0), 0.05, 1e-3)
    E_ref = np.array([em0.energy(x, xd) for x, xd in zip(sim.x, sim.xd)])
    cond_ref = np.array([em0.condition_number(x) for x in sim.x])
    _no_reference_kinematics(monkeypatch)
    out = euler_model.compare_with_lp(m0, tr)
    assert out["euler_completed"] and out["euler_steps"] == len(sim.t) - 1
    scale = abs(E_ref[0])
    np.testing.assert_allclose(out["euler_trajectory"]["energy_error_rel"],
                               np.abs(E_ref - E_ref[0]) / scale, rtol=0, atol=1e-13)
    np.testing.assert_allclose(out["euler_trajectory"]["condition_number"], cond_ref,
                               rtol=1e-9)
    assert out["max_pose_difference"] < 1e-9
