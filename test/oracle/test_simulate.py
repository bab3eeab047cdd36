"""vm.simulate: conservation laws, convergence orders, an independent Pinocchio + scipy
integration, prescribed motion, inputs and bookkeeping.

Main robot: urdf/spacecraft_arm.urdf.xacro (808 kg servicer bus + 7-DoF 89 kg arm, SE(3) base).
The independent oracle is Pinocchio's ABA (test/oracles.py) integrated by scipy's DOP853 on the
free-flyer state with a unit quaternion — it shares nothing with vm_dynamics but the URDF.
"""
from __future__ import annotations

import os

import numpy as np
import oracles
import pinocchio as pin
import pytest
from conftest import robot_xml
from scipy.integrate import solve_ivp

import vm_dynamics as vm
from vm_dynamics.core import lie
from vm_dynamics.sim.simulate import FORMULATIONS

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # test/
SPACECRAFT = os.path.join(os.path.dirname(HERE), "urdf", "spacecraft_arm.urdf.xacro")
ROVER = os.path.join(os.path.dirname(HERE), "urdf", "planar_rover.urdf")

Q0 = np.array([0.3, -0.6, 0.4, 1.2, -0.5, 0.8, 0.2])
QD0 = np.array([0.4, -0.3, 0.5, 0.6, -0.7, 0.5, 0.9])
V0 = np.array([0.02, -0.01, 0.03, 0.01, -0.02, 0.015])
G0 = lie.make_pose(lie.so3_exp(np.array([0.3, -0.2, 0.5])), np.array([10.0, -5.0, 2.0]))


@pytest.fixture(scope="module")
def xml():
    import xacro
    return xacro.process_file(SPACECRAFT).toxml()


@pytest.fixture(scope="module")
def free(xml):
    return vm.load_model(xml, gravity=(0.0, 0.0, 0.0))


def _rot_err(R):
    return np.abs(np.einsum("kji,kjl->kil", R, R) - np.eye(3)).max()


def _state_err(a, b):
    """Pose distance ‖log(g_b⁻¹g_a)‖ and joint errors at the last sample."""
    return max(np.linalg.norm(lie.se3_log(lie.se3_inv(b.g[-1]) @ a.g[-1])),
               np.abs(a.q[-1] - b.q[-1]).max(), 0.2 * np.abs(a.qd[-1] - b.qd[-1]).max())


# ------------------------------------------------------------------ acceptance figure (1)
def test_free_floating_10s_conservation(free):
    """No gravity, no inputs, 10 s at dt = 1 ms with rkmk4: momentum and energy conserved to a
    relative 1e-10, RᵀR = I to 1e-12 (at every 5th sample, and the last)."""
    tr = vm.simulate(free, G0, V0, Q0, QD0, 10.0, 1e-3)
    assert tr.t.shape == (10001,) and tr.g.shape == (10001, 4, 4) and tr.steps == 10000
    assert tr.V.shape == (10001, 6) and tr.q.shape == tr.qd.shape == tr.tau.shape == (10001, 7)
    np.testing.assert_allclose(tr.t[[0, 1, 5000, -1]], [0.0, 1e-3, 5.0, 10.0], rtol=0, atol=1e-12)
    sub = tr[np.r_[0:10001:5, 10000]]
    E, P = sub.energy(free), sub.momentum(free)
    dE = np.abs(E - E[0]).max() / abs(E[0])
    dP = np.abs(P - P[0]).max() / np.abs(P[0]).max()
    assert dE < 1e-10, dE
    assert dP < 1e-10, dP
    assert _rot_err(tr.g[:, :3, :3]) < 1e-12
    assert np.ptp(tr.q[:, 3]) > 1.0            # the arm really moved (≈ 6 rad of joint 4 ...)
    print(f"\n10 s free-floating: dE={dE:.2e} dP={dP:.2e} RtR={_rot_err(tr.g[:, :3, :3]):.1e} "
          f"wall={tr.wall_time:.1f}s")


