"""Hybrid dynamics (some joints driven, vehicle and other joints free) against Pinocchio.

Oracle: the dense partitioned solve of ``M a + h = [bw; τ]`` with Pinocchio's mass matrix
(``pin.crba``) and bias ``h`` (``pin.rnea`` at zero acceleration, gravity and frame wrenches
included), free-flyer root: ``M_xx a_x = f_x − h_x − M_xp q̈_p``,
``τ_p = M_px a_x + M_pp q̈_p + h_p``.  The impulsive variant against the total momentum
(Pinocchio's, summed over the bodies) before and after the jump.  The two limits: no joint
driven is the forward dynamics, every joint driven the free-floating inverse dynamics.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import WRENCH_FRAMES, gravity_for, make_oracle, our_model

from vm_dynamics.dynamics import fast

pytest.importorskip("pinocchio")

ROBOTS = ["ur5", "panda", "b1_z1"]
RTOL = 1e-10


def close(ours, ref, what, rtol=RTOL):
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} != {ref.shape}"
    err = np.max(np.abs(ours - ref), initial=0.0)
    scale = max(np.max(np.abs(ref), initial=0.0), 1e-300)
    assert err <= rtol * scale, f"{what}: max abs err {err:.3e} > {rtol:g} * {scale:.3e}"


def partitioned(orc, g, V, q, qd, tau, qdd, mask, bw, fw):
    """Pinocchio's dense partitioned solve: ``(V̇, q̈, τ_p)``."""
    b, n = orc.b, orc.n
    M = orc.mass_matrix(q, g)
    h0, hj = orc.rnea(g, V, q, qd, np.zeros(b), np.zeros(n), fw)
    h, f = np.r_[h0, hj], np.r_[bw, tau]
    x = np.r_[np.ones(b, bool), ~mask]
    p = ~x
    ap = qdd[mask]
    ax = np.linalg.solve(M[np.ix_(x, x)], f[x] - h[x] - M[np.ix_(x, p)] @ ap)
    tp = M[np.ix_(p, x)] @ ax + M[np.ix_(p, p)] @ ap + h[p]
    acc = np.empty(b + n)
    acc[x], acc[p] = ax, ap
    return acc[:b], acc[b:], tp


@pytest.fixture(params=ROBOTS, scope="module")
def robot(request):
    grav = gravity_for(2)
    model = our_model(request.param, "SE3", grav)
    orc = make_oracle(request.param, "SE3", grav, joint_names=list(model.joint_names))
    return request.param, model, orc


def _inputs(name, model, rng):
    n, b = model.n, model.b
    return (5.0 * rng.normal(size=n), rng.normal(size=n), 20.0 * rng.normal(size=b),
            {f: 10.0 * rng.normal(size=6) for f in WRENCH_FRAMES[name]})


@pytest.mark.parametrize("seed", range(4))
def test_hybrid_vs_partitioned_solve(robot, seed):
    _check_partitioned(*robot, seed)


@pytest.mark.parametrize("name,base", [("random_tree", "SE2"), ("ur5", "SO3"), ("panda", "fixed")])
def test_hybrid_vs_partitioned_solve_constrained_vehicle(name, base):
    """A vehicle in a subgroup (planar, rotating only) or fixed: the same split, on b < 6."""
    grav = gravity_for(3)
    model = our_model(name, base, grav)
    orc = make_oracle(name, base, grav, joint_names=list(model.joint_names))
    _check_partitioned(name, model, orc, 9)


def _check_partitioned(name, model, orc, seed):
    rng = np.random.default_rng(100 + seed)
    for trial in range(3):
        g, V, q, qd = orc.random_state(rng)
        tau, qdd, bw, fw = _inputs(name, model, rng)
        mask = rng.random(model.n) < 0.5
        Vd, a, eff = fast.hybrid_dynamics(model, g, V, q, qd, tau, qdd, mask, bw, fw)
        Vd_p, a_p, tp = partitioned(orc, g, V, q, qd, tau, qdd, mask, bw, fw)
        what = f"{name} seed {seed} trial {trial} mask {mask.astype(int)}"
        close(np.r_[Vd, a], np.r_[Vd_p, a_p], f"accelerations, {what}")
        close(eff[mask], tp, f"driven efforts, {what}")
        assert np.array_equal(a[mask], qdd[mask]) and np.array_equal(eff[~mask], tau[~mask])


