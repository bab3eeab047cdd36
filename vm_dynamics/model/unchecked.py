"""The unchecked fast path for inner loops: ``model.fast`` (:class:`UncheckedDynamics`).

::

    fast = model.fast                  # once, outside the loop
    out = fast.output()                # [V̇; q̈] (b + n), reused by every call
    for ...:
        fast.forward_dynamics(g, V, q, qd, tau, out)     # writes out, returns it
        Vdot, qdd = out[:model.b], out[model.b:]

:meth:`Model.forward_dynamics` / :meth:`Model.inverse_dynamics` check every argument (kind,
shape, range: a bad one is a ``ValueError`` naming it) and return new arrays.  In a loop whose
arrays the caller owns — a controller, an optimiser, a user's integrator — those checks cost
more than the algorithm's Python call itself, so this path skips them: the arguments go to the
compiled articulated-body (RNEA) kernel without the range checks and the Python around them,
and the result is written into ``out``.

**Contract:** ``g`` a 4×4 rigid transform, ``V``/``base_wrench``/``Vdot`` of length
``model.b``, ``q``, ``qd``, ``tau``, ``qdd`` of length ``model.n``, ``out`` of length
``model.b + model.n``, every one a C-contiguous ``float64`` numpy array (``np.ascontiguousarray(x,
dtype=float)``); the values finite and in the public API's range.  The range is not checked
(out-of-range values give whatever the kernel computes).  The arrays' kind and length are
checked in compiled code where the arrays can be handed over as objects
(:mod:`vm_dynamics.dynamics.fast.kernels.objects`, 64-bit CPython): another kind is a
``TypeError``, a wrong length a ``ValueError``; elsewhere they are not, and anything else is
undefined behaviour (wrong results, or a crash of the process for a wrong length).  Always
reported: a kernel status (``g`` not a rigid transform, a non-finite result, a non-positive
articulated pivot) is a ``ValueError``.

Same results as the public API, bit for bit (same kernels).  Models with mimic joints and
installations without numba run the public (checked) path and copy into ``out``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["UncheckedDynamics"]

_STATUS = {1: "g: not a rigid transform", 2: "non-finite result",
           3: "q: non-positive articulated inertia pivot (mass matrix not positive definite)"}


class UncheckedDynamics:
    """Forward and inverse dynamics of one model without argument checks (module docstring).

    Built by :attr:`Model.fast <vm_dynamics.Model.fast>` (once per model and gravity).  With
    numba (no mimic joints) the instance's ``forward_dynamics`` and ``inverse_dynamics`` are
    closures over the compiled entry points and the packed model, which shadow the methods
    below: one Python frame and no attribute look-up between the caller and compiled code
    (:func:`vm_dynamics.dynamics.fast.calls.unchecked_calls`; where arrays cannot be handed
    over as objects, closures over the dispatcher's entry points, :meth:`_bind`)."""

    def __init__(self, model):
        from ..dynamics.fast import bind_compiled, fast_model, numba_kernels, unchecked_calls
        self.model = model
        self.b, self.n = int(model.b), int(model.n)
        self.grav = model.gravity
        fm = fast_model(model)
        self._checked = fm
        kernels = numba_kernels()
        cp = getattr(model, "coupling", None)
        self.compiled = kernels is not None and (cp is None or cp.trivial)
        if not self.compiled:
            return
        # the model packed in one array (kernels.packed): where arrays can be handed to
        # compiled code as objects, the entry points that check their kind there
        # (dynamics.fast.calls.unchecked_calls); else the dispatcher's bound entry points
        P, pk = fm.packed_constants, kernels.packed
        calls = unchecked_calls(pk, P, self.b)
        if calls is not None:
            self.forward_dynamics, self.inverse_dynamics = calls
            return
        z, zb, g, o = np.zeros(self.n), np.zeros(self.b), np.eye(4), self.output()
        self._bind(P, bind_compiled(pk.forward_dynamics, (P, g, zb, z, z, z, None, o)),
                   bind_compiled(pk.forward_dynamics, (P, g, zb, z, z, z, zb, o)),
                   bind_compiled(pk.inverse_dynamics, (P, g, zb, z, z, zb, z, o)))

    def _bind(self, P, fd, fdw, inv):
        """Set the instance's ``forward_dynamics`` / ``inverse_dynamics`` to closures calling
        the entry points ``fd`` (no base wrench), ``fdw`` (with one) and ``inv`` with the
        packed model ``P``: the same contract as the methods they shadow."""
        def forward_dynamics(g, V, q, qd, tau, out, base_wrench=None):
            if base_wrench is None:
                st = fd(P, g, V, q, qd, tau, None, out)
            else:
                st = fdw(P, g, V, q, qd, tau, base_wrench, out)
            if st:
                _fail("forward_dynamics", st)
            return out

        def inverse_dynamics(g, V, q, qd, Vdot, qdd, out):
            st = inv(P, g, V, q, qd, Vdot, qdd, out)
            if st:
                _fail("inverse_dynamics", st)
            return out

        forward_dynamics.__doc__ = UncheckedDynamics.forward_dynamics.__doc__
        inverse_dynamics.__doc__ = UncheckedDynamics.inverse_dynamics.__doc__
        self.forward_dynamics, self.inverse_dynamics = forward_dynamics, inverse_dynamics

    def output(self) -> np.ndarray:
        """A new output array (``b + n``) for :meth:`forward_dynamics` / :meth:`inverse_dynamics`."""
        return np.empty(self.b + self.n)

    def forward_dynamics(self, g, V, q, qd, tau, out, base_wrench=None) -> np.ndarray:
        """``[V̇; q̈]`` into ``out`` (returned): the articulated-body algorithm, no argument
        checks (module docstring); ``base_wrench`` (b, vehicle frame) defaults to zero.
        (Without numba or with mimic joints; else the instance's closure, :meth:`_bind`.)"""
        Vd, qdd = self._checked.forward_dynamics(g, V, q, qd, tau, base_wrench)
        out[:self.b], out[self.b:] = Vd, qdd
        return out

    def inverse_dynamics(self, g, V, q, qd, Vdot, qdd, out) -> np.ndarray:
        """``[base wrench; τ]`` into ``out`` (returned): the recursive Newton–Euler algorithm,
        no argument checks (module docstring).  (Without numba or with mimic joints; else the
        instance's closure, :meth:`_bind`.)"""
        bw, tau = self._checked.inverse_dynamics(g, V, q, qd, Vdot, qdd)
        out[:self.b], out[self.b:] = bw, tau
        return out


def _fail(name, st):
    """The ``ValueError`` of a kernel's non-zero status ``st`` in ``model.fast.<name>``."""
    raise ValueError(f"model.fast.{name}: {_STATUS.get(st, f'status {st}')}")
