"""Joint-space computed-torque control on the Lagrange–Poincaré model.

Two modes:

``free_floating`` (vehicle unactuated, ``base_wrench = 0``).  With the applied vehicle wrench
``f₀`` limited to known external wrenches, the arm equation (LP-2) (docs/corrections.md, "LP equations", corrected
(97)) reads ``M̂ q̈ + Ĉq̇ + N̂ + ∂u/∂q = τ − 𝒜ᵀF_η + J_{𝔢,𝔪}ᵀf_𝔢`` with
``F_η = f₀ + J_{𝔢,0}ᵀf_𝔢 − f_u`` (94), and involves no base acceleration.  Hence

    τ = M̂ (q̈_d + K_d ė + K_p e) + Ĉq̇ + N̂(q, q̇, P) + ∂u/∂q + 𝒜ᵀF_η − J_{𝔢,𝔪}ᵀf_𝔢

(docs/corrections.md, "Inverse dynamics", free-floating inverse dynamics) gives ``ë + K_d ė + K_p e = 0``
exactly while the
vehicle reacts; with ``F_η = 0`` the total momentum is conserved (§3.9).

``actuated_base`` (vehicle wrench and joint torques).  The vehicle tracks a pose reference
``(g_d, V_d, V̇_d)`` through exponential coordinates of the pose error ``X = log(g_d⁻¹ g)``
(see :func:`se3_tracking_acceleration`); the joints track as above; ``(base_wrench, τ)`` come
from the full inverse dynamics (docs/corrections.md, "Inverse dynamics") at ``(V̇_cmd, q̈_cmd)``.  No Euler angles are
used anywhere, so any attitude (pitch ±90° included) is regular.
"""
from __future__ import annotations

import numpy as np

from ..core import lie
from ..dynamics.lp import FreeFloatingTerms, free_floating_terms
from .base import Controller, gain_vector, known_wrenches, pose_gains, read_state
from .references import as_reference

__all__ = ["ComputedTorqueController", "FreeFloatingTerms", "free_floating_terms",
           "se3_tracking_acceleration", "dexp_drift", "joint_reference", "pose_reference"]


# ---------------------------------------------------------------------------- model-based pieces
# free_floating_terms / FreeFloatingTerms live with the other LP algorithms (vm_dynamics.dynamics.lp)
def dexp_drift(X: np.ndarray, Xdot: np.ndarray, max_terms: int = 200) -> np.ndarray:
    """``(∂/∂s dexp_{−X(s)}) Ẋ`` along ``X(s) = X + sẊ``: the part of the body acceleration of
    ``E = exp(X)`` not due to ``Ẍ``, i.e. ``d/dt (E⁻¹Ė)^∨ = dexp_{−X} Ẍ + dexp_drift(X, Ẋ)``.

    From ``dexp_{−X} = Σ_k P^k/(k+1)!`` with ``P = −ad_X``: with ``w_k = P^k Ẋ`` and
    ``d_k = ∂_s(P^k) Ẋ = Q w_{k−1} + P d_{k−1}`` (``Q = −ad_Ẋ``, ``d_0 = 0``) the drift is
    ``Σ_k d_k/(k+1)!``.  The eigenvalues of ad_X are 0 and ±i‖ω‖, so the terms fall off like
    ``k‖ω‖^{k−1}/(k+1)!`` and the series is summed until the terms stop contributing.
    """
    P, Q = -lie.ad(X), -lie.ad(Xdot)
    w = np.asarray(Xdot, dtype=float)
    d = np.zeros(6)
    out = np.zeros(6)
    fact = 1.0
    for k in range(1, max_terms):
        d = Q @ w + P @ d
        w = P @ w
        fact *= k + 1
        term = d / fact
        out += term
        if k > 4 and np.abs(term).max() <= 1e-17 * (np.abs(out).max() + 1e-300) \
                and np.abs(w).max() / fact <= 1e-17 * (np.abs(Xdot).max() + 1e-300):
            break
    return out


def se3_tracking_acceleration(g, V, g_d, V_d, Vdot_d, kp, kd, law="exponential"):
    """Commanded body acceleration ``V̇_cmd`` (6-vector) for tracking ``(g_d, V_d, V̇_d)``.

    Error ``E = g_d⁻¹ g``, ``X = log(E)``; the desired twist transported to the current body
    frame is ``Ad_{E⁻¹} V_d = Ad_{g⁻¹g_d} V_d`` and the body velocity of E is
    ``W = V − Ad_{E⁻¹}V_d``.  Since ``V = W + Ad_{E⁻¹}V_d``,

        V̇ = Ẇ + Ad_{E⁻¹}V̇_d − ad_W Ad_{E⁻¹}V_d.

    ``law="exponential"``: ``Ẋ = dexp⁻¹_{−X} W`` and ``Ẇ = dexp_{−X}(−K_dẊ − K_pX) + drift``
    makes ``Ẍ + K_dẊ + K_pX = 0`` exactly (componentwise linear error dynamics in exponential
    coordinates).  ``law="pd"``: the geometric PD ``Ẇ = −K_dW − K_pX`` (the same to first order).

    Returns ``(V̇_cmd, X, Ẋ)``.
    """
    E = lie.se3_inv(g_d) @ g
    X = lie.se3_log(E)
    AdEi = lie.Ad_inv(E)
    Vd_here = AdEi @ V_d
    W = V - Vd_here
    if law == "exponential":
        Xdot = lie.dexp_inv_body(X) @ W
        Wdot = lie.dexp(-X) @ (-kd * Xdot - kp * X) + dexp_drift(X, Xdot)
    elif law == "pd":
        Xdot = lie.dexp_inv_body(X) @ W
        Wdot = -kd * W - kp * X
    else:
        raise ValueError(f"law={law!r}; choose 'exponential' or 'pd'")
    return Wdot + AdEi @ Vdot_d - lie.ad(W) @ Vd_here, X, Xdot


