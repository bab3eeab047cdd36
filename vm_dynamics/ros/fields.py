"""Checks of message fields shared by the builders (:mod:`.messages`) and the parsers
(:mod:`.parsers`): each raises ``ValueError`` naming the message type and field."""
from __future__ import annotations

import math
import numbers
from typing import Any, Sequence

import numpy as np

from .msgtypes import DIAGNOSTIC_LEVELS, msgtype_of

__all__ = ["all_finite", "expect_msgtype", "check_frame_id", "finite_vector", "finite_field",
           "covariance36", "duplicate_names", "diagnostic_level"]


def expect_msgtype(msg: Any, msgtype: str) -> None:
    """Raise unless ``msg`` is a ``msgtype`` message (of either library)."""
    got = msgtype_of(msg)
    if got != msgtype:
        raise ValueError(f"expected a {msgtype} message, got {got}")


def check_frame_id(frame_id: Any, what: str, *, allow_empty: bool = False) -> None:
    """Raise unless ``frame_id`` is a str (non-empty unless ``allow_empty``)."""
    if not isinstance(frame_id, str):
        raise ValueError(f"{what} must be a str, got {type(frame_id).__name__}")
    if not allow_empty and not frame_id:
        raise ValueError(f"{what} must not be empty")


def finite_vector(x: Any, n: int | None, what: str) -> np.ndarray:
    """1-D finite float64 vector of length n (None: any length)."""
    if type(x) is np.ndarray and x.dtype == _F64 and x.ndim == 1 and x.flags.c_contiguous \
            and (n is None or x.shape[0] == n) and all_finite(x):
        return x                 # what the general path returns for it: the array itself
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be numeric: {exc}") from exc
    if a.ndim > 1 and sum(d != 1 for d in a.shape) <= 1:
        a = a.reshape(-1)  # row/column vector
    if a.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {a.shape}")
    if n is not None and a.shape[0] != n:
        raise ValueError(f"{what} must have length {n}, got {a.shape[0]}")
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise ValueError(f"{what} contains NaN/Inf at index {int(bad[0])}")
    return np.ascontiguousarray(a)


_F64 = np.dtype(np.float64)


def all_finite(a: np.ndarray) -> bool:
    """Every entry of the flat float array ``a`` finite: a finite sum of its Python floats
    (overflow gives inf, no warning: then the exact test) or, for long arrays, one vectorised
    test."""
    if a.size <= 32 and math.isfinite(sum(a.tolist())):
        return True
    return bool(np.isfinite(a).all())


def finite_field(arr: Any, what: str, names: Sequence[str] | None = None) -> np.ndarray:
    """A received field as a flat float64 array, checked finite (the first bad index, and its
    joint name if ``names`` are given, in the error)."""
    a = np.asarray(arr, dtype=np.float64).reshape(-1)
    if all_finite(a):                # else the exact search below names the bad index
        return a
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        i = int(bad[0])
        who = f" (joint '{names[i]}')" if names is not None and i < len(names) else ""
        raise ValueError(f"{what} contains NaN/Inf at index {i}{who}")
    return a


def covariance36(c: Any, what: str) -> np.ndarray:
    """A 6x6 covariance as its 36 row-major entries (zeros for None), checked finite."""
    if c is None:
        return np.zeros(36)
    a = np.asarray(c, dtype=float)
    if a.shape not in {(36,), (6, 6)}:
        raise ValueError(f"{what} must have shape (6, 6) or (36,), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contains NaN/Inf")
    return np.ascontiguousarray(a.reshape(36))


def duplicate_names(names: Sequence[str], show: int = 10) -> list[str]:
    """The names that occur more than once (sorted, at most ``show`` of them), in time linear
    in ``len(names)``."""
    seen: set = set()
    dup: set = set()
    for nm in names:
        if nm in seen:
            dup.add(nm)
        else:
            seen.add(nm)
    return sorted(dup, key=repr)[:show]


def diagnostic_level(level: Any) -> int:
    """DiagnosticStatus level 0..3 from its number or name (``'OK'``, ``'warn'``...)."""
    if isinstance(level, str):
        key = level.strip().upper()
        if key not in DIAGNOSTIC_LEVELS:
            raise ValueError(f"DiagnosticStatus: unknown level {level!r}; expected one of "
                             f"{sorted(DIAGNOSTIC_LEVELS)} or 0..3")
        return DIAGNOSTIC_LEVELS[key]
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, (numbers.Integral,
                                                                      np.integer)):
        raise ValueError(f"DiagnosticStatus: level must be int 0..3 or a name, got {level!r}")
    if int(level) not in DIAGNOSTIC_LEVELS.values():
        raise ValueError(f"DiagnosticStatus: level must be 0..3 (OK/WARN/ERROR/STALE), "
                         f"got {level}")
    return int(level)
