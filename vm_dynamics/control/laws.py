"""Compiled control laws evaluated inside the engine's RKMK stages.

A controller that can be written as a fixed formula over the O(n) recursions hands the engine
its data (:class:`vm_dynamics.control.compiled.CompiledLaw`, whose :class:`LawParams` this
module's kernel takes); the engine then evaluates the law at every stage state in compiled
code, with no Python call per stage (:func:`vm_dynamics.sim.kernels.engine_rollout_law`).

The law is computed torque (:mod:`vm_dynamics.control.computed_torque`), with the joint
command ``q̈_cmd = q̈_d + K_d(q̇_d − q̇) + K_p(q_d − q)`` and

* ``free_floating`` (or a fixed base): ``τ`` from the free-floating inverse dynamics
  (:func:`.rnea.free_floating_inverse_dynamics`, the arm equation (LP-2); docs/corrections.md,
  "Inverse dynamics"), no base wrench;
* ``actuated_base`` with a constant pose reference ``g_d``: the vehicle acceleration of
  :func:`vm_dynamics.control.computed_torque.se3_tracking_acceleration` (exponential
  coordinates ``X = log(g_d⁻¹g)``, ``Ẍ + K_dẊ + K_pX = 0``, or the geometric PD), then RNEA
  for ``[f₀; τ]`` and the base wrench ``f₀`` less the known environment wrench.

The joint reference is piecewise quintic (:class:`~vm_dynamics.control.references.JointWaypoints`;
a set-point or a hold is one piece) or a sinusoid (:class:`~vm_dynamics.control.references.JointSinusoid`).
The known external wrenches (``use_env``) are the engine's force elements
(:func:`vm_dynamics.forces.kernels.add_wrenches`).

Integer options ``li = [mode, joint_kind, base_law, use_env]``: mode 0 free-floating,
1 actuated base; joint_kind 0 quintic pieces, 1 sinusoid; base_law 0 exponential, 1 pd.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..dynamics.fast.kernels.algebra import check_pose, cross, dexp_inv_apply
from ..dynamics.fast.kernels.jit import OPT, njit
from ..dynamics.fast.kernels.kinematics import body_inertia, kinematics, workspace
from ..dynamics.fast.kernels.rnea import (
    all_finite,
    composite_inertia,
    free_floating_solve,
    rnea_backward,
    rnea_forward,
)
from ..dynamics.fast.records import ModelConstants, Workspace
from ..forces.kernels import add_wrenches

__all__ = ["LawParams", "LawWork", "joint_reference", "se3_log", "setpoint_acceleration",
           "setpoint_acceleration_into", "law_work", "shared_kinematics", "computed_torque",
           "computed_torque_into", "computed_torque_stage", "SCRATCH"]


class LawParams(NamedTuple):
    """Computed torque as data: the controller's model ``model`` (its own, possibly
    mismatched, :class:`~vm_dynamics.dynamics.fast.records.ModelConstants`), the
    options ``li`` (module docstring), the joint reference ``times, coef, first, last, osc``
    (:func:`joint_reference`), the joint gains ``kp, kd``, the constant vehicle pose reference
    ``gd`` and its gains ``kp6, kd6``."""

    model: ModelConstants
    li: np.ndarray
    times: np.ndarray
    coef: np.ndarray
    first: np.ndarray
    last: np.ndarray
    osc: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    gd: np.ndarray
    kp6: np.ndarray
    kd6: np.ndarray


class LawWork(NamedTuple):
    """Everything :func:`computed_torque_into` writes, allocated once (:func:`law_work`) so
    that a stage allocates nothing, and ``share``, what the law takes of the plant's kinematics
    (:func:`shared_kinematics`): the recursions' workspace ``ws`` (on the controller's
    model), the joint reference and command ``q_d, qd_d, qdd_cmd`` (the model's joints),
    ``qdd_tree`` and ``out`` (``[base; tree joints]``), zeros ``zb`` (b), the force elements'
    wrenches ``ext, cons`` (per body) and ``w6``, the vehicle's ``V6, a6`` (6) and ``Vdot``
    (b), ``Ic`` (6×6, the sum of the body inertias when the plant's is not taken) and ``tmp``
    (:data:`SCRATCH` numbers for :func:`setpoint_acceleration_into`)."""

    share: int
    ws: Workspace
    q_d: np.ndarray
    qd_d: np.ndarray
    qdd_cmd: np.ndarray
    qdd_tree: np.ndarray
    out: np.ndarray
    zb: np.ndarray
    ext: np.ndarray
    cons: np.ndarray
    w6: np.ndarray
    V6: np.ndarray
    a6: np.ndarray
    Vdot: np.ndarray
    Ic: np.ndarray
    tmp: np.ndarray


#: Length of the scratch of :func:`setpoint_acceleration_into`.
SCRATCH = 256

_EPS_SMALL = 1e-4      # as vm_dynamics.core.lie: Taylor series below this angle


@njit(**OPT)
def joint_reference(kind, times, coef, first, last, osc, t, q_d, qd_d, qdd_d):
    """``(q_d, q̇_d, q̈_d)`` at ``t``.  kind 0: the piecewise quintic ``Σ_i coef[k, i] s^i``
    (``s = t − times[k]``), ``first`` before ``times[0]`` (or with one time), ``last`` after
    ``times[-1]``, both at rest (:meth:`JointWaypoints.__call__`); kind 1:
    ``first + a sin(2πf t + φ)`` with ``osc = [a; f; φ]`` (:meth:`JointSinusoid.__call__`)."""
    n = first.shape[0]
    if kind == 1:
        for j in range(n):
            w = 2.0 * np.pi * osc[1, j]
            arg = w * t + osc[2, j]
            s, c = np.sin(arg), np.cos(arg)
            q_d[j] = first[j] + osc[0, j] * s
            qd_d[j] = osc[0, j] * w * c
            qdd_d[j] = -osc[0, j] * w * w * s
        return
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


@njit(inline="always", **OPT)
def _sym(R, c, r, q):
    """``(R + Rᵀ − 2cI)[r, q] / (2(1 − c))``: the axis matrix of a rotation near π."""
    return (R[r, q] + R[q, r] - (2.0 * c if r == q else 0.0)) / (2.0 * (1.0 - c))


@njit(**OPT)
def _so3_log(R):
    """Rotation vector of ``R`` (angle in [0, π]), as :func:`vm_dynamics.core.lie.so3_log`."""
    s0 = 0.5 * (R[2, 1] - R[1, 2])
    s1 = 0.5 * (R[0, 2] - R[2, 0])
    s2 = 0.5 * (R[1, 0] - R[0, 1])
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    sin_t = np.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
    theta = np.arctan2(sin_t, c)
    if theta < _EPS_SMALL:
        f = 1.0 + theta * theta / 6.0
        return f * s0, f * s1, f * s2
    if np.pi - theta > 1e-3:
        f = theta / sin_t
        return f * s0, f * s1, f * s2
    # near π: the axis from the symmetric part (R + Rᵀ − 2cI) / (2(1 − c))
    k = 0
    for r in range(1, 3):
        if _sym(R, c, r, r) > _sym(R, c, k, k):
            k = r
    S0, S1, S2 = _sym(R, c, 0, k), _sym(R, c, 1, k), _sym(R, c, 2, k)
    big = max(abs(S0), abs(S1), abs(S2))
    a0, a1, a2 = S0 / big, S1 / big, S2 / big
    if a0 * s0 + a1 * s1 + a2 * s2 < 0.0:
        a0, a1, a2 = -a0, -a1, -a2
    f = theta / np.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    return f * a0, f * a1, f * a2


@njit(**OPT)
def se3_log(g, X):
    """Twist ``X = [v; ω]`` with ``exp(X) = g`` (angle in [0, π]), as
    :func:`vm_dynamics.core.lie.se3_log`: ``ω = log R``, ``v = J_l(ω)⁻¹ p``."""
    f0, f1, f2 = _so3_log(g)
    t2 = f0 * f0 + f1 * f1 + f2 * f2
    th = np.sqrt(t2)
    x0, x1, x2 = cross(f0, f1, f2, g[0, 3], g[1, 3], g[2, 3])
    y0, y1, y2 = cross(f0, f1, f2, x0, x1, x2)
    if th < _EPS_SMALL:
        k = 1.0 / 12.0 + t2 / 720.0
    else:
        h = 0.5 * th
        k = (1.0 - h * np.cos(h) / np.sin(h)) / t2
    X[0] = g[0, 3] - 0.5 * x0 + k * y0
    X[1] = g[1, 3] - 0.5 * x1 + k * y1
    X[2] = g[2, 3] - 0.5 * x2 + k * y2
    X[3], X[4], X[5] = f0, f1, f2


@njit(**OPT)
def _ad(V, A):
    """``ad_V = [[ω~, v~], [0, ω~]]`` into ``A`` (6×6)."""
    for r in range(6):
        for c in range(6):
            A[r, c] = 0.0
    for blk in range(2):
        o = 3 * blk
        A[o + 0, o + 1], A[o + 0, o + 2] = -V[5], V[4]
        A[o + 1, o + 0], A[o + 1, o + 2] = V[5], -V[3]
        A[o + 2, o + 0], A[o + 2, o + 1] = -V[4], V[3]
    A[0, 4], A[0, 5] = -V[2], V[1]
    A[1, 3], A[1, 5] = V[2], -V[0]
    A[2, 3], A[2, 4] = -V[1], V[0]


@njit(**OPT)
def _dexp_drift(X, Xdot, out, tmp):
    """:func:`vm_dynamics.control.computed_torque.dexp_drift` (the same series, same stop);
    ``tmp``: 108 numbers of scratch."""
    P = tmp[0:36].reshape((6, 6))
    Q = tmp[36:72].reshape((6, 6))
    w, d, nd, nw = tmp[72:78], tmp[78:84], tmp[84:90], tmp[90:96]
    _ad(X, P)
    _ad(Xdot, Q)
    for r in range(6):
        w[r] = Xdot[r]
        d[r] = 0.0
        out[r] = 0.0
    xmax = 0.0
    for r in range(6):
        xmax = max(xmax, abs(Xdot[r]))
    fact = 1.0
    for k in range(1, 200):
        for r in range(6):
            a = 0.0
            b = 0.0
            for c in range(6):
                a += -Q[r, c] * w[c] - P[r, c] * d[c]
                b += -P[r, c] * w[c]
            nd[r] = a
            nw[r] = b
        fact *= k + 1
        tmax = 0.0
        omax = 0.0
        wmax = 0.0
        for r in range(6):
            d[r] = nd[r]
            w[r] = nw[r]
            out[r] += d[r] / fact
            tmax = max(tmax, abs(d[r] / fact))
            omax = max(omax, abs(out[r]))
            wmax = max(wmax, abs(w[r]))
        if k > 4 and tmax <= 1e-17 * (omax + 1e-300) and wmax / fact <= 1e-17 * (xmax + 1e-300):
            break


@njit(**OPT)
def _solve6(M, y, z):
    """``z = M⁻¹ y`` for a 6×6 ``M`` (Gaussian elimination with partial pivoting; ``M`` is
    overwritten); False if singular."""
    for r in range(6):
        z[r] = y[r]
    for c in range(6):
        p = c
        for r in range(c + 1, 6):
            if abs(M[r, c]) > abs(M[p, c]):
                p = r
        if M[p, c] == 0.0:
            return False
        if p != c:
            for q in range(6):
                M[c, q], M[p, q] = M[p, q], M[c, q]
            z[c], z[p] = z[p], z[c]
        for r in range(c + 1, 6):
            f = M[r, c] / M[c, c]
            for q in range(c, 6):
                M[r, q] -= f * M[c, q]
            z[r] -= f * z[c]
    for c in range(5, -1, -1):
        s = z[c]
        for q in range(c + 1, 6):
            s -= M[c, q] * z[q]
        z[c] = s / M[c, c]
    return True


@njit(**OPT)
def setpoint_acceleration(gd, g, V6, kp6, kd6, pd, out):
    """:func:`setpoint_acceleration_into` with its own scratch."""
    return setpoint_acceleration_into(gd, g, V6, kp6, kd6, pd, out, np.empty(SCRATCH))


@njit(**OPT)
def setpoint_acceleration_into(gd, g, V6, kp6, kd6, pd, out, tmp):
    """Commanded body acceleration for the constant pose ``gd`` (``V_d = V̇_d = 0``):
    :func:`vm_dynamics.control.computed_torque.se3_tracking_acceleration`, exponential
    (``pd`` False) or geometric PD; ``tmp``: :data:`SCRATCH` numbers of scratch.  Returns
    False if ``dexp`` is singular."""
    E = tmp[0:16].reshape((4, 4))
    X, mX, Xdot, y, e, col = tmp[16:22], tmp[22:28], tmp[28:34], tmp[34:40], tmp[40:46], \
        tmp[46:52]
    D = tmp[52:88].reshape((6, 6))
    for r in range(3):
        for c in range(3):
            E[r, c] = gd[0, r] * g[0, c] + gd[1, r] * g[1, c] + gd[2, r] * g[2, c]
        E[r, 3] = (gd[0, r] * (g[0, 3] - gd[0, 3]) + gd[1, r] * (g[1, 3] - gd[1, 3])
                   + gd[2, r] * (g[2, 3] - gd[2, 3]))
    se3_log(E, X)
    if pd:
        for r in range(6):
            out[r] = -kd6[r] * V6[r] - kp6[r] * X[r]
        return True
    for r in range(6):
        mX[r] = -X[r]
    dexp_inv_apply(mX, V6, Xdot)                 # Ẋ = dexp⁻¹_{−X} W (W = V: V_d = 0)
    for r in range(6):
        y[r] = -kd6[r] * Xdot[r] - kp6[r] * X[r]
        e[r] = 0.0
    for c in range(6):                           # dexp⁻¹_{−X}, column by column
        e[c] = 1.0
        dexp_inv_apply(mX, e, col)
        e[c] = 0.0
        for r in range(6):
            D[r, c] = col[r]
    if not _solve6(D, y, out):                   # dexp_{−X} y
        return False
    drift = tmp[88:94]
    _dexp_drift(X, Xdot, drift, tmp[94:202])
    for r in range(6):
        out[r] += drift[r]
    return True


@njit(**OPT)
def law_work(law, P):
    """A :class:`LawWork` for the law ``law`` run on the plant whose model record is ``P``
    (one set of allocations, reused by every :func:`computed_torque_into`; the kinematics
    shared by :func:`shared_kinematics`, checked here once)."""
    return _law_work(law, P.parent.shape[0], law.model.axes.shape[0],
                     shared_kinematics(P, law.model))


@njit(**OPT)
def _law_work(law, nt, b, share):
    """:func:`law_work` for a tree of ``nt`` joints, ``b`` vehicle freedoms."""
    n = law.first.shape[0]
    return LawWork(share, workspace(nt), np.empty(n), np.empty(n), np.empty(n), np.empty(nt),
                   np.empty(b + nt), np.zeros(b), np.empty((nt + 1, 6)), np.empty((nt + 1, 6)),
                   np.empty(6), np.empty(6), np.empty(6), np.empty(b), np.empty((6, 6)),
                   np.empty(SCRATCH))


@njit(**OPT)
def shared_kinematics(P, C):
    """What the controller's model ``C`` can take from the plant ``P``'s kinematics at the
    same configuration: 2 everything (same tree, joints and body inertias: poses, twists and
    inertias), 1 the geometry (same tree and joints, other inertias: poses and twists), 0
    nothing.  Compared entry by entry (a dispersed mass changes only the inertias)."""
    n = C.parent.shape[0]
    if P.parent.shape[0] != n or P.axes.shape[0] != C.axes.shape[0]:
        return 0
    for j in range(n):
        if P.parent[j] != C.parent[j] or P.jtype[j] != C.jtype[j]:
            return 0
        for r in range(6):
            if P.xi[j, r] != C.xi[j, r]:
                return 0
    for k in range(n + 1):
        for r in range(13):
            if P.inert[k, r] != C.inert[k, r]:
                return 1
    return 2


@njit(inline="always", **OPT)
def _law_kinematics(C, q, lw, plant):
    """The controller's kinematics at ``q`` (:func:`shared_kinematics`): its own into
    ``lw.ws`` (``lw.share`` 0), or a workspace whose poses and twists (and inertias, 2) are the
    plant's ``plant``, already at ``q``, with the body inertias of ``C`` recomputed (1)."""
    ws, share = lw.ws, lw.share
    if share == 0:
        kinematics(C, q, ws)
        return ws
    if share == 1:
        Rw, Pw, IA, inert = plant.Rw, plant.Pw, ws.IA, C.inert
        for k in range(q.shape[0] + 1):
            body_inertia(inert[k], Rw[k], Pw[k], IA[k])
        return Workspace(plant.Rw, plant.Pw, plant.S, IA, ws.vel, ws.cacc, ws.pA, ws.U, ws.aux,
                         ws.acc, ws.K, ws.rhs)
    return Workspace(plant.Rw, plant.Pw, plant.S, plant.IA, ws.vel, ws.cacc, ws.pA, ws.U,
                     ws.aux, ws.acc, ws.K, ws.rhs)


@njit(inline="always", **OPT)
def _take_off_elements(C, F, g, V, lw, ws):
    """Subtract the force elements' wrenches (:func:`vm_dynamics.forces.kernels.add_wrenches`,
    vehicle axes about the vehicle origin) from the wrenches the bodies need (``ws.pA`` after
    :func:`~vm_dynamics.dynamics.fast.kernels.rnea.rnea_forward`): the known part of the
    applied wrenches."""
    ext, cons, f = lw.ext, lw.cons, ws.pA
    for k in range(ext.shape[0]):
        for r in range(6):
            ext[k, r] = 0.0
            cons[k, r] = 0.0
    add_wrenches(F, C.axes, g, V, ws.Rw, ws.Pw, ext, cons, lw.w6)
    for k in range(ext.shape[0]):
        for r in range(6):
            f[k, r] -= ext[k, r] + cons[k, r]


@njit(inline="always", **OPT)
def _joint_command(law, t, q, qd, coupled, q_d, qd_d, qdd_cmd):
    """``q̈_cmd = q̈_d + K_d(q̇_d − q̇) + K_p(q_d − q)`` on the model's coordinates (the
    masters of the tree's ``q`` with mimic joints), into ``qdd_cmd``."""
    n = law.first.shape[0]
    masters, kp, kd = law.model.masters, law.kp, law.kd      # read once, not per joint
    joint_reference(law.li[1], law.times, law.coef, law.first, law.last, law.osc, t, q_d, qd_d,
                    qdd_cmd)
    for j in range(n):
        jj = masters[j] if coupled else j
        qdd_cmd[j] = qdd_cmd[j] + kd[j] * (qd_d[j] - qd[jj]) + kp[j] * (q_d[j] - q[jj])


@njit(inline="always", **OPT)
def _base_and_joints(law, F, g, V, qd, qdd_tree, lw, ws, Ic0, plant_Ic):
    """``lw.out = [V̇ or base wrench; τ_tree]`` of the law by its mode (module docstring), on
    the kinematics ``ws``; the free-floating mode's ``Σ_k I_k`` is ``Ic0`` if ``plant_Ic``,
    else summed from ``ws.IA`` into ``lw.Ic``.  Returns a status code."""
    C = law.model
    b = C.axes.shape[0]
    out = lw.out
    if law.li[0] == 0 or b == 0:
        rnea_forward(C, g, V, qd, lw.zb, qdd_tree, ws)
        if law.li[3]:
            _take_off_elements(C, F, g, V, lw, ws)
        if plant_Ic:
            return free_floating_solve(C, lw.zb, Ic0, out, ws)
        composite_inertia(ws.IA, lw.Ic)
        return free_floating_solve(C, lw.zb, lw.Ic, out, ws)
    V6, a6, Vdot = lw.V6, lw.a6, lw.Vdot
    for r in range(6):
        V6[r] = 0.0
    for r in range(b):
        V6[C.axes[r]] = V[r]
    if not setpoint_acceleration_into(law.gd, g, V6, law.kp6, law.kd6, law.li[2] == 1, a6,
                                      lw.tmp):
        return 3
    for r in range(b):
        Vdot[r] = a6[C.axes[r]]
    rnea_forward(C, g, V, qd, Vdot, qdd_tree, ws)
    if law.li[3]:
        _take_off_elements(C, F, g, V, lw, ws)
    rnea_backward(C, out, ws)
    return 0 if all_finite(out) else 2


@njit(**OPT)
def computed_torque(law, F, t, g, V, q, qd, tau, bw):
    """:func:`computed_torque_into` on its own work and kinematics (allocates them)."""
    lw = _law_work(law, q.shape[0], law.model.axes.shape[0], 0)
    return computed_torque_into(law, F, t, g, V, q, qd, tau, bw, lw, lw.ws)


@njit(inline="always", **OPT)
def computed_torque_into(law, F, t, g, V, q, qd, tau, bw, lw, plant):
    """:func:`computed_torque_stage` without the plant's composite inertia (the law sums its
    own)."""
    return computed_torque_stage(law, F, t, g, V, q, qd, tau, bw, lw, plant, lw.Ic, False)


@njit(inline="always", **OPT)
def computed_torque_stage(law, F, t, g, V, q, qd, tau, bw, lw, plant, Ic0, plant_Ic):
    """Efforts ``tau`` and base wrench ``bw`` of computed torque (:class:`LawParams` ``law``)
    at the state ``(g, V, q, q̇)`` and time ``t``, compensating the force elements ``F`` if
    ``law.li[3]`` (see the module docstring), on the work ``lw`` (:func:`law_work`): no
    allocation.  Inlined with its parts into the caller (the engine's stage loop): a compiled
    call taking these records costs more than the law's arithmetic (reference counts of every
    array field a callee reads, which the caller's own reads then pair up with).  ``plant``: a
    workspace holding the plant's kinematics at ``q``, of which the law takes what ``lw.share``
    (:func:`shared_kinematics`) says; ``Ic0``, if ``plant_Ic``, the plant's ``Σ_k I_k`` of those
    inertias, taken only when ``lw.share`` is 2 (the free-floating mode's locked inertia then
    costs no sum; :func:`.rnea.composite_inertia` gives the same numbers).  With mimic joints
    (``law.model.coupling = G``) ``q, q̇`` are the tree's, ``tau`` the model's (``τ = Gᵀτ_tree``
    for ``q̈_tree = G q̈_cmd``).  Returns a status code."""
    if not check_pose(g):
        return 1
    C = law.model
    Gc = C.coupling
    coupled = Gc.shape[0] > 0
    nt = q.shape[0]
    n = law.first.shape[0]
    b = C.axes.shape[0]
    qdd_cmd = lw.qdd_cmd
    _joint_command(law, t, q, qd, coupled, lw.q_d, lw.qd_d, qdd_cmd)
    qdd_tree = lw.qdd_tree
    for r in range(nt):
        if coupled:
            s = 0.0
            for j in range(n):
                s += Gc[r, j] * qdd_cmd[j]
            qdd_tree[r] = s
        else:
            qdd_tree[r] = qdd_cmd[r]
    ws = _law_kinematics(C, q, lw, plant)
    st = _base_and_joints(law, F, g, V, qd, qdd_tree, lw, ws, Ic0, plant_Ic and lw.share == 2)
    if st != 0:
        return st
    out = lw.out
    actuated = law.li[0] != 0
    for r in range(b):
        bw[r] = out[r] if actuated else 0.0
    for j in range(n):
        if coupled:
            s = 0.0
            for r in range(nt):
                s += Gc[r, j] * out[b + r]
            tau[j] = s
        else:
            tau[j] = out[b + j]
        if not np.isfinite(tau[j]):
            return 2
    return 0
