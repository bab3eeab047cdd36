"""Grasp and release: the target welded to a chaser frame, with the impulsive velocity update.

Coordinates (docs/capture.md, "Grasp"): the chaser's generalised velocity ``ν = [V; q̇]``
((b+n)-vector, mass matrix ``M(q)`` of (64)); the grasp frame E's body twist ``V_E = J_E ν``
(the body Jacobian, :meth:`~vm_dynamics.Model.frame_jacobian`); at the grasp the target's body
frame B sits at the constant pose ``X = g_E⁻¹ g_T`` in E, so a welded target moves with

    V_T = Ad_X⁻¹ V_E = J ν,      J = Ad_{X⁻¹} J_E                               (G1)

The weld is an impulsive constraint: an internal impulse ``Λ`` (body wrench at B) acts on both,
``M(ν⁺ − ν⁻) = Jᵀ Λ``, ``𝕄_T (V_T⁺ − V_T⁻) = −Λ``, ``V_T⁺ = J ν⁺``, hence

    (M + Jᵀ 𝕄_T J) ν⁺ = M ν⁻ + Jᵀ 𝕄_T V_T⁻                                   (G2)

``M + Jᵀ𝕄_T J`` is the mass matrix of the merged system
(:meth:`~vm_dynamics.Model.with_attached_body`); the total momentum is unchanged because ``Λ``
is internal.  **Release** removes the weld without an impulse: the chaser keeps ``ν``, the
target leaves with ``V_T = J ν`` and ``g_T = g_E X`` (G3).

The grasp condition: the fixture frame F = ``g_T · fixture`` within ``position_tol`` (m) and
``angle_tol`` (rad, the angle of ``R_E⁻¹R_F``) of E, and a grasp command.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core import lie

__all__ = ["GraspSpec", "grasp_error", "grasp_jacobian", "grasp_velocity", "release_velocity",
           "grasp_spec_from_config"]


@dataclass(frozen=True)
class GraspSpec:
    """The chaser's grasp ``frame`` and the tolerances of the grasp condition."""

    frame: str
    position_tol: float = 0.02
    angle_tol: float = 0.1

    def __post_init__(self):
        for k in ("position_tol", "angle_tol"):
            v = float(getattr(self, k))
            if not v > 0 or not math.isfinite(v):
                raise ValueError(f"grasp.{k}: expected a positive number, got {v!r}")


def grasp_error(g_E: np.ndarray, g_F: np.ndarray) -> tuple[float, float]:
    """``(position error (m), angle (rad))`` of the fixture pose ``g_F`` relative to the grasp
    frame's ``g_E`` (both inertial)."""
    rel = lie.se3_inv(g_E) @ g_F
    return float(np.linalg.norm(rel[:3, 3])), float(np.linalg.norm(lie.so3_log(rel[:3, :3])))


def grasp_jacobian(model, q, frame: str, X: np.ndarray) -> np.ndarray:
    """``J = Ad_{X⁻¹} J_E`` (G1): the target's body twist per unit ``ν`` when welded at ``X``."""
    return lie.Ad_inv(X) @ model.frame_jacobian(q, frame)


def grasp_velocity(model, target_inertia: np.ndarray, q, V, qd, V_T, frame: str,
                   X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(V⁺, q̇⁺)`` of the merged system after the weld, from (G2)."""
    b = model.base_dim
    J = grasp_jacobian(model, q, frame, X)
    M = model.mass_matrix(q)
    nu = np.concatenate([np.asarray(V, float), np.asarray(qd, float)])
    A = M + J.T @ target_inertia @ J
    rhs = M @ nu + J.T @ (target_inertia @ np.asarray(V_T, float))
    nu_p = np.linalg.solve(0.5 * (A + A.T), rhs)
    return nu_p[:b], nu_p[b:]


def release_velocity(model, q, V, qd, frame: str, X: np.ndarray) -> np.ndarray:
    """The target's body twist when released (G3): ``J ν``."""
    return grasp_jacobian(model, q, frame, X) @ np.concatenate([np.asarray(V, float),
                                                                np.asarray(qd, float)])


def grasp_spec_from_config(cfg: dict, frames=None) -> GraspSpec:
    """``{frame: ee_link, position_tol: 0.02, angle_tol: 0.1}``."""
    if not isinstance(cfg, dict) or "frame" not in cfg:
        raise ValueError("grasp: expected {frame, position_tol, angle_tol}")
    unknown = set(cfg) - {"frame", "position_tol", "angle_tol", "command_time", "release_time"}
    if unknown:
        raise ValueError(f"grasp: unknown keys {sorted(unknown)}")
    if frames is not None and cfg["frame"] not in frames:
        raise ValueError(f"grasp.frame: unknown chaser frame {cfg['frame']!r}; frames are "
                         f"{', '.join(frames)}")
    return GraspSpec(str(cfg["frame"]), **{k: float(cfg[k]) for k in ("position_tol", "angle_tol")
                                           if k in cfg})
