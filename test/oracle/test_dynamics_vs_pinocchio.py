"""vm_dynamics vs. Pinocchio (independent oracle).

Every quantity of the public API is compared with Pinocchio built from the
same URDF XML (see conftest.py for the robots and test/oracles.py for the
coordinate conversions). Agreement is required to rtol = 1e-9 with
atol = 1e-9 * ||reference||.

Sections:
  1. oracle self-checks (Pinocchio only; run even if vm_dynamics is missing)
  2. library vs oracle, parametrised over (robot, base) x seeds
"""

from __future__ import annotations

import os
import types

import numpy as np
import oracles
import pytest
from conftest import WRENCH_FRAMES, gravity_for, make_oracle, our_model, robot_path, robot_xml

RTOL = 1e-9

CASES = [
    ("ur5", "SE3"),
    ("panda", "SE3"),
    ("tiago", "SE3"),
    ("b1_z1", "SE3"),
    ("random_tree", "SE3"),
    ("ur5", "SE2"),
    ("tiago", "SE2"),
    ("random_tree", "SE2"),
    ("ur5", "SO3"),
    ("random_tree", "SO3"),
    ("ur5", "fixed"),
    ("panda", "fixed"),
    ("random_tree", "fixed"),
]
SEEDS = [0, 1, 2]
PARAMS = [pytest.param((r, b, s), id=f"{r}-{b}-s{s}") for (r, b) in CASES for s in SEEDS]


def assert_close(ours, theirs, what, scale=None):
    ours = np.asarray(ours, dtype=float)
    theirs = np.asarray(theirs, dtype=float)
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} != reference {theirs.shape}"
    if scale is None:
        scale = np.linalg.norm(theirs)
    err = np.max(np.abs(ours - theirs)) if ours.size else 0.0
    np.testing.assert_allclose(
        ours, theirs, rtol=RTOL, atol=RTOL * scale,
        err_msg=f"{what}: max abs err {err:.3e}, ||ref|| {np.linalg.norm(theirs):.3e}, scale {scale:.3e}",
    )


def random_wrenches(rng, frames, mag=10.0):
    return {f: mag * rng.normal(size=6) for f in frames}


# ==========================================================================
# 1. Oracle self-checks (Pinocchio only)
# ==========================================================================
ORACLE_PARAMS = [pytest.param(r, b, id=f"{r}-{b}") for (r, b) in CASES]


@pytest.mark.parametrize("robot,base", ORACLE_PARAMS)
def test_oracle_self_consistency(robot, base):
    rng = np.random.default_rng(42)
    grav = gravity_for(1)
    orc = make_oracle(robot, base, grav)
    g, V, q, qd = orc.random_state(rng)
    n, b = orc.n, orc.b

    # configuration round trip
    qp, gW0 = orc.to_pin_q(g, q)
    g2, q2 = orc.from_pin_q(qp, gW0)
    np.testing.assert_allclose(g2, g, atol=1e-12)
    np.testing.assert_allclose(np.angle(np.exp(1j * (q2 - q))), 0, atol=1e-12)
    if base != "fixed":
        np.testing.assert_allclose(gW0, np.eye(4), atol=1e-12)

    # aba o rnea round trip, with frame wrenches
    fw = random_wrenches(rng, WRENCH_FRAMES[robot])
    Vdot, qdd = rng.normal(size=b), rng.normal(size=n)
    bw, tau = orc.rnea(g, V, q, qd, Vdot, qdd, fw)
    Vdot2, qdd2 = orc.aba(g, V, q, qd, tau, bw, fw)
    np.testing.assert_allclose(np.r_[Vdot2, qdd2], np.r_[Vdot, qdd], atol=1e-8)

    # rnea linear in acceleration with the mass matrix
    M = orc.mass_matrix(q, g)
    bw0, tau0 = orc.rnea(g, V, q, qd, np.zeros(b), np.zeros(n), fw)
    np.testing.assert_allclose(np.r_[bw, tau] - np.r_[bw0, tau0], M @ np.r_[Vdot, qdd], atol=1e-9 * np.linalg.norm(M))

    # momentum: sum of body momenta == ccrba shifted to the origin; == M-weighted twist for the base
    h = orc.momentum(g, V, q, qd)
    np.testing.assert_allclose(h, orc.momentum_ccrba(g, V, q, qd), atol=1e-10 * (1 + np.linalg.norm(h)))
    if base == "SE3":
        # body-frame base momentum = first 6 rows of M v, mapped by Ad*_{g^-1}
        hb = (M @ np.r_[V, qd])[:6]
        f = oracles.pose_to_se3(g).act(oracles.pin.Force(hb[:3], hb[3:]))
        np.testing.assert_allclose(h, np.r_[f.linear, f.angular], atol=1e-10 * np.linalg.norm(h))

    # kinetic energy == 1/2 v^T M v
    ke, pe = orc.energy_terms(g, V, q, qd)
    x = np.r_[V, qd]
    np.testing.assert_allclose(ke, 0.5 * x @ M @ x, rtol=1e-11)
    np.testing.assert_allclose(pe, orc.potential_energy_by_bodies(g, q), rtol=1e-11, atol=1e-11 * orc.total_mass)

    # root link pose
    np.testing.assert_allclose(orc.frame_pose(q, orc.root_link), np.eye(4), atol=1e-12)
    np.testing.assert_allclose(orc.frame_pose(q, orc.root_link, g), g, atol=1e-12)


