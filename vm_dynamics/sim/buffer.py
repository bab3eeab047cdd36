"""The named views of the compiled step's one scratch buffer (:class:`~.records.Work`)."""
from __future__ import annotations

from ..dynamics.fast.kernels.jit import OPT, njit
from ..dynamics.fast.records import Workspace
from .records import MAX_STAGES, Scratch, Work

__all__ = ["buffer_views"]


@njit(**OPT)
def _take(buf, o, size):
    return buf[o:o + size], o + size


@njit(**OPT)
def _workspace_views(buf, n):
    o = 0
    a, o = _take(buf, o, (n + 1) * 9)
    Rw = a.reshape((n + 1, 3, 3))
    a, o = _take(buf, o, (n + 1) * 3)
    Pw = a.reshape((n + 1, 3))
    a, o = _take(buf, o, n * 6)
    S = a.reshape((n, 6))
    a, o = _take(buf, o, (n + 1) * 36)
    IA = a.reshape((n + 1, 6, 6))
    a, o = _take(buf, o, (n + 1) * 6)
    vel = a.reshape((n + 1, 6))
    a, o = _take(buf, o, n * 6)
    cacc = a.reshape((n, 6))
    a, o = _take(buf, o, (n + 1) * 6)
    pA = a.reshape((n + 1, 6))
    a, o = _take(buf, o, n * 6)
    U = a.reshape((n, 6))
    a, o = _take(buf, o, n * 2)
    aux = a.reshape((n, 2))
    a, o = _take(buf, o, (n + 1) * 6)
    acc = a.reshape((n + 1, 6))
    a, o = _take(buf, o, 36)
    K = a.reshape((6, 6))
    rhs, o = _take(buf, o, 6)
    return Workspace(Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs), o


@njit(**OPT)
def buffer_views(buf, b, n):
    """The :class:`Work` views of ``buf`` (length :func:`buffer_size`) for ``b`` vehicle
    freedoms and ``n`` tree joints."""
    S = MAX_STAGES
    ws, o = _workspace_views(buf, n)
    a, o = _take(buf, o, (n + 1) * 6)
    ext = a.reshape((n + 1, 6))
    a, o = _take(buf, o, (n + 1) * 6)
    cons = a.reshape((n + 1, 6))
    a, o = _take(buf, o, 36)
    Ic0 = a.reshape((6, 6))
    hm, o = _take(buf, o, 6)
    a, o = _take(buf, o, 16)
    ex = a.reshape((4, 4))
    a, o = _take(buf, o, 16)
    pose = a.reshape((4, 4))
    a, o = _take(buf, o, 16)
    rel = a.reshape((4, 4))
    gloc, o = _take(buf, o, 3)
    six, o = _take(buf, o, 6)
    six2, o = _take(buf, o, 6)
    force, o = _take(buf, o, 6)
    theta, o = _take(buf, o, 6)
    a, o = _take(buf, o, S * 6)
    KT = a.reshape((S, 6))
    a, o = _take(buf, o, S * b)
    Km = a.reshape((S, b))
    a, o = _take(buf, o, S * n)
    Kq = a.reshape((S, n))
    a, o = _take(buf, o, S * n)
    Kqd = a.reshape((S, n))
    a, o = _take(buf, o, S * 2)
    KW = a.reshape((S, 2))
    neg_theta, o = _take(buf, o, 6)
    ms, o = _take(buf, o, b)
    qs, o = _take(buf, o, n)
    qds, o = _take(buf, o, n)
    Vs, o = _take(buf, o, b)
    acc_out, o = _take(buf, o, b + n)
    P, o = _take(buf, o, b)
    a, o = _take(buf, o, 16)
    rel_k = a.reshape((4, 4))
    last = buf[o:]                        # the rest (records.last_size)
    sc = Scratch(ext, cons, Ic0, hm, ex, pose, rel, gloc, six, six2, force, theta, KT, Km, Kq,
                 Kqd, KW, neg_theta, ms, qs, qds, Vs, acc_out, P, rel_k, last)
    return Work(ws, sc)
