"""LP quantities against finite differences, conservation laws and an independent formulation
(the Boltzmann–Hamel equations with the same mass matrix, seeds-LP §4.1), on random trees with
SE3, SE2, SO3 and fixed bases."""
import numpy as np
import pytest
from urdf_factory import random_tree_urdf

import vm_dynamics as vm
from vm_dynamics.core import lie
from vm_dynamics.dynamics import lp

BASES = ["SE3", "SE2", "SO3", "fixed"]


def make(base, seed=0, gravity=(0.0, 0.0, -9.81), n=5):
    return vm.load_model(random_tree_urdf(seed=seed, n=n), base=base, gravity=gravity)


def random_state(model, seed=0):
    rng = np.random.default_rng(seed)
    if model.b == 6:
        g = lie.se3_exp(rng.normal(size=6))
    else:
        g = model.group.exp(rng.normal(size=model.b)) if model.b else np.eye(4)
        g = lie.make_pose(np.eye(3), [0.1, -0.2, 0.3]) @ g  # a coset ḡ₀ ι(h)
    return (g, rng.normal(size=model.b), rng.uniform(-1.5, 1.5, model.n),
            rng.normal(size=model.n), rng.normal(size=model.n), rng.normal(size=model.b))


def fd(f, x, h=1e-6):
    """Central differences of f at x along each coordinate: list of df/dx_i."""
    out = []
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = h
        out.append((f(x + e) - f(x - e)) / (2 * h))
    return np.array(out)


@pytest.mark.parametrize("base", BASES)
def test_block_diagonalisation_lemma_4(base):
    """(74)–(75): with T = [[I, 𝒜], [0, I]], T⁻ᵀ M T⁻¹ = blockdiag(M₀, M̂)."""
    m = make(base)
    q = random_state(m)[2]
    M, M0, A, Mhat = m.mass_matrix(q), m.locked_inertia(q), m.connection(q), m.reduced_inertia(q)
    b, n = m.b, m.n
    T = np.block([[np.eye(b), A], [np.zeros((n, b)), np.eye(n)]])
    Ti = np.linalg.inv(T)
    B = Ti.T @ M @ Ti
    scale = np.abs(M).max()
    np.testing.assert_allclose(B[:b, b:], 0.0, atol=1e-13 * scale)
    np.testing.assert_allclose(B[:b, :b], M0, atol=1e-13 * scale)
    np.testing.assert_allclose(B[b:, b:], Mhat, atol=1e-13 * scale)
    if b:
        np.testing.assert_allclose(M0 @ A, M[:b, b:], atol=1e-13 * scale)
    assert np.linalg.eigvalsh(Mhat)[0] > 0


@pytest.mark.parametrize("base", BASES)
def test_closed_form_derivatives_match_finite_differences(base):
    """(117), (118 corrected), (120), (122 corrected), (119)/(121) against central differences."""
    m = make(base, seed=3)
    q = random_state(m, 3)[2]
    t = m.lp_terms(q)
    for name, f, d in [
        ("M0", lambda x: m.lp_terms(x, False).M0, t.dM0),
        ("M0m", lambda x: m.lp_terms(x, False).M0m, t.dM0m),
        ("Mm", lambda x: m.lp_terms(x, False).Mm, t.dMm if hasattr(t, "dMm") else None),
        ("A", lambda x: m.lp_terms(x, False).A, t.dA),
        ("Mhat", lambda x: m.lp_terms(x, False).Mhat, t.dMhat),
    ]:
        if d is None:
            continue
        num = fd(f, q)
        scale = max(np.abs(num).max(initial=0.0), 1.0)
        np.testing.assert_allclose(d, num, atol=1e-7 * scale, err_msg=f"∂{name}/∂q")


@pytest.mark.parametrize("base", BASES)
def test_full_mass_matrix_derivative_and_skew_identity(base):
    """vᵀ(Ṁ − 2C)v = 0 for the LP Coriolis matrix: q̇ᵀĈq̇ = ½ q̇ᵀ(dM̂/dt)q̇ (99)."""
    m = make(base, seed=4)
    _, V, q, qd, _, _ = random_state(m, 4)
    t = m.lp_terms(q)
    P = t.M0 @ V + t.M0m @ qd
    Cqd, N, _ = lp.coriolis_terms(m, t, V, qd, P)
    Mhat_dot = np.einsum("ijk,i->jk", t.dMhat, qd)
    assert abs(qd @ Cqd - 0.5 * qd @ Mhat_dot @ qd) < 1e-11 * max(1, abs(qd @ Cqd))
    # dM̂/dt along the motion equals the finite difference of M̂ along q̇
    h = 1e-6
    num = (m.reduced_inertia(q + h * qd) - m.reduced_inertia(q - h * qd)) / (2 * h)
    np.testing.assert_allclose(Mhat_dot, num, atol=1e-7 * np.abs(num).max())


