"""The environment's wrenches at a state, in compiled form (the engine's stages and the
compiled control laws share it): hydrodynamic damping and buoyancy of the vehicle (paper 004
§3.3: ``−(D_lin + D_quad|ν|)ν`` with ``ν = V − [Rᵀc; 0]`` for a current ``c``, and the buoyancy
``B Rᵀ up`` at ``cob``), and the buoyancy of the arm links.  ``E`` is the tuple of
:func:`vm_dynamics.sim.engine.environment_arrays` (see :mod:`.engine`)."""
from __future__ import annotations

from .algebra import cross
from .jit import OPT, njit

__all__ = ["environment_wrenches"]


@njit(**OPT)
def environment_wrenches(E, axes, R, V, Rw, Pw, ext, w6):
    """Add the environment's wrenches at a stage to ``ext`` (vehicle frame, about its origin):
    hydrodynamic damping and buoyancy of the vehicle, buoyancy of the arm links."""
    hydro, lin, quad, buoy, cob, cur, up = E[0], E[1], E[2], E[3], E[4], E[5], E[6]
    lb_body, lb_point, lb_force = E[7], E[8], E[9]
    # up in vehicle axes
    u0 = R[0, 0] * up[0] + R[1, 0] * up[1] + R[2, 0] * up[2]
    u1 = R[0, 1] * up[0] + R[1, 1] * up[1] + R[2, 1] * up[2]
    u2 = R[0, 2] * up[0] + R[1, 2] * up[1] + R[2, 2] * up[2]
    if hydro:
        for r in range(6):
            w6[r] = 0.0
        for i in range(axes.shape[0]):
            w6[axes[i]] = V[i]
        for r in range(3):
            w6[r] -= R[0, r] * cur[0] + R[1, r] * cur[1] + R[2, r] * cur[2]
        for r in range(6):
            ext[0, r] -= (lin[r] + quad[r] * abs(w6[r])) * w6[r]
        f0, f1, f2 = buoy * u0, buoy * u1, buoy * u2
        x0, x1, x2 = cross(cob[0], cob[1], cob[2], f0, f1, f2)
        ext[0, 0] += f0
        ext[0, 1] += f1
        ext[0, 2] += f2
        ext[0, 3] += x0
        ext[0, 4] += x1
        ext[0, 5] += x2
    for i in range(lb_body.shape[0]):
        k = lb_body[i]
        c = lb_point[i]
        p0 = Rw[k, 0, 0] * c[0] + Rw[k, 0, 1] * c[1] + Rw[k, 0, 2] * c[2] + Pw[k, 0]
        p1 = Rw[k, 1, 0] * c[0] + Rw[k, 1, 1] * c[1] + Rw[k, 1, 2] * c[2] + Pw[k, 1]
        p2 = Rw[k, 2, 0] * c[0] + Rw[k, 2, 1] * c[1] + Rw[k, 2, 2] * c[2] + Pw[k, 2]
        F = lb_force[i]
        x0, x1, x2 = cross(p0, p1, p2, F * u0, F * u1, F * u2)
        ext[k, 0] += F * u0
        ext[k, 1] += F * u1
        ext[k, 2] += F * u2
        ext[k, 3] += x0
        ext[k, 4] += x1
        ext[k, 5] += x2
