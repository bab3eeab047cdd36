"""Input validation shared by every layer: one vector check, one pose check, one message style.

Every public function of the library passes user input through these, so a wrong shape, NaN/Inf
or a non-rigid pose is a ``ValueError`` that names the argument.
"""
from __future__ import annotations

import numpy as np

__all__ = ["as_vector", "as_pose"]


def as_vector(x, n: int, name: str) -> np.ndarray:
    """``x`` as a finite float vector of shape ``(n,)`` (a scalar is accepted when n = 1).

    Raises ``ValueError`` naming ``name`` for anything else: not numbers, a wrong shape, NaN or Inf.
    """
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected {n} numbers, got {x!r}") from None
    if a.ndim == 0 and n == 1:
        a = a.reshape(1)
    if a.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or Inf: {a}")
    return a


def as_pose(g, name: str = "g") -> np.ndarray:
    """``g`` as a finite 4×4 rigid transform (rotation orthonormal to 1e-6 with det +1, last row
    ``[0, 0, 0, 1]``).  Raises ``ValueError`` naming ``name`` otherwise."""
    try:
        a = np.asarray(g, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a 4x4 homogeneous matrix") from None
    if a.shape != (4, 4):
        raise ValueError(f"{name}: expected shape (4, 4), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or Inf")
    R = a[:3, :3]
    if (np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0.0
            or np.abs(a[3] - [0, 0, 0, 1]).max() > 1e-12):
        raise ValueError(f"{name}: not a rigid transform (rotation block not orthonormal with "
                         f"det +1, or last row not [0, 0, 0, 1])")
    return a
