"""The capture target in the viewer: read from a recording (``/target/marker`` for its shape,
the ``odom -> target`` TF for its pose), drawn by the browser viewer in a replay and live (from
the dynamics node's ``target/marker`` and ``target/odom``), and in offscreen video frames.
The poses drawn are checked against the simulation that produced them."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from capture_scenario import CAPTURE

from vm_dynamics.config.params import flatten
from vm_dynamics.nodes.dynamics_core import DynamicsCore
from vm_dynamics.ros.recording import McapRecorder

REPO = Path(__file__).resolve().parents[2]


def capture_core():
    return DynamicsCore.from_params(flatten(CAPTURE), folders=[str(REPO / "urdf")])


def record_capture(path, samples=12, every=10):
    """A recording of the capture core (chaser + tumbling target): ``(core, [g_T per sample])``."""
    d = capture_core()
    marker = dict(d.state_messages())["target_marker"]
    rec = McapRecorder(path, d.model.joint_names,
                       robot_description=str(REPO / "urdf" / "spacecraft_arm.urdf.xacro"),
                       target_marker=marker)
    poses = []
    for _ in range(samples):
        g_T = d.capture.target_pose_twist()[0]
        rec.add(d.t, d.g, d.V, d.q, d.qd, extra_tf=[("odom", "target", g_T)])
        poses.append(g_T.copy())
        assert d.run(every) == every
    rec.close()
    return d, poses


def test_playback_reads_the_target_from_the_recording(tmp_path):
    from vm_dynamics.viewer.scene import playback_from_mcap
    _, poses = record_capture(tmp_path / "c.mcap")
    pb = playback_from_mcap(tmp_path / "c.mcap", max_rate=None)
    assert len(pb) == len(poses)
    (body,) = pb.bodies
    assert (body.frame, body.kind, body.size) == ("target", "box", (0.4, 0.4, 0.4))
    for k, g_T in enumerate(poses):
        np.testing.assert_allclose(pb.bodies_at(k)["target"], g_T, atol=1e-12)
    assert not np.allclose(poses[0][:3, :3], poses[-1][:3, :3])       # it tumbled


def test_write_mcap_records_the_target_marker(tmp_path):
    """vm-sim's path: write_mcap with the target's pose as extra_tf and its marker."""
    from vm_dynamics.capture import Sphere
    from vm_dynamics.nodes.capture import shape_marker
    from vm_dynamics.ros.recording import write_mcap
    from vm_dynamics.viewer.scene import playback_from_mcap
    d = capture_core()
    n = 4
    g_T = np.tile(np.eye(4), (n, 1, 1))
    g_T[:, 0, 3] = 3.0 + 0.1 * np.arange(n)
    write_mcap(tmp_path / "w.mcap", 0.1 * np.arange(n), np.tile(d.g, (n, 1, 1)),
               np.zeros((n, 6)), np.tile(d.q, (n, 1)), np.zeros((n, 7)), d.model.joint_names,
               extra_tf=[("odom", "target", g_T)],
               robot_description=str(REPO / "urdf" / "spacecraft_arm.urdf.xacro"),
               target_marker=shape_marker(0.0, "target", Sphere(0.5), np.eye(4), "target"))
    pb = playback_from_mcap(tmp_path / "w.mcap", max_rate=None)
    assert [(b.frame, b.kind, b.size) for b in pb.bodies] == [("target", "sphere", (0.5,))]
    np.testing.assert_allclose(pb.body_poses[:, 0], g_T, atol=1e-15)


def test_recording_without_target_has_no_bodies(tmp_path):
    from vm_dynamics.viewer.scene import playback_from_mcap
    d = capture_core()
    rec = McapRecorder(tmp_path / "r.mcap", d.model.joint_names,
                       robot_description=str(REPO / "urdf" / "spacecraft_arm.urdf.xacro"))
    for k in range(3):
        rec.add(0.1 * k, d.g, d.V, d.q, d.qd)
    rec.close()
    pb = playback_from_mcap(tmp_path / "r.mcap", max_rate=None)
    assert pb.bodies == [] and pb.body_poses.shape == (3, 0, 4, 4)


def test_body_from_marker_takes_cube_sphere_cylinder_and_names_the_rest():
    from vm_dynamics.capture import Cylinder, Sphere
    from vm_dynamics.nodes.capture import shape_marker
    from vm_dynamics.viewer.scene import body_from_marker
    pose = np.eye(4)
    pose[:3, 3] = [0.1, 0.2, 0.3]
    b = body_from_marker(shape_marker(0.0, "t", Sphere(0.25), pose, "target"))
    assert (b.kind, b.size) == ("sphere", (0.25,))
    np.testing.assert_allclose(b.origin, pose, atol=1e-15)
    b = body_from_marker(shape_marker(0.0, "t", Cylinder(0.3, 1.2), np.eye(4), "target"))
    assert (b.kind, b.size) == ("cylinder", (0.3, 1.2))
    arrow = dataclasses.replace(shape_marker(0.0, "t", Sphere(0.25), pose, "target"), type=0)
    with pytest.raises(ValueError, match=r"Marker.type 0: only CUBE \(1\), SPHERE \(2\) and "
                                         r"CYLINDER \(3\) are drawn as bodies"):
        body_from_marker(arrow)


def test_browser_viewer_replays_and_follows_the_target(tmp_path):
    import viser  # noqa: F401

    from vm_dynamics.viewer.ros import NodeFollower
    from vm_dynamics.viewer.scene import playback_from_mcap
    from vm_dynamics.viewer.server import RobotViewer
    d, poses = record_capture(tmp_path / "c.mcap")
    pb = playback_from_mcap(tmp_path / "c.mcap", max_rate=None)
    v = RobotViewer(pb.urdf, port=0)
    try:
        v.set_playback(pb)
        handle = v.bodies["target"]
        for k in (0, len(pb) - 1):
            v.set_time(pb.t[k])
            assert handle.visible
            np.testing.assert_allclose(handle.position, poses[k][:3, 3], atol=1e-12)
        # live: the node's target/marker and target/odom
        follower = NodeFollower(v)
        msgs = dict(d.state_messages())
        follower.on_target_marker(msgs["target_marker"])
        follower.on_joint_state(msgs["joint_states"])
        follower.on_odom(msgs["odom"])
        follower.on_target_odom(msgs["target_odom"])
        assert follower.update(force=True)
        g_T = d.capture.target_pose_twist()[0]
        handle = v.bodies["target"]
        assert handle.visible
        np.testing.assert_allclose(handle.position, g_T[:3, 3], atol=1e-12)
        assert d.grasp()[0]                           # grasped: drawn anew (green)
        follower.on_target_marker(dict(d.state_messages())["target_marker"])
        assert follower.body.rgba[1] > 0.7 and v.bodies["target"] is not handle
    finally:
        v.stop()


def test_video_frames_show_the_target(tmp_path):
    from vm_dynamics.viewer.scene import playback_from_mcap
    from vm_dynamics.viewer.video import framing_points, link_polygons, render_frames
    record_capture(tmp_path / "c.mcap", samples=3)
    pb = playback_from_mcap(tmp_path / "c.mcap", max_rate=None)
    bare = dataclasses.replace(pb, bodies=[], body_poses=None)
    polys, _ = link_polygons(pb.urdf)
    # the target's far face (x = 2.66 m) is inside the framing only with the target
    assert framing_points(pb, polys)[:, 0].max() > 2.65 > framing_points(bare, polys)[:, 0].max()
    kw = dict(fps=1.0, size=(160, 120), zoom=1.0, warn=lambda line: None)
    with_target = next(render_frames(pb, **kw))
    without = next(render_frames(bare, **kw))
    assert with_target.shape == without.shape == (120, 160, 3)
    assert np.count_nonzero(np.any(with_target != without, axis=2)) > 50   # target pixels
