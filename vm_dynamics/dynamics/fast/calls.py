"""Single forward / inverse dynamics calls from Python: the closures that ``FastModel`` (the
public, validated call) and ``model.fast`` (the unchecked one) give each model.

Two ways into compiled code, the same kernels behind both (:mod:`.kernels.packed`):

* **arguments as objects** (where :data:`.kernels.objects.LAYOUT_OK`): the entry points
  ``*_objects`` and ``*_into`` take every argument as the Python object itself and check in
  compiled code that it is a float64 C-contiguous array of the right dimensions
  (:func:`.kernels.objects.borrow`); no dispatcher, nothing converted.  On the floating UR5
  an inverse dynamics entry point costs ~1.05 µs this way against ~1.53 µs through the
  dispatcher (its type check ~0.25, the arrays' conversion ~0.25);
* **the dispatcher** (elsewhere): ``*_checked``, closed to new compilations after the
  warm-up, so that an argument of another type is a ``TypeError`` in numba's C type check.

Either way an argument of another kind, shape or range is handed to the full validation
(the ``FastModel`` methods), which names it; an int64 array is never read as float64.
"""
from __future__ import annotations

import numpy as np

from .backend import compile_notice

__all__ = ["object_entries", "warm_up", "public_calls", "unchecked_calls"]

_ENTRIES: dict = {}


def object_entries(pk):
    """``(forward_dynamics_objects, inverse_dynamics_objects, forward_dynamics_into,
    inverse_dynamics_into)`` of :mod:`.kernels.packed` (``pk``) bound to objects (compiled, or
    loaded from the disk cache, once per process), or None where arrays cannot be read that
    way (:data:`.kernels.objects.LAYOUT_OK` False)."""
    from .kernels import objects
    if not objects.LAYOUT_OK:
        return None
    hit = _ENTRIES.get(pk)
    if hit is None:
        from numba import types as nt
        sig = (objects.pyref,) * 8
        kernels = [(pk.forward_dynamics_objects, nt.int64), (pk.inverse_dynamics_objects, nt.int64),
                   (pk.forward_dynamics_into, objects.pyref), (pk.inverse_dynamics_into, objects.pyref)]
        with compile_notice(*(k for k, _ in kernels)):
            for kernel, ret in kernels:
                kernel.compile(ret(*sig))
        hit = _ENTRIES[pk] = tuple(k.overloads[sig].entry_point for k, _ in kernels)
    return hit


def warm_up(pk, P, n, b):
    """Compile (or load) the entry points the calls of a model packed in ``P`` use: those of
    :func:`object_entries`, else the dispatcher's for the argument types the API passes —
    float64 C-contiguous writeable arrays, the vehicle wrench an array or None — closed then
    to new compilations (module docstring)."""
    if object_entries(pk) is not None:
        return
    z, zb, o, g = np.zeros(n), np.zeros(b), np.empty(b + n), np.eye(4)
    with compile_notice(pk.forward_dynamics, pk.forward_dynamics_checked,
                        pk.inverse_dynamics, pk.inverse_dynamics_checked):
        for bw in (None, zb):
            pk.forward_dynamics(P, g, zb, z, z, z, bw, o)
            pk.forward_dynamics_checked(P, g, zb, z, z, z, bw, o)
        pk.inverse_dynamics(P, g, zb, z, z, zb, z, o)
        pk.inverse_dynamics_checked(P, g, zb, z, z, zb, z, o)
    pk.forward_dynamics_checked.disable_compile()
    pk.inverse_dynamics_checked.disable_compile()


def public_calls(pk, P, b, n, full_fd, full_id):
    """``(forward_dynamics, inverse_dynamics, common)`` of the model packed in ``P``: closures
    that try the common call first (arrays of the model's shapes, in range, no frame
    wrenches; fresh output arrays) and hand anything else to ``full_fd`` / ``full_id`` (the
    full validation), and what they close over, ``common = (fdc, idc, P, zb, b, b + n,
    np.empty, full_fd, full_id)``, for a caller that runs the same lines inline
    (:meth:`vm_dynamics.Model.forward_dynamics`).  ``fdc``, ``idc``: the entry points of
    :func:`object_entries`, else the closed dispatchers; both take the vehicle wrench as an
    array (``zb``, zeros, for none).  The closures' cells spare the attribute look-ups, a
    visible part of a call of a few microseconds."""
    nout, empty, zb = b + n, np.empty, np.zeros(b)
    entries = object_entries(pk)
    if entries is not None:
        fdc, idc = entries[:2]
    else:
        fdc, idc = pk.forward_dynamics_checked, pk.inverse_dynamics_checked

    def forward_dynamics(g, V, q, qd, tau, base_wrench=None, frame_wrenches=None):
        if not frame_wrenches:
            out = empty(nout)
            try:
                st = fdc(P, g, V, q, qd, tau, zb if base_wrench is None else base_wrench, out)
            except (TypeError, ValueError):
                st = -1
            if not st:
                return out[:b], out[b:]
        return full_fd(g, V, q, qd, tau, base_wrench, frame_wrenches)

    def inverse_dynamics(g, V, q, qd, Vdot, qdd, frame_wrenches=None):
        if not frame_wrenches:
            out = empty(nout)
            try:
                st = idc(P, g, V, q, qd, Vdot, qdd, out)
            except (TypeError, ValueError):
                st = -1
            if not st:
                return out[:b], out[b:]
        return full_id(g, V, q, qd, Vdot, qdd, frame_wrenches)

    forward_dynamics.__doc__, inverse_dynamics.__doc__ = full_fd.__doc__, full_id.__doc__
    return forward_dynamics, inverse_dynamics, (fdc, idc, P, zb, b, nout, empty, full_fd,
                                                full_id)


def unchecked_calls(pk, P, b):
    """``(forward_dynamics, inverse_dynamics)`` of ``model.fast``
    (:class:`~vm_dynamics.model.unchecked.UncheckedDynamics`) for the model packed in ``P``,
    or None (no :func:`object_entries`): closures ``forward_dynamics(g, V, q, qd, tau, out,
    base_wrench=None)`` and ``inverse_dynamics(g, V, q, qd, Vdot, qdd, out)`` returning the
    compiled entry point's result.  Both write and return ``out``; an argument of another kind
    is a ``TypeError``, of the wrong length or a kernel status a ``ValueError`` (raised in
    compiled code); the range is not checked.  (The entry point bound to ``P`` as a method
    would spare nothing measurable on CPython 3.11 — 1.05-1.06 µs either way on the UR5 — and
    would refuse keyword arguments.)"""
    entries = object_entries(pk)
    if entries is None:
        return None
    fdi, idi = entries[2:]
    zb = np.zeros(b)

    def forward_dynamics(g, V, q, qd, tau, out, base_wrench=None):
        return fdi(P, g, V, q, qd, tau, zb if base_wrench is None else base_wrench, out)

    def inverse_dynamics(g, V, q, qd, Vdot, qdd, out):
        return idi(P, g, V, q, qd, Vdot, qdd, out)

    return forward_dynamics, inverse_dynamics
