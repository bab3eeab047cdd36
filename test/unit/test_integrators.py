"""RKMK integrators on the vehicle subgroups, against closed-form solutions.

Test problem (exact solution known on SE(3)): ``g(t) = g₀ exp(tA) exp(tB)`` has the body velocity
``g⁻¹ġ = Ad_{exp(−tB)} A + B`` — a time-varying, non-commuting velocity, so every term of
``dexp⁻¹_{−Θ}`` matters.  Orders are measured from errors at three step sizes.
"""
from __future__ import annotations

import numpy as np
import pytest

from vm_dynamics.core import lie
from vm_dynamics.core.groups import SE2, SE3, SO3
from vm_dynamics.sim import integrators as I

A6 = np.array([0.3, -0.2, 0.5, 0.9, -0.4, 0.7])
B6 = np.array([-0.1, 0.4, 0.2, -0.5, 1.1, 0.3])
G0 = lie.make_pose(lie.so3_exp(np.array([0.1, 0.2, 0.3])), np.array([1.0, 2.0, 3.0]))
T = 2.0


def _problem(group):
    """Restrict A, B to the subalgebra: the exact solution stays in the subgroup."""
    A, B = group.project(A6), group.project(B6)

    def exact(t):
        return G0 @ group.exp(t * A) @ group.exp(t * B)

    def rhs(t, g, y):
        V = group.project(lie.Ad_inv(group.exp(t * B)) @ group.embed(A)) + B
        return V, np.zeros(0), None

    return rhs, exact


def _run(group, method, N, **kw):
    rhs, exact = _problem(group)
    t_grid = np.linspace(0.0, T, N + 1)
    out = {}

    def on_sample(k, t, g, y, aux):
        out[k] = g.copy()
        return False

    stats = I.integrate(rhs, group, method, t_grid, G0, np.zeros(0), on_sample, **kw)
    assert sorted(out) == list(range(N + 1))
    err = max(np.linalg.norm(lie.se3_log(lie.se3_inv(exact(t_grid[k])) @ out[k]))
              for k in out)
    return err, stats, out


def _slopes(errs):
    errs = np.asarray(errs)
    return np.log2(errs[:-1] / errs[1:])


def test_tableaux_consistent():
    """Row sums of a equal c; order conditions up to 4 for rkmk4 and 5 for dopri5 (and 4 for
    its embedded pair); dense output reproduces b at θ = 1 and is order 4."""
    for tab in I.TABLEAUX.values():
        np.testing.assert_allclose(tab.a.sum(axis=1), tab.c, atol=1e-15)
        assert np.all(np.triu(tab.a) == 0)
    for tab, bvec, p in [(I.RKMK4, I.RKMK4.b, 4), (I.DOPRI5, I.DOPRI5.b, 5),
                         (I.DOPRI5, I.DOPRI5.b - I.DOPRI5.e, 4)]:
        a, c = tab.a, tab.c
        conds = [(bvec.sum(), 1.0), (bvec @ c, 1 / 2)]
        if p >= 3:
            conds += [(bvec @ c**2, 1 / 3), (bvec @ a @ c, 1 / 6)]
        if p >= 4:
            conds += [(bvec @ c**3, 1 / 4), (bvec @ (c * (a @ c)), 1 / 8),
                      (bvec @ a @ c**2, 1 / 12), (bvec @ a @ a @ c, 1 / 24)]
        if p >= 5:
            conds += [(bvec @ c**4, 1 / 5), (bvec @ a @ a @ a @ c, 1 / 120),
                      (bvec @ (c**2 * (a @ c)), 1 / 10), (bvec @ ((a @ c) ** 2), 1 / 20)]
        for got, want in conds:
            assert abs(got - want) < 1e-14, (tab.name, got, want)
    P = I.DOPRI5.P
    np.testing.assert_allclose(P.sum(axis=1), I.DOPRI5.b, atol=1e-14)   # θ = 1
    # dense output quadrature conditions Σ b_i(θ) c_i^{k-1} = θ^k / k for k ≤ 4 (θ = 0.37)
    th = 0.37
    w = P @ th ** np.arange(1, 5)
    for k in range(1, 5):
        assert abs(w @ I.DOPRI5.c ** (k - 1) - th**k / k) < 1e-14


@pytest.mark.parametrize("group", [SE3, SE2, SO3], ids=lambda g: g.name)
def test_orders_against_exact_solution(group):
    e1 = [_run(group, "lie_euler", N)[0] for N in (100, 200, 400)]
    e4 = [_run(group, "rkmk4", N)[0] for N in (10, 20, 40)]
    s1, s4 = _slopes(e1), _slopes(e4)
    assert np.all(np.abs(s1 - 1.0) < 0.05), (e1, s1)
    assert np.all(np.abs(s4 - 4.0) < 0.15), (e4, s4)
    assert e4[-1] < 2e-7


