"""The hand-written CDR encoders of the lockstep messages (vm_dynamics.transport.fast_cdr):
rosbags' bytes for every message in exact wire form, None for anything else."""
from __future__ import annotations

import math
import random
from dataclasses import replace

import numpy as np
import pytest

from vm_dynamics.ros import messages as rm
from vm_dynamics.transport.exact_cdr import exact_serializer
from vm_dynamics.transport.fast_cdr import DECODED_TYPES, FAST_TYPES, fast_decoder, fast_encoder

T = rm.TYPESTORE.types
STORE = rm.TYPESTORE

FLOATS = [0.0, -0.0, 1.5, -2.25e300, 5e-324, math.inf, -math.inf, math.nan, 1 / 3]
NAMES = ["", "a", "joint_1", "bé", "ünïcode✓", "x" * 37]


def _f(rng):
    return rng.choice(FLOATS) if rng.random() < 0.3 else rng.uniform(-1e3, 1e3)


def _arr(rng, n):
    return np.array([_f(rng) for _ in range(n)], dtype=np.float64)


def _time(rng):
    return T["builtin_interfaces/msg/Time"](
        sec=rng.choice([0, 1, -1, 2**31 - 1, -2**31, rng.randrange(-2**31, 2**31)]),
        nanosec=rng.choice([0, 1, 999_999_999, 2**32 - 1, rng.randrange(2**32)]))


def _header(rng):
    return T["std_msgs/msg/Header"](stamp=_time(rng), frame_id=rng.choice(NAMES))


def _vec(rng, cls="geometry_msgs/msg/Vector3"):
    return T[cls](x=_f(rng), y=_f(rng), z=_f(rng))


def _quat(rng):
    return T["geometry_msgs/msg/Quaternion"](x=_f(rng), y=_f(rng), z=_f(rng), w=_f(rng))


def _message(msgtype, rng):
    if msgtype == rm.JOINT_STATE:
        n = rng.randrange(0, 8)
        return T[msgtype](header=_header(rng), name=[rng.choice(NAMES) for _ in range(n)],
                          position=_arr(rng, rng.choice([0, n])),
                          velocity=_arr(rng, rng.choice([0, n, 3])),
                          effort=_arr(rng, rng.choice([0, n])))
    if msgtype == rm.ODOMETRY:
        pose = T["geometry_msgs/msg/Pose"](position=_vec(rng, "geometry_msgs/msg/Point"),
                                           orientation=_quat(rng))
        twist = T["geometry_msgs/msg/Twist"](linear=_vec(rng), angular=_vec(rng))
        return T[msgtype](
            header=_header(rng), child_frame_id=rng.choice(NAMES),
            pose=T["geometry_msgs/msg/PoseWithCovariance"](pose=pose, covariance=_arr(rng, 36)),
            twist=T["geometry_msgs/msg/TwistWithCovariance"](twist=twist,
                                                             covariance=_arr(rng, 36)))
    if msgtype == rm.TF_MESSAGE:
        return T[msgtype](transforms=[T["geometry_msgs/msg/TransformStamped"](
            header=_header(rng), child_frame_id=rng.choice(NAMES),
            transform=T["geometry_msgs/msg/Transform"](translation=_vec(rng),
                                                       rotation=_quat(rng)))
            for _ in range(rng.randrange(0, 4))])
    if msgtype == rm.WRENCH_STAMPED:
        return T[msgtype](header=_header(rng), wrench=T["geometry_msgs/msg/Wrench"](
            force=_vec(rng), torque=_vec(rng)))
    assert msgtype == rm.CLOCK
    return T[msgtype](clock=_time(rng))


@pytest.mark.parametrize("msgtype", FAST_TYPES)
def test_fast_encoders_write_rosbags_bytes(msgtype):
    rng = random.Random(msgtype)
    encode = fast_encoder(msgtype)
    for _ in range(300):
        msg = _message(msgtype, rng)
        data = encode(msg)
        assert data is not None
        assert data == bytes(STORE.serialize_cdr(msg, msgtype))
        assert exact_serializer(msgtype)(msg) == data