# ---------------------------------------------------------------------------- reference access
def joint_reference(traj, t, n, hold):
    """``(q_d, qd_d, qdd_d)`` from a joint trajectory (or the hold value if ``traj`` is None)."""
    if traj is None:
        return hold, np.zeros(n), np.zeros(n)
    out = traj(t)
    vals = [np.asarray(x, dtype=float).reshape(-1) for x in out]
    for name, v in zip(("q_d", "qd_d", "qdd_d"), vals):
        if v.shape != (n,):
            raise ValueError(f"reference.joint: {name} has shape {v.shape}, the model has "
                             f"{n} joints")
    return tuple(vals)


def pose_reference(traj, t, group, hold, name="base"):
    """``(g_d, V_d, V̇_d)`` with 6-vector twists from a pose trajectory returning b- or
    6-vectors (or the hold pose, at rest, if ``traj`` is None)."""
    if traj is None:
        return hold, np.zeros(6), np.zeros(6)
    g_d, V_d, Vdot_d = traj(t)
    g_d = np.asarray(g_d, dtype=float)
    if g_d.shape != (4, 4):
        raise ValueError(f"reference.{name}: pose has shape {g_d.shape}, expected (4, 4)")
    out = []
    for label, v in (("V_d", V_d), ("Vdot_d", Vdot_d)):
        v = np.asarray(v, dtype=float).reshape(-1)
        if group is not None and v.shape == (group.dim,) and group.dim != 6:
            v = group.embed(v)
        if v.shape != (6,):
            raise ValueError(f"reference.{name}: {label} has shape {v.shape}; expected 6 or "
                             f"b = {group.dim if group is not None else 6}")
        out.append(v)
    return g_d, out[0], out[1]


