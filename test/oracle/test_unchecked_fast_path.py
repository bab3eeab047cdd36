"""``model.fast``: the unchecked fast path for inner loops (vm_dynamics.model.unchecked).

Oracles: Pinocchio's ``aba``/``rnea`` on the same URDF (test/oracles.py) at RTOL, and the
public, validated ``Model.forward_dynamics``/``inverse_dynamics``, which it must reproduce bit
for bit (the same compiled kernels without the argument checks).  Speed is measured by
``bench/breakdown.py``, not here.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
from conftest import gravity_for, make_oracle, our_model, robot_path

import vm_dynamics as vm
from vm_dynamics.core import lie

RTOL = 1e-10
CASES = [("ur5", "SE3"), ("b1_z1", "SE3"), ("random_tree", "SE2"), ("ur5", "SO3"),
         ("panda", "fixed")]


def close(ours, ref, what):
    err = np.max(np.abs(ours - ref), initial=0.0)
    assert err <= RTOL * max(np.linalg.norm(ref), 1e-300), f"{what}: max abs err {err:.3e}"


@pytest.mark.parametrize("robot, base", CASES, ids=[f"{r}-{b}" for r, b in CASES])
def test_fast_path_matches_pinocchio_and_the_public_api_bit_for_bit(robot, base):
    grav = gravity_for(2)
    m = our_model(robot, base, grav)
    orc = make_oracle(robot, base, grav, joint_names=list(m.joint_names))
    rng = np.random.default_rng(11)
    fast = m.fast
    out, out_id = fast.output(), fast.output()
    assert out.shape == (m.b + m.n,)
    for trial in range(3):
        g, V, q, qd = orc.random_state(rng)
        g, V, q, qd = (np.ascontiguousarray(x, dtype=float) for x in (g, V, q, qd))
        tau, bw = 5.0 * rng.normal(size=m.n), 20.0 * rng.normal(size=m.b)
        for bw_ in (None, bw):
            ret = fast.forward_dynamics(g, V, q, qd, tau, out, base_wrench=bw_)
            assert ret is out
            Vd, qdd = m.forward_dynamics(g, V, q, qd, tau, base_wrench=bw_)
            assert np.array_equal(out, np.r_[Vd, qdd]), "fast FD differs from the public API"
            close(out, np.r_[orc.aba(g, V, q, qd, tau, bw_, None)],
                  f"fast FD vs pinocchio ({robot}, {base}, trial {trial}, bw={bw_ is not None})")
        Vdot, qdd = rng.normal(size=m.b), rng.normal(size=m.n)
        assert fast.inverse_dynamics(g, V, q, qd, Vdot, qdd, out_id) is out_id
        bw_id, tau_id = m.inverse_dynamics(g, V, q, qd, Vdot, qdd)
        assert np.array_equal(out_id, np.r_[bw_id, tau_id]), "fast ID differs from the public API"
        close(out_id, np.r_[orc.rnea(g, V, q, qd, Vdot, qdd, None)],
              f"fast ID vs pinocchio ({robot}, {base}, trial {trial})")


def test_fast_path_follows_the_model_it_belongs_to():
    """A copy with added vehicle inertia and a model whose gravity is replaced get their own
    fast path (not the one cached on the original)."""
    m = vm.load_model(robot_path("ur5"), base="SE3", gravity=(0.0, 0.0, -9.81))
    rng = np.random.default_rng(3)
    g = lie.se3_exp(rng.normal(size=6))
    V, q, qd, tau = rng.normal(size=6), rng.normal(size=m.n), rng.normal(size=m.n), \
        rng.normal(size=m.n)
    first = m.fast
    assert m.fast is first
    heavy = m.with_added_vehicle_inertia(np.diag([5.0, 5.0, 5.0, 1.0, 1.0, 1.0]))
    assert heavy.fast is not first
    out = heavy.fast.forward_dynamics(g, V, q, qd, tau, heavy.fast.output())
    assert np.array_equal(out, np.r_[heavy.forward_dynamics(g, V, q, qd, tau)])
    m2 = copy.copy(m)
    m2.gravity = np.array([0.0, 0.0, -1.62])
    out = m2.fast.forward_dynamics(g, V, q, qd, tau, m2.fast.output())
    assert np.array_equal(out, np.r_[m2.forward_dynamics(g, V, q, qd, tau)])
    assert not np.array_equal(out, first.forward_dynamics(g, V, q, qd, tau, first.output()))


def test_kernel_status_is_still_an_error():
    m = our_model("ur5", "SE3", gravity_for(0))
    g = np.eye(4)
    g[0, 0] = 2.0                      # not a rigid transform
    z = np.zeros(m.n)
    with pytest.raises(ValueError, match="g: not a rigid transform"):
        m.fast.forward_dynamics(g, np.zeros(6), z, z, z, m.fast.output())
    with pytest.raises(ValueError, match="g: not a rigid transform"):
        m.fast.inverse_dynamics(g, np.zeros(6), z, z, np.zeros(6), z, m.fast.output())


def test_mimic_model_takes_the_checked_path_with_the_same_results():
    m = vm.load_model(robot_path("panda"), base="SE3", gravity=(0.0, 0.0, -9.81))
    assert not m.coupling.trivial and not m.fast.compiled
    rng = np.random.default_rng(5)
    g = lie.se3_exp(rng.normal(size=6))
    V, q, qd, tau = rng.normal(size=6), 0.3 * rng.normal(size=m.n), rng.normal(size=m.n), \
        rng.normal(size=m.n)
    out = m.fast.forward_dynamics(g, V, q, qd, tau, m.fast.output())
    assert np.array_equal(out, np.r_[m.forward_dynamics(g, V, q, qd, tau)])
