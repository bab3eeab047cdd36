"""The simulation state shared by the engine, the controllers and the nodes."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["State"]


class State(NamedTuple):
    """Immutable snapshot ``(t, g, V, q, qd)`` given to input callables and callbacks."""

    t: float
    g: np.ndarray
    V: np.ndarray
    q: np.ndarray
    qd: np.ndarray
