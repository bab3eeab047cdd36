"""Input validation shared by every layer: one array check, one vector check, one pose check.

Every public function of the library, the scenario loader and the node cores pass user input
through these, so a wrong shape, a non-number (string, boolean, complex, object), NaN/Inf or
a magnitude that would overflow is a ``ValueError`` that names the argument.

The compiled fast path splits the same check in two, so that a call pays no Python-level scan
of the entries: :func:`as_real_array` (kind and shape, in Python) and the range test of its
kernels (:mod:`vm_dynamics.dynamics.fast.kernels.checked`, the limits below); when a kernel
reports an input out of range, the caller re-runs :func:`as_array` / :func:`as_pose` on the
inputs for the message.  Both paths accept exactly the same inputs with the same errors.
"""
from __future__ import annotations

import math
from itertools import chain

import numpy as np

__all__ = ["MAX_MAGNITUDE", "MAX_COORDINATE", "as_array", "as_real_array", "as_real_vector",
           "as_vector", "as_pose", "as_positive", "as_returned_vectors", "check_range",
           "overflow_error"]

#: Largest magnitude accepted where a function multiplies entries (the Lie-group functions,
#: scenario and node parameters).  Up to it every function of :mod:`vm_dynamics.core.lie`
#: returns finite values (the worst product, ``J⁻¹ Q J⁻¹`` in ``dexp_inv``, stays below 2e306).
MAX_MAGNITUDE = 1e100
#: Largest joint coordinate (rad or m) the model accepts: a joint twist times the coordinate
#: (``ξ q`` in the product of exponentials (13)) then stays far below MAX_MAGNITUDE, and the
#: mass matrix (quadratic in a prismatic coordinate) finite.
MAX_COORDINATE = 1e50
_F64 = np.dtype(np.float64)


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join("*" if s is None else str(s) for s in shape) + ("," if len(shape) == 1
                                                                         else "") + ")"


def as_real_array(x, shape: tuple | None, name: str) -> np.ndarray:
    """``x`` as a C-contiguous, writeable float64 array of ``shape`` (``None`` entries match any
    length, ``shape=None`` any shape) converted from real numbers only; else a ``ValueError``
    naming ``name``.  The entries' range is *not* checked (see :func:`as_array`).

    Rejects booleans (also inside a list of numbers), complex numbers, strings and objects:
    numpy would silently convert them (``True`` → 1, ``1+2j`` → 1 with the imaginary part
    dropped, ``"1.5"`` → 1.5).  A float64 array of the right shape, C-contiguous and writeable,
    is returned as it is (no copy): what the compiled kernels take."""
    if type(x) is np.ndarray and x.dtype == _F64 and x.shape == shape:
        a = x
    elif type(x) in _SEQUENCES and _plain_numbers(x):        # a list of floats: one pass
        try:
            a = np.array(x, dtype=np.float64)
        except (ValueError, OverflowError):      # ragged, or an int beyond the floats
            raise ValueError(f"{name}: expected an array of numbers, got {_short(x)}") from None
        if shape is not None and a.shape != shape and (None not in shape or a.ndim != len(shape)
                                                       or any(s is not None and s != d for s, d
                                                              in zip(shape, a.shape))):
            raise ValueError(f"{name}: expected shape {_shape_text(shape)}, got {a.shape}")
        return a
    else:
        try:
            a = np.asarray(x)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{name}: expected an array of numbers, got {_short(x)}") from None
        if a.dtype.kind not in "fiu" or (isinstance(x, (list, tuple)) and _holds_bool(x)):
            what = "booleans" if a.dtype.kind in "bfiu" else f"dtype {a.dtype}"
            raise ValueError(f"{name}: expected real numbers, got {what} ({_short(x)})")
        if shape is not None and a.shape != shape and (None not in shape or a.ndim != len(shape)
                                                       or any(s is not None and s != d for s, d
                                                              in zip(shape, a.shape))):
            raise ValueError(f"{name}: expected shape {_shape_text(shape)}, got {a.shape}")
        if a.dtype != _F64:
            try:
                with np.errstate(over="raise"):
                    a = a.astype(np.float64)
            except FloatingPointError:          # e.g. a longdouble beyond the float range
                raise ValueError(f"{name}: contains NaN or Inf") from None
    if not (a.flags.c_contiguous and a.flags.writeable):
        a = np.array(a, dtype=np.float64, order="C")
    return a


