"""`vm-sim` end to end: every scenario runs (short), outputs are complete and sane, the MCAP is
read back with an independent reader (mcap + mcap_ros2), and bad arguments exit with code 2."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from vm_dynamics import cli
from vm_dynamics.scenario import list_scenarios, load_scenario

SCENARIOS = ["spacecraft_arm", "uvms", "planar_rover", "satellite_wheels", "tumbling",
             "prismatic_link"]
SHORT = {"spacecraft_arm": 0.2, "uvms": 0.1, "planar_rover": 0.3, "satellite_wheels": 1.0,
         "tumbling": 0.5, "prismatic_link": 0.5}
# mimic joints: simulated on the LP path in test_bring_your_own_robot.py until the O(n) path
# carries the mimic coupling (vm-sim uses the O(n) path)
LP_ONLY_SCENARIOS = ["panda_on_bus"]


def test_all_scenarios_are_listed():
    assert sorted(n for n, _ in list_scenarios()) == sorted(SCENARIOS + LP_ONLY_SCENARIOS)


def _read_mcap(path):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    counts, schemas, first = {}, {}, {}
    with open(path, "rb") as fh:
        reader = make_reader(fh, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == "ros2"
        for schema, channel, message, decoded in reader.iter_decoded_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            schemas[channel.topic] = schema.name
            first.setdefault(channel.topic, decoded)
    return counts, schemas, first


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_runs_end_to_end(name, tmp_path):
    out = tmp_path / name
    rc = cli.main([name, "--duration", str(SHORT[name]), "--out", str(out), "--quiet"])
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    scn = load_scenario(name)
    for key in ("scenario", "integrator", "dt", "steps", "wall_time_s", "real_time_factor",
                "energy_drift_rel", "momentum_drift_rel"):
        assert key in summary, key
    assert summary["scenario"] == name
    assert summary["integrator"] == scn.integrator
    assert summary["dt"] == scn.dt
    assert summary["steps"] == round(SHORT[name] / scn.dt)
    assert summary["wall_time_s"] > 0 and summary["real_time_factor"] > 0
    for key in ("energy_drift_rel", "momentum_drift_rel"):
        v = summary[key]
        assert v is None or (math.isfinite(v) and 0 <= v < 1e-8), (key, v)
    if scn.controller:
        assert summary["tracking_error_final"] < 1e-3
        assert 0 <= summary["tracking_error_rms"] < 1e-3
        assert (out / "tracking.png").stat().st_size > 10_000
    for png in ("joints.png", "base.png", "conservation.png"):
        assert (out / png).stat().st_size > 10_000
    counts, schemas, first = _read_mcap(out / "trajectory.mcap")
    assert schemas == {"/joint_states": "sensor_msgs/msg/JointState",
                       "/odom": "nav_msgs/msg/Odometry", "/tf": "tf2_msgs/msg/TFMessage",
                       "/clock": "rosgraph_msgs/msg/Clock"}
    expected = round(SHORT[name] * 100) + 1  # 100 Hz recording including t = 0
    assert all(abs(c - expected) <= 1 for c in counts.values()), counts
    js = first["/joint_states"]
    assert list(js.name) == scn.model.joint_names
    np.testing.assert_allclose(js.position, scn.q0, atol=1e-12)
    odom = first["/odom"]
    assert odom.header.frame_id == "odom" and odom.child_frame_id == "base_link"
    np.testing.assert_allclose([odom.pose.pose.position.x, odom.pose.pose.position.y,
                                odom.pose.pose.position.z], scn.g0[:3, 3], atol=1e-12)


def test_conserving_scenarios_report_tiny_drifts(tmp_path):
    rc = cli.main(["tumbling", "--duration", "1.0", "--out", str(tmp_path), "--quiet",
                   "--no-plots"])
    assert rc == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["energy_drift_rel"] is not None and s["energy_drift_rel"] < 1e-10
    assert s["momentum_drift_rel"] is not None and s["momentum_drift_rel"] < 1e-10
    assert "tracking_error_final" not in s


@pytest.mark.parametrize("args, message", [
    (["nope"], "unknown scenario 'nope'; available: "),
    (["tumbling", "--dt", "0"], "--dt must be positive"),
    (["tumbling", "--dt=-1e-3"], "--dt must be positive"),
    (["tumbling", "--duration", "0"], "--duration must be positive"),
    (["tumbling", "--integrator", "euler"], "--integrator: unknown 'euler'"),
    (["tumbling", "--controller", "magic"], "--controller: unknown 'magic'"),
    (["tumbling", "--dt", "abc"], "argument --dt: invalid float value"),
    ([], "missing SCENARIO"),
])
def test_bad_arguments_give_one_line_error_and_exit_2(args, message, capsys):
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("vm-sim: error: ") and message in err, err


def test_unreadable_config_is_a_usage_error(tmp_path, capsys):
    bad = tmp_path / "broken.yaml"
    bad.write_text("/**:\n  ros__parameters: [unclosed\n")
    assert cli.main([str(bad)]) == 2
    assert "invalid YAML" in capsys.readouterr().err
    missing = tmp_path / "missing.yaml"
    assert cli.main([str(missing)]) == 2
    assert "scenario file not found" in capsys.readouterr().err


def test_console_script_list_and_exit_code():
    exe = [sys.executable, "-m", "vm_dynamics.cli"]
    r = subprocess.run(exe + ["--list"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and all(n in r.stdout for n in SCENARIOS)
    r = subprocess.run(exe + ["tumbling", "--dt", "-1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.strip() == "vm-sim: error: --dt must be positive, got -1"


def test_ctrl_c_writes_partial_results(tmp_path):
    """SIGINT during the integration: the run stops and writes what was computed."""
    import os
    import signal
    import time
    proc = subprocess.Popen([sys.executable, "-m", "vm_dynamics.cli", "spacecraft_arm",
                             "--duration", "60", "--out", str(tmp_path), "--no-plots"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(6.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["interrupted"] is True
    assert 0 < s["steps"] < 60000
    assert (tmp_path / "trajectory.mcap").stat().st_size > 0
    assert "INTERRUPTED" in out
    del os
