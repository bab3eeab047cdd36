"""Kinematics over the tree in the vehicle frame: joint twists and body poses
(products of exponentials, paper 000 (13)–(17)), body inertias (55), velocities, bias forces,
external frame wrenches, gravity in the vehicle frame, frame poses.

The recursions take the model as its record ``C``
(:class:`~vm_dynamics.dynamics.fast.records.ModelConstants`) and write into a workspace record
``ws`` (:class:`~vm_dynamics.dynamics.fast.records.Workspace`, :func:`workspace`).
"""
from __future__ import annotations

import numpy as np

from ..records import Workspace
from .algebra import cross
from .jit import OPT, njit
from .views import flat_view

__all__ = ["kinematics", "root_pose", "joint_motion", "moved_inertia", "inertia_times",
           "body_inertia", "store_inertia", "velocities", "body_velocities", "bias", "body_bias",
           "add_external", "add_frame_wrenches",
           "gravity_local", "frame_pose", "workspace", "workspace_size", "workspace_views"]


@njit(inline="always", **OPT)
def kinematics(C, q, ws):
    """Product of exponentials (13)-(17) of the model ``C`` at ``q``, into the workspace
    ``ws``: G_j = G_parent exp(ξ̂_j q_j) as ``(ws.Rw, ws.Pw)``; ``ws.S[j]`` = Ad_{G_parent} ξ_j
    (29); ``ws.IA[k]`` = Ad_{G_k}^{-T} 𝔐_k Ad_{G_k}^{-1} (the body inertia (55) at the current
    configuration, vehicle axes, about the vehicle origin).

    Inlined: the records' fields are read where the caller holds them and the loops run in
    :func:`_kinematics` on the arrays (numba takes a reference of every field read inside a
    compiled call, an atomic count update each; read at the call site, those pair up and
    vanish)."""
    _kinematics(C.parent, C.jtype, C.xi, C.inert, q, ws.Rw, ws.Pw, ws.S, ws.IA)


@njit(**OPT)
def _kinematics(parent, jtype, xi, inert, q, Rw, Pw, S, Ib):
    """:func:`kinematics` on the arrays."""
    n = q.shape[0]
    root_pose(Rw[0], Pw[0])
    body_inertia(inert[0], Rw[0], Pw[0], Ib[0])
    for j in range(n):
        p = parent[j]
        k = j + 1
        joint_motion(xi, jtype, q, j, p, k, Rw, Pw, S)
        body_inertia(inert[k], Rw[k], Pw[k], Ib[k])


@njit(inline="always", **OPT)
def root_pose(R, p):
    """The vehicle body's pose in its own frame: ``R = I``, ``p = 0``."""
    for r in range(3):
        for c in range(3):
            R[r, c] = 1.0 if r == c else 0.0
        p[r] = 0.0