@pytest.mark.parametrize("base", ["SE3", "SE2", "SO3"])
def test_curvature_form_of_N_hat(base):
    """seeds-LP §3.6: N̂_j = Pᵀ ad_Ω 𝒜_j + Σ_i q̇_i Pᵀ B_ij − ½ Ωᵀ ∂_jM₀ Ω."""
    m = make(base, seed=5)
    _, V, q, qd, _, _ = random_state(m, 5)
    t = m.lp_terms(q)
    P = t.M0 @ V + t.M0m @ qd
    Omega = V + t.A @ qd
    _, N, _ = lp.coriolis_terms(m, t, V, qd, P)
    B = m.curvature(q)
    adO = m.group.ad(Omega)
    N2 = np.array([P @ adO @ t.A[:, j] + sum(qd[i] * P @ B[i, j] for i in range(m.n))
                   - 0.5 * Omega @ t.dM0[j] @ Omega for j in range(m.n)])
    np.testing.assert_allclose(N, N2, atol=1e-11 * max(1, np.abs(N).max()))
    np.testing.assert_allclose(B, -np.transpose(B, (1, 0, 2)), atol=1e-12)


@pytest.mark.parametrize("base", BASES)
def test_forward_dynamics_equals_boltzmann_hamel(base):
    """Independent formulation with the same M (seeds-LP §4.1, 'Independent baseline'):
    M ż = [ad*_V μ + F_η ; ½[zᵀ∂_jM z]_j + F_𝔪 − ∂u/∂q] − Ṁ z, with ∂M/∂q by finite differences."""
    m = make(base, seed=6)
    g, V, q, qd, tau, bw = random_state(m, 6)
    fw = {"tool0": np.array([1.0, -2.0, 0.5, 0.1, 0.2, -0.3])}
    Vd, qdd = m.forward_dynamics(g, V, q, qd, tau, bw, frame_wrenches=fw)

    z = np.concatenate([V, qd])
    M = m.mass_matrix(q)
    dM = fd(m.mass_matrix, q)                       # (n, b+n, b+n)
    Mdot = np.einsum("ijk,i->jk", dM, qd)
    mu = M[:m.b] @ z
    # gravity by finite differences of the potential (h-variation (113) and ∂u/∂q)
    U = lambda gg, qq: m.potential_energy(gg, qq)
    f_u = np.array([(U(g @ m.group.exp(1e-6 * e), q) - U(g @ m.group.exp(-1e-6 * e), q)) / 2e-6
                    for e in np.eye(m.b)]) if m.b else np.zeros(0)
    du = fd(lambda x: np.array([U(g, x)]), q)[:, 0]
    # end-effector wrench via the body Jacobian (finite-difference check of the Jacobian below)
    J = m.frame_jacobian(q, "tool0")
    fe = J.T @ fw["tool0"]
    rhs = np.concatenate([m.group.ad(V).T @ mu + bw + fe[:m.b] - f_u if m.b else np.zeros(0),
                          0.5 * np.einsum("a,iab,b->i", z, dM, z) + tau + fe[m.b:] - du]) - Mdot @ z
    zdot = np.linalg.solve(M, rhs)
    scale = np.abs(zdot).max()
    np.testing.assert_allclose(np.concatenate([Vd, qdd]), zdot, atol=1e-7 * scale)


@pytest.mark.parametrize("base", BASES)
def test_inverse_dynamics_inverts_forward_dynamics(base):
    m = make(base, seed=7)
    g, V, q, qd, tau, bw = random_state(m, 7)
    fw = {"l3": np.arange(6.0) - 2.0}
    Vd, qdd = m.forward_dynamics(g, V, q, qd, tau, bw, frame_wrenches=fw)
    bw2, tau2 = m.inverse_dynamics(g, V, q, qd, Vd, qdd, frame_wrenches=fw)
    np.testing.assert_allclose(bw2, bw, atol=1e-10 * max(1, np.abs(bw).max(initial=0)))
    np.testing.assert_allclose(tau2, tau, atol=1e-10 * max(1, np.abs(tau).max()))


