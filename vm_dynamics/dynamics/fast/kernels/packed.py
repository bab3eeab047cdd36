"""Entry points for one call from Python with as few arrays as possible crossing into compiled
code: the model packed in one flat float64 array ``P`` (:func:`pack_constants`), the workspace
in one allocation (:func:`.kinematics.workspace_views`).

Each array argument of a compiled entry point is unboxed at every call (a reference count, a
memory-info record, a few checks: about 0.1 µs each on a slow machine), and the model record
``C`` (:class:`~vm_dynamics.dynamics.fast.records.ModelConstants`) is nine of them.  Here the
model is one array and the state arrays are the caller's; inside, ``C`` is rebuilt from views
of ``P`` (no copy) and the same recursions run as in :mod:`.aba` and :mod:`.rnea`, so the
results are the same bit for bit.  ``P`` holds no workspace: every call allocates its own
(one array), so concurrent calls from several threads (the kernels release the GIL) are safe.

Layout of ``P``: ``[n, b, parent (n), jtype (n), axes (b), xi (n×6), inert ((n+1)×13),
rootx (6×6), grav (3), zeros (b)]``, the integers stored bit for bit as int64 (read back
with ``view``).  Models with mimic joints do not use these entry points (their recursions run
on the tree's coordinates, :class:`~vm_dynamics.dynamics.fast.FastModel`).

The ``*_checked`` entry points are what the public API calls through numba's dispatcher, whose
type check of the arguments runs in C: ``FastModel`` closes them to new compilations after
its warm-up, so an argument of another kind (a list, float32, booleans, a non-contiguous or
read-only array) is a ``TypeError``, and an array of the wrong length status
:data:`WRONG_SHAPE`; on either the API runs its full validation (``core.validation``), which
names the culprit.
"""
from __future__ import annotations

import numpy as np

from ....core.validation import MAX_COORDINATE, MAX_MAGNITUDE
from ..records import ModelConstants
from .aba import aba_core
from .algebra import check_pose, within
from .checked import OUT_OF_RANGE, pose_in_range
from .jit import OPT, njit
from .kinematics import add_external, gravity_local, kinematics, workspace_size, workspace_views
from .rnea import rnea
from .views import flat_view

__all__ = ["WRONG_SHAPE", "pack_constants", "forward_dynamics", "forward_dynamics_checked",
           "inverse_dynamics", "inverse_dynamics_checked"]


#: Status of an argument of the wrong length (the checked entry points; codes 0-4 as in
#: :mod:`.checked`).
WRONG_SHAPE = 5


def pack_constants(C: ModelConstants) -> np.ndarray:
    """The model record ``C`` (without mimic coupling) as one flat float64 array (module
    docstring)."""
    if C.coupling.size or C.masters.size:
        raise ValueError("pack_constants: models with mimic joints keep their record")
    n, b = C.parent.shape[0], C.axes.shape[0]
    ints = np.concatenate([C.parent, C.jtype, C.axes]).astype(np.int64)
    return np.concatenate([[float(n), float(b)], ints.view(np.float64), C.xi.ravel(),
                           C.inert.ravel(), C.rootx.ravel(), C.grav.ravel(), np.zeros(b)])


@njit(inline="always", **OPT)
def constants(P):
    """``(C, zeros(b))``: the model record of :func:`pack_constants`'s array, as views."""
    n, b = int(P[0]), int(P[1])
    i = 2
    parent = P[i:i + n].view(np.int64)
    jtype = P[i + n:i + 2 * n].view(np.int64)
    axes = P[i + 2 * n:i + 2 * n + b].view(np.int64)
    i += 2 * n + b
    xi = flat_view(P, i, (n, 6))
    i += 6 * n
    inert = flat_view(P, i, (n + 1, 13))
    i += 13 * (n + 1)
    rootx = flat_view(P, i, (6, 6))
    i += 36
    grav = P[i:i + 3]
    zb = P[i + 3:i + 3 + b]
    none = P[0:0]
    return ModelConstants(parent, jtype, xi, inert, rootx, axes, grav, flat_view(P, 0, (0, 0)),
                          none.view(np.int64)), zb


