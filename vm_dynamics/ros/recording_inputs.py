"""Inputs of a recording checked before anything is written: the embedding of the base
velocity into the 6-twist (:func:`base_iota_matrix`), which samples to record
(:func:`select_samples`), and arrays and frame ids with the culprit named in every error."""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["BASE_IOTA", "base_iota_matrix", "select_samples", "checked_array", "joint_array",
           "frame_pair"]


def _iota(rows: Sequence[int]) -> np.ndarray:
    m = np.zeros((6, len(rows)))
    for j, r in enumerate(rows):
        m[r, j] = 1.0
    return m


#: Embeddings of the base velocity b-vector into the 6-twist [v; omega] (6 x b).
BASE_IOTA: dict[str, np.ndarray] = {
    "SE3": np.eye(6),            # [vx, vy, vz, wx, wy, wz]
    "SE2": _iota([0, 1, 5]),     # [vx, vy, wz]
    "SO3": _iota([3, 4, 5]),     # [wx, wy, wz]
    "fixed": np.zeros((6, 0)),   # no base velocity
}


def base_iota_matrix(base_iota: Any, b: int) -> np.ndarray:
    """Resolve ``base_iota``: None, a name in :data:`BASE_IOTA` (case-insensitive), an
    object with an ``iota`` attribute (``vm_dynamics.core.groups.VehicleGroup``) or a 6 x b array.

    ``None`` is accepted only where unambiguous: b == 6 (SE3) or b == 0 (fixed).
    """
    if base_iota is None:
        if b == 6:
            return BASE_IOTA["SE3"]
        if b == 0:
            return BASE_IOTA["fixed"]
        raise ValueError(
            f"V has {b} columns; pass base_iota (6x{b} array or one of "
            f"{sorted(BASE_IOTA)}) — e.g. 'SE2' for [vx, vy, wz] or 'SO3' for [wx, wy, wz]")
    if isinstance(base_iota, str):
        key = {k.lower(): k for k in BASE_IOTA}.get(base_iota.lower())
        if key is None:
            raise ValueError(f"unknown base_iota {base_iota!r}; expected one of "
                             f"{sorted(BASE_IOTA)} or a 6 x b array")
        m = BASE_IOTA[key]
    elif hasattr(base_iota, "iota"):  # e.g. a vm_dynamics.core.groups.VehicleGroup
        m = np.asarray(base_iota.iota, dtype=float)
    else:
        m = np.asarray(base_iota, dtype=float)
    if m.shape != (6, b):
        raise ValueError(f"base_iota must have shape (6, {b}) to map V (N, {b}) to a 6-twist, "
                         f"got {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ValueError("base_iota contains NaN/Inf")
    return m


def select_samples(t: Any, decimate: int | None = None,
                   rate_hz: float | None = None) -> np.ndarray:
    """Indices of the samples to record.

    * neither: all samples;
    * ``decimate=k``: every k-th sample starting with the first;
    * ``rate_hz=r``: the first sample at or after each grid time ``t0 + m / r``
      (grid-based, so no drift accumulates; a sample is never used twice).
    """
    t = np.asarray(t, dtype=float)
    n = t.shape[0]
    if decimate is not None and rate_hz is not None:
        raise ValueError("give at most one of decimate and rate_hz")
    if decimate is not None:
        if isinstance(decimate, bool) or int(decimate) != decimate or decimate < 1:
            raise ValueError(f"decimate must be an integer >= 1, got {decimate!r}")
        return np.arange(0, n, int(decimate))
    if rate_hz is not None:
        if not (isinstance(rate_hz, (int, float, np.number)) and math.isfinite(rate_hz)
                and rate_hz > 0):
            raise ValueError(f"rate_hz must be a finite positive number, got {rate_hz!r}")
        if n == 0:
            return np.zeros(0, dtype=int)
        # grid slot of each sample; tiny tolerance so that t = t0 + m/r exactly lands in m.
        slot = np.floor((t - t[0]) * rate_hz + 1e-9).astype(np.int64)
        first = np.ones(n, dtype=bool)
        first[1:] = slot[1:] != slot[:-1]
        return np.flatnonzero(first)
    return np.arange(n)


# ---------------------------------------------------------------------- validation


def checked_array(x: Any, shape: tuple, what: str) -> np.ndarray:
    """Float array with a shape pattern (None = any); finite, with first bad sample named."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be numeric: {exc}") from exc
    if a.ndim != len(shape) or any(s is not None and s != d for s, d in zip(shape, a.shape)):
        pattern = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{what} must have shape {pattern}, got {a.shape}")
    if a.size and not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise ValueError(f"{what} contains NaN/Inf at sample {int(bad[0])} (index "
                         f"{tuple(int(i) for i in bad)})")
    return a


def joint_array(x: Any, N: int, n: int, what: str) -> np.ndarray:
    """(N, n) joint array; for a vehicle without joints (n == 0) None/empty is fine."""
    if n == 0 and (x is None or np.size(x) == 0):
        return np.zeros((N, 0))
    if x is None:
        raise ValueError(f"{what} is required for {n} joints")
    return checked_array(x, (N, n), f"{what} (N, n_joints)")


def frame_pair(frame_ids: Any) -> tuple[str, str]:
    """``(odom_frame, base_frame)`` from a pair or a mapping (keys ``odom``/``parent``,
    ``base``/``base_link``/``child``), checked non-empty and distinct."""
    if isinstance(frame_ids, Mapping):
        parent = frame_ids.get("odom", frame_ids.get("parent", "odom"))
        child = frame_ids.get("base", frame_ids.get("base_link", frame_ids.get("child",
                                                                                 "base_link")))
    else:
        try:
            parent, child = frame_ids
        except (TypeError, ValueError) as exc:
            raise ValueError(f"frame_ids must be (odom_frame, base_frame), got {frame_ids!r}"
                             ) from exc
    for f in (parent, child):
        if not isinstance(f, str) or not f:
            raise ValueError(f"frame ids must be non-empty strings, got {frame_ids!r}")
    if parent == child:
        raise ValueError(f"odom and base frame must differ, got {parent!r} twice")
    return parent, child
