"""The case study of paper 000 (Examples 1–3): a planar SE(2) rover carrying a 2-revolute-joint arm.

The paper is symbolic only (seeds-LP.md §5.1–5.2), so "matching the paper" means (seeds-LP §5.4):

1. the URDF is built *here* from the paper's frames ḡ_1^0 (22), ḡ_2^1 (25), ḡ_𝔢^2 (26) and the CoM
   frames, with the §5.3 numbers (not the paper's: it has none);
2. the paper's symbolic matrices — ξ_1, ξ_2, e^{ξ̂q} (23)/(24), Ad_{e^{ξ̂_1q_1}} (43),
   Ad_{e^{ξ̂_2q_2}} (44), Ad_{g_0^I(h)} (46), 𝔐_1, 𝔐_2 ((126), reconstructed), g_𝔢^0 (26), the base
   Jacobian (29)/(41)–(42) — are typed in with sympy from the text and compared with the library;
3. M from (65)–(67) equals the direct sum of body kinetic energies (48), with body Jacobians
   obtained by finite differences of the paper's own forward kinematics;
4. inclined gravity gives f_u ≠ 0 (113), energy balance dE/dt = input power holds, and momentum is
   *not* conserved (gravity and the ground constraint act), except for the exact planar law
   dp_xy/dt = m_tot a_xy.

The printed body inertias (124)/(125) are wrong (seeds-LP §8 item 10); the test shows it.
"""
import os
import warnings

import numpy as np
import pytest
import sympy as sp
from scipy.spatial.transform import Rotation

import vm_dynamics as vm
from vm_dynamics.core import lie
from vm_dynamics.dynamics import lp

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# seeds-LP.md §5.3 numbers (l0, l1, l2, m0, m1, m2, J0, J1, J2); rods: J = diag(0.01, ml²/12, ml²/12)
PARAMS_53 = dict(l0=0.5, l1=1.0, l2=0.8, m0=50.0, m1=5.0, m2=3.0, J0=(5.0, 5.0, 8.0),
                 J1=(0.01, 5.0 / 12, 5.0 / 12), J2=(0.01, 3.0 * 0.64 / 12, 3.0 * 0.64 / 12))
# a generic set with distinct principal moments, so that every entry of (126) is discriminating
PARAMS_GENERIC = dict(l0=0.37, l1=1.13, l2=0.71, m0=41.0, m1=4.3, m2=2.2, J0=(4.1, 5.3, 7.9),
                      J1=(0.083, 0.47, 0.52), J2=(0.061, 0.11, 0.16))
PARAM_SETS = {"seeds_5.3": PARAMS_53, "generic": PARAMS_GENERIC}


# ----------------------------------------------------------------------------- the paper's frames
def paper_frames(P):
    """ḡ_1^0 (22), ḡ_2^1 (25), ḡ_𝔢^2 (26), ḡ_cm,1^1 (22), ḡ_cm,2^2 (25) as numpy 4×4."""
    l0, l1, l2 = P["l0"], P["l1"], P["l2"]
    g10 = np.array([[0, 0, 1, 0], [0, -1, 0, 0], [1, 0, 0, l0], [0, 0, 0, 1]], dtype=float)
    g21 = np.array([[1, 0, 0, l1], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], dtype=float)
    ge2 = lie.make_pose(np.eye(3), [l2, 0, 0])
    gcm1 = lie.make_pose(np.eye(3), [l1 / 2, 0, 0])
    gcm2 = lie.make_pose(np.eye(3), [l2 / 2, 0, 0])
    return g10, g21, ge2, gcm1, gcm2


def _rz(a):
    return np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])


def _ry(a):
    return np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])


def _rx(a):
    return np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])


