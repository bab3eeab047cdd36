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

The public API calls ``*_objects`` (``model.fast``: ``*_into``), which take every argument as
the Python object itself and check its kind in compiled code (:mod:`.objects`: no dispatcher,
no array converted; where the arrays' header cannot be read that way, the API calls
``*_checked`` through numba's dispatcher instead, closed to new compilations after its
warm-up, whose type check in C makes an argument of another kind a ``TypeError``).  An
argument of another kind (a list, float32, booleans, a non-contiguous array) is status
:data:`WRONG_KIND`, an array of the wrong length :data:`WRONG_SHAPE`; on either the API runs
its full validation (``core.validation``), which names the culprit
(:mod:`vm_dynamics.dynamics.fast.calls`).
"""
from __future__ import annotations

import numpy as np

from ....core.validation import MAX_MAGNITUDE
from ..records import ModelConstants
from .aba import aba_core
from .algebra import check_pose, within
from .checked import OUT_OF_RANGE, state_in_range
from .jit import OPT, njit
from .kinematics import add_external, gravity_local, kinematics, workspace_size, workspace_views
from .objects import borrow
from .rnea import rnea
from .views import flat_view

__all__ = ["WRONG_SHAPE", "WRONG_KIND", "pack_constants", "forward_dynamics",
           "forward_dynamics_checked", "inverse_dynamics", "inverse_dynamics_checked",
           "forward_dynamics_objects", "inverse_dynamics_objects", "forward_dynamics_into",
           "inverse_dynamics_into"]


#: Status of an argument of the wrong length (the checked entry points; codes 0-4 as in
#: :mod:`.checked`).
WRONG_SHAPE = 5

#: Status of an argument that is not a float64 C-contiguous aligned array (writeable for the
#: output) of the right dimensions (the ``*_objects`` entry points, :mod:`.objects`).
WRONG_KIND = 6


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
    if not (state_in_range(g, V, q, qd) and within(tau, MAX_MAGNITUDE)):
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
    if not (state_in_range(g, V, q, qd) and within(Vdot, MAX_MAGNITUDE)
            and within(qdd, MAX_MAGNITUDE)):
        return OUT_OF_RANGE
    return _rnea(P, g, V, q, qd, Vdot, qdd, out)


# ------------------------------------------------------------------ arguments as objects
# The entry points below take every argument as the Python object itself (.objects.pyref:
# nothing converted on the way in) and check its kind in compiled code (.objects.borrow);
# they are called through their compiled entry point, bound to these argument types by the
# caller (FastModel, model.fast), and only when .objects.LAYOUT_OK.  P is the model's packed
# array (pack_constants): the other arguments must be arrays of its type.


@njit(inline="always", **OPT)
def _borrowed(P, g, V, q, qd, x, y, out):
    """``(ok, P, g, V, q, qd, x, y, out)``: the eight arguments of a forward or inverse
    dynamics entry point below (``x, y``: ``tau, bw`` or ``Vdot, qdd``) as borrowed arrays
    (:func:`.objects.borrow`), ``ok`` False if one is not a float64 C-contiguous aligned
    array of its dimensions (``g`` two, the others one; ``out`` writeable).  Inlined: the
    same compiled code as the eight borrows written out."""
    k0, Pa = borrow(P, P, 1, False)
    k1, ga = borrow(g, P, 2, False)
    k2, Va = borrow(V, P, 1, False)
    k3, qa = borrow(q, P, 1, False)
    k4, qda = borrow(qd, P, 1, False)
    k5, xa = borrow(x, P, 1, False)
    k6, ya = borrow(y, P, 1, False)
    k7, oa = borrow(out, P, 1, True)
    return (k0 and k1 and k2 and k3 and k4 and k5 and k6 and k7), Pa, ga, Va, qa, qda, xa, ya, oa


@njit(inline="always", **OPT)
def _raise_status(st, name):
    """Raise the error of the status ``st`` of the ``*_into`` entry point ``name`` (none for
    0): a ``TypeError`` for :data:`WRONG_KIND`, a ``ValueError`` for the others (the
    kernels' codes of :mod:`.checked`)."""
    if st == WRONG_KIND:
        raise TypeError(name + ": every argument must be a float64 C-contiguous aligned "
                        "numpy array (out writeable)")
    if st == WRONG_SHAPE:
        raise ValueError(name + ": an argument has the wrong length")
    if st == 1:
        raise ValueError(name + ": g: not a rigid transform")
    if st == 2:
        raise ValueError(name + ": non-finite result")
    if st:
        raise ValueError(name + ": q: non-positive articulated inertia pivot (mass matrix not "
                         "positive definite)")


@njit(**OPT)
def forward_dynamics_objects(P, g, V, q, qd, tau, bw, out):
    """:func:`forward_dynamics_checked` of objects (``bw`` an array: zeros for none);
    :data:`WRONG_KIND` if one is not a float64 C-contiguous aligned array of the right
    dimensions (``out`` writeable)."""
    ok, Pa, ga, Va, qa, qda, ta, bwa, oa = _borrowed(P, g, V, q, qd, tau, bw, out)
    if not ok:
        return WRONG_KIND
    return forward_dynamics_checked(Pa, ga, Va, qa, qda, ta, bwa, oa)


@njit(**OPT)
def inverse_dynamics_objects(P, g, V, q, qd, Vdot, qdd, out):
    """:func:`inverse_dynamics_checked` of objects; :data:`WRONG_KIND` as
    :func:`forward_dynamics_objects`."""
    ok, Pa, ga, Va, qa, qda, Vda, qdda, oa = _borrowed(P, g, V, q, qd, Vdot, qdd, out)
    if not ok:
        return WRONG_KIND
    return inverse_dynamics_checked(Pa, ga, Va, qa, qda, Vda, qdda, oa)


@njit(**OPT)
def forward_dynamics_into(P, g, V, q, qd, tau, bw, out):
    """:func:`forward_dynamics` of objects (``bw`` an array: zeros for none) without the
    range checks (``model.fast``), returning ``out``; a ``TypeError`` for an argument of
    another kind (as :func:`forward_dynamics_objects`), a ``ValueError`` for one of the wrong
    length or a kernel status."""
    ok, Pa, ga, Va, qa, qda, ta, bwa, oa = _borrowed(P, g, V, q, qd, tau, bw, out)
    st = WRONG_KIND
    if ok:
        n, b = int(Pa[0]), int(Pa[1])
        if not (ga.shape[0] == 4 and ga.shape[1] == 4 and Va.shape[0] == b and qa.shape[0] == n
                and qda.shape[0] == n and ta.shape[0] == n and bwa.shape[0] == b
                and oa.shape[0] == b + n):
            st = WRONG_SHAPE
        else:
            st = forward_dynamics(Pa, ga, Va, qa, qda, ta, bwa, oa)
    _raise_status(st, "model.fast.forward_dynamics")
    return out


@njit(**OPT)
def inverse_dynamics_into(P, g, V, q, qd, Vdot, qdd, out):
    """:func:`inverse_dynamics` of objects without the range checks (``model.fast``),
    returning ``out``; errors as :func:`forward_dynamics_into` (the inverse has no pivot)."""
    ok, Pa, ga, Va, qa, qda, Vda, qdda, oa = _borrowed(P, g, V, q, qd, Vdot, qdd, out)
    st = WRONG_KIND
    if ok:
        n, b = int(Pa[0]), int(Pa[1])
        if not (ga.shape[0] == 4 and ga.shape[1] == 4 and Va.shape[0] == b and qa.shape[0] == n
                and qda.shape[0] == n and Vda.shape[0] == b and qdda.shape[0] == n
                and oa.shape[0] == b + n):
            st = WRONG_SHAPE
        else:
            st = inverse_dynamics(Pa, ga, Va, qa, qda, Vda, qdda, oa)
    _raise_status(st, "model.fast.inverse_dynamics")
    return out
