"""The DDS transport's per-period costs in lockstep, as behaviour: one read of the discovered
writers answers a publisher watch's counts (not one read per topic), and a new writer is
counted once that read is older than ``PUBLICATIONS_FRESH_S``.

Network rule: loopback-only Cyclone configuration (``test/cyclonedds-loopback.xml``), domain 66.
"""
from __future__ import annotations

import os

import pytest
from cyclonedds.builtin import BuiltinDataReader

from vm_dynamics.ros import messages as rm
from vm_dynamics.transport.dds import PUBLICATIONS_FRESH_S, DdsTransport

LOOPBACK_XML = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "cyclonedds-loopback.xml")


@pytest.fixture(autouse=True)
def loopback(monkeypatch):
    monkeypatch.setenv("CYCLONEDDS_URI", "file://" + LOOPBACK_XML)
    monkeypatch.setenv("ROS_DOMAIN_ID", "66")


def test_one_read_of_the_discovered_writers_answers_a_watch_check(monkeypatch):
    reads = []
    real_read = BuiltinDataReader.read

    def counted(self, *a, **k):
        reads.append(1)
        return real_read(self, *a, **k)
    monkeypatch.setattr(BuiltinDataReader, "read", counted)
    now = [1000.0]
    a = DdsTransport("watcher", None, ["prog"])
    b = DdsTransport("other", None, ["prog"])
    try:
        a.monotonic = lambda: now[0]
        a.publisher("/clock", rm.CLOCK, "clock")
        a.publisher("joint_states", rm.JOINT_STATE)

        def counts():
            return [a.count_publishers(t) for t in ("/clock", "joint_states", "odom")]
        # discovery of this node's own writers is asynchronous: re-read until seen
        while counts()[:2] != [1, 1]:
            now[0] += PUBLICATIONS_FRESH_S
            a.spin_once(0.05)
        before = len(reads)
        assert counts() == [1, 1, 0] and len(reads) == before      # one read served all
        b.publisher("/clock", rm.CLOCK, "clock")                  # a second source
        for _ in range(400):
            now[0] += PUBLICATIONS_FRESH_S                         # the read is stale
            if counts()[0] == 2:
                break
            a.spin_once(0.02)
        assert counts() == [2, 1, 0]
        assert len(reads) > before
    finally:
        b.shutdown()
        a.shutdown()


def test_paths_are_not_built_while_nobody_subscribes_to_them():
    """ee_path and base_path (SKIPPABLE) go out only while subscribed, looked up every
    SUBSCRIBERS_REFRESH_S of wall time, as /tf; their poses are recorded meanwhile, so a
    subscriber that appears gets the whole path."""
    from memory_transport import ListeningTransport

    from vm_dynamics.config.params import flatten, read_params_file
    from vm_dynamics.nodes.controller_core import ControllerCore
    from vm_dynamics.nodes.dynamics_core import DynamicsCore
    from vm_dynamics.nodes.dynamics_node import SUBSCRIBERS_REFRESH_S, DynamicsNode
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = flatten(read_params_file(os.path.join(repo, "config", "spacecraft_arm.yaml")))
    p.update(dynamics_backend="lp", dt=0.005, lockstep=True, control_rate=200.0,
             real_time_factor=0.0, publish_rate=200.0, path_rate=1000.0, ee_path_length=500)
    dyn, ctrl = DynamicsCore.from_params(p), ControllerCore.from_params(p)
    listening = {"ee_path": False, "base_path": False}
    wall = [0.0]
    tr = ListeningTransport(p, listening)
    node = DynamicsNode(tr, dyn, wall=lambda: wall[0])

    def sent(topic):
        return [m for t, m in tr.sent if t == topic]

    def periods(n):
        for _ in range(n):
            for key, msg in dyn.state_messages():
                if key == "joint_states":
                    ctrl.on_joint_state(rm.deserialize(rm.serialize(msg), rm.JOINT_STATE))
                elif key == "odom":
                    ctrl.on_odometry(rm.deserialize(rm.serialize(msg), rm.ODOMETRY))
            for key, msg in ctrl.command_messages(dyn.t):
                assert dyn.apply_command(key, msg)
            wall[0] += 0.01
            node.tick()
    wall[0] += SUBSCRIBERS_REFRESH_S
    node.tick()
    assert dyn.unsubscribed == {"ee_path", "base_path"}
    before = {t: len(sent(t)) for t in ("ee_path", "base_path")}
    periods(40)
    assert {t: len(sent(t)) for t in ("ee_path", "base_path")} == before
    assert len(dyn.ee_path) > 30 and len(node.base_path) > 30       # still recorded
    listening.update(ee_path=True, base_path=True)
    wall[0] += SUBSCRIBERS_REFRESH_S
    node.tick()
    assert dyn.unsubscribed == set()
    periods(20)
    ee, base = sent("ee_path"), sent("base_path")
    assert len(ee) > before["ee_path"] and len(base) > before["base_path"]
    # the whole path, the poses recorded while nobody listened included
    assert len(ee[-1].poses) > 50 and ee[-1].poses[0] is dyn.ee_path[0][1]
    assert len(base[-1].poses) > 50 and base[-1].poses[0] is node.base_path[0][1]
