"""Matrix Lie groups SO(3) and SE(3): hat/vee, exp/log, Ad, ad, coadjoint, dexp, dexp⁻¹.

Conventions (paper 000, eqs. (2)–(7); used everywhere in vm_dynamics):

* A twist is ``V = [v; ω]`` (linear first), ``V^ = [[ω~, v], [0, 0]]`` (2).
* A wrench is ``F = [f; n]`` (force first); power is ``F · V``.
* ``Ad_g = [[R, p~ R], [0, R]]`` (5) maps body twists of ``g`` to the parent frame:
  ``g V^ g⁻¹ = (Ad_g V)^`` (4).
* ``ad_V = [[ω~, v~], [0, ω~]]`` (7), ``ad_V W = [V^, W^]^∨``; the coadjoint is ``ad_V^T``.
* ``dexp_X = Σ_k ad_X^k / (k+1)!`` is the *right-trivialised* differential of exp:
  ``(d/dt exp(X)) exp(-X) = (dexp_X Ẋ)^``.  The left-trivialised one is ``dexp_{-X}``:
  ``exp(-X) d/dt exp(X) = (dexp_{-X} Ẋ)^``.  For a body velocity (``g = g₀ exp(Θ)``,
  ``g⁻¹ ġ = V^``) the Runge–Kutta–Munthe-Kaas equation is therefore
  ``Θ̇ = dexp⁻¹_{-Θ} V = V + ½ ad_Θ V + (1/12) ad_Θ² V + …`` — note the **plus** sign of the
  ½ term; :func:`dexp_inv_body` is that Jacobian (docs/corrections.md, "Time integration: RKMK
  with dexp⁻¹(−Θ)").

All functions take and return plain ``numpy`` arrays; they are pure and allocate small arrays
only.  Closed forms are used everywhere with Taylor expansions near the identity and the
symmetric-part construction of log near π.

Every function checks its arguments: a wrong shape, a non-real dtype (bool, complex, str), NaN,
Inf, or a magnitude whose result is not representable raises ``ValueError`` naming the argument;
no input, at any magnitude, gives ``OverflowError``, ``IndexError`` or a NaN/Inf result.
"""
from __future__ import annotations

import math

import numpy as np

from .rotations import check_unit_quaternion, matrix_from_quat
from .validation import MAX_MAGNITUDE, as_array

__all__ = [
    "skew", "unskew", "hat", "vee",
    "so3_exp", "so3_log", "so3_left_jacobian", "so3_left_jacobian_inv",
    "se3_exp", "se3_log", "se3_inv", "make_pose", "pose", "quaternion_to_matrix",
    "Ad", "Ad_inv", "ad", "coad",
    "dexp", "dexp_inv", "dexp_inv_body",
]

_EPS_SMALL = 1e-4  # |θ| below which Taylor series are used (errors ~θ⁶ ≈ 1e-24)
#: |1 − (θ/2)cot(θ/2)| above which dexp⁻¹ is treated as singular (θ at or near a non-zero
#: multiple of 2π, where cot(θ/2) diverges); keeps J⁻¹ below ~1e102.
_MAX_JINV_COEF = 1e102


def _norm3(w: np.ndarray) -> float:
    """‖w‖ of a checked 3-vector (``math.hypot``: faster than ``np.linalg.norm`` here)."""
    return math.hypot(w[0], w[1], w[2])


# ---------------------------------------------------------------------------- hat maps
def skew(w) -> np.ndarray:
    """``w~``: the 3×3 skew-symmetric matrix with ``w~ p = w × p``."""
    return _skew(as_array(w, (3,), "w"))


def _skew(w) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]],
                     [w[2], 0.0, -w[0]],
                     [-w[1], w[0], 0.0]])


def unskew(W) -> np.ndarray:
    """Inverse of :func:`skew` (uses the antisymmetric part of ``W``)."""
    W = 0.5 * as_array(W, (3, 3), "W")      # halve first: no overflow in the sums
    return np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


