"""The builders of :mod:`vm_dynamics.ros.messages` with the real rosidl classes (``'rosidl'``
library): the lockstep's messages (JointState, Odometry, WrenchStamped, Clock) and tf are made
without their constructors, and must be the messages the constructors make from the same
values (the oracle: the classes' own ``__init__`` and rclpy's ``serialize_message``) -- equal,
the same bytes, the same field types and ``_check_fields`` -- while building no nested default
that is thrown away.  Skipped without rclpy (ROS 2)."""
from __future__ import annotations

import array

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed")

from builtin_interfaces.msg import Time  # noqa: E402
from geometry_msgs.msg import (  # noqa: E402
    Point,
    Pose,
    PoseWithCovariance,
    Quaternion,
    Transform,
    TransformStamped,
    Twist,
    TwistWithCovariance,
    Vector3,
    Wrench,
    WrenchStamped,
)
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from rosidl_fields import field_types  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from vm_dynamics.ros import messages as m  # noqa: E402


@pytest.fixture(autouse=True)
def rosidl_library():
    previous = m.use_message_library("rosidl")
    yield
    m.use_message_library(previous)


def same(mine, oracle):
    assert type(mine) is type(oracle)
    assert mine == oracle
    assert serialize_message(mine) == serialize_message(oracle)
    assert field_types(mine) == field_types(oracle)


def header(sec, nanosec, frame):
    return Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id=frame)


def test_odometry_is_the_constructors_message():
    rng = np.random.default_rng(3)
    for _ in range(50):
        q = rng.normal(size=4)
        q *= np.sign(q[3]) / np.linalg.norm(q)
        g = np.eye(4)
        g[:3, :3] = m.matrix_from_quat(q)
        g[:3, 3] = rng.normal(size=3)
        V = rng.normal(size=6).tolist()
        cov = rng.normal(size=(6, 6))
        mine = m.odometry_msg(12.25, g, V, pose_covariance=cov)
        p, qq = m.pose_from_matrix(g)
        oracle = Odometry(
            header=header(12, 250_000_000, "odom"), child_frame_id="base_link",
            pose=PoseWithCovariance(
                pose=Pose(position=Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                          orientation=Quaternion(x=float(qq[0]), y=float(qq[1]),
                                                 z=float(qq[2]), w=float(qq[3]))),
                covariance=cov.reshape(36).copy()),
            twist=TwistWithCovariance(
                twist=Twist(linear=Vector3(x=V[0], y=V[1], z=V[2]),
                            angular=Vector3(x=V[3], y=V[4], z=V[5])),
                covariance=np.zeros(36)))
        same(mine, oracle)


def test_joint_state_wrench_clock_and_tf_are_the_constructors_messages():
    names = ["a", "joint_2", "日本"]
    q = np.array([0.5, -1.0, 2.0])
    same(m.joint_state_msg(-1.5, names, q, q * 2, None, frame_id="base"),
         JointState(header=header(-2, 500_000_000, "base"), name=names,
                    position=array.array("d", q), velocity=array.array("d", q * 2),
                    effort=array.array("d")))
    w = (np.arange(6.0) - 2.5).tolist()
    same(m.wrench_stamped_msg(3.0, w, "tool"),
         WrenchStamped(header=header(3, 0, "tool"),
                       wrench=Wrench(force=Vector3(x=w[0], y=w[1], z=w[2]),
                                     torque=Vector3(x=w[3], y=w[4], z=w[5]))))
    same(m.clock_msg(7.000000001), Clock(clock=Time(sec=7, nanosec=1)))
    g = np.eye(4)
    g[:3, 3] = [1.0, 2.0, 3.0]
    same(m.tf_msg(0.5, [("odom", "base_link", g)]),
         TFMessage(transforms=[TransformStamped(
             header=header(0, 500_000_000, "odom"), child_frame_id="base_link",
             transform=Transform(translation=Vector3(x=1.0, y=2.0, z=3.0),
                                 rotation=Quaternion(x=0.0, y=0.0, z=0.0, w=1.0)))]))


def test_no_nested_default_is_built_and_thrown_away(monkeypatch):
    """Each message of an Odometry is made once: none by a constructor's default."""
    made = []
    for cls in (Header, Time, PoseWithCovariance, Pose, Point, Quaternion,
                TwistWithCovariance, Twist, Vector3, Odometry):
        init = cls.__init__

        def counted(self, _init=init, _name=cls.__name__, **kwargs):
            made.append(_name)
            _init(self, **kwargs)
        monkeypatch.setattr(cls, "__init__", counted)
    msg = m.odometry_msg(1.0, np.eye(4), np.zeros(6))
    assert made == []
    assert msg.pose.pose.orientation.w == 1.0


def test_a_message_made_here_is_checked_on_later_assignment_as_a_constructed_one():
    mine, oracle = m.wrench_stamped_msg(1.0, np.zeros(6)), WrenchStamped()
    assert mine._check_fields == oracle._check_fields
    assert mine.wrench.force._check_fields == oracle.wrench.force._check_fields
