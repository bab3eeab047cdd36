"""The browser view: :class:`RobotViewer` serves a three.js page from this process with `viser`.

The page shows the robot's URDF visuals (boxes, cylinders, spheres, meshes) on its links, free
bodies such as a capture target (:meth:`RobotViewer.add_body`: a primitive shape at its pose), the
inertial frame (axes at the origin of the fixed frame) and a grid, the end-effector path and a
marker on the end effector.  In a replay (:meth:`RobotViewer.set_playback`) a time slider, a
play/pause checkbox and a speed field move through the recorded samples; in live mode
(:meth:`RobotViewer.show` from a running simulation) the robot follows the samples as they
come.  Nothing is fetched from outside this machine: the page, its scripts and its lighting
come from the viser package.
"""
from __future__ import annotations

import contextlib
import io
import threading
import time

import numpy as np

from ..ros.urdf_tf import UrdfTree
from .scene import Body, Playback, default_ee_frame, load_mesh, urdf_visuals

__all__ = ["RobotViewer", "wxyz"]


def wxyz(R: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(w, x, y, z)`` (viser's order) of a rotation matrix."""
    from ..ros.messages import quat_from_matrix
    x, y, z, w = quat_from_matrix(R, tol=1e-4)
    return np.array([w, x, y, z])


def _rgb(rgba) -> tuple:
    return tuple(int(round(255 * c)) for c in rgba[:3])


class RobotViewer:
    """A robot in the browser.  ``urdf`` is URDF XML (or a URDF/xacro file); the page is
    served on ``host:port`` (loopback by default; port 0 picks a free one, and a busy port
    is replaced by the next free one: read :attr:`url`)."""

    def __init__(self, urdf, *, host: str = "127.0.0.1", port: int = 8080,
                 ee_frame: str | None = None, title: str = "vm_dynamics", base_dir=None):
        import viser

        if not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an integer in 0..65535, got {port!r}")
        self.tree = UrdfTree(urdf)
        self.ee_frame = ee_frame or default_ee_frame(self.tree)
        if self.ee_frame not in self.tree.links:
            raise ValueError(f"end-effector frame {self.ee_frame!r} is not a link of the URDF")
        visuals, self.warnings = urdf_visuals(self.tree.xml, base_dir)
        with contextlib.redirect_stdout(io.StringIO()):   # viser prints a banner; we print
            self.server = viser.ViserServer(host=host, port=port, label=title, verbose=False)
        self.host = host
        sc = self.server.scene
        sc.set_up_direction("+z")
        sc.add_grid("/grid", width=10.0, height=10.0, plane="xy", cell_size=0.5,
                    section_size=1.0)
        sc.add_frame("/inertial", axes_length=0.5, axes_radius=0.012)
        self._links = {lk: sc.add_frame(f"/robot/{lk}", show_axes=False)
                       for lk in self.tree.links}
        unreadable = []
        self._bodies: dict = {}
        for k, v in enumerate(visuals):
            name = f"/robot/{v.link}/visual_{k}"
            if v.kind in ("box", "cylinder", "sphere"):
                self._add_primitive(name, v)
            elif v.kind == "mesh":
                pose = dict(position=tuple(v.origin[:3, 3]), wxyz=tuple(wxyz(v.origin[:3, :3])))
                try:
                    mesh = load_mesh(v)
                except ValueError as exc:   # a corrupt file: the rest is still drawn
                    unreadable.append(f"link {v.link!r}: {exc}")
                    continue
                sc.add_mesh_trimesh(name, mesh, **pose)
        if unreadable:
            self.warnings.append(f"{len(unreadable)} mesh(es) not drawn: "
                                 f"{'; '.join(unreadable)}")
        self._ee = sc.add_icosphere("/ee_marker", radius=0.04, color=(220, 40, 40))
        self._path = None
        self._path_points: list = []
        gui = self.server.gui
        self._time_text = gui.add_text("time [s]", initial_value="0.000", disabled=True)
        self._slider = None
        self._playing = None
        self._speed = None
        self.playback: Playback | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self._camera_set = False
        self.t = 0.0
        self._play_t = 0.0
        self._slider_set = None
        self.show(self.tree.link_poses({j: 0.0 for j in self.tree.position_joints}), 0.0)

    def _add_primitive(self, name: str, v) -> None:
        """A box, cylinder or sphere :class:`~.scene.Visual` at its origin under ``name``."""
        sc = self.server.scene
        pose = dict(position=tuple(v.origin[:3, 3]), wxyz=tuple(wxyz(v.origin[:3, :3])))
        opacity = None if v.rgba[3] >= 1.0 else float(v.rgba[3])
        if v.kind == "box":
            sc.add_box(name, color=_rgb(v.rgba), dimensions=v.size, opacity=opacity, **pose)
        elif v.kind == "cylinder":
            sc.add_cylinder(name, radius=v.size[0], height=v.size[1], color=_rgb(v.rgba),
                            opacity=opacity, **pose)
        else:
            sc.add_icosphere(name, radius=v.size[0], color=_rgb(v.rgba), opacity=opacity,
                             **pose)

    def add_body(self, body: Body) -> None:
        """Draw a free body (a capture target) besides the robot: its shape in a frame placed
        by :meth:`show`'s ``bodies``; hidden until its pose is known.  Adding a body of the
        same frame again replaces its shape (e.g. a new colour once grasped)."""
        with self._lock:
            old = self._bodies.pop(body.frame, None)
            if old is not None:
                old.remove()
            handle = self.server.scene.add_frame(f"/bodies/{body.frame}", show_axes=False,
                                                 visible=False)
            self._add_primitive(f"/bodies/{body.frame}/shape", body.visual())
            self._bodies[body.frame] = handle

    @property
    def bodies(self) -> dict:
        """``{frame: scene handle}`` of the free bodies drawn."""
        return dict(self._bodies)

    # ------------------------------------------------------------------ info
    @property
    def port(self) -> int:
        """The port actually served."""
        return int(self.server.get_port())

    @property
    def url(self) -> str:
        """Address to open in a browser."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/"

    # ------------------------------------------------------------------ drawing
    def _frame_camera(self, points: np.ndarray) -> None:
        """Point the initial camera of new browsers at ``points`` (N, 3)."""
        lo, hi = points.min(axis=0), points.max(axis=0)
        center = 0.5 * (lo + hi)
        radius = max(float(np.linalg.norm(hi - lo)) * 0.5, 0.5)
        direction = np.array([1.0, -1.4, 0.9])
        direction /= np.linalg.norm(direction)
        cam = self.server.initial_camera
        cam.look_at = tuple(center)
        cam.position = tuple(center + direction * radius * 3.2)
        cam.up = (0.0, 0.0, 1.0)
        self._camera_set = True

    def show(self, poses: dict, t: float, bodies: dict | None = None) -> None:
        """Draw the links at ``poses`` (``{link: 4x4}`` in the fixed frame) and time ``t``, and
        the free bodies at ``bodies`` (``{frame: 4x4}``; NaN: hidden)."""
        with self._lock, self.server.atomic():
            for frame, T in (bodies or {}).items():
                handle = self._bodies.get(frame)
                if handle is None:
                    continue
                known = bool(np.all(np.isfinite(T)))
                if known:
                    handle.position = tuple(T[:3, 3])
                    handle.wxyz = tuple(wxyz(T[:3, :3]))
                handle.visible = known
            for link, handle in self._links.items():
                T = poses.get(link)
                if T is None:
                    continue
                handle.position = tuple(T[:3, 3])
                handle.wxyz = tuple(wxyz(T[:3, :3]))
            ee = poses.get(self.ee_frame)
            if ee is not None:
                self._ee.position = tuple(ee[:3, 3])
            self._time_text.value = f"{t:.3f}"
            self.t = float(t)
        if not self._camera_set:
            self._frame_camera(np.array([T[:3, 3] for T in poses.values()]))

    def set_path(self, points: np.ndarray) -> None:
        """Draw the end-effector path through ``points`` (N, 3)."""
        points = np.asarray(points, dtype=float)
        if points.shape[0] < 2:
            return
        seg = np.stack([points[:-1], points[1:]], axis=1)
        with self._lock:
            if self._path is not None:
                self._path.remove()
            self._path = self.server.scene.add_line_segments(
                "/ee_path", seg, colors=(30, 110, 230), thickness=3.0,
                thickness_units="screen")

    def extend_path(self, point, redraw_every: int = 10) -> None:
        """Live mode: append an end-effector position; redraws every ``redraw_every``."""
        self._path_points.append(np.asarray(point, dtype=float))
        if len(self._path_points) % redraw_every == 0:
            self.set_path(np.array(self._path_points))

    # ------------------------------------------------------------------ replay
    def set_playback(self, playback: Playback) -> None:
        """Replay ``playback`` with a time slider, play/pause and a speed factor."""
        if set(playback.links) != set(self.tree.links):
            raise ValueError("playback links do not match the viewer's URDF")
        self.playback = playback
        for body in playback.bodies:
            if body.frame not in self._bodies:
                self.add_body(body)
        t0, t1 = float(playback.t[0]), float(playback.t[-1])
        step = float(np.min(np.diff(playback.t))) if len(playback) > 1 else 1.0
        gui = self.server.gui
        if self._slider is None:
            self._slider = gui.add_slider("time", min=t0, max=max(t1, t0 + step), step=step,
                                          initial_value=t0)
            self._playing = gui.add_checkbox("play", initial_value=False)
            self._speed = gui.add_number("speed", initial_value=1.0, min=0.01, max=100.0,
                                         step=0.01)

            @self._slider.on_update
            def _(_event) -> None:
                if self._slider.value != self._slider_set:   # moved in the browser
                    self._play_t = float(self._slider.value)
                    self.set_time(self._slider.value, from_slider=True)
        else:
            self._slider.min, self._slider.max, self._slider.step = t0, max(t1, t0 + step), step
        self._camera_set = False
        bp = playback.body_poses[:, :, :3, 3].reshape(-1, 3)
        pts = np.concatenate([playback.poses[:, :, :3, 3].reshape(-1, 3),
                              bp[np.all(np.isfinite(bp), axis=1)]])
        self._frame_camera(pts)
        self.set_path(playback.ee_path())
        self.set_time(t0)
        if self._thread is None:
            self._thread = threading.Thread(target=self._play_loop, name="vm-view-play",
                                            daemon=True)
            self._thread.start()

    def set_time(self, t: float, from_slider: bool = False) -> None:
        """Replay: show the last sample at or before ``t``."""
        if self.playback is None:
            raise ValueError("set_time needs a playback (set_playback)")
        k = self.playback.index(t)
        self._play_t = float(self.playback.t[k])
        self.show(self.playback.at(k), self._play_t, self.playback.bodies_at(k))
        if not from_slider and self._slider is not None:
            self._set_slider(self._play_t)

    def _set_slider(self, value: float) -> None:
        self._slider_set = float(value)
        self._slider.value = float(value)

    def _play_loop(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(1.0 / 30.0):
            now = time.monotonic()
            dt, last = now - last, now
            if not (self._playing is not None and self._playing.value and self.playback):
                continue
            t = self._play_t + dt * float(self._speed.value or 1.0)
            if t > self.playback.t[-1]:
                t = float(self.playback.t[0])  # loop
            self._play_t = t
            k = self.playback.index(t)
            self.show(self.playback.at(k), t, self.playback.bodies_at(k))
            self._set_slider(float(self.playback.t[k]))

    def play(self, playing: bool = True) -> None:
        """Start or pause the replay."""
        if self._playing is None:
            raise ValueError("play needs a playback (set_playback)")
        self._playing.value = bool(playing)

    def stop(self) -> None:
        """Stop serving."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        with contextlib.redirect_stdout(io.StringIO()):   # "(viser) Server stopped"
            self.server.stop()

    def wait(self) -> None:
        """Serve until Ctrl-C."""
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
