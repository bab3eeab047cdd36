"""Compiled control laws evaluated inside the engine's RKMK stages.

A controller that can be written as a fixed formula over the O(n) recursions hands the engine
its data (:class:`vm_dynamics.control.compiled.CompiledLaw`); the engine then evaluates the law
at every stage state in compiled code, with no Python call per stage
(:func:`vm_dynamics.dynamics.fast.kernels.engine.engine_rollout_law`).

The only law so far is joint-space computed torque with the vehicle free
(``computed_torque``, ``mode: free_floating``; or a fixed base):
``q̈_cmd = q̈_d + K_d(q̇_d − q̇) + K_p(q_d − q)`` and ``τ`` from the free-floating inverse
dynamics (:func:`.rnea.free_floating_inverse_dynamics`, the arm equation (LP-2); docs/corrections.md,
"Inverse dynamics"), with no base wrench commanded.  The reference is piecewise quintic
(:class:`vm_dynamics.control.references.JointWaypoints`; a set-point is one piece held).
"""
from __future__ import annotations

import numpy as np

from .jit import OPT, njit
from .rnea import free_floating_inverse_dynamics

__all__ = ["joint_reference", "free_floating_computed_torque"]


@njit(**OPT)
def joint_reference(times, coef, first, last, t, q_d, qd_d, qdd_d):
    """``(q_d, q̇_d, q̈_d)`` at ``t`` of the piecewise quintic ``Σ_i coef[k, i] s^i``
    (``s = t − times[k]``); ``first`` before ``times[0]`` (or with one time), ``last`` after
    ``times[-1]``, both at rest — :meth:`JointWaypoints.__call__` in compiled form."""
    n = first.shape[0]
    K = times.shape[0]
    if K == 1 or t <= times[0] or t >= times[K - 1]:
        src = first if (K == 1 or t <= times[0]) else last
        for j in range(n):
            q_d[j] = src[j]
            qd_d[j] = 0.0
            qdd_d[j] = 0.0
        return
    k = np.searchsorted(times, t, side="right") - 1
    s = t - times[k]
    s2 = s * s
    s3 = s2 * s
    s4 = s3 * s
    s5 = s3 * s2
    for j in range(n):
        c0, c1, c2 = coef[k, 0, j], coef[k, 1, j], coef[k, 2, j]
        c3, c4, c5 = coef[k, 3, j], coef[k, 4, j], coef[k, 5, j]
        q_d[j] = c0 + c1 * s + c2 * s2 + c3 * s3 + c4 * s4 + c5 * s5
        qd_d[j] = c1 + 2.0 * c2 * s + 3.0 * c3 * s2 + 4.0 * c4 * s3 + 5.0 * c5 * s4
        qdd_d[j] = 2.0 * c2 + 6.0 * c3 * s + 12.0 * c4 * s2 + 20.0 * c5 * s3


@njit(**OPT)
def free_floating_computed_torque(C, times, coef, first, last, kp, kd, t, g, V, q, qd, tau,
                                  work):
    """Joint efforts of free-floating computed torque at the state ``(g, V, q, q̇)`` and time
    ``t`` into ``tau``; ``work`` holds ``4n + b`` floats.  Returns a status code (0 = ok)."""
    parent, jtype, xi, inert, rootx, axes, grav = C
    n = q.shape[0]
    b = axes.shape[0]
    q_d, qd_d, qdd_d = work[:n], work[n:2 * n], work[2 * n:3 * n]
    out = work[3 * n:4 * n + b]
    joint_reference(times, coef, first, last, t, q_d, qd_d, qdd_d)
    for j in range(n):        # q̈_cmd, in place of q̈_d
        qdd_d[j] = qdd_d[j] + kd[j] * (qd_d[j] - qd[j]) + kp[j] * (q_d[j] - q[j])
    zero_b = np.zeros(b)
    no_frames = np.zeros(0, dtype=np.int64)
    st = free_floating_inverse_dynamics(parent, jtype, xi, inert, rootx, axes, grav, g, V, q,
                                        qd, qdd_d, zero_b, no_frames, np.zeros((0, 6)), out)
    if st != 0:
        return st
    for j in range(n):
        tau[j] = out[b + j]
        if not np.isfinite(tau[j]):
            return 2
    return 0