def _odom():
    return _message(rm.ODOMETRY, random.Random(1))


@pytest.mark.parametrize("what, bad", [
    ("bool in a float64", lambda m: replace(m, pose=replace(m.pose, pose=replace(
        m.pose.pose, position=replace(m.pose.pose.position, x=True))))),
    ("int in a float64", lambda m: replace(m, twist=replace(m.twist, twist=replace(
        m.twist.twist, linear=replace(m.twist.twist.linear, y=3))))),
    ("numpy float64 scalar", lambda m: replace(m, pose=replace(m.pose, pose=replace(
        m.pose.pose, orientation=replace(m.pose.pose.orientation, w=np.float64(1.0)))))),
    ("float32 covariance", lambda m: replace(m, pose=replace(
        m.pose, covariance=np.zeros(36, np.float32)))),
    ("big-endian covariance", lambda m: replace(m, pose=replace(
        m.pose, covariance=m.pose.covariance.astype(">f8")))),
    ("35 covariance entries", lambda m: replace(m, twist=replace(
        m.twist, covariance=m.twist.covariance[:35].copy()))),
    ("2-D covariance", lambda m: replace(m, twist=replace(
        m.twist, covariance=m.twist.covariance.reshape(6, 6)))),
    ("strided covariance", lambda m: replace(m, twist=replace(
        m.twist, covariance=np.zeros(72)[::2]))),
    ("list covariance", lambda m: replace(m, twist=replace(
        m.twist, covariance=m.twist.covariance.tolist()))),
    ("sec beyond int32", lambda m: replace(m, header=replace(m.header, stamp=replace(
        m.header.stamp, sec=2**31)))),
    ("negative nanosec", lambda m: replace(m, header=replace(m.header, stamp=replace(
        m.header.stamp, nanosec=-1)))),
    ("float sec", lambda m: replace(m, header=replace(m.header, stamp=replace(
        m.header.stamp, sec=1.0)))),
    ("bytes frame_id", lambda m: replace(m, header=replace(m.header, frame_id=b"odom"))),
    ("lone surrogate", lambda m: replace(m, child_frame_id="\udc80")),
    ("a Vector3 where a Point goes", lambda m: replace(m, pose=replace(m.pose, pose=replace(
        m.pose.pose, position=T["geometry_msgs/msg/Vector3"](x=1.0, y=2.0, z=3.0))))),
])
def test_fast_encoder_declines_what_is_not_exact(what, bad):
    msg = bad(_odom())
    assert fast_encoder(rm.ODOMETRY)(msg) is None, what


def test_fast_encoder_declines_bad_sequences_and_other_types():
    js = _message(rm.JOINT_STATE, random.Random(2))
    enc = fast_encoder(rm.JOINT_STATE)
    assert enc(replace(js, name=("a", "b"))) is not None          # a tuple is a sequence
    assert enc(replace(js, name="ab")) is None
    assert enc(replace(js, name=["a", 1])) is None
    assert enc(replace(js, position=np.arange(3))) is None        # int64 values
    assert enc(_odom()) is None                                   # another type's message
    assert fast_encoder(rm.FLOAT64_MULTI_ARRAY) is None           # no fast encoder
    tf = _message(rm.TF_MESSAGE, random.Random(3))
    assert fast_encoder(rm.TF_MESSAGE)(replace(tf, transforms=[_odom()])) is None
    # what the fast path declines, the generic exact path still writes when it is exact
    ws = rm.wrench_stamped_msg(1.0, np.arange(6.0), "b")
    ws = replace(ws, wrench=replace(ws.wrench, force=replace(ws.wrench.force,
                                                             x=np.float64(0.5))))
    assert fast_encoder(rm.WRENCH_STAMPED)(ws) is None
    assert exact_serializer(rm.WRENCH_STAMPED)(ws) == bytes(STORE.serialize_cdr(
        ws, rm.WRENCH_STAMPED))


