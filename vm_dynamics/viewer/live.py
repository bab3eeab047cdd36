"""Per-sample hooks for ``vm.simulate(..., callback=...)``: a live browser view and the frames
of a video, both fed from the URDF's joint tree (no extra dynamics evaluations).  With a
``target`` (:class:`~.scene.Body`) a capture's state also places the target, from its ``g_T``
(:class:`vm_dynamics.capture.CaptureState`)."""
from __future__ import annotations

import time

from .scene import Body, PlaybackBuilder

__all__ = ["LiveView", "FrameCollector"]


class FrameCollector:
    """``callback(state)`` that keeps the link poses at ``fps`` samples per simulated second
    (for :func:`vm_dynamics.viewer.video.write_video`); memory grows with duration x fps only."""

    def __init__(self, urdf, joint_names, fps: float = 25.0, ee_frame=None,
                 target: Body | None = None):
        self.builder = PlaybackBuilder(urdf, joint_names, max_rate=fps, ee_frame=ee_frame)
        if target is not None:
            self.builder.add_body(target)
        self.target = target

    def __call__(self, state) -> bool:
        self.builder.add(state.t, state.g, state.q, _target_pose(self.target, state))
        return False

    def playback(self):
        """The collected samples as a :class:`~vm_dynamics.viewer.scene.Playback`."""
        return self.builder.playback()


class LiveView:
    """``callback(state)`` that shows the simulation in a
    :class:`~vm_dynamics.viewer.server.RobotViewer` as it runs, at most ``fps`` updates per
    simulated second, slowed to real time (``real_time=True``) when the simulation is faster.
    :meth:`finish` turns the view into a replay of everything shown."""

    def __init__(self, viewer, joint_names, fps: float = 30.0, real_time: bool = True,
                 target: Body | None = None):
        self.viewer = viewer
        self.builder = PlaybackBuilder(viewer.tree.xml, joint_names, max_rate=fps,
                                       ee_frame=viewer.ee_frame)
        self.target = target
        if target is not None:
            self.builder.add_body(target)
            viewer.add_body(target)
        self.real_time = real_time
        self._wall0 = None
        self._t0 = None

    def __call__(self, state) -> bool:
        bodies = _target_pose(self.target, state)
        poses = self.builder.add(state.t, state.g, state.q, bodies)
        if poses is None:
            return False
        now = time.monotonic()
        if self._wall0 is None:
            self._wall0, self._t0 = now, float(state.t)
        elif self.real_time:
            ahead = (float(state.t) - self._t0) - (now - self._wall0)
            if ahead > 0:
                time.sleep(ahead)
        self.viewer.show(poses, float(state.t), bodies)
        self.viewer.extend_path(poses[self.viewer.ee_frame][:3, 3])
        return False

    def finish(self):
        """Switch to replaying the samples shown (time slider); returns the playback."""
        pb = self.builder.playback()
        self.viewer.set_playback(pb)
        return pb


def _target_pose(target: Body | None, state) -> dict | None:
    """``{target frame: g_T}`` of a capture state (None without a target)."""
    if target is None:
        return None
    return {target.frame: state.g_T}