@pytest.mark.parametrize("robot,base", ORACLE_PARAMS)
def test_oracle_power_balance(robot, base):
    """dE/dt == tau.qd + base_wrench.V + sum(frame wrench . frame twist): checks PE sign/gravity frames."""
    rng = np.random.default_rng(7)
    orc = make_oracle(robot, base, gravity_for(2))
    g, V, q, qd = orc.random_state(rng)
    tau = rng.normal(size=orc.n)
    bw = rng.normal(size=orc.b)
    fw = random_wrenches(rng, WRENCH_FRAMES[robot], 3.0)
    x0 = orc.pack_state(g, V, q, qd)
    f = lambda t, *s: tau  # noqa: E731
    fb = lambda t, *s: bw  # noqa: E731
    ff = lambda t, *s: fw  # noqa: E731
    xdot = orc.state_derivative(0.0, x0, f, fb, ff)
    E = lambda x: orc.energy(*orc.unpack_state(x))  # noqa: E731
    h = 1e-6
    dE = (E(x0 + h * xdot) - E(x0 - h * xdot)) / (2 * h)
    power = tau @ qd + bw @ V
    for name, w in fw.items():
        power += w @ orc.frame_body_twist(g, V, q, qd, name)
    ke, pe = orc.energy_terms(g, V, q, qd)
    np.testing.assert_allclose(dE, power, atol=1e-6 * (abs(power) + abs(ke) + abs(pe)))


def test_oracle_base_reductions():
    """Restricted-base oracles agree with the SE3 oracle restricted to the same directions."""
    rng = np.random.default_rng(3)
    grav = gravity_for(1)
    name = "random_tree"
    full = make_oracle(name, "SE3", grav)
    for base in ("SE2", "SO3", "fixed"):
        orc = make_oracle(name, base, grav, joint_names=full.joint_names)
        g, V, q, qd = orc.random_state(rng)
        Vdot = rng.normal(size=orc.b)
        qdd = rng.normal(size=orc.n)
        rows = oracles.BASE_ROWS[base]
        keep = list(rows) + list(range(6, 6 + orc.n))
        Mf = full.mass_matrix(q)
        np.testing.assert_allclose(orc.mass_matrix(q), Mf[np.ix_(keep, keep)], atol=1e-12 * np.linalg.norm(Mf))
        V6, A6 = oracles.base_to_6(base, V), oracles.base_to_6(base, Vdot)
        bw6, tau6 = full.rnea(g, V6, q, qd, A6, qdd)
        bw, tau = orc.rnea(g, V, q, qd, Vdot, qdd)
        np.testing.assert_allclose(np.r_[bw, tau], np.r_[bw6[rows], tau6], atol=1e-10 * np.linalg.norm(tau6))
        np.testing.assert_allclose(orc.momentum(g, V, q, qd), full.momentum(g, V6, q, qd), atol=1e-10)
        np.testing.assert_allclose(orc.energy(g, V, q, qd), full.energy(g, V6, q, qd), rtol=1e-12, atol=1e-10)
        for fr in WRENCH_FRAMES[name]:
            np.testing.assert_allclose(orc.frame_pose(q, fr, g), full.frame_pose(q, fr, g), atol=1e-12)


# ==========================================================================
# 2. Library vs oracle
# ==========================================================================
@pytest.fixture(params=PARAMS)
def case(request):
    robot, base, seed = request.param
    grav = gravity_for(seed)
    model = our_model(robot, base, grav)
    orc = make_oracle(robot, base, grav, joint_names=list(model.joint_names))
    rng = np.random.default_rng(12345 + 97 * seed + 7919 * CASES.index((robot, base)))
    g, V, q, qd = orc.random_state(rng)
    return types.SimpleNamespace(
        robot=robot, base=base, seed=seed, gravity=grav, model=model, orc=orc, rng=rng,
        g=g, V=V, q=q, qd=qd, b=orc.b, n=orc.n,
        tau=5.0 * rng.normal(size=orc.n),
        base_wrench=20.0 * rng.normal(size=orc.b),
        Vdot=rng.normal(size=orc.b),
        qdd=rng.normal(size=orc.n),
        wrenches=random_wrenches(rng, WRENCH_FRAMES[robot]),
    )


