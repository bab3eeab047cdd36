"""Post-processing of trajectories: conservation drifts, tracking errors, attitude changes.

Definitions (used in ``summary.json`` and the README):

* ``energy_drift_rel`` = max_t |E(t) − E(0)| / max(|E(0)|, max_t K(t)), E = kinetic + potential,
  K = kinetic energy; the denominator never vanishes for a moving system.
* ``momentum_drift_rel`` = max_t ‖π(t) − π(0)‖ / max(‖π(0)‖, max_t ‖π_arm(t)‖), π = total spatial
  momentum [linear; angular] in the inertial frame about its origin, π_arm = the momentum the
  joints exchange with the vehicle (``M₀𝔪⁶ q̇`` mapped to the inertial frame). For a free-floating
  system starting at rest π(0) = 0 and π_arm measures how much momentum is being moved around.
* tracking error e(t) = q_d(t) − q(t) (rad or m): ``tracking_error_final`` = ‖e(T)‖₂,
  ``tracking_error_rms`` = sqrt(mean_t ‖e(t)‖₂²).
"""
from __future__ import annotations

import numpy as np

from . import lie, lp

__all__ = ["energy_series", "momentum_series", "energy_drift_rel", "momentum_drift_rel",
           "tracking_errors", "attitude_changes_deg"]


def _fast(model):
    """The recursive (CRBA) path for mass matrices when it applies, else None."""
    from . import fast
    if fast.numba_available():
        return fast.fast_model(model)
    return None


def energy_series(model, traj) -> tuple[np.ndarray, np.ndarray]:
    """(E(t), K(t)) along a trajectory."""
    N = len(traj.t)
    E = np.empty(N)
    K = np.empty(N)
    fm = _fast(model)
    for k in range(N):
        if fm is not None:
            z = np.concatenate([traj.V[k], traj.qd[k]])
            K[k] = 0.5 * z @ fm.mass_matrix(traj.q[k]) @ z
        else:
            K[k] = model.kinetic_energy(traj.V[k], traj.q[k], traj.qd[k])
        E[k] = K[k] + model.potential_energy(traj.g[k], traj.q[k])
    return E, K


def momentum_series(model, traj) -> tuple[np.ndarray, np.ndarray]:
    """(π(t), π_arm(t)) along a trajectory, each (N, 6)."""
    N = len(traj.t)
    pi = np.empty((N, 6))
    arm = np.empty((N, 6))
    fm = _fast(model) if model.b == 6 else None   # the 6-D blocks are M's for an SE3 base
    for k in range(N):
        if fm is not None:
            M = fm.mass_matrix(traj.q[k])
            M0_6, M0m_6 = M[:6, :6], M[:6, 6:]
        else:
            it = lp.inertia_terms(model, lp.kinematics(model, traj.q[k]), derivatives=False)
            M0_6, M0m_6 = it.M0_6, it.M0m_6
        T = lie.Ad_inv(traj.g[k]).T
        arm[k] = T @ (M0m_6 @ traj.qd[k])
        pi[k] = T @ (M0_6 @ model.group.embed(traj.V[k])) + arm[k]
    return pi, arm


def energy_drift_rel(E: np.ndarray, K: np.ndarray) -> float:
    scale = max(abs(E[0]), float(np.max(np.abs(K))), 1e-300)
    return float(np.max(np.abs(E - E[0])) / scale)


def momentum_drift_rel(pi: np.ndarray, arm: np.ndarray) -> float:
    scale = max(float(np.linalg.norm(pi[0])), float(np.max(np.linalg.norm(arm, axis=1))), 1e-300)
    return float(np.max(np.linalg.norm(pi - pi[0], axis=1)) / scale)


def tracking_errors(t: np.ndarray, q: np.ndarray, joint_reference) -> tuple[np.ndarray, float, float]:
    """(e(t) (N, n), final ‖e‖, RMS ‖e‖) for a joint reference ``t -> (q_d, qd_d, qdd_d)``."""
    e = np.array([joint_reference(tk)[0] for tk in t]) - q
    norms = np.linalg.norm(e, axis=1)
    return e, float(norms[-1]), float(np.sqrt(np.mean(norms ** 2)))


def attitude_changes_deg(t: np.ndarray, g: np.ndarray, period: float) -> list[dict]:
    """Net vehicle rotation over each complete cycle of length ``period``.

    Returns ``[{"cycle": k, "angle_deg": θ, "axis": [x, y, z]}]`` with θ the angle of
    ``R(t_{k-1})ᵀ R(t_k)`` (body frame), t_k = k·period.
    """
    out = []
    k = 1
    while k * period <= t[-1] + 1e-9:
        i0 = int(np.argmin(np.abs(t - (k - 1) * period)))
        i1 = int(np.argmin(np.abs(t - k * period)))
        w = lie.so3_log(g[i0, :3, :3].T @ g[i1, :3, :3])
        ang = float(np.linalg.norm(w))
        axis = (w / ang).tolist() if ang > 0 else [0.0, 0.0, 0.0]
        out.append({"cycle": k, "angle_deg": float(np.degrees(ang)), "axis": axis})
        k += 1
    return out
