"""A force/torque sensor's wrench (``wrench_source: measured``) into ``dynamics_node`` over
loopback DDS, published by an independent participant as a real sensor driver would.

Oracles: (1) from rest under a constant wrench at ``ee_link`` the published joint and vehicle
states agree with scipy's DOP853 integration of Pinocchio's ABA with that frame wrench
(test/support/wrench_oracle.py) at every published stamp; (2) once the sensor is silent the
watchdog zeroes the wrench, and the chaser's spatial momentum (Pinocchio's, of the published
states) is then constant: no wrench acts.  Bad samples are rejected with a warning naming the
field or frame while the node keeps running.  Nothing here depends on the machine's speed:
the run is started paused, reset and resumed with the wrench in place (the first state after
the reset is the initial state at rest), and every check waits for what it needs, with
generous deadlines."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from processes import dds_env, stop_processes
from wrench_oracle import from_rest, spacecraft_oracle

from vm_dynamics.config.scenario import load_scenario
from vm_dynamics.core.rotations import quat_from_matrix
from vm_dynamics.ros import messages as rm

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
START_S = 600.0                     # a deadline for "eventually" (compile, busy machine)
W = np.array([3.0, -2.0, 5.0, 0.4, 0.1, -0.3])      # [f; n] at ee_link, ee_link axes
FRAME = "ee_link"
T = rm.TYPESTORE.types


def sample(w, frame=FRAME, stamp=None):
    """A WrenchStamped as a sensor driver sends it (raw fields: NaN on purpose too)."""
    msg = rm.wrench_stamped_msg(time.time() if stamp is None else stamp, np.zeros(6), "x")
    msg.header.frame_id = frame
    for vec, part in ((msg.wrench.force, w[:3]), (msg.wrench.torque, w[3:])):
        vec.x, vec.y, vec.z = (float(v) for v in part)
    return msg


class Bench:
    """The node as a process, and a probe participant: sensor publisher, state subscribers,
    service clients."""

    def __init__(self, tmp_path, monkeypatch, node_args):
        import cyclonedds  # noqa: F401
        env = dds_env(150 + os.getpid() % 80)
        for k in ("CYCLONEDDS_URI", "ROS_DOMAIN_ID", "VM_DYNAMICS_TRANSPORT"):
            monkeypatch.setenv(k, env[k])
        from vm_dynamics.transport.dds import DdsServiceClient, DdsTransport
        self.log_path = tmp_path / "node.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [str(BIN / "dynamics_node"), "--ros-args", "--params-file",
             str(REPO / "config/spacecraft_arm.yaml"), "-p", "wrench_source:=measured",
             *node_args], env=env, cwd=tmp_path, stdout=self.log, stderr=subprocess.STDOUT)
        self.probe = DdsTransport("sensor_probe", {}, ["sensor_probe"])
        self.got = {"/joint_states": [], "/odom": [], "/diagnostics": []}
        for topic, mtype in (("/joint_states", rm.JOINT_STATE), ("/odom", rm.ODOMETRY),
                             ("/diagnostics", rm.DIAGNOSTIC_ARRAY)):
            self.probe.subscribe(topic, mtype, lambda m, topic=topic: self.got[topic].append(m),
                                 "default")
        self.sensor = self.probe.publisher("/measured/wrench", rm.WRENCH_STAMPED, "default")
        self.clients = {
            "pause": DdsServiceClient(self.probe, "/dynamics_node/pause", "std_srvs/srv/SetBool"),
            "reset": DdsServiceClient(self.probe, "/dynamics_node/reset", "std_srvs/srv/Trigger")}
        assert self.probe.spin_until(lambda: bool(self.got["/odom"]), START_S), self.text()

    def text(self) -> str:
        return self.log_path.read_text()

    def publish_for(self, seconds, w=W, frame=FRAME, until=None):
        """The sensor at 50 Hz for ``seconds`` of wall time (or until ``until()``)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (until is not None and until()):
            self.sensor.publish(sample(w, frame))
            self.probe.spin_until(lambda: False, 0.02)

    def call(self, name, **fields):
        """Call ``~/pause`` or ``~/reset`` of the node; the response must be a success."""
        client = self.clients[name]
        assert client.wait_for_service(60.0), name
        from vm_dynamics.transport.types import service_typestore
        srv = {"pause": "std_srvs/srv/SetBool_Request", "reset": "std_srvs/srv/Trigger_Request"}
        types = service_typestore().types
        r = client.call(types[srv[name]](**fields), 60.0)
        assert r.success, r.message
        return r

    def wrench_status(self):
        for m in reversed(self.got["/diagnostics"]):
            for s in rm.parse_diagnostic_array(m):
                if s["name"] == "vm_dynamics: measured wrench":
                    return s
        return None

    def close(self):
        stop_processes([self.proc], [self.log])
        self.probe.shutdown()


def states_by_stamp(got, since_js, since_odom):
    """``{stamp_ns: (g, V, q, qd)}`` of the published states (joint_states and odom of one
    stamp) received after the given counts, on the 20 ms publish grid."""
    js = {rm.parse_joint_state(m).stamp_ns: rm.parse_joint_state(m)
          for m in got["/joint_states"][since_js:]}
    out = {}
    for m in got["/odom"][since_odom:]:
        od = rm.parse_odometry(m)
        if od.stamp_ns in js and od.stamp_ns % 20_000_000 == 0:
            s = js[od.stamp_ns]
            out[od.stamp_ns] = (od.g, od.twist, s.position, s.velocity)
    return out


