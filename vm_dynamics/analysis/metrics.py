"""Post-processing of trajectories: conservation drifts, tracking errors, attitude changes.

Definitions (used in ``summary.json`` and the README):

* ``energy_drift_rel`` = max_t |E(t) − E(0)| / max(|E(0)|, max_t K(t)), E = kinetic + potential,
  K = kinetic energy; the denominator never vanishes for a moving system.
* ``momentum_drift_rel`` = max_t ‖π(t) − π(0)‖ / max(‖π(0)‖, max_t ‖π_arm(t)‖), π = total spatial
  momentum [linear; angular] in the inertial frame about its origin, π_arm = the momentum the
  joints exchange with the vehicle (``M₀𝔪⁶ q̇`` mapped to the inertial frame). For a free-floating
  system starting at rest π(0) = 0 and π_arm measures how much momentum is being moved around.
* ``energy_balance_rel`` = max_t |E(t) − E(0) − W(t)| / E_ref, W(t) = ∫ P dt the work of all
  inputs (joint efforts τ·q̇, the vehicle wrench F·V, frame wrenches w·J_f[V; q̇]; cumulative
  Simpson rule on the samples), E_ref = max(|E(0)|, max_t K, max_t |U(t) − U(0)|, ∫|P| dt).
  Zero for exact dynamics whether or not energy is conserved: this is the check that applies to
  every run (it is what ``dynamics_node`` monitors).
* Which quantities are conserved is decided from the physics of the run, not from names
  (:func:`conservation_checks`): energy when no input does work (P ≡ 0); the momentum map
  μ = ι₀ᵀ Ad_{g(0)}ᵀ π of the vehicle group (the components of π the group's constraint forces
  cannot change; π itself for SE(3)) when the vehicle wrench and the frame wrenches are
  identically zero and gravity exerts no force or moment along the group's directions.
* tracking error e(t) = q_d(t) − q(t) (rad or m): ``tracking_error_final`` = ‖e(T)‖₂,
  ``tracking_error_rms`` = sqrt(mean_t ‖e(t)‖₂²).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core import lie
from ..dynamics import lp

__all__ = ["energy_series", "element_potentials", "gravity_potentials", "mass_matrices",
           "momentum_series", "momentum_transforms", "energy_drift_rel",
           "momentum_drift_rel",
           "tracking_errors", "attitude_changes_deg", "input_power", "cumulative_work",
           "conserved_momentum", "gravity_conserves_momentum", "conservation_checks",
           "ConservationChecks"]


def mass_matrices(model, traj) -> np.ndarray | None:
    """``M(q)`` at every sample (N, b+n, b+n) by the compiled CRBA, or None without numba
    (:func:`conservation_checks` computes them once for the energy and the momentum)."""
    from ..dynamics import fast
    if not fast.numba_available():
        return None
    fm = fast.fast_model(model)
    return np.array([fm.mass_matrix(q) for q in traj.q]).reshape(
        len(traj.q), model.b + model.n, model.b + model.n)


def element_potentials(model, traj, elements) -> np.ndarray:
    """Potential energy of the conservative force ``elements`` at every sample (N,): by the
    engine's compiled dispatcher (:func:`vm_dynamics.forces.kernels.potential`) when numba is
    installed, else by each element's :meth:`~vm_dynamics.forces.ForceElement.potential_energy`
    (about a millisecond a sample)."""
    from ..dynamics import fast
    from ..forces import compile_forces, potential_energy
    elements = [e for e in elements if e.conservative]
    if not fast.numba_available():
        return np.array([potential_energy(model, elements, g, q)
                         for g, q in zip(traj.g, traj.q)])
    from ..dynamics.fast.kernels.kinematics import kinematics, workspace
    from ..forces.kernels import potential
    C = fast.fast_model(model).kernel_constants
    F = compile_forces(model, elements)
    ws = workspace(model.n_full)
    out = np.empty(len(traj.t))
    for k in range(len(traj.t)):
        qf = np.ascontiguousarray(model.coupling.full_positions(traj.q[k]), dtype=float)
        kinematics(C, qf, ws)
        out[k] = potential(F, np.ascontiguousarray(traj.g[k]), ws.Rw, ws.Pw)
    return out


def gravity_potentials(model, traj) -> np.ndarray:
    """Gravitational potential ``U = −aᵀ(m p + R h(q))`` at every sample (N,), with ``m`` the
    total mass and ``h`` the first moment of the masses about the vehicle origin in vehicle
    axes (:meth:`Model.potential_energy` at each sample, the same sum regrouped).  With numba,
    ``h`` comes from the compiled kinematics (tens of microseconds a sample, against the
    reference kinematics' milliseconds); the rest is vectorised over the samples."""
    from ..dynamics import fast
    N = len(traj.t)
    a = np.asarray(model.gravity, dtype=float)
    if not np.any(a):
        return np.zeros(N)
    if not fast.numba_available():
        return np.array([model.potential_energy(traj.g[k], traj.q[k]) for k in range(N)])
    from ..dynamics.fast.kernels.kinematics import kinematics, workspace
    C = fast.fast_model(model).kernel_constants
    ws = workspace(model.n_full)
    mh = np.empty((N, 4))              # [m, h] per sample
    for k in range(N):
        qf = np.ascontiguousarray(model.coupling.full_positions(traj.q[k]), dtype=float)
        kinematics(C, qf, ws)
        IA = ws.IA
        mh[k] = IA[:, 0, 0].sum(), IA[:, 5, 1].sum(), IA[:, 3, 2].sum(), IA[:, 4, 0].sum()
    g = np.asarray(traj.g, dtype=float)
    first = mh[:, :1] * g[:, :3, 3] + np.einsum("kij,kj->ki", g[:, :3, :3], mh[:, 1:])
    return -(first @ a)


def energy_series(model, traj, elements=(), M=None) -> tuple[np.ndarray, np.ndarray]:
    """(E(t), K(t)) along a trajectory; E includes the potential energy of the conservative
    force elements among ``elements``; ``M``: :func:`mass_matrices` if already computed."""
    N = len(traj.t)
    M = mass_matrices(model, traj) if M is None else M
    if M is not None:
        z = np.concatenate([traj.V, traj.qd], axis=1)
        K = 0.5 * np.einsum("ki,kij,kj->k", z, M, z)
    else:
        K = np.array([model.kinetic_energy(traj.V[k], traj.q[k], traj.qd[k]) for k in range(N)])
    E = K + gravity_potentials(model, traj)
    if any(e.conservative for e in elements):
        E += element_potentials(model, traj, elements)
    return E, K


def momentum_transforms(g: np.ndarray) -> np.ndarray:
    """``Ad_{g⁻¹}ᵀ = [[R, 0], [p~R, R]]`` of every pose of ``g`` (N, 4, 4) -> (N, 6, 6): maps a
    body wrench or momentum to the inertial frame (:func:`vm_dynamics.core.lie.Ad_inv`,
    vectorised over the samples)."""
    R, p = g[:, :3, :3], g[:, :3, 3]
    P = np.zeros((len(g), 3, 3))
    P[:, 0, 1], P[:, 0, 2], P[:, 1, 2] = -p[:, 2], p[:, 1], -p[:, 0]
    P[:, 1, 0], P[:, 2, 0], P[:, 2, 1] = p[:, 2], -p[:, 1], p[:, 0]
    T = np.zeros((len(g), 6, 6))
    T[:, :3, :3] = R
    T[:, 3:, 3:] = R
    T[:, 3:, :3] = P @ R
    return T


def momentum_series(model, traj, M=None) -> tuple[np.ndarray, np.ndarray]:
    """(π(t), π_arm(t)) along a trajectory, each (N, 6); ``M`` as in :func:`energy_series`."""
    N = len(traj.t)
    if model.b == 6 and M is None:      # M's 6-D blocks are these for an SE3 base only
        M = mass_matrices(model, traj)
    M = M if model.b == 6 else None
    if M is not None:
        T = momentum_transforms(np.asarray(traj.g, dtype=float))
        arm = np.einsum("kij,kj->ki", T, np.einsum("kij,kj->ki", M[:, :6, 6:], traj.qd))
        pi = np.einsum("kij,kj->ki", T, np.einsum("kij,kj->ki", M[:, :6, :6], traj.V)) + arm
        return pi, arm
    pi = np.empty((N, 6))
    arm = np.empty((N, 6))
    for k in range(N):
        it = lp.inertia_terms(model, lp.kinematics(model, traj.q[k]), derivatives=False)
        T = lie.Ad_inv(traj.g[k]).T
        arm[k] = T @ (it.M0m_6 @ traj.qd[k])
        pi[k] = T @ (it.M0_6 @ model.group.embed(traj.V[k])) + arm[k]
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


# ---------------------------------------------------------------------------- balances
def input_power(model, traj, frame_wrenches=None) -> np.ndarray:
    """Power of all inputs at the samples, (N,): ``τ·q̇ + F·V + Σ_f w_f·(J_f [V; q̇])``.

    ``frame_wrenches`` is ``(t, state) -> {frame: 6-vector}`` (body wrenches at frames, in frame
    axes) or None; ``traj.tau`` and ``traj.base_wrench`` are the applied efforts and vehicle
    wrench (for prescribed motion the efforts that realise it)."""
    P = np.einsum("ij,ij->i", traj.tau, traj.qd)
    if model.b:
        P = P + np.einsum("ij,ij->i", traj.base_wrench, traj.V)
    if frame_wrenches is not None:
        for k in range(len(traj.t)):
            ws = frame_wrenches(float(traj.t[k]), traj.state(k)) or {}
            if ws:
                z = np.concatenate([traj.V[k], traj.qd[k]])
                for name, w in ws.items():
                    P[k] += float(np.asarray(w, dtype=float) @ (model.frame_jacobian(traj.q[k],
                                                                                       name) @ z))
    return P


def cumulative_work(t: np.ndarray, P: np.ndarray) -> np.ndarray:
    """W(t_k) = ∫₀^{t_k} P dt by the cumulative Simpson rule (trapezoid for two samples)."""
    W = np.zeros(len(t))
    if len(t) < 2:
        return W
    if len(t) >= 3:
        try:
            from scipy.integrate import cumulative_simpson
            W[1:] = cumulative_simpson(P, x=t)
            return W
        except ImportError:   # scipy < 1.12
            pass
    W[1:] = np.cumsum(0.5 * (P[1:] + P[:-1]) * np.diff(t))
    return W


def gravity_conserves_momentum(model, g0) -> bool:
    """True if gravity exerts no force or moment along the vehicle group's directions, i.e.
    ``ι₀ᵀ Ad_{g0}ᵀ [G; p × G] = 0`` for every point p (no gravity, or e.g. vertical gravity on
    an SE(2) vehicle moving in a horizontal plane)."""
    G = np.asarray(model.gravity, dtype=float)
    nG = float(np.linalg.norm(G))
    if nG == 0.0:
        return True
    if model.b == 0:
        return False
    T = model.group.iota.T @ lie.Ad(g0).T
    for p in (np.zeros(3), np.eye(3)[0], np.eye(3)[1], np.eye(3)[2]):
        if np.abs(T @ np.concatenate([G, np.cross(p, G)])).max() > 1e-12 * nG:
            return False
    return True


def conserved_momentum(model, traj, M=None) -> tuple[np.ndarray, np.ndarray]:
    """(μ(t), μ_arm(t)), each (N, b): the vehicle group's momentum map ι₀ᵀ Ad_{g(0)}ᵀ π and the
    part the joints exchange (π itself for SE(3), whose ι₀ = I and Ad_{g0} is applied only if
    g(0) is not the identity); ``M`` as in :func:`energy_series`."""
    pi, arm = momentum_series(model, traj, M)
    if model.b == 6 and np.array_equal(traj.g[0], np.eye(4)):
        return pi, arm
    T = model.group.iota.T @ lie.Ad(traj.g[0]).T
    return pi @ T.T, arm @ T.T


@dataclass
class ConservationChecks:
    """Energy balance and momentum of one trajectory, with what is conserved and why.

    ``balance`` = E − E₀ − W (J, per sample); ``energy_scale`` = E_ref (J);
    ``momentum_change`` = ‖μ − μ₀‖ per sample (None where the momentum is not conserved);
    ``reasons`` says, per quantity, why it is not conserved (empty if it is)."""

    energy: np.ndarray
    kinetic: np.ndarray
    work: np.ndarray
    balance: np.ndarray
    energy_scale: float
    energy_conserved: bool
    momentum_conserved: bool
    momentum_change: np.ndarray | None
    momentum_scale: float
    reasons: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """``energy_balance_rel``, ``energy_drift_rel`` (None unless conserved),
        ``momentum_drift_rel`` (None unless conserved) and ``conservation`` (the reasons)."""
        bal = float(np.max(np.abs(self.balance)) / self.energy_scale)
        return {
            "energy_balance_rel": bal,
            "energy_drift_rel": bal if self.energy_conserved else None,
            "momentum_drift_rel": (float(np.max(self.momentum_change) / self.momentum_scale)
                                   if self.momentum_conserved else None),
            "conservation": {
                "energy": "conserved" if self.energy_conserved else self.reasons["energy"],
                "momentum": ("conserved" if self.momentum_conserved
                             else self.reasons["momentum"]),
            },
        }


def conservation_checks(model, traj, frame_wrenches=None, elements=()) -> ConservationChecks:
    """Energy balance and the conservation laws that hold for this run, decided from what
    acted on the system (see the module docstring); ``frame_wrenches`` as in
    :func:`input_power` (the non-conservative ones: they do work); the conservative force
    elements among ``elements`` are in the energy as potential energy (and stop the momentum
    from being conserved)."""
    elements = tuple(e for e in elements if e.conservative)
    M = mass_matrices(model, traj)      # once, for the energy and the momentum
    E, K = energy_series(model, traj, elements, M)
    frames_act = False
    if frame_wrenches is not None:      # stops at the first sample with a non-zero wrench
        frames_act = any(np.any(np.asarray(w) != 0.0)
                         for k in range(len(traj.t))
                         for w in (frame_wrenches(float(traj.t[k]), traj.state(k)) or {}).values())
    engine_work = getattr(traj, "work", None) is not None \
        and getattr(traj, "abs_work", None) is not None
    P = input_power(model, traj)        # efforts and vehicle wrench
    if frames_act and not (engine_work and np.any(P != 0.0)):
        # the frames' power (a Jacobian per sample and frame) is needed for the work, or to
        # tell whether the inputs do any work at all
        P = input_power(model, traj, frame_wrenches)
    if engine_work:
        # the engine's account, integrated with the integrator's own stages
        W, absW = traj.work - traj.work[0], traj.abs_work - traj.abs_work[0]
    else:
        W, absW = cumulative_work(traj.t, P), cumulative_work(traj.t, np.abs(P))
    U = E - K
    scale = max(abs(E[0]), float(np.max(K)), float(np.max(np.abs(U - U[0]))),
                float(absW[-1]), 1e-300)
    reasons = {}
    energy_conserved = not np.any(P != 0.0)
    if not energy_conserved:
        reasons["energy"] = "not conserved: inputs do work"
    why = []
    if model.b == 0:
        why.append("fixed base")
    if not gravity_conserves_momentum(model, traj.g[0]):
        why.append("gravity")
    if model.b and np.any(traj.base_wrench != 0.0):
        why.append("vehicle wrench")
    if frames_act:
        why.append("frame wrenches")
    if elements:
        why.append("force elements " + ", ".join(sorted({e.kind for e in elements})))
    momentum_conserved = not why
    change, mscale = None, 1.0
    if momentum_conserved:
        mu, arm = conserved_momentum(model, traj, M)
        change = np.linalg.norm(mu - mu[0], axis=1)
        mscale = max(float(np.linalg.norm(mu[0])), float(np.max(np.linalg.norm(arm, axis=1))),
                     1e-300)
    else:
        reasons["momentum"] = "not conserved: " + ", ".join(why)
    return ConservationChecks(energy=E, kinetic=K, work=W, balance=E - E[0] - W,
                              energy_scale=scale, energy_conserved=energy_conserved,
                              momentum_conserved=momentum_conserved, momentum_change=change,
                              momentum_scale=mscale, reasons=reasons)
