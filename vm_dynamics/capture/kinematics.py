"""The body twist of a chaser frame from the compiled forward kinematics.

``V_f = J_f ν`` (the body Jacobian of paper 000 (92)–(93), :meth:`~vm_dynamics.Model.frame_jacobian`)
is evaluated here without forming ``J_f``: with the current joint twists in the vehicle frame
``S_j = Ad_{G_j} ξ_j``, ``G_j = g_j(q) (ḡ_j⁰)⁻¹`` (body j's displacement from home; its joint axis
moves with it), the frame's velocity in the vehicle frame is ``V + Σ_{j ∈ anc} S_j q̇_j`` (the sum
over the joints between the vehicle and the frame's body), and its body twist is that
velocity transformed by ``Ad_{g_vf}⁻¹`` with ``g_vf`` the frame's pose in the vehicle frame.
The poses come from :meth:`~vm_dynamics.Model.frame_pose` (compiled, microseconds), so a contact
or a weld costs a few frame poses per stage instead of the reference kinematics.
"""
from __future__ import annotations

import numpy as np

__all__ = ["frame_twist"]


def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def frame_twist(model, q, frame: str, V, qd) -> np.ndarray:
    """Body twist ``[v; ω]`` of ``frame`` (in its own axes) at the chaser state ``(q, V, q̇)``;
    equals ``model.frame_jacobian(q, frame) @ [V; q̇]``."""
    q = np.asarray(q, dtype=float)
    W = np.asarray(V, dtype=float).copy()
    qd_full = model.coupling.full_velocities(np.asarray(qd, dtype=float))
    j = int(model.frame_body[frame]) - 1
    while j >= 0:
        if qd_full[j] != 0.0:
            gb, h = model.frame_pose(q, model.link_names[j + 1]), model.home[j + 1]
            R = gb[:3, :3] @ h[:3, :3].T                 # G_j = g_j(q) (ḡ_j⁰)⁻¹
            p = gb[:3, 3] - R @ h[:3, 3]
            w = R @ model.xi[j, 3:]                     # S_j = Ad_G ξ_j = [R v + p × R ω; R ω]
            W[:3] += (R @ model.xi[j, :3] + _cross(p, w)) * qd_full[j]
            W[3:] += w * qd_full[j]
        j = int(model.parent_joint[j])
    g = model.frame_pose(q, frame)
    R, p = g[:3, :3], g[:3, 3]
    return np.concatenate([R.T @ (W[:3] - _cross(p, W[3:])), R.T @ W[3:]])
