"""Advancing the capture state over one step ``dt``: fixed RKMK substeps, or the adaptive
Dormand–Prince 5(4) pair.

Both use the tableaux and the RKMK stage loop of :mod:`vm_dynamics.sim.integrators`
(:func:`~vm_dynamics.sim.integrators.rkmk_step`) on the capture's group (``SE(3) × SE(3)`` free,
the chaser's group while grasped); only the step-size control is here.  ``dopri5`` takes
error-controlled internal steps that end exactly at ``t + dt`` (so contact onsets, grasp and
release stay at step boundaries, as with the fixed methods): the error of a step is the RMS
norm (Hairer–Nørsett–Wanner II.4) of the embedded estimate ``h Σ eᵢ kᵢ`` on the algebra
increment and the vector state together, each component scaled by ``atol + rtol·|x|`` (the
pose increment's translations by the body's distance from the origin, its rotations by 1 rad).
A rejected step is retried with a smaller ``h`` (the first stage is reused); after an accepted
one the last stage is the next step's first (FSAL), and ``h`` grows by at most ×10.  The step
size carries over from one ``dt`` to the next.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sim.integrators import reorthonormalize, rkmk_step

__all__ = ["StepStats", "advance"]


@dataclass
class StepStats:
    """Internal steps taken, rejected and right-hand-side evaluations (adaptive method)."""

    steps: int = 0
    rejected: int = 0
    evals: int = 0


def _reorthonormalize_blocks(G):
    for k in range(G.shape[0] // 4):
        reorthonormalize(G[4 * k:4 * k + 4, 4 * k:4 * k + 4])
    return G


def _theta_scale(G, G_new, dim, atol, rtol):
    s = np.ones(dim)
    for k in range(dim // 6):
        B = slice(4 * k, 4 * k + 3)
        s[6 * k:6 * k + 3] = max(np.linalg.norm(G[B, 4 * k + 3]),
                                 np.linalg.norm(G_new[B, 4 * k + 3]))
    return atol + rtol * s


def _check(G, y, t):
    if not np.all(np.isfinite(G)) or not np.all(np.isfinite(y)):
        raise FloatingPointError(f"capture: the state is not finite at t={t:.9g} (a contact "
                                 f"too stiff for dt?)")


def advance(rhs, group, tab, t0: float, G, y, T: float, substeps: int = 1, h0=None,
            rtol: float = 1e-9, atol: float = 1e-12, stats: StepStats | None = None):
    """``(G, y, h)`` at ``t0 + T`` from ``(G, y)`` at ``t0``: ``substeps`` equal RKMK steps of a
    fixed-step tableau, or adaptive steps of an embedded one starting from ``h0`` (default
    ``T``); ``h`` is the step size to start the next call with (None for fixed steps)."""
    if not tab.adaptive:
        h = T / substeps
        for j in range(substeps):
            Theta, y, *_ = rkmk_step(rhs, group, tab, t0 + j * h, G, y, h)
            G = _reorthonormalize_blocks(G @ group.exp(Theta))
            _check(G, y, t0 + (j + 1) * h)
        return G, y, None
    stats = stats if stats is not None else StepStats()
    t, t_end = t0, t0 + T
    h = min(T, h0) if h0 else T
    first = None
    safety, fac_min, fac_max, expo = 0.9, 0.2, 10.0, -1.0 / 5.0
    rejected_last = False
    while t < t_end:
        last_step = t + h >= t_end
        hh = t_end - t if last_step else h
        if hh <= 16 * np.finfo(float).eps * max(1.0, abs(t)):
            raise RuntimeError(f"capture dopri5: step size underflow at t={t:.9g} "
                               f"(rtol={rtol}, atol={atol})")
        Theta, y_new, K, L, ev, first, last = rkmk_step(rhs, group, tab, t, G, y, hh, first)
        stats.evals += ev
        G_new = G @ group.exp(Theta)
        err_y = hh * (tab.e @ L)
        err_T = hh * (tab.e @ K)
        sc_y = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
        sc_T = _theta_scale(G, G_new, err_T.size, atol, rtol)
        err = np.sqrt((np.sum((err_y / sc_y) ** 2) + np.sum((err_T / sc_T) ** 2))
                      / (err_y.size + err_T.size))
        if not np.isfinite(err):
            err = np.inf
        if err > 1.0:
            stats.rejected += 1
            h = hh * (max(fac_min, safety * err ** expo) if np.isfinite(err) else fac_min)
            rejected_last = True              # same start point: `first` is reused
            continue
        stats.steps += 1
        t = t_end if last_step else t + hh
        G, y = _reorthonormalize_blocks(G_new), y_new
        _check(G, y, t)
        first = last                          # FSAL
        fac = fac_max if err == 0.0 else min(fac_max, safety * err ** expo)
        if rejected_last:
            fac = min(fac, 1.0)
        rejected_last = False
        if not (last_step and hh < h):        # a final step cut short keeps the proposal
            h = hh * max(fac_min, fac)
    return G, y, h
