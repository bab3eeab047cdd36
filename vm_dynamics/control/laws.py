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

from ..dynamics.fast.kernels.algebra import cross, dexp_inv_apply
from ..dynamics.fast.kernels.jit import OPT, njit
from ..dynamics.fast.kernels.kinematics import kinematics, workspace
from ..dynamics.fast.kernels.rnea import free_floating_inverse_dynamics, inverse_dynamics
from ..dynamics.fast.records import ModelConstants
from ..forces.kernels import add_wrenches

__all__ = ["LawParams", "joint_reference", "se3_log", "setpoint_acceleration",
           "computed_torque"]


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


@njit(**OPT)
def _so3_log(R, w):
    """Rotation vector of ``R`` (angle in [0, π]), as :func:`vm_dynamics.core.lie.so3_log`."""
    s0 = 0.5 * (R[2, 1] - R[1, 2])
    s1 = 0.5 * (R[0, 2] - R[2, 0])
    s2 = 0.5 * (R[1, 0] - R[0, 1])
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    sin_t = np.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
    theta = np.arctan2(sin_t, c)
    if theta < _EPS_SMALL:
        f = 1.0 + theta * theta / 6.0
        w[0], w[1], w[2] = f * s0, f * s1, f * s2
        return
    if np.pi - theta > 1e-3:
        f = theta / sin_t
        w[0], w[1], w[2] = f * s0, f * s1, f * s2
        return
    # near π: the axis from the symmetric part (R + Rᵀ − 2cI) / (2(1 − c))
    S = np.empty((3, 3))
    for r in range(3):
        for q in range(3):
            S[r, q] = (R[r, q] + R[q, r] - (2.0 * c if r == q else 0.0)) / (2.0 * (1.0 - c))
    k = 0
    for r in range(1, 3):
        if S[r, r] > S[k, k]:
            k = r
    big = max(abs(S[0, k]), abs(S[1, k]), abs(S[2, k]))
    a0, a1, a2 = S[0, k] / big, S[1, k] / big, S[2, k] / big
    if a0 * s0 + a1 * s1 + a2 * s2 < 0.0:
        a0, a1, a2 = -a0, -a1, -a2
    f = theta / np.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    w[0], w[1], w[2] = f * a0, f * a1, f * a2


@njit(**OPT)
def se3_log(g, X):
    """Twist ``X = [v; ω]`` with ``exp(X) = g`` (angle in [0, π]), as
    :func:`vm_dynamics.core.lie.se3_log`: ``ω = log R``, ``v = J_l(ω)⁻¹ p``."""
    w = np.empty(3)
    _so3_log(g[:3, :3], w)
    f0, f1, f2 = w[0], w[1], w[2]
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
def _dexp_drift(X, Xdot, out):
    """:func:`vm_dynamics.control.computed_torque.dexp_drift` (the same series, same stop)."""
    P = np.empty((6, 6))
    Q = np.empty((6, 6))
    _ad(X, P)
    _ad(Xdot, Q)
    w = Xdot.copy()
    d = np.zeros(6)
    nd = np.empty(6)
    nw = np.empty(6)
    for r in range(6):
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
def _solve6(A, y, z):
    """``z = A⁻¹ y`` for a 6×6 ``A`` (Gaussian elimination with partial pivoting); False if
    singular."""
    M = A.copy()
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
    """Commanded body acceleration for the constant pose ``gd`` (``V_d = V̇_d = 0``):
    :func:`vm_dynamics.control.computed_torque.se3_tracking_acceleration`, exponential
    (``pd`` False) or geometric PD.  Returns False if ``dexp`` is singular."""
    E = np.empty((4, 4))
    for r in range(3):
        for c in range(3):
            E[r, c] = gd[0, r] * g[0, c] + gd[1, r] * g[1, c] + gd[2, r] * g[2, c]
        E[r, 3] = (gd[0, r] * (g[0, 3] - gd[0, 3]) + gd[1, r] * (g[1, 3] - gd[1, 3])
                   + gd[2, r] * (g[2, 3] - gd[2, 3]))
    X = np.empty(6)
    se3_log(E, X)
    if pd:
        for r in range(6):
            out[r] = -kd6[r] * V6[r] - kp6[r] * X[r]
        return True
    mX = -X
    Xdot = np.empty(6)
    dexp_inv_apply(mX, V6, Xdot)                 # Ẋ = dexp⁻¹_{−X} W (W = V: V_d = 0)
    y = np.empty(6)
    for r in range(6):
        y[r] = -kd6[r] * Xdot[r] - kp6[r] * X[r]
    D = np.empty((6, 6))                         # dexp⁻¹_{−X}, column by column
    e = np.zeros(6)
    col = np.empty(6)
    for c in range(6):
        e[c] = 1.0
        dexp_inv_apply(mX, e, col)
        e[c] = 0.0
        for r in range(6):
            D[r, c] = col[r]
    if not _solve6(D, y, out):                   # dexp_{−X} y
        return False
    drift = np.empty(6)
    _dexp_drift(X, Xdot, drift)
    for r in range(6):
        out[r] += drift[r]
    return True


