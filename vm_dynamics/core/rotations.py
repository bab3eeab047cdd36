"""Rotations in one place, with one tolerance policy.

Conventions: quaternions in ROS order ``x, y, z, w``; rotation vectors ``φ = θ·axis`` (the log
of SO(3)); all functions take one object or a stack (``(..., 4)``, ``(..., 3, 3)``,
``(..., 4, 4)``).

Tolerance policy (used by the scenario loader, the references, the message layer and the
nodes alike):

* a **rotation matrix** must be orthonormal within :data:`ROTATION_TOL` (max |RᵀR − I|) with
  det +1; it is never silently projected (scipy's ``Rotation.from_matrix`` would project);
* a **quaternion** given by a user (file, parameter, message) must have unit norm within
  :data:`QUAT_NORM_TOL`, tf2's order of tolerance, and is then normalised;
  :func:`matrix_from_quat` itself normalises any non-zero quaternion (for computed ones).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = ["ROTATION_TOL", "QUAT_NORM_TOL", "check_rotation", "check_unit_quaternion",
           "quat_from_matrix", "matrix_from_quat", "rotvec_from_quat", "rotvec_from_matrix",
           "check_rigid_transform", "pose_from_matrix", "matrix_from_pose", "rpy_to_matrix",
           "matrix_to_rpy", "quaternion_of_entries", "transform_of_unit_quaternion"]

#: Orthonormality tolerance for rotation matrices (max abs entry of R^T R - I).
ROTATION_TOL = 1e-6
#: Quaternions in messages must satisfy | |q| - 1 | <= this (same order as tf2's check).
QUAT_NORM_TOL = 1e-2


def _check_rotation_one(R: np.ndarray, tol: float, name: str) -> list:
    """Validate one 3x3 rotation (same rules and messages as the batched checks); returns
    its entries as Python floats (row major).  Unrolled scalar arithmetic: a single pose is
    checked in about a microsecond (the nodes check several per published state)."""
    r = R.ravel().tolist()
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = r
    if not math.isfinite(r00 + r01 + r02 + r10 + r11 + r12 + r20 + r21 + r22) \
            and not all(map(math.isfinite, r)):
        raise ValueError(f"{name} contains NaN/Inf")
    # max |R^T R - I| over the six distinct entries (column dot products)
    err = max(abs(r00 * r00 + r10 * r10 + r20 * r20 - 1.0),
              abs(r01 * r01 + r11 * r11 + r21 * r21 - 1.0),
              abs(r02 * r02 + r12 * r12 + r22 * r22 - 1.0),
              abs(r00 * r01 + r10 * r11 + r20 * r21),
              abs(r00 * r02 + r10 * r12 + r20 * r22),
              abs(r01 * r02 + r11 * r12 + r21 * r22))
    if not err <= tol:                                 # also NaN from overflowing products
        raise ValueError(f"{name} is not orthonormal: max |R^T R - I| = {err:.3e} > tol {tol:g}")
    det = (r00 * (r11 * r22 - r12 * r21) - r01 * (r10 * r22 - r12 * r20)
           + r02 * (r10 * r21 - r11 * r20))
    if det < 0:
        raise ValueError(f"{name} has det < 0 (reflection, not a rotation)")
    return r


def quaternion_of_entries(r00: float, r01: float, r02: float, r10: float, r11: float,
                          r12: float, r20: float, r21: float, r22: float
                          ) -> tuple[float, float, float, float]:
    """Unit quaternion ``(x, y, z, w)``, ``w >= 0``, of the rotation matrix with these
    (finite, already checked) entries, in Python floats: Shepperd's method, the branch of the
    first largest of ``trace, r00, r11, r22``.  The one scalar form, shared by
    :func:`quat_from_matrix` on one matrix and the message writer's per-period path
    (``transport/array_cdr.py``), so both give the same floats."""
    tr = r00 + r11 + r22
    if tr >= r00 and tr >= r11 and tr >= r22:
        s = 2.0 * math.sqrt(max(1.0 + tr, 0.0))
        x, y, z, w = (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s, 0.25 * s
    elif r00 >= r11 and r00 >= r22:
        s = 2.0 * math.sqrt(max(1.0 + r00 - r11 - r22, 0.0))
        x, y, z, w = 0.25 * s, (r01 + r10) / s, (r02 + r20) / s, (r21 - r12) / s
    elif r11 >= r22:
        s = 2.0 * math.sqrt(max(1.0 - r00 + r11 - r22, 0.0))
        x, y, z, w = (r01 + r10) / s, 0.25 * s, (r12 + r21) / s, (r02 - r20) / s
    else:
        s = 2.0 * math.sqrt(max(1.0 - r00 - r11 + r22, 0.0))
        x, y, z, w = (r02 + r20) / s, (r12 + r21) / s, 0.25 * s, (r10 - r01) / s
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if w < 0.0:
        n = -n
    return x / n, y / n, z / n, w / n


def _quat_from_matrix_one(R: np.ndarray, tol: float, name: str = "rotation matrix"
                          ) -> np.ndarray:
    """:func:`quat_from_matrix` of one 3x3 matrix with Python floats (the same Shepperd
    branches; ~20x faster than the batched form for a single message)."""
    return np.array(quaternion_of_entries(*_check_rotation_one(R, tol, name)))


def quat_from_matrix(R: Any, *, tol: float = ROTATION_TOL) -> np.ndarray:
    """Rotation matrix (..., 3, 3) -> unit quaternion (..., 4) in ROS order (x, y, z, w).

    Shepperd's method: the component with the largest magnitude (chosen among
    ``w, x, y, z`` via ``trace, R00, R11, R22``) is computed from a square root of a
    quantity >= 1/4 and the others from off-diagonal sums/differences divided by it,
    so there is no cancellation near 180 deg (where ``w -> 0``).  The result is
    normalised and has ``w >= 0``.

    Raises ValueError if ``R`` is not finite, not 3x3, not orthonormal within
    ``tol`` or has det < 0.
    """
    R = np.asarray(R, dtype=float)
    if R.shape == (3, 3):
        return _quat_from_matrix_one(R, tol)
    if R.ndim < 2 or R.shape[-2:] != (3, 3):
        raise ValueError(f"rotation matrix must have shape (..., 3, 3), got {R.shape}")
    if not np.all(np.isfinite(R)):
        raise ValueError("rotation matrix contains NaN/Inf")
    err = np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max(axis=(-2, -1))
    if np.any(err > tol):
        raise ValueError(
            f"rotation matrix is not orthonormal: max |R^T R - I| = {float(np.max(err)):.3e} "
            f"> tol {tol:g}")
    if np.any(np.linalg.det(R) < 0):
        raise ValueError("rotation matrix has det < 0 (reflection, not a rotation)")

    r00, r11, r22 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    r01, r02, r10 = R[..., 0, 1], R[..., 0, 2], R[..., 1, 0]
    r12, r20, r21 = R[..., 1, 2], R[..., 2, 0], R[..., 2, 1]
    tr = r00 + r11 + r22
    choice = np.argmax(np.stack([tr, r00, r11, r22], axis=-1), axis=-1)
    # 4 q_k^2 = 1 + (+/-) diagonal combination, always >= 1 for the chosen k.
    with np.errstate(divide="ignore", invalid="ignore"):
        # case w largest
        s = 2.0 * np.sqrt(np.maximum(1.0 + tr, 0.0))  # s = 4w
        cw = np.stack([(r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s, 0.25 * s], axis=-1)
        s = 2.0 * np.sqrt(np.maximum(1.0 + r00 - r11 - r22, 0.0))  # s = 4x
        cx = np.stack([0.25 * s, (r01 + r10) / s, (r02 + r20) / s, (r21 - r12) / s], axis=-1)
        s = 2.0 * np.sqrt(np.maximum(1.0 - r00 + r11 - r22, 0.0))  # s = 4y
        cy = np.stack([(r01 + r10) / s, 0.25 * s, (r12 + r21) / s, (r02 - r20) / s], axis=-1)
        s = 2.0 * np.sqrt(np.maximum(1.0 - r00 - r11 + r22, 0.0))  # s = 4z
        cz = np.stack([(r02 + r20) / s, (r12 + r21) / s, 0.25 * s, (r10 - r01) / s], axis=-1)
    c = choice[..., None]
    q = np.where(c == 0, cw, np.where(c == 1, cx, np.where(c == 2, cy, cz)))
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., 3:4] < 0.0, -q, q)


def matrix_from_quat(q: Any) -> np.ndarray:
    """Quaternion (..., 4) in ROS order (x, y, z, w) -> rotation matrix (..., 3, 3).

    The quaternion is normalised first; zero-norm (< 1e-12) or non-finite input
    raises ValueError.
    """
    q = np.asarray(q, dtype=float)
    if q.ndim < 1 or q.shape[-1] != 4:
        raise ValueError(
            f"quaternion must have shape (..., 4) in (x, y, z, w) order, got {q.shape}")
    if not np.all(np.isfinite(q)):
        raise ValueError("quaternion contains NaN/Inf")
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(n < 1e-12):
        raise ValueError("quaternion has zero norm; cannot convert to a rotation")
    x, y, z, w = np.moveaxis(q / n, -1, 0)
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    R = np.stack([
        1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy),
        2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx),
        2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy),
    ], axis=-1)
    return R.reshape(q.shape[:-1] + (3, 3))


def rotvec_from_quat(q: Any) -> np.ndarray:
    """Rotation vector ``phi = theta * axis`` (log of R) from quaternion(s) (x, y, z, w).

    ``theta = 2 atan2(|xyz|, |w|)`` lies in [0, pi]; well conditioned at 0 and pi.
    """
    q = np.asarray(q, dtype=float)
    if q.ndim < 1 or q.shape[-1] != 4:
        raise ValueError(f"quaternion must have shape (..., 4), got {q.shape}")
    if not np.all(np.isfinite(q)):
        raise ValueError("quaternion contains NaN/Inf")
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(n < 1e-12):
        raise ValueError("quaternion has zero norm")
    q = q / n
    q = np.where(q[..., 3:4] < 0.0, -q, q)
    v, w = q[..., :3], q[..., 3]
    s = np.linalg.norm(v, axis=-1)
    theta = 2.0 * np.arctan2(s, w)
    # theta / s -> 2 / w as s -> 0 (w -> 1); use series to avoid 0/0.
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(s > 1e-8, theta / s, 2.0 / w * (1.0 + s * s / (3.0 * w * w)))
    return v * scale[..., None]


def rotvec_from_matrix(R: Any, *, tol: float = ROTATION_TOL) -> np.ndarray:
    """Rotation vector (log map of SO(3)) of rotation matrix/matrices (..., 3, 3)."""
    return rotvec_from_quat(quat_from_matrix(R, tol=tol))


def _check_translation_row(g: np.ndarray, tol: float, name: str) -> None:
    """The translation and last row of one 4x4 transform: finite, last row [0, 0, 0, 1]."""
    a, b, c, d = g[3].tolist()
    x, y, z = g[:3, 3].tolist()
    if not math.isfinite(a + b + c + d + x + y + z) and not all(
            map(math.isfinite, (a, b, c, d, x, y, z))):
        raise ValueError(f"{name} contains NaN/Inf")
    if not max(abs(a), abs(b), abs(c), abs(d - 1.0)) <= tol:
        raise ValueError(f"{name}: last row must be [0, 0, 0, 1]")


def check_rigid_transform(g: Any, *, tol: float = ROTATION_TOL, name: str = "g") -> np.ndarray:
    """Validate a 4x4 homogeneous transform (or a stack (..., 4, 4)); return it as float."""
    g = np.asarray(g, dtype=float)
    if g.shape == (4, 4):                      # one transform: scalar checks (fast path)
        _check_translation_row(g, tol, name)
        _check_rotation_one(g[:3, :3], tol, f"{name}: rotation block")
        return g
    if g.ndim < 2 or g.shape[-2:] != (4, 4):
        raise ValueError(f"{name} must be a 4x4 homogeneous transform, got shape {g.shape}")
    if not np.all(np.isfinite(g)):
        raise ValueError(f"{name} contains NaN/Inf")
    bottom = g[..., 3, :]
    if np.any(np.abs(bottom - np.array([0.0, 0.0, 0.0, 1.0])) > tol):
        raise ValueError(f"{name}: last row must be [0, 0, 0, 1]")
    R = g[..., :3, :3]
    err = np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max(axis=(-2, -1))
    if np.any(err > tol):
        raise ValueError(
            f"{name}: rotation block is not orthonormal (max |R^T R - I| = "
            f"{float(np.max(err)):.3e} > tol {tol:g})")
    if np.any(np.linalg.det(R) < 0):
        raise ValueError(f"{name}: rotation block has det < 0")
    return g


def pose_from_matrix(g: Any, *, tol: float = ROTATION_TOL, name: str = "g"
                     ) -> tuple[np.ndarray, np.ndarray]:
    """4x4 transform (or a stack) -> (position (3,), quaternion (4,) x, y, z, w); checked
    rigid (:func:`check_rigid_transform`, errors name ``name``)."""
    g = np.asarray(g, dtype=float)
    if g.shape == (4, 4):                      # one transform: each check done once
        _check_translation_row(g, tol, name)
        return g[:3, 3].copy(), _quat_from_matrix_one(g[:3, :3], tol, f"{name}: rotation block")
    g = check_rigid_transform(g, tol=tol, name=name)
    return g[..., :3, 3].copy(), quat_from_matrix(g[..., :3, :3], tol=tol)


def _matrix_from_pose_one(p: list, q: list) -> np.ndarray:
    """:func:`matrix_from_pose` of one pose with Python floats (same formula and checks as
    :func:`matrix_from_quat`)."""
    x, y, z, w = q
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if not math.isfinite(n) and not all(map(math.isfinite, q)):
        raise ValueError("quaternion contains NaN/Inf")
    if not n >= 1e-12:
        raise ValueError("quaternion has zero norm; cannot convert to a rotation")
    if not math.isfinite(n):                    # |q| overflows: scale first
        m = max(map(abs, q))
        x, y, z, w = x / m, y / m, z / m, w / m
        n = math.sqrt(x * x + y * y + z * z + w * w)
    return transform_of_unit_quaternion(p, x / n, y / n, z / n, w / n)


def transform_of_unit_quaternion(p: Sequence[float], x: float, y: float, z: float, w: float
                                 ) -> np.ndarray:
    """The 4x4 transform of the position ``p`` (three floats) and the unit quaternion
    ``(x, y, z, w)`` (already normalised), from Python floats: the one scalar form shared by
    :func:`matrix_from_pose` on one pose and the message reader's per-period path
    (``transport/array_cdr.py``), so both give the same floats."""
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    return np.array(((1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy), p[0]),
                     (2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx), p[1]),
                     (2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy), p[2]),
                     (0.0, 0.0, 0.0, 1.0)))


def matrix_from_pose(p: Any, q: Any) -> np.ndarray:
    """(position (3,), quaternion (x, y, z, w)) -> 4x4 transform (quaternion normalised)."""
    p = np.asarray(p, dtype=float)
    if p.shape[-1:] != (3,):
        raise ValueError(f"position must have shape (..., 3), got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError("position contains NaN/Inf")
    q = np.asarray(q, dtype=float)
    if p.shape == (3,) and q.shape == (4,):      # one pose: scalar arithmetic (fast path)
        return _matrix_from_pose_one(p.tolist(), q.tolist())
    R = matrix_from_quat(q)
    g = np.zeros(np.broadcast_shapes(p.shape[:-1], R.shape[:-2]) + (4, 4))
    g[..., :3, :3] = R
    g[..., :3, 3] = p
    g[..., 3, 3] = 1.0
    return g


def check_rotation(R: Any, *, tol: float = ROTATION_TOL, name: str = "rotation matrix") -> np.ndarray:
    """``R`` as a finite 3×3 rotation (orthonormal within ``tol``, det +1), else a
    ``ValueError`` naming ``name``."""
    R = np.asarray(R, dtype=float)
    if R.shape != (3, 3):
        raise ValueError(f"{name} must have shape (3, 3), got {R.shape}")
    _check_rotation_one(R, tol, name)
    return R


def check_unit_quaternion(q: Any, name: str = "quaternion") -> np.ndarray:
    """A user-given quaternion ``x, y, z, w``: four finite real numbers of norm 1 within
    :data:`QUAT_NORM_TOL`; returned normalised.  ``ValueError`` naming ``name`` otherwise."""
    from .validation import as_array
    a = as_array(q, (4,), name)
    x, y, z, w = a.tolist()
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if abs(n - 1.0) > QUAT_NORM_TOL:
        raise ValueError(f"{name}: not a unit quaternion [x, y, z, w] (norm {n:.6g}; unit norm "
                         f"within {QUAT_NORM_TOL:g} required)")
    return a / n


def matrix_to_rpy(R) -> np.ndarray:
    """Inverse of :func:`rpy_to_matrix` (URDF fixed-axis roll, pitch, yaw)."""
    R = np.asarray(R, dtype=float)
    pitch = np.arctan2(-R[2, 0], np.hypot(R[0, 0], R[1, 0]))
    if np.hypot(R[0, 0], R[1, 0]) < 1e-12:          # pitch = ±90°: put everything in yaw
        return np.array([0.0, pitch, np.arctan2(-R[0, 1], R[1, 1])])
    return np.array([np.arctan2(R[2, 1], R[2, 2]), pitch, np.arctan2(R[1, 0], R[0, 0])])


def rpy_to_matrix(rpy) -> np.ndarray:
    """URDF fixed-axis roll–pitch–yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)`` (also the ZYX Euler
    angles ``(φ, θ, ψ)`` of the Euler-angle baseline)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])
