"""The rclpy transport's executor (``vm_dynamics.transport.rclpy_executor.LeanExecutor``) on
the real rclpy: one wait set while the node's entities stay the same, and everything still
served -- subscriptions (with and without the message info), timers, services, clients, a
subscription made or destroyed while spinning, and a waitable (a QoS event handler, run by
rclpy's own executor turn).  Skipped without rclpy (ROS 2)."""
from __future__ import annotations

import time

import pytest
from ros_domain import ros_domain_env

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed")

FLOATS = "std_msgs/msg/Float64MultiArray"


def counting_wait_sets(monkeypatch) -> list:
    """From now on, count the rcl wait sets made in this process (``[count]``)."""
    from rclpy.impl.implementation_singleton import rclpy_implementation as impl
    made, wait_set = [0], impl.WaitSet

    def counted(*args):
        made[0] += 1
        return wait_set(*args)
    monkeypatch.setattr(impl, "WaitSet", counted)
    return made


def spin_until(spin_once, pred, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        spin_once(0.05)
        if pred():
            return True
    return False


def test_the_transport_spins_on_one_wait_set(monkeypatch):
    """A timer and 100 messages, over 100+ turns of ``RclpyTransport.spin_once``: no wait set
    is made after the first turns (rclpy's SingleThreadedExecutor makes one per wait, about
    two per callback).  rclpy's own turn (waitables) runs once here: its period is set
    beyond the test."""
    from std_msgs.msg import Float64MultiArray

    from vm_dynamics.transport import QosSpec
    from vm_dynamics.transport.rclpy_adapter import RclpyTransport
    ros_domain_env(monkeypatch)
    deep = QosSpec(reliable=True, transient_local=False, depth=200)   # none lost
    monkeypatch.setattr("vm_dynamics.transport.rclpy_executor.LeanExecutor.RCLPY_TURN_S", 1e9)
    t = RclpyTransport("lean_executor_probe", {}, ["probe"])
    try:
        got, ticks = [], []
        pub = t.publisher("lean_numbers", FLOATS, deep)
        t.subscribe("lean_numbers", FLOATS, got.append, deep)
        t.timer(0.002, lambda: ticks.append(1))
        assert spin_until(t.spin_once, lambda: len(ticks) > 3)
        while not pub.has_subscribers():          # discovery of its own subscription
            t.spin_once(0.05)
        made = counting_wait_sets(monkeypatch)
        for i in range(100):
            pub.publish(Float64MultiArray(data=[float(i)]))
            t.spin_once(0.05)
        assert spin_until(t.spin_once, lambda: len(got) == 100)
        assert [m.data[0] for m in got] == [float(i) for i in range(100)]
        assert made[0] == 0, made
    finally:
        t.shutdown()


def test_every_kind_of_entity_is_served(monkeypatch):
    """Subscriptions (message only; message and info), a timer, a service and a client of it,
    a subscription made while spinning (served), one destroyed while spinning (no more
    callbacks, no error), and a QoS event handler (a waitable, served by rclpy's turn)."""
    from rclpy.event_handler import SubscriptionEventCallbacks
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Float64MultiArray
    from std_srvs.srv import Trigger

    from vm_dynamics.transport.rclpy_executor import LeanExecutor
    ros_domain_env(monkeypatch)
    rclpy.init()
    node = rclpy.create_node("lean_executor_kinds")
    ex = LeanExecutor(node)
    try:
        got = {"plain": [], "info": [], "late": [], "gone": [], "tick": [], "qos": []}
        pub = node.create_publisher(Float64MultiArray, "kinds", 10)
        node.create_subscription(Float64MultiArray, "kinds", got["plain"].append, 10)
        node.create_subscription(Float64MultiArray, "kinds",
                                 lambda m, info: got["info"].append((m, info)), 10)
        gone = node.create_subscription(Float64MultiArray, "kinds", got["gone"].append, 10)
        node.create_timer(0.005, lambda: got["tick"].append(1))
        node.create_service(Trigger, "kinds_trigger",
                            lambda req, resp: setattr(resp, "message", "served") or resp)
        client = node.create_client(Trigger, "kinds_trigger")
        # a reliable subscription and a best-effort publisher: incompatible QoS, reported
        # through the subscription's event handler
        node.create_subscription(
            Float64MultiArray, "kinds_qos", lambda m: None,
            QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE),
            event_callbacks=SubscriptionEventCallbacks(
                incompatible_qos=lambda event: got["qos"].append(event)))
        node.create_publisher(Float64MultiArray, "kinds_qos",
                              QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT))
        assert spin_until(ex.spin_once, lambda: pub.get_subscription_count() == 3)
        pub.publish(Float64MultiArray(data=[1.0]))
        assert spin_until(ex.spin_once, lambda: got["plain"] and got["info"] and got["gone"])
        assert got["info"][0][0].data[0] == 1.0 and "source_timestamp" in got["info"][0][1]
        node.destroy_subscription(gone)
        node.create_subscription(Float64MultiArray, "kinds", got["late"].append, 10)
        assert spin_until(ex.spin_once, lambda: pub.get_subscription_count() == 3)
        pub.publish(Float64MultiArray(data=[2.0]))
        assert spin_until(ex.spin_once, lambda: len(got["plain"]) == 2 and got["late"])
        assert len(got["gone"]) == 1 and got["late"][0].data[0] == 2.0
        assert client.wait_for_service(timeout_sec=20.0)
        future = client.call_async(Trigger.Request())
        assert spin_until(ex.spin_once, future.done)
        assert future.result().message == "served"
        assert spin_until(ex.spin_once, lambda: got["qos"] and len(got["tick"]) > 5)
        assert ex.builds >= 2              # made again after the entities changed
    finally:
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown()