@pytest.mark.parametrize("formulation", ["body_momentum", "velocity"])
def test_other_formulations_conserve(free, formulation):
    """The body-momentum and velocity states conserve the inertial momentum only to truncation
    error (the default spatial-momentum state does so exactly); still 1e-10 at dt = 2 ms."""
    tr = vm.simulate(free, G0, V0, Q0, QD0, 0.5, 2e-3, formulation=formulation)
    E, P = tr[::25].energy(free), tr[::25].momentum(free)
    assert np.abs(E - E[0]).max() / abs(E[0]) < 1e-10
    assert np.abs(P - P[0]).max() / np.abs(P[0]).max() < 1e-10
    ref = vm.simulate(free, G0, V0, Q0, QD0, 0.5, 2e-3)
    assert _state_err(tr, ref) < 1e-9


# ------------------------------------------------------------------ acceptance figure (2)
def test_convergence_orders(free):
    """Error vs dt against a dopri5 reference (rtol 1e-12): slopes ≈ 1 (lie_euler) and ≈ 4
    (rkmk4); dopri5's global error stays within 10·rtol."""
    qd0, V0b = 0.5 * np.array([1.0, -0.8, 1.2, 1.5, -1.4, 1.1, 2.0]), 0.5 * np.array(
        [0.2, -0.1, 0.3, 0.3, -0.4, 0.5])
    T = 0.5
    ref = vm.simulate(free, G0, V0b, Q0, qd0, T, T / 4, method="dopri5", rtol=1e-12, atol=1e-14)
    e4 = [_state_err(vm.simulate(free, G0, V0b, Q0, qd0, T, dt), ref) for dt in (0.02, 0.01, 0.005)]
    e1 = [_state_err(vm.simulate(free, G0, V0b, Q0, qd0, T, dt, method="lie_euler"), ref)
          for dt in (0.004, 0.002, 0.001)]
    s4, s1 = np.log2(np.divide(e4[:-1], e4[1:])), np.log2(np.divide(e1[:-1], e1[1:]))
    print(f"\nrkmk4 errors {e4} slopes {s4}\nlie_euler errors {e1} slopes {s1}")
    assert np.all(np.abs(s4 - 4.0) < 0.3), (e4, s4)
    assert np.all(np.abs(s1 - 1.0) < 0.1), (e1, s1)
    for tol in (1e-7, 1e-9):
        tr = vm.simulate(free, G0, V0b, Q0, qd0, T, T / 4, method="dopri5", rtol=tol, atol=tol)
        err = _state_err(tr, ref)
        print(f"dopri5 rtol={tol:g}: error {err:.2e}, {tr.steps} steps, {tr.rejected_steps} rejected")
        assert err < 10 * tol


def _quat_R(x):
    x = x / np.linalg.norm(x)
    return pin.Quaternion(x[3], x[0], x[1], x[2]).toRotationMatrix()


