"""Offscreen videos of a :class:`~vm_dynamics.viewer.scene.Playback` (``vm-sim --video``).

Each frame is drawn by matplotlib's Agg canvas (no display, no GPU): the URDF's boxes,
cylinders and spheres as shaded polygons (meshes as their convex hulls), the inertial frame's
axes (when its origin is in view), the end-effector path so far and the time.  A fixed camera
frames the robot over its whole motion and the path.  ``.gif`` is written with Pillow (a matplotlib
dependency); ``.mp4`` (H.264) with the ffmpeg binary of the ``imageio-ffmpeg`` package
(``pip install vm_dynamics[viz]``).
"""
from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np

from .scene import Playback, load_mesh, urdf_visuals

__all__ = ["write_video", "render_frames", "link_polygons", "framing_points", "VIDEO_SUFFIXES",
           "VIDEO_DEFAULTS", "HULL_VERTICES"]

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


#: Most vertices of a mesh whose convex hull is drawn in a video (more are thinned evenly):
#: keeps a frame of a meshed arm to a few thousand polygons.
HULL_VERTICES = 400


def _mesh_hull(visual):
    """Triangles of the convex hull of a mesh visual (scaled, in its own frame)."""
    from scipy.spatial import ConvexHull, QhullError
    v = np.asarray(load_mesh(visual).vertices, dtype=float)
    if len(v) > HULL_VERTICES:
        v = v[np.linspace(0, len(v) - 1, HULL_VERTICES).astype(int)]
    try:
        return [v[s] for s in ConvexHull(v).simplices]
    except (QhullError, ValueError):   # flat or degenerate: its triangles' bounding box
        lo, hi = v.min(axis=0), v.max(axis=0)
        return [p + 0.5 * (lo + hi) for p in _box(np.maximum(hi - lo, 1e-3))]


def link_polygons(urdf: str, base_dir=None) -> tuple[dict, list]:
    """``({link: [(polygon (k, 3) in the link frame, rgba)]}, warnings)`` from the URDF
    visuals (:func:`~.scene.urdf_visuals`: meshes that cannot be drawn are replaced by the
    collision shapes); meshes are drawn as their convex hulls."""
    visuals, warnings = urdf_visuals(urdf, base_dir)
    out: dict = {}
    unreadable = []
    for v in visuals:
        if v.kind == "box":
            polys = _box(v.size)
        elif v.kind == "cylinder":
            polys = _cylinder(*v.size)
        elif v.kind == "sphere":
            polys = _sphere(v.size[0])
        else:
            try:
                polys = _mesh_hull(v)
            except ValueError as exc:
                unreadable.append(f"link {v.link!r}: {exc}")
                continue
        T = v.origin
        out.setdefault(v.link, []).extend(
            (poly @ T[:3, :3].T + T[:3, 3], v.rgba) for poly in polys)
    if unreadable:
        warnings = warnings + [f"{len(unreadable)} mesh(es) not drawn: {'; '.join(unreadable)}"]
    return out, warnings


def body_polygons(playback: Playback) -> dict:
    """``{body frame: [(polygon in the body frame, rgba)]}`` of the playback's free bodies."""
    out = {}
    for b in playback.bodies:
        v = b.visual()
        polys = (_box(v.size) if v.kind == "box" else _cylinder(*v.size)
                 if v.kind == "cylinder" else _sphere(v.size[0]))
        T = v.origin
        out[b.frame] = [(poly @ T[:3, :3].T + T[:3, 3], v.rgba) for poly in polys]
    return out


def framing_points(playback: Playback, polys: dict, samples: int = 24) -> np.ndarray:
    """(N, 3) points the camera must show: the robot's geometry (or its link origins, for
    links without any) at up to ``samples`` times spread over the motion, and the whole
    end-effector path.  The inertial frame's origin is not among them: a vehicle far from
    it is framed, not the empty space between."""
    names = playback.links
    local = {}
    for link in names:
        verts = [poly for poly, _ in polys.get(link, [])]
        local[link] = np.concatenate(verts) if verts else np.zeros((1, 3))
    ks = np.unique(np.linspace(0, len(playback) - 1, min(samples, len(playback))).astype(int))
    pts = [playback.ee_path()]
    bodies = body_polygons(playback)
    for k in ks:
        for i, link in enumerate(names):
            T = playback.poses[k, i]
            pts.append(local[link] @ T[:3, :3].T + T[:3, 3])
        for j, b in enumerate(playback.bodies):
            T = playback.body_poses[k, j]
            if np.all(np.isfinite(T)):
                verts = np.concatenate([poly for poly, _ in bodies[b.frame]])
                pts.append(verts @ T[:3, :3].T + T[:3, 3])
    return np.concatenate(pts)


def _fit_zoom(fig, ax, pts: np.ndarray, region=(0.04, 0.04, 0.96, 0.88)) -> float:
    """The zoom of the 3D box that puts every point of ``pts`` inside ``region`` (fractions
    of the visible part of the axes' box: left, bottom, right, top; the box aspect makes that box
    square, and it clips what is drawn), from where they fall at zoom 1.  The projection
    scales about the centre of the axes, so each side is checked."""
    from mpl_toolkits.mplot3d import proj3d
    fig.canvas.draw()
    xs, ys, _ = proj3d.proj_transform(pts[:, 0], pts[:, 1], pts[:, 2], ax.get_proj())
    px = ax.transData.transform(np.column_stack([xs, ys]))
    w, h = fig.canvas.get_width_height()
    cx, cy = ax.transAxes.transform((0.5, 0.5))
    left, bottom, right, top = region
    box = ax.get_window_extent()
    limits = []
    x0, x1 = max(0.0, box.x0), min(float(w), box.x1)
    y0, y1 = max(0.0, box.y0), min(float(h), box.y1)
    for d, lo, hi, c in ((px[:, 0], x0 + left * (x1 - x0), x0 + right * (x1 - x0), cx),
                         (px[:, 1], y0 + bottom * (y1 - y0), y0 + top * (y1 - y0), cy)):
        if d.max() > c:
            limits.append((hi - c) / (d.max() - c))
        if d.min() < c:
            limits.append((c - lo) / (c - d.min()))
    return float(min(limits)) if limits else 1.0


