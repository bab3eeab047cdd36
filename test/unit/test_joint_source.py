"""The dynamics core's joint sources (nodes/joint_source.py) in-process: name mapping, stamps,
late and out-of-order samples, gaps, the watchdog, rejected efforts, prescribed motion.
The coupling itself is checked against vm.simulate in test_hil_coupling and test_hil."""
from __future__ import annotations

import numpy as np
import pytest

from vm_dynamics.config.params import flatten, read_params_file
from vm_dynamics.config.scenario import load_scenario
from vm_dynamics.nodes.dynamics_core import DynamicsCore
from vm_dynamics.ros import messages as rm

CONFIG = "config/satellite_wheels.yaml"


def core(**overrides):
    from pathlib import Path
    p = flatten(read_params_file(Path(__file__).resolve().parents[2] / CONFIG))
    p.update(overrides)
    return DynamicsCore.from_params(p)


def messages(d):
    return [text for _, _, text in d.log.records]


def feed(d, t0, t1, names=None, rate=1000.0, base=100.0):
    presc = load_scenario("satellite_wheels").prescribed_motion()
    names = names or d.model.joint_names
    for t in np.arange(t0, t1, 1.0 / rate):
        q, qd, _ = presc(t)
        d.apply_measured_joint_state(rm.joint_state_msg(base + t, names, q, qd), base + t)
        d.advance_measured()


def test_measured_samples_drive_the_time_axis_and_map_names():
    """The driver's names (measured.joint_names) in any message order map onto the joints."""
    d = core(joint_source="measured", **{"measured.joint_names": ["wx", "wy", "wz"]})
    presc = load_scenario("satellite_wheels").prescribed_motion()
    for t in np.arange(0.0, 0.5, 1e-3):
        q, qd, _ = presc(t)
        msg = rm.joint_state_msg(100.0 + t, ["wz", "wy", "wx"], q[::-1], qd[::-1])
        assert d.apply_measured_joint_state(msg, 100.0 + t)
        d.advance_measured()
    assert abs(d.t - 0.495) < 1e-9                        # up to the newest sample (dt 5 ms)
    np.testing.assert_allclose(d.q, presc(d.t)[0], atol=1e-12)


def test_missing_joint_names_are_rejected_naming_them():
    d = core(joint_source="measured")
    msg = rm.joint_state_msg(1.0, ["wheel_x_joint", "wheel_y_joint"], [0.0, 0.0])
    assert not d.apply_measured_joint_state(msg, 1.0)
    assert "missing joint names ['wheel_z_joint']" in d.measured.last_error
    assert any("rejected measured joint state" in m for m in messages(d))


def test_out_of_order_and_duplicate_samples_are_dropped_and_counted():
    d = core(joint_source="measured")
    feed(d, 0.0, 0.1)
    names = d.model.joint_names
    before = d.measured.accepted
    for stamp in (100.05, 100.099):                      # older, and the newest again
        assert not d.apply_measured_joint_state(rm.joint_state_msg(stamp, names, [0.0] * 3),
                                                100.2)
    assert d.measured.out_of_order == 2 and d.measured.accepted == before
    assert any("late or out of order" in m for m in messages(d))


def test_long_gap_holds_then_restarts_and_watchdog_warns():
    d = core(joint_source="measured")
    feed(d, 0.0, 0.2)
    t_before = d.t
    d.check_measured_watchdog(100.2 + 0.5)               # 0.5 s of silence > timeout 0.2 s
    assert d.measured.holding and any("no measured joint states" in m for m in messages(d))
    diag = rm.parse_diagnostic_array(d.diagnostics_message())
    assert [s["level"] for s in diag if s["name"].endswith("joint source")] == [1]   # WARN
    feed(d, 1.0, 1.2)                                     # 0.8 s later: not bridged
    assert d.measured.gaps == 1 and not d.measured.holding
    assert abs(d.t - (t_before + 0.195)) < 1e-6          # the held time is not simulated
    assert any("restarting from the new sample" in m for m in messages(d))


def test_efforts_are_rejected_when_the_joints_come_from_outside():
    for source in ("measured", "prescribed"):
        d = core(joint_source=source)
        assert not d.set_effort([1.0, 2.0, 3.0])
        assert f"joint_source is {source}" in d.effort.last_error


def test_prescribed_source_runs_the_wheel_loop_and_bad_sources_are_named():
    d = core(joint_source="prescribed")
    d.run(400)
    presc = load_scenario("satellite_wheels").prescribed_motion()
    np.testing.assert_allclose(d.q, presc(2.0)[0], atol=1e-12)
    keys = [k for k, _ in d.state_messages()]
    assert {"vehicle_pose_command", "base_reaction_wrench", "coupled_joint_efforts"} <= set(keys)
    with pytest.raises(ValueError, match="joint_source: unknown 'hardware'"):
        core(joint_source="hardware")
    with pytest.raises(ValueError, match="prescribed.type"):
        core(joint_source="prescribed", **{"prescribed.type": ""})
    with pytest.raises(ValueError, match="measured.joint_names: expected 3 names"):
        core(joint_source="measured", **{"measured.joint_names": ["a"]})


def test_the_fake_drivers_drop_outs_drop_whole_samples_only():
    """A 0.03 s drop-out every 1 s at 100 Hz drops exactly 3 samples each time (a 0.04 s gap,
    below the default ``measured.max_gap`` of 0.05 s): the float phase ``2.03 % 1.0`` is
    0.0299999…, which once dropped a fourth sample and made a 0.05 s gap that the node, with
    stamps near 1.8e9 s, took for a long gap or not depending on the wall clock."""
    from types import SimpleNamespace

    from vm_dynamics.nodes.fake_arm_driver import FakeArmDriver

    drv = SimpleNamespace(drop_period=1.0, drop_len=0.03)
    dropped = [k for k in range(1001) if FakeArmDriver._dropped(drv, k / 100)]
    assert dropped == [100 * m + i for m in range(1, 10) for i in range(3)] + [1000]
    drv = SimpleNamespace(drop_period=1.5, drop_len=0.3)
    dropped = [k for k in range(451) if FakeArmDriver._dropped(drv, k / 100)]
    assert dropped == list(range(150, 180)) + list(range(300, 330)) + list(range(450, 451))
