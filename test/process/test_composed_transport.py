"""Nodes composed on the DDS transport (:mod:`vm_dynamics.transport.dds_executor`): the samples
between composed nodes go in-process, each exactly once and in the executor's next turn without
a wait; readers outside the composition still get them on DDS, also one that joins late; QoS
rules as DDS's (a transient-local subscription stays on DDS); a trigger
service called by one composed node from another is answered; a writer in another process is
served while the composed nodes keep each other busy (the executor never waits then).

Network rule: loopback-only Cyclone configuration (``test/cyclonedds-loopback.xml``), domain 67.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from vm_dynamics.ros import messages as rm
from vm_dynamics.transport import make_composition, make_transport, message_class
from vm_dynamics.transport.dds import DdsTransport

LOOPBACK_XML = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "cyclonedds-loopback.xml")


@pytest.fixture(autouse=True)
def loopback(monkeypatch):
    monkeypatch.setenv("CYCLONEDDS_URI", "file://" + LOOPBACK_XML)
    monkeypatch.setenv("ROS_DOMAIN_ID", "67")


@pytest.fixture
def pair():
    """Two DDS nodes composed in this process (``pub``, ``sub``)."""
    comp = make_composition("dds")
    pub = make_transport("pub_node", {}, ["prog"], kind="dds", composition=comp)
    sub = make_transport("sub_node", {}, ["prog"], kind="dds", composition=comp)
    yield comp, pub, sub
    sub.shutdown()
    pub.shutdown()
    comp.close()


def _state(k: int):
    return rm.joint_state_msg(k * 1e-3, ["a"], [float(k)], [0.0], [0.0])


def _positions(msgs):
    return [float(rm.parse_joint_state(m).position[0]) for m in msgs]


def test_composed_samples_arrive_once_in_the_next_turn_without_waiting(pair):
    comp, pub, sub = pair
    got = []
    sub.subscribe("joint_states", rm.JOINT_STATE, got.append, "sensor")
    p = pub.publisher("joint_states", rm.JOINT_STATE, "default")
    time.sleep(0.3)                       # DDS discovery (would it match, it would by now)
    for k in range(5):
        p.publish(_state(k))
        t0 = time.monotonic()
        sub.spin_once(5.0)                # would block for 5 s if it waited for DDS
        assert time.monotonic() - t0 < 1.0
        assert _positions(got) == [float(i) for i in range(k + 1)]
    for _ in range(20):                   # nothing comes a second time over DDS
        comp.spin_once(0.01)
    assert _positions(got) == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_outside_reader_gets_every_sample_also_when_it_joins_late(pair):
    comp, pub, sub = pair
    inside = []
    sub.subscribe("joint_states", rm.JOINT_STATE, inside.append, "sensor")
    p = pub.publisher("joint_states", rm.JOINT_STATE, "default")
    for k in range(3):                    # before any outside reader exists
        p.publish(_state(k))
        comp.spin_once(0.0)
    outside_node = DdsTransport("outside", {}, ["prog"])     # not composed: a reader outside
    try:
        outside = []
        outside_node.subscribe("/joint_states", rm.JOINT_STATE, outside.append, "default")
        deadline = time.monotonic() + 10
        while p.writer.get_publication_matched_status().current_count == 0:
            assert time.monotonic() < deadline, "outside reader never matched"
            comp.spin_once(0.01)
        for k in range(3, 10):
            p.publish(_state(k))
            comp.spin_once(0.0)
        outside_node.spin_until(lambda: len(outside) >= 7, 10.0)
        assert _positions(outside) == [float(k) for k in range(3, 10)]
        for _ in range(20):               # the DDS writes do not reach the composed reader
            comp.spin_once(0.01)
        assert _positions(inside) == [float(k) for k in range(10)]
    finally:
        outside_node.shutdown()


def test_qos_rules_of_dds_hold_in_process(pair):
    """A reliable subscription takes nothing from a best-effort publisher (DDS would not
    match them); the in-process queue keeps the newest ``depth`` samples (KEEP_LAST)."""
    comp, pub, sub = pair
    reliable, deep = [], []
    sub.subscribe("/clock", rm.CLOCK, reliable.append, "default")
    sub.subscribe("joint_states", rm.JOINT_STATE, deep.append, "sensor")    # depth 5
    clock = pub.publisher("/clock", rm.CLOCK, "clock")                      # best effort
    states = pub.publisher("joint_states", rm.JOINT_STATE, "default")
    for k in range(8):
        clock.publish(rm.clock_msg(k * 1e-3))
        states.publish(_state(k))
    for _ in range(5):
        comp.spin_once(0.01)
    assert reliable == []
    assert _positions(deep) == [3.0, 4.0, 5.0, 6.0, 7.0]


def test_transient_local_subscription_stays_on_dds(pair):
    comp, pub, sub = pair
    got = []
    latched = pub.publisher("robot_description_test", "std_msgs/msg/String", "latched")
    latched.publish(message_class("std_msgs/msg/String")(data="urdf"))
    sub.subscribe("robot_description_test", "std_msgs/msg/String", got.append, "latched")
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        comp.spin_once(0.05)
    assert [m.data for m in got] == ["urdf"]


def test_a_composed_node_calls_a_trigger_service_of_another(pair):
    """The capture mission's grasp call: the client only sends (the server is served by the
    same executor thread), the response comes in a later turn."""
    comp, pub, sub = pair
    pub.service("~/grasp", "std_srvs/srv/Trigger", lambda req: (True, "grasped"))
    client = sub.trigger_client("/pub_node/grasp")
    deadline = time.monotonic() + 10
    while not client.ready():
        assert time.monotonic() < deadline
        comp.spin_once(0.02)
    client.send()
    assert client.pending
    result = None
    while result is None:
        assert time.monotonic() < deadline
        comp.spin_once(0.02)
        result = client.poll()
    assert result == (True, "grasped") and not client.pending


#: a writer in a process of its own (the composed readers ignore this process's writers)
OUTSIDE_WRITER = """
import time
from vm_dynamics.ros import messages as rm
from vm_dynamics.transport.dds import DdsTransport
t = DdsTransport("outside", {}, ["outside"])
pub = t.publisher("/outside_command", rm.JOINT_STATE, "default")
end = time.monotonic() + 60
while time.monotonic() < end:
    if pub.matched_subscriptions:
        pub.publish(rm.joint_state_msg(0.0, ["a"], [7.0], [0.0], [0.0]))
    time.sleep(0.05)
