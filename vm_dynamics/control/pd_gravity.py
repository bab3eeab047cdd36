"""PD control with gravity (and known-wrench, e.g. buoyancy) compensation: the baseline.

Joint torques ``τ = K_p e + K_d ė + τ_s(q)``, ``e = q_d − q``, where ``τ_s`` is the static
compensation term of the LP equations (only the potential and the known external wrenches,
velocities set to zero):

* ``free_floating``: vehicle unactuated; from (LP-2) with ``q̇ = 0, P = 0``:
  ``τ_s = ∂u/∂q + 𝒜ᵀF_η − J_{𝔢,𝔪}ᵀf_𝔢``, ``F_η = f_ext + J_{𝔢,0}ᵀf_𝔢 − f_u`` (94).
  For an SE(3) base in uniform gravity ``∂u/∂q − 𝒜ᵀf_u = 0`` (the free-falling system feels no
  gravity), so only the known wrenches remain.
* ``actuated_base``: vehicle held; ``(f_s, τ_s)`` = inverse dynamics (docs/corrections.md, "Inverse dynamics") at rest,
  i.e. ``f_s = f_u − f_ext − J_{𝔢,0}ᵀf_𝔢`` and ``τ_s = ∂u/∂q − J_{𝔢,𝔪}ᵀf_𝔢``; the vehicle wrench
  adds a geometric PD on ``X = log(g_d⁻¹g)`` and ``W = V − Ad_{g⁻¹g_d}V_d``:
  ``base_wrench = f_s − K_p^b X − K_d^b W``.

The known wrenches (``reset(..., external=...)``) are evaluated at rest (``V = 0``, ``q̇ = 0``),
so buoyancy is compensated and velocity-dependent damping is not.

Gains are physical (N·m/rad, N/m, ...).  Left at ``None`` they are set at ``reset`` from the
inertia there: ``k_p = ω² m_jj``, ``k_d = 2ζω m_jj`` with ``m_jj`` the diagonal of the reduced
inertia M̂ (free-floating) or of M_𝔪 (actuated base), and of the locked inertia M₀ for the
vehicle; defaults ``omega = 5`` rad/s, ``zeta = 1``.
"""
from __future__ import annotations

import numpy as np

from ..core import lie
from ..core.state import State
from ..dynamics import lp
from .base import Controller, gain_vector, known_wrenches, pose_gains, read_state
from .computed_torque import free_floating_terms, joint_reference, pose_reference
from .references import as_reference

__all__ = ["PDGravityController", "CheckedController", "checked_state", "checked_output"]


def checked_state(model, state, owner: str):
    """``read_state`` plus range checks: every entry finite and at most ``lie.MAX_MAGNITUDE``
    (beyond it the kinematics overflow); ``ValueError`` naming ``state.<attr>`` otherwise."""
    out = read_state(model, state)
    for attr, a in zip(("g", "V", "q", "qd"), out):
        if a.size and not np.abs(a).max() <= lie.MAX_MAGNITUDE:
            raise ValueError(f"{owner}: state.{attr} has a NaN, Inf or an entry beyond "
                             f"{lie.MAX_MAGNITUDE:g} in magnitude")
    return out


def checked_output(owner: str, tau, base_wrench):
    """``(tau, base_wrench)`` if both are finite, else a ``ValueError`` naming the output."""
    for name, a in (("tau", tau), ("base_wrench", base_wrench)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{owner}: the computed {name} is not finite for this state "
                             f"(it overflows); check the state and the gains")
    return tau, base_wrench


class CheckedController(Controller):
    """A controller whose law runs in numpy on a checked state: :meth:`compute` reads the
    state with :func:`checked_state` and the reference with ``as_reference``, calls the
    subclass's ``_law(t, state, model, g, V, q, qd, ref)`` with numpy's floating-point
    warnings off and returns its ``(tau, base_wrench)`` through :func:`checked_output` (an
    overflow is that ``ValueError``, not a warning)."""

    def compute(self, t, state, reference):
        with np.errstate(all="ignore"):     # an overflow is reported by checked_output
            model = self._require_reset()
            g, V, q, qd = checked_state(model, state, self.name)
            ref = as_reference(reference)
            return checked_output(self.name, *self._law(t, state, model, g, V, q, qd, ref))

    def _law(self, t, state, model, g, V, q, qd, ref):  # pragma: no cover - overridden
        raise NotImplementedError


class PDGravityController(CheckedController):
    """PD + gravity/buoyancy compensation.  Parameters: ``mode`` [``free_floating``] or
    ``actuated_base``; ``kp``, ``kd`` (scalars or n-lists, N·m/rad; None = derived);
    ``kp_lin``, ``kp_ang``, ``kd_lin``, ``kd_ang`` (3-lists/scalars) or ``kp_base``, ``kd_base``
    (6-lists/scalars) for the vehicle; ``omega`` [5.0] and ``zeta`` [1.0] for derived gains."""

    name = "pd_gravity"
    PARAMS = {"mode": "free_floating", "kp": None, "kd": None, "omega": 5.0, "zeta": 1.0,
              "kp_lin": None, "kp_ang": None, "kd_lin": None, "kd_ang": None,
              "kp_base": None, "kd_base": None}
    MODES = ("free_floating", "actuated_base")

    def _check_params(self, params):
        self._choice("mode", self.MODES)
        for k in ("omega", "zeta"):
            gain_vector(params[k], 1, k, self.name)
        self.kp_base = pose_gains(params, self.name, "kp_lin", "kp_ang", "kp_base", None)
        self.kd_base = pose_gains(params, self.name, "kd_lin", "kd_ang", "kd_base", None)

    def _reset(self, model, state):
        self._hold(model, state)
        w, z = float(self.params["omega"]), float(self.params["zeta"])
        free = self.params["mode"] == "free_floating" or model.b == 0
        t = lp.lp_terms(model, self.q_hold, derivatives=False)
        mjj = np.diag(t.Mhat if free else t.Mm)
        for key, scale in (("kp", w * w), ("kd", 2.0 * z * w)):
            val = self.params[key]
            setattr(self, key, scale * mjj if val is None
                    else gain_vector(val, model.n, key, self.name))
        m0 = np.zeros(6)
        if model.b:
            m0[list(model.group.axes)] = np.diag(t.M0)
        self.kp_b = w * w * m0 if self.kp_base is None else self.kp_base
        self.kd_b = 2.0 * z * w * m0 if self.kd_base is None else self.kd_base

    def _law(self, t, state, model, g, V, q, qd, ref):
        q_d, qd_d, _ = joint_reference(ref.joint, t, model.n, self.q_hold)
        zb, zn = np.zeros(model.b), np.zeros(model.n)
        # static compensation: the known wrenches evaluated at rest (buoyancy, not damping)
        f_ext, frame_w = known_wrenches(self, t, State(t, g, zb, q, zn))
        pd = self.kp * (q_d - q) + self.kd * (qd_d - qd)
        if self.params["mode"] == "free_floating" or model.b == 0:
            tau_s = free_floating_terms(model, g, zb, q, zn, f_ext, frame_w).bias
            return pd + tau_s, zb
        f_s, tau_s = model.inverse_dynamics(g, zb, q, zn, zb, zn, frame_wrenches=frame_w)
        grp = model.group
        g_d, V_d, _ = pose_reference(ref.base, t, grp, self.g_hold)
        E = lie.se3_inv(g_d) @ g
        X = lie.se3_log(E)
        W = grp.embed(V) - lie.Ad_inv(E) @ V_d
        return pd + tau_s, f_s - f_ext - grp.project(self.kp_b * X + self.kd_b * W)