def test_a_burst_is_taken_in_the_turn_of_its_first_sample(monkeypatch):
    """Samples that are there when a wait's callbacks have run are taken in the same turn
    (a sweep of plain takes): five queued on one topic and one on another give, in one
    ``spin_once``, ``1 + SWEEPS`` of the first in order and the one of the second; the rest
    come in the next turn, and the timer is still served (the sweep is bounded)."""
    from std_msgs.msg import Float64MultiArray

    from vm_dynamics.transport.rclpy_executor import LeanExecutor
    ros_domain_env(monkeypatch)
    monkeypatch.setattr(LeanExecutor, "RCLPY_TURN_S", 1e9)
    rclpy.init()
    node = rclpy.create_node("lean_executor_burst")
    ex = LeanExecutor(node)
    try:
        a, b, ticks = [], [], []
        pub_a = node.create_publisher(Float64MultiArray, "burst_a", 10)
        pub_b = node.create_publisher(Float64MultiArray, "burst_b", 10)
        node.create_subscription(Float64MultiArray, "burst_a", a.append, 10)
        node.create_subscription(Float64MultiArray, "burst_b", b.append, 10)
        node.create_timer(0.001, lambda: ticks.append(1))
        assert spin_until(ex.spin_once, lambda: pub_a.get_subscription_count() == 1
                          and pub_b.get_subscription_count() == 1 and ticks)
        ex.spin_once(0)
        for i in range(5):
            pub_a.publish(Float64MultiArray(data=[float(i)]))
        pub_b.publish(Float64MultiArray(data=[9.0]))
        ex.spin_once(5.0)          # one wait: the samples are in the readers (same process)
        sweeps = getattr(LeanExecutor, "SWEEPS", 0)
        assert [m.data[0] for m in a] == [0.0, 1.0, 2.0] and sweeps == 2
        assert [m.data[0] for m in b] == [9.0]
        assert spin_until(ex.spin_once, lambda: len(a) == 5)
        assert [m.data[0] for m in a] == [float(i) for i in range(5)] and len(b) == 1
        ticks.clear()
        assert spin_until(ex.spin_once, lambda: ticks)
    finally:
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown()