def test_structure(case):
    m = case.model
    assert m.base_dim == case.b
    assert m.nq == case.n
    assert sorted(m.joint_names) == sorted(oracles.urdf_movable_joints(robot_xml(case.robot)))
    assert len(set(m.joint_names)) == len(m.joint_names)


def test_mass_matrix(case):
    M = case.model.mass_matrix(case.q)
    Mp = case.orc.mass_matrix(case.q)
    assert_close(M, Mp, f"mass_matrix[{case.robot},{case.base}]")


def test_locked_inertia(case):
    Mp = case.orc.mass_matrix(case.q)
    b = case.b
    assert_close(case.model.locked_inertia(case.q), Mp[:b, :b], f"locked_inertia[{case.robot},{case.base}]",
                 scale=np.linalg.norm(Mp[:b, :b]))


def test_connection(case):
    Mp = case.orc.mass_matrix(case.q)
    b = case.b
    A = np.linalg.solve(Mp[:b, :b], Mp[:b, b:]) if b else np.zeros((0, case.n))
    assert_close(case.model.connection(case.q), A, f"connection[{case.robot},{case.base}]")


def test_reduced_inertia(case):
    Mp = case.orc.mass_matrix(case.q)
    b = case.b
    M0, M0m, Mm = Mp[:b, :b], Mp[:b, b:], Mp[b:, b:]
    Mhat = Mm - M0m.T @ np.linalg.solve(M0, M0m) if b else Mm
    assert_close(case.model.reduced_inertia(case.q), Mhat, f"reduced_inertia[{case.robot},{case.base}]")


def _check_fd(case, base_wrench, frame_wrenches, label):
    c = case
    kw = {}
    if base_wrench is not None:
        kw["base_wrench"] = base_wrench
    if frame_wrenches is not None:
        kw["frame_wrenches"] = frame_wrenches
    Vdot, qdd = c.model.forward_dynamics(c.g, c.V, c.q, c.qd, c.tau, **kw)
    Vdot_p, qdd_p = c.orc.aba(c.g, c.V, c.q, c.qd, c.tau, base_wrench, frame_wrenches)
    scale = np.linalg.norm(np.r_[Vdot_p, qdd_p])
    assert_close(Vdot, Vdot_p, f"forward_dynamics Vdot [{label}; {c.robot},{c.base}]", scale)
    assert_close(qdd, qdd_p, f"forward_dynamics qdd [{label}; {c.robot},{c.base}]", scale)


def test_forward_dynamics(case):
    _check_fd(case, case.base_wrench, None, "tau + base_wrench")


def test_forward_dynamics_no_base_wrench(case):
    _check_fd(case, None, None, "tau only")


def test_forward_dynamics_frame_wrenches(case):
    _check_fd(case, case.base_wrench, case.wrenches, "tau + base_wrench + frame_wrenches")


def test_forward_dynamics_single_ee_wrench(case):
    fr = WRENCH_FRAMES[case.robot][0]
    _check_fd(case, None, {fr: case.wrenches[fr]}, f"frame_wrench at {fr}")


def _check_id(case, frame_wrenches, label):
    c = case
    kw = {} if frame_wrenches is None else {"frame_wrenches": frame_wrenches}
    bw, tau = c.model.inverse_dynamics(c.g, c.V, c.q, c.qd, c.Vdot, c.qdd, **kw)
    bw_p, tau_p = c.orc.rnea(c.g, c.V, c.q, c.qd, c.Vdot, c.qdd, frame_wrenches)
    scale = np.linalg.norm(np.r_[bw_p, tau_p])
    assert_close(bw, bw_p, f"inverse_dynamics base_wrench [{label}; {c.robot},{c.base}]", scale)
    assert_close(tau, tau_p, f"inverse_dynamics tau [{label}; {c.robot},{c.base}]", scale)


def test_inverse_dynamics(case):
    _check_id(case, None, "no frame wrenches")


def test_inverse_dynamics_frame_wrenches(case):
    _check_id(case, case.wrenches, "frame_wrenches")


def test_momentum(case):
    c = case
    h = c.model.momentum(c.g, c.V, c.q, c.qd)
    assert_close(h, c.orc.momentum(c.g, c.V, c.q, c.qd), f"momentum[{c.robot},{c.base}]")