def hat(V) -> np.ndarray:
    """se(3) hat of a twist ``[v; ω]`` (paper 000, eq. 2)."""
    V = as_array(V, (6,), "V")
    X = np.zeros((4, 4))
    X[:3, :3] = _skew(V[3:6])
    X[:3, 3] = V[:3]
    return X


def vee(X) -> np.ndarray:
    """Inverse of :func:`hat`: ``[v; ω]``."""
    X = as_array(X, (4, 4), "X")
    return np.concatenate([X[:3, 3], unskew(X[:3, :3])])


# ---------------------------------------------------------------------------- SO(3)
def _sinc_coeffs(theta: float):
    """Return (a, b, c) = (sinθ/θ, (1-cosθ)/θ², (θ-sinθ)/θ³) for θ ≥ 0, Taylor near 0.

    No power of θ is formed (``theta ** 3`` raised ``OverflowError`` above 5.6e102): every
    coefficient is a quotient of bounded numbers by θ, θ² or θ³ computed as repeated division,
    which underflows to 0 instead of overflowing."""
    if theta < _EPS_SMALL:
        t2 = theta * theta
        return 1.0 - t2 / 6.0, 0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0
    s = math.sin(theta)
    h = math.sin(0.5 * theta)
    return s / theta, 2.0 * h * h / theta / theta, (1.0 - s / theta) / theta / theta


def _unit_coeffs(theta: float):
    """(sinθ, 1 − cosθ, 1 − sinθ/θ): the coefficients of K, K² for the unit axis K = w~/θ."""
    s = math.sin(theta)
    h = math.sin(0.5 * theta)
    return s, 2.0 * h * h, 1.0 - s / theta


def so3_exp(w) -> np.ndarray:
    """Rodrigues' formula (paper 000, eq. 12) for an arbitrary rotation vector ``w``.

    ``R = I + sinθ K + (1 − cosθ) K²`` with ``θ = ‖w‖``, ``K = (w/θ)~`` (Taylor series for
    θ < 1e-4); finite for every finite ``w``."""
    w = as_array(w, (3,), "w", MAX_MAGNITUDE)
    return _so3_exp(w, _norm3(w))


def _so3_exp(w, theta):
    if theta < _EPS_SMALL:
        a, b, _ = _sinc_coeffs(theta)
        W = _skew(w)
        return np.eye(3) + a * W + b * (W @ W)
    K = _skew(w / theta)
    s, one_minus_c, _ = _unit_coeffs(theta)
    return np.eye(3) + s * K + one_minus_c * (K @ K)


def so3_log(R) -> np.ndarray:
    """Rotation vector of the rotation matrix ``R`` (angle in [0, π]), accurate near 0 and π."""
    R = as_array(R, (3, 3), "R", MAX_MAGNITUDE)
    return _so3_log(R)


def _so3_log(R):
    s = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])  # sinθ·axis
    c = 0.5 * (float(R[0, 0] + R[1, 1] + R[2, 2]) - 1.0)
    sin_t = math.hypot(s[0], s[1], s[2])
    theta = math.atan2(sin_t, c)
    if theta < _EPS_SMALL:
        return (1.0 + theta * theta / 6.0) * s
    if math.pi - theta > 1e-3:
        return (theta / sin_t) * s
    # Near π: axis from the symmetric part, ww^T = (R + R^T - 2c I) / (2(1-c)).
    S = (R + R.T - 2.0 * c * np.eye(3)) / (2.0 * (1.0 - c))
    k = int(np.argmax(np.diag(S)))
    axis = S[:, k] / np.abs(S[:, k]).max()          # the column's direction, no overflow
    if axis @ s < 0.0:
        axis = -axis
    return theta * axis / math.hypot(axis[0], axis[1], axis[2])


