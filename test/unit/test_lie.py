"""SE(3)/SO(3) and vehicle subgroups against independent oracles: scipy's expm/logm, finite
differences and the defining identities (paper 000, eqs. 2–7)."""
import numpy as np
import pytest
from scipy.linalg import expm, logm

from vm_dynamics.core import lie
from vm_dynamics.core.groups import FIXED, SE2, SE3, SO3, get_group

rng = np.random.default_rng(1)


def _series_jacobian(V, terms):
    """Oracle for dexp: the truncated series Σ_k ad_V^k/(k+1)!."""
    A = lie.ad(V)
    J, term = np.eye(6), np.eye(6)
    for k in range(1, terms):
        term = term @ A / (k + 1)
        J = J + term
    return J


def random_twists(k, scale=1.0):
    return [rng.normal(size=6) * scale for _ in range(k)]


@pytest.mark.parametrize("V", random_twists(5) + [np.zeros(6), np.array([1, 2, 3, 1e-9, 0, 0.0])])
def test_exp_matches_matrix_exponential(V):
    np.testing.assert_allclose(lie.se3_exp(V), expm(lie.hat(V)), rtol=0, atol=1e-13)


@pytest.mark.parametrize("theta", [0.0, 1e-12, 1e-7, 1e-3, 0.5, 2.0, np.pi - 1e-3,
                                   np.pi - 1e-7, np.pi - 1e-12, np.pi])
def test_so3_log_exp_round_trip_near_zero_and_pi(theta):
    axis = np.array([0.3, -0.5, 0.8])
    axis /= np.linalg.norm(axis)
    w = theta * axis
    R = lie.so3_exp(w)
    w2 = lie.so3_log(R)
    np.testing.assert_allclose(lie.so3_exp(w2), R, atol=1e-14)
    if theta < np.pi - 1e-6:
        np.testing.assert_allclose(w2, w, atol=1e-12)
    else:  # at π the axis sign is ambiguous
        assert abs(np.linalg.norm(w2) - theta) < 1e-7
        assert abs(abs(w2 @ axis) - theta) < 1e-7


def test_so3_log_at_exactly_pi_about_coordinate_axes():
    for R in (np.diag([1.0, -1, -1]), np.diag([-1.0, 1, -1]), np.diag([-1.0, -1, 1])):
        w = lie.so3_log(R)
        assert abs(np.linalg.norm(w) - np.pi) < 1e-12
        np.testing.assert_allclose(lie.so3_exp(w), R, atol=1e-14)


@pytest.mark.parametrize("V", random_twists(5) + random_twists(3, 1e-6))
def test_se3_log_inverts_exp_and_matches_logm(V):
    if np.linalg.norm(V[3:]) >= np.pi:
        V = V * (2.0 / np.linalg.norm(V[3:]))
    g = lie.se3_exp(V)
    np.testing.assert_allclose(lie.se3_log(g), V, atol=1e-12)
    np.testing.assert_allclose(lie.hat(lie.se3_log(g)), np.real(logm(g)), atol=1e-9)


def test_hat_vee_and_skew():
    V = rng.normal(size=6)
    np.testing.assert_array_equal(lie.vee(lie.hat(V)), V)
    a, b = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(lie.skew(a) @ b, np.cross(a, b), atol=1e-15)


def test_adjoint_identities():
    g = lie.se3_exp(rng.normal(size=6))
    h = lie.se3_exp(rng.normal(size=6))
    V = rng.normal(size=6)
    # (4): g V^ g⁻¹ = (Ad_g V)^
    np.testing.assert_allclose(lie.hat(lie.Ad(g) @ V), g @ lie.hat(V) @ lie.se3_inv(g), atol=1e-12)
    np.testing.assert_allclose(lie.Ad(g @ h), lie.Ad(g) @ lie.Ad(h), atol=1e-12)
    np.testing.assert_allclose(lie.Ad_inv(g), np.linalg.inv(lie.Ad(g)), atol=1e-12)
    np.testing.assert_allclose(lie.se3_inv(g), np.linalg.inv(g), atol=1e-13)


def test_ad_is_the_matrix_commutator_and_coad_its_transpose():
    V, W = rng.normal(size=6), rng.normal(size=6)
    X, Y = lie.hat(V), lie.hat(W)
    np.testing.assert_allclose(lie.ad(V) @ W, lie.vee(X @ Y - Y @ X), atol=1e-13)
    F = rng.normal(size=6)
    assert abs(F @ (lie.ad(V) @ W) - (lie.coad(V) @ F) @ W) < 1e-12
    # d/dt Ad_{exp(tV)} = ad_V Ad_{exp(tV)} (used in (116))
    h = 1e-6
    dAd = (lie.Ad(lie.se3_exp(h * V)) - lie.Ad(lie.se3_exp(-h * V))) / (2 * h)
    np.testing.assert_allclose(dAd, lie.ad(V), atol=1e-8)


