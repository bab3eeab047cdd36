"""Whether the step's buffer still holds the first stage of the next step.

A step's last act (:func:`vm_dynamics.sim.kernels._stage_finish`) computes the kinematics,
momentum terms and velocity at its end state, which are exactly what the next step's first
stage computes again (its state is that end state).  ``sc.last`` (:class:`~.records.Scratch`)
records which state the workspace holds them for; :func:`keep` sets it after a step or rollout,
:func:`work` (the views for any other use of the buffer) clears it, and :func:`resumable` tells
whether a step from ``x`` can start from them (the same numbers, bit for bit: the state, the
reference frame and the formulation compare equal, no prescribed motion).
"""
from __future__ import annotations

from ..dynamics.fast.kernels.jit import OPT, njit
from .borrow import borrowed
from .buffer import buffer_views

__all__ = ["views", "work", "resumable", "keep"]


@njit(**OPT)
def views(C, buf):
    """The :class:`~.records.Work` views of the step's buffer ``buf``."""
    return buffer_views(borrowed(buf), C.axes.shape[0], C.xi.shape[0])


@njit(**OPT)
def work(C, buf):
    """The views of ``buf`` for a call that changes the workspace: the first stage it held
    (``sc.last``) is no longer there."""
    wk = views(C, buf)
    last = wk.sc.last
    last[last.shape[0] - 1] = 0.0
    return wk


@njit(inline="always", **OPT)
def _same(last, o, a):
    """``a`` equals ``last[o:o + len(a)]``; and the offset after it."""
    for r in range(a.shape[0]):
        if last[o + r] != a[r]:
            return False, o + a.shape[0]
    return True, o + a.shape[0]


@njit(inline="always", **OPT)
def _put(last, o, a):
    """``last[o:o + len(a)] = a``; the offset after it."""
    for r in range(a.shape[0]):
        last[o + r] = a[r]
    return o + a.shape[0]


@njit(**OPT)
def resumable(spec, x, last):
    """True if the workspace holds the first stage of the step from ``x`` (``sc.last``: the
    state a step or rollout ended at, nothing has used the buffer since, the same reference
    frame and formulation, no prescribed motion)."""
    f = last.shape[0] - 1
    if spec.presc or last[f] != 1.0 or last[f - 1] != spec.form:
        return False
    for r in range(4):
        for c in range(4):
            if last[4 * r + c] != x.g[r, c] or last[16 + 4 * r + c] != spec.gri[r, c]:
                return False
    ok, o = _same(last, 32, x.m)
    if ok:
        ok, o = _same(last, o, x.q)
    if ok:
        ok, o = _same(last, o, x.qd)
    if ok:
        ok, o = _same(last, o, x.V)
    return ok


@njit(**OPT)
def keep(spec, y, last):
    """Record in ``sc.last`` that the workspace holds the first stage of the step from ``y``
    (just written by :func:`vm_dynamics.sim.kernels._stage_finish`)."""
    for r in range(4):
        for c in range(4):
            last[4 * r + c] = y.g[r, c]
            last[16 + 4 * r + c] = spec.gri[r, c]
    o = _put(last, 32, y.m)
    o = _put(last, o, y.q)
    o = _put(last, o, y.qd)
    o = _put(last, o, y.V)
    last[o] = spec.form
    last[o + 1] = 1.0
