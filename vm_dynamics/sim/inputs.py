"""The engine's inputs: joint efforts, vehicle wrenches and frame wrenches, validated once into the
records the compiled step takes (:class:`Inputs`), and the mimic-joint map of the integrated
joint state (:class:`TreeCoordinates`)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core.validation import as_vector
from .records import StageInputs

__all__ = ["Inputs", "validate_inputs", "TreeCoordinates"]


class Inputs(NamedTuple):
    """Inputs validated once by :meth:`Simulator.held_inputs`: the compiled step's record
    ``kernel`` (:class:`~vm_dynamics.sim.records.StageInputs`) and the frame wrenches as given
    ``frames`` ``{frame: [f; n]}`` (frame axes)."""

    kernel: StageInputs
    frames: dict

    @property
    def tau(self):
        return self.kernel.tau

    @property
    def base_wrench(self):
        return self.kernel.bw


_NO_FRAMES = (np.zeros(0, dtype=np.int64), np.zeros((0, 6)))
_new = tuple.__new__


def validate_inputs(model, frames, zeros, tau=None, base_wrench=None, base_wrench_inertial=None,
                    frame_wrenches=None) -> Inputs:
    """:class:`Inputs` of ``tau`` (n), ``base_wrench`` (b), ``base_wrench_inertial`` (6) and
    ``frame_wrenches`` ``{frame: 6-vector}`` (None: zero, taken from ``zeros = (n, b, 6)``
    arrays); ``frames[name] = (body, Ad⁻ᵀ)`` of the stage evaluator.  Errors name the input."""
    ztau, zb, z6 = zeros
    # fresh C-contiguous float64 arrays: the compiled entry points take exactly that type
    tau = ztau if tau is None else np.array(as_vector(tau, model.n, "tau"))
    bw = zb if base_wrench is None else np.array(as_vector(base_wrench, model.b, "base_wrench"))
    bwi = z6 if base_wrench_inertial is None else \
        np.array(as_vector(base_wrench_inertial, 6, "base_wrench_inertial"))
    if not frame_wrenches:         # (the records built as tuples: a per-step path)
        return _new(Inputs, (_new(StageInputs, (tau, bw, bwi, _NO_FRAMES[0], _NO_FRAMES[1])), {}))
    if not isinstance(frame_wrenches, dict):
        raise ValueError("frame_wrenches: expected a dict {frame name: 6-vector wrench}")
    bodies, ws, raw = [], [], {}
    for name, w in frame_wrenches.items():
        if name not in frames:
            raise ValueError(f"frame_wrenches: unknown frame {name!r}; frames are "
                             f"{', '.join(model.frame_names)}")
        body, T = frames[name]
        raw[name] = as_vector(w, 6, f"frame_wrenches[{name!r}]")
        bodies.append(body)
        ws.append(T @ raw[name])
    return Inputs(StageInputs(tau, bw, bwi, np.array(bodies, dtype=np.int64),
                              np.ascontiguousarray(ws, dtype=float)), raw)


class TreeCoordinates:
    """Mimic joints on the compiled step: the joint state is kept in the coordinates of the tree
    (``q_tree = G q + c``, which the Runge–Kutta stages preserve exactly: the accelerations are
    ``G q̈``), the efforts act on the masters.  ``coupling`` None: the identity map."""

    def __init__(self, coupling=None, n: int = 0):
        self.active = coupling is not None
        if self.active:
            self.masters = np.asarray(coupling.independent, dtype=np.int64)
            self.G = np.ascontiguousarray(coupling.G, dtype=float)
            self.c = np.ascontiguousarray(coupling.c, dtype=float)
        #: joints of the integrated state
        self.n = len(self.c) if self.active else n
        self._cache = (None, None)

    def to_tree(self, q, qd):
        """The integrated joint state of the model's ``(q, q̇)``."""
        if not self.active:
            return q, qd
        return np.ascontiguousarray(self.G @ q + self.c), np.ascontiguousarray(self.G @ qd)

    def model_q(self, x):
        """The model's coordinates of integrated joint values (rows of them): the masters'."""
        return x[..., self.masters] if self.active else x

    def efforts(self, tau):
        """Efforts as the kernels take them: on the masters of the tree."""
        if not self.active:
            return tau
        src, out = self._cache
        if src is not tau:
            out = np.zeros(len(self.c))
            out[self.masters] = tau
            self._cache = (tau, out)
        return out