def _checked_frame_options(fps, speed, zoom, size) -> tuple[int, int]:
    """Check the options of :func:`render_frames`; return the frame's width and height."""
    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps must be a finite positive number, got {fps!r}")
    if not (math.isfinite(speed) and speed > 0):
        raise ValueError(f"speed must be a finite positive number, got {speed!r}")
    if zoom is not None and not (math.isfinite(zoom) and zoom > 0):
        raise ValueError(f"zoom must be a finite positive number, got {zoom!r}")
    w, h = (int(v) for v in size)
    if w < 64 or h < 64 or w > 4096 or h > 4096:
        raise ValueError(f"size must be between 64 and 4096 pixels per side, got {size!r}")
    return w, h


def _shaded_faces(polys, names, poses, light):
    """The links' polygons placed at ``poses`` (one 4×4 per link of ``names``), each with its
    colour shaded by the angle of its normal to ``light``."""
    faces, colors = [], []
    for i, link in enumerate(names):
        T = poses[i]
        for poly, rgba in polys.get(link, []):
            P = poly @ T[:3, :3].T + T[:3, 3]
            n = np.cross(P[1] - P[0], P[2] - P[0])
            nn = np.linalg.norm(n)
            shade = 0.45 + 0.55 * abs(float(n @ light)) / nn if nn > 0 else 0.7
            faces.append(P)
            colors.append((rgba[0] * shade, rgba[1] * shade, rgba[2] * shade, rgba[3]))
    return faces, colors


def render_frames(playback: Playback, fps: float = 25.0, size=(640, 480), speed: float = 1.0,
                  elev: float = 28.0, azim: float = -20.0, zoom: float | None = None,
                  title: str | None = None, base_dir=None, warn=None):
    """Yield RGB frames (H, W, 3 uint8) of ``playback`` at ``fps`` frames per ``speed``
    simulated seconds, seen from elevation ``elev`` and azimuth ``azim`` (degrees) by a fixed
    camera that frames the robot over its whole motion and the end-effector path
    (:func:`framing_points`; ``zoom`` overrides the magnification).  ``warn(line)`` is called
    once with what cannot be drawn (default: printed to stderr)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection

    w, h = _checked_frame_options(fps, speed, zoom, size)
    polys, warnings = link_polygons(playback.urdf, base_dir)
    for line in warnings:
        (warn or _print_warning)(line)
    names = playback.links
    pts = framing_points(playback, polys)
    # the free bodies (a capture target) are drawn like links, where their pose is known
    polys = {**polys, **body_polygons(playback)}
    body_names = [b.frame for b in playback.bodies]
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    center, half = 0.5 * (lo + hi), max(0.5 * float(np.max(hi - lo)), 0.05)
    light = np.array([0.4, -0.5, 0.75])
    light /= np.linalg.norm(light)
    ee = playback.ee_path()
    t_frames = np.arange(playback.t[0], playback.t[-1] + 1e-9, speed / fps)
    dpi = 100
    fig = Figure(figsize=(w / dpi, h / dpi), dpi=dpi)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes([0, 0, 1, 1], projection="3d")

    def set_view(z):
        ax.cla()
        ax.set_axis_off()
        ax.set_proj_type("persp", focal_length=0.9)
        ax.view_init(elev=elev, azim=azim)
        ax.set_xlim(center[0] - half, center[0] + half)
        ax.set_ylim(center[1] - half, center[1] + half)
        ax.set_zlim(center[2] - half, center[2] + half)
        ax.set_box_aspect((1, 1, 1), zoom=z)

    if zoom is None:
        set_view(1.0)
        zoom = _fit_zoom(fig, ax, pts)
    # the inertial frame's axes, if its origin is in view: a scale and a direction reference
    axes_len = 0.35 * half
    show_axes = bool(np.all(np.abs(center) <= half))
    for tf in t_frames:
        k = playback.index(tf)
        set_view(zoom)
        known = [j for j in range(len(body_names))
                 if np.all(np.isfinite(playback.body_poses[k, j]))]
        faces, colors = _shaded_faces(polys, names + [body_names[j] for j in known],
                                      list(playback.poses[k]) +
                                      [playback.body_poses[k, j] for j in known], light)
        if faces:
            ax.add_collection3d(Poly3DCollection(faces, facecolors=colors,
                                                 edgecolors=(0, 0, 0, 0.15), linewidths=0.3))
        if show_axes:
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


def _print_warning(line: str) -> None:
    print(f"vm_dynamics video: warning: {line}", file=sys.stderr, flush=True)


#: (fps, size) by file type: GIFs are kept small enough for a README (a few hundred KB)
VIDEO_DEFAULTS = {".mp4": (25.0, (800, 600)), ".gif": (10.0, (440, 330))}


def write_video(path: str | os.PathLike, playback: Playback, fps: float | None = None,
                size=None, speed: float = 1.0, title: str | None = None,
                gif_colors: int = 32, **view) -> Path:
    """Render ``playback`` to ``path`` (``.mp4`` or ``.gif``; ``fps`` and ``size`` default to
    :data:`VIDEO_DEFAULTS`; ``view``: ``elev``, ``azim``, ``zoom``, ``base_dir`` and ``warn`` of
    :func:`render_frames`); returns the path."""
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