def test_the_builders_messages_take_the_fast_path():
    """The messages the nodes build are in exact wire form for the fast encoders."""
    g = np.eye(4)
    for msgtype, msg in [
            (rm.JOINT_STATE, rm.joint_state_msg(1.0, ["a", "b"], [1.0, 2.0], [0.0, 0.0],
                                                [3.0, 4.0])),
            (rm.ODOMETRY, rm.odometry_msg(1.0, g, np.arange(6.0), "odom", "base_link")),
            (rm.TF_MESSAGE, rm.tf_msg(1.0, [("odom", "base_link", g)])),
            (rm.WRENCH_STAMPED, rm.wrench_stamped_msg(1.0, np.arange(6.0), "base_link")),
            (rm.CLOCK, rm.clock_msg(2.5))]:
        assert fast_encoder(msgtype)(msg) == bytes(STORE.serialize_cdr(msg, msgtype))


def _same(a, b):
    """Field-by-field equality of two rosbags messages (arrays: same dtype and bits)."""
    if isinstance(a, np.ndarray):
        return (type(b) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape
                and a.tobytes() == b.tobytes() and a.flags.writeable == b.flags.writeable)
    if hasattr(a, "__dataclass_fields__"):
        return type(a) is type(b) and all(_same(getattr(a, f), getattr(b, f))
                                          for f in a.__dataclass_fields__)
    if isinstance(a, list):
        return type(b) is list and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float):
        return type(b) is float and (a == b or (math.isnan(a) and math.isnan(b)))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("msgtype", DECODED_TYPES)
def test_fast_decoders_read_what_rosbags_reads(msgtype):
    rng = random.Random(msgtype + "decode")
    decode = fast_decoder(msgtype)
    for _ in range(300):
        data = bytes(STORE.serialize_cdr(_message(msgtype, rng), msgtype))
        assert _same(decode(data), STORE.deserialize_cdr(data, msgtype))
        assert _same(decode(data + b"\0\0\0"), STORE.deserialize_cdr(data + b"\0\0\0", msgtype))


@pytest.mark.parametrize("msgtype", DECODED_TYPES)
def test_fast_decoders_leave_every_malformed_sample_to_the_generic_decoder(msgtype):
    """Truncated, padded, corrupted samples: None whenever rosbags' decoder refuses them (and
    rosbags' message whenever the fast decoder returns one)."""
    rng = random.Random(msgtype + "bad")
    decode = fast_decoder(msgtype)
    for _ in range(200):
        data = bytearray(STORE.serialize_cdr(_message(msgtype, rng), msgtype))
        how = rng.randrange(4)
        if how == 0:
            data = data[:rng.randrange(len(data))]
        elif how == 1:
            data += bytes(rng.randrange(4, 16))
        elif how == 2:
            for _ in range(rng.randrange(1, 4)):
                data[rng.randrange(4, len(data))] = rng.randrange(256)
        else:
            data[1] = 0                               # big-endian: the generic path
        data = bytes(data)
        got = decode(data)
        try:
            want = STORE.deserialize_cdr(data, msgtype)
        except Exception:  # noqa: BLE001 - rosbags raises several kinds
            assert got is None
            continue
        assert got is None or _same(got, want)
    assert decode(b"\x00\x01") is None and decode(b"") is None


def test_fast_decoder_count_limits_and_unchecked_limits():
    js = rm.joint_state_msg(1.0, ["a", "b", "c"], [1.0, 2.0, 3.0], [0.0] * 3)
    data = bytes(STORE.serialize_cdr(js, rm.JOINT_STATE))
    assert fast_decoder(rm.JOINT_STATE, {"name": 3})(data).name == ["a", "b", "c"]
    assert fast_decoder(rm.JOINT_STATE, {"name": (2, "max_joint_state_names")})(data) is None
    assert fast_decoder(rm.JOINT_STATE, {"velocity": 2})(data) is None
    assert fast_decoder(rm.JOINT_STATE, {"effort": 0})(data) is not None   # effort is empty
    assert fast_decoder(rm.TF_MESSAGE) is None
    assert fast_decoder(rm.ODOMETRY, {"covariance": 3}) is None     # not checked: generic


