"""Compiled geometry shared by the force elements' kernels."""
from __future__ import annotations

from ..dynamics.fast.kernels.jit import OPT, njit

__all__ = ["body_point"]


@njit(**OPT)
def body_point(Rw, Pw, k, c):
    """The point of body ``k`` whose vehicle-frame coordinates at the home configuration are
    ``c``, in vehicle axes at the bodies' poses ``Rw, Pw`` (``G_k c``): ``(x0, x1, x2)``.
    Every element that acts at a point of a body (a spring's attachment, a link's centre of
    buoyancy, a centre of mass) places it with this."""
    x0 = Rw[k, 0, 0] * c[0] + Rw[k, 0, 1] * c[1] + Rw[k, 0, 2] * c[2] + Pw[k, 0]
    x1 = Rw[k, 1, 0] * c[0] + Rw[k, 1, 1] * c[1] + Rw[k, 1, 2] * c[2] + Pw[k, 1]
    x2 = Rw[k, 2, 0] * c[0] + Rw[k, 2, 1] * c[1] + Rw[k, 2, 2] * c[2] + Pw[k, 2]
    return x0, x1, x2