def so3_left_jacobian(w) -> np.ndarray:
    """Left Jacobian of SO(3), ``J_l(w) = Σ (w~)^k/(k+1)!``; finite for every finite ``w``."""
    w = as_array(w, (3,), "w", MAX_MAGNITUDE)
    return _so3_left_jacobian(w, _norm3(w))


def _so3_left_jacobian(w, theta):
    if theta < _EPS_SMALL:
        _, b, c = _sinc_coeffs(theta)
        W = _skew(w)
        return np.eye(3) + b * W + c * (W @ W)
    K = _skew(w / theta)
    _, one_minus_c, one_minus_sinc = _unit_coeffs(theta)
    return np.eye(3) + (one_minus_c / theta) * K + one_minus_sinc * (K @ K)


def so3_left_jacobian_inv(w) -> np.ndarray:
    """Inverse of :func:`so3_left_jacobian`; regular for |w| < 2π (fine at π).

    ``J_l⁻¹ = I − ½ w~ + (1 − (θ/2) cot(θ/2)) K²``; singular at θ = 2πk (k ≥ 1), where a
    ``ValueError`` naming ``w`` is raised instead of returning Inf or NaN."""
    w = as_array(w, (3,), "w", MAX_MAGNITUDE)
    return _so3_left_jacobian_inv(w, _norm3(w), "w")


def _so3_left_jacobian_inv(w, theta, name):
    W = _skew(w)
    if theta < _EPS_SMALL:
        k = 1.0 / 12.0 + theta * theta / 720.0
        return np.eye(3) - 0.5 * W + k * (W @ W)
    K = _skew(w / theta)
    x = 0.5 * theta
    sx = math.sin(x)
    coef = 1.0 - x * math.cos(x) / sx if sx != 0.0 else math.inf
    if not abs(coef) <= _MAX_JINV_COEF:
        raise ValueError(f"{name}: dexp⁻¹ is singular: the rotation angle {theta:.17g} is at "
                         f"or too close to a non-zero multiple of 2π (1 − (θ/2)cot(θ/2) = "
                         f"{coef:.3g})")
    return np.eye(3) - 0.5 * W + coef * (K @ K)


# ---------------------------------------------------------------------------- SE(3)
def make_pose(R, p) -> np.ndarray:
    """4×4 homogeneous matrix ``[[R, p], [0, 1]]``."""
    return _make_pose(as_array(R, (3, 3), "R"), as_array(p, (3,), "p"))


def _make_pose(R, p) -> np.ndarray:
    g = np.eye(4)
    g[:3, :3] = R
    g[:3, 3] = p
    return g


def quaternion_to_matrix(quaternion_xyzw, name: str = "quaternion_xyzw") -> np.ndarray:
    """Rotation matrix of a unit quaternion in ROS order ``x, y, z, w``: its norm must be 1
    within :data:`~vm_dynamics.core.rotations.QUAT_NORM_TOL` (the one tolerance policy of
    :mod:`~vm_dynamics.core.rotations`); it is normalised here.  ``ValueError`` naming ``name``
    otherwise."""
    return matrix_from_quat(check_unit_quaternion(quaternion_xyzw, name))


def pose(position, quaternion_xyzw=(0.0, 0.0, 0.0, 1.0)) -> np.ndarray:
    """4×4 pose from a position ``[x, y, z]`` and a ROS quaternion ``[x, y, z, w]``.

    The quaternion must have unit norm within
    :data:`~vm_dynamics.core.rotations.QUAT_NORM_TOL` (the package's one tolerance policy, as
    for every orientation it reads: ``[0, 0, 1, 1]`` is a typo, not a rotation) and is then
    normalised, so a quaternion rounded to a few digits is exact.  A quaternion off the unit
    norm (zero and non-finite included), or a position that is not three finite numbers of
    magnitude at most ``MAX_MAGNITUDE``, raises ``ValueError`` naming the argument.
    ``vm.pose([0, 0, 1], [0, 0, 0.7071068, 0.7071068])`` is 1 m up, turned 90° about z."""
    p = as_array(position, (3,), "position", MAX_MAGNITUDE)
    g = np.eye(4)
    g[:3, :3] = quaternion_to_matrix(quaternion_xyzw, "quaternion_xyzw")
    g[:3, 3] = p
    return g


