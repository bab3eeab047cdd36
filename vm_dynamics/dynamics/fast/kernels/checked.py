"""The kernels as the public API calls them: the inputs' range first, then the algorithm.

Each entry point tests what :mod:`vm_dynamics.core.validation` requires of the public API's
inputs — ``g`` a rigid transform with a translation of at most ``MAX_MAGNITUDE``, joint
coordinates of at most ``MAX_COORDINATE``, every velocity, acceleration, effort and wrench of at
most ``MAX_MAGNITUDE`` in magnitude, nothing NaN — in compiled loops (tens of nanoseconds,
where the same scan in Python costs microseconds per array), and returns status
:data:`OUT_OF_RANGE` without computing if one fails; the caller then names the argument with
``core.validation`` (the reference path's message).  The simulation engine calls the
unchecked kernels: its states are its own.
"""
from __future__ import annotations

from ....core.validation import MAX_COORDINATE, MAX_MAGNITUDE
from . import aba, crba, kinematics, rnea
from .algebra import check_pose, within
from .jit import OPT, njit

__all__ = ["OUT_OF_RANGE", "pose_in_range", "state_in_range", "states_in_range", "forward_dynamics", "inverse_dynamics",
           "free_floating_inverse_dynamics", "mass_matrix", "frame_pose"]

#: Status of an input out of the accepted range (the kernels' other codes: 0 ok, 1 ``g`` not a
#: rigid transform, 2 non-finite result, 3 non-positive articulated pivot).
OUT_OF_RANGE = 4


@njit(**OPT)
def pose_in_range(g):
    """True if the translation of the pose g has entries of magnitude at most MAX_MAGNITUDE
    (its rotation block is bounded by :func:`.algebra.check_pose`)."""
    return abs(g[0, 3]) <= MAX_MAGNITUDE and abs(g[1, 3]) <= MAX_MAGNITUDE \
        and abs(g[2, 3]) <= MAX_MAGNITUDE


@njit(inline="always", **OPT)
def state_in_range(g, V, q, qd):
    """True if the state ``(g, V, q, qd)`` is in the public API's range: ``g``'s translation
    (:func:`pose_in_range`), ``V`` and ``qd`` of magnitude at most MAX_MAGNITUDE, ``q`` at most
    MAX_COORDINATE, nothing NaN (every entry point's test before its own inputs')."""
    return pose_in_range(g) and within(V, MAX_MAGNITUDE) and within(q, MAX_COORDINATE) \
        and within(qd, MAX_MAGNITUDE)


@njit(inline="always", **OPT)
def _inputs_status(g, V, q, qd, x, y):
    """0 if ``g`` is a rigid transform and the state and the two inputs ``x``, ``y`` (of
    magnitude at most MAX_MAGNITUDE) are in range; else 1 (``g``) or :data:`OUT_OF_RANGE`."""
    if not check_pose(g):
        return 1
    if not (state_in_range(g, V, q, qd) and within(x, MAX_MAGNITUDE)
            and within(y, MAX_MAGNITUDE)):
        return OUT_OF_RANGE
    return 0


@njit(**OPT)
def forward_dynamics(C, g, V, q, qd, tau, bw, fw_body, fw, out):
    """:func:`.aba.forward_dynamics` of inputs in range (else :data:`OUT_OF_RANGE`)."""
    st = _inputs_status(g, V, q, qd, tau, bw)
    if st:
        return st
    return aba.forward_dynamics(C, g, V, q, qd, tau, bw, fw_body, fw, out)


@njit(**OPT)
def states_in_range(X, status):
    """The batched forward dynamics' inputs ``X``
    (:class:`~vm_dynamics.dynamics.fast.records.ForwardInputs`) tested state by state:
    ``status[i]`` 1 if ``g[i]`` is not a rigid transform, :data:`OUT_OF_RANGE` if an input of
    state i is out of range (0 otherwise); True if every state passed."""
    g, V, q, qd, tau, bw = X.g, X.V, X.q, X.qd, X.tau, X.bw
    ok = True
    for i in range(q.shape[0]):
        if not check_pose(g[i]):
            status[i] = 1
            ok = False
        elif not (state_in_range(g[i], V[i], q[i], qd[i]) and within(tau[i], MAX_MAGNITUDE)
                  and within(bw[i], MAX_MAGNITUDE)):
            status[i] = OUT_OF_RANGE
            ok = False
    return ok


@njit(**OPT)
def inverse_dynamics(C, g, V, q, qd, Vdot, qdd, fw_body, fw, out):
    """:func:`.rnea.inverse_dynamics` of inputs in range (else :data:`OUT_OF_RANGE`)."""
    st = _inputs_status(g, V, q, qd, Vdot, qdd)
    if st:
        return st
    return rnea.inverse_dynamics(C, g, V, q, qd, Vdot, qdd, fw_body, fw, out)


@njit(**OPT)
def free_floating_inverse_dynamics(C, g, V, q, qd, qdd, bw, fw_body, fw, out):
    """:func:`.rnea.free_floating_inverse_dynamics` of inputs in range (else
    :data:`OUT_OF_RANGE`)."""
    st = _inputs_status(g, V, q, qd, qdd, bw)
    if st:
        return st
    return rnea.free_floating_inverse_dynamics(C, g, V, q, qd, qdd, bw, fw_body, fw, out)


@njit(**OPT)
def mass_matrix(C, q, M):
    """:func:`.crba.mass_matrix` at q in range (else :data:`OUT_OF_RANGE`)."""
    if not within(q, MAX_COORDINATE):
        return OUT_OF_RANGE
    return crba.mass_matrix(C, q, M)


@njit(**OPT)
def frame_pose(C, q, body, home, out):
    """:func:`.kinematics.frame_pose` at q in range (else :data:`OUT_OF_RANGE`)."""
    if not within(q, MAX_COORDINATE):
        return OUT_OF_RANGE
    return kinematics.frame_pose(C, q, body, home, out)