def _series_dexp(V, terms=40):
    A = lie.ad(V)
    out, term = np.eye(6), np.eye(6)
    for k in range(1, terms):
        term = term @ A / (k + 1)
        out = out + term
    return out


@pytest.mark.parametrize("V", random_twists(4) + random_twists(2, 1e-5)
                         + [np.array([0.1, 0.2, 0.3, 0.0, 0.0, 3.1])])
def test_dexp_closed_form_matches_series_and_finite_differences(V):
    D = lie.dexp(V)
    np.testing.assert_allclose(D, _series_dexp(V), atol=1e-12)
    np.testing.assert_allclose(lie.dexp_inv(V) @ D, np.eye(6), atol=1e-11)
    # right-trivialised derivative: (d/dt exp(V + tW)) exp(-V) = (dexp_V W)^
    W = rng.normal(size=6)
    h = 1e-6
    dg = (lie.se3_exp(V + h * W) - lie.se3_exp(V - h * W)) / (2 * h)
    np.testing.assert_allclose(lie.vee(dg @ lie.se3_inv(lie.se3_exp(V))), D @ W, atol=1e-7)
    # left-trivialised: exp(-V) d/dt exp(V + tW) = (dexp_{-V} W)^
    np.testing.assert_allclose(lie.vee(lie.se3_inv(lie.se3_exp(V)) @ dg), lie.dexp(-V) @ W,
                               atol=1e-7)


def test_dexp_inv_regular_at_pi():
    V = np.array([0.3, -0.2, 0.1, 0.0, np.pi, 0.0])
    Di = lie.dexp_inv(V)
    assert np.all(np.isfinite(Di))
    np.testing.assert_allclose(Di @ lie.dexp(V), np.eye(6), atol=1e-11)


@pytest.mark.parametrize("group", [SE3, SE2, SO3])
def test_subgroup_is_closed_under_exp_and_bracket(group):
    xi, eta = rng.normal(size=group.dim), rng.normal(size=group.dim)
    g = group.exp(xi)
    # log ∘ exp = id on the subgroup, and exp stays in the subgroup
    np.testing.assert_allclose(group.log(g), xi if np.linalg.norm(group.embed(xi)[3:]) < np.pi
                               else group.log(g), atol=1e-12)
    V6 = lie.se3_log(g)
    outside = np.delete(V6, list(group.axes))
    np.testing.assert_allclose(outside, 0.0, atol=1e-12)
    # 𝔥 is a subalgebra: the bracket of two elements has no components outside it
    br = lie.ad(group.embed(xi)) @ group.embed(eta)
    np.testing.assert_allclose(np.delete(br, list(group.axes)), 0.0, atol=1e-13)
    np.testing.assert_allclose(group.ad(xi) @ eta, group.project(br), atol=1e-13)


def test_se2_ad_matches_paper_eq_136():
    vx, vy, wz = 0.3, -0.7, 1.1
    expected = np.array([[0, -wz, vy], [wz, 0, -vx], [0, 0, 0]])
    np.testing.assert_allclose(SE2.ad(np.array([vx, vy, wz])), expected, atol=1e-15)


def test_group_lookup():
    assert get_group("se3") is SE3 and get_group("Fixed") is FIXED
    assert SE3.dim == 6 and SE2.dim == 3 and SO3.dim == 3 and FIXED.dim == 0
    with pytest.raises(ValueError, match="unknown vehicle group.*SE3"):
        get_group("SE4")


# ---------------------------------------------------------------- robustness (issue 14)
_VEC3 = ["so3_exp", "so3_left_jacobian", "so3_left_jacobian_inv", "skew"]
_VEC6 = ["se3_exp", "dexp", "dexp_inv", "ad", "coad", "hat"]
_MAT4 = ["se3_log", "se3_inv", "Ad", "Ad_inv", "vee"]
_MAT3 = ["so3_log", "unskew"]
_ARG = {**{f: ("w", (3,)) for f in _VEC3[:3]}, "skew": ("w", (3,)),
        **{f: ("V", (6,)) for f in _VEC6}, "vee": ("X", (4, 4)),
        **{f: ("g", (4, 4)) for f in _MAT4[:4]}, "so3_log": ("R", (3, 3)), "unskew": ("W", (3, 3))}