#: element types of a list that hold no bool (the common case, decided in one pass)
_PLAIN_NUMBERS = frozenset({float, int, np.float64, np.int64})
_SEQUENCES = (list, tuple)
_SEQUENCE_TYPES = frozenset(_SEQUENCES)


def _plain_numbers(x) -> bool:
    """True if ``x`` (a list or tuple) holds only Python/numpy floats and ints, or lists or
    tuples of them (a vector, a matrix): numpy converts it exactly, nothing to reject."""
    types = set(map(type, x))
    if types <= _PLAIN_NUMBERS:
        return True
    return types <= _SEQUENCE_TYPES and set(map(type, chain.from_iterable(x))) <= _PLAIN_NUMBERS


def _holds_bool(x) -> bool:
    """True if the nested lists/tuples ``x`` hold a bool (which numpy turns into 1.0 or 0.0
    silently when it sits among numbers); one pass per nesting level."""
    for _ in range(32):
        types = set(map(type, x))
        if types <= _PLAIN_NUMBERS:
            return False
        if bool in types or np.bool_ in types:
            return True
        if list not in types and tuple not in types:
            return False
        x = [e for sub in x if type(sub) in (list, tuple) for e in sub]
    return False


def as_array(x, shape: tuple | None, name: str, limit: float = math.inf) -> np.ndarray:
    """``x`` as a float64 array of ``shape`` (``None`` entries match any length, ``shape=None``
    any shape) with finite
    entries of magnitude at most ``limit``; else a ``ValueError`` naming ``name``.

    Rejects booleans, complex numbers, strings and objects (numpy would silently convert or
    truncate them), as :func:`as_real_array`.  A float64 array of the right shape is returned
    as it is (no copy)."""
    if type(x) is np.ndarray and x.dtype == _F64 and x.shape == shape:
        a = x
    else:
        a = as_real_array(x, shape, name)
    check_range(a, name, limit)
    return a


def check_range(a: np.ndarray, name: str, limit: float = math.inf) -> None:
    """``ValueError`` naming ``name`` unless every entry of the float array ``a`` is finite and
    of magnitude at most ``limit``."""
    if a.size:
        m = np.abs(a).max()
        if not (m <= limit and m < math.inf):
            if not np.isfinite(m):
                raise ValueError(f"{name}: contains NaN or Inf")
            raise ValueError(f"{name}: entries must not exceed {limit:g} in magnitude "
                             f"(products would overflow a float), got {m:.3g}")


def as_vector(x, n: int, name: str, *, default=None, limit: float = math.inf) -> np.ndarray:
    """``x`` as ``n`` finite real numbers (shape ``(n,)``; a scalar is accepted when n = 1).

    ``None`` or an empty list gives ``default`` when one is given (a parameter left unset),
    else ``ValueError(name: missing)``.  Everything else that is not n finite real numbers of
    magnitude at most ``limit`` is a ``ValueError`` naming ``name`` (see :func:`as_array`)."""
    if type(x) is np.ndarray and x.dtype == _F64 and x.shape == (n,):
        check_range(x, name, limit)
        return x
    if default is not None and (x is None or (isinstance(x, (list, tuple)) and len(x) == 0
                                              and n != 0)):
        return np.array(default, dtype=float).reshape(n)
    a = as_real_vector(x, n, name)
    check_range(a, name, limit)
    return a


