"""``vm_dynamics.transport.rclpy_cdr`` against rclpy's own serialisation (the oracle): the
encoder writes the bytes of ``rclpy.serialization.serialize_message``, the decoder makes the
message ``deserialize_message`` makes (equal, with the same field types), on random messages
and edge cases (empty sequences, strings of every length modulo 8, non-ASCII text, extreme
numbers); what either declines gives None.  Skipped without rclpy (ROS 2)."""
from __future__ import annotations

import array
import math

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed")

from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from rosidl_fields import field_types  # noqa: E402

from vm_dynamics.transport.rclpy_adapter import rclpy_class  # noqa: E402
from vm_dynamics.transport.rclpy_cdr import CDR_TYPES, cdr_decoder, cdr_encoder  # noqa: E402

TEXTS = ["", "a", "ab", "abc", "odom", "base_link", "joint_7", "añ", "日本語", "x" * 13]


def _time(rng, t):
    t.sec = int(rng.choice([0, 1, -1, 2**31 - 1, -2**31, int(rng.integers(0, 10**6))]))
    t.nanosec = int(rng.choice([0, 999_999_999, 2**32 - 1, int(rng.integers(0, 10**9))]))


def _floats(rng, n):
    pool = [0.0, -0.0, 1e-300, -1e300, math.inf, -math.inf, 5e-324]
    return [float(rng.choice(pool)) if rng.random() < 0.2 else float(rng.normal()) * 10
            for _ in range(n)]


def random_message(msgtype: str, rng):
    msg = rclpy_class(msgtype)()
    header = getattr(msg, "header", None)
    if header is not None:
        _time(rng, header.stamp)
        header.frame_id = str(rng.choice(TEXTS))
    if msgtype.endswith("JointState"):
        n = int(rng.integers(0, 9))
        msg.name = [str(rng.choice(TEXTS)) for _ in range(n)]
        for field in ("position", "velocity", "effort"):
            setattr(msg, field, array.array("d", _floats(rng, int(rng.choice([0, n, 3])))))
    elif msgtype.endswith("Odometry"):
        msg.child_frame_id = str(rng.choice(TEXTS))
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        p.x, p.y, p.z = _floats(rng, 3)
        q.x, q.y, q.z, q.w = _floats(rng, 4)
        msg.pose.covariance = np.array(_floats(rng, 36))
        for v in (msg.twist.twist.linear, msg.twist.twist.angular):
            v.x, v.y, v.z = _floats(rng, 3)
        msg.twist.covariance = np.array(_floats(rng, 36))
    elif msgtype.endswith("WrenchStamped"):
        for v in (msg.wrench.force, msg.wrench.torque):
            v.x, v.y, v.z = _floats(rng, 3)
    else:
        _time(rng, msg.clock)
    return msg


@pytest.mark.parametrize("msgtype", CDR_TYPES)
def test_the_same_bytes_and_messages_as_rclpy(msgtype):
    encode, decode, cls = cdr_encoder(msgtype), cdr_decoder(msgtype), rclpy_class(msgtype)
    rng = np.random.default_rng(7)
    for _ in range(300):
        msg = random_message(msgtype, rng)
        wire = serialize_message(msg)
        assert encode(msg) == wire, msg
        mine, theirs = decode(wire), deserialize_message(wire, cls)
        assert serialize_message(mine) == wire
        assert field_types(mine) == field_types(theirs)
        if "nan" not in repr(theirs):
            assert mine == theirs


@pytest.mark.parametrize("msgtype", CDR_TYPES)
def test_what_is_not_the_expected_form_is_declined(msgtype):
    """None for a short or over-long sample, big-endian encapsulation, a bad string; and for
    a number out of its field's range (rclpy's own conversion then decides what is sent)."""
    encode, decode = cdr_encoder(msgtype), cdr_decoder(msgtype)
    msg = random_message(msgtype, np.random.default_rng(1))
    wire = serialize_message(msg)
    assert decode(wire[:-5]) is None and decode(wire + bytes(8)) is None
    assert decode(b"\x00\x00\x00\x00" + wire[4:]) is None
    if hasattr(msg, "header"):
        bad = bytearray(wire)
        bad[12] ^= 0xFF                        # the frame_id's length
        assert decode(bytes(bad)) is None
        msg.header.stamp.sec = 2**40           # stored unchecked; not an int32
    else:
        msg.clock.sec = 2**40
    assert encode(msg) is None                 # the publisher hands it to rclpy as it is


def test_other_types_have_no_codec():
    assert cdr_encoder("std_msgs/msg/Float64MultiArray") is None
    assert cdr_decoder("tf2_msgs/msg/TFMessage") is None


def test_a_stream_of_joint_states_with_repeated_names():
    """The codecs keep the CDR of the last name sequence and copy it while the names stay the
    same: on a stream whose names repeat, change and come back, behind frame ids of every
    length modulo 8 (so the sequence starts at every offset), the bytes and messages are
    still rclpy's, each decoded message has a list of its own, and a sample whose names
    differ from the last only in the bytes after the first name is decoded afresh."""
    msgtype = "sensor_msgs/msg/JointState"
    encode, decode, cls = cdr_encoder(msgtype), cdr_decoder(msgtype), rclpy_class(msgtype)
    rng = np.random.default_rng(3)
    arm = [f"joint{i}" for i in range(1, 8)]
    streams = [arm] * 4 + [arm[:-1] + ["joint8"], arm, [], arm, ["añ", "b"], ["añ", "b"], arm]
    decoded = []
    for k, names in enumerate(streams):
        msg = random_message(msgtype, rng)
        msg.header.frame_id = "f" * (k % 9)
        msg.name = list(names)
        msg.position = array.array("d", _floats(rng, len(names)))
        wire = serialize_message(msg)
        assert encode(msg) == wire, (k, names)
        mine = decode(wire)
        assert mine == deserialize_message(wire, cls) and mine.name == names, (k, names)
        decoded.append(mine)
    decoded[0].name.append("extra")
    assert decoded[1].name == arm and decoded[2].name == arm
