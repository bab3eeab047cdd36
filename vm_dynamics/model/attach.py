"""Copies of a model with inertia added: to the vehicle (hydrodynamic added mass) or a rigid
body welded to one of its links (a grasped payload, docs/capture.md)."""
from __future__ import annotations

import copy

import numpy as np

from ..core import lie
from ..core.validation import as_pose
from .urdf import check_rigid_body_inertia

__all__ = ["added_inertia_model", "attached_body_model"]


def added_inertia_model(model, M_added):
    """:meth:`Model.with_added_vehicle_inertia`: a copy whose vehicle inertia 𝔐₀ includes a
    constant 6×6 ``M_added`` (body frame, ``[linear; angular]``); gravity still acts on the URDF
    masses only."""
    M_added = np.asarray(M_added, dtype=float)
    if M_added.shape != (6, 6) or not np.all(np.isfinite(M_added)):
        raise ValueError("M_added: expected a finite 6x6 matrix")
    if not np.allclose(M_added, M_added.T) or np.linalg.eigvalsh(M_added)[0] < 0:
        raise ValueError("M_added: must be symmetric positive semi-definite")
    other = copy.copy(model)
    other.vehicle_inertia = model.vehicle_inertia + M_added
    other.added_vehicle_inertia = M_added
    return other


def attached_body_model(model, frame: str, inertia, pose=None):
    """:meth:`Model.with_attached_body`: a copy of ``model`` in which a rigid body is welded to
    the link that carries ``frame`` (a known frame).

    ``inertia`` is the body's 6×6 spatial inertia (``[v; ω]`` order) about the origin of its own
    frame B and in B's axes; ``pose`` (4×4, default identity) is B's pose in ``frame``.  The
    body's inertia is re-expressed in the vehicle frame at home, ``Ad_{X⁻¹}ᵀ 𝕄_B Ad_{X⁻¹}`` with
    ``X = ḡ_frame⁰ · pose`` (the transformation of (55)), and added to that link's 𝔐 (or to 𝔐₀
    for a vehicle frame); the link's mass and CoM are updated, so gravity acts on the attached
    body too.  The joints, frames and coordinates are unchanged: the mass matrix of the copy is
    ``M + Jᵀ 𝕄_B J`` with ``J`` the body Jacobian of B (docs/capture.md, "Grasp")."""
    M_B = np.asarray(inertia, dtype=float)
    if M_B.shape != (6, 6) or not np.all(np.isfinite(M_B)):
        raise ValueError("inertia: expected a finite 6x6 spatial inertia")
    check_rigid_body_inertia(M_B, "inertia")
    pose = np.eye(4) if pose is None else as_pose(pose, "pose")
    X = model.frame_home[frame] @ pose
    Ai = lie.Ad_inv(X)
    M_home = Ai.T @ M_B @ Ai
    k = int(model.frame_body[frame])
    m_B = float(M_B[0, 0])
    c_B = X[:3, :3] @ (lie.unskew(M_B[3:, :3]) / m_B) + X[:3, 3] if m_B > 0 else X[:3, 3]
    other = copy.copy(model)
    if k == 0:
        other.vehicle_inertia = model.vehicle_inertia + M_home
    else:
        other.body_inertia_home = model.body_inertia_home.copy()
        other.body_inertia_home[k - 1] = model.body_inertia_home[k - 1] + M_home
    other.mass = model.mass.copy()
    other.com_home = model.com_home.copy()
    m_new = model.mass[k] + m_B
    if m_new > 0:
        other.com_home[k] = (model.mass[k] * model.com_home[k] + m_B * c_B) / m_new
    other.mass[k] = m_new
    return other
