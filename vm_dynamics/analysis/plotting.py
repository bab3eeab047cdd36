"""Figures of a simulated trajectory, as matplotlib ``Figure`` objects (for notebooks and files).

Every ``*new_figure`` function returns a :class:`matplotlib.figure.Figure` built without pyplot
(no display needed; ``fig`` shows inline in Jupyter when it is the cell's value).
:func:`save_figure` writes one to a PNG **without following symbolic links**: the image goes to
a new temporary file in the target directory that is then renamed over the name, so a link
planted at the name is replaced, never written through.  ``vm-sim`` uses these for its plots.

What the figures show, and what they do not claim:

* :func:`base_figure` plots only the coordinates the vehicle group moves: x, y, z and the
  rotation vector φ = log R for SE(3); x, y and the heading φz for SE(2); φ for SO(3).
* :func:`energy_figure` plots the **energy balance** ``E − E₀ − W`` (``W`` = work done by the
  joint efforts and the external wrenches), which is zero for exact dynamics whether or not
  energy is conserved, relative to a stated energy scale.  Only when no input does work is this
  the energy drift, and the label says which one it is.
"""
from __future__ import annotations

import functools
import io
import os
import tempfile
from pathlib import Path

import numpy as np

from ..core import lie

__all__ = ["joints_figure", "base_figure", "energy_figure", "tracking_figure", "save_figure",
           "write_bytes_nofollow", "unwrap_rotvec"]

_STYLE = {
    "font.size": 9, "axes.titlesize": 9.5, "axes.labelsize": 9, "legend.fontsize": 7.5,
    "xtick.labelsize": 8, "ytick.labelsize": 8, "lines.linewidth": 1.3,
    "axes.grid": True, "grid.alpha": 0.35, "grid.linewidth": 0.6,
    "legend.framealpha": 0.85, "axes.spines.top": False, "axes.spines.right": False,
}
_DPI = 130


def styled(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        import matplotlib
        with matplotlib.rc_context(_STYLE):
            return func(*args, **kwargs)
    return wrapper


def new_figure(nrows: int, height_per_row: float = 2.3, width: float = 6.6):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, 0.7 + height_per_row * nrows), dpi=_DPI)
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, 1, sharex=True, squeeze=False)[:, 0]
    return fig, list(axes)


