"""When a simulation has diverged: one policy for ``vm-sim``, :func:`vm_dynamics.simulate` and
the dynamics node.

Two tests, each a plain function of numbers so that every layer can apply it:

* :func:`state_beyond_limits` — a state with a NaN/Inf, or a velocity or position beyond
  :data:`DIVERGENCE_LIMITS` (SI units), has left the range where the integration means anything;
* :func:`energy_balance_violated` — the energy balance ``r = E(t) − E(0) − W(t)`` (``E``
  kinetic + potential energy, ``W`` the work of every applied effort and wrench) exceeds
  ``threshold`` times the energy scale: the integration error is of the size of the motion
  itself, and the usual cure is a smaller time step.  :data:`ENERGY_BALANCE_THRESHOLD` is the
  default threshold (the nodes' ``divergence_threshold`` parameter).
"""
from __future__ import annotations

import math

__all__ = ["DIVERGENCE_LIMITS", "ENERGY_BALANCE_THRESHOLD", "state_beyond_limits",
           "energy_balance_violated", "energy_balance_message"]

#: A sample beyond these limits (or with a NaN/Inf) has diverged (SI units: m/s and rad/s for
#: velocities, m and rad for positions).
DIVERGENCE_LIMITS = {"velocity": 1e6, "position": 1e9}
#: Largest energy-balance residual, as a fraction of the energy scale, of a trusted run.
ENERGY_BALANCE_THRESHOLD = 0.25


def state_beyond_limits(V, qd, q, g) -> str | None:
    """Why the state (vehicle twist ``V``, joint velocities ``qd`` and positions ``q``, pose
    ``g``) has diverged -- ``"non-finite joint velocity"``, ``"base pose 2e+09 exceeds 1e+09"``
    -- or None if it has not."""
    import numpy as np  # here: vm-sim imports this module before its heavy imports
    lim = DIVERGENCE_LIMITS
    checks = (("base twist", V, lim["velocity"]), ("joint velocity", qd, lim["velocity"]),
              ("joint position", q, lim["position"]), ("base pose", np.asarray(g)[:3],
                                                       lim["position"]))
    for what, a, limit in checks:
        a = np.asarray(a)
        if a.size:
            m = float(np.abs(a).max())
            if not m <= limit:
                return (f"non-finite {what}" if not math.isfinite(m)
                        else f"{what} {m:.3g} exceeds {limit:g}")
    return None


def energy_balance_violated(residual: float, scale: float,
                            threshold: float = ENERGY_BALANCE_THRESHOLD) -> bool:
    """True if the energy-balance ``residual`` is not finite or exceeds ``threshold`` times the
    (positive) energy ``scale``."""
    return not (math.isfinite(residual) and math.isfinite(scale)
                and abs(residual) <= threshold * scale)


def energy_balance_message(relative: float, threshold: float, dt: float) -> str:
    """The one-line warning for a run whose energy balance is off by ``relative`` (a fraction
    of the energy scale), naming the fix."""
    return (f"the energy balance is off by {100 * relative:.3g} % of the energy scale (more "
            f"than the {100 * threshold:g} % of divergence_threshold): the integration cannot "
            f"be trusted; use a smaller dt (now {dt:g} s, e.g. --dt {dt / 10:g})")