def se3_exp(V) -> np.ndarray:
    """Exponential of a twist ``V = [v; ω]`` (paper 000, eq. 11, for any ‖ω‖)."""
    V = as_array(V, (6,), "V", MAX_MAGNITUDE)
    w = V[3:6]
    theta = _norm3(w)
    return _make_pose(_so3_exp(w, theta),
                     _so3_left_jacobian(w, theta) @ V[:3])


def se3_log(g) -> np.ndarray:
    """Twist ``[v; ω]`` with ``se3_exp(V) = g`` and rotation angle in [0, π]."""
    g = as_array(g, (4, 4), "g", MAX_MAGNITUDE)
    w = _so3_log(g[:3, :3])
    Ji = _so3_left_jacobian_inv(w, _norm3(w), "g")
    return np.concatenate([Ji @ g[:3, 3], w])


def se3_inv(g) -> np.ndarray:
    """Inverse of a homogeneous transform ``g``."""
    g = as_array(g, (4, 4), "g", MAX_MAGNITUDE)
    Rt = g[:3, :3].T
    return _make_pose(Rt, -Rt @ g[:3, 3])


def Ad(g) -> np.ndarray:
    """Adjoint ``Ad_g = [[R, p~R], [0, R]]`` (paper 000, eq. 5) of a pose ``g``."""
    g = as_array(g, (4, 4), "g", MAX_MAGNITUDE)
    R, p = g[:3, :3], g[:3, 3]
    A = np.zeros((6, 6))
    A[:3, :3] = R
    A[3:, 3:] = R
    A[:3, 3:] = _skew(p) @ R
    return A


def Ad_inv(g) -> np.ndarray:
    """``Ad_g⁻¹ = Ad_{g⁻¹} = [[Rᵀ, -Rᵀp~], [0, Rᵀ]]`` of a pose ``g``."""
    g = as_array(g, (4, 4), "g", MAX_MAGNITUDE)
    R, p = g[:3, :3], g[:3, 3]
    A = np.zeros((6, 6))
    A[:3, :3] = R.T
    A[3:, 3:] = R.T
    A[:3, 3:] = -R.T @ _skew(p)
    return A


def ad(V) -> np.ndarray:
    """``ad_V = [[ω~, v~], [0, ω~]]`` (paper 000, eq. 7) of a twist ``V``."""
    V = as_array(V, (6,), "V", MAX_MAGNITUDE)
    A = np.zeros((6, 6))
    W = _skew(V[3:6])
    A[:3, :3] = W
    A[3:, 3:] = W
    A[:3, 3:] = _skew(V[:3])
    return A


def coad(V) -> np.ndarray:
    """Coadjoint ``ad*_V = ad_Vᵀ`` acting on wrenches ``[f; n]``."""
    return ad(V).T


