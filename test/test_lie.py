"""SE(3)/SO(3) and vehicle subgroups against independent oracles: scipy's expm/logm, finite
differences and the defining identities (paper 000, eqs. 2–7)."""
import numpy as np
import pytest
from scipy.linalg import expm, logm

from vm_dynamics import lie
from vm_dynamics.groups import FIXED, SE2, SE3, SO3, get_group

rng = np.random.default_rng(1)


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
