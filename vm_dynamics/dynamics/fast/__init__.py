"""Fast dynamics path: O(n) recursive algorithms over the tree, compiled with numba when present.

:mod:`vm_dynamics.dynamics.lp` stays the paper-faithful reference; this package solves the same
equations with the recursions of rigid-body dynamics, for simulation and control loops.

API (same conventions as :meth:`vm_dynamics.Model.forward_dynamics`: ``g`` the 4×4 vehicle pose,
``V`` its body twist as a b-vector in the subgroup ``ι₀ = model.group.iota``, gravity
``model.gravity`` in the inertial frame, ``base_wrench`` a b-vector in the vehicle frame,
``frame_wrenches = {frame: [f; n]}`` a wrench at a frame's origin in that frame's axes)::

    forward_dynamics(model, g, V, q, qd, tau, base_wrench=None, frame_wrenches=None) -> (V̇, q̈)
    forward_dynamics_batch(model, g, V, q, qd, tau, base_wrench=None, frame_wrenches=None,
                           parallel=False) -> (V̇ (..., b), q̈ (..., n))
    inverse_dynamics(model, g, V, q, qd, Vdot, qdd, frame_wrenches=None) -> (base_wrench, τ)
    mass_matrix(model, q);  lp_blocks(model, q) -> LPBlocks(M0, M0m, Mm, A, Mhat)
    hybrid_dynamics(model, g, V, q, qd, tau, qdd, driven, base_wrench=None,
                    frame_wrenches=None) -> (V̇, q̈, τ)     (docs/hybrid_dynamics.md)
    driven_impulse(model, q, dqd, driven) -> (ΔV, Δq̇)

Time stepping is the engine's job (:class:`vm_dynamics.sim.engine.Simulator`, whose compiled step
lives in :mod:`vm_dynamics.sim.kernels`); :func:`resolve_backend` is the one place that picks numba,
numpy or the LP reference.

``model`` is a :class:`~vm_dynamics.Model` or a :class:`FastModel` built from one (the constant
arrays are extracted once per model and remembered).  Every function takes
``backend="auto" | "numba" | "numpy"``; ``"auto"`` uses numba if it can be imported, else the
pure-numpy implementation of the same recursions (:mod:`.numpy_kernels`, slower, same results).
Numba is imported on first use, never by ``import vm_dynamics``.  Its kernels are compiled with
``cache=True``: the first call on a machine compiles them (about a minute for all of them), later
processes load the cache, which is valid while every file the kernels are compiled from is
unchanged (:mod:`.kernels.cache`; numba alone checks each kernel's own file only).

**Where the recursions live.**  All quantities are expressed in the vehicle frame, about its origin
— the inertial frame that coincides with the vehicle frame at the current instant.  There the
joint twists are ``S_j = Ad_{G_parent(j)} ξ_j`` (the columns of ⁰J, (29), with ``G_j`` the product
of exponentials (13)–(16) and ξ_j of (17)), the body inertias are 𝔐_k (55) moved by ``G_k``, the
body twists are ``v_k = ι₀V + Σ_{i ∈ path(k)} S_i q̇_i``, and the vehicle's spatial acceleration is
``ι₀V̇`` (the term ``ad_{ι₀V} ι₀V`` vanishes).  Gravity is the uniform acceleration
``a_g = [Rᵀa; 0]``, applied as a fictitious root acceleration ``−a_g``.  The vehicle moves in the
subgroup, so the wrench constraining it satisfies ``ι₀ᵀ f_c = 0``.

**Added vehicle inertia.**  A model from :meth:`~vm_dynamics.Model.with_added_vehicle_inertia`
has the kinetic energy ``½Vᵀ(𝔐₀ + M_A)V + …`` with a constant M_A (symmetric PSD, not of
rigid-body form), while gravity acts on the URDF masses only.  M_A (``FastModel.root_extra``)
therefore adds to the root body's inertia where the vehicle's own acceleration ι₀V̇ and velocity
enter, but not to the fictitious gravity acceleration: ABA root pivot ``ι₀ᵀ(I^A₀ + M_A)ι₀`` and
bias ``p^A₀ −= ad_{ι₀V}ᵀ(M_A ι₀V)``; RNEA root force ``+ M_A ι₀V̇ − ad_{ι₀V}ᵀ(M_A ι₀V)``;
CRBA ``M₀ += ι₀ᵀM_Aι₀``; the locked momentum P (77) includes ``ι₀ᵀM_Aι₀V``.

**Equivalence with the LP equations.**  In the coordinates (V, q̇) both paths solve the reduced
Euler–Poincaré (Lagrange–Poincaré) equations of the same Lagrangian
``½[V; q̇]ᵀM(q)[V; q̇] − U(g, q)`` with the mass matrix M of (64): the first b rows are ι₀ᵀ of the
Newton–Euler equation of the whole system in the vehicle frame, ``Ṗ = ad*_V P + F_η`` (LP-1), the
last n rows are the joint equations.  The LP path block-diagonalises M with the connection
(``Ω = V + 𝒜q̇``, (69), (73)) and solves ``M̂ q̈ = …`` (LP-2), where ``M̂ = M_𝔪 − M₀𝔪ᵀM₀⁻¹M₀𝔪``
(75) is the Schur complement of the locked inertia M₀.  The articulated-body algorithm (ABA)
eliminates the same linear system in the other order: joints from the leaves to the root,
leaving the vehicle's articulated inertia ``ι₀ᵀ I^A₀ ι₀ = M₀ − M₀𝔪 M_𝔪⁻¹ M₀𝔪ᵀ`` and
``V̇ = (ι₀ᵀI^A₀ι₀)⁻¹ ι₀ᵀ(I^A₀ a_g − p^A₀)``, then ``q̈`` from the root to the leaves.  Both are
exact, so (V̇, q̈) agree to rounding (``test/oracle/test_fast_path.py`` checks them against
``lp.forward_dynamics`` and Pinocchio's ``aba``).  Likewise RNEA gives the inverse dynamics of
docs/corrections.md, "Inverse dynamics" and the composite-rigid-body algorithm gives M, hence
M₀ (65), M₀𝔪 (66), M_𝔪 (67),
𝒜 (69) and M̂ (75) in :func:`lp_blocks`.

Costs: forward and inverse dynamics O(n); mass matrix O(n·depth).  Algorithms: Featherstone,
*Rigid Body Dynamics Algorithms* (2008), ABA (Table 7.1) and RNEA (Table 5.1) in a single
frame, CRBA (Table 6.2).
"""

from __future__ import annotations

from .backend import (
    BACKENDS,
    COMPILE_NOTICE,
    NOTICE_PRINTED,
    bind_compiled,
    compile_notice,
    kernels_cached,
    numba_available,
    numba_kernels,
    resolve_backend,
)
from .calls import unchecked_calls
from .functions import (
    fast_model,
    forward_dynamics,
    forward_dynamics_batch,
    inverse_dynamics,
    lp_blocks,
    mass_matrix,
)
from .hybrid import driven_impulse, driven_mask, hybrid_dynamics
from .model import FastModel, LPBlocks

__all__ = ["FastModel", "LPBlocks", "fast_model", "numba_available", "numba_kernels",
           "forward_dynamics", "forward_dynamics_batch", "inverse_dynamics", "mass_matrix",
           "lp_blocks", "resolve_backend", "BACKENDS", "COMPILE_NOTICE", "NOTICE_PRINTED",
           "bind_compiled", "kernels_cached", "compile_notice", "hybrid_dynamics",
           "driven_impulse", "driven_mask", "unchecked_calls"]