def test_no_joint_driven_is_forward_dynamics(robot):
    name, model, orc = robot
    rng = np.random.default_rng(7)
    g, V, q, qd = orc.random_state(rng)
    tau, qdd, bw, fw = _inputs(name, model, rng)
    Vd, a, eff = fast.hybrid_dynamics(model, g, V, q, qd, tau, qdd,
                                      np.zeros(model.n, bool), bw, fw)
    Vd_f, a_f = fast.forward_dynamics(model, g, V, q, qd, tau, bw, fw)
    close(np.r_[Vd, a], np.r_[Vd_f, a_f], f"{name}: no joint driven vs forward dynamics",
          rtol=1e-12)
    assert np.array_equal(eff, tau)


def test_every_joint_driven_is_free_floating_inverse_dynamics(robot):
    name, model, orc = robot
    rng = np.random.default_rng(8)
    g, V, q, qd = orc.random_state(rng)
    tau, qdd, _, fw = _inputs(name, model, rng)
    mask = np.ones(model.n, bool)
    Vd, a, eff = fast.hybrid_dynamics(model, g, V, q, qd, tau, qdd, mask, None, fw)
    Vd_i, tau_i = fast.fast_model(model).free_floating_inverse_dynamics(g, V, q, qd, qdd,
                                                                        None, fw)
    close(Vd, Vd_i, f"{name}: every joint driven, V̇ vs free-floating ID", rtol=1e-12)
    close(eff, tau_i, f"{name}: every joint driven, τ vs free-floating ID", rtol=1e-12)
    assert np.array_equal(a, qdd)


@pytest.mark.parametrize("seed", range(3))
def test_impulse_conserves_momentum(robot, seed):
    name, model, orc = robot
    rng = np.random.default_rng(200 + seed)
    g, V, q, qd = orc.random_state(rng)
    mask = rng.random(model.n) < 0.5
    mask[rng.integers(model.n)] = True
    target = qd.copy()
    target[mask] = rng.normal(size=mask.sum()) * 2.0
    dV, dqd = fast.driven_impulse(model, q, target - qd, mask)
    V1, qd1 = V + dV, qd + dqd
    qd1[mask] = target[mask]
    h0, h1 = orc.momentum(g, V, q, qd), orc.momentum(g, V1, q, qd1)
    scale = np.max(np.abs(h0)) + np.max(np.abs(orc.momentum(g, np.zeros(6), q, target - qd)))
    assert np.max(np.abs(h1 - h0)) <= 1e-12 * scale, \
        f"{name}: momentum change {np.max(np.abs(h1 - h0)):.3e} (scale {scale:.3e})"
    assert np.array_equal(qd1[mask], target[mask])
    # no impulse on the free joints: the generalised impulse M Δν vanishes off the driven rows
    M = orc.mass_matrix(q, g)
    imp = M @ np.r_[dV, dqd]
    free = np.r_[np.ones(model.b, bool), ~mask]
    assert np.max(np.abs(imp[free])) <= 1e-12 * np.max(np.abs(M)) * np.max(np.abs(dqd))


def test_bad_inputs_name_the_culprit(robot):
    name, model, _ = robot
    n, z = model.n, np.zeros(model.n)
    g, V = np.eye(4), np.zeros(6)
    with pytest.raises(ValueError, match="driven"):
        fast.hybrid_dynamics(model, g, V, z, z, z, z, np.zeros(n - 1, bool))
    with pytest.raises(ValueError, match="qdd"):
        fast.hybrid_dynamics(model, g, V, z, z, z, np.full(n, np.nan), np.ones(n, bool))
    with pytest.raises(ValueError, match="unknown joint 'nope'"):
        fast.driven_mask(model, ["nope"])
    with pytest.raises(ValueError, match="given twice"):
        fast.driven_mask(model, [0, model.joint_names[0]])
