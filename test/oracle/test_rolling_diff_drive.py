"""Differential drive on SE(2) (vm_dynamics.constraints.differential_drive) against the
textbook unicycle and against the physics of ideal constraints.

* No arm, CoM on the axle, constant wheel torques: the closed-form unicycle motion
  (v = v₀ + a t, ω = ω₀ + α t, position by Fresnel integrals).
* No arm, CoM a distance d ahead of the axle: the Newton–Euler unicycle
  ``m_v v̇ − m d ω² = F``, ``I_ω ω̇ + m d v ω = T`` (DOP853, rtol 1e-13).  Here the curvature
  term of 002 (4.9) is non-zero; the printed sign of (4.9) fails this test.
* With the arm of urdf/diff_drive_arm.urdf: the constraint forces do no work — the energy
  balance E(t) − E(0) = ∫ τ·ṙ dt holds to the integrator's order (4: the error falls 16× per
  halving of the step), and the lateral body velocity is zero to round-off.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.special import fresnel

from vm_dynamics.constraints import HamelSystem, KinematicConnection, differential_drive, simulate_constrained
from vm_dynamics.model import load_model

ROOT = Path(__file__).resolve().parents[2]
RHO, B, J, K = 0.1, 0.25, 0.005, 0.0026333333333333333    # wheel radius, half track, inertias
M_CH, IZZ_CH, M_W = 20.0, 0.86666666666666667, 1.0


def diff_drive_urdf(d: float) -> str:
    """urdf/diff_drive.urdf with the chassis CoM moved to x = d."""
    text = (ROOT / "urdf" / "diff_drive.urdf").read_text()
    return text.replace('<origin xyz="0 0 0.1" rpy="0 0 0"/>\n      <mass value="20.0"/>',
                        f'<origin xyz="{d!r} 0 0.1" rpy="0 0 0"/>\n      <mass value="20.0"/>')


def unicycle_parameters(d: float):
    """(m, d_t, m_v, I_ω): total mass, total CoM ahead of the axle, and the effective
    translational and yaw inertias (wheel spin J included) from the URDF's numbers."""
    m = M_CH + 2 * M_W
    dt = M_CH * d / m
    Ic = IZZ_CH + M_CH * (d - dt) ** 2 + 2 * (K + M_W * (B ** 2 + dt ** 2))
    return m, dt, m + 2 * J / RHO ** 2, Ic + m * dt ** 2 + 2 * J * B ** 2 / RHO ** 2


def pose_xy_theta(g):
    return np.column_stack([g[:, 0, 3], g[:, 1, 3], np.unwrap(np.arctan2(g[:, 1, 0], g[:, 0, 0]))])


def closed_form(t, v0, w0, a, alpha):
    """x + iy = ∫₀ᵗ (v₀ + a s) exp(i(ω₀ s + ½αs²)) ds for α > 0 (θ₀ = 0, from the origin)."""
    u0, u1 = w0 / alpha, t + w0 / alpha
    c = -w0 ** 2 / (2 * alpha)
    beta = v0 - a * w0 / alpha
    sc = np.sqrt(np.pi / alpha)
    S1, C1 = fresnel(u1 / sc)
    S0, C0 = fresnel(u0 / sc)
    z = beta * np.exp(1j * c) * sc * ((C1 - C0) + 1j * (S1 - S0))
    z += a / (1j * alpha) * (np.exp(1j * (c + 0.5 * alpha * u1 ** 2))
                             - np.exp(1j * (c + 0.5 * alpha * u0 ** 2)))
    return np.column_stack([z.real, z.imag, w0 * t + 0.5 * alpha * t ** 2])


def run(system, t, rd0, tau, substeps):
    n = system.d
    Q = np.zeros(n)
    Q[:2] = tau
    return simulate_constrained(system, t, np.eye(4), np.zeros(n), rd0, method="rkmk4",
                                substeps=substeps, forces=lambda tt, g, r, rd: (None, Q))


