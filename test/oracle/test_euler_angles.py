"""The classical ZYX Euler-angle model (paper 004 §5, seeds-From.md §5) against the LP model.

* Away from pitch ±90° the two are the same mechanics derived independently (Lagrange's equations
  with Christoffel symbols in coordinates vs the reduced LP equations), so their accelerations,
  energies and short simulations must agree.
* Near pitch ±90° the Euler-angle mass matrix degenerates (cond ~ 1/cos²θ), while the LP inertia
  blockdiag(M₀, M̂) depends on the joint angles only; a tumbling run through pitch 90° breaks the
  Euler-angle model and leaves the LP model's energy and momentum conserved.
"""
import numpy as np
import pytest
from scipy.linalg import block_diag
from scipy.spatial.transform import Rotation
from urdf_factory import random_tree_urdf

import vm_dynamics as vm
from vm_dynamics.analysis.euler_model import (
    EulerAngleModel,
    EulerSingularityError,
    euler_rate_matrix,
    euler_zyx,
    rotation_zyx,
    simulate_euler,
)
from vm_dynamics.core import lie
from vm_dynamics.sim.simulate import simulate

GRAVITY = (0.5, -1.0, -9.7)


def make(gravity=GRAVITY, seed=3, n=3):
    m = vm.load_model(random_tree_urdf(seed=seed, n=n), base="SE3", gravity=gravity)
    return m, EulerAngleModel(m)


def random_state(m, rng, pitch_max=1.3):
    Theta = rng.uniform(-np.pi, np.pi, 3)
    Theta[1] = rng.uniform(-pitch_max, pitch_max)
    g = lie.make_pose(rotation_zyx(Theta), rng.normal(size=3))
    return g, rng.normal(size=6), rng.uniform(-2, 2, m.n), rng.normal(size=m.n)


def _simulate_lp(m, g0, V0, q0, qd0, t_final, dt, tau=None, formulation="velocity"):
    """LP run with :func:`vm_dynamics.sim.simulate` (fixed-step RKMK4); arrays (g, V, q, qd) every dt.

    ``formulation="velocity"`` integrates (g, 𝒱, q, q̇) — the same variables as the Euler-angle
    state up to the map B — so momentum conservation is a genuine check, not built in."""
    tau = np.zeros(m.n) if tau is None else np.asarray(tau, dtype=float)
    tr = simulate(m, g0, V0, q0, qd0, t_final, dt, tau=tau, method="rkmk4", formulation=formulation)
    return tr.g, tr.V, tr.q, tr.qd


# ------------------------------------------------------------------------------ construction, maps
def test_only_se3_bases_are_accepted():
    for base in ("SE2", "SO3", "fixed"):
        m = vm.load_model(random_tree_urdf(seed=3, n=3), base=base)
        with pytest.raises(ValueError, match="SE3"):
            EulerAngleModel(m)
    _, em = make()
    with pytest.raises(ValueError, match="tau"):
        em.forward_dynamics(np.zeros(9), np.zeros(9), np.zeros(2))
    with pytest.raises(ValueError, match="x"):
        em.mass_matrix(np.zeros(8))


def test_state_maps_and_euler_rate_matrix():
    """from_lie_state ∘ to_lie_state = id; ω = T(Θ)Θ̇ is the body rate (central differences of R(Θ(t)));
    det T = cos θ; the model refuses the gimbal-lock attitude."""
    m, em = make()
    rng = np.random.default_rng(0)
    for _ in range(5):
        g, V, q, qd = random_state(m, rng)
        x, xd = em.from_lie_state(g, V, q, qd)
        g2, V2, q2, qd2 = em.to_lie_state(x, xd)
        np.testing.assert_allclose(g2, g, atol=1e-14)
        np.testing.assert_allclose(V2, V, atol=1e-13)
        np.testing.assert_allclose(q2, q, atol=0)
        np.testing.assert_allclose(qd2, qd, atol=0)
        Th, Thd = x[3:6], xd[3:6]
        np.testing.assert_allclose(euler_zyx(rotation_zyx(Th)), Th, atol=1e-13)
        h = 1e-6
        Rdot = (rotation_zyx(Th + h * Thd) - rotation_zyx(Th - h * Thd)) / (2 * h)
        np.testing.assert_allclose(lie.unskew(rotation_zyx(Th).T @ Rdot), euler_rate_matrix(Th) @ Thd,
                                   atol=1e-8)
        assert np.linalg.det(euler_rate_matrix(Th)) == pytest.approx(np.cos(Th[1]), abs=1e-14)
    gl = lie.make_pose(Rotation.from_euler("y", 90, degrees=True).as_matrix(), np.zeros(3))
    with pytest.raises(EulerSingularityError, match="pitch"):
        em.from_lie_state(gl, np.zeros(6), np.zeros(m.n), np.zeros(m.n))
    with pytest.raises(EulerSingularityError, match="pitch"):
        em.mass_matrix(np.r_[0, 0, 0, 0.3, np.pi / 2, 0.1, np.zeros(m.n)])