def test_so3_exp_of_a_huge_angle_is_a_clean_error_not_an_overflow():
    # theta ** 3 on a Python float raised OverflowError above 5.6e102 (issue 14)
    with pytest.raises(ValueError, match=r"^w: entries must not exceed 1e\+100"):
        lie.so3_exp([1e103, 0, 0])


#: functions that only rearrange entries: any finite magnitude is fine
_REARRANGE = {"skew", "hat", "vee", "unskew"}


@pytest.mark.parametrize("fn", sorted(_ARG))
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 1e101, -1.7e308])
def test_non_finite_or_too_large_entries_raise_value_error_naming_the_argument(fn, bad):
    name, shape = _ARG[fn]
    x = np.zeros(shape)
    x.flat[-1] = bad
    x.flat[1] = -bad
    if fn in _REARRANGE and np.isfinite(bad):
        assert np.all(np.isfinite(getattr(lie, fn)(x)))
        return
    with pytest.raises(ValueError, match=rf"^{name}: "):
        getattr(lie, fn)(x)


@pytest.mark.parametrize("fn", sorted(_ARG))
@pytest.mark.parametrize("bad", [np.zeros(2), np.zeros((3, 4)), [[1, 2], [3]], "abc",
                                 np.ones(7, dtype=complex), np.ones(6, dtype=bool), None])
def test_wrong_shapes_and_types_raise_value_error_naming_the_argument(fn, bad):
    name, shape = _ARG[fn]
    if isinstance(bad, np.ndarray) and bad.dtype != float:
        bad = np.ones(shape, dtype=bad.dtype)       # right shape, wrong kind of number
    with pytest.raises(ValueError, match=rf"^{name}: "):
        getattr(lie, fn)(bad)


@pytest.mark.parametrize("scale", [1e3, 1e20, 1e60, 1e99])
def test_large_finite_arguments_give_finite_correct_results(scale):
    axis = np.array([0.48, -0.6, 0.64])
    w = scale * axis
    R = lie.so3_exp(w)
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-14)
    # the rotation by θ = ‖w‖ about the axis, with θ reduced modulo 2π by sin and cos
    theta = np.linalg.norm(w)
    K = lie.skew(axis / np.linalg.norm(axis))
    np.testing.assert_allclose(R, np.eye(3) + np.sin(theta) * K + (1 - np.cos(theta)) * K @ K,
                               atol=1e-14)
    V = np.concatenate([scale * np.array([1.0, -2, 3]), w])
    for fn in ("se3_exp", "dexp", "ad", "hat"):
        assert np.all(np.isfinite(getattr(lie, fn)(V))), fn
    try:
        assert np.all(np.isfinite(lie.dexp_inv(V)))
    except ValueError as exc:          # only at (or numerically at) a multiple of 2π
        assert str(exc).startswith("V: dexp⁻¹ is singular")


def test_left_jacobian_forms_agree_across_the_taylor_switch_and_stay_inverse():
    for theta in (0.9e-4, 1.1e-4, 0.19, 0.21, 1.0, 3.0, 6.0, 50.0):
        w = theta * np.array([0.6, 0.0, 0.8])
        V = np.concatenate([[0.3, -1.0, 2.0], w])
        if theta < 7:    # the series is summable in floating point
            np.testing.assert_allclose(lie.dexp(V), _series_jacobian(V, 80), atol=1e-12)
        np.testing.assert_allclose(lie.dexp(V) @ lie.dexp_inv(V), np.eye(6), atol=1e-9)


def test_pose_from_position_and_ros_quaternion():
    g = lie.pose([1.0, 2.0, 3.0], [0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)])
    np.testing.assert_allclose(g[:3, :3], lie.so3_exp([0, 0, np.pi / 2]), atol=1e-15)
    np.testing.assert_array_equal(g[:3, 3], [1, 2, 3])
    # one tolerance policy (core.rotations): unit norm within 1e-2, then normalised
    s = (1 + 5e-3) * np.sin(np.pi / 4)
    np.testing.assert_allclose(lie.pose([1, 2, 3], [0, 0, s, s]), g, atol=1e-15)
    for bad in ([0, 0, 0, 0], [0, 0, 1, 1], [0, 0, 3e99, 3e99]):
        with pytest.raises(ValueError, match="^quaternion_xyzw: not a unit quaternion"):
            lie.pose([0, 0, 0], bad)
    with pytest.raises(ValueError, match=r"^quaternion_xyzw: expected shape \(4,\)"):
        lie.pose([0, 0, 0], [0, 0, 1])
    with pytest.raises(ValueError, match="^position: contains NaN or Inf"):
        lie.pose([0, np.nan, 0], [0, 0, 0, 1])
