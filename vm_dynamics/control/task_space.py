"""End-effector pose tracking by resolved-acceleration control.

The end-effector body twist is ``V_𝔢 = J_{𝔢,0} 𝒱 + J_{𝔢,𝔪} q̇`` with the body Jacobian of paper
000 (92)–(93), corrected factor order (docs/corrections.md, "End-effector Jacobian"): ``J_{𝔢,0} = Ad⁻¹(g_𝔢⁰) ι₀``,
``J_{𝔢,𝔪} = Ad⁻¹(g_𝔢⁰) [S_k]`` (S_k the current joint twists in the vehicle frame).  Its
derivative is ``V̇_𝔢 = J_{𝔢,0}𝒱̇ + J_{𝔢,𝔪}q̈ + J̇z`` (:func:`jacobian_dot_z`).  The commanded
``V̇_𝔢`` comes from :func:`~vm_dynamics.control.computed_torque.se3_tracking_acceleration` on
the pose error ``log(g_d⁻¹ g_𝔢)``.

* ``free_floating``: vehicle unactuated.  The base acceleration is ``𝒱̇ = c_V − 𝒜q̈``
  (LP-1, LP-3), so ``V̇_𝔢 = J* q̈ + J_{𝔢,0}c_V + J̇z`` with the generalised Jacobian
  ``J* = J_{𝔢,𝔪} − J_{𝔢,0}𝒜`` (for zero momentum ``V_𝔢 = J*q̇``).  ``q̈`` is solved by damped
  least squares and realised exactly by the free-floating computed torque.
* ``actuated_base``: the vehicle tracks ``reference.base`` (or holds its pose) with the
  exponential-coordinates law; the arm resolves ``J_{𝔢,𝔪}q̈ = V̇_𝔢 − J_{𝔢,0}𝒱̇_cmd − J̇z``;
  ``(base_wrench, τ)`` from the full inverse dynamics.

Redundancy: ``q̈ = J⁺r + (I − J⁺J) q̈₀`` with ``q̈₀`` a joint-space PD toward ``reference.joint``
(or the reset posture).  ``J⁺ = V diag(σ/(σ² + λ²)) Uᵀ`` with ``λ² = λ_max²(1 − (σ_min/ε)²)``
when ``σ_min < ε`` and 0 otherwise (exact away from singular configurations).
"""
from __future__ import annotations

import numpy as np

from ..dynamics import lp
from ..dynamics.lp import jacobian_dot_z  # noqa: F401  (public here too; the algorithm lives in lp)
from .base import gain_vector, known_wrenches, pose_gains
from .computed_torque import (
    free_floating_terms,
    joint_reference,
    pose_reference,
    se3_tracking_acceleration,
)
from .pd_gravity import CheckedController

__all__ = ["TaskSpaceController", "jacobian_dot_z", "damped_pinv"]


def damped_pinv(J: np.ndarray, lam_max: float, eps: float):
    """Damped pseudo-inverse with damping only near singularities (Nakamura; Maciejewski)."""
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    smin = s[-1] if J.shape[0] <= J.shape[1] else 0.0
    lam2 = 0.0 if smin >= eps else lam_max ** 2 * (1.0 - (smin / eps) ** 2)
    return (Vt.T * (s / (s * s + lam2))) @ U.T