def urdf_rpy(R):
    """URDF rpy of R (R = Rz(y) Ry(p) Rx(r)), valid at gimbal lock, verified by recomposition."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # scipy warns at gimbal lock (p = ±π/2) but is right
        r, p, y = Rotation.from_matrix(R).as_euler("xyz")   # extrinsic x, y, z
    assert np.abs(_rz(y) @ _ry(p) @ _rx(r) - R).max() < 1e-15
    return r, p, y


def case_study_urdf(P):
    """URDF of the rover–arm built from the paper's frames (the vehicle frame is at its CoM, (20))."""
    g10, g21, ge2, gcm1, gcm2 = paper_frames(P)

    def origin(g):
        xyz = " ".join(repr(float(v)) for v in g[:3, 3])
        rpy = " ".join(repr(float(v)) for v in urdf_rpy(g[:3, :3]))
        return f'<origin xyz="{xyz}" rpy="{rpy}"/>'

    def inertial(m, J, gcm):
        return (f'<inertial>{origin(gcm)}<mass value="{m!r}"/><inertia ixx="{J[0]!r}" ixy="0" '
                f'ixz="0" iyy="{J[1]!r}" iyz="0" izz="{J[2]!r}"/></inertial>')

    # each joint turns about z of the link that follows it: z_1 = x_0, z_2 = y_0 at home (23)/(24)
    return f"""<robot name="paper000_case_study">
  <link name="base_link">{inertial(P["m0"], P["J0"], np.eye(4))}</link>
  <link name="link1">{inertial(P["m1"], P["J1"], gcm1)}</link>
  <link name="link2">{inertial(P["m2"], P["J2"], gcm2)}</link>
  <link name="ee"/>
  <joint name="joint1" type="continuous"><parent link="base_link"/><child link="link1"/>
    {origin(g10)}<axis xyz="0 0 1"/></joint>
  <joint name="joint2" type="continuous"><parent link="link1"/><child link="link2"/>
    {origin(g21)}<axis xyz="0 0 1"/></joint>
  <joint name="ee_joint" type="fixed"><parent link="link2"/><child link="ee"/>{origin(ge2)}</joint>
</robot>"""


def make_model(P, gravity=(0.0, 0.0, -9.81)):
    return vm.load_model(case_study_urdf(P), base="SE2", gravity=gravity)


# ----------------------------------------------------------------------------- sympy, from the text
l0, l1, l2, q1, q2 = sp.symbols("l_0 l_1 l_2 q_1 q_2", real=True)
m1, m2 = sp.symbols("m_1 m_2", positive=True)
Ixx1, Iyy1, Izz1, Ixx2, Iyy2, Izz2 = sp.symbols("I_xx1 I_yy1 I_zz1 I_xx2 I_yy2 I_zz2", positive=True)
th, px, py = sp.symbols("theta_h p_x p_y", real=True)
l01 = l0 + l1
c1, s1, c2, s2 = sp.cos(q1), sp.sin(q1), sp.cos(q2), sp.sin(q2)

XI1 = sp.Matrix([0, l0, 0, 1, 0, 0])                                           # (23)
XI2 = sp.Matrix([-l01, 0, 0, 0, 1, 0])                                         # (24), 6th entry restored
E1 = sp.Matrix([[1, 0, 0, 0], [0, c1, -s1, l0 * s1], [0, s1, c1, l0 * (1 - c1)], [0, 0, 0, 1]])   # (23)
E2 = sp.Matrix([[c2, 0, s2, -l01 * s2], [0, 1, 0, 0], [-s2, 0, c2, l01 * (1 - c2)], [0, 0, 0, 1]])  # (24)
AD_E1 = sp.Matrix([[1, 0, 0, 0, l0 * (1 - c1), l0 * s1],                       # (43)
                   [0, c1, -s1, l0 * (1 - c1), 0, 0],
                   [0, s1, c1, -l0 * s1, 0, 0],
                   [0, 0, 0, 1, 0, 0],
                   [0, 0, 0, 0, c1, -s1],
                   [0, 0, 0, 0, s1, c1]])
AD_E2 = sp.Matrix([[c2, 0, s2, 0, l01 * (c2 - 1), 0],                          # (44)
                   [0, 1, 0, l01 * (c2 - 1), 0, l01 * s2],
                   [-s2, 0, c2, 0, -l01 * s2, 0],
                   [0, 0, 0, c2, 0, s2],
                   [0, 0, 0, 0, 1, 0],
                   [0, 0, 0, -s2, 0, c2]])