@njit(**OPT)
def _elements_as_frame_wrenches(C, F, g, V, q, fb, fw):
    """The force elements' wrenches on every body (:func:`vm_dynamics.forces.kernels.
    add_wrenches`, in vehicle axes about the vehicle origin) in the frame-wrench form the
    recursions take (``fw[k] = [Rᵀf; Rᵀ(n − p × f)]`` on body ``fb[k] = k``)."""
    n = q.shape[0]
    ws = workspace(n)
    kinematics(C, q, ws)
    Rw, Pw = ws.Rw, ws.Pw
    ext = np.zeros((n + 1, 6))
    cons = np.zeros((n + 1, 6))
    w6 = np.empty(6)
    add_wrenches(F, C.axes, g, V, Rw, Pw, ext, cons, w6)
    for k in range(n + 1):
        fb[k] = k
        R, p = Rw[k], Pw[k]
        e0, e1, e2 = ext[k, 0] + cons[k, 0], ext[k, 1] + cons[k, 1], ext[k, 2] + cons[k, 2]
        x0, x1, x2 = cross(p[0], p[1], p[2], e0, e1, e2)
        m0 = ext[k, 3] + cons[k, 3] - x0
        m1 = ext[k, 4] + cons[k, 4] - x1
        m2 = ext[k, 5] + cons[k, 5] - x2
        for r in range(3):
            fw[k, r] = R[0, r] * e0 + R[1, r] * e1 + R[2, r] * e2
            fw[k, 3 + r] = R[0, r] * m0 + R[1, r] * m1 + R[2, r] * m2


@njit(**OPT)
def _joint_command(law, t, q, qd, coupled):
    """``q̈_cmd = q̈_d + K_d(q̇_d − q̇) + K_p(q_d − q)`` on the model's coordinates (the
    masters of the tree's ``q`` with mimic joints)."""
    n = law.first.shape[0]
    masters, kp, kd = law.model.masters, law.kp, law.kd      # read once, not per joint
    q_d, qd_d, qdd_cmd = np.empty(n), np.empty(n), np.empty(n)
    joint_reference(law.li[1], law.times, law.coef, law.first, law.last, law.osc, t, q_d, qd_d,
                    qdd_cmd)
    for j in range(n):
        jj = masters[j] if coupled else j
        qdd_cmd[j] = qdd_cmd[j] + kd[j] * (qd_d[j] - qd[jj]) + kp[j] * (q_d[j] - q[jj])
    return qdd_cmd


@njit(**OPT)
def computed_torque(law, F, t, g, V, q, qd, tau, bw):
    """Efforts ``tau`` and base wrench ``bw`` of computed torque (:class:`LawParams` ``law``)
    at the state ``(g, V, q, q̇)`` and time ``t``, compensating the force elements ``F`` if
    ``law.li[3]`` (see the module docstring).  With mimic joints (``law.model.coupling = G``)
    ``q, q̇`` are the tree's, ``tau`` the model's (``τ = Gᵀτ_tree`` for ``q̈_tree = G q̈_cmd``).
    Returns a status code."""
    C = law.model
    Gc = C.coupling
    coupled = Gc.shape[0] > 0
    nt = q.shape[0]
    n = law.first.shape[0]
    b = C.axes.shape[0]
    qdd_cmd = _joint_command(law, t, q, qd, coupled)
    if coupled:
        qdd_tree = np.zeros(nt)
        for r in range(nt):
            s = 0.0
            for j in range(n):
                s += Gc[r, j] * qdd_cmd[j]
            qdd_tree[r] = s
    else:
        qdd_tree = qdd_cmd
    out = np.empty(b + nt)
    if law.li[3]:
        fb = np.empty(nt + 1, dtype=np.int64)
        fw = np.empty((nt + 1, 6))
        _elements_as_frame_wrenches(C, F, g, V, q, fb, fw)
    else:
        fb = np.zeros(0, dtype=np.int64)
        fw = np.zeros((0, 6))
    if law.li[0] == 0 or b == 0:
        zero_b = np.zeros(b)
        st = free_floating_inverse_dynamics(C, g, V, q, qd, qdd_tree, zero_b, fb, fw, out)
        for r in range(b):
            bw[r] = 0.0
    else:
        V6 = np.zeros(6)
        for r in range(b):
            V6[C.axes[r]] = V[r]
        a6 = np.empty(6)
        if not setpoint_acceleration(law.gd, g, V6, law.kp6, law.kd6, law.li[2] == 1, a6):
            return 3
        Vdot = np.empty(b)
        for r in range(b):
            Vdot[r] = a6[C.axes[r]]
        st = inverse_dynamics(C, g, V, q, qd, Vdot, qdd_tree, fb, fw, out)
        for r in range(b):
            bw[r] = out[r]
    if st != 0:
        return st
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
    for r in range(b):
        if not np.isfinite(bw[r]):
            return 2
    return 0
