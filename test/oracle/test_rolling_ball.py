"""The rolling ball of paper 002 §4(d) (vm_dynamics.constraints) against an independent oracle.

Oracle: Lagrange–d'Alembert with multipliers, written from the physics and not from paper 002 —
the Newton–Euler equations of the ball (centre of mass, body angular velocity, unit quaternion
x,y,z,w) with the contact force F (3 multipliers: no slip, no lift-off) and the vertical torque μ
(no spin) as unknowns, solved with the differentiated velocity constraints at every evaluation
and integrated by scipy's DOP853 at rtol 1e-13.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from vm_dynamics.constraints import ball_connection_matrix, rolling_ball, simulate_constrained
from vm_dynamics.core.lie import so3_exp
from vm_dynamics.core.rotations import matrix_from_quat, quat_from_matrix

E3 = np.array([0.0, 0.0, 1.0])


def skew(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def oracle_rhs(radius, mass, incline, gravity):
    """Newton–Euler + multipliers.  State: centre c (3), its velocity v (3), quaternion q
    (x,y,z,w), body angular velocity Ω (3); plane coordinates (axis 1 down the slope)."""
    rho = radius * E3
    theta = 0.4 * mass * radius ** 2 * np.eye(3)
    a_g = gravity * np.array([np.sin(incline), 0.0, -np.cos(incline)])

    def rhs(t, s):
        v, q, W = s[3:6], s[6:10], s[10:13]
        R = matrix_from_quat(q / np.linalg.norm(q))
        K = np.zeros((10, 10))   # unknowns: v̇ (3), Ω̇ (3), F (3), μ
        b = np.zeros(10)
        K[0:3, 0:3] = mass * np.eye(3)
        K[0:3, 6:9] = -np.eye(3)
        b[0:3] = mass * a_g
        K[3:6, 3:6] = theta                   # torque of F at the contact point: (−ρ) × F
        K[3:6, 6:9] = R.T @ skew(rho)
        K[3:6, 9] = -R.T @ E3
        b[3:6] = -np.cross(W, theta @ W)
        K[6:9, 0:3] = np.eye(3)               # d/dt (v − ω × ρ) = 0, ω = RΩ, ω̇ = RΩ̇
        K[6:9, 3:6] = skew(rho) @ R
        K[9, 3:6] = E3 @ R                    # d/dt (e₃·ω) = 0
        x = np.linalg.solve(K, b)
        qv, qw = q[:3], q[3]
        qd = 0.5 * np.concatenate([qw * W + np.cross(qv, W), [-qv @ W]])
        return np.concatenate([v, x[0:3], qd, x[3:6]])
    return rhs


def oracle(radius, mass, incline, gravity, r0, rd0, R0, t):
    """Oracle trajectory on the grid t: (centre (N,3), R (N,3,3), constraint residual (N,4))."""
    omega = physical_omega(radius, rd0)
    c0 = np.array([r0[0], r0[1], radius])
    v0 = np.array([rd0[0], rd0[1], 0.0])
    s0 = np.concatenate([c0, v0, quat_from_matrix(R0), R0.T @ omega])
    sol = solve_ivp(oracle_rhs(radius, mass, incline, gravity), (t[0], t[-1]), s0,
                    method="DOP853", t_eval=t, rtol=1e-13, atol=1e-14)
    assert sol.success, sol.message
    S = sol.y.T
    Rs = np.array([matrix_from_quat(s[6:10] / np.linalg.norm(s[6:10])) for s in S])
    w = np.einsum("kij,kj->ki", Rs, S[:, 10:13])
    res = np.concatenate([S[:, 3:6] - np.cross(w, radius * E3), w[:, 2:3]], axis=1)
    return S[:, 0:3], Rs, res


def physical_omega(radius, rd):
    """ω of the no-slip, no-spin ball from the physics: ṗ = ω × ρ, ω₃ = 0 (the test's own
    formula, independent of the library's connection)."""
    return np.array([-rd[1] / radius, rd[0] / radius, 0.0])


def library(radius, mass, incline, gravity, r0, rd0, R0, t, substeps):
    ball = rolling_ball(radius, mass, incline, gravity)
    g0 = np.eye(4)
    g0[:3, :3] = R0
    return ball, simulate_constrained(ball, t, g0, r0, rd0, method="rkmk4", substeps=substeps)


R0 = matrix_from_quat(np.array([0.3, -0.2, 0.5, 0.8]) / np.linalg.norm([0.3, -0.2, 0.5, 0.8]))


@pytest.mark.parametrize("incline,rd0", [(0.0, (0.7, -0.4)), (0.3, (0.2, 0.9))],
                         ids=["level", "inclined_lateral"])
def test_rolling_ball_agrees_with_lagrange_dalembert_oracle(incline, rd0):
    """Centre and orientation of the Hamel/reconstruction solution (RKMK4, h = 1 ms) agree with
    the multiplier oracle (DOP853, rtol 1e-13) to ≤ 1e-9 over 5 s; on the incline the ball is
    launched across the slope, so ω turns and the reconstruction on SO(3) is non-commutative."""
    radius, mass, grav = 0.5, 2.0, 9.81
    t = np.linspace(0.0, 5.0, 26)
    r0 = np.array([0.1, -0.3])
    ball, tr = library(radius, mass, incline, grav, r0, np.array(rd0), R0, t, substeps=200)
    c_or, R_or, res = oracle(radius, mass, incline, grav, r0, np.array(rd0), R0, t)
    err_c = np.max(np.abs(np.column_stack([tr.r, np.full(len(t), radius)]) - c_or))
    err_R = np.max(np.abs(tr.g[:, :3, :3] - R_or))
    assert err_c <= 1e-9, err_c
    assert err_R <= 1e-9, err_R
    assert np.max(np.abs(res)) <= 1e-9       # the oracle itself respects the constraints


def test_paper_printed_connection_sign_rolls_the_ball_backwards():
    """002 (4.12) as printed (𝒜²₄ = −𝒜¹₅ = +1/R) violates its own rolling condition
    ṗ + ρ~ω = 0; the corrected connection satisfies it."""
    radius = 0.2
    rd = np.array([0.3, -0.8])
    rho = radius * E3
    printed = np.zeros((3, 2))
    printed[1, 0], printed[0, 1] = 1.0 / radius, -1.0 / radius
    for A, ok in ((ball_connection_matrix(radius), True), (printed, False)):
        omega = -A @ rd
        res = np.concatenate([rd, [0.0]]) + np.cross(rho, omega)
        assert (np.max(np.abs(res)) <= 1e-15) == ok


def test_rolling_ball_curvature_is_4_13_and_its_force_vanishes():
    """ℬ³₅₄ = −ℬ³₄₅ = 1/R² (002 (4.13)); all other components zero.  The curvature force of
    (4.9) is πᵀℬṙ with π₃ = 0, hence zero; the constrained inertia is (7/5) m (corrected
    (4.15))."""
    ball = rolling_ball(0.25, 3.0)
    B = ball.connection.curvature([0.4, -1.0])
    expect = np.zeros((2, 2, 3))
    expect[1, 0, 2], expect[0, 1, 2] = 1 / 0.25 ** 2, -1 / 0.25 ** 2
    assert np.allclose(B, expect, rtol=0, atol=1e-12)
    terms = ball.terms([0.4, -1.0], [1.3, 0.7])
    assert np.max(np.abs(terms.curvature)) == 0.0
    assert np.allclose(terms.Mc, 1.4 * 3.0 * np.eye(2), rtol=1e-15, atol=0)


def test_straight_rolling_and_constraints_over_100_s():
    """Level plane: straight rolling at constant speed, R(t) = exp(t ω~) R₀ with
    ω = (−ṗ₂, ṗ₁, 0)/R_b; the rolling and no-spin constraints (evaluated from the recorded
    body velocity with the physical formula ṗ + ρ × ω, ω₃) stay ≤ 1e-12 over 100 s, and the
    energy is constant to round-off."""
    radius, rd0 = 0.3, np.array([0.6, 0.25])
    t = np.linspace(0.0, 100.0, 1001)
    ball, tr = library(radius, 1.5, 0.0, 9.81, np.zeros(2), rd0, R0, t, substeps=5)
    assert np.max(np.abs(tr.r - rd0 * t[:, None])) <= 1e-13 * 60.0    # round-off of 10⁴ steps
    w = physical_omega(radius, rd0)
    err_R = max(np.max(np.abs(tr.g[k, :3, :3] - so3_exp(w * tk) @ R0)) for k, tk in enumerate(t))
    assert err_R <= 1e-10, err_R
    omega = np.einsum("kij,kj->ki", tr.g[:, :3, :3], tr.V)
    rdot3 = np.column_stack([tr.rd, np.zeros(len(t))])
    res = np.concatenate([rdot3 + np.cross(radius * E3, omega), omega[:, 2:3]], axis=1)
    assert np.max(np.abs(res)) <= 1e-12, np.max(np.abs(res))
    assert np.max(np.abs(tr.energy - tr.energy[0])) <= 1e-12 * tr.energy[0]


def test_inclined_plane_acceleration_is_five_sevenths_g_sin_alpha_over_100_s():
    """Inclined plane (α = 0.05 rad), launched across the slope: r(t) = r₀ + ṙ₀t + ½(5/7)g sinα
    t² e₁; constraints ≤ 1e-12 and energy (kinetic + potential) conserved to round-off over
    100 s (the shape solution is a quadratic polynomial, which RK4 integrates exactly)."""
    radius, alpha, grav = 1.0, 0.05, 9.81
    rd0 = np.array([-0.5, 0.4])
    t = np.linspace(0.0, 100.0, 1001)
    ball, tr = library(radius, 1.5, alpha, grav, np.zeros(2), rd0, R0, t, substeps=5)
    a = 5.0 / 7.0 * grav * np.sin(alpha)
    expect = rd0 * t[:, None] + np.outer(0.5 * a * t ** 2, [1.0, 0.0])
    assert np.max(np.abs(tr.r - expect)) <= 1e-9 * np.max(np.abs(expect))
    omega = np.einsum("kij,kj->ki", tr.g[:, :3, :3], tr.V)
    rdot3 = np.column_stack([tr.rd, np.zeros(len(t))])
    res = np.concatenate([rdot3 + np.cross(radius * E3, omega), omega[:, 2:3]], axis=1)
    assert np.max(np.abs(res)) <= 1e-12 * max(1.0, np.max(np.abs(omega))), np.max(np.abs(res))
    scale = np.max(np.abs(0.5 * 1.4 * 1.5 * np.sum(tr.rd ** 2, axis=1)))
    assert np.max(np.abs(tr.energy - tr.energy[0])) <= 1e-12 * scale