G10 = sp.Matrix([[0, 0, 1, 0], [0, -1, 0, 0], [1, 0, 0, l0], [0, 0, 0, 1]])    # (22)
G21 = sp.Matrix([[1, 0, 0, l1], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])    # (25)
GE2 = sp.Matrix([[1, 0, 0, l2], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])     # (26)
# g_𝔢^0 = e^{ξ̂_1q_1} e^{ξ̂_2q_2} ḡ_1^0 ḡ_2^1 ḡ_𝔢^2 (text after (26)); closed form from seeds-LP §5.1
GE0_CLOSED = sp.Matrix([[s2, c2, 0, l2 * s2],
                        [-s1 * c2, s1 * s2, c1, -(l1 + l2 * c2) * s1],
                        [c1 * c2, -s2 * c1, s1, l0 + l1 * c1 + l2 * c1 * c2],
                        [0, 0, 0, 1]])
# Ad_{e^{ξ̂_1q_1}} ξ_2, the third column of the base Jacobian ⁰J_2^I (29), (41)–(42) reconstructed
S2_CLOSED = sp.Matrix([-l0 * c1 - l1, 0, 0, 0, c1, s1])


def _sym_skew(w):
    return sp.Matrix([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def _sym_Ad(g):
    R, p = g[:3, :3], g[:3, 3]
    return sp.Matrix(sp.BlockMatrix([[R, _sym_skew(p) * R], [sp.zeros(3), R]]))


def _sym_Ad_inv(g):
    R, p = g[:3, :3], g[:3, 3]
    return sp.Matrix(sp.BlockMatrix([[R.T, -R.T * _sym_skew(p)], [sp.zeros(3), R.T]]))


# (46): Ad_{g_0^I(h)} with R = blockdiag(R_h, 1), p = [p_h; l_0]
_RH = sp.Matrix([[sp.cos(th), -sp.sin(th), 0], [sp.sin(th), sp.cos(th), 0], [0, 0, 1]])
AD_G0I = sp.Matrix(sp.BlockMatrix([[_RH, _sym_skew(sp.Matrix([px, py, l0])) * _RH], [sp.zeros(3), _RH]]))


def _reconstructed_126(m, c, Ia, Ib, Ic):
    """Pattern of the reconstructed (126): c = m·(height of the CoM above the vehicle frame)."""
    return sp.Matrix([[m, 0, 0, 0, c, 0],
                      [0, m, 0, -c, 0, 0],
                      [0, 0, m, 0, 0, 0],
                      [0, -c, 0, Ia + c ** 2 / m, 0, 0],
                      [c, 0, 0, 0, Ib + c ** 2 / m, 0],
                      [0, 0, 0, 0, 0, Ic]])


FRAK_M1 = _reconstructed_126(m1, m1 * (l0 + l1 / 2), Izz1, Iyy1, Ixx1)     # (126) 𝔐_1
FRAK_M2 = _reconstructed_126(m2, m2 * (l01 + l2 / 2), Iyy2, Izz2, Ixx2)    # 𝔐_2, same pattern


def _body_inertia_49(m, l, Ixx, Iyy, Izz):
    """(49): ^i𝓜_i for a CoM at a = (l/2, 0, 0) in the joint frame, CoM axes = joint axes."""
    a = sp.Matrix([l / 2, 0, 0])
    A = _sym_skew(a)
    J = sp.diag(Ixx, Iyy, Izz) + m * ((a.T * a)[0] * sp.eye(3) - a * a.T)
    return sp.Matrix(sp.BlockMatrix([[m * sp.eye(3), -m * A], [m * A, J]]))


def _printed_124(m, l, Ixx, Iyy, Izz):
    """(124) exactly as printed (CoM offset along z, parallel-axis term −½ml²): wrong."""
    U = sp.Matrix([[0, m * l / 2, 0], [-m * l / 2, 0, 0], [0, 0, 0]])
    return sp.Matrix(sp.BlockMatrix([[m * sp.eye(3), U], [U.T, sp.diag(Ixx, Iyy, Izz)
                                                          - sp.diag(m * l ** 2 / 2, m * l ** 2 / 2, 0)]]))


def _subs(P):
    return {l0: P["l0"], l1: P["l1"], l2: P["l2"], m1: P["m1"], m2: P["m2"],
            Ixx1: P["J1"][0], Iyy1: P["J1"][1], Izz1: P["J1"][2],
            Ixx2: P["J2"][0], Iyy2: P["J2"][1], Izz2: P["J2"][2]}


def _f(expr, P, args=(q1, q2)):
    """Lambdify a sympy matrix after substituting the parameter set P."""
    fn = sp.lambdify(args, expr.subs(_subs(P)), "numpy")
    return lambda *a: np.array(fn(*a), dtype=float)


def _random_q(rng, k=6):
    return [rng.uniform(-np.pi, np.pi, 2) for _ in range(k)]


# ============================================================================= tests
def test_urdf_origins_reproduce_the_paper_frames_including_gimbal_lock():
    """ḡ_1^0 has pitch −π/2 (gimbal lock): the rpy written to the URDF must rebuild it exactly."""
    P = PARAMS_53
    g10, g21, _, _, _ = paper_frames(P)
    r, p, _ = urdf_rpy(g10[:3, :3])
    assert abs(abs(p) - np.pi / 2) < 1e-12                       # it really is the lock case
    m = make_model(P)
    assert m.base_type == "SE2" and m.b == 3 and m.n == 2
    assert m.joint_names == ["joint1", "joint2"]
    np.testing.assert_allclose(m.home[1], g10, atol=1e-15)
    np.testing.assert_allclose(m.home[2], g10 @ g21, atol=1e-15)
    np.testing.assert_allclose(m.home[2], np.array([[0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, P["l0"] + P["l1"]],
                                                    [0, 0, 0, 1]]), atol=1e-15)   # ḡ_2^0 (§5.1)
    assert m.total_mass == pytest.approx(P["m0"] + P["m1"] + P["m2"], rel=1e-15)


@pytest.mark.parametrize("pset", sorted(PARAM_SETS))
def test_joint_twists_and_exponentials_23_24(pset):
    P = PARAM_SETS[pset]
    m = make_model(P)
    np.testing.assert_allclose(m.xi[0], _f(XI1, P, ())().ravel(), atol=1e-15)
    np.testing.assert_allclose(m.xi[1], _f(XI2, P, ())().ravel(), atol=1e-15)
    e1, e2 = _f(E1, P), _f(E2, P)
    for q in _random_q(np.random.default_rng(1)):
        kin = lp.kinematics(m, q)
        np.testing.assert_allclose(kin.E[0], e1(*q), atol=1e-12)
        np.testing.assert_allclose(kin.E[1], e2(*q), atol=1e-12)


@pytest.mark.parametrize("pset", sorted(PARAM_SETS))
def test_adjoint_matrices_43_44_and_base_jacobian(pset):
    P = PARAM_SETS[pset]
    m = make_model(P)
    ad1, ad2, s2 = _f(AD_E1, P), _f(AD_E2, P), _f(S2_CLOSED, P)
    for q in _random_q(np.random.default_rng(2)):
        kin = lp.kinematics(m, q)
        np.testing.assert_allclose(lie.Ad(kin.E[0]), ad1(*q), atol=1e-12)
        np.testing.assert_allclose(lie.Ad(kin.E[1]), ad2(*q), atol=1e-12)
        np.testing.assert_allclose(kin.S[0], m.xi[0], atol=1e-15)      # ⁰J_2^I column 2 = ξ_1
        np.testing.assert_allclose(kin.S[1], s2(*q).ravel(), atol=1e-12)  # column 3 = Ad_{E_1}ξ_2


def test_the_transcribed_matrices_are_self_consistent():
    """Symbolic checks of the paper's own algebra (independent of the library):
    (43)/(44) = Ad of (23)/(24) by (5); (23)/(24) fix their twists (61); g_𝔢^0 closed form = product (26);
    Ad_{E_1}ξ_2 as reconstructed for (41)–(42)."""
    zero6 = sp.zeros(6, 6)
    assert sp.simplify(_sym_Ad(E1) - AD_E1) == zero6
    assert sp.simplify(_sym_Ad(E2) - AD_E2) == zero6
    assert sp.simplify(AD_E1 * XI1 - XI1) == sp.zeros(6, 1)
    assert sp.simplify(AD_E2 * XI2 - XI2) == sp.zeros(6, 1)
    assert sp.simplify(E1 * E2 * G10 * G21 * GE2 - GE0_CLOSED) == sp.zeros(4, 4)
    assert sp.simplify(AD_E1 * XI2 - S2_CLOSED) == sp.zeros(6, 1)
    # ξ_i = Ad_{ḡ_{i-1}^0} (local z-twist) (17): the URDF axes (0,0,1) give the paper's twists
    ez = sp.Matrix([0, 0, 0, 0, 0, 1])
    assert sp.simplify(_sym_Ad(G10) * ez - XI1) == sp.zeros(6, 1)
    assert sp.simplify(_sym_Ad(G10 * G21) * ez - XI2) == sp.zeros(6, 1)


@pytest.mark.parametrize("pset", sorted(PARAM_SETS))
def test_end_effector_pose_26(pset):
    P = PARAM_SETS[pset]
    m = make_model(P)
    ge0 = _f(GE0_CLOSED, P)
    for q in _random_q(np.random.default_rng(3)):
        np.testing.assert_allclose(m.frame_pose(q, "ee"), ge0(*q), atol=1e-12)


def test_vehicle_adjoint_46():
    """g_0^I(h) = ḡ_0^I ι(h) (20)/(21) with h from the SE(2) exponential; Ad by (46)."""
    P = PARAMS_53
    m = make_model(P)
    g0bar = lie.make_pose(np.eye(3), [0, 0, P["l0"]])        # (20)
    adg = sp.lambdify((th, px, py), AD_G0I.subs(l0, P["l0"]), "numpy")
    rng = np.random.default_rng(4)
    for _ in range(6):
        h = m.group.exp(rng.normal(size=3) * [2.0, 2.0, 2.5])
        # ι(h) = [[R_h, 0, p_h], [0, 1, 0], [0, 0, 1]] (21): rotation about z₀, translation in x₀–y₀
        np.testing.assert_allclose(h[2], [0, 0, 1, 0], atol=1e-15)
        np.testing.assert_allclose(h[:2, 2], 0, atol=1e-15)
        theta = np.arctan2(h[1, 0], h[0, 0])
        np.testing.assert_allclose(lie.Ad(g0bar @ h), np.array(adg(theta, h[0, 3], h[1, 3]), dtype=float),
                                   atol=1e-12)


@pytest.mark.parametrize("pset", sorted(PARAM_SETS))
def test_body_inertias_in_the_vehicle_frame_126(pset):
    """𝔐_0 (123), 𝔐_1 (126 reconstructed), 𝔐_2 (same pattern) — and (126) = (55) of (49) symbolically."""
    P = PARAM_SETS[pset]
    m = make_model(P)
    np.testing.assert_allclose(m.vehicle_inertia, np.diag([P["m0"]] * 3 + list(P["J0"])), atol=1e-15)
    np.testing.assert_allclose(m.body_inertia_home[0], _f(FRAK_M1, P, ())(), atol=1e-12)
    np.testing.assert_allclose(m.body_inertia_home[1], _f(FRAK_M2, P, ())(), atol=1e-12)
    # (55): 𝔐_i = Ad⁻ᵀ_{ḡ_i^0} ^i𝓜_i Ad⁻¹_{ḡ_i^0}, with ^i𝓜_i from (49)
    for frak, g_home, body in ((FRAK_M1, G10, _body_inertia_49(m1, l1, Ixx1, Iyy1, Izz1)),
                               (FRAK_M2, G10 * G21, _body_inertia_49(m2, l2, Ixx2, Iyy2, Izz2))):
        Ai = _sym_Ad_inv(g_home)
        assert sp.simplify(Ai.T * body * Ai - frak) == sp.zeros(6, 6)


def test_printed_body_inertia_124_is_wrong():
    """seeds-LP §8 item 10: (124) puts the CoM on z and subtracts ½ml² — not (49), and indefinite
    for the §5.3 rod (this is why the corrected inertias are used)."""
    P = PARAMS_53
    m = make_model(P)
    lib_body1 = lie.Ad(m.home[1]).T @ m.body_inertia_home[0] @ lie.Ad(m.home[1])   # ^1𝓜_1
    correct = np.array(_body_inertia_49(m1, l1, Ixx1, Iyy1, Izz1).subs(_subs(P)), dtype=float)
    printed = np.array(_printed_124(m1, l1, Ixx1, Iyy1, Izz1).subs(_subs(P)), dtype=float)
    np.testing.assert_allclose(lib_body1, correct, atol=1e-12)
    assert np.abs(printed - correct).max() > 1.0
    assert np.linalg.eigvalsh(printed)[0] < -1.0 < 0 < np.linalg.eigvalsh(correct)[0]


# ----------------------------------------------------------------------------- dynamics
def _body_poses(P):
    """g_i^0(q) of bodies 0, 1, 2 from the paper's POE (16): I, E_1 ḡ_1^0, E_1 E_2 ḡ_2^0 (sympy)."""
    f1 = _f(E1 * G10, P)
    f2 = _f(E1 * E2 * G10 * G21, P)
    return [lambda *q: np.eye(4), f1, f2]


def _spatial_inertia_49(m, com, J):
    """^i𝓜_i about the body-frame origin, [v; ω] ordering, CoM axes parallel to body axes (49)."""
    C = lie.skew(np.asarray(com, dtype=float))
    return np.block([[m * np.eye(3), -m * C], [m * C, np.diag(J) - m * C @ C]])


def test_mass_matrix_equals_direct_sum_of_body_kinetic_energies_48():
    """M = 𝒥ᵀ diag(𝔐_i) 𝒥 (54), (65)–(67) equals Σ_i (^iJ_i)ᵀ ^i𝓜_i ^iJ_i with the body Jacobians
    built by central differences of the paper's forward kinematics (no library kinematics):
    column k of ^iJ_i is (g_i⁻¹ ∂g_i/∂s_k)^∨ (3)."""
    P = PARAMS_53
    m = make_model(P)
    poses = _body_poses(P)
    inertias = [_spatial_inertia_49(P["m0"], [0, 0, 0], P["J0"]),
                _spatial_inertia_49(P["m1"], [P["l1"] / 2, 0, 0], P["J1"]),
                _spatial_inertia_49(P["m2"], [P["l2"] / 2, 0, 0], P["J2"])]
    iota = np.zeros((6, 3))
    iota[[0, 1, 5], [0, 1, 2]] = 1.0                                      # (39): [e1 e2 e6]
    h = 1e-5
    rng = np.random.default_rng(5)
    for q in _random_q(rng, 4):
        M_direct = np.zeros((5, 5))
        for pose, Mi in zip(poses, inertias):
            gi = pose(*q)
            J = np.zeros((6, 5))
            for k in range(5):
                def body(eps, k=k):
                    if k < 3:                                   # vehicle moved: g exp(ε ι e_k) g_i^0
                        X = lie.hat(eps * iota[:, k])
                        return (np.eye(4) + X + X @ X / 2 + X @ X @ X / 6) @ gi    # exp to O(ε⁴)
                    dq = np.zeros(2)
                    dq[k - 3] = eps
                    return pose(*(q + dq))
                D = np.linalg.solve(gi, body(h) - body(-h)) / (2 * h)   # ≈ (g_i⁻¹ ∂g_i)^ (3)
                J[:, k] = lie.vee(D)
            M_direct += J.T @ Mi @ J                                        # (48)
        np.testing.assert_allclose(m.mass_matrix(q), M_direct, rtol=0, atol=1e-8 * np.abs(M_direct).max())


def _inclined_gravity(alpha=0.25, beta=0.7):
    return tuple(9.81 * np.array([np.sin(alpha) * np.cos(beta), np.sin(alpha) * np.sin(beta), -np.cos(alpha)]))


def _potential(P, poses, a, g, q):
    """U = −Σ m_k aᵀ p_k^I (130) from the paper's kinematics (``poses`` = :func:`_body_poses`):
    CoMs at ḡ_cm,i (22)/(25), vehicle CoM at its frame origin (20)."""
    coms = [np.zeros(3), np.array([P["l1"] / 2, 0, 0]), np.array([P["l2"] / 2, 0, 0])]
    masses = [P["m0"], P["m1"], P["m2"]]
    U = 0.0
    for pose, c, mk in zip(poses, coms, masses):
        gk = g @ pose(*q)
        U -= mk * np.dot(a, gk[:3, :3] @ c + gk[:3, 3])
    return U


def test_symmetry_breaking_gravity_f_u_113():
    """Gravity along z is SE(2)-invariant (f_u = 0); inclined gravity gives f_u ≠ 0, equal to the
    left-trivialised derivative (113) of the paper's potential (130); ∂u/∂q (133) likewise."""
    P = PARAMS_53
    rng = np.random.default_rng(6)
    g0bar = lie.make_pose(np.eye(3), [0, 0, P["l0"]])
    iota = np.zeros((6, 3))
    iota[[0, 1, 5], [0, 1, 2]] = 1.0
    poses = _body_poses(P)
    for gravity, expect_zero in (((0.0, 0.0, -9.81), True), (_inclined_gravity(), False)):
        m = make_model(P, gravity)
        a = np.array(gravity)
        for q in _random_q(rng, 3):
            g = g0bar @ m.group.exp(rng.normal(size=3))
            f_u, du_dq = lp.gravity_forces(m, lp.kinematics(m, q), g)
            h = 1e-6
            fd_fu = [(_potential(P, poses, a, g @ lie.se3_exp(h * iota[:, k]), q)
                      - _potential(P, poses, a, g @ lie.se3_exp(-h * iota[:, k]), q)) / (2 * h) for k in range(3)]
            fd_dq = [(_potential(P, poses, a, g, q + h * e) - _potential(P, poses, a, g, q - h * e)) / (2 * h)
                     for e in np.eye(2)]
            np.testing.assert_allclose(f_u, fd_fu, atol=1e-6)
            np.testing.assert_allclose(du_dq, fd_dq, atol=1e-6)
            assert abs(m.potential_energy(g, q) - _potential(P, poses, a, g, q)) < 1e-11
            if expect_zero:
                assert np.abs(f_u).max() < 1e-12
            else:
                assert np.abs(f_u[:2]).max() > 10.0      # m_tot |a_xy| ≈ 140 N pulls it downhill


def test_energy_balance_and_planar_momentum_law_with_inclined_gravity():
    """dE/dt = τᵀq̇ + f₀ᵀ𝒱 (central differences along the flow), while the momentum is not conserved:
    only its in-plane linear part obeys an exact law, dp_xy/dt = m_tot a_xy (the ground reaction is
    normal to the plane)."""
    P = PARAMS_53
    a = np.array(_inclined_gravity())
    m = make_model(P, tuple(a))
    rng = np.random.default_rng(7)
    g0bar = lie.make_pose(np.eye(3), [0, 0, P["l0"]])
    for _ in range(4):
        g = g0bar @ m.group.exp(rng.normal(size=3))
        V, q, qd = rng.normal(size=3), rng.uniform(-np.pi, np.pi, 2), rng.normal(size=2)
        tau, f0 = rng.normal(size=2) * 5, rng.normal(size=3) * 5
        Vd, qdd = m.forward_dynamics(g, V, q, qd, tau, f0)
        h = 1e-6

        def state(t):
            return g @ m.group.exp(t * V), V + t * Vd, q + t * qd, qd + t * qdd

        dE = (m.energy(*state(h)) - m.energy(*state(-h))) / (2 * h)
        power = tau @ qd + f0 @ V
        assert abs(dE - power) < 1e-6 * max(1.0, abs(power))
        dpi = (m.momentum(*state(h)) - m.momentum(*state(-h))) / (2 * h)
        f_inertial = g[:3, :3] @ m.group.embed(f0)[:3]
        np.testing.assert_allclose(dpi[:2], m.total_mass * a[:2] + f_inertial[:2], atol=1e-6 * 500)
        assert np.abs(dpi).max() > 1.0                 # momentum is not conserved


def _rkmk4_step(m, g, y, dt, tau):
    """One RKMK4 step (seeds-LP §4.3) on (g, [𝒱; q; q̇]); Θ̇ = dexp⁻¹_{−Θ} ι₀𝒱."""
    b, n = m.b, m.n

    def f(gs, ys):
        Vd, qdd = m.forward_dynamics(gs, ys[:b], ys[b:b + n], ys[b + n:], tau)
        return np.concatenate([Vd, ys[b + n:], qdd])

    K, F = [], []
    for c, prev in ((0.0, None), (0.5, 0), (0.5, 1), (1.0, 2)):
        Th = np.zeros(6) if prev is None else c * dt * K[prev]
        ys = y if prev is None else y + c * dt * F[prev]
        K.append(lie.dexp_inv(-Th) @ m.group.embed(ys[:b]))
        F.append(f(g @ lie.se3_exp(Th), ys))
    return (g @ lie.se3_exp(dt / 6 * (K[0] + 2 * K[1] + 2 * K[2] + K[3])),
            y + dt / 6 * (F[0] + 2 * F[1] + 2 * F[2] + F[3]))


def test_free_run_with_inclined_gravity_conserves_energy_not_momentum():
    """0.5 s unforced RKMK4 run: energy constant to 1e-8 (relative), in-plane linear momentum grows
    exactly like m_tot a_xy t, the rest of the momentum is not conserved."""
    P = PARAMS_53
    a = np.array(_inclined_gravity())
    m = make_model(P, tuple(a))
    g = lie.make_pose(np.eye(3), [0, 0, P["l0"]]) @ m.group.exp([0.3, -0.2, 0.4])
    V, q, qd = np.array([0.4, -0.3, 0.8]), np.array([0.7, -1.1]), np.array([1.5, -2.0])
    y = np.concatenate([V, q, qd])
    E0, pi0 = m.energy(g, V, q, qd), m.momentum(g, V, q, qd)
    dt, steps = 2e-3, 250
    E_err = 0.0
    for k in range(steps):
        g, y = _rkmk4_step(m, g, y, dt, np.zeros(2))
        E_err = max(E_err, abs(m.energy(g, y[:3], y[3:5], y[5:]) - E0))
    t = steps * dt
    pi = m.momentum(g, y[:3], y[3:5], y[5:])
    assert E_err < 1e-8 * abs(E0) + 1e-8
    np.testing.assert_allclose(pi[:2], pi0[:2] + m.total_mass * a[:2] * t, atol=1e-7)
    assert np.abs(pi[2:] - pi0[2:]).max() > 1.0


def test_repo_planar_rover_urdf_matches_the_case_study():
    """urdf/planar_rover.urdf (shipped) is the same system: SE(2) base, same M, dynamics, end effector."""
    path = os.path.join(REPO, "urdf", "planar_rover.urdf")
    assert os.path.isfile(path), "urdf/planar_rover.urdf is missing from the repository"
    gravity = _inclined_gravity()
    shipped = vm.load_model(path, base="SE2", gravity=gravity)
    ours = make_model(PARAMS_53, gravity)
    assert shipped.base_type == "SE2" and shipped.b == 3 and shipped.n == 2
    ee = [f for f in shipped.frame_names if shipped.frame_body[f] == 2 and f != shipped.link_names[2]]
    assert ee, "no end-effector frame on link 2 of planar_rover.urdf"
    rng = np.random.default_rng(8)
    for q in _random_q(rng, 5):
        M1, M2 = shipped.mass_matrix(q), ours.mass_matrix(q)
        np.testing.assert_allclose(M1, M2, rtol=0, atol=1e-12 * np.abs(M2).max())
        np.testing.assert_allclose(shipped.frame_pose(q, ee[0]), ours.frame_pose(q, "ee"), atol=1e-12)
        g = lie.make_pose(np.eye(3), [0, 0, 0.5]) @ ours.group.exp(rng.normal(size=3))
        V, qd, tau = rng.normal(size=3), rng.normal(size=2), rng.normal(size=2)
        for a_, b_ in zip(shipped.forward_dynamics(g, V, q, qd, tau), ours.forward_dynamics(g, V, q, qd, tau)):
            np.testing.assert_allclose(a_, b_, rtol=0, atol=1e-10 * max(1.0, np.abs(b_).max()))
