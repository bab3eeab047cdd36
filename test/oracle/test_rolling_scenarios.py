"""``vm-sim`` runs the constrained scenarios (rolling ball, differential drive): recording,
summary and plots, with the figures of the library's oracles reproduced through the CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest

from vm_dynamics.app import cli


def _topics(path):
    from mcap.reader import make_reader
    counts = {}
    with open(path, "rb") as fh:
        for _, channel, _ in make_reader(fh).iter_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
    return counts


@pytest.mark.parametrize("name,joints", [("rolling_ball", 0), ("rolling_ball_incline", 0),
                                         ("diff_drive", 2), ("diff_drive_arm", 4)])
def test_vm_sim_runs_a_constrained_scenario(tmp_path, name, joints):
    out = tmp_path / name
    assert cli.main([name, "--duration", "0.5", "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] and summary["samples"] == 51
    # the fields every vm-sim summary has (bench/nodes.py reads them for every scenario)
    assert summary["simulated_time"] == summary["duration"] and summary["real_time_factor"] > 0
    assert summary["constraint_residual"] <= 1e-12
    assert summary["energy_balance_error"] <= 1e-6 * max(1.0, abs(summary["energy_start"]))
    assert (out / "constrained.png").stat().st_size > 0
    counts = _topics(out / "trajectory.mcap")
    assert counts["/odom"] == 51 and counts["/tf"] == 51
    if joints:
        assert counts["/joint_states"] == 51


def test_vm_sim_rolling_ball_incline_reproduces_five_sevenths_g_sin_alpha(tmp_path):
    out = tmp_path / "incline"
    assert cli.main(["rolling_ball_incline", "--duration", "2.0", "--out", str(out),
                     "--quiet", "--no-plots"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    a = 5.0 / 7.0 * 9.81 * np.sin(np.radians(10.0))
    expect = [-0.5 * 2.0 + 0.5 * a * 4.0, 0.6 * 2.0, 0.2]
    assert np.allclose(summary["final_position"], expect, rtol=0, atol=1e-12)


def test_vm_sim_rejects_a_bad_constraints_section(tmp_path, capsys):
    src = (cli.__file__.rsplit("/vm_dynamics/", 1)[0] + "/config/rolling_ball.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text(open(src).read().replace("type: rolling_ball", "type: rolling_cube")
                   .replace("robot_description_file: rolling_ball.urdf",
                            "robot_description_file: " + src.replace(
                                "config/rolling_ball.yaml", "urdf/rolling_ball.urdf")))
    assert cli.main([str(bad), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "constraints.type" in capsys.readouterr().err


def test_every_constrained_scenario_uses_only_known_names_and_a_typo_is_named(tmp_path, capsys):
    """The constrained scenario files are not dynamics_node parameter files
    (test_launch_files skips them): their names are checked by constraints.scenario instead."""
    from pathlib import Path

    from vm_dynamics.config.params import read_params_file
    from vm_dynamics.constraints.scenario import check_names
    root = Path(cli.__file__).resolve().parents[2]
    files = [p for p in sorted((root / "config").glob("*.yaml"))
             if "constraints" in read_params_file(p)]
    assert sorted(p.stem for p in files) == ["diff_drive", "diff_drive_arm", "rolling_ball",
                                             "rolling_ball_incline"]
    for p in files:
        check_names(read_params_file(p))
    bad = tmp_path / "typo.yaml"
    bad.write_text((root / "config" / "diff_drive.yaml").read_text()
                   .replace("wheel_radius:", "wheel_raduis:")
                   .replace("diff_drive.urdf", str(root / "urdf" / "diff_drive.urdf")))
    assert cli.main([str(bad), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "unknown parameter 'constraints.wheel_raduis'" in capsys.readouterr().err


def test_vm_sim_video_of_the_mobile_manipulator_keeps_it_in_the_frame(tmp_path):
    """vm-sim --video of diff_drive_arm writes the video; a frame rendered from its recording
    (what vm-view replays) shows the robot, and nothing reaches the edges of the square 3D box
    that clips the drawing (the camera fits the wide path of the base inside it)."""
    from vm_dynamics.viewer.scene import playback_from_mcap
    from vm_dynamics.viewer.video import render_frames
    out, video = tmp_path / "dd", tmp_path / "dd.gif"
    assert cli.main(["diff_drive_arm", "--duration", "6", "--out", str(out), "--quiet",
                     "--record-rate", "20", "--video", str(video)]) == 0
    assert video.stat().st_size > 0
    pb = playback_from_mcap(out / "trajectory.mcap")
    assert pb.links[:3] == ["base_link", "left_wheel", "right_wheel"]
    assert np.ptp(pb.poses[:, 0, 0, 3]) > 1.0                   # the base went somewhere
    frame = list(render_frames(pb, fps=0.25, size=(640, 480)))[-1]
    ink = np.any(frame < 235, axis=2)
    assert ink[60:, 80:560].sum() > 2000                        # the robot and its path
    assert not ink[60:, 78:84].any() and not ink[60:, 556:562].any(), \
        "the drawing reaches the clipping box (x = 80, 560 px)"