def test_energy(case):
    c = case
    E = c.model.energy(c.g, c.V, c.q, c.qd)
    ke, pe = c.orc.energy_terms(c.g, c.V, c.q, c.qd)
    assert np.ndim(E) == 0 or np.size(E) == 1
    assert_close(float(np.squeeze(E)), ke + pe, f"energy[{c.robot},{c.base}] (KE={ke:.6g}, PE={pe:.6g})",
                 scale=abs(ke) + abs(pe))


def test_frame_pose(case):
    c = case
    for link in oracles.urdf_link_names(robot_xml(c.robot)):
        T = c.model.frame_pose(c.q, link)
        assert_close(T, c.orc.frame_pose(c.q, link), f"frame_pose({link}) in vehicle frame [{c.robot},{c.base}]")
        Tg = c.model.frame_pose(c.q, link, g=c.g)
        assert_close(Tg, c.orc.frame_pose(c.q, link, c.g), f"frame_pose({link}) inertial [{c.robot},{c.base}]")


def test_forward_inverse_consistency(case):
    """forward_dynamics(inverse_dynamics(a)) == a (library only, with Pinocchio-checked pieces)."""
    c = case
    bw, tau = c.model.inverse_dynamics(c.g, c.V, c.q, c.qd, c.Vdot, c.qdd, frame_wrenches=c.wrenches)
    Vdot, qdd = c.model.forward_dynamics(c.g, c.V, c.q, c.qd, tau, base_wrench=bw, frame_wrenches=c.wrenches)
    scale = np.linalg.norm(np.r_[c.Vdot, c.qdd])
    assert_close(np.r_[Vdot, qdd], np.r_[c.Vdot, c.qdd], f"FD(ID(a)) [{c.robot},{c.base}]", scale * 10)


# --------------------------------------------------------------------------
# source formats: URDF path and .xacro path give the same model as the XML string
# --------------------------------------------------------------------------
def test_sources_path_and_xacro(tmp_path):
    import vm_dynamics as vm
    path = robot_path("ur5")
    xacro_file = tmp_path / "ur5_wrapped.urdf.xacro"
    xacro_file.write_text(
        '<?xml version="1.0"?>\n'
        '<robot name="ur5_wrapped" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
        '  <xacro:property name="unused" value="1.0"/>\n'
        f'  <xacro:include filename="{path}"/>\n'
        "</robot>\n"
    )
    orc = make_oracle("ur5", "SE3", (0.0, 0.0, -9.81))
    rng = np.random.default_rng(5)
    g, V, q_pin_order, qd = orc.random_state(rng)
    for src in (path, str(xacro_file)):
        m = vm.load_model(src, base="SE3", gravity=(0.0, 0.0, -9.81))
        o = make_oracle("ur5", "SE3", (0.0, 0.0, -9.81), joint_names=list(m.joint_names))
        q = o.q_lower + 0.3 * (o.q_upper - o.q_lower)
        assert_close(m.mass_matrix(q), o.mass_matrix(q), f"mass_matrix from {os.path.basename(src)}")


def test_unmodified_panda_loads_with_its_mimic_finger():
    """The raw panda.urdf has a <mimic> finger joint: it is a coupling, not a coordinate (conftest
    strips it for the comparisons above; test_bring_your_own_robot.py compares the unmodified
    file with Pinocchio's mimic support)."""
    import vm_dynamics as vm
    m = vm.load_model(robot_path("panda"), base="SE3")
    assert (m.n, m.n_full) == (8, 9)
    assert "panda_finger_joint2" not in m.joint_names
    assert m.coupling.mimic == {"panda_finger_joint2": ("panda_finger_joint1", 1.0, 0.0)}


def test_oracle_simulate_conservation():
    """Reference integrator: free floating, no forces -> momentum and energy conserved; base pose stays in SE(3)."""
    orc = make_oracle("random_tree", "SE3", (0.0, 0.0, 0.0))
    rng = np.random.default_rng(11)
    g, V, q, qd = orc.random_state(rng)
    sol = orc.simulate(g, V, q, qd, 0.5)
    assert sol.success
    g1, V1, q1, qd1 = orc.unpack_state(sol.y[:, -1])
    np.testing.assert_allclose(g1[:3, :3].T @ g1[:3, :3], np.eye(3), atol=1e-9)
    h0, h1 = orc.momentum(g, V, q, qd), orc.momentum(g1, V1, q1, qd1)
    np.testing.assert_allclose(h1, h0, atol=1e-8 * np.linalg.norm(h0))
    np.testing.assert_allclose(orc.energy(g1, V1, q1, qd1), orc.energy(g, V, q, qd), rtol=1e-8)