def test_christoffel_ingredients_match_finite_differences():
    """∂M_E/∂x (analytic in Θ, closed-form ∂M/∂q in q), ∂U/∂x and (V̇, q̈) = Ḃẋ + Bẍ against
    central differences."""
    m, em = make()
    rng = np.random.default_rng(1)
    g, V, q, qd = random_state(m, rng)
    x, xd = em.from_lie_state(g, V, q, qd)
    xdd = rng.normal(size=em.dim)
    h = 1e-6
    dME = em.mass_matrix_derivatives(x)
    gradU = em.potential_gradient(x)
    for k in range(em.dim):
        e = np.zeros(em.dim)
        e[k] = h
        fd = (em.mass_matrix(x + e) - em.mass_matrix(x - e)) / (2 * h)
        np.testing.assert_allclose(dME[k], fd, atol=1e-7 * np.abs(em.mass_matrix(x)).max())
        fdU = (em.potential_energy(x + e) - em.potential_energy(x - e)) / (2 * h)
        assert abs(gradU[k] - fdU) < 1e-6 * max(1.0, abs(fdU))
    Vd, qdd = em.to_lie_acceleration(x, xd, xdd)

    def z(t):
        xt, xdt = x + t * xd, xd + t * xdd
        return em.velocity_map(xt) @ xdt

    np.testing.assert_allclose(np.concatenate([Vd, qdd]), (z(h) - z(-h)) / (2 * h), atol=1e-7)


@pytest.mark.parametrize("gravity", [(0.0, 0.0, 0.0), GRAVITY], ids=["no_gravity", "gravity"])
@pytest.mark.parametrize("seed", [3, 11])
def test_forward_dynamics_equals_lp(gravity, seed):
    """Lagrange in (p, Θ, q) and LP in (g, V, q) give the same (V̇, q̈), energy and power balance."""
    m, em = make(gravity, seed=seed, n=4)
    rng = np.random.default_rng(seed)
    for _ in range(4):
        g, V, q, qd = random_state(m, rng)
        tau, w = rng.normal(size=m.n), rng.normal(size=6)
        x, xd = em.from_lie_state(g, V, q, qd)
        xdd = em.forward_dynamics(x, xd, tau, w)
        Vd_e, qdd_e = em.to_lie_acceleration(x, xd, xdd)
        Vd, qdd = m.forward_dynamics(g, V, q, qd, tau, w)
        scale = max(1.0, np.abs(np.concatenate([Vd, qdd])).max())
        np.testing.assert_allclose(Vd_e, Vd, atol=1e-8 * scale)
        np.testing.assert_allclose(qdd_e, qdd, atol=1e-8 * scale)
        assert em.energy(x, xd) == pytest.approx(m.energy(g, V, q, qd), rel=1e-12, abs=1e-12)
        h = 1e-6
        dE = (em.energy(x + h * xd, xd + h * xdd) - em.energy(x - h * xd, xd - h * xdd)) / (2 * h)
        power = xd @ em.velocity_map(x).T @ np.concatenate([w, tau])
        assert abs(dE - power) < 1e-6 * max(1.0, abs(power))


def test_short_simulation_agrees_with_lp_simulation():
    """1 s from the same state, RK4 (Euler angles) vs RKMK4 (LP), dt = 5 ms: same motion."""
    m, em = make()
    g0 = lie.make_pose(rotation_zyx([0.3, 0.2, -0.7]), [0.1, 0.2, 0.3])
    V0 = np.array([0.2, -0.1, 0.3, 0.4, -0.3, 0.5])
    q0, qd0, tau = np.array([0.2, -0.3, 0.4]), np.array([0.5, -0.4, 0.3]), np.array([0.3, -0.2, 0.1])
    g, V, q, qd = _simulate_lp(m, g0, V0, q0, qd0, 1.0, 5e-3, tau)
    x0, xd0 = em.from_lie_state(g0, V0, q0, qd0)
    run = simulate_euler(em, x0, xd0, 1.0, 5e-3, tau=tau)
    assert run.ok and len(run.t) == len(g) == 201
    for k in (50, 100, 200):
        gE, VE, qE, qdE = em.to_lie_state(run.x[k], run.xd[k])
        np.testing.assert_allclose(gE, g[k], atol=1e-8)
        np.testing.assert_allclose(VE, V[k], atol=1e-8)
        np.testing.assert_allclose(qE, q[k], atol=1e-8)
        np.testing.assert_allclose(qdE, qd[k], atol=1e-8)