def test_rclpy_made_message_subscriptions_of_cdr_types_are_decoded_here(monkeypatch):
    """A subscription rclpy takes as messages (``raw=False``, as ``TimeSource``'s /clock) of a
    type with a decoder in ``rclpy_cdr`` gets the decoder's message -- equal to what was
    published, of the rosidl class -- and one of another type rclpy's own."""
    from builtin_interfaces.msg import Time
    from rosgraph_msgs.msg import Clock
    from std_msgs.msg import Float64MultiArray

    from vm_dynamics.transport import rclpy_executor
    ros_domain_env(monkeypatch)
    decoded = []
    real = rclpy_executor.cdr_decoder

    def counting(msgtype):
        fast = real(msgtype)
        if fast is None:
            return None

        def decode(data):
            decoded.append(msgtype)
            return fast(data)
        return decode
    monkeypatch.setattr(rclpy_executor, "cdr_decoder", counting)
    monkeypatch.setattr(rclpy_executor.LeanExecutor, "RCLPY_TURN_S", 1e9)
    rclpy.init()
    node = rclpy.create_node("lean_executor_decoded")
    ex = rclpy_executor.LeanExecutor(node)
    try:
        clocks, floats = [], []
        pub = node.create_publisher(Clock, "decoded_clock", 10)
        pub_f = node.create_publisher(Float64MultiArray, "decoded_floats", 10)
        node.create_subscription(Clock, "decoded_clock", clocks.append, 10)
        node.create_subscription(Float64MultiArray, "decoded_floats", floats.append, 10)
        assert spin_until(ex.spin_once, lambda: pub.get_subscription_count() == 1
                          and pub_f.get_subscription_count() == 1)
        sent = Clock(clock=Time(sec=12, nanosec=345678901))
        pub.publish(sent)
        pub_f.publish(Float64MultiArray(data=[1.5]))
        assert spin_until(ex.spin_once, lambda: clocks and floats)
        assert type(clocks[0]) is Clock and clocks[0] == sent
        assert list(floats[0].data) == [1.5]
        assert decoded == ["rosgraph_msgs/msg/Clock"]
    finally:
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown()


def test_max_per_turn_bounds_what_one_wait_delivers(monkeypatch):
    """The transport's ``max_per_turn`` holds with the sweeps: a subscription bounded to one
    sample per turn gets one of three queued samples per ``spin_once`` (the oldest first),
    an unbounded one all three in one."""
    from std_msgs.msg import Float64MultiArray

    from vm_dynamics.transport import QosSpec
    from vm_dynamics.transport.rclpy_adapter import RclpyTransport
    ros_domain_env(monkeypatch)
    monkeypatch.setattr("vm_dynamics.transport.rclpy_executor.LeanExecutor.RCLPY_TURN_S", 1e9)
    deep = QosSpec(reliable=True, transient_local=False, depth=10)
    t = RclpyTransport("lean_executor_per_turn", {}, ["probe"])
    try:
        one, every = [], []
        pub_one = t.publisher("per_turn_one", FLOATS, deep)
        pub_every = t.publisher("per_turn_every", FLOATS, deep)
        t.subscribe("per_turn_one", FLOATS, one.append, deep, max_per_turn=1)
        t.subscribe("per_turn_every", FLOATS, every.append, deep)
        t.spin_once(0)                 # the first turn of rclpy's own executor is done here
        while not (pub_one.has_subscribers() and pub_every.has_subscribers()):
            t.spin_once(0.05)
        for i in range(3):
            pub_one.publish(Float64MultiArray(data=[float(i)]))
            pub_every.publish(Float64MultiArray(data=[float(i)]))
        t.spin_once(5.0)
        assert [m.data[0] for m in one] == [0.0]
        assert [m.data[0] for m in every] == [0.0, 1.0, 2.0]
        t.spin_once(5.0)
        assert [m.data[0] for m in one] == [0.0, 1.0]
    finally:
        t.shutdown()
