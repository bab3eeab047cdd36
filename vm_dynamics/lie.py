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
  ½ term (seeds-LP.md §4.3, pitfall 24).

All functions take and return plain ``numpy`` arrays; they are pure and allocate small arrays
only.  Closed forms are used everywhere with Taylor expansions near the identity and the
symmetric-part construction of log near π.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "skew", "unskew", "hat", "vee",
    "so3_exp", "so3_log", "so3_left_jacobian", "so3_left_jacobian_inv",
    "se3_exp", "se3_log", "se3_inv", "make_pose",
    "Ad", "Ad_inv", "ad", "coad",
    "dexp", "dexp_inv",
]

_EPS_SMALL = 1e-4  # |θ| below which Taylor series are used (errors ~θ⁶ ≈ 1e-24)


def skew(w: np.ndarray) -> np.ndarray:
    """``w~``: the 3×3 skew-symmetric matrix with ``w~ p = w × p``."""
    return np.array([[0.0, -w[2], w[1]],
                     [w[2], 0.0, -w[0]],
                     [-w[1], w[0], 0.0]])


def unskew(W: np.ndarray) -> np.ndarray:
    """Inverse of :func:`skew` (uses the antisymmetric part of ``W``)."""
    return 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


def hat(V: np.ndarray) -> np.ndarray:
    """se(3) hat of a twist ``[v; ω]`` (paper 000, eq. 2)."""
    X = np.zeros((4, 4))
    X[:3, :3] = skew(V[3:6])
    X[:3, 3] = V[:3]
    return X


def vee(X: np.ndarray) -> np.ndarray:
    """Inverse of :func:`hat`: ``[v; ω]``."""
    return np.concatenate([X[:3, 3], unskew(X[:3, :3])])


def _sinc_coeffs(theta: float):
    """Return (a, b, c) = (sinθ/θ, (1-cosθ)/θ², (θ-sinθ)/θ³), Taylor near 0."""
    if theta < _EPS_SMALL:
        t2 = theta * theta
        return 1.0 - t2 / 6.0, 0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0
    s, c = np.sin(theta), np.cos(theta)
    return s / theta, (1.0 - c) / (theta * theta), (theta - s) / theta ** 3


def so3_exp(w: np.ndarray) -> np.ndarray:
    """Rodrigues' formula (paper 000, eq. 12) for an arbitrary rotation vector."""
    theta = float(np.linalg.norm(w))
    a, b, _ = _sinc_coeffs(theta)
    W = skew(w)
    return np.eye(3) + a * W + b * (W @ W)


def so3_log(R: np.ndarray) -> np.ndarray:
    """Rotation vector of ``R`` (angle in [0, π]), accurate near 0 and near π."""
    s = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])  # sinθ·axis
    c = 0.5 * (np.trace(R) - 1.0)
    sin_t = float(np.linalg.norm(s))
    theta = float(np.arctan2(sin_t, c))
    if theta < _EPS_SMALL:
        return (1.0 + theta * theta / 6.0) * s
    if np.pi - theta > 1e-3:
        return (theta / sin_t) * s
    # Near π: axis from the symmetric part, ww^T = (R + R^T - 2c I) / (2(1-c)).
    S = (R + R.T - 2.0 * c * np.eye(3)) / (2.0 * (1.0 - c))
    k = int(np.argmax(np.diag(S)))
    axis = S[:, k] / np.sqrt(max(S[k, k], 1e-300))
    if axis @ s < 0.0:
        axis = -axis
    return theta * axis / np.linalg.norm(axis)


def so3_left_jacobian(w: np.ndarray) -> np.ndarray:
    """Left Jacobian of SO(3), ``J_l(w) = Σ (w~)^k/(k+1)!``."""
    theta = float(np.linalg.norm(w))
    _, b, c = _sinc_coeffs(theta)
    W = skew(w)
    return np.eye(3) + b * W + c * (W @ W)


def so3_left_jacobian_inv(w: np.ndarray) -> np.ndarray:
    """Inverse of :func:`so3_left_jacobian`; regular for |w| < 2π (fine at π)."""
    theta = float(np.linalg.norm(w))
    W = skew(w)
    if theta < _EPS_SMALL:
        k = 1.0 / 12.0 + theta * theta / 720.0
    else:
        k = 1.0 / theta ** 2 - 0.5 / (theta * np.tan(0.5 * theta))
    return np.eye(3) - 0.5 * W + k * (W @ W)


