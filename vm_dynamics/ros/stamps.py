"""Exact time conversions between seconds, integer nanoseconds and the fields of
``builtin_interfaces/Time`` (``sec`` int32, ``0 <= nanosec < 10**9``); see the conventions in
:mod:`vm_dynamics.ros.messages`.  No message library is needed here."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["NS_PER_S", "INT32_MIN", "INT32_MAX", "stamp_to_ns", "time_msg_to_ns",
           "time_msg_to_sec"]

NS_PER_S = 10**9
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def stamp_to_ns(stamp_s: Any) -> int:
    """Exact conversion of a time in seconds to integer nanoseconds.

    ``stamp_s`` may be a Python/numpy int or float, a ``Fraction`` or ``Decimal``
    (anything ``Fraction()`` accepts exactly).  The binary value of a float is
    converted exactly and rounded once to the nearest nanosecond, so
    ``stamp_to_ns(0.1) == 100_000_000`` and ``stamp_to_ns(1e9 + 0.5) == 1e9 s + 5e8 ns``
    with no intermediate float product.
    """
    if isinstance(stamp_s, (bool, np.bool_)):
        raise TypeError(f"time stamp must be a number of seconds, got bool {stamp_s!r}")
    if isinstance(stamp_s, np.generic):
        stamp_s = stamp_s.item()
    if isinstance(stamp_s, float):
        if not math.isfinite(stamp_s):
            raise ValueError(f"time stamp must be finite, got {stamp_s!r}")
        # exact in integers: num/den with den a power of two; round half to even, as
        # round(Fraction) does (the Fraction path below is ~10x slower)
        num, den = stamp_s.as_integer_ratio()
        ns, rem = divmod(num * NS_PER_S, den)
        if 2 * rem > den or (2 * rem == den and ns & 1):
            ns += 1
        return ns
    try:
        frac = Fraction(stamp_s)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"time stamp must be a finite number of seconds, got {stamp_s!r}") from exc
    return round(frac * NS_PER_S)


def time_msg_to_ns(msg: Any) -> int:
    """Integer nanoseconds of a ``builtin_interfaces/Time`` message (validated)."""
    sec, nanosec = int(msg.sec), int(msg.nanosec)
    if not 0 <= nanosec < NS_PER_S:
        raise ValueError(f"builtin_interfaces/Time: nanosec must be in [0, 1e9), got {nanosec}")
    if not INT32_MIN <= sec <= INT32_MAX:
        raise ValueError(f"builtin_interfaces/Time: sec must fit int32, got {sec}")
    return sec * NS_PER_S + nanosec


def time_msg_to_sec(msg: Any) -> float:
    """Seconds (float, nearest double) of a ``builtin_interfaces/Time`` message."""
    return float(Fraction(time_msg_to_ns(msg), NS_PER_S))
