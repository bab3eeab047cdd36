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