def _advance(m, g, V, q, qd, Vd, qdd, h):
    """State at t+h to first order along the flow (for central differences in time)."""
    return g @ m.group.exp(h * V), V + h * Vd, q + h * qd, qd + h * qdd


@pytest.mark.parametrize("base", BASES)
def test_momentum_and_energy_rates(base):
    """dπ/dt = total external wrench (inertial frame) and dE/dt = power of the inputs."""
    m = make(base, seed=8, gravity=(0.3, -0.2, -9.81))
    g, V, q, qd, tau, bw = random_state(m, 8)
    Vd, qdd = m.forward_dynamics(g, V, q, qd, tau, bw)
    h = 1e-6
    sp = _advance(m, g, V, q, qd, Vd, qdd, h)
    sm = _advance(m, g, V, q, qd, Vd, qdd, -h)
    dE = (m.energy(*sp) - m.energy(*sm)) / (2 * h)
    power = tau @ qd + (bw @ V if m.b else 0.0)
    assert abs(dE - power) < 1e-6 * max(1.0, abs(power))
    if base == "SE3":
        dpi = (m.momentum(*sp) - m.momentum(*sm)) / (2 * h)
        weight = m.total_mass * m.gravity
        com = sum(m.mass[k] * p for k, p in enumerate(_coms(m, g, q))) / m.total_mass
        ext = lie.Ad_inv(g).T @ m.group.embed(bw) + np.concatenate([weight, np.cross(com, weight)])
        np.testing.assert_allclose(dpi, ext, atol=1e-6 * np.abs(ext).max())


def _coms(m, g, q):
    kin = lp.kinematics(m, q)
    p = lp.com_positions(m, kin)
    return p @ g[:3, :3].T + g[:3, 3]


def test_free_floating_momentum_is_conserved_by_the_equations():
    m = make("SE3", seed=9, gravity=(0, 0, 0))
    g, V, q, qd, tau, _ = random_state(m, 9)
    Vd, qdd = m.forward_dynamics(g, V, q, qd, tau)  # joint torques are internal
    h = 1e-6
    dpi = (m.momentum(*_advance(m, g, V, q, qd, Vd, qdd, h))
           - m.momentum(*_advance(m, g, V, q, qd, Vd, qdd, -h))) / (2 * h)
    assert np.abs(dpi).max() < 1e-6 * np.abs(m.momentum(g, V, q, qd)).max()


def test_frame_jacobian_matches_finite_differences_of_frame_pose():
    m = make("SE3", seed=10)
    g, V, q, qd, _, _ = random_state(m, 10)
    J = m.frame_jacobian(q, "tool0")
    h = 1e-6
    plus = m.frame_pose(q + h * qd, "tool0", g @ m.group.exp(h * V))
    minus = m.frame_pose(q - h * qd, "tool0", g @ m.group.exp(-h * V))
    ge = m.frame_pose(q, "tool0", g)
    Vb = lie.vee(lie.se3_inv(ge) @ (plus - minus) / (2 * h))
    np.testing.assert_allclose(J @ np.concatenate([V, qd]), Vb, atol=1e-7)


def test_locked_velocity_and_momentum_definitions():
    m = make("SE3", seed=11)
    _, V, q, qd, _, _ = random_state(m, 11)
    np.testing.assert_allclose(m.locked_velocity(V, q, qd), V + m.connection(q) @ qd, atol=1e-13)
    P = m.locked_momentum(V, q, qd)
    np.testing.assert_allclose(P, m.locked_inertia(q) @ m.locked_velocity(V, q, qd), atol=1e-10)


# ------------------------------------------------------------------------- input validation
def test_bad_inputs_name_the_argument():
    m = make("SE3")
    g, V, q, qd, tau, bw = random_state(m)
    with pytest.raises(ValueError, match=r"^q: expected shape \(5,\)"):
        m.mass_matrix(np.zeros(4))
    with pytest.raises(ValueError, match="qd: contains NaN"):
        m.forward_dynamics(g, V, q, qd * np.nan, tau)
    with pytest.raises(ValueError, match="tau: contains NaN or Inf"):
        m.forward_dynamics(g, V, q, qd, np.full(5, np.inf))
    with pytest.raises(ValueError, match=r"V: expected shape \(6,\)"):
        m.forward_dynamics(g, V[:3], q, qd, tau)
    with pytest.raises(ValueError, match="base_wrench"):
        m.forward_dynamics(g, V, q, qd, tau, base_wrench=np.zeros(5))
    with pytest.raises(ValueError, match=r"g: expected shape \(4, 4\)"):
        m.forward_dynamics(np.eye(3), V, q, qd, tau)
    with pytest.raises(ValueError, match="g: not a rigid transform"):
        m.forward_dynamics(2 * np.eye(4), V, q, qd, tau)
    with pytest.raises(ValueError, match="unknown frame 'nope'"):
        m.forward_dynamics(g, V, q, qd, tau, frame_wrenches={"nope": np.zeros(6)})
    with pytest.raises(ValueError, match=r"Vdot: expected shape"):
        m.inverse_dynamics(g, V, q, qd, np.zeros(2), qd)
    with pytest.raises(ValueError, match="gravity"):
        vm.load_model(random_tree_urdf(), gravity=(0, 0))