def test_against_pinocchio_dop853(xml):
    """Gravity, PD joint torques (callable), a time-varying base wrench (callable) and an
    end-effector wrench; 1 s.  Pinocchio ABA + DOP853 (rtol 1e-12) on the free-flyer state
    [p, quaternion, q, V, qd] vs rkmk4 (dt 2 ms) and dopri5 (rtol 1e-10): final pose, joints
    and velocities agree to 1e-8."""
    grav = (0.3, -0.2, -9.81)
    model = vm.load_model(xml, gravity=grav)
    orc = oracles.PinocchioOracle(xml, base="SE3", gravity=grav, joint_names=model.joint_names)
    n = model.n
    qref = np.array([0.5, -0.2, 0.1, 0.9, 0.0, 0.4, -0.3])
    Kp, Kd = np.diag(np.linspace(20, 5, n)), np.diag(np.linspace(4, 1, n))
    fw = {"ee_link": np.array([1.0, -2.0, 0.5, 0.1, 0.2, -0.3])}

    def tau_fn(t, q, qd):
        return Kp @ (qref - q) - Kd @ qd + 5 * np.sin(3 * t)

    def bw_fn(t):
        return np.array([10 * np.cos(t), 5.0, -3.0, 1.0, np.sin(2 * t), -0.5])

    def f(t, x):
        p, qu, q, V, qd = x[:3], x[3:7], x[7:7 + n], x[7 + n:13 + n], x[13 + n:]
        g = lie.make_pose(_quat_R(qu), p)
        Vd, qdd = orc.aba(g, V, q, qd, tau_fn(t, q, qd), bw_fn(t), fw)
        w, qv, qw = V[3:], qu[:3], qu[3]
        dquat = np.r_[0.5 * (qw * w + np.cross(qv, w)), -0.5 * qv @ w]
        return np.r_[g[:3, :3] @ V[:3], dquat, qd, Vd, qdd]

    g0 = lie.make_pose(lie.so3_exp(np.array([0.3, -0.2, 0.5])), np.array([1.0, -0.5, 0.2]))
    Q = pin.Quaternion(g0[:3, :3])
    x0 = np.r_[g0[:3, 3], Q.x, Q.y, Q.z, Q.w, Q0, V0, QD0]
    sol = solve_ivp(f, (0.0, 1.0), x0, method="DOP853", rtol=1e-12, atol=1e-12)
    xe = sol.y[:, -1]
    gE = lie.make_pose(_quat_R(xe[3:7]), xe[:3])

    for method, dt, kw in (("rkmk4", 2e-3, {}), ("dopri5", 0.05, dict(rtol=1e-10, atol=1e-12))):
        tr = vm.simulate(model, g0, V0, Q0, QD0, 1.0, dt, method=method,
                         tau=lambda t, s: tau_fn(t, s.q, s.qd),
                         base_wrench=lambda t, s: bw_fn(t), frame_wrenches=fw, **kw)
        errs = dict(pose=np.abs(tr.g[-1] - gE).max(), q=np.abs(tr.q[-1] - xe[7:7 + n]).max(),
                    V=np.abs(tr.V[-1] - xe[7 + n:13 + n]).max(),
                    qd=np.abs(tr.qd[-1] - xe[13 + n:]).max())
        print(f"\n{method}: " + ", ".join(f"{k} {v:.1e}" for k, v in errs.items()))
        assert max(errs.values()) < 1e-8, (method, errs)
        # the recorded inputs are the ones applied at the samples
        k = len(tr.t) // 2
        np.testing.assert_allclose(tr.tau[k], tau_fn(tr.t[k], tr.q[k], tr.qd[k]), rtol=0, atol=1e-12)
        np.testing.assert_allclose(tr.base_wrench[k], bw_fn(tr.t[k]), rtol=0, atol=1e-12)
    assert np.abs(gE[:3, 3] - g0[:3, 3]).max() > 4.0      # it fell ~4.9 m: not a trivial run


# ------------------------------------------------------------------ formulations / pluggable dynamics
def test_pluggable_dynamics(free):
    """A user dynamics function with Model.forward_dynamics' signature gives the same result
    as the built-in LP path, in every formulation; it is actually called."""
    calls = [0]

    def dyn(g, V, q, qd, tau, base_wrench=None, frame_wrenches=None):
        calls[0] += 1
        return free.forward_dynamics(g, V, q, qd, tau, base_wrench, frame_wrenches)

    tau = np.linspace(-1, 1, 7)
    for form in FORMULATIONS:
        a = vm.simulate(free, G0, V0, Q0, QD0, 0.1, 0.01, tau=tau, base_wrench=np.ones(6),
                        formulation=form)
        calls[0] = 0
        b = vm.simulate(free, G0, V0, Q0, QD0, 0.1, 0.01, tau=tau, base_wrench=np.ones(6),
                        formulation=form, dynamics=dyn)
        assert calls[0] == b.evaluations == 40          # 10 steps × 4 stages
        assert _state_err(a, b) < 1e-13
        np.testing.assert_allclose(a.V, b.V, rtol=0, atol=1e-13)


