"""The arithmetic of one stage's rates (:mod:`.kernels`) around the articulated-body pass: the
applied wrenches, the rate of the momentum variable and the power of the inputs.  Inlined into
the step (``inline="always"``), as the stages are."""
from __future__ import annotations

from ..dynamics.fast.kernels.algebra import coad, cross
from ..dynamics.fast.kernels.jit import OPT, njit
from ..dynamics.fast.kernels.kinematics import add_external
from ..forces.kernels import add_wrenches

__all__ = ["applied_wrenches", "momentum_rate", "power"]


@njit(inline="always", **OPT)
def applied_wrenches(C, F, ncons, s, inp, wk):
    """Every wrench on every body at the stage (inputs and force elements) into ``sc.ext`` and
    ``sc.cons`` (the ``ncons`` conservative elements), and gravity in vehicle axes into
    ``sc.gloc``; without elements (or conservative ones) their call (or ``cons = 0`` and
    ``ext += cons``: ``cons`` is read only if ``ncons > 0``) skipped."""
    ws, sc = wk
    ext, cons, g_s, gloc, grav = sc.ext, sc.cons, s.g, sc.gloc, C.grav
    n = ext.shape[0] - 1
    for c in range(3):
        gloc[c] = g_s[0, c] * grav[0] + g_s[1, c] * grav[1] + g_s[2, c] * grav[2]
    for k in range(n + 1):
        for r in range(6):
            ext[k, r] = 0.0
    if ncons > 0:
        for k in range(n + 1):
            for r in range(6):
                cons[k, r] = 0.0
    add_external(C.axes, inp.bw, inp.fw_body, inp.fw, ws.Rw, ws.Pw, ext, 1.0)
    bwi = inp.bwi
    for r in range(3):                         # inertial-frame vehicle wrench → vehicle axes
        ext[0, r] += g_s[0, r] * bwi[0] + g_s[1, r] * bwi[1] + g_s[2, r] * bwi[2]
        ext[0, 3 + r] += g_s[0, r] * bwi[3] + g_s[1, r] * bwi[4] + g_s[2, r] * bwi[5]
    if ncons + F.vehicle_hydrodynamics.buoyancy.shape[0] + F.link_buoyancy.body.shape[0] > 0:
        add_wrenches(F, C.axes, g_s, s.V, ws.Rw, ws.Pw, ext, cons, sc.six)
    if ncons > 0:
        for k in range(n + 1):
            for r in range(6):
                ext[k, r] += cons[k, r]


@njit(inline="always", **OPT)
def momentum_rate(C, form, s, dm, wk):
    """``ṁ`` of the momentum variable from the ABA output and F_η (``sc.force``)."""
    ws, sc = wk
    axes = C.axes
    b = axes.shape[0]
    w6, f6, out, six2, V, m = sc.six, sc.force, sc.acc_out, sc.six2, s.V, s.m
    if form == 0:
        for r in range(b):
            dm[r] = out[r]
    elif form == 1:                            # μ̇ = Ad*_{h⁻¹} ι₀ᵀF
        for r in range(6):
            w6[r] = 0.0
        for r in range(b):
            w6[axes[r]] = f6[axes[r]]
        coad(s.h, w6, six2, True)
        for r in range(b):
            dm[r] = six2[axes[r]]
    else:                                      # Ṗ = ad*_V P + F_η, ad*_V P = ad_Vᵀ P on 𝔥
        for r in range(6):
            w6[r] = 0.0
            six2[r] = 0.0
        for r in range(b):
            w6[axes[r]] = V[r]
            six2[axes[r]] = m[r]
        P = six2
        a0, a1, a2 = cross(P[0], P[1], P[2], w6[3], w6[4], w6[5])     # f × ω
        c0, c1, c2 = cross(P[0], P[1], P[2], w6[0], w6[1], w6[2])     # f × v
        d0, d1, d2 = cross(P[3], P[4], P[5], w6[3], w6[4], w6[5])     # n × ω
        adP = (a0, a1, a2, c0 + d0, c1 + d1, c2 + d2)
        for r in range(b):
            dm[r] = adP[axes[r]] + f6[axes[r]]


@njit(inline="always", **OPT)
def power(presc, ncons, s, inp, rates, wk):
    """The power ``(P, |P|)`` of the applied inputs and non-conservative elements (gravity and
    conservative elements excluded: they are in the potential energy; ``ncons`` of them)."""
    ws, sc = wk
    qd, tau, ext, cons, vel = s.qd, inp.tau, sc.ext, sc.cons, ws.vel
    pj = 0.0
    if not presc:
        for j in range(qd.shape[0]):
            pj += tau[j] * qd[j]
    pe = 0.0
    for k in range(ext.shape[0]):
        for r in range(6):
            pe += ext[k, r] * vel[k, r]
    if ncons > 0:
        pc = 0.0
        for k in range(ext.shape[0]):
            for r in range(6):
                pc += cons[k, r] * vel[k, r]
        pe -= pc
    rates.pw[0] = pj + pe
    rates.pw[1] = abs(pj) + abs(pe)
