"""Offscreen videos of a :class:`~vm_dynamics.viewer.scene.Playback` (``vm-sim --video``).

Each frame is drawn by matplotlib's Agg canvas (no display, no GPU): the URDF's boxes,
cylinders and spheres as shaded polygons (meshes are drawn as their bounding boxes), the
inertial frame's axes, the end-effector path so far and the time.  The camera looks at the
whole motion from a fixed direction.  ``.gif`` is written with Pillow (a matplotlib
dependency); ``.mp4`` (H.264) with the ffmpeg binary of the ``imageio-ffmpeg`` package
(``pip install vm_dynamics[viz]``).
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from .scene import Playback, urdf_visuals

__all__ = ["write_video", "render_frames", "VIDEO_SUFFIXES", "VIDEO_DEFAULTS"]

VIDEO_SUFFIXES = (".mp4", ".gif")


def _box(size):
    x, y, z = (0.5 * s for s in size)
    v = np.array([[sx * x, sy * y, sz * z] for sx in (-1, 1) for sy in (-1, 1)
                  for sz in (-1, 1)])
    faces = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4],
             [1, 5, 7, 3]]
    return [v[f] for f in faces]


def _cylinder(radius, length, n=16):
    a = np.linspace(0, 2 * math.pi, n, endpoint=False)
    ring = np.column_stack([radius * np.cos(a), radius * np.sin(a), np.zeros(n)])
    lo, hi = ring - [0, 0, 0.5 * length], ring + [0, 0, 0.5 * length]
    polys = [np.array([lo[i], lo[(i + 1) % n], hi[(i + 1) % n], hi[i]]) for i in range(n)]
    return polys + [lo[::-1], hi]


def _sphere(radius, n=10):
    polys = []
    th = np.linspace(0, math.pi, n // 2 + 1)
    ph = np.linspace(0, 2 * math.pi, n + 1)

    def p(t, f):
        return radius * np.array([math.sin(t) * math.cos(f), math.sin(t) * math.sin(f),
                                  math.cos(t)])
    for i in range(len(th) - 1):
        for j in range(n):
            polys.append(np.array([p(th[i], ph[j]), p(th[i + 1], ph[j]),
                                   p(th[i + 1], ph[j + 1]), p(th[i], ph[j + 1])]))
    return polys


def _mesh_box(visual):
    try:
        import trimesh
        lo, hi = trimesh.load(visual.mesh, force="mesh").bounds
    except Exception:  # no trimesh or an unreadable file: skip the mesh
        return [], np.eye(4)
    size = (hi - lo) * np.asarray(visual.size)
    center = np.eye(4)
    center[:3, 3] = 0.5 * (hi + lo) * np.asarray(visual.size)
    return _box(size), center


def _link_polygons(urdf: str):
    """{link: [(polygon (k, 3) in the link frame, rgba)]} from the URDF visuals."""
    visuals, _ = urdf_visuals(urdf)
    out: dict = {}
    for v in visuals:
        offset = np.eye(4)
        if v.kind == "box":
            polys = _box(v.size)
        elif v.kind == "cylinder":
            polys = _cylinder(*v.size)
        elif v.kind == "sphere":
            polys = _sphere(v.size[0])
        else:
            polys, offset = _mesh_box(v)
        T = v.origin @ offset
        out.setdefault(v.link, []).extend(
            (poly @ T[:3, :3].T + T[:3, 3], v.rgba) for poly in polys)
    return out


def render_frames(playback: Playback, fps: float = 25.0, size=(640, 480), speed: float = 1.0,
                  elev: float = 28.0, azim: float = -20.0, zoom: float = 1.8,
                  title: str | None = None):
    """Yield RGB frames (H, W, 3 uint8) of ``playback`` at ``fps`` frames per ``speed``
    simulated seconds, seen from elevation ``elev`` and azimuth ``azim`` (degrees) with
    ``zoom`` magnification of the box that holds the whole motion."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection

    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps must be a finite positive number, got {fps!r}")
    if not (math.isfinite(speed) and speed > 0):
        raise ValueError(f"speed must be a finite positive number, got {speed!r}")
    w, h = (int(v) for v in size)
    if w < 64 or h < 64 or w > 4096 or h > 4096:
        raise ValueError(f"size must be between 64 and 4096 pixels per side, got {size!r}")
    polys = _link_polygons(playback.urdf)
    names = playback.links
    # bounds of the whole motion (link origins and geometry) -> one fixed camera
    pts = [playback.poses[:, :, :3, 3].reshape(-1, 3), np.zeros((1, 3))]
    for k in (0, len(playback) - 1):
        for i, link in enumerate(names):
            T = playback.poses[k, i]
            pts += [poly @ T[:3, :3].T + T[:3, 3] for poly, _ in polys.get(link, [])]
    pts = np.concatenate(pts)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    center, half = 0.5 * (lo + hi), max(0.5 * float(np.max(hi - lo)), 0.25)
    light = np.array([0.4, -0.5, 0.75])
    light /= np.linalg.norm(light)
    ee = playback.ee_path()
    t_frames = np.arange(playback.t[0], playback.t[-1] + 1e-9, speed / fps)
    dpi = 100
    fig = Figure(figsize=(w / dpi, h / dpi), dpi=dpi)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes([0, 0, 1, 1], projection="3d")
    for tf in t_frames:
        k = playback.index(tf)
        ax.cla()
        ax.set_axis_off()
        ax.set_proj_type("persp", focal_length=0.9)
        ax.view_init(elev=elev, azim=azim)
        ax.set_xlim(center[0] - half, center[0] + half)
        ax.set_ylim(center[1] - half, center[1] + half)
        ax.set_zlim(center[2] - half, center[2] + half)
        ax.set_box_aspect((1, 1, 1), zoom=zoom)
        faces, colors = [], []
        for i, link in enumerate(names):
            T = playback.poses[k, i]
            for poly, rgba in polys.get(link, []):
                P = poly @ T[:3, :3].T + T[:3, 3]
                n = np.cross(P[1] - P[0], P[2] - P[0])
                nn = np.linalg.norm(n)
                shade = 0.45 + 0.55 * abs(float(n @ light)) / nn if nn > 0 else 0.7
                faces.append(P)
                colors.append((rgba[0] * shade, rgba[1] * shade, rgba[2] * shade, rgba[3]))
        if faces:
            ax.add_collection3d(Poly3DCollection(faces, facecolors=colors,
                                                 edgecolors=(0, 0, 0, 0.15), linewidths=0.3))
        axes_len = 0.35 * half
        ax.add_collection3d(Line3DCollection(
            [[(0, 0, 0), (axes_len, 0, 0)], [(0, 0, 0), (0, axes_len, 0)],
             [(0, 0, 0), (0, 0, axes_len)]], colors=["#d62728", "#2ca02c", "#1f77b4"],
            linewidths=2))
        if ee.size and k > 0:
            ax.plot(ee[:k + 1, 0], ee[:k + 1, 1], ee[:k + 1, 2], color="#1f5fd6", lw=1.5)
        ax.text2D(0.02, 0.95, f"{title + '   ' if title else ''}t = {playback.t[k]:5.2f} s",
                  transform=ax.transAxes, fontsize=10, family="monospace")
        canvas.draw()
        frame = np.asarray(canvas.buffer_rgba())[:, :, :3].copy()
        yield frame