def test_gravity_changes_linear_momentum(free, xml):
    """Uniform gravity on an SE(3) base: dπ_lin/dt = m_tot·a exactly (integrated exactly by the
    spatial-momentum state); no other input."""
    grav = np.array([0.0, 1.0, -3.0])
    model = vm.load_model(xml, gravity=grav)
    tr = vm.simulate(model, G0, V0, Q0, QD0, 0.5, 0.01)
    P = tr.momentum(model)
    expect = P[0, :3] + np.outer(tr.t, model.total_mass * grav)
    np.testing.assert_allclose(P[:, :3], expect, rtol=0, atol=1e-9 * np.abs(expect).max())
    E = tr.energy(model)
    assert np.abs(E - E[0]).max() / np.abs(E).max() < 1e-9


# ------------------------------------------------------------------ other bases
def test_planar_rover_se2():
    """SE(2) base with vertical gravity: energy and the planar momentum (f_x, f_y, n_z) are
    conserved; the pose stays in the plane of g0.  (The light arm swings up to ~13 rad/s under
    gravity; the energy error is rkmk4's O(dt⁴) truncation error: 1.1e-5 J at dt = 5 ms,
    6.9e-7 J at 2.5 ms over 2 s.)"""
    model = vm.load_model(ROVER, base="SE2")
    g0 = lie.make_pose(lie.so3_exp(np.array([0, 0, 0.7])), np.array([1.0, 2.0, 0.3]))
    tr = vm.simulate(model, g0, [0.5, -0.2, 0.8], [0.3, -0.4], [1.0, -1.5], 1.0, 2e-3)
    E, P = tr[::5].energy(model), tr[::5].momentum(model)
    assert np.abs(E - E[0]).max() / abs(E[0]) < 1e-9
    np.testing.assert_allclose(P[:, [0, 1, 5]], P[[0]][:, [0, 1, 5]].repeat(len(P), 0), rtol=0,
                               atol=1e-11 * np.abs(P[0]).max())
    np.testing.assert_allclose(tr.g[:, 2, 3], 0.3, atol=1e-14)
    np.testing.assert_allclose(tr.g[:, 2, 2], 1.0, atol=1e-14)


@pytest.mark.parametrize("base", ["SO3", "fixed"])
def test_ur5_restricted_bases_energy(base):
    """A UR5 (example-robot-data) on a spherical joint / fixed, falling under gravity (wrist up
    to ~20 rad/s): the energy error is rkmk4's truncation error — it shrinks 16× when dt is
    halved; for SO3 the angular momentum about the pivot along gravity is conserved exactly."""
    model = vm.load_model(robot_xml("ur5"), base=base)
    rng = np.random.default_rng(3)
    g0 = lie.make_pose(lie.so3_exp(rng.normal(size=3) * 0.3), np.zeros(3))
    x0 = (g0, 0.1 * rng.normal(size=model.b), rng.uniform(-1, 1, 6), 0.3 * rng.normal(size=6))
    errs = []
    for dt in (4e-3, 2e-3):
        tr = vm.simulate(model, *x0, 0.5, dt)
        E = tr.energy(model)
        errs.append(np.abs(E - E[0]).max() / np.abs(E).max())
        if base == "SO3":
            M = tr.momentum(model)
            assert np.ptp(M[:, 5]) < 1e-12 * np.abs(M).max()   # about the pivot, along gravity
    assert 12 < errs[0] / errs[1] < 20, errs
    assert errs[1] < 3e-8, errs


# ------------------------------------------------------------------ prescribed joint motion
def _joint_path(amp=0.4, w=2.0):
    phase = np.arange(7) * 0.7

    def path(t):
        s, c = np.sin(w * t + phase), np.cos(w * t + phase)
        return Q0 + amp * (s - np.sin(phase)), amp * w * c, -amp * w * w * s

    return path