@njit(inline="always", **OPT)
def _aba(P, g, V, q, qd, tau, bw, out):
    """:func:`.aba.forward_dynamics` after its pose check, on one allocation."""
    C, _ = constants(P)
    n = q.shape[0]
    W = np.empty(workspace_size(n) + 6 * (n + 1) + 3)
    ws = workspace_views(W, n)
    i = workspace_size(n)
    ext = flat_view(W, i, (n + 1, 6))
    gloc = W[i + 6 * (n + 1):i + 6 * (n + 1) + 3]
    gravity_local(g, C.grav, gloc)
    kinematics(C, q, ws)
    ext[:, :] = 0.0
    none = P[0:0]
    add_external(C.axes, bw, none.view(np.int64), flat_view(P, 0, (0, 6)), ws.Rw, ws.Pw, ext, 1.0)
    return aba_core(C, gloc, V, qd, tau, ext, out, ws)


@njit(**OPT)
def forward_dynamics(P, g, V, q, qd, tau, bw, out):
    """:func:`.aba.forward_dynamics` without frame wrenches, the model packed in ``P``; a
    status code.  ``bw`` None is a zero vehicle wrench (one array fewer to unbox: the entry
    point bound for None is a separate compilation)."""
    if not check_pose(g):
        return 1
    if bw is None:
        return _aba(P, g, V, q, qd, tau, constants(P)[1], out)
    return _aba(P, g, V, q, qd, tau, bw, out)


@njit(**OPT)
def forward_dynamics_checked(P, g, V, q, qd, tau, bw, out):
    """:func:`forward_dynamics` of inputs of the model's shapes (else :data:`WRONG_SHAPE`)
    and in range (else :data:`~.checked.OUT_OF_RANGE`), as :func:`.checked.forward_dynamics`."""
    n, b = int(P[0]), int(P[1])
    if not (g.shape[0] == 4 and g.shape[1] == 4 and V.shape[0] == b and q.shape[0] == n
            and qd.shape[0] == n and tau.shape[0] == n and out.shape[0] == b + n):
        return WRONG_SHAPE
    if not check_pose(g):
        return 1
    if not (pose_in_range(g) and within(V, MAX_MAGNITUDE) and within(q, MAX_COORDINATE)
            and within(qd, MAX_MAGNITUDE) and within(tau, MAX_MAGNITUDE)):
        return OUT_OF_RANGE
    if bw is None:
        return _aba(P, g, V, q, qd, tau, constants(P)[1], out)
    if bw.shape[0] != b:
        return WRONG_SHAPE
    if not within(bw, MAX_MAGNITUDE):
        return OUT_OF_RANGE
    return _aba(P, g, V, q, qd, tau, bw, out)


@njit(inline="always", **OPT)
def _rnea(P, g, V, q, qd, Vdot, qdd, out):
    C, _ = constants(P)
    n = q.shape[0]
    ws = workspace_views(np.empty(workspace_size(n)), n)
    none = P[0:0]
    return rnea(C, g, V, q, qd, Vdot, qdd, none.view(np.int64), flat_view(P, 0, (0, 6)), out, ws)


@njit(**OPT)
def inverse_dynamics(P, g, V, q, qd, Vdot, qdd, out):
    """:func:`.rnea.inverse_dynamics` without frame wrenches, the model packed in ``P``."""
    if not check_pose(g):
        return 1
    return _rnea(P, g, V, q, qd, Vdot, qdd, out)


@njit(**OPT)
def inverse_dynamics_checked(P, g, V, q, qd, Vdot, qdd, out):
    """:func:`inverse_dynamics` of inputs in range, as :func:`.checked.inverse_dynamics`."""
    n, b = int(P[0]), int(P[1])
    if not (g.shape[0] == 4 and g.shape[1] == 4 and V.shape[0] == b and q.shape[0] == n
            and qd.shape[0] == n and Vdot.shape[0] == b and qdd.shape[0] == n
            and out.shape[0] == b + n):
        return WRONG_SHAPE
    if not check_pose(g):
        return 1
    if not (pose_in_range(g) and within(V, MAX_MAGNITUDE) and within(q, MAX_COORDINATE)
            and within(qd, MAX_MAGNITUDE) and within(Vdot, MAX_MAGNITUDE)
            and within(qdd, MAX_MAGNITUDE)):
        return OUT_OF_RANGE
    return _rnea(P, g, V, q, qd, Vdot, qdd, out)
