"""The relative-motion figure of a run in orbit: the vehicle and the system's centre of mass in
the LVLH frame of the reference orbit (radial against along-track, and each coordinate against
time) and the vehicle's attitude relative to that frame (the gravity-gradient libration).

The positions are ``g_rel`` and the centre of mass relative to the LVLH frame as
:meth:`vm_dynamics.forces.orbit.ReferenceOrbit.to_lvlh` forms them (x radial, y along-track,
z orbit normal); the attitude is the rotation vector ``φ = log R_rel`` of the vehicle's axes
relative to the LVLH axes.
"""
from __future__ import annotations

import numpy as np

from ..core import lie
from .plotting import add_legend, styled, unwrap_rotvec

__all__ = ["relative_motion_figure"]


@styled
def relative_motion_figure(t, g_rel, com_rel=None, title="relative motion in the LVLH frame"):
    """Three panels: radial x against along-track y (vehicle origin, and the centre of mass
    ``com_rel`` (N, 3) if given); x, y, z against time; the vehicle's attitude relative to
    LVLH (rotation vector, mrad) against time."""
    t = np.asarray(t, dtype=float)
    g_rel = np.asarray(g_rel, dtype=float)
    if g_rel.shape != (t.size, 4, 4):
        raise ValueError(f"g_rel: expected ({t.size}, 4, 4), got {g_rel.shape}")
    p = g_rel[:, :3, 3]
    com = None if com_rel is None else np.asarray(com_rel, dtype=float)
    if com is not None and com.shape != (t.size, 3):
        raise ValueError(f"com_rel: expected ({t.size}, 3), got {com.shape}")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(6.6, 9.0), dpi=130)
    FigureCanvasAgg(fig)
    ax0, ax1, ax2 = fig.subplots(3, 1, gridspec_kw={"height_ratios": [1.4, 1.0, 1.0]})
    ax0.plot(p[:, 1], p[:, 0], label="vehicle origin")
    ax0.plot(p[0, 1], p[0, 0], "o", color="C0", ms=4)
    if com is not None:
        ax0.plot(com[:, 1], com[:, 0], label="centre of mass", color="C3")
        ax0.plot(com[0, 1], com[0, 0], "o", color="C3", ms=4)
    ax0.set_xlabel("along-track y [m]")
    ax0.set_ylabel("radial x [m]")
    ax0.set_title(title)
    add_legend(ax0, 2 if com is not None else 1)
    src = com if com is not None else p
    for j, c in enumerate(("x radial", "y along-track", "z normal")):
        ax1.plot(t, src[:, j], label=c)
    ax1.set_ylabel(("centre of mass" if com is not None else "vehicle") + " [m]")
    add_legend(ax1, 3)
    phi = unwrap_rotvec(np.array([lie.so3_log(gk[:3, :3]) for gk in g_rel]))
    for j, c in enumerate("xyz"):
        ax2.plot(t, 1e3 * phi[:, j], label=rf"$\varphi_{c}$")
    ax2.set_ylabel("attitude rel. LVLH\n" + r"$\varphi=\log R_{rel}$ [mrad]")
    ax2.set_xlabel("time t [s]")
    add_legend(ax2, 3)
    for ax in (ax1, ax2):
        if t.size > 1 and t[-1] > t[0]:
            ax.set_xlim(t[0], t[-1])
    fig.tight_layout()
    return fig