def test_prescribed_zero_momentum(free):
    """Prescribed arm motion, zero initial momentum: momentum stays zero, the vehicle motion
    equals reconstruct_base (V = −𝒜q̇), and the recorded efforts reproduce q̈ through the
    forward dynamics (and the base acceleration through the inverse dynamics)."""
    path = _joint_path()
    q0, qd0, _ = path(0.0)
    Vz = -free.connection(q0) @ qd0
    tr = vm.simulate(free, G0, Vz, None, None, 1.0, 5e-3, prescribed=path)
    P = tr.momentum(free)
    assert np.abs(P).max() < 1e-12 * free.total_mass
    for k in (0, 37, 200):
        q, qd, qdd = path(tr.t[k])
        np.testing.assert_array_equal(tr.q[k], q)
        Vdot, qdd_fd = free.forward_dynamics(tr.g[k], tr.V[k], q, qd, tr.tau[k])
        np.testing.assert_allclose(qdd_fd, qdd, rtol=0, atol=1e-9 * np.abs(qdd).max())
        f0, tau = free.inverse_dynamics(tr.g[k], tr.V[k], q, qd, Vdot, qdd)
        np.testing.assert_allclose(f0, 0.0, atol=1e-8)
    rb = vm.reconstruct_base(free, G0, path, tr.t, substeps=1)
    assert np.abs(rb.g - tr.g).max() < 1e-12
    np.testing.assert_allclose(rb.V, tr.V, rtol=0, atol=1e-12)
    assert np.abs(lie.se3_log(lie.se3_inv(G0) @ tr.g[-1])).max() > 1e-3   # the base did move


def test_prescribed_nonzero_momentum_matches_free_simulation(free):
    """With nonzero momentum the prescribed run keeps π, equals reconstruct_base(momentum=π),
    and an unconstrained simulation driven by the efforts that realise the path (computed on
    the fly from the forward dynamics) follows the same joints and vehicle to O(dt⁴)."""
    path = _joint_path(amp=0.3, w=1.5)
    q0, qd0, _ = path(0.0)
    tr = vm.simulate(free, G0, V0, None, None, 0.5, 5e-3, prescribed=path)
    pi = free.momentum(G0, V0, q0, qd0)
    np.testing.assert_allclose(tr.momentum(free), np.tile(pi, (len(tr.t), 1)), rtol=0,
                               atol=1e-12 * np.abs(pi).max())
    rb = vm.reconstruct_base(free, G0, path, tr.t, momentum=pi)
    assert np.abs(rb.g - tr.g).max() < 1e-11
    # forward simulation with τ(t) = efforts realising the path (computed on the fly)
    def tau_fn(t, s):
        q, qd, qdd = path(t)
        _, qdd0 = free.forward_dynamics(s.g, s.V, s.q, s.qd, np.zeros(7))
        return free.reduced_inertia(s.q) @ (qdd - qdd0)
    fwd = vm.simulate(free, G0, V0, q0, qd0, 0.5, 5e-3, tau=tau_fn)
    assert np.abs(fwd.q - tr.q).max() < 1e-8
    assert np.abs(fwd.g - tr.g).max() < 1e-8
    np.testing.assert_allclose(fwd.tau[-1], tr.tau[-1], rtol=1e-6)


def test_prescribed_fixed_base_efforts_equal_inverse_dynamics():
    """Fixed base (b = 0): prescribed motion records exactly the inverse-dynamics torques
    (gravity included)."""
    model = vm.load_model(robot_xml("ur5"), base="fixed")
    w = 2.0

    def path(t):
        s = np.sin(w * t + np.arange(6))
        return s, w * np.cos(w * t + np.arange(6)), -w * w * s

    tr = vm.simulate(model, np.eye(4), [], None, None, 0.05, 0.01, prescribed=path)
    assert tr.V.shape == (6, 0) and tr.base_wrench.shape == (6, 0)
    for k in range(len(tr)):
        q, qd, qdd = path(tr.t[k])
        _, tau = model.inverse_dynamics(np.eye(4), [], q, qd, [], qdd)
        np.testing.assert_allclose(tr.tau[k], tau, rtol=1e-10, atol=1e-10)


def test_prescribed_dopri5_and_body_momentum(free):
    path = _joint_path()
    q0, qd0, _ = path(0.0)
    a = vm.simulate(free, G0, V0, q0, qd0, 0.5, 0.05, prescribed=path, method="dopri5",
                    rtol=1e-11, atol=1e-13)
    b = vm.simulate(free, G0, V0, q0, qd0, 0.5, 0.05, prescribed=path,
                    formulation="body_momentum", substeps=10)
    assert np.abs(a.g - b.g).max() < 1e-9


