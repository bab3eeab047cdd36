"""``diff_drive_node`` over DDS (loopback, its own domain): a ``geometry_msgs/Twist`` on
``cmd_vel`` drives the base, ``odom`` reports the commanded twist, a bad command is rejected
with a warning naming the field and the node keeps running; Ctrl-C (SIGINT) ends it with 0.  No rate or
latency is asserted (the machine may be busy): the waits are generous deadlines only."""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from processes import REPO, join_dds_domain, stop_processes

pytest.importorskip("cyclonedds")


def test_cmd_vel_over_dds_drives_the_diff_drive_node(tmp_path, monkeypatch):
    from vm_dynamics.ros import messages as rm
    env = join_dds_domain(monkeypatch)
    log = open(tmp_path / "node.log", "w")
    node = subprocess.Popen([sys.executable, "-m", "vm_dynamics.nodes.diff_drive_node",
                             "--ros-args", "-p", "scenario:=diff_drive",
                             "-p", "publish_rate:=20.0"], env=env, stdout=log,
                            stderr=subprocess.STDOUT, cwd=REPO)
    transport = None
    try:
        from vm_dynamics.transport.dds import DdsTransport
        transport = DdsTransport("rolling_test", {}, ["rolling_test"])
        odom = []
        transport.subscribe("odom", rm.ODOMETRY, odom.append)
        pub = transport.publisher("cmd_vel", "geometry_msgs/msg/Twist", "default")
        assert transport.spin_until(lambda: pub.matched_subscriptions > 0 and odom, 120), \
            (tmp_path / "node.log").read_text()
        T = rm.TYPESTORE.types
        V3 = T["geometry_msgs/msg/Vector3"]

        def twist(v, w):
            return T["geometry_msgs/msg/Twist"](linear=V3(x=v, y=0.0, z=0.0),
                                                angular=V3(x=0.0, y=0.0, z=w))

        def reached():
            pub.publish(twist(0.3, 0.2))
            tw = odom[-1].twist.twist
            return abs(tw.linear.x - 0.3) < 1e-6 and abs(tw.angular.z - 0.2) < 1e-6
        assert transport.spin_until(reached, 120), (tmp_path / "node.log").read_text()
        assert odom[-1].twist.twist.linear.y == 0.0
        pub.publish(twist(0.3, float("nan")))
        n = len(odom)
        assert transport.spin_until(lambda: len(odom) > n + 5, 60)      # still publishing
        assert abs(odom[-1].twist.twist.angular.z - 0.2) < 1e-6     # the command was kept
        node.send_signal(signal.SIGINT)            # Ctrl-C: a normal exit
        assert node.wait(60) == 0
        text = (tmp_path / "node.log").read_text()
        assert "angular.z=nan" in text, text
    finally:
        if transport is not None:
            transport.shutdown()
        stop_processes([node], [log])
