"""Reconstruction of the vehicle's motion from a joint path at conserved momentum.

Paper 002 (Müller 2023, Proc. R. Soc. A 479: 20220732), §6; docs/corrections.md.  When no
wrench acts on the vehicle or the end effector and there is no gravity, the total momentum is
conserved (docs/corrections.md, "Conserved quantities").  In the inertial frame it is a constant 6-vector ``π`` (linear;
angular about the inertial origin, as returned by :meth:`Model.momentum`).  The vehicle's body
momentum is then a function of the pose alone,

    P(g) = ι₀ᵀ Ad_gᵀ π                                (paper 002, Π_b = Ad_gᵀ Π_spatial)

and the vehicle's body velocity follows from the joint velocities by (LP-3) / paper 002 (6.5):

    𝒱 = M₀⁻¹(q) P(g) − 𝒜(q) q̇          ġ = g (ι₀𝒱)^

The first term is the *dynamic phase* (drift caused by the momentum), the second the *geometric
phase*.  At zero momentum ``𝒱 = −𝒜(q) q̇`` (paper 002 (6.2): ``u = ξ + A ṙ = 0``) and the
vehicle's displacement after a closed joint loop is the holonomy of the mechanical connection
(its curvature, :meth:`Model.curvature`, is the "field strength" of paper 002 Rem. 5.2): a
satellite whose reaction wheels go round a closed loop in wheel-angle space turns by a net
rotation although the momentum stays zero (paper 002 §5(f), §6(c), Fig. 3).  Reversing the loop
gives the inverse displacement.

For a restricted base (SE2, SO3) only the components of ``π`` that are conserved under the
constraint forces of the subgroup are meaningful (e.g. for SO3 the angular momentum about the
fixed vehicle origin); ``P(g) = ι₀ᵀAd_gᵀπ`` picks exactly those when ``π`` is the momentum of an
actual state (``model.momentum(g, V, q, qd)``).

The pose is integrated with the RKMK methods of :mod:`vm_dynamics.sim.integrators`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import lie
from ..core.validation import as_pose, as_returned_vectors, as_vector
from ..dynamics import lp
from .integrators import METHODS, IntegrationStats, integrate

__all__ = ["reconstruct_base", "BaseMotion"]


class BaseMotion(NamedTuple):
    """Result of :func:`reconstruct_base`: samples ``t`` (N+1), poses ``g`` (N+1, 4, 4), vehicle
    body velocities ``V`` (N+1, b) and the joint path ``q``, ``qd`` (N+1, n) at the samples."""

    t: np.ndarray
    g: np.ndarray
    V: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    steps: int


def _joint_path_fn(joint_path, n):
    if not callable(joint_path):
        raise ValueError("joint_path: expected a callable t -> (q, qd)")

    def fn(t):
        return as_returned_vectors(joint_path(t), ("q", "qd"), n, "joint_path", t)
    return fn


def base_velocity(model, g, q, qd, momentum=None) -> np.ndarray:
    """``𝒱 = M₀⁻¹ ι₀ᵀAd_gᵀπ − 𝒜q̇`` (LP-3 with P from the inertial momentum π; paper 002 (6.5))."""
    t = lp.lp_terms(model, q, derivatives=False)
    V = -t.A @ qd
    if momentum is not None:
        P = model.group.project(lie.Ad(g).T @ momentum)
        V = V + np.linalg.solve(t.M0, P)
    return V


def reconstruct_base(model, g0, joint_path, t, momentum=None, method="rkmk4", substeps=1,
                     rtol=1e-10, atol=1e-12) -> BaseMotion:
    """Vehicle motion caused by the joint path ``joint_path(t) -> (q, qd)`` at conserved momentum.

    Parameters
    ----------
    g0 : vehicle pose (4×4) at ``t[0]``.
    joint_path : callable ``t -> (q, qd)`` (a ``(q, qd, qdd)`` tuple is accepted too).
    t : increasing sample times (the pose is returned at each).
    momentum : the conserved total spatial momentum ``π`` in the inertial frame (6-vector
        ``[linear; angular about the origin]``, as from :meth:`Model.momentum`); default zero.
    method, substeps, rtol, atol : as for :func:`vm_dynamics.sim.simulate` (``substeps`` fixed steps
        per sample interval for ``rkmk4``/``lie_euler``; tolerances for ``dopri5``).
    """
    g0 = as_pose(g0, "g0")
    path = _joint_path_fn(joint_path, model.n)
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size < 2 or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise ValueError("t: expected a strictly increasing 1-D array of at least 2 finite times")
    if method not in METHODS:
        raise ValueError(f"method={method!r}: unknown; choose one of {', '.join(METHODS)}")
    if not isinstance(substeps, (int, np.integer)) or substeps < 1:
        raise ValueError(f"substeps: expected a positive integer, got {substeps!r}")
    pi = None if momentum is None else as_vector(momentum, 6, "momentum")
    if pi is not None and not np.any(pi):
        pi = None
    b, n, N = model.b, model.n, t.size - 1
    out_g = np.empty((N + 1, 4, 4))
    out_V = np.empty((N + 1, b))
    out_q = np.empty((N + 1, n))
    out_qd = np.empty((N + 1, n))
    empty = np.zeros(0)

    def rhs(tt, g, y):
        q, qd = path(tt)
        V = base_velocity(model, g, q, qd, pi)
        return V, empty, (V, q, qd)

    def on_sample(k, tt, g, y, aux):
        if aux is None:
            q, qd = path(tt)
            aux = (base_velocity(model, g, q, qd, pi), q, qd)
        out_g[k] = g
        out_V[k], out_q[k], out_qd[k] = aux
        return False

    stats = integrate(rhs, model.group, method, t, g0, empty, on_sample, substeps=substeps,
                      rtol=rtol, atol=atol, stats=IntegrationStats())
    return BaseMotion(t.copy(), out_g, out_V, out_q, out_qd, stats.steps)