def as_real_vector(x, n: int, name: str) -> np.ndarray:
    """:func:`as_vector` without the range check (the compiled kernels test the range), as a
    C-contiguous writeable float64 array: ``None`` or an empty list is ``ValueError(name:
    missing)``, a scalar is accepted when n = 1, anything else is :func:`as_real_array`'s."""
    if type(x) is np.ndarray and x.dtype == _F64 and x.shape == (n,) and x.flags.carray:
        return x
    if x is None or (isinstance(x, (list, tuple)) and len(x) == 0 and n != 0):
        raise ValueError(f"{name}: missing; expected {n} numbers")
    if isinstance(x, (str, bytes)):
        raise ValueError(f"{name}: expected {n} numbers, got {_short(x)}")
    if n == 1 and np.ndim(x) == 0:
        x = [x]
    return as_real_array(x, (n,), name)


def as_pose(g, name: str = "g") -> np.ndarray:
    """``g`` as a finite 4×4 rigid transform (rotation orthonormal to 1e-6 with det +1, last row
    ``[0, 0, 0, 1]``, translation at most :data:`MAX_MAGNITUDE` in magnitude, so that the
    energies and momenta computed at it stay finite).  Raises ``ValueError`` naming ``name``
    otherwise."""
    a = as_array(g, (4, 4), name)
    R = a[:3, :3]
    if (np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0.0
            or np.abs(a[3] - [0, 0, 0, 1]).max() > 1e-12):
        raise ValueError(f"{name}: not a rigid transform (rotation block not orthonormal with "
                         f"det +1, or last row not [0, 0, 0, 1])")
    p = np.abs(a[:3, 3]).max()
    if not p <= MAX_MAGNITUDE:
        raise ValueError(f"{name}: translation must not exceed {MAX_MAGNITUDE:g} in magnitude "
                         f"(products would overflow a float), got {p:.3g}")
    return a


def as_positive(x, name: str) -> float:
    """``x`` as a finite positive float (a step, a rate, a tolerance), else a ``ValueError``
    naming ``name``.  Booleans and strings are not numbers here."""
    if isinstance(x, (bool, str, bytes)):
        raise ValueError(f"{name}: expected a positive finite number, got {_short(x)}")
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name}: expected a positive finite number, got {_short(x)}") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name}: expected a positive finite number, got {_short(x)}")
    return v


def as_returned_vectors(out, names: tuple, n: int, what: str, t: float) -> list:
    """The n-vectors a user callable returned at time ``t`` (e.g. a prescribed motion's
    ``(q, qd, qdd)``), each checked by :func:`as_vector`; a wrong count, shape or value is a
    ``ValueError`` naming ``what``, the element and ``t``."""
    try:
        parts = tuple(out)
    except TypeError:
        parts = ()
    if len(parts) < len(names):
        raise ValueError(f"{what}: must return ({', '.join(names)}); got {_short(out)} "
                         f"at t={t:.9g}")
    return [as_vector(a, n, f"{what}: {nm} at t={t:.9g}") for nm, a in zip(names, parts)]


def overflow_error(inputs: dict, where: str = "") -> ValueError:
    """The error of a result that overflowed a float although every input was in range: it
    names the input (``inputs``: name -> array or None) with the largest entry."""
    big = [(float(np.max(np.abs(x))), name) for name, x in inputs.items()
           if x is not None and np.size(x)]
    if not big:
        return ValueError(f"{where}the result is not finite (a float overflow)")
    v, name = max(big)
    return ValueError(f"{where}{name}: the result is not finite (a float overflow) at this "
                      f"magnitude (largest entry {v:.3g})")


def _short(x, limit: int = 80) -> str:
    """``repr(x)`` on one line, cut to ``limit`` characters (error messages stay one short
    line)."""
    r = " ".join(repr(x).split())
    return r if len(r) <= limit else r[:limit - 3] + "..."
