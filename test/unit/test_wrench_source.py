"""A force/torque sensor's measured wrench on the chaser (``wrench_source: measured``,
nodes/wrench_source.py) in-process: the wrench acts at its frame as the model predicts, bad
samples are rejected naming the field or frame, stamps order the samples, gaps are reported and
the watchdog zeroes the wrench.

Oracle for the motion: the chaser from rest under a constant wrench at ``ee_link`` (frame axes),
integrated independently by scipy's DOP853 with Pinocchio's ABA (test/support/wrench_oracle.py);
the node's engine (rkmk4) must agree to 1e-9 of the displacement."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from wrench_oracle import from_rest, spacecraft_oracle

from vm_dynamics.config.params import flatten, read_params_file
from vm_dynamics.core.rotations import quat_from_matrix
from vm_dynamics.nodes.dynamics_core import DynamicsCore
from vm_dynamics.ros import messages as rm

REPO = Path(__file__).resolve().parents[2]
W = np.array([3.0, -2.0, 5.0, 0.4, 0.1, -0.3])      # [f; n] at ee_link, ee_link axes
FRAME = "ee_link"


def core(**overrides):
    p = flatten(read_params_file(REPO / "config" / "spacecraft_arm.yaml"))
    p.update(dynamics_backend="lp", wrench_source="measured")
    p.update(overrides)
    return DynamicsCore.from_params(p)


def messages(d):
    return [text for _, _, text in d.log.records]


def wrench(stamp, w=W, frame=FRAME):
    """A WrenchStamped (``frame`` "" : no frame_id, as some sensor drivers send)."""
    msg = rm.wrench_stamped_msg(stamp, np.zeros(6), frame or "x")
    msg.header.frame_id = frame
    for vec, part in ((msg.wrench.force, w[:3]), (msg.wrench.torque, w[3:])):
        vec.x, vec.y, vec.z = (float(v) for v in part)      # NaN/Inf on purpose, too
    return msg


def test_measured_wrench_moves_the_chaser_as_forward_dynamics_predicts():
    d = core()
    g0, q0 = d.g, d.q
    assert d.apply_measured_wrench(wrench(100.0), 100.0)
    assert d.run(100) == 100
    oracle = spacecraft_oracle(d.model.joint_names)
    (g, V, q, qd), = from_rest(oracle, g0[:3, 3], quat_from_matrix(g0[:3, :3]), q0,
                               {FRAME: W}, [d.t])
    dq = np.linalg.norm(q - q0)
    assert dq > 1e-4                                       # it moved
    np.testing.assert_allclose(d.q, q, rtol=0, atol=1e-9 * dq)
    np.testing.assert_allclose(d.qd, qd, rtol=0, atol=1e-9 * np.linalg.norm(qd))
    np.testing.assert_allclose(d.g, g, rtol=0, atol=1e-9 * np.linalg.norm(g[:3, 3] - g0[:3, 3]))
    np.testing.assert_allclose(d.V, V, rtol=0, atol=1e-9 * np.linalg.norm(V))
    # the energy balance counts the sensor's work: no divergence, residual at round-off
    assert not d.diverged and abs(d.residual) < 1e-9 * abs(d.work) and d.work > 0
    diag = {s["name"]: s for s in rm.parse_diagnostic_array(d.diagnostics_message())}
    st = diag["vm_dynamics: measured wrench"]
    assert st["level"] == 0 and st["values"]["samples_accepted"] == "1"
    assert float(st["values"]["force_N"]) == pytest.approx(np.linalg.norm(W[:3]))


def test_configured_frame_applies_to_messages_without_frame_id():
    d = core(**{"measured_wrench.frame": FRAME})
    assert d.apply_measured_wrench(wrench(1.0, frame=""), 1.0)
    assert d.inputs.frame_wrenches.keys() == {FRAME}
    assert not d.apply_measured_wrench(wrench(2.0, frame="link3"), 2.0)
    assert "'link3' is not the sensor frame measured_wrench.frame='ee_link'" \
        in d.measured_wrench.last_error


def test_unknown_configured_frame_is_an_error_naming_the_frames():
    with pytest.raises(ValueError, match=r"measured_wrench.frame: unknown frame 'tool0'; "
                                         r"the chaser's frames are .*ee_link"):
        core(**{"measured_wrench.frame": "tool0"})


def test_bad_samples_are_rejected_naming_the_field_and_the_last_valid_stays():
    d = core()
    assert d.apply_measured_wrench(wrench(1.0), 1.0)
    bad = [(wrench(1.1, W * np.array([1, np.nan, 1, 1, 1, 1])),
            "WrenchStamped.wrench.force.y contains NaN/Inf"),
           (wrench(1.2, W * np.array([1, 1, 1, 1, 1, np.inf])),
            "WrenchStamped.wrench.torque.z contains NaN/Inf"),
           (wrench(1.3, np.array([2e4, 0, 0, 0, 0, 0])),
            "WrenchStamped.wrench.force: magnitude 20000 N exceeds the limit 10000 N"),
           (wrench(1.4, np.array([0, 0, 0, 0, 5e3, 0])),
            "WrenchStamped.wrench.torque: magnitude 5000 N m exceeds the limit 1000 N m"),
           (wrench(1.5, frame="tool0"), "WrenchStamped.header.frame_id 'tool0' is not a frame "
                                        "of the chaser; frames are base_link"),
           (rm.float64_multi_array_msg(W), "expected a geometry_msgs/msg/WrenchStamped")]
    for msg, text in bad:
        assert not d.apply_measured_wrench(msg, 1.5)
        assert text in d.measured_wrench.last_error, d.measured_wrench.last_error
        assert d.step()                                    # the core keeps running
        np.testing.assert_array_equal(d.inputs.frame_wrenches[FRAME], W)
    assert d.measured_wrench.rejected == len(bad)
    warned = [m for m in messages(d) if m.startswith("rejected measured wrench")]
    assert len(warned) == len(bad)                         # one per kind of fault


def test_stamps_order_samples_gaps_are_reported_and_the_watchdog_zeroes():
    d = core()
    for k in range(20):                                   # 100 Hz
        assert d.apply_measured_wrench(wrench(10.0 + 0.01 * k), 10.0 + 0.01 * k)
    mw = d.measured_wrench
    assert not d.apply_measured_wrench(wrench(10.1, -W), 10.3)       # older than the newest
    assert not d.apply_measured_wrench(wrench(10.19, -W), 10.3)      # the newest again
    assert mw.out_of_order == 2 and d.inputs.frame_wrenches[FRAME][0] == W[0]
    assert any("late or out of order" in m for m in messages(d))
    # silence longer than the timeout (0.2 s wall): zeroed, then resumed by a fresh sample
    d.check_measured_wrench_watchdog(10.19 + 0.1)
    assert d.inputs.frame_wrenches                        # not yet
    d.check_measured_wrench_watchdog(10.19 + 0.3)
    assert d.inputs.frame_wrenches and not mw.holding     # seen: confirmed at the next check
    d.check_measured_wrench_watchdog(10.19 + 0.31)
    assert d.inputs.frame_wrenches == {} and mw.holding
    assert not d.inputs.held.frames                       # the engine's inputs: none
    assert any("watchdog: no measured wrench" in m for m in messages(d))
    diag = {s["name"]: s for s in rm.parse_diagnostic_array(d.diagnostics_message())}
    assert diag["vm_dynamics: measured wrench"]["level"] == 1      # WARN
    assert d.apply_measured_wrench(wrench(10.69), 10.69)  # a 0.5 s gap in the stamps
    assert mw.gaps == 1 and not mw.holding and d.inputs.frame_wrenches
    assert any("gap of 0.500 s in the measured wrenches" in m for m in messages(d))
    assert any("measured wrenches resumed" in m for m in messages(d))
    # an unstamped sample takes its arrival time
    assert d.apply_measured_wrench(wrench(0.0), 10.70)
    assert mw.last_stamp == 10.70


def test_a_sample_taken_after_a_long_step_keeps_the_watchdog_from_tripping():
    """A tick that stepped for longer than the timeout sees an old last sample; the samples
    queued meanwhile are taken before the next check, which then finds them fresh."""
    d = core()
    assert d.apply_measured_wrench(wrench(10.0), 10.0)
    d.check_measured_wrench_watchdog(10.5)                # after a 0.5 s step: seen
    assert d.apply_measured_wrench(wrench(10.02), 10.5)   # the queued sample
    d.check_measured_wrench_watchdog(10.51)
    assert not d.measured_wrench.holding and d.inputs.frame_wrenches
    assert not any("watchdog" in m for m in messages(d))


def test_reset_forgets_the_measured_wrench():
    d = core()
    assert d.apply_measured_wrench(wrench(1.0), 1.0) and d.run(5) == 5
    assert d.reset()[0]
    assert d.inputs.frame_wrenches == {} and d.measured_wrench.accepted == 0
    assert d.run(5) == 5 and np.all(d.V == 0) and np.all(d.qd == 0)


def test_simulated_wrench_source_ignores_measured_samples():
    d = core(wrench_source="simulated")
    assert d.measured_wrench is None and not d.apply_measured_wrench(wrench(1.0), 1.0)