# ------------------------------------------------------------------ inputs, errors, bookkeeping
def test_input_validation(free):
    args = (free, G0, V0, Q0, QD0, 0.05, 0.01)
    with pytest.raises(ValueError, match="tau"):
        vm.simulate(*args, tau=np.zeros(6))
    with pytest.raises(ValueError, match=r"tau: expected shape \(7,\), got \(3,\) \(inputs at t=0\)"):
        vm.simulate(*args, tau=lambda t, s: np.zeros(3))
    with pytest.raises(ValueError, match=r"base_wrench: contains NaN .* at t=0.02"):
        vm.simulate(*args, base_wrench=lambda t, s: np.full(6, np.nan) if t > 0.015 else np.zeros(6))
    with pytest.raises(ValueError, match=r"frame_wrenches\['ee_link'\]: expected shape \(6,\)"):
        vm.simulate(*args, frame_wrenches={"ee_link": lambda t, s: np.zeros(5)})
    with pytest.raises(ValueError, match="unknown frame 'nope'"):
        vm.simulate(*args, frame_wrenches={"nope": np.zeros(6)})
    with pytest.raises(ValueError, match="method"):
        vm.simulate(*args, method="rk45")
    with pytest.raises(ValueError, match="formulation"):
        vm.simulate(*args, formulation="hamiltonian")
    with pytest.raises(ValueError, match="V0"):
        vm.simulate(free, G0, np.zeros(5), Q0, QD0, 0.05, 0.01)
    with pytest.raises(ValueError, match="g0"):
        vm.simulate(free, 2 * G0, V0, Q0, QD0, 0.05, 0.01)
    with pytest.raises(ValueError, match="t_final"):
        vm.simulate(free, G0, V0, Q0, QD0, -1.0, 0.01)
    with pytest.raises(ValueError, match="dt"):
        vm.simulate(free, G0, V0, Q0, QD0, 1.0, float("nan"))
    path = _joint_path()
    with pytest.raises(ValueError, match="tau: cannot be given together with prescribed"):
        vm.simulate(free, G0, V0, None, None, 0.05, 0.01, prescribed=path, tau=np.zeros(7))
    with pytest.raises(ValueError, match="q0: does not match prescribed"):
        vm.simulate(free, G0, V0, Q0 + 0.1, None, 0.05, 0.01, prescribed=path)
    with pytest.raises(ValueError, match=r"prescribed: qdd at t=0: expected shape \(7,\), got \(2,\)"):
        vm.simulate(free, G0, V0, None, None, 0.05, 0.01,
                    prescribed=lambda t: (Q0, QD0, np.zeros(2)))
    with pytest.raises(ValueError, match="velocity"):
        vm.simulate(free, G0, V0, None, None, 0.05, 0.01, prescribed=path, formulation="velocity")


def test_state_is_immutable_and_callables_see_stage_states(free):
    seen = []

    def tau(t, s):
        assert isinstance(s, vm.State) and s.t == t
        with pytest.raises(ValueError):
            s.g[0, 0] = 5.0                      # read-only: cannot corrupt the integrator
        seen.append(t)
        return np.zeros(7)

    tr = vm.simulate(free, G0, V0, Q0, QD0, 0.02, 0.01, tau=tau)
    # rkmk4: stages at t, t + h/2 (twice), t + h; plus the final sample
    np.testing.assert_allclose(seen, [0, .005, .005, .01, .01, .015, .015, .02, .02], atol=1e-15)
    assert tr.evaluations == 8        # 2 steps × 4 stages; the last sample's inputs are no rhs