@njit(inline="always", **OPT)
def joint_motion(xi, jtype, q, j, p, k, Rw, Pw, S):
    """One step of the product of exponentials (13)-(17) for joint ``j`` (parent body ``p``,
    body ``k``): its twist ``S[j] = Ad_{G_p} ξ_j`` (29) and its body's pose
    ``(Rw[k], Pw[k]) = G_p exp(ξ̂_j q_j)``.  Inlined (the loops of :func:`kinematics` and of
    :func:`.rnea.rnea` run it for every joint); it takes the whole arrays and indices, not
    rows: every row view passed in is a reference count update per joint."""
    Rp = Rw[p]
    pp = Pw[p]
    th = q[j]
    # ω, v of the joint twist ξ_j (vehicle frame, home)
    v0, v1, v2 = xi[j, 0], xi[j, 1], xi[j, 2]
    w0, w1, w2 = xi[j, 3], xi[j, 4], xi[j, 5]
    # S_j = Ad_{G_p} ξ_j = [R v + p × R ω; R ω]
    rw0 = Rp[0, 0] * w0 + Rp[0, 1] * w1 + Rp[0, 2] * w2
    rw1 = Rp[1, 0] * w0 + Rp[1, 1] * w1 + Rp[1, 2] * w2
    rw2 = Rp[2, 0] * w0 + Rp[2, 1] * w1 + Rp[2, 2] * w2
    rv0 = Rp[0, 0] * v0 + Rp[0, 1] * v1 + Rp[0, 2] * v2
    rv1 = Rp[1, 0] * v0 + Rp[1, 1] * v1 + Rp[1, 2] * v2
    rv2 = Rp[2, 0] * v0 + Rp[2, 1] * v1 + Rp[2, 2] * v2
    x0, x1, x2 = cross(pp[0], pp[1], pp[2], rw0, rw1, rw2)
    S[j, 0] = rv0 + x0
    S[j, 1] = rv1 + x1
    S[j, 2] = rv2 + x2
    S[j, 3] = rw0
    S[j, 4] = rw1
    S[j, 5] = rw2
    # E = exp(ξ̂ q) (11): revolute with unit ω (Rodrigues), or prismatic (ω = 0)
    if jtype[j] == 0:
        s, c1 = np.sin(th), 1.0 - np.cos(th)
        # R_E = I + s ω~ + c1 ω~²,  ω~² = ωωᵀ - I
        E00 = 1.0 + c1 * (w0 * w0 - 1.0)
        E11 = 1.0 + c1 * (w1 * w1 - 1.0)
        E22 = 1.0 + c1 * (w2 * w2 - 1.0)
        E01 = -s * w2 + c1 * w0 * w1
        E10 = s * w2 + c1 * w0 * w1
        E02 = s * w1 + c1 * w0 * w2
        E20 = -s * w1 + c1 * w0 * w2
        E12 = -s * w0 + c1 * w1 * w2
        E21 = s * w0 + c1 * w1 * w2
        # t_E = (I - R_E)(ω × v) + ω (ω·v) θ
        a0, a1, a2 = cross(w0, w1, w2, v0, v1, v2)
        wv = (w0 * v0 + w1 * v1 + w2 * v2) * th
        t0 = a0 - (E00 * a0 + E01 * a1 + E02 * a2) + w0 * wv
        t1 = a1 - (E10 * a0 + E11 * a1 + E12 * a2) + w1 * wv
        t2 = a2 - (E20 * a0 + E21 * a1 + E22 * a2) + w2 * wv
        Rk = Rw[k]
        for r in range(3):
            Rk[r, 0] = Rp[r, 0] * E00 + Rp[r, 1] * E10 + Rp[r, 2] * E20
            Rk[r, 1] = Rp[r, 0] * E01 + Rp[r, 1] * E11 + Rp[r, 2] * E21
            Rk[r, 2] = Rp[r, 0] * E02 + Rp[r, 1] * E12 + Rp[r, 2] * E22
            Pw[k, r] = pp[r] + Rp[r, 0] * t0 + Rp[r, 1] * t1 + Rp[r, 2] * t2
    else:
        for r in range(3):
            for c in range(3):
                Rw[k, r, c] = Rp[r, c]
        Pw[k, 0] = pp[0] + rv0 * th
        Pw[k, 1] = pp[1] + rv1 * th
        Pw[k, 2] = pp[2] + rv2 * th


@njit(inline="always", **OPT)
def _rrow(R, r, row, c):
    """(R I_o)[r, c - 4] of a body's inertia row (I_o at ``row[4:13]``, row-major)."""
    return R[r, 0] * row[c] + R[r, 1] * row[c + 3] + R[r, 2] * row[c + 6]


@njit(inline="always", **OPT)
def _mv_row(I, r, v):
    """(I v)[r], summed from 0.0 in column order."""
    s = 0.0
    for c in range(6):
        s += I[r, c] * v[c]
    return s