def _se3_Q(V: np.ndarray, theta: float) -> np.ndarray:
    """Upper-right block of the SE(3) left Jacobian (Barfoot & Furgale 2014, eq. 102).

    For θ ≥ 0.2 it is evaluated with the unit axis ``K = φ~/θ`` and coefficients that stay
    bounded for large θ, so no intermediate power of θ can overflow."""
    rho, phi = V[:3], V[3:6]
    Rh = _skew(rho)
    t2 = theta * theta
    if theta < 0.2:
        P = _skew(phi)
        # Taylor expansions of the three coefficients up to θ⁸ (cancellation-free; truncation
        # below 1e-19 for θ < 0.2, where the closed forms lose digits to cancellation)
        t4 = t2 * t2
        c1 = 1.0 / 6.0 - t2 / 120.0 + t4 / 5040.0 - t4 * t2 / 362880.0 + t4 * t4 / 39916800.0
        c2 = 1.0 / 24.0 - t2 / 720.0 + t4 / 40320.0 - t4 * t2 / 3628800.0 + t4 * t4 / 479001600.0
        c3 = (1.0 / 120.0 - t2 / 2520.0 + t4 / 120960.0 - t4 * t2 / 9979200.0
              + t4 * t4 / 1245404160.0)
        PR = P @ Rh
        RP = Rh @ P
        PRP = PR @ P
        return (0.5 * Rh + c1 * (PR + RP + PRP) + c2 * (P @ PR + RP @ P - 3.0 * PRP)
                + c3 * (PRP @ P + P @ PRP))
    K = _skew(phi / theta)
    s, c = math.sin(theta), math.cos(theta)
    h = math.sin(0.5 * theta)
    a1 = (1.0 - s / theta) / theta              # c1·θ   = (θ − sinθ)/θ²
    a2 = 1.0 - s / theta                        # c1·θ²  = (θ − sinθ)/θ
    b2 = 0.5 - 2.0 * h * h / theta / theta      # c2·θ²  = (θ² + 2cosθ − 2)/(2θ²)
    d3 = (1.0 - 1.5 * s / theta + 0.5 * c) / theta   # c3·θ³ = (2θ − 3sinθ + θcosθ)/(2θ²)
    KR = K @ Rh
    RK = Rh @ K
    KRK = KR @ K
    return (0.5 * Rh + a1 * (KR + RK) + a2 * KRK + b2 * (K @ KR + RK @ K - 3.0 * KRK)
            + d3 * (KRK @ K + K @ KRK))


def dexp(V) -> np.ndarray:
    """``dexp_V = Σ_k ad_V^k/(k+1)!`` in closed form (the SE(3) left Jacobian).

    ``(d/dt exp(X)) exp(-X) = (dexp_X Ẋ)^`` and ``exp(-X) d/dt exp(X) = (dexp_{-X} Ẋ)^``.
    """
    V = as_array(V, (6,), "V", MAX_MAGNITUDE)
    theta = _norm3(V[3:6])
    J = np.zeros((6, 6))
    Jl = _so3_left_jacobian(V[3:6], theta)
    J[:3, :3] = Jl
    J[3:, 3:] = Jl
    J[:3, 3:] = _se3_Q(V, theta)
    return J


def dexp_inv(V) -> np.ndarray:
    """Closed-form inverse of :func:`dexp`: ``[[J⁻¹, -J⁻¹ Q J⁻¹], [0, J⁻¹]]``.

    Singular where the rotation angle is a non-zero multiple of 2π (``ValueError`` naming
    ``V``)."""
    V = as_array(V, (6,), "V", MAX_MAGNITUDE)
    theta = _norm3(V[3:6])
    Ji = _so3_left_jacobian_inv(V[3:6], theta, "V")
    D = np.zeros((6, 6))
    D[:3, :3] = Ji
    D[3:, 3:] = Ji
    D[:3, 3:] = -Ji @ _se3_Q(V, theta) @ Ji
    return D


def dexp_inv_body(Theta) -> np.ndarray:
    """``dexp⁻¹_{−Θ}``, the Jacobian of the Runge–Kutta–Munthe-Kaas equation for a body
    velocity: with ``g = g_k exp(Θ)`` and ``g⁻¹ġ = V^``, ``Θ̇ = dexp_inv_body(Θ) V
    = V + ½ ad_Θ V + (1/12) ad_Θ² V + …`` (the argument is −Θ; with ``dexp_inv(Θ)`` the
    momentum of a free-floating system drifts; docs/corrections.md, "Time integration")."""
    return dexp_inv(-as_array(Theta, (6,), "Theta", MAX_MAGNITUDE))