def test_grid_and_bookkeeping(free):
    tr = vm.simulate(free, G0, V0, Q0, QD0, 0.035, 0.01)
    np.testing.assert_allclose(tr.t, [0, 0.01, 0.02, 0.03, 0.035], atol=1e-15)
    assert tr.method == "rkmk4" and tr.steps == 4 and tr.wall_time > 0 and not tr.interrupted
    np.testing.assert_array_equal(tr.g[0], G0)
    np.testing.assert_allclose(tr.V[0], V0, rtol=0, atol=1e-15)
    assert len(tr[::2]) == 3 and tr.state(1).t == tr.t[1]


def test_callback_stop_and_keyboard_interrupt(free):
    tr = vm.simulate(free, G0, V0, Q0, QD0, 0.1, 0.01, callback=lambda s: s.t >= 0.03)
    assert len(tr) == 4 and tr.stopped and not tr.interrupted

    def tau(t, s):
        if t > 0.045:
            raise KeyboardInterrupt
        return np.zeros(7)

    for method in ("rkmk4", "dopri5"):
        tr = vm.simulate(free, G0, V0, Q0, QD0, 0.1, 0.01, tau=tau, method=method)
        assert tr.interrupted and 2 <= len(tr) <= 5      # dopri5 steps may span samples
        assert tr.g.shape == (len(tr), 4, 4) and np.all(np.isfinite(tr.V))
        ref = vm.simulate(free, G0, V0, Q0, QD0, 0.1, 0.01, method=method,
                          tau=lambda t, s: np.zeros(7))
        np.testing.assert_array_equal(tr.g, ref.g[:len(tr)])
        held = vm.simulate(free, G0, V0, Q0, QD0, 0.1, 0.01, method=method)   # compiled loop
        np.testing.assert_allclose(tr.g, held.g[:len(tr)], rtol=0, atol=1e-15)


def test_progress_bar(free, capsys):
    tr = vm.simulate(free, G0, V0, Q0, QD0, 0.02, 0.01, progress=True)
    assert "simulate[rkmk4]" in capsys.readouterr().err and len(tr) == 3


# ------------------------------------------------------ bounded memory: record_every, on_sample
@pytest.mark.parametrize("every", [1, 7, 50])
def test_record_every_keeps_the_same_samples_and_streams_all(free, every):
    """Keeping every k-th sample changes nothing computed: the kept rows equal those of the full
    run (and the last sample is kept), ``on_sample`` sees every sample once and in order with
    the inputs the full run records, and ``callback`` still sees every sample."""
    m = free
    rng = np.random.default_rng(3)
    q0 = rng.uniform(-1, 1, m.n)
    tau = lambda t, s: 0.3 * np.sin(5 * t + np.arange(m.n))     # noqa: E731
    full = vm.simulate(m, np.eye(4), np.zeros(m.b), q0, np.zeros(m.n), 0.123, 1e-3, tau=tau)
    seen, streamed = [], []
    kept = vm.simulate(m, np.eye(4), np.zeros(m.b), q0, np.zeros(m.n), 0.123, 1e-3, tau=tau,
                       record_every=every, callback=lambda s: seen.append(s.t),
                       on_sample=lambda t, g, V, q, qd, tau_k, bw: streamed.append(
                           (t, q.copy(), tau_k.copy())))
    idx = list(range(0, len(full), every))
    if idx[-1] != len(full) - 1:
        idx.append(len(full) - 1)
    assert len(kept) == len(idx)
    for key in ("t", "g", "V", "q", "qd", "tau", "base_wrench", "work", "abs_work"):
        np.testing.assert_array_equal(getattr(kept, key), getattr(full, key)[idx], err_msg=key)
    np.testing.assert_array_equal(seen, full.t)
    np.testing.assert_array_equal([s[0] for s in streamed], full.t)
    np.testing.assert_array_equal(np.array([s[1] for s in streamed]), full.q)
    np.testing.assert_array_equal(np.array([s[2] for s in streamed]), full.tau)


