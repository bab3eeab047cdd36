"""``vm-sim capture_orbit`` end to end, shortened as test_capture_cli.py's capture_tumbling run
(the fixture at the gripper, so contact, grasp and detumble happen within 0.6 s): in orbit the
total momentum minus the thrusters' and the orbit's impulses is constant, the orbit's impulse is
not zero, and the figure says which frame and accounts it shows."""
from __future__ import annotations

import json

import numpy as np

from vm_dynamics.app import cli

SHORT = ["--duration", "0.6",
         "-p", "capture.target.initial.position:=[0.0, 2.8291699, 0.648829]",
         "-p", "capture.approach.standoff:=0.0",
         "-p", "capture.grasp.command_time:=0.2"]


def test_capture_orbit_runs_grasps_and_balances(tmp_path):
    out = tmp_path / "capture_orbit"
    assert cli.main(["capture_orbit", *SHORT, "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scenario"] == "capture_orbit" and summary["grasped"] is True
    grasp = [e for e in summary["events"] if e["event"] == "grasp"][0]
    assert 0.2 <= grasp["t"] <= 0.21 and grasp["position_error"] <= 0.02
    assert summary["momentum_drift_relative"] <= 1e-10
    assert np.linalg.norm(summary["external_impulse"][:3]) > 1e-6      # the orbit acted
    assert summary["field_potential_change"] != 0.0
    assert summary["energy_balance_error_relative"] <= 1e-3           # the abrupt start
    assert (out / "capture.png").stat().st_size > 10_000


def test_capture_orbit_bad_orbit_is_named(tmp_path, capsys):
    rc = cli.main(["capture_orbit", "--duration", "0.01", "-p", "orbit:=null",
                   "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 2
    assert "orbit: expected a mapping" in capsys.readouterr().err
    rc = cli.main(["capture_orbit", "--duration", "0.01", "-p", "orbit.altitde:=4.0e5",
                   "--out", str(tmp_path / "o2"), "--quiet"])
    assert rc == 2
    assert "orbit: unknown keys altitde" in capsys.readouterr().err