def _stream(msgtype, rng, count):
    """Messages as a node sends them: a few frame ids and joint-name lists, repeated, with
    fresh stamps and values (so the encoders' and decoders' constant runs are reused, and
    sometimes change)."""
    base = [_message(msgtype, rng) for _ in range(3)]
    out = []
    for _ in range(count):
        fresh = _message(msgtype, rng)
        b = rng.choice(base)
        if msgtype == rm.JOINT_STATE:
            out.append(replace(fresh, header=replace(fresh.header, frame_id=b.header.frame_id),
                               name=list(b.name), position=_arr(rng, len(b.name)),
                               velocity=_arr(rng, rng.choice([0, len(b.name)])),
                               effort=_arr(rng, len(b.name))))
        elif msgtype == rm.TF_MESSAGE:
            out.append(replace(b, transforms=[replace(t, header=replace(
                t.header, stamp=_time(rng))) for t in b.transforms]))
        elif msgtype == rm.CLOCK:
            out.append(fresh)
        else:
            out.append(replace(fresh, header=replace(fresh.header,
                                                     frame_id=b.header.frame_id),
                               **({"child_frame_id": b.child_frame_id}
                                  if msgtype == rm.ODOMETRY else {})))
    return out


@pytest.mark.parametrize("msgtype", FAST_TYPES)
def test_fast_encoders_reuse_constant_runs_byte_for_byte(msgtype):
    """A run of frame ids and names written once and copied: every sample of a stream is
    still rosbags' bytes, and a name of another type at a known run's values is declined."""
    rng = random.Random(msgtype + "stream")
    encode = fast_encoder(msgtype)
    for msg in _stream(msgtype, rng, 400):
        assert encode(msg) == bytes(STORE.serialize_cdr(msg, msgtype))
    js = rm.joint_state_msg(1.0, ["a", "b"], [1.0, 2.0])
    enc = fast_encoder(rm.JOINT_STATE)
    assert enc(js) is not None
    assert enc(replace(js, name=["a", np.str_("b")])) is None     # equal, not a str
    assert enc(replace(js, name=[["a"], "b"])) is None            # unhashable
    assert enc(replace(js, header=replace(js.header, frame_id=np.str_("")))) is None


@pytest.mark.parametrize("msgtype", DECODED_TYPES)
def test_fast_decoders_reuse_constant_runs_only_when_the_bytes_match(msgtype):
    """A stream with repeated frame ids and names, some samples corrupted after a good one
    with the same run: every decoded message is rosbags', every refused sample None."""
    rng = random.Random(msgtype + "decode stream")
    decode = fast_decoder(msgtype, {"name": 5} if msgtype == rm.JOINT_STATE else None)
    for msg in _stream(msgtype, rng, 400):
        data = bytes(STORE.serialize_cdr(msg, msgtype))
        if rng.random() < 0.3:                       # the same run, the rest damaged
            damaged = bytearray(data)
            damaged[rng.randrange(4, len(damaged))] = rng.randrange(256)
            if rng.random() < 0.5:
                damaged = damaged[:rng.randrange(4, len(damaged))]
            data = bytes(damaged)
        got = decode(data)
        try:
            want = STORE.deserialize_cdr(data, msgtype)
        except Exception:  # noqa: BLE001 - rosbags raises several kinds
            assert got is None
            continue
        if msgtype == rm.JOINT_STATE and len(want.name) > 5:
            assert got is None                       # over the count limit
            continue
        assert got is not None and _same(got, want)
        if msgtype == rm.JOINT_STATE:
            got.name.append("x")                     # each message has its own list
            assert decode(data).name == want.name