@pytest.mark.parametrize("every", [1, 7])
def test_held_inputs_store_the_same_samples_in_blocks_as_one_by_one(free, every):
    """Held inputs run in compiled blocks; without a per-sample consumer the samples are stored
    as slices: the same arrays as when a callback forces one call per sample."""
    m = free
    rng = np.random.default_rng(4)
    args = (m, np.eye(4), rng.normal(size=m.b) * 0.1, rng.uniform(-1, 1, m.n),
            np.zeros(m.n), 0.2345, 1e-3)
    kw = dict(tau=0.2 * np.ones(m.n), base_wrench=np.r_[1.0, 0, 0, 0, 0.5, 0],
              record_every=every)
    fast = vm.simulate(*args, **kw)
    slow = vm.simulate(*args, callback=lambda s: False, **kw)
    for key in ("t", "g", "V", "q", "qd", "tau", "base_wrench", "work", "abs_work"):
        np.testing.assert_array_equal(getattr(fast, key), getattr(slow, key), err_msg=key)
    stopped = vm.simulate(*args, callback=lambda s: s.t >= 0.1505, **kw)
    assert stopped.stopped and stopped.t[-1] == pytest.approx(0.151)


def test_record_every_keeps_the_last_sample_of_a_stopped_run(free):
    m = free
    stop_at = 0.0305
    tr = vm.simulate(m, np.eye(4), np.zeros(m.b), np.zeros(m.n), np.zeros(m.n), 0.1, 1e-3,
                     tau=np.ones(m.n), record_every=10, callback=lambda s: s.t >= stop_at)
    assert tr.stopped and tr.t[-1] == pytest.approx(0.031) and tr.t[-2] == pytest.approx(0.03)


def test_engine_work_matches_the_independent_quadrature_of_the_input_power():
    """``traj.work`` (the engine's account, RK stages) against the trapezoid of the input power
    computed from the samples (metrics.input_power: efforts, vehicle wrench incl. the water's
    damping and buoyancy): they agree to the trapezoid's O(dt²) error."""
    from vm_dynamics.analysis import metrics
    from vm_dynamics.config.scenario import load_scenario
    s = load_scenario("uvms")
    m = s.model
    tr = vm.simulate(m, s.g0, s.V0, s.q0, s.qd0, 1.0, s.dt, tau=s.open_loop_torque,
                     environment=s.hydrodynamics, method=s.integrator)
    fw = (lambda t, st: s.environment_wrenches(t, st)[1]) \
        if s.hydrodynamics.link_buoyancy else None
    W = metrics.cumulative_work(tr.t, metrics.input_power(m, tr, fw))
    scale = float(np.max(np.abs(W)))
    assert scale > 1.0
    assert np.max(np.abs(W - (tr.work - tr.work[0]))) < 1e-8 * scale


def test_record_every_and_on_sample_are_checked(free):
    m = free
    args = (m, np.eye(4), np.zeros(m.b), np.zeros(m.n), np.zeros(m.n), 0.01, 1e-3)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="record_every"):
            vm.simulate(*args, record_every=bad)
    with pytest.raises(ValueError, match="on_sample"):
        vm.simulate(*args, on_sample=3)


def test_dopri5_with_mimic_joints_follows_the_coupled_dynamics():
    """dopri5 on a model with a mimic joint (panda_on_bus) integrates the model's coordinates
    through the coupled dynamics and agrees with RKMK4 at a small step (it used to slice the
    tree's joint state with the model's joint count)."""
    from vm_dynamics.config.scenario import load_scenario
    scn = load_scenario("panda_on_bus")
    m = scn.model
    assert not m.coupling.trivial
    rng = np.random.default_rng(3)
    tau, V0 = 0.5 * rng.normal(size=m.n), 0.05 * rng.normal(size=m.b)
    kw = dict(tau=tau, rtol=1e-11, atol=1e-13)
    a = vm.simulate(m, scn.g0, V0, scn.q0, scn.qd0, 0.05, 0.01, method="dopri5", **kw)
    b = vm.simulate(m, scn.g0, V0, scn.q0, scn.qd0, 0.05, 0.0005, tau=tau)
    for x, y in ((a.q[-1], b.q[-1]), (a.qd[-1], b.qd[-1]), (a.V[-1], b.V[-1]),
                 (a.g[-1], b.g[-1])):
        assert np.abs(x - y).max() <= 1e-9 * max(1.0, np.abs(y).max())