#: (fps, size) by file type: GIFs are kept small enough for a README (a few hundred KB)
VIDEO_DEFAULTS = {".mp4": (25.0, (800, 600)), ".gif": (10.0, (440, 330))}


def write_video(path: str | os.PathLike, playback: Playback, fps: float | None = None,
                size=None, speed: float = 1.0, title: str | None = None,
                gif_colors: int = 32, **view) -> Path:
    """Render ``playback`` to ``path`` (``.mp4`` or ``.gif``; ``fps`` and ``size`` default to
    :data:`VIDEO_DEFAULTS`; ``view``: ``elev``, ``azim``, ``zoom`` of :func:`render_frames`);
    returns the path."""
    path = Path(path)
    if path.suffix.lower() not in VIDEO_SUFFIXES:
        raise ValueError(f"video file must end with {' or '.join(VIDEO_SUFFIXES)}, got "
                         f"{path.name!r}")
    d_fps, d_size = VIDEO_DEFAULTS[path.suffix.lower()]
    fps = d_fps if fps is None else fps
    frames = render_frames(playback, fps=fps, size=size or d_size, speed=speed, title=title,
                           **view)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}{path.suffix}")
    try:
        if path.suffix.lower() == ".gif":
            from PIL import Image
            images = [Image.fromarray(f).quantize(colors=gif_colors,
                                                  method=Image.Quantize.MEDIANCUT,
                                                  dither=Image.Dither.NONE) for f in frames]
            images[0].save(tmp, save_all=True, append_images=images[1:], loop=0,
                           duration=int(round(1000 / fps)), optimize=True, disposal=1)
        else:
            import imageio_ffmpeg
            first = next(frames)
            writer = imageio_ffmpeg.write_frames(
                str(tmp), (first.shape[1], first.shape[0]), fps=fps, codec="libx264",
                pix_fmt_out="yuv420p", macro_block_size=2, quality=7,
                ffmpeg_log_level="error")
            writer.send(None)
            writer.send(np.ascontiguousarray(first))
            for f in frames:
                writer.send(np.ascontiguousarray(f))
            writer.close()
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
