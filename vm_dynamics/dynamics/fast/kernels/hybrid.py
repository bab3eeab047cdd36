"""Hybrid dynamics: some joints kinematically driven (their acceleration given), the vehicle and
the other joints free (their efforts given), by the articulated-body recursion of Featherstone,
*Rigid Body Dynamics Algorithms* (2008), §9.2, in the vehicle frame of :mod:`.aba`.

With the mass matrix (64) partitioned into the unknowns ``x`` (the vehicle's ι₀V̇ and the free
joints' q̈_f) and the driven joints ``p``, the equations of motion ``M a + h = [bw; τ]`` split
into ``M_xx a_x = f_x − h_x − M_xp q̈_p`` and ``τ_p = M_px a_x + M_pp q̈_p + h_p``.  The
recursion solves both in O(n) without forming M: leaves → root, a free joint passes its child's
articulated inertia reduced by its pivot (as the ABA), a driven joint passes it whole (the joint
transmits every acceleration) together with the bias ``I^A_k (c_j + S_j q̈_j)``; root → leaves,
a free joint's q̈ comes from its pivot, a driven joint's effort is the force it transmits,
``τ_j = S_jᵀ(I^A_k a_k + p^A_k)``.  All joints free is the ABA (:func:`.aba.aba_core`), all
driven is the free-floating inverse dynamics (:func:`.rnea.free_floating_inverse_dynamics`).

The impulsive variant (:func:`driven_impulse`) is the same recursion without velocities, gravity
or external wrenches: ``M_xx Δx = −M_xp Δq̇_p`` gives the jumps of the vehicle twist and of the
free joints' velocities when the driven joints' velocities jump by ``Δq̇_p`` at a constant
configuration, with no impulse on the vehicle or on the free joints, so the total momentum is
unchanged.  Status codes as in :mod:`.aba`.
"""
from __future__ import annotations

import numpy as np

from .aba import free_joint_backward, root_solve, velocity_pass
from .algebra import check_pose
from .jit import OPT, njit
from .kinematics import add_external, gravity_local, kinematics, workspace

__all__ = ["hybrid_core", "hybrid_dynamics", "driven_impulse"]


