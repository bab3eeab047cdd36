"""The fast path's free functions: the :class:`~.model.FastModel` of a model (built once per
model, backend and gravity) and the algorithms called on it."""

from __future__ import annotations

import weakref

import numpy as np

from .model import FastModel, LPBlocks

__all__ = ["fast_model", "forward_dynamics", "forward_dynamics_batch", "inverse_dynamics",
           "mass_matrix", "lp_blocks"]

_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def fast_model(model, backend: str = "auto") -> FastModel:
    """The :class:`FastModel` of ``model`` (built once per model and backend, then reused)."""
    if isinstance(model, FastModel):
        if backend in ("auto", model.backend):
            return model
        model = model.model
    per_model = _CACHE.get(model)
    if per_model is None:
        per_model = _CACHE.setdefault(model, {})
    fm = per_model.get(backend)
    if fm is None or fm.grav is not model.gravity and not np.array_equal(fm.grav, model.gravity):
        fm = per_model[backend] = FastModel(model, backend)
    return fm


def forward_dynamics(model, g, V, q, qd, tau, base_wrench=None, frame_wrenches=None,
                     backend="auto"):
    """``(V̇, q̈)``: same contract as :meth:`Model.forward_dynamics`, by the O(n) ABA."""
    return fast_model(model, backend).forward_dynamics(g, V, q, qd, tau, base_wrench,
                                                       frame_wrenches)


def forward_dynamics_batch(model, g, V, q, qd, tau, base_wrench=None, frame_wrenches=None,
                           backend="auto", parallel=False):
    """Batched :func:`forward_dynamics` over leading dimensions (see
    :meth:`FastModel.forward_dynamics_batch`)."""
    return fast_model(model, backend).forward_dynamics_batch(g, V, q, qd, tau, base_wrench,
                                                             frame_wrenches, parallel)


def inverse_dynamics(model, g, V, q, qd, Vdot, qdd, frame_wrenches=None, backend="auto"):
    """``(base_wrench, τ)``: same contract as :meth:`Model.inverse_dynamics`, by RNEA."""
    return fast_model(model, backend).inverse_dynamics(g, V, q, qd, Vdot, qdd, frame_wrenches)


def mass_matrix(model, q, backend="auto"):
    """Mass matrix (64) by CRBA."""
    return fast_model(model, backend).mass_matrix(q)


def lp_blocks(model, q, backend="auto") -> LPBlocks:
    """LP blocks M₀, M₀𝔪, M_𝔪, 𝒜, M̂ (65)–(75) from the CRBA mass matrix."""
    return fast_model(model, backend).lp_blocks(q)
