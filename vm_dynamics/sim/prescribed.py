"""The joint efforts that realise a prescribed joint motion (:meth:`Simulator.prescribed_effort`)."""
from __future__ import annotations

import numpy as np

from ..core.validation import as_pose, as_vector
from ..dynamics import lp

__all__ = ["prescribed_effort"]


def prescribed_effort(sim, state, frame_wrenches=None, base_wrench=None) -> np.ndarray:
    """``τ = M̂(q̈_p − q̈(τ = 0))`` at ``state`` of the simulator ``sim``'s prescribed motion:
    (LP-2) is affine in τ with slope M̂⁻¹.  The force elements act as at every stage."""
    from ..dynamics.fast import fast_model
    model = sim.model
    t, g, V, q, qd = (float(state.t), as_pose(state.g, "state.g"),
                      as_vector(state.V, model.b, "state.V"),
                      as_vector(state.q, model.n, "state.q"),
                      as_vector(state.qd, model.n, "state.qd"))
    _, _, qdd_p = sim.prescribed_at(t)
    bw = None if base_wrench is None else as_vector(base_wrench, model.b, "base_wrench")
    if sim.forces:
        from ..forces import total_wrenches
        bw, frame_wrenches = total_wrenches(model, sim.forces, g, V, q, bw, frame_wrenches)
    zero = np.zeros(model.n)
    if sim.backend == "lp":
        terms = lp.lp_terms(model, q, derivatives=True)
        _, qdd0, _ = lp.forward_dynamics(model, g, V, q, qd, zero, bw, frame_wrenches,
                                         terms=terms)
        return terms.Mhat @ (qdd_p - qdd0)
    fm = fast_model(model, "numba" if sim.backend == "numba" else "numpy")
    _, qdd0 = fm.forward_dynamics(g, V, q, qd, zero, bw, frame_wrenches)
    return fm.lp_blocks(q).Mhat @ (qdd_p - qdd0)
