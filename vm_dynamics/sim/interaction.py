"""What a real arm would feel on the simulated vehicle: the joint efforts of the coupled system and
the wrench the arm exerts on the vehicle (hardware in the loop, :mod:`vm_dynamics.sim.measured`).

For a joint motion ``(q, q̇, q̈)`` and a vehicle that moves freely under its known wrenches, the
coupled system's inverse dynamics (docs/corrections.md, "Inverse dynamics", free-floating
inverse dynamics: the arm equation (LP-2) with (LP-1) eliminating ``V̇``) gives the vehicle's
acceleration ``V̇`` and the joint efforts ``τ`` that produce ``q̈`` in orbit.  The wrench the arm
exerts on the vehicle is minus the base row of the inverse dynamics of the arm alone (a massless
vehicle) at ``(V, V̇, q, q̇, q̈)``; by the vehicle's own Newton–Euler equation it equals
``𝔐₀V̇ − ad_Vᵀ 𝔐₀V`` minus the other wrenches on the vehicle (test_interaction checks this).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core.validation import as_vector
from ..dynamics.fast import fast_model

__all__ = ["ArmInteraction", "arm_interaction"]


class ArmInteraction(NamedTuple):
    """``tau`` (n): joint efforts of the coupled system; ``Vdot`` (b): the vehicle's body
    acceleration; ``base_reaction`` (b): the wrench ``[f; n]`` the arm exerts on the vehicle at
    the vehicle frame's origin, vehicle axes, on the vehicle's ``b`` degrees of freedom."""

    tau: np.ndarray
    Vdot: np.ndarray
    base_reaction: np.ndarray


def arm_interaction(sim, qdd, base_wrench=None, frame_wrenches=None) -> ArmInteraction:
    """Efforts, vehicle acceleration and base reaction at the simulator's current state for the
    joint acceleration ``qdd`` (for example a filtered estimate of a real arm's).

    ``base_wrench`` (b, body frame) and ``frame_wrenches`` are the external wrenches acting now;
    the simulator's force elements are added as at every engine stage.
    """
    model = sim.model
    _, g, V, q, qd = sim.arrays()
    qdd = as_vector(qdd, model.n, "qdd")
    from ..forces import total_wrenches
    bw = None if base_wrench is None else as_vector(base_wrench, model.b, "base_wrench")
    bw, fws = total_wrenches(model, sim.forces, g, V, q, bw, frame_wrenches)
    backend = "numba" if sim.backend == "numba" else "auto"
    fm = fast_model(model, backend)
    Vdot, tau = fm.free_floating_inverse_dynamics(g, V, q, qd, qdd, bw, fws or None)
    f_arm, _ = fm.arm_only().inverse_dynamics(g, V, q, qd, Vdot, qdd, fws or None)
    return ArmInteraction(tau, Vdot, -f_arm)