# ------------------------------------------------------------------------- URDF loading
def _robot(body):
    return f'<robot name="r">{body}</robot>'


LINK = ('<link name="{0}"><inertial><mass value="{1}"/>'
        '<inertia ixx="{2}" iyy="{2}" izz="{2}" ixy="0" ixz="0" iyz="0"/></inertial></link>')
JOINT = ('<joint name="{0}" type="{1}"><parent link="{2}"/><child link="{3}"/>'
         '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')


@pytest.mark.parametrize("xml, pattern", [
    ("<robot name='r'><link name='a'>", "malformed XML"),
    ("<notarobot/>", "expected <robot>"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1) + JOINT.format("j", "revolute", "a", "b")
            + '<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>'), "duplicate joint 'j'"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1)), "several root links"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1) + JOINT.format("j", "floating", "a", "b")),
     "joint 'j': type 'floating' is not supported inside the tree"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1) + JOINT.format("j", "planar", "a", "b")),
     "joint 'j': type 'planar' is not supported"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1) + JOINT.format("j", "screw", "a", "b")),
     "joint 'j': unknown joint type 'screw'"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1) + LINK.format("c", 1, 0.1)
            + JOINT.format("j1", "revolute", "a", "b")
            + JOINT.format("j2", "revolute", "a", "c").replace("<axis", '<mimic joint="jx"/><axis')),
     "joint 'j2': mimics joint 'jx', which does not exist"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1) + LINK.format("c", 1, 0.1)
            + JOINT.format("j1", "revolute", "a", "b").replace("<axis", '<mimic joint="j2"/><axis')
            + JOINT.format("j2", "revolute", "a", "c").replace("<axis", '<mimic joint="j1"/><axis')),
     r"joint 'j1': its mimic joints form a loop \(j1 -> j2 -> j1\)"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1) + LINK.format("c", 1, 0.1)
            + JOINT.format("j1", "revolute", "a", "b")
            + LINK.format("d", 1, 0.1)
            + '<joint name="f" type="fixed"><parent link="a"/><child link="c"/></joint>'
            + JOINT.format("j2", "revolute", "a", "d").replace("<axis", '<mimic joint="f"/><axis')),
     "joint 'j2': mimics joint 'f', which is fixed"),
    # self-loop, islands forming a cycle (were silently dropped: a 4 kg model of an 8 kg URDF)
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1) + JOINT.format("j", "revolute", "a", "b")
            + JOINT.format("s", "revolute", "b", "b").replace('"s"', '"s"')),
     "joint 's': parent and child are the same link 'b' \\(a self-loop\\)"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1) + LINK.format("c", 2, 0.1)
            + LINK.format("d", 2, 0.1) + LINK.format("e", 2, 0.1)
            + JOINT.format("j", "revolute", "a", "b") + JOINT.format("k1", "revolute", "c", "d")
            + JOINT.format("k2", "revolute", "d", "c") + JOINT.format("k3", "revolute", "d", "e")),
     r"links \['c', 'd', 'e'\] are not connected to the root link 'a': joints \['k1', 'k2'\] "
     r"form a closed loop"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1e300, 0.1) + JOINT.format("j", "revolute", "a", "b")),
     "link 'b': mass 1e\\+300 kg is beyond the physical range \\(MAX_MASS = 1e\\+09 kg\\)"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 1e200) + JOINT.format("j", "revolute", "a", "b")),
     "link 'b': inertia ixx=1e\\+200, iyy=1e\\+200, izz=1e\\+200 beyond the physical range"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1)
            + JOINT.format("j", "revolute", "a", "b").replace("<axis", '<origin xyz="1e300 0 0"/><axis')),
     "joint 'j' origin xyz .* beyond the physical range"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1) + LINK.format("c", 1, 0.1)
            + JOINT.format("j1", "revolute", "a", "b") + JOINT.format("j2", "revolute", "b", "c")
            + JOINT.format("j3", "revolute", "c", "b")), "closed loop"),
    (_robot(LINK.format("a", 1, 0.1) + JOINT.format("j", "revolute", "a", "ghost")),
     "joint 'j': child link 'ghost' does not exist"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", -1, 0.1) + JOINT.format("j", "revolute", "a", "b")),
     "link 'b': negative mass"),
    (_robot(LINK.format("a", 1, 0.1) + '<link name="b"><inertial><mass value="1"/><inertia ixx="1" '
            'iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            + JOINT.format("j", "revolute", "a", "b")), "link 'b'.*triangle inequality"),
    (_robot(LINK.format("a", 1, 0.1) + '<link name="b"><inertial><mass value="1"/><inertia ixx="0.1" '
            'iyy="0.1" izz="0.1" ixy="0.5" ixz="0" iyz="0"/></inertial></link>'
            + JOINT.format("j", "revolute", "a", "b")), "link 'b'.*not positive semi-definite"),
    (_robot(LINK.format("a", 1, 0.1) + '<link name="b"/>' + JOINT.format("j", "revolute", "a", "b")),
     "joint 'j': moves no mass"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1)
            + JOINT.format("j", "revolute", "a", "b").replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 0"/>')),
     "joint 'j': zero-length axis"),
    (_robot(LINK.format("a", 1, 0.1) + LINK.format("b", 1, 0.1)
            + JOINT.format("j", "revolute", "a", "b").replace("<axis", '<origin xyz="1 2"/><axis')),
     "joint 'j' origin xyz"),
])
def test_invalid_urdfs_raise_value_error_naming_the_culprit(xml, pattern):
    with pytest.raises(ValueError, match=pattern):
        vm.load_model(xml)