def test_sensor_wrench_moves_the_chaser_as_forward_dynamics_predicts(tmp_path, monkeypatch):
    scn = load_scenario("spacecraft_arm")
    b = Bench(tmp_path, monkeypatch, ["-p", "measured_wrench.timeout:=30.0"])
    try:
        b.call("pause", data=True)
        # at rest at t = 0, the wrench forgotten
        b.call("reset", structure_needs_at_least_one_member=0)
        b.publish_for(60.0, until=lambda: (b.wrench_status() or {}).get("level") == 0)
        assert b.wrench_status()["level"] == 0, b.text()         # a sample applied
        n_js, n_odom = len(b.got["/joint_states"]), len(b.got["/odom"])
        b.call("pause", data=False)
        b.publish_for(START_S, until=lambda: any(
            rm.parse_joint_state(m).stamp_ns >= 300_000_000
            for m in b.got["/joint_states"][-3:]))
        states = states_by_stamp(b.got, n_js, n_odom)
        assert b.proc.poll() is None, b.text()
    finally:
        b.close()
    stamps = sorted(s for s in states if 0 < s <= 300_000_000)
    assert len(stamps) >= 10, (stamps, b.text())
    g0, q0 = scn.g0, scn.q0
    oracle = spacecraft_oracle(scn.model.joint_names)
    ref = from_rest(oracle, g0[:3, 3], quat_from_matrix(g0[:3, :3]), q0, {FRAME: W},
                    [s * 1e-9 for s in stamps])
    for s, (g, V, q, qd) in zip(stamps, ref):
        gn, Vn, qn, qdn = states[s]
        dq = np.linalg.norm(q - q0)
        assert dq > 0
        np.testing.assert_allclose(qn, q, rtol=0, atol=1e-9 * dq + 1e-14)
        np.testing.assert_allclose(qdn, qd, rtol=0, atol=1e-9 * np.linalg.norm(qd))
        np.testing.assert_allclose(gn[:3, 3], g[:3, 3], rtol=0,
                                   atol=1e-9 * np.linalg.norm(g[:3, 3] - g0[:3, 3]) + 1e-15)
        np.testing.assert_allclose(Vn, V, rtol=0, atol=1e-9 * np.linalg.norm(V))


def final_trip(log: str, quiet: float = 1.0) -> float | None:
    """The simulated time of the watchdog trip that is the node's last watchdog event (a
    trip, not a resumption) and at least ``quiet`` wall seconds old; None if there is none."""
    events = re.findall(r"\[(\d+\.\d+)\] \[dynamics_node\]: (?:watchdog: no measured wrench "
                        r"for [\d.]+ s \(measured_wrench.timeout [\d.]+ s\) at t=([\d.]+) s|"
                        r"measured wrenches (resumed))", log)
    if not events or events[-1][2] or time.time() - float(events[-1][0]) < quiet:
        return None
    return float(events[-1][1])


def test_bad_samples_warn_and_a_silent_sensor_is_zeroed_by_the_watchdog(tmp_path,
                                                                         monkeypatch):
    oracle = spacecraft_oracle(load_scenario("spacecraft_arm").model.joint_names)
    b = Bench(tmp_path, monkeypatch, [])
    try:
        b.publish_for(60.0, until=lambda: "contains NaN/Inf" in b.text(),
                      w=W * np.array([1, np.nan, 1, 1, 1, 1]))
        b.publish_for(60.0, until=lambda: "is not a frame of the chaser" in b.text(),
                      frame="tool0")
        text = b.text()
        assert "rejected measured wrench: WrenchStamped.wrench.force.y contains NaN/Inf" in text
        assert ("WrenchStamped.header.frame_id 'tool0' is not a frame of the chaser; frames "
                "are base_link") in text
        b.publish_for(2.0)                                   # valid samples: applied
        b.publish_for(60.0, until=lambda: (b.wrench_status() or {}).get("level") == 0)
        # the sensor falls silent: the watchdog (0.2 s wall) zeroes the wrench.  On a busy
        # machine it may trip while samples are still coming (the node not served for 0.2 s),
        # and a sample published before the silence may be taken after a trip (it then
        # resumes): the trip that counts is the last event, with no sample for 1 s after it
        assert b.probe.spin_until(lambda: final_trip(b.text()) is not None, 120.0), b.text()
        t_trip = final_trip(b.text())

        def after_trip():       # states published after the watchdog zeroed the wrench
            return {s: v for s, v in states_by_stamp(b.got, 0, 0).items()
                    if s * 1e-9 > t_trip + 0.002}
        assert b.probe.spin_until(lambda: len(after_trip()) >= 10, START_S)
        states = after_trip()
        assert b.probe.spin_until(lambda: b.wrench_status()["level"] == 1, 60.0)
        status = b.wrench_status()                           # diagnostics: 1 Hz wall
        b.publish_for(1.0)                                   # resumes: a gap, reported
        assert b.probe.spin_until(lambda: "measured wrenches resumed" in b.text(), 60.0)
        assert "in the measured wrenches (longer than measured_wrench.max_gap" in b.text()
        assert b.proc.poll() is None, b.text()              # running throughout
    finally:
        b.close()
    h = np.array([oracle.momentum(*states[s]) for s in sorted(states)])
    assert np.linalg.norm(h[0]) > 1e-3                     # it was pushed before
    np.testing.assert_allclose(h, np.broadcast_to(h[0], h.shape), rtol=0,
                               atol=1e-9 * np.linalg.norm(h[0]))
    assert status["level"] == 1 and float(status["values"]["force_N"]) == 0.0