# ------------------------------------------------------------------------------ the singularity
def test_condition_number_blows_up_at_pitch_90_but_lp_inertia_does_not():
    """cond(M_E) ≈ c / cos²θ (≥ 1e8 at 1e-4 rad from 90°); cond(blockdiag(M₀, M̂)) is independent of
    the attitude (M₀ and M̂ depend on q only) and moderate."""
    m, em = make()
    q = np.array([0.2, -0.3, 0.4])
    lp_block = block_diag(m.locked_inertia(q), m.reduced_inertia(q))
    cond_lp = np.linalg.cond(lp_block)
    scaled = []
    for eps in (1e-2, 1e-3, 1e-4, 1e-5, 1e-6):
        for sign in (1, -1):
            x = np.concatenate([[0.1, 0.2, 0.3], [0.3, sign * (np.pi / 2 - eps), -0.7], q])
            c = em.condition_number(x)
            scaled.append(c * np.cos(x[4]) ** 2)
            if eps <= 1e-4:
                assert c >= 1e8
            # the LP model at the same attitude: M₀(q), M̂(q) take no attitude; dynamics are regular
            Vd, qdd = m.forward_dynamics(em.pose(x), np.ones(6), q, np.ones(3), np.zeros(3))
            assert np.all(np.isfinite(Vd)) and np.abs(Vd).max() < 1e3
    scaled = np.array(scaled)
    assert scaled.max() / scaled.min() < 1.05          # ∝ 1/cos²θ over four decades of ε
    assert cond_lp < 1e4 and em.condition_number(np.r_[0, 0, 0, 0.3, 0.1, -0.7, q]) < 1e4


def _tumbling_setup(offset):
    """Free-floating (no gravity), spinning about the body y axis; the inertial frame is rotated
    (by left-invariance the motion is the same) so that at t = 0.3 s the body x axis points along
    inertial −z (pitch −90°, found from an LP pre-run), then tilted by ``offset`` rad."""
    m, em = make(gravity=(0.0, 0.0, 0.0))
    V0 = np.array([0.1, 0.0, 0.0, 0.0, 2.0, 0.0])
    q0, qd0 = np.array([0.2, -0.3, 0.4]), np.zeros(3)
    g_pre = _simulate_lp(m, np.eye(4), V0, q0, qd0, 0.3, 2e-3)[0][-1]
    a, b = g_pre[:3, 0], np.array([0.0, 0.0, -1.0])
    axis = np.cross(a, b)
    Q = Rotation.from_rotvec(axis / np.linalg.norm(axis) * np.arccos(np.clip(a @ b, -1, 1))).as_matrix()
    Q = Rotation.from_rotvec([offset, 0.0, 0.0]).as_matrix() @ Q
    return m, em, lie.make_pose(Q, np.zeros(3)), V0, q0, qd0


def test_tumbling_through_pitch_90_breaks_euler_angles_not_lp():
    """Passing 1e-3 rad from pitch −90°: the LP run conserves energy and momentum to ≤ 1e-9
    (relative), the Euler-angle run (same state, same step) loses energy by > 1e-3 or diverges."""
    m, em, g0, V0, q0, qd0 = _tumbling_setup(offset=1e-3)
    T, dt = 0.6, 2e-3
    g, V, q, qd = _simulate_lp(m, g0, V0, q0, qd0, T, dt, formulation="velocity")
    E0, pi0 = m.energy(g0, V0, q0, qd0), m.momentum(g0, V0, q0, qd0)
    E = np.array([m.energy(g[k], V[k], q[k], qd[k]) for k in range(len(g))])
    pi = np.array([m.momentum(g[k], V[k], q[k], qd[k]) for k in range(len(g))])
    cos_pitch = np.hypot(g[:, 2, 1], g[:, 2, 2])
    assert cos_pitch.min() < 1.5e-3                           # it really passes next to gimbal lock
    assert np.abs(E - E0).max() <= 1e-9 * abs(E0)
    assert np.abs(pi - pi0).max() <= 1e-9 * np.abs(pi0).max()

    x0, xd0 = em.from_lie_state(g0, V0, q0, qd0)
    run = simulate_euler(em, x0, xd0, T, dt)
    def energy(x, xd):      # NaN where the diverged state is beyond the model's range
        try:
            return em.energy(x, xd)
        except ValueError:
            return np.nan
    with np.errstate(all="ignore"):
        E_euler = np.array([energy(x, xd) for x, xd in zip(run.x, run.xd)])
    err = np.abs(E_euler - E0)
    broke = (not run.ok) or (not np.all(np.isfinite(err))) or err.max() > 1e-3 * abs(E0)
    assert broke, f"Euler-angle run survived: status={run.status}, max energy error {np.nanmax(err):.3g}"
    # before the crossing both agree: the failure is the singularity, not the integrator
    k = int(0.15 / dt)
    np.testing.assert_allclose(em.to_lie_state(run.x[k], run.xd[k])[0], g[k], atol=1e-8)


def test_same_tumble_away_from_gimbal_lock_is_fine_for_euler_angles():
    """Control run: the same motion with the inertial frame turned 90° about x (pitch stays far from
    ±90°) is integrated accurately by the Euler-angle model."""
    m, em, g0, V0, q0, qd0 = _tumbling_setup(offset=np.pi / 2)
    T, dt = 0.6, 2e-3
    x0, xd0 = em.from_lie_state(g0, V0, q0, qd0)
    run = simulate_euler(em, x0, xd0, T, dt)
    assert run.ok
    assert np.abs(np.cos(run.x[:, 4])).min() > 0.5
    E0 = m.energy(g0, V0, q0, qd0)
    assert max(abs(em.energy(x, xd) - E0) for x, xd in zip(run.x, run.xd)) < 1e-8 * abs(E0)