"""


def test_input_from_outside_is_served_while_the_composed_nodes_keep_each_other_busy(pair):
    """Two composed nodes answering each other without end (in-process samples always
    queued, so the executor never waits) still take a sample from another process: the DDS
    readers are polled while they are busy."""
    comp, pub, sub = pair
    ping = pub.publisher("ping", rm.JOINT_STATE, "default")
    pong = sub.publisher("pong", rm.JOINT_STATE, "default")
    rounds, outside_got = [0], []
    sub.subscribe("ping", rm.JOINT_STATE, lambda m: pong.publish(m), "default")

    def on_pong(m):
        rounds[0] += 1
        ping.publish(m)
    pub.subscribe("pong", rm.JOINT_STATE, on_pong, "default")
    sub.subscribe("/outside_command", rm.JOINT_STATE, outside_got.append, "default")
    writer = subprocess.Popen([sys.executable, "-c", OUTSIDE_WRITER], env=dict(os.environ))
    try:
        ping.publish(_state(0))
        deadline = time.monotonic() + 60
        while not outside_got:
            assert time.monotonic() < deadline, "the sample from outside never arrived"
            assert writer.poll() is None
            comp.spin_once(0.0)
            assert comp.intra.pending                    # the loop never let the executor wait
        assert _positions(outside_got[:1]) == [7.0] and rounds[0] > 10
    finally:
        writer.kill()
        writer.wait(10)