def add_legend(ax, n: int) -> None:
    """A legend inside the axes: one column up to 6 entries, then several small columns."""
    if n:
        ax.legend(loc="best", ncol=1 if n <= 6 else min(4, (n + 5) // 6),
                  fontsize=7.5 if n <= 6 else 6.5, handlelength=1.5, columnspacing=1.0)


def finish_figure(fig, axes, t, title):
    axes[0].set_title(title)
    axes[-1].set_xlabel("time t [s]")
    if len(t) > 1 and t[-1] > t[0]:
        axes[-1].set_xlim(t[0], t[-1])
    fig.tight_layout()
    return fig


def _series(t, y, name, ncols=None):
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    if y.ndim == 1:
        y = y[:, None]
    if t.ndim != 1 or t.size == 0 or y.ndim != 2 or y.shape[0] != t.size:
        raise ValueError(f"{name}: expected ({t.size}, k) samples for t of shape {t.shape}, "
                         f"got {y.shape}")
    if ncols is not None and y.shape[1] != ncols:
        raise ValueError(f"{name}: {y.shape[1]} columns but {ncols} names")
    return t, y


@styled
def joints_figure(t, q, names, title="joint positions", units=None):
    """Joint positions versus time; ``units`` one per joint ('rad' or 'm'), default 'rad'."""
    names = [str(n) for n in names]
    t, q = _series(t, q, "q", len(names))
    units = list(units) if units is not None else ["rad"] * len(names)
    fig, (ax,) = new_figure(1, 3.0)
    for j, n in enumerate(names):
        ax.plot(t, q[:, j], label=n if len(set(units)) == 1 else f"{n} [{units[j]}]")
    us = sorted(set(units))
    ax.set_ylabel(f"joint position q [{', '.join(us)}]")
    add_legend(ax, len(names))
    return finish_figure(fig, [ax], t, title)


def unwrap_rotvec(phi: np.ndarray) -> np.ndarray:
    """A rotation-vector series made continuous across θ = π (the same rotation is
    ``u(θ + 2πm)``; each sample takes the m closest to the previous one)."""
    out = np.array(phi, dtype=float)
    for k in range(1, out.shape[0]):
        th = np.linalg.norm(phi[k])
        if th < 1e-12:
            continue
        u = phi[k] / th
        m0 = np.round((out[k - 1] @ u - th) / (2 * np.pi))
        cands = [u * (th + 2 * np.pi * m) for m in (m0 - 1, m0, m0 + 1)]
        out[k] = min(cands, key=lambda c: np.linalg.norm(c - out[k - 1]))
    return out


#: Coordinates plotted per vehicle group: (position axes, rotation-vector axes).
_BASE_COORDS = {"SE3": ("xyz", "xyz"), "SE2": ("xy", "z"), "SO3": ("", "xyz"), "fixed": ("", "")}


@styled
def base_figure(t, g, base_type="SE3", title="vehicle pose"):
    """Vehicle position and attitude (rotation vector φ = log R, unwrapped; no Euler angles),
    only the coordinates that the group ``base_type`` moves (SE2: x, y, φz)."""
    if base_type not in _BASE_COORDS:
        raise ValueError(f"base_type: unknown {base_type!r}; use SE3, SE2, SO3 or fixed")
    pos, rot = _BASE_COORDS[base_type]
    if not pos and not rot:
        raise ValueError("base_type: a fixed base has no pose to plot")
    t = np.asarray(t, dtype=float)
    g = np.asarray(g, dtype=float)
    if g.shape != (t.size, 4, 4):
        raise ValueError(f"g: expected ({t.size}, 4, 4), got {g.shape}")
    fig, axes = new_figure(int(bool(pos)) + int(bool(rot)))
    k = 0
    if pos:
        for c in pos:
            axes[k].plot(t, g[:, "xyz".index(c), 3], label=c)
        axes[k].set_ylabel("position [m]")
        add_legend(axes[k], len(pos))
        k += 1
    if rot:
        phi = unwrap_rotvec(np.array([lie.so3_log(gk[:3, :3]) for gk in g]))
        for c in rot:
            axes[k].plot(t, phi[:, "xyz".index(c)], label=rf"$\varphi_{c}$")
        if len(rot) == 3:
            axes[k].set_ylabel(r"rotation vector $\varphi=\log R$ [rad]")
        else:
            axes[k].set_ylabel(r"heading $\varphi_z$ [rad]")
        add_legend(axes[k], len(rot))
    return finish_figure(fig, axes, t, title)


def _relative_log(ax, t, y, scale, color, label, ylabel):
    """|y| / scale on a log axis (zeros left out), with the machine-ε line."""
    a = np.abs(y) / scale
    ax.semilogy(t, np.where(a > 0, a, np.nan), color=color, label=label)
    ax.axhline(np.finfo(float).eps, color="0.5", ls=":", lw=1.0, label="machine ε")
    ax.set_ylabel(ylabel)
    add_legend(ax, 2)


@styled
def energy_figure(t, balance, scale, *, work_done=True, momentum_change=None,
                  momentum_scale=None, momentum_conserved=False, title="energy balance"):
    """|E − E₀ − W| / scale on a log axis (with ``work_done=False``: |E − E₀| / scale, the
    drift of a conserved energy); optionally ‖Δμ‖ / momentum_scale of the conserved momentum
    components (only meaningful where ``momentum_conserved``)."""
    t, b = _series(t, balance, "balance", 1)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale: expected a positive energy scale, got {scale!r}")
    rows = 2 if momentum_change is not None else 1
    fig, axes = new_figure(rows, 2.6)
    what = (r"$|E - E_0 - W|\,/\,E_\mathrm{ref}$ (energy balance)" if work_done
            else r"$|E - E_0|\,/\,E_\mathrm{ref}$ (energy drift, no work done)")
    _relative_log(axes[0], t, b[:, 0], scale, "C0", what,
                  rf"relative to $E_\mathrm{{ref}}$ = {scale:.3g} J")
    if momentum_change is not None:
        _, m = _series(t, momentum_change, "momentum_change", 1)
        label = (r"$\|\mu - \mu_0\|$ (conserved momentum)" if momentum_conserved
                 else r"$\|\mu - \mu_0\|$ (not conserved: external wrench or gravity)")
        _relative_log(axes[1], t, m[:, 0], momentum_scale, "C2", label,
                      rf"relative to {momentum_scale:.3g} N·m·s")
    for ax in axes:
        if not np.any(np.isfinite(ax.get_lines()[0].get_ydata())):
            ax.set_ylim(1e-18, 1e-12)   # identically zero: nothing to draw on a log axis
    return finish_figure(fig, axes, t, title)


@styled
def tracking_figure(t, err, names, title="joint tracking error", units=None):
    """Signed tracking error e = q_d − q (top) and |e| on a log axis (bottom); the legend
    gives each joint's RMS error."""
    names = [str(n) for n in names]
    t, e = _series(t, err, "err", len(names))
    units = list(units) if units is not None else ["rad"] * len(names)
    fig, axes = new_figure(2)
    for j, n in enumerate(names):
        rms = float(np.sqrt(np.mean(e[:, j] ** 2)))
        axes[0].plot(t, e[:, j], label=f"{n} (RMS {rms:.1e} {units[j]})")
        a = np.abs(e[:, j])
        axes[1].semilogy(t, np.where(a > 0, a, np.nan))
    us = ", ".join(sorted(set(units)))
    axes[0].set_ylabel(f"error $q_d - q$ [{us}]")
    axes[1].set_ylabel(f"$|q_d - q|$ [{us}]")
    add_legend(axes[0], len(names))
    return finish_figure(fig, axes, t, title)


def write_bytes_nofollow(path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a new temporary file in the same directory renamed
    over ``path``: a symbolic link at ``path`` is replaced, its target is never written, and a
    reader never sees a half-written file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def save_figure(fig, path) -> Path:
    """Write ``fig`` as a PNG at ``path`` without following a symbolic link there."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI)
    return write_bytes_nofollow(path, buf.getvalue())
