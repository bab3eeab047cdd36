"""The arrival bookkeeping the two measured inputs share (nodes/sample_timing.py): the measured
joint states and the measured wrench count and time the same sample stream alike, and report
the same timing figures in ``/diagnostics``.

Oracle: the figures computed here from the stamps and arrival times fed in (numpy on the
known intervals), not the inputs' own earlier output."""
from __future__ import annotations

import numpy as np
import pytest

from vm_dynamics.nodes.event_log import EventLog
from vm_dynamics.nodes.joint_source import MeasuredJointInput
from vm_dynamics.nodes.wrench_source import MeasuredWrenchInput
from vm_dynamics.ros import messages as rm
from vm_dynamics.sim.measured import MeasuredJointMotion

TIMING_KEYS = {"sample_interval_mean_ms", "sample_interval_max_ms", "arrival_jitter_std_ms",
               "arrival_interval_max_ms", "latency_mean_ms", "latency_max_ms"}


def inputs(max_gap=0.5, timeout=1.0):
    joints = MeasuredJointInput(["j"], MeasuredJointMotion(1), max_gap, timeout)
    wrench = MeasuredWrenchInput(["f"], "f", max_gap, timeout, 100.0, 100.0)
    return joints, wrench


def stream():
    """``[(stamp, wall)]``: 1 kHz stamps with one late sample (a 4 ms interval: a drop-out),
    arriving with a latency that varies between 1 and 3 ms."""
    stamps = list(100.0 + 1e-3 * np.arange(40))
    stamps = stamps[:30] + [s + 3e-3 for s in stamps[30:]]
    latency = 1e-3 * (2.0 + np.sin(np.arange(len(stamps))))
    return [(s, s + lat) for s, lat in zip(stamps, latency)]


def test_both_inputs_time_the_same_stream_alike_and_as_computed_from_it():
    joints, wrench = inputs()
    log = EventLog()
    samples = stream()
    for k, (stamp, wall) in enumerate(samples):
        assert joints.receive(rm.joint_state_msg(stamp, ["j"], [0.01 * k], [0.0]), wall, 0.0,
                              1e-3, log, restart=lambda: None)
        assert wrench.receive(rm.wrench_stamped_msg(stamp, np.ones(6), "f"), wall, 0.0, log)
    s, w = np.array(samples).T
    intervals, arrivals, latencies = np.diff(s), np.diff(w), w - s
    expected = {
        "sample_interval_mean_ms": 1e3 * intervals.mean(),
        "sample_interval_max_ms": 1e3 * intervals.max(),
        "arrival_jitter_std_ms": 1e3 * arrivals.std(),
        "arrival_interval_max_ms": 1e3 * arrivals.max(),
        "latency_mean_ms": 1e3 * latencies.mean(),
        "latency_max_ms": 1e3 * latencies.max(),
    }
    for stats in (joints.statistics(), wrench.statistics()):
        assert TIMING_KEYS <= set(stats)
        for key, value in expected.items():
            assert stats[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key
    assert joints.accepted == wrench.accepted == len(samples)
    assert joints.dropouts == wrench.dropouts == 1
    assert joints.statistics()["dropouts_bridged"] == wrench.statistics()["dropouts"] == 1


def test_both_inputs_fall_silent_after_their_timeout_and_resume():
    joints, wrench = inputs(timeout=0.2)
    log = EventLog()
    joints.receive(rm.joint_state_msg(10.0, ["j"], [0.0], [0.0]), 10.0, 0.0, 1e-3, log,
                   restart=lambda: None)
    wrench.receive(rm.wrench_stamped_msg(10.0, np.ones(6), "f"), 10.0, 0.0, log)
    for mi in (joints, wrench):
        assert mi.silence(10.2) is None
        assert mi.silence(10.25) == pytest.approx(0.25)
    joints.check_watchdog(10.25, 0.0, log)
    wrench.check_watchdog(10.25, 0.0, log)            # seen: confirmed at the next check
    wrench.check_watchdog(10.3, 0.0, log)
    assert joints.holding and wrench.holding
    joints.receive(rm.joint_state_msg(10.3, ["j"], [0.0], [0.0]), 10.3, 0.0, 1e-3, log,
                   restart=lambda: None)
    wrench.receive(rm.wrench_stamped_msg(10.3, np.ones(6), "f"), 10.3, 0.0, log)
    assert not joints.holding and not wrench.holding
    texts = [text for _, _, text in log.records]
    assert "measured joint states resumed at t=0.000 s" in texts
    assert "measured wrenches resumed at t=0.000 s" in texts


@pytest.mark.parametrize("make, key", [
    (lambda v: MeasuredJointInput(["j"], MeasuredJointMotion(1), v, 1.0), "measured.max_gap"),
    (lambda v: MeasuredJointInput(["j"], MeasuredJointMotion(1), 0.5, v), "measured.timeout"),
    (lambda v: MeasuredWrenchInput(["f"], "f", v, 1.0, 1.0, 1.0), "measured_wrench.max_gap"),
    (lambda v: MeasuredWrenchInput(["f"], "f", 0.5, v, 1.0, 1.0), "measured_wrench.timeout"),
    (lambda v: MeasuredWrenchInput(["f"], "f", 0.5, 1.0, v, 1.0),
     "measured_wrench.force_limit")])
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), True, "1"])
def test_a_bad_duration_or_limit_names_its_parameter(make, key, bad):
    with pytest.raises(ValueError, match=rf"^{key}: expected a positive"):
        make(bad)