def test_unicycle_under_constant_wheel_torques_matches_the_closed_form():
    """CoM on the axle: pose and wheel angles agree with the Fresnel closed form to ≤ 1e-9
    over 5 s (RKMK4, h = 5 ms)."""
    system = differential_drive(load_model(ROOT / "urdf" / "diff_drive.urdf", base="SE2"),
                                RHO, 2 * B)
    assert system.constant
    tau = np.array([0.3, 0.5])
    m, _, mv, Iw = unicycle_parameters(0.0)
    a, alpha = (tau[0] + tau[1]) / RHO / mv, B * (tau[1] - tau[0]) / RHO / Iw
    v0, w0 = 0.4, 0.3
    rd0 = system.wheel_speeds(v0, w0)
    t = np.linspace(0.0, 5.0, 51)
    tr = run(system, t, rd0, tau, substeps=20)
    err = np.max(np.abs(pose_xy_theta(tr.g) - closed_form(t, v0, w0, a, alpha)))
    assert err <= 1e-9, err
    v, w = v0 + a * t, w0 + alpha * t
    assert np.max(np.abs(tr.V - np.column_stack([v, 0 * t, w]))) <= 1e-12
    phi = np.column_stack([(v0 - B * w0) * t + 0.5 * (a - B * alpha) * t ** 2,
                           (v0 + B * w0) * t + 0.5 * (a + B * alpha) * t ** 2]) / RHO
    assert np.max(np.abs(tr.r - phi)) <= 1e-9


def newton_euler_unicycle(d, tau, v0, w0, t):
    m, dt, mv, Iw = unicycle_parameters(d)
    F, T = (tau[0] + tau[1]) / RHO, B * (tau[1] - tau[0]) / RHO

    def rhs(_, s):
        th, v, w = s[2], s[3], s[4]
        return [v * np.cos(th), v * np.sin(th), w, (F + m * dt * w * w) / mv,
                (T - m * dt * v * w) / Iw, (v - B * w) / RHO, (v + B * w) / RHO]
    sol = solve_ivp(rhs, (t[0], t[-1]), [0, 0, 0, v0, w0, 0, 0], method="DOP853", t_eval=t,
                    rtol=1e-13, atol=1e-14)
    assert sol.success
    return sol.y.T


def printed_sign_system(system):
    """The same system with 002 (4.9) as printed: the curvature term on the right-hand side
    with a + sign (equivalently, ℬ → −ℬ on the left)."""
    conn = system.connection
    flipped = KinematicConnection(conn.group, conn.d, conn.A, None, conn.trivialisation)
    flipped.curvature = lambda r: -conn.curvature(r)
    return HamelSystem(flipped, system.lagrangian)


@pytest.mark.parametrize("printed", [False, True], ids=["corrected_4_9", "printed_4_9"])
def test_offset_com_unicycle_matches_newton_euler_and_discriminates_the_4_9_sign(printed):
    """CoM 0.2 m ahead of the axle: the curvature force of (4.9) is non-zero.  The corrected
    equations agree with the Newton–Euler unicycle to ≤ 1e-9 over 4 s; the printed sign is
    off by more than 1e-2."""
    d = 0.2
    system = differential_drive(load_model(diff_drive_urdf(d), base="SE2"), RHO, 2 * B)
    if printed:
        system = printed_sign_system(system)
    tau = np.array([0.6, -0.2])
    v0, w0 = 0.5, 0.8
    t = np.linspace(0.0, 4.0, 41)
    rd0 = np.array([(v0 - B * w0) / RHO, (v0 + B * w0) / RHO])
    tr = run(system, t, rd0, tau, substeps=20)
    ref = newton_euler_unicycle(d, tau, v0, w0, t)
    err = max(np.max(np.abs(pose_xy_theta(tr.g) - ref[:, :3])),
              np.max(np.abs(tr.r - ref[:, 5:7])))
    curv = np.abs(system.terms(tr.r[10], tr.rd[10]).curvature)
    assert np.max(curv) > 1e-2                 # the term under test is not negligible
    if printed:
        assert err > 1e-2, err
    else:
        assert err <= 1e-9, err


def arm_run(substeps, tau_wheels=(0.4, -0.1), t_end=1.0):
    model = load_model(ROOT / "urdf" / "diff_drive_arm.urdf", base="SE2")
    system = differential_drive(model, RHO, 2 * B)
    t = np.linspace(0.0, t_end, 11)
    rd0 = np.concatenate([system.wheel_speeds(0.3, 0.5), [0.8, -0.6]])
    n = system.d
    Q = np.zeros(n)
    Q[:2] = tau_wheels
    tr = simulate_constrained(system, t, np.eye(4), np.array([0, 0, 0.2, 0.4]), rd0,
                              method="rkmk4", substeps=substeps,
                              forces=lambda tt, g, r, rd: (None, Q))
    return system, tr