@njit(inline="always", **OPT)
def moved_inertia(row, R, p):
    """The spatial inertia of a body whose home inertia (vehicle frame, about the vehicle
    origin) is ``row = (m, h = m c, I_o)``, after the motion ``(R, p)``, in its compact form
    ``(m, h', I_o')`` held in registers: ``h' = R h + m p``, ``I_o' = R I_o Rᵀ − p (Rh)ᵀ −
    (Rh) pᵀ + 2 (p·Rh) I − m (p pᵀ − |p|² I)`` as its six upper entries ``(I00, I01, I02,
    I11, I12, I22)``.  The spatial inertia is ``[[m I, -h'~], [h'~, I_o']]``."""
    m = row[0]
    h0, h1, h2 = row[1], row[2], row[3]
    Rh0 = R[0, 0] * h0 + R[0, 1] * h1 + R[0, 2] * h2
    Rh1 = R[1, 0] * h0 + R[1, 1] * h1 + R[1, 2] * h2
    Rh2 = R[2, 0] * h0 + R[2, 1] * h1 + R[2, 2] * h2
    p0, p1, p2 = p[0], p[1], p[2]
    n = (Rh0 + m * p0, Rh1 + m * p1, Rh2 + m * p2)
    # R I_o Rᵀ, with T = R I_o held in registers (no heap array: this runs for every body of
    # every kinematics evaluation)
    T = ((_rrow(R, 0, row, 4), _rrow(R, 0, row, 5), _rrow(R, 0, row, 6)),
         (_rrow(R, 1, row, 4), _rrow(R, 1, row, 5), _rrow(R, 1, row, 6)),
         (_rrow(R, 2, row, 4), _rrow(R, 2, row, 5), _rrow(R, 2, row, 6)))
    pr = p0 * Rh0 + p1 * Rh1 + p2 * Rh2
    pp = p0 * p0 + p1 * p1 + p2 * p2
    Rh = (Rh0, Rh1, Rh2)
    pv = (p0, p1, p2)
    d = 2.0 * pr + m * pp
    return m, n, (_io(T, R, Rh, pv, m, 0, 0) + d, _io(T, R, Rh, pv, m, 0, 1),
                  _io(T, R, Rh, pv, m, 0, 2), _io(T, R, Rh, pv, m, 1, 1) + d,
                  _io(T, R, Rh, pv, m, 1, 2), _io(T, R, Rh, pv, m, 2, 2) + d)


@njit(inline="always", **OPT)
def _io(T, R, Rh, pv, m, r, c):
    """Entry (r, c) of ``R I_o Rᵀ − p (Rh)ᵀ − (Rh) pᵀ − m p pᵀ`` (``T = R I_o``)."""
    s = T[r][0] * R[c, 0] + T[r][1] * R[c, 1] + T[r][2] * R[c, 2]
    s -= pv[r] * Rh[c] + Rh[r] * pv[c] + m * pv[r] * pv[c]
    return s


@njit(inline="always", **OPT)
def body_inertia(row, R, p, out):
    """The 6×6 spatial inertia ``[[m I, -h~], [h~, I_o]]`` of :func:`moved_inertia` into
    ``out``.  Inlined into the loop of :func:`kinematics` (called, it was a tenth of a step's
    time beside the rest of the kinematics)."""
    m, n, Io = moved_inertia(row, R, p)
    store_inertia(m, n, Io, out)


@njit(inline="always", **OPT)
def store_inertia(m, n, Io, out):
    """The compact inertia ``(m, n = h', Io)`` of :func:`moved_inertia` as the 6×6
    ``[[m I, -n~], [n~, I_o']]`` into ``out`` (the layout :func:`kinematics` leaves in
    ``ws.IA``)."""
    n0, n1, n2 = n
    out[3, 3], out[3, 4], out[3, 5] = Io[0], Io[1], Io[2]
    out[4, 3], out[4, 4], out[4, 5] = Io[1], Io[3], Io[4]
    out[5, 3], out[5, 4], out[5, 5] = Io[2], Io[4], Io[5]
    for r in range(3):
        for c in range(3):
            out[r, c] = m if r == c else 0.0
    # -h~ (upper right) and h~ (lower left)
    out[0, 3] = 0.0
    out[0, 4] = n2
    out[0, 5] = -n1
    out[1, 3] = -n2
    out[1, 4] = 0.0
    out[1, 5] = n0
    out[2, 3] = n1
    out[2, 4] = -n0
    out[2, 5] = 0.0
    for r in range(3):
        for c in range(3):
            out[3 + r, c] = out[c, 3 + r]


