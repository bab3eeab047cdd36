"""``dynamics_node`` with a target over loopback DDS: ``/target/odom``, the ``odom -> target``
transform on ``/tf``, ``/target/marker`` and ``/contact_wrench`` are published; ``~/grasp`` is
refused (naming the misses) while the fixture is out of reach and succeeds within the
tolerances; ``~/release`` undoes it.  Oracle: the total momentum of chaser (Pinocchio) and
target (its spatial inertia written out) from the published messages is the same before the
grasp and after it, to 1e-10.  Every wait has a generous deadline (a busy machine)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml
from capture_scenario import CAPTURE, target_momentum
from processes import dds_env, stop_processes
from wrench_oracle import spacecraft_oracle

from vm_dynamics.ros import messages as rm

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
START_S = 600.0


def start(tmp_path, monkeypatch, params):
    import cyclonedds  # noqa: F401
    env = dds_env(160 + os.getpid() % 70)
    for k in ("CYCLONEDDS_URI", "ROS_DOMAIN_ID", "VM_DYNAMICS_TRANSPORT"):
        monkeypatch.setenv(k, env[k])
    from vm_dynamics.transport.dds import DdsServiceClient, DdsTransport
    path = tmp_path / "capture.yaml"
    path.write_text(yaml.safe_dump({"/**": {"ros__parameters": params}}))
    log = open(tmp_path / "node.log", "w")
    proc = subprocess.Popen([str(BIN / "dynamics_node"), "--ros-args", "--params-file",
                             str(path), "-p", "publish_rate:=50.0"],
                            env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    probe = DdsTransport("capture_probe", {}, ["capture_probe"])
    got = {}
    for topic, mtype in (("/odom", rm.ODOMETRY), ("/joint_states", rm.JOINT_STATE),
                         ("/target/odom", rm.ODOMETRY), ("/tf", rm.TF_MESSAGE),
                         ("/target/marker", "visualization_msgs/msg/Marker"),
                         ("/contact_wrench", rm.WRENCH_STAMPED)):
        got[topic] = []
        probe.subscribe(topic, mtype, lambda m, topic=topic: got[topic].append(m), "default")
    clients = {name: DdsServiceClient(probe, f"/dynamics_node/{name}", "std_srvs/srv/Trigger")
               for name in ("grasp", "release")}
    return proc, log, probe, got, clients


def call(probe, client):
    from vm_dynamics.transport.types import service_typestore
    assert client.wait_for_service(60.0)
    req = service_typestore().types["std_srvs/srv/Trigger_Request"](
        structure_needs_at_least_one_member=0)
    return client.call(req, 60.0)


def latest_state(got):
    """``(stamp, chaser odom, joint state, target odom)`` of the newest stamp all three have."""
    od = {rm.parse_odometry(m).stamp_ns: rm.parse_odometry(m) for m in got["/odom"][-30:]}
    js = {rm.parse_joint_state(m).stamp_ns: rm.parse_joint_state(m)
          for m in got["/joint_states"][-30:]}
    to = {rm.parse_odometry(m).stamp_ns: rm.parse_odometry(m) for m in got["/target/odom"][-30:]}
    common = sorted(set(od) & set(js) & set(to))
    return None if not common else (common[-1], od[common[-1]], js[common[-1]], to[common[-1]])


def total_momentum(oracle, state):
    _, od, js, to = state
    return oracle.momentum(od.g, od.twist, js.position, js.velocity) + \
        target_momentum(to.g, to.twist)


def test_target_topics_and_grasp_over_dds(tmp_path, monkeypatch):
    cap = CAPTURE["capture"]
    params = {**CAPTURE, "capture": {**cap, "target": {**cap["target"], "initial": {
        **cap["target"]["initial"], "position": [2.6, 0.0, 0.6488]}}}}
    proc, log, probe, got, clients = start(tmp_path, monkeypatch, params)
    oracle = spacecraft_oracle([f"joint{k}" for k in range(1, 8)])
    try:
        assert probe.spin_until(lambda: latest_state(got) is not None
                                and got["/target/marker"] and got["/contact_wrench"], START_S), \
            (tmp_path / "node.log").read_text()
        to = rm.parse_odometry(got["/target/odom"][-1])
        assert (to.frame_id, to.child_frame_id) == ("odom", "target")
        tfs = {(t.parent, t.child) for m in got["/tf"] for t in rm.parse_tf(m)}
        assert {("odom", "base_link"), ("odom", "target")} <= tfs
        marker = got["/target/marker"][-1]
        assert marker.header.frame_id == "target" and marker.type == 1
        assert rm.parse_wrench_stamped(got["/contact_wrench"][-1]).frame_id == "target"
        r = call(probe, clients["grasp"])                   # 0.14 m away: refused
        assert not r.success and r.message.startswith("grasp condition not met"), r.message
        assert "(grasp.position_tol 0.02)" in r.message
        r = call(probe, clients["release"])
        assert not r.success and r.message == "not grasped: nothing to release"
        assert proc.poll() is None
    finally:
        stop_processes([proc], [log])
        probe.shutdown()
    # within reach: granted; the total momentum is the same before and after
    proc, log, probe, got, clients = start(tmp_path, monkeypatch, CAPTURE)
    try:
        assert probe.spin_until(lambda: latest_state(got) is not None, START_S), \
            (tmp_path / "node.log").read_text()
        before = latest_state(got)
        h0 = total_momentum(oracle, before)
        r = call(probe, clients["grasp"])
        assert r.success and r.message.startswith("grasped at t="), r.message
        assert probe.spin_until(lambda: latest_state(got)[0] > before[0] + 200_000_000, START_S)
        after = latest_state(got)
        np.testing.assert_allclose(total_momentum(oracle, after), h0, rtol=0,
                                   atol=1e-10 * np.linalg.norm(h0))
        assert got["/target/marker"][-1].color.g > 0.7       # drawn as grasped
        r = call(probe, clients["release"])
        assert r.success and r.message.startswith("released at t="), r.message
        assert proc.poll() is None
    finally:
        stop_processes([proc], [log])
        probe.shutdown()