# complexity: compiled kernel: the three passes stay in one function, as aba_core
@njit(**OPT)
def hybrid_core(C, gloc, V, qd, tau, qdd, driven, ext, out, eff, ws):  # noqa: C901
    """Hybrid dynamics after :func:`.kinematics.kinematics` (``ws.IA`` holds the body inertias
    on entry and the articulated ones on return), with the external wrenches ``ext[k]`` summed
    per body (vehicle axes, about the vehicle origin) and gravity ``gloc`` = Rᵀa.  Joint j is
    driven if ``driven[j]``: its acceleration is ``qdd[j]``; otherwise its effort is
    ``tau[j]``.  Writes ``[V̇; q̈]`` into ``out`` (``q̈_j = qdd[j]`` at driven joints) and the
    effort of every joint into ``eff`` (``tau[j]`` at free ones); returns a status code.  The
    velocity pass and a free joint's backward step are the ABA's (:func:`.aba.velocity_pass`,
    :func:`.aba.free_joint_backward`: the bias forces from the compact body inertias, the
    symmetric update of I^A)."""
    parent, rootx, axes = C.parent, C.rootx, C.axes
    S, IA, vel, cacc, pA, U, aux, acc, K, rhs = ws.S, ws.IA, ws.vel, ws.cacc, ws.pA, ws.U, \
        ws.aux, ws.acc, ws.K, ws.rhs
    n = qd.shape[0]
    b = axes.shape[0]
    velocity_pass(parent, rootx, axes, V, qd, ext, S, IA, vel, cacc, pA, rhs)
    # leaves → root: articulated inertias I^A and bias forces p^A
    for j in range(n - 1, -1, -1):
        k = j + 1
        p = parent[j]
        if driven[j]:
            Ik = IA[k]
            Ip = IA[p]
            a = qdd[j]
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += Ik[r, c] * (cacc[j, c] + S[j, c] * a)
                    Ip[r, c] += Ik[r, c]
                pA[p, r] += pA[k, r] + s
            continue
        if not free_joint_backward(tau, S, IA, cacc, pA, U, aux, rhs, j, k, p):
            return 3
    # the vehicle: ι₀ᵀ (I^A₀ + M_A) ι₀ V̇ = ι₀ᵀ (I^A₀ a_g − p^A₀); a₀ = ι₀V̇ − a_g
    g0, g1, g2 = gloc[0], gloc[1], gloc[2]
    I0 = IA[0]
    for r in range(6):
        acc[0, r] = 0.0
    if b > 0:
        if not root_solve(rootx, axes, I0, gloc, pA, K, rhs):
            return 3
        for r in range(b):
            acc[0, axes[r]] = rhs[r]
            out[r] = rhs[r]
    acc[0, 0] -= g0
    acc[0, 1] -= g1
    acc[0, 2] -= g2
    # root → leaves: accelerations, and the driven joints' efforts
    for j in range(n):
        k = j + 1
        p = parent[j]
        for r in range(6):
            acc[k, r] = acc[p, r] + cacc[j, r]
        if driven[j]:
            a = qdd[j]
            f = 0.0
            for r in range(6):
                acc[k, r] += S[j, r] * a
            for r in range(6):
                s = pA[k, r]
                for c in range(6):
                    s += IA[k, r, c] * acc[k, c]
                f += S[j, r] * s
            out[b + j] = a
            eff[j] = f
            continue
        s = 0.0
        for r in range(6):
            s += U[j, r] * acc[k, r]
        a = (aux[j, 1] - s) * aux[j, 0]
        for r in range(6):
            acc[k, r] += S[j, r] * a
        out[b + j] = a
        eff[j] = tau[j]
    for i in range(b + n):
        if not np.isfinite(out[i]):
            return 2
    for j in range(n):
        if not np.isfinite(eff[j]):
            return 2
    return 0


@njit(**OPT)
def hybrid_dynamics(C, g, V, q, qd, tau, qdd, driven, bw, fw_body, fw, out, eff):
    """``[V̇; q̈]`` into ``out`` and the joint efforts into ``eff`` at the state
    ``(g, V, q, q̇)``: the driven joints (``driven[j]`` true) accelerate by ``qdd[j]``, the
    free ones are pushed by ``tau[j]``, the vehicle by ``bw`` and the frame wrenches ``fw`` on
    the bodies ``fw_body`` (as :func:`.aba.forward_dynamics`); a status code."""
    if not check_pose(g):
        return 1
    n = q.shape[0]
    ws = workspace(n)
    gloc = np.empty(3)
    gravity_local(g, C.grav, gloc)
    kinematics(C, q, ws)
    ext = np.zeros((n + 1, 6))
    add_external(C.axes, bw, fw_body, fw, ws.Rw, ws.Pw, ext, 1.0)
    return hybrid_core(C, gloc, V, qd, tau, qdd, driven, ext, out, eff, ws)


@njit(**OPT)
def driven_impulse(C, q, dqd, driven, out, eff):
    """Velocity jumps at the configuration ``q`` when the driven joints' velocities jump by
    ``dqd[j]`` (``driven[j]`` true) with no impulse on the vehicle or the free joints:
    ``[ΔV; Δq̇]`` into ``out`` (``Δq̇_j = dqd[j]`` at driven joints) and the driven joints'
    impulses into ``eff`` (zero at free ones).  The recursion of :func:`hybrid_core` at zero
    velocity, gravity and external wrenches, whose accelerations solve ``M Δν = ι``."""
    n = q.shape[0]
    b = C.axes.shape[0]
    ws = workspace(n)
    kinematics(C, q, ws)
    zero_n = np.zeros(n)
    return hybrid_core(C, np.zeros(3), np.zeros(b), zero_n, zero_n, dqd, driven,
                       np.zeros((n + 1, 6)), out, eff, ws)