@njit(inline="always", **OPT)
def inertia_times(m, n, Io, x):
    """``I x`` of the compact inertia ``(m, n = h', Io)`` of :func:`moved_inertia`:
    ``[m x_v − h' × x_ω; h' × x_v + I_o' x_ω]`` (a 6-tuple)."""
    a0, a1, a2 = cross(n[0], n[1], n[2], x[3], x[4], x[5])
    b0, b1, b2 = cross(n[0], n[1], n[2], x[0], x[1], x[2])
    return (m * x[0] - a0, m * x[1] - a1, m * x[2] - a2,
            b0 + Io[0] * x[3] + Io[1] * x[4] + Io[2] * x[5],
            b1 + Io[1] * x[3] + Io[3] * x[4] + Io[4] * x[5],
            b2 + Io[2] * x[3] + Io[4] * x[4] + Io[5] * x[5])


@njit(inline="always", **OPT)
def velocities(C, V, qd, ws):
    """Body twists in the vehicle frame, ``ws.vel[k]`` = v_k = ι₀V + Σ_{path} S_i q̇_i, and the
    velocity-product accelerations ``ws.cacc[j]`` = c_j = ad_{v_parent}(S_j q̇_j) (``ws.S``
    from :func:`kinematics`).  Inlined, as :func:`kinematics`."""
    body_velocities(C.parent, C.axes, V, qd, ws.S, ws.vel, ws.cacc)


@njit(**OPT)
def body_velocities(parent, axes, V, qd, S, vel, cacc):
    """:func:`velocities` on the arrays."""
    n = qd.shape[0]
    for r in range(6):
        vel[0, r] = 0.0
    for i in range(axes.shape[0]):
        vel[0, axes[i]] = V[i]
    for j in range(n):
        p = parent[j]
        k = j + 1
        u = qd[j]
        s0, s1, s2 = S[j, 0] * u, S[j, 1] * u, S[j, 2] * u
        s3, s4, s5 = S[j, 3] * u, S[j, 4] * u, S[j, 5] * u
        vp = vel[p]
        # ad_v W = [ω × w_v + v × w_ω ; ω × w_ω]
        a0, a1, a2 = cross(vp[3], vp[4], vp[5], s0, s1, s2)
        b0, b1, b2 = cross(vp[0], vp[1], vp[2], s3, s4, s5)
        c0, c1, c2 = cross(vp[3], vp[4], vp[5], s3, s4, s5)
        cacc[j, 0] = a0 + b0
        cacc[j, 1] = a1 + b1
        cacc[j, 2] = a2 + b2
        cacc[j, 3] = c0
        cacc[j, 4] = c1
        cacc[j, 5] = c2
        vel[k, 0] = vp[0] + s0
        vel[k, 1] = vp[1] + s1
        vel[k, 2] = vp[2] + s2
        vel[k, 3] = vp[3] + s3
        vel[k, 4] = vp[4] + s4
        vel[k, 5] = vp[5] + s5


