"""What a controller hands the engine: :class:`ControllerInputs`.

``controller.inputs(reference)`` returns one; it unpacks as ``tau_fn, base_wrench_fn``
(:class:`InputChannel`, callables ``(t, state) -> array`` for :func:`vm_dynamics.sim.simulate`),
and it knows the controller's compiled law, if any (:meth:`ControllerInputs.compiled_law`).
``simulate`` given both channels of one :class:`ControllerInputs` asks it for that law and, when
the engine can run it, evaluates it inside the compiled step instead of calling the channels.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["ControllerInputs", "InputChannel", "compiled_law_of"]


class ControllerInputs:
    """The inputs of a controller for one reference: ``compute(t, state) -> (tau,
    base_wrench)`` (evaluated once per distinct ``(t, state)``, shared by both channels) and
    ``law()``, returning its :class:`~vm_dynamics.control.compiled.CompiledLaw` or None."""

    def __init__(self, compute: Callable, law: Callable | None = None):
        self._compute = compute
        self._law = law
        self._key = None
        self._state = None
        self._out = None
        #: the joint-effort channel, ``(t, state) -> tau``
        self.tau = InputChannel(self, 0)
        #: the vehicle-wrench channel, ``(t, state) -> base_wrench``
        self.base_wrench = InputChannel(self, 1)

    def __iter__(self):
        return iter((self.tau, self.base_wrench))

    def __call__(self, t, state):
        """``(tau, base_wrench)`` at ``(t, state)``; the same state object (simulate passes one
        per stage to both channels) or equal values reuse the last evaluation."""
        if state is not self._state or self._key is None or float(t) != self._key[0]:
            key = (float(t),) + tuple(np.asarray(getattr(state, a), dtype=float).tobytes()
                                      for a in ("g", "V", "q", "qd"))
            if key != self._key:
                self._out = self._compute(t, state)
                self._key = key
            self._state = state
        return self._out

    def compiled_law(self):
        """The controller's compiled law now (None if it has none)."""
        return None if self._law is None else self._law()


class InputChannel:
    """One output of a :class:`ControllerInputs` as a callable ``(t, state) -> array``."""

    __slots__ = ("source", "index")

    def __init__(self, source: ControllerInputs, index: int):
        self.source = source
        self.index = index

    def __call__(self, t, state):
        return self.source(t, state)[self.index]


def compiled_law_of(tau, base_wrench):
    """The compiled law behind a pair of inputs: both channels of one
    :class:`ControllerInputs` → its law (or None); anything else → None."""
    if isinstance(tau, InputChannel) and isinstance(base_wrench, InputChannel) \
            and tau.source is base_wrench.source and (tau.index, base_wrench.index) == (0, 1):
        return tau.source.compiled_law()
    return None