class TaskSpaceController(CheckedController):
    """Resolved-acceleration end-effector pose control (see the module docstring).

    Parameters: ``mode`` [``free_floating``] or ``actuated_base``; ``frame`` [last URDF frame];
    ``kp_lin``, ``kp_ang`` [25], ``kd_lin``, ``kd_ang`` [10] (or ``kp_ee``/``kd_ee`` 6-lists) for
    the end effector; ``kp_base`` [25], ``kd_base`` [10] (scalars or 6-lists) for the vehicle in
    ``actuated_base`` mode; ``kp_null`` [4], ``kd_null`` [4] joint posture gains in the null
    space; ``damping`` λ_max [0.05] and ``sigma_threshold`` ε [0.05] of the damped least squares;
    ``law`` [``exponential``] or ``pd``.
    """

    name = "task_space"
    PARAMS = {"mode": "free_floating", "frame": None,
              "kp_lin": None, "kp_ang": None, "kd_lin": None, "kd_ang": None,
              "kp_ee": None, "kd_ee": None, "kp_base": 25.0, "kd_base": 10.0,
              "kp_null": 4.0, "kd_null": 4.0, "damping": 0.05, "sigma_threshold": 0.05,
              "law": "exponential"}
    MODES = ("free_floating", "actuated_base")

    def _check_params(self, params):
        self._choice("mode", self.MODES)
        self._choice("law", ("exponential", "pd"))
        self.kp_ee = pose_gains(params, self.name, "kp_lin", "kp_ang", "kp_ee", 25.0)
        self.kd_ee = pose_gains(params, self.name, "kd_lin", "kd_ang", "kd_ee", 10.0)
        self.kp_b = gain_vector(params["kp_base"], 6, "kp_base", self.name)
        self.kd_b = gain_vector(params["kd_base"], 6, "kd_base", self.name)
        for k in ("kp_null", "kd_null", "damping", "sigma_threshold"):
            gain_vector(params[k], 1, k, self.name)
        if params["frame"] is not None and not isinstance(params["frame"], str):
            raise ValueError(f"{self.name}: parameter 'frame' must be a frame name")

    def _reset(self, model, state):
        frame = self.params["frame"] or model.frame_names[-1]
        if frame not in model.frame_body:
            raise ValueError(f"{self.name}: parameter 'frame'={frame!r} is not a frame of the "
                             f"model; frames are {', '.join(model.frame_names)}")
        self.frame = frame
        self.kp_n = gain_vector(self.params["kp_null"], model.n, "kp_null", self.name)
        self.kd_n = gain_vector(self.params["kd_null"], model.n, "kd_null", self.name)
        self._hold(model, state)
        self.ee_hold = self.g_hold @ model.frame_pose(self.q_hold, frame)

    def _law(self, t, state, model, g, V, q, qd, ref):
        terms = lp.lp_terms(model, q)
        kin = terms.kin
        J0, Jm = lp.frame_jacobian(model, kin, self.frame)
        g_e = g @ lp.frame_pose_vehicle(model, kin, self.frame)
        V_e = J0 @ V + Jm @ qd
        g_d, V_d, Vdot_d = pose_reference(ref.ee, t, None, self.ee_hold, "ee")
        Vdot_e, _, _ = se3_tracking_acceleration(g_e, V_e, g_d, V_d, Vdot_d, self.kp_ee,
                                                 self.kd_ee, self.params["law"])
        r = Vdot_e - jacobian_dot_z(model, kin, self.frame, V, qd)
        q_d, qd_d, qdd_d = joint_reference(ref.joint, t, model.n, self.q_hold)
        qdd0 = qdd_d + self.kd_n * (qd_d - qd) + self.kp_n * (q_d - q)
        f_ext, frame_w = known_wrenches(self, t, state)
        lam, eps = float(self.params["damping"]), float(self.params["sigma_threshold"])
        if self.params["mode"] == "free_floating" or model.b == 0:
            ff = free_floating_terms(model, g, V, q, qd, f_ext, frame_w, terms=terms)
            Jstar = Jm - J0 @ ff.A                                   # generalised Jacobian
            Jp = damped_pinv(Jstar, lam, eps)
            qdd = Jp @ (r - J0 @ ff.cV) + qdd0 - Jp @ (Jstar @ qdd0)
            return ff.Mhat @ qdd + ff.bias, np.zeros(model.b)
        grp = model.group
        gb_d, Vb_d, Vdotb_d = pose_reference(ref.base, t, grp, self.g_hold)
        Vdot6, _, _ = se3_tracking_acceleration(g, grp.embed(V), gb_d, Vb_d, Vdotb_d, self.kp_b,
                                                self.kd_b, self.params["law"])
        Vdot_b = grp.project(Vdot6)
        Jp = damped_pinv(Jm, lam, eps)
        qdd = Jp @ (r - J0 @ Vdot_b) + qdd0 - Jp @ (Jm @ qdd0)
        f0, tau = lp.inverse_dynamics(model, g, V, q, qd, Vdot_b, qdd,
                                      frame_wrenches=model.checked_frame_wrenches(frame_w), terms=terms)
        return tau, f0 - f_ext