@njit(inline="always", **OPT)
def body_bias(I, v):
    """:func:`bias` of a body inertia of :func:`kinematics`, ``I = [[m 1, −n~], [n~, I_o]]``
    (exactly this form: ``ws.IA`` before the articulated-body passes overwrite it), as a
    6-tuple: ``I v = [m v_v − n × ω; n × v_v + I_o ω]`` from its ten independent entries
    instead of a 6×6 product."""
    m, c0, c1, c2 = I[0, 0], I[1, 5], I[2, 3], I[0, 4]
    v0, v1, v2, w0, w1, w2 = v[0], v[1], v[2], v[3], v[4], v[5]
    a0, a1, a2 = cross(c0, c1, c2, w0, w1, w2)
    b0, b1, b2 = cross(c0, c1, c2, v0, v1, v2)
    h0, h1, h2 = m * v0 - a0, m * v1 - a1, m * v2 - a2
    h3 = b0 + I[3, 3] * w0 + I[3, 4] * w1 + I[3, 5] * w2
    h4 = b1 + I[4, 3] * w0 + I[4, 4] * w1 + I[4, 5] * w2
    h5 = b2 + I[5, 3] * w0 + I[5, 4] * w1 + I[5, 5] * w2
    a0, a1, a2 = cross(w0, w1, w2, h0, h1, h2)
    b0, b1, b2 = cross(v0, v1, v2, h0, h1, h2)
    c0, c1, c2 = cross(w0, w1, w2, h3, h4, h5)
    return a0, a1, a2, b0 + c0, b1 + c1, b2 + c2


@njit(**OPT)
def bias(I, v, out):
    """out = −ad_vᵀ (I v) = v ×* (I v): the gyroscopic wrench of a body."""
    h0, h1, h2 = _mv_row(I, 0, v), _mv_row(I, 1, v), _mv_row(I, 2, v)
    h3, h4, h5 = _mv_row(I, 3, v), _mv_row(I, 4, v), _mv_row(I, 5, v)
    a0, a1, a2 = cross(v[3], v[4], v[5], h0, h1, h2)
    b0, b1, b2 = cross(v[0], v[1], v[2], h0, h1, h2)
    c0, c1, c2 = cross(v[3], v[4], v[5], h3, h4, h5)
    out[0] = a0
    out[1] = a1
    out[2] = a2
    out[3] = b0 + c0
    out[4] = b1 + c1
    out[5] = b2 + c2


@njit(inline="always", **OPT)
def add_external(axes, bw, fw_body, fw, Rw, Pw, out, sign):
    """out[k] += sign · (external wrenches on body k), in vehicle axes about the vehicle origin.

    ``bw`` (b) is the vehicle wrench on the axes of ι₀; ``fw[i]`` is already
    ``Ad⁻ᵀ(ḡ_frame at home) w_i`` on body ``fw_body[i]``; the current one is ``Ad_{G_k}⁻ᵀ`` of
    it: ``[R f; p × R f + R n]``.  Inlined (every engine stage calls it; called, it passed
    seven arrays for a few additions).
    """
    for i in range(axes.shape[0]):
        out[0, axes[i]] += sign * bw[i]
    add_frame_wrenches(fw_body, fw, Rw, Pw, out, sign)


@njit(inline="always", **OPT)
def add_frame_wrenches(fw_body, fw, Rw, Pw, out, sign):
    """The frame wrenches' part of :func:`add_external` (no vehicle wrench).  Inlined: every
    stage of the engine's step runs it, mostly over no frame wrench at all; called, it passed
    six arrays (~55 words on the stack) for that."""
    for i in range(fw_body.shape[0]):
        k = fw_body[i]
        R = Rw[k]
        p = Pw[k]
        f0 = R[0, 0] * fw[i, 0] + R[0, 1] * fw[i, 1] + R[0, 2] * fw[i, 2]
        f1 = R[1, 0] * fw[i, 0] + R[1, 1] * fw[i, 1] + R[1, 2] * fw[i, 2]
        f2 = R[2, 0] * fw[i, 0] + R[2, 1] * fw[i, 1] + R[2, 2] * fw[i, 2]
        m0 = R[0, 0] * fw[i, 3] + R[0, 1] * fw[i, 4] + R[0, 2] * fw[i, 5]
        m1 = R[1, 0] * fw[i, 3] + R[1, 1] * fw[i, 4] + R[1, 2] * fw[i, 5]
        m2 = R[2, 0] * fw[i, 3] + R[2, 1] * fw[i, 4] + R[2, 2] * fw[i, 5]
        x0, x1, x2 = cross(p[0], p[1], p[2], f0, f1, f2)
        out[k, 0] += sign * f0
        out[k, 1] += sign * f1
        out[k, 2] += sign * f2
        out[k, 3] += sign * (x0 + m0)
        out[k, 4] += sign * (x1 + m1)
        out[k, 5] += sign * (x2 + m2)