# ---------------------------------------------------------------------------- the controller
class ComputedTorqueController(Controller):
    """Computed torque on the LP model (see the module docstring).

    Parameters (defaults in brackets):

    * ``mode`` [``free_floating``] or ``actuated_base``;
    * ``kp`` [64], ``kd`` [16]: joint gains in 1/s², 1/s (scalars or n-lists; ω_n = 8 rad/s, ζ = 1);
    * ``kp_lin``, ``kp_ang`` [25], ``kd_lin``, ``kd_ang`` [10]: vehicle pose gains in exponential
      coordinates (scalars or 3-lists; ω_n = 5 rad/s, ζ = 1), or ``kp_base``/``kd_base`` 6-lists;
    * ``base_law`` [``exponential``] or ``pd`` (see :func:`se3_tracking_acceleration`);
    * ``dynamics`` [``auto``]: ``lp`` evaluates the law with the closed-form LP terms above;
      ``fast`` with the O(n) recursions of :mod:`vm_dynamics.dynamics.fast` — the same torque (tests check
      1e-9): free-floating, two RNEA calls give ``𝒱̇ = M₀⁻¹(f₀ − RNEA₀(𝒱̇=0, q̈_cmd))`` and then
      ``τ = RNEA_𝔪(𝒱̇, q̈_cmd)``; ``auto`` = ``fast`` (numba, or numpy without it; also with an
      added vehicle inertia, :meth:`~vm_dynamics.Model.with_added_vehicle_inertia`).

    Without a joint (or base) reference the controller holds the value of ``reset``.
    """

    name = "computed_torque"
    PARAMS = {"mode": "free_floating", "kp": 64.0, "kd": 16.0,
              "kp_lin": None, "kp_ang": None, "kd_lin": None, "kd_ang": None,
              "kp_base": None, "kd_base": None, "base_law": "exponential", "dynamics": "auto"}
    MODES = ("free_floating", "actuated_base")

    def _check_params(self, params):
        self._choice("mode", self.MODES)
        self._choice("base_law", ("exponential", "pd"))
        self._choice("dynamics", ("auto", "lp", "fast"))
        self.kp_base = pose_gains(params, self.name, "kp_lin", "kp_ang", "kp_base", 25.0)
        self.kd_base = pose_gains(params, self.name, "kd_lin", "kd_ang", "kd_base", 10.0)

    def _reset(self, model, state):
        self.kp = gain_vector(self.params["kp"], model.n, "kp", self.name)
        self.kd = gain_vector(self.params["kd"], model.n, "kd", self.name)
        self.fast = None
        if self.params["dynamics"] != "lp":          # the O(n) recursions (numba or numpy)
            from ..dynamics import fast
            self.fast = fast.fast_model(model, fast.resolve_backend("auto"))
        self._hold(model, state)

    def compiled_law(self, reference):
        """This law on the numba kernels (:class:`~vm_dynamics.control.compiled.CompiledLaw`)
        when it can be: free-floating (or a fixed base), or an actuated base with a constant
        pose reference; a joint reference of waypoints, a set-point, a sinusoid or none; no
        known external wrenches, or only force elements (``reset(..., external=[elements])``),
        which the law compensates in compiled form.  Otherwise None."""
        from ..dynamics import fast
        from .compiled import BASE_LAWS, MODES, CompiledLaw, constant_pose, joint_reference_arrays
        from .laws import LawParams
        model = self._require_reset()
        if self.fast is None \
                or fast.resolve_backend("auto") != "numba":
            return None
        if self.external is not None and self.external_forces is None:
            return None
        forces = self.external_forces or ()
        ref = as_reference(reference)
        joint = joint_reference_arrays(ref.joint, model.n, self.q_hold)
        mode = MODES[self.params["mode"]] if model.b else 0
        gd = constant_pose(ref.base, self.g_hold) if mode == 1 else np.eye(4)
        if joint is None or gd is None:
            return None
        kind, times, coef, first, last, osc = joint
        li = np.array([mode, kind, BASE_LAWS[self.params["base_law"]],
                       bool(forces)], dtype=np.int64)
        law = LawParams(self.fast.kernel_constants, li, times, coef, first, last, osc,
                        np.ascontiguousarray(self.kp), np.ascontiguousarray(self.kd),
                        np.ascontiguousarray(gd, dtype=float),
                        np.ascontiguousarray(self.kp_base, dtype=float),
                        np.ascontiguousarray(self.kd_base, dtype=float))
        return CompiledLaw("computed_torque", law, tuple(forces), model)

    def joint_command(self, t, q, qd, reference):
        """``q̈_cmd = q̈_d + K_d ė + K_p e`` with ``e = q_d − q``."""
        q_d, qd_d, qdd_d = joint_reference(reference.joint, t, self.model.n, self.q_hold)
        return qdd_d + self.kd * (qd_d - qd) + self.kp * (q_d - q)

    def compute(self, t, state, reference):
        try:
            return self._compute(t, state, reference)
        except ValueError as exc:
            if not str(exc).startswith("qdd:"):
                raise
            # the dynamics name their argument q̈, which here is this law's command
            raise ValueError(f"{self.name}: the commanded joint acceleration q̈_d + kd·ė + "
                             f"kp·e is out of range at t = {t:g} s ({exc}); lower the gains "
                             f"kp, kd") from None

    def _compute(self, t, state, reference):
        model = self._require_reset()
        g, V, q, qd = read_state(model, state)
        ref = as_reference(reference)
        qdd_cmd = self.joint_command(t, q, qd, ref)
        f_ext, frame_w = known_wrenches(self, t, state)
        if self.params["mode"] == "free_floating" or model.b == 0:
            if self.fast is not None:
                return self._fast_free_floating(g, V, q, qd, qdd_cmd, f_ext, frame_w), np.zeros(model.b)
            ff = free_floating_terms(model, g, V, q, qd, f_ext, frame_w)
            return ff.Mhat @ qdd_cmd + ff.bias, np.zeros(model.b)
        grp = model.group
        g_d, V_d, Vdot_d = pose_reference(ref.base, t, grp, self.g_hold)
        Vdot6, _, _ = se3_tracking_acceleration(g, grp.embed(V), g_d, V_d, Vdot_d, self.kp_base,
                                                self.kd_base, self.params["base_law"])
        inv = self.fast.inverse_dynamics if self.fast is not None else model.inverse_dynamics
        f0, tau = inv(g, V, q, qd, grp.project(Vdot6), qdd_cmd, frame_wrenches=frame_w)
        return tau, f0 - f_ext

    def _fast_free_floating(self, g, V, q, qd, qdd_cmd, f_ext, frame_w):
        """The free-floating law by recursive inverse dynamics in one compiled call
        (:meth:`vm_dynamics.dynamics.fast.FastModel.free_floating_inverse_dynamics`): the base row of RNEA
        is affine in 𝒱̇ with slope M₀, so 𝒱̇ = M₀⁻¹(f₀ − RNEA₀(𝒱̇ = 0)) makes the base wrench
        the applied one, and τ = RNEA_𝔪(𝒱̇, q̈_cmd) — identical to M̂q̈_cmd + bias of (LP-2)."""
        return self.fast.free_floating_inverse_dynamics(g, V, q, qd, qdd_cmd, f_ext, frame_w)[1]