def make_pose(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """4×4 homogeneous matrix ``[[R, p], [0, 1]]``."""
    g = np.eye(4)
    g[:3, :3] = R
    g[:3, 3] = p
    return g


def se3_exp(V: np.ndarray) -> np.ndarray:
    """Exponential of a twist ``[v; ω]`` (paper 000, eq. 11, for any ‖ω‖)."""
    w = V[3:6]
    return make_pose(so3_exp(w), so3_left_jacobian(w) @ V[:3])


def se3_log(g: np.ndarray) -> np.ndarray:
    """Twist ``[v; ω]`` with ``se3_exp(V) = g`` and rotation angle in [0, π]."""
    w = so3_log(g[:3, :3])
    return np.concatenate([so3_left_jacobian_inv(w) @ g[:3, 3], w])


def se3_inv(g: np.ndarray) -> np.ndarray:
    """Inverse of a homogeneous transform."""
    Rt = g[:3, :3].T
    return make_pose(Rt, -Rt @ g[:3, 3])


def Ad(g: np.ndarray) -> np.ndarray:
    """Adjoint ``Ad_g = [[R, p~R], [0, R]]`` (paper 000, eq. 5)."""
    R, p = g[:3, :3], g[:3, 3]
    A = np.zeros((6, 6))
    A[:3, :3] = R
    A[3:, 3:] = R
    A[:3, 3:] = skew(p) @ R
    return A


def Ad_inv(g: np.ndarray) -> np.ndarray:
    """``Ad_g⁻¹ = Ad_{g⁻¹} = [[Rᵀ, -Rᵀp~], [0, Rᵀ]]``."""
    R, p = g[:3, :3], g[:3, 3]
    A = np.zeros((6, 6))
    A[:3, :3] = R.T
    A[3:, 3:] = R.T
    A[:3, 3:] = -R.T @ skew(p)
    return A


def ad(V: np.ndarray) -> np.ndarray:
    """``ad_V = [[ω~, v~], [0, ω~]]`` (paper 000, eq. 7)."""
    A = np.zeros((6, 6))
    W = skew(V[3:6])
    A[:3, :3] = W
    A[3:, 3:] = W
    A[:3, 3:] = skew(V[:3])
    return A


def coad(V: np.ndarray) -> np.ndarray:
    """Coadjoint ``ad*_V = ad_Vᵀ`` acting on wrenches ``[f; n]``."""
    return ad(V).T


def _se3_Q(V: np.ndarray) -> np.ndarray:
    """Upper-right block of the SE(3) left Jacobian (Barfoot & Furgale 2014, eq. 102)."""
    rho, phi = V[:3], V[3:6]
    theta = float(np.linalg.norm(phi))
    P, Rh = skew(phi), skew(rho)
    t2 = theta * theta
    if theta < 0.2:
        # Taylor expansions of the three coefficients up to θ⁸ (cancellation-free; truncation
        # below 1e-19 for θ < 0.2, where the closed forms lose digits to cancellation)
        t4 = t2 * t2
        c1 = 1.0 / 6.0 - t2 / 120.0 + t4 / 5040.0 - t4 * t2 / 362880.0 + t4 * t4 / 39916800.0
        c2 = 1.0 / 24.0 - t2 / 720.0 + t4 / 40320.0 - t4 * t2 / 3628800.0 + t4 * t4 / 479001600.0
        c3 = (1.0 / 120.0 - t2 / 2520.0 + t4 / 120960.0 - t4 * t2 / 9979200.0
              + t4 * t4 / 1245404160.0)
    else:
        s, c = np.sin(theta), np.cos(theta)
        c1 = (theta - s) / (t2 * theta)
        c2 = (t2 + 2.0 * c - 2.0) / (2.0 * t2 * t2)
        c3 = (2.0 * theta - 3.0 * s + theta * c) / (2.0 * t2 * t2 * theta)
    PR = P @ Rh
    RP = Rh @ P
    PRP = PR @ P
    return (0.5 * Rh + c1 * (PR + RP + PRP) + c2 * (P @ PR + RP @ P - 3.0 * PRP)
            + c3 * (PRP @ P + P @ PRP))


def _series_jacobian(V: np.ndarray, terms: int) -> np.ndarray:
    A = ad(V)
    J = np.eye(6)
    term = np.eye(6)
    for k in range(1, terms):
        term = term @ A / (k + 1)
        J = J + term
    return J


def dexp(V: np.ndarray) -> np.ndarray:
    """``dexp_V = Σ_k ad_V^k/(k+1)!`` in closed form (the SE(3) left Jacobian).

    ``(d/dt exp(X)) exp(-X) = (dexp_X Ẋ)^`` and ``exp(-X) d/dt exp(X) = (dexp_{-X} Ẋ)^``.
    """
    J = np.zeros((6, 6))
    Jl = so3_left_jacobian(V[3:6])
    J[:3, :3] = Jl
    J[3:, 3:] = Jl
    J[:3, 3:] = _se3_Q(V)
    return J


def dexp_inv(V: np.ndarray) -> np.ndarray:
    """Closed-form inverse of :func:`dexp`: ``[[J⁻¹, -J⁻¹ Q J⁻¹], [0, J⁻¹]]``."""
    Ji = so3_left_jacobian_inv(V[3:6])
    D = np.zeros((6, 6))
    D[:3, :3] = Ji
    D[3:, 3:] = Ji
    D[:3, 3:] = -Ji @ _se3_Q(V) @ Ji
    return D