def test_wrong_dexp_sign_breaks_order(monkeypatch):
    """Pitfall 24 (seeds-LP §4.3): with dexp⁻¹_{+Θ} instead of dexp⁻¹_{−Θ} RKMK4 drops to
    order 2 — so the order test above can fail."""
    ok = [_run(SE3, "rkmk4", N)[0] for N in (10, 20, 40)]
    monkeypatch.setattr(I, "_dexpinv_body",
                        lambda group, Th, V: group.dexp_inv(Th) @ V if np.any(Th) else V)
    bad = [_run(SE3, "rkmk4", N)[0] for N in (10, 20, 40)]
    assert np.all(np.abs(_slopes(bad) - 2.0) < 0.2), (bad, _slopes(bad))
    assert bad[-1] > 100 * ok[-1]


def test_dopri5_meets_tolerance():
    prev = None
    for tol in (1e-5, 1e-7, 1e-9, 1e-11):
        err, stats, _ = _run(SE3, "dopri5", 8, rtol=tol, atol=tol)
        assert err < 20 * tol, (tol, err)
        if prev is not None:
            assert stats.steps > prev            # tighter tolerance -> more steps
        prev = stats.steps
        assert stats.evals <= 6 * stats.steps + 6 * stats.rejected + 1   # FSAL reuse


def test_dense_output_between_steps():
    """Samples finer than the adaptive steps come from the continuous extension (order 4)."""
    err, stats, _ = _run(SE3, "dopri5", 400, rtol=1e-10, atol=1e-10)
    assert stats.steps < 200                     # many samples per step
    assert err < 2e-9


def test_pose_stays_on_group():
    """Rotation block orthonormal and last row exact after many steps."""
    _, _, out = _run(SE3, "rkmk4", 2000)
    R = out[2000][:3, :3]
    assert np.abs(R.T @ R - np.eye(3)).max() < 1e-14
    np.testing.assert_array_equal(out[2000][3], [0, 0, 0, 1])


def test_subgroup_is_preserved():
    """An SE(2) trajectory keeps z, roll and pitch of g₀⁻¹g exactly zero."""
    _, _, out = _run(SE2, "dopri5", 20, rtol=1e-8, atol=1e-8)
    for g in out.values():
        h = lie.se3_inv(G0) @ g
        assert abs(h[2, 3]) < 1e-14 and abs(h[2, 2] - 1.0) < 1e-14


def test_coupled_vector_state_rigid_body():
    """Free rigid body (SO3): state (R, Π) with Π̇ = Π × ω, ω = J⁻¹Π.  Spatial angular momentum
    RΠ and energy are invariants; RKMK4's errors in them converge at order 4."""
    J = np.diag([1.0, 2.0, 3.5])
    Jinv = np.linalg.inv(J)

    def rhs(t, g, y):
        w = Jinv @ y
        return w, np.cross(y, w), None

    Pi0 = np.array([0.3, 2.0, 0.4])
    drifts = []
    for N in (50, 100, 200):
        out = {}

        def on_sample(k, t, g, y, aux):
            out[k] = (g.copy(), y.copy())

        I.integrate(rhs, SO3, "rkmk4", np.linspace(0, 10.0, N + 1), np.eye(4), Pi0, on_sample)
        g, Pi = out[N]
        drifts.append(np.linalg.norm(g[:3, :3] @ Pi - Pi0) + abs(Pi @ Jinv @ Pi - Pi0 @ Jinv @ Pi0))
    s = _slopes(drifts)
    assert np.all(s > 3.7), (drifts, s)


def test_on_sample_stop_and_fixed_group():
    """Returning True stops integration; the fixed base (b = 0) works with an empty algebra."""
    from vm_dynamics.core.groups import FIXED
    seen = []

    def rhs(t, g, y):
        return np.zeros(0), -y, None

    def on_sample(k, t, g, y, aux):
        seen.append((k, y[0]))
        return k == 3

    I.integrate(rhs, FIXED, "rkmk4", np.linspace(0, 1, 11), np.eye(4), np.array([1.0]), on_sample)
    assert [k for k, _ in seen] == [0, 1, 2, 3]
    r = 1 - 0.1 + 0.1**2 / 2 - 0.1**3 / 6 + 0.1**4 / 24     # RK4 amplification factor for y' = -y
    assert abs(seen[3][1] - r**3) < 1e-15