def test_missing_file_and_bad_base():
    with pytest.raises(ValueError, match="URDF file not found: '/no/such.urdf'"):
        vm.load_model("/no/such.urdf")
    with pytest.raises(ValueError, match="unknown vehicle group"):
        vm.load_model(random_tree_urdf(), base="SE5")


def test_massless_vehicle_cannot_float_but_can_be_fixed():
    xml = _robot('<link name="a"/>' + LINK.format("b", 1, 0.1) + JOINT.format("j", "revolute", "a", "b"))
    with pytest.raises(ValueError, match="joint 'j': its motion can be reproduced by moving the vehicle"):
        vm.load_model(xml, base="SE3")  # joint and vehicle rotations move the same single body
    assert vm.load_model(xml, base="fixed").n == 1


def test_revolute_joint_moving_only_a_point_mass_on_its_axis_is_rejected():
    xml = _robot(LINK.format("a", 1, 0.1) + '<link name="b"><inertial><mass value="1"/>'
                 '<inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>'
                 + JOINT.format("j", "revolute", "a", "b"))
    with pytest.raises(ValueError, match="joint 'j': moves no mass"):
        vm.load_model(xml)


def test_fixed_links_are_merged_and_kept_as_frames():
    xml = random_tree_urdf(seed=2)
    m = vm.load_model(xml)
    assert "tool0" in m.frame_names and "camera" in m.frame_names
    assert "tool_fixed" not in m.joint_names and len(m.joint_names) == 5
    # the merged camera mass is part of the vehicle body
    import xml.etree.ElementTree as ET
    masses = [float(e.get("value")) for e in ET.fromstring(xml).iter("mass")]
    assert abs(m.total_mass - sum(masses)) < 1e-12
    np.testing.assert_allclose(m.frame_pose(np.zeros(5), "base"), np.eye(4))


def test_xacro_source(tmp_path):
    body = random_tree_urdf(seed=1).replace('<robot name="random_tree">', "")
    p = tmp_path / "r.urdf.xacro"
    p.write_text('<robot name="x" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                 '<xacro:property name="m" value="2.0"/>' + body)
    m = vm.load_model(str(p))
    m_ref = vm.load_model(random_tree_urdf(seed=1))
    np.testing.assert_allclose(m.mass_matrix(np.ones(5)), m_ref.mass_matrix(np.ones(5)), atol=1e-12)
    bad = tmp_path / "bad.xacro"
    bad.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro"><xacro:nope/></robot>')
    with pytest.raises(ValueError, match="xacro"):
        vm.load_model(str(bad))
