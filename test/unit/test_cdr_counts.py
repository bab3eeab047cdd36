"""Sequence counts read from serialized CDR before decoding, and linear-time name checks.

Oracles: rosbags ``serialize_cdr`` (the real .msg definitions, both byte orders) for the byte
layout; the exact element counts of the messages serialized; for "before decoding", samples
whose header claims more elements than the bytes could hold, which a decoder would have to
start building before it failed; for "linear", the number of name comparisons made.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest

from vm_dynamics.ros import messages as rm

T = rm.TYPESTORE.types
TRAJ = "trajectory_msgs/msg/JointTrajectory"


def _point(k, rng):
    return T["trajectory_msgs/msg/JointTrajectoryPoint"](
        positions=rng.random(k), velocities=rng.random(k % 2), accelerations=np.zeros(0),
        effort=np.zeros(3), time_from_start=T["builtin_interfaces/msg/Duration"](sec=1,
                                                                               nanosec=5))


@pytest.mark.parametrize("little_endian", [True, False])
def test_counts_read_from_cdr_match_the_messages_in_both_byte_orders(little_endian):
    rng = np.random.default_rng(3)
    for _ in range(60):
        names = ["x" * int(rng.integers(0, 7)) for _ in range(int(rng.integers(0, 5)))]
        js = T[rm.JOINT_STATE](header=rm.header_msg(1.5, "f" * int(rng.integers(0, 9))),
                              name=names, position=rng.random(int(rng.integers(0, 4))),
                              velocity=rng.random(int(rng.integers(0, 4))),
                              effort=rng.random(int(rng.integers(0, 4))))
        tr = T[TRAJ](header=rm.header_msg(0.0, "a" * int(rng.integers(0, 5))),
                     joint_names=names,
                     points=[_point(int(rng.integers(0, 3)), rng)
                             for _ in range(int(rng.integers(0, 4)))])
        for msg, mtype, fields in [(js, rm.JOINT_STATE, ("name", "position", "velocity",
                                                         "effort")),
                                   (tr, TRAJ, ("joint_names", "points"))]:
            data = bytes(rm.TYPESTORE.serialize_cdr(msg, mtype, little_endian=little_endian))
            assert data[1] == (1 if little_endian else 0)
            for field in fields:              # the last field needs all others skipped
                n = len(getattr(msg, field))
                rm.check_sequence_counts(data, mtype, {field: n})
                if n:
                    with pytest.raises(rm.SequenceCountError,
                                       match=rf"\.{field} has {n} entries, more than the "
                                             rf"limit of {n - 1}"):
                        rm.check_sequence_counts(data, mtype, {field: n - 1})
            assert rm.deserialize(data, mtype, {f: 10 for f in fields}) is not None


def _claiming(mtype, counts):
    """CDR of ``mtype`` as far as its first sequences, claiming ``counts`` elements for them
    but holding none: a decoder would start building elements and fail on the missing bytes."""
    out = bytearray(b"\x00\x01\x00\x00")
    out += struct.pack("<iI", 5, 0)                       # header.stamp
    out += struct.pack("<I", 1) + b"\x00"                 # header.frame_id ""
    out += b"\x00" * (-(len(out) - 4) % 4)
    for n in counts:
        out += struct.pack("<I", n)
    return bytes(out)


def test_an_oversized_count_is_rejected_from_the_header_alone():
    huge = _claiming(rm.JOINT_STATE, [10**9])
    with pytest.raises(rm.SequenceCountError,
                       match=r"JointState\.name has 1000000000 entries, more than "
                             r"max_joint_state_names=1000 \(read from the serialized sample"):
        rm.deserialize(huge, rm.JOINT_STATE, {"name": (1000, "max_joint_state_names")})
    # the same bytes without a limit reach the decoder, which fails on the missing data
    with pytest.raises(ValueError, match="malformed CDR") as err:
        rm.deserialize(huge, rm.JOINT_STATE)
    assert not isinstance(err.value, rm.SequenceCountError)
    traj = _claiming(TRAJ, [0, 43_000])                   # no joint names, 43 000 points
    with pytest.raises(rm.SequenceCountError, match=r"JointTrajectory\.points has 43000 "
                                                     r"entries, more than max_trajectory_"
                                                     r"points=1000"):
        rm.check_sequence_counts(traj, TRAJ, {"joint_names": 6,
                                              "points": (1000, "max_trajectory_points")})
    # a limit on a field behind the claimed one: the scanner never builds the elements, it
    # finds the bytes missing
    with pytest.raises(ValueError, match="malformed CDR data"):
        rm.check_sequence_counts(_claiming(TRAJ, [10**9]), TRAJ, {"points": 1000})


def test_the_issue_messages_are_rejected_before_decoding():
    """A 1.04 MB JointState of 130 000 empty names and a 1 MB JointTrajectory of 43 000 empty
    points (both under the 1 MiB byte limit) are dropped with a message naming the limit."""
    js = T[rm.JOINT_STATE](header=rm.header_msg(0.0), name=[""] * 130_000,
                          position=np.zeros(0), velocity=np.zeros(0), effort=np.zeros(0))
    data = rm.serialize(js)
    assert 1_000_000 < len(data) < 1_048_576
    with pytest.raises(rm.SequenceCountError, match="name has 130000 entries"):
        rm.deserialize(data, rm.JOINT_STATE, {"name": (1000, "max_joint_state_names")})
    pt = T["trajectory_msgs/msg/JointTrajectoryPoint"](
        positions=np.zeros(0), velocities=np.zeros(0), accelerations=np.zeros(0),
        effort=np.zeros(0), time_from_start=T["builtin_interfaces/msg/Duration"](sec=0,
                                                                               nanosec=0))
    tr = T[TRAJ](header=rm.header_msg(0.0), joint_names=[], points=[pt] * 43_000)
    data = rm.serialize(tr)
    assert 1_000_000 < len(data) < 1_048_576
    with pytest.raises(rm.SequenceCountError, match="points has 43000 entries"):
        rm.deserialize(data, TRAJ, {"points": (1000, "max_trajectory_points")})


def test_count_limits_are_validated():
    with pytest.raises(ValueError, match="not a sequence field"):
        rm.check_count_limits(rm.JOINT_STATE, {"header": 3})
    with pytest.raises(ValueError, match="not a sequence field"):
        rm.check_count_limits(rm.JOINT_STATE, {"names": 3})
    with pytest.raises(ValueError, match="integer >= 0"):
        rm.check_count_limits(rm.JOINT_STATE, {"name": -1})
    with pytest.raises(ValueError, match="unknown message type"):
        rm.check_count_limits("nope/msg/Nope", {"name": 1})


class _Name(str):
    """A joint name that counts the comparisons made with it."""

    compared = 0

    def __eq__(self, other):
        _Name.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_duplicate_joint_names_are_found_in_linear_time():
    n = 3000
    names = [_Name(f"j{k}") for k in range(n)] + [_Name("j7")]
    msg = T[rm.JOINT_STATE](header=rm.header_msg(0.0), name=[], position=np.zeros(0),
                           velocity=np.zeros(0), effort=np.zeros(0))
    msg.name = names
    msg.position = np.zeros(n + 1)
    _Name.compared = 0
    with pytest.raises(ValueError, match=r"duplicate joint names \['j7'\]"):
        rm.parse_joint_state(msg)
    assert _Name.compared < 10 * n, _Name.compared     # list.count per name: n² = 9e6
    _Name.compared = 0
    with pytest.raises(ValueError, match="duplicate joint names"):
        rm.joint_state_msg(0.0, names, np.zeros(n + 1))
    assert _Name.compared < 10 * n, _Name.compared


def test_a_missing_joint_error_does_not_print_every_name():
    js = rm.joint_state_msg(0.0, [f"j{k}" for k in range(5000)], np.zeros(5000))
    with pytest.raises(ValueError, match="missing joint names") as err:
        rm.parse_joint_state(js, ["joint1"])
    assert len(str(err.value)) < 400 and "5000 names" in str(err.value)


def test_one_scanner_serves_the_screen_and_the_count_limits():
    """The dynamics node's Float64MultiArray screen (no type store) and the count limits (the
    type store's field descriptions) walk the same bytes with one scanner: on rosbags' CDR of
    random layouts, in both byte orders, the screen's ``data`` length is the count the limits
    read, and its field table describes the type as the type store does."""
    from vm_dynamics.ros.cdr_counts import FLOAT64_MULTI_ARRAY_FIELDS, float64_multi_array_extent
    for mtype, (_, fields) in FLOAT64_MULTI_ARRAY_FIELDS.items():   # Nodetype is an IntEnum
        assert list(rm.TYPESTORE.fielddefs[mtype][1]) == fields, mtype
    rng = np.random.default_rng(11)
    for _ in range(100):
        dims = [T["std_msgs/msg/MultiArrayDimension"](label="x" * int(rng.integers(0, 5)),
                                                      size=1, stride=1)
                for _ in range(int(rng.integers(0, 4)))]
        msg = T[rm.FLOAT64_MULTI_ARRAY](
            layout=T["std_msgs/msg/MultiArrayLayout"](dim=dims, data_offset=0),
            data=rng.normal(size=int(rng.integers(0, 9))))
        for little in (True, False):
            data = bytes(rm.TYPESTORE.serialize_cdr(msg, rm.FLOAT64_MULTI_ARRAY,
                                                    little_endian=little))
            size = float64_multi_array_extent(data).size
            assert size == len(msg.data)
            rm.check_sequence_counts(data, rm.FLOAT64_MULTI_ARRAY, {"data": size})
            if size:
                with pytest.raises(rm.SequenceCountError, match=f"data has {size} entries"):
                    rm.check_sequence_counts(data, rm.FLOAT64_MULTI_ARRAY, {"data": size - 1})