@njit(**OPT)
def gravity_local(g, grav, out):
    """out = Rᵀ a: the gravitational acceleration in vehicle axes."""
    for c in range(3):
        out[c] = g[0, c] * grav[0] + g[1, c] * grav[1] + g[2, c] * grav[2]


@njit(**OPT)
def frame_pose(C, q, body, home, out):
    """Pose (4×4, vehicle frame) of a frame fixed to ``body`` whose home pose is ``home``:
    ``G_body ḡ_frame`` with the product of exponentials (13)–(16)."""
    ws = workspace(q.shape[0])
    kinematics(C, q, ws)
    R = ws.Rw[body]
    p = ws.Pw[body]
    for r in range(3):
        for c in range(4):
            out[r, c] = R[r, 0] * home[0, c] + R[r, 1] * home[1, c] + R[r, 2] * home[2, c]
        out[r, 3] += p[r]
    out[3, 0] = 0.0
    out[3, 1] = 0.0
    out[3, 2] = 0.0
    out[3, 3] = 1.0
    for r in range(3):
        for c in range(4):
            if not np.isfinite(out[r, c]):
                return 2
    return 0


@njit(inline="always", **OPT)
def workspace_size(n):
    """Length of the flat float64 array that :func:`workspace_views` lays a workspace out in."""
    return 9 * (n + 1) + 3 * (n + 1) + 6 * n + 36 * (n + 1) + 6 * (n + 1) + 6 * n + 6 * (n + 1) \
        + 6 * n + 2 * n + 6 * (n + 1) + 36 + 6


@njit(inline="always", **OPT)
def workspace_views(W, n):
    """A :class:`Workspace` for ``n`` joints made of views of the flat array ``W`` (at least
    :func:`workspace_size` long): one allocation instead of twelve (views by
    :func:`.views.flat_view`: no reshape call)."""
    i = 0
    Rw = flat_view(W, i, (n + 1, 3, 3))
    i += 9 * (n + 1)
    Pw = flat_view(W, i, (n + 1, 3))
    i += 3 * (n + 1)
    S = flat_view(W, i, (n, 6))
    i += 6 * n
    IA = flat_view(W, i, (n + 1, 6, 6))
    i += 36 * (n + 1)
    vel = flat_view(W, i, (n + 1, 6))
    i += 6 * (n + 1)
    cacc = flat_view(W, i, (n, 6))
    i += 6 * n
    pA = flat_view(W, i, (n + 1, 6))
    i += 6 * (n + 1)
    U = flat_view(W, i, (n, 6))
    i += 6 * n
    aux = flat_view(W, i, (n, 2))
    i += 2 * n
    acc = flat_view(W, i, (n + 1, 6))
    i += 6 * (n + 1)
    K = flat_view(W, i, (6, 6))
    i += 36
    rhs = flat_view(W, i, (6,))
    return Workspace(Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs)


@njit(**OPT)
def workspace(n):
    """A new :class:`Workspace` for a tree of ``n`` joints."""
    Rw = np.empty((n + 1, 3, 3))
    Pw = np.empty((n + 1, 3))
    S = np.empty((n, 6))
    IA = np.empty((n + 1, 6, 6))
    vel = np.empty((n + 1, 6))
    cacc = np.empty((n, 6))
    pA = np.empty((n + 1, 6))
    U = np.empty((n, 6))
    aux = np.empty((n, 2))      # 1/D_j, u_j
    acc = np.empty((n + 1, 6))
    K = np.empty((6, 6))
    rhs = np.empty(6)
    return Workspace(Rw, Pw, S, IA, vel, cacc, pA, U, aux, acc, K, rhs)