def test_arm_on_wheels_energy_balance_is_exact_to_the_integrator_order():
    """Wheel torques, arm swinging under gravity: E(t) − E(0) − ∫τ·ṙ dt → 0 as h⁴ (ratio ≥ 12
    per halving; ≤ 1e-7 relative at h = 2.5 ms) — the constraint forces do no work; the lateral
    body velocity is zero to round-off (≤ 1e-15) and the connection's residual u = ξ + 𝒜ṙ too."""
    errs = []
    for sub in (20, 40):
        system, tr = arm_run(sub)
        balance = tr.energy - tr.energy[0] - tr.work
        errs.append(np.max(np.abs(balance)))
    scale = np.max(np.abs(tr.energy)) + np.max(np.abs(tr.work))
    assert errs[0] / errs[1] >= 12.0, errs
    assert errs[1] <= 1e-7 * scale, errs
    assert np.max(np.abs(tr.V[:, 1])) <= 1e-15
    res = max(np.max(np.abs(system.connection.constraint_residual(tr.g[k], tr.V[k], tr.r[k],
                                                                  tr.rd[k])))
              for k in range(len(tr.t)))
    assert res <= 1e-15
    assert np.max(np.abs(np.diff(tr.r[:, 2:], axis=0))) > 1e-2        # the arm did move


def test_fast_path_equals_the_reference_hamel_equations_with_the_arm():
    """The compiled path (CRBA mass matrix + RNEA bias projected on ν = Hṙ) gives the same r̈ as
    the reference terms of the corrected (4.9) (lp inertia derivatives + curvature) to ≤ 1e-10
    relative at random states with fiber and shape forces, and the same ∂U/∂r (≤ 1e-12)."""
    model = load_model(ROOT / "urdf" / "diff_drive_arm.urdf", base="SE2")
    system = differential_drive(model, RHO, 2 * B)
    assert system.fast is not None and not system.constant
    rng = np.random.default_rng(7)
    for _ in range(5):
        r, rd = rng.uniform(-2, 2, 4), rng.uniform(-5, 5, 4)
        Qx, Qr = rng.uniform(-3, 3, 3), rng.uniform(-3, 3, 4)
        ref = HamelSystem.accelerations(system, r, rd, Q_fiber=Qx, Q_shape=Qr)
        fast = system.accelerations(r, rd, Q_fiber=Qx, Q_shape=Qr)
        assert np.max(np.abs(fast - ref)) <= 1e-10 * (1.0 + np.max(np.abs(ref))), (fast, ref)
        dU = HamelSystem.potential_gradient(system, r)
        assert np.max(np.abs(system.potential_gradient(r) - dU)) <= 1e-12 * (1 + np.max(np.abs(dU)))
    assert np.max(np.abs(HamelSystem.potential_gradient(system, r))) > 1e-2    # gravity acts


def test_the_node_stepper_equals_simulate_constrained_with_the_arm():
    """ConstrainedStepper (the node's integrator: SE(2) closed forms, compiled Hamel terms) and
    simulate_constrained (generic group maps) take the same RKMK4 steps: pose and shape agree
    to ≤ 1e-11 after 0.5 s at h = 5 ms with wheel torques and the arm swinging."""
    from vm_dynamics.constraints.drive import ConstrainedStepper
    system, tr = arm_run(10, t_end=0.5)        # 10 steps per 0.05 s sample interval
    Q = np.zeros(4)
    Q[:2] = (0.4, -0.1)
    rd0 = np.concatenate([system.wheel_speeds(0.3, 0.5), [0.8, -0.6]])
    st = ConstrainedStepper(system, np.eye(4), np.array([0, 0, 0.2, 0.4]), rd0,
                            forces=lambda tt, g, r, rd: (None, Q))
    for _ in range(100):
        st.step(0.005)
    assert np.max(np.abs(st.g - tr.g[-1])) <= 1e-11
    assert np.max(np.abs(st.y - np.concatenate([tr.r[-1], tr.rd[-1]]))) <= 1e-11
    assert np.linalg.norm(st.g[:2, 3]) > 0.05          # the base did move
