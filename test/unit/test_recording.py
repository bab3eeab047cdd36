"""Tests for vm_dynamics.ros.recording: MCAP read back with an independent reader
(``mcap`` + ``mcap_ros2``, not rosbags), JSON summaries and plots."""

import json
import math

import numpy as np
import pytest
from mcap import reader as mcap_reader
from mcap_ros2 import decoder as mcap_ros2_decoder

from vm_dynamics.app.summary import write_summary_json
from vm_dynamics.ros import messages as rm
from vm_dynamics.ros import recording as rec
from vm_dynamics.ros.urdf_tf import UrdfTree


def rot(axis, angle):
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


@pytest.fixture
def traj():
    """Synthetic SE(3) base (attitude passes through 180 deg) + 2 joints, 1 kHz, 0.5 s."""
    N = 501
    t = np.arange(N) * 1e-3
    g = np.zeros((N, 4, 4))
    axis = np.array([0.3, -0.5, 0.8])
    for k, tk in enumerate(t):
        g[k, :3, :3] = rot(axis, 7.0 * tk)  # 0 .. 3.5 rad > pi
        g[k, :3, 3] = [tk, 0.5 * tk**2, -tk]
        g[k, 3, 3] = 1.0
    V = np.column_stack([np.ones(N), np.zeros(N), -np.ones(N),
                         np.tile(7.0 * axis / np.linalg.norm(axis), (N, 1))])
    q = np.column_stack([np.sin(t), 0.1 * t])
    qd = np.column_stack([np.cos(t), 0.1 * np.ones(N)])
    effort = np.column_stack([np.cos(3 * t), -t])
    return dict(t=t, g=g, V=V, q=q, qd=qd, joint_names=["shoulder", "slider"],
                effort=effort)


def read_mcap(path):
    """Independent reader: header, summary and decoded messages per topic."""
    with open(path, "rb") as f:
        reader = mcap_reader.make_reader(
            f, decoder_factories=[mcap_ros2_decoder.DecoderFactory()])
        header = reader.get_header()
        summary = reader.get_summary()
        msgs = {}
        for schema, channel, message, decoded in reader.iter_decoded_messages():
            msgs.setdefault(channel.topic, []).append((message.log_time, decoded))
    return header, summary, msgs


def header_ns(h):
    return h.stamp.sec * 10**9 + h.stamp.nanosec


def test_write_mcap_read_back_independently(tmp_path, traj):
    out = tmp_path / "out" / "trajectory.mcap"
    info = rec.write_mcap(out, **traj)
    assert out.is_file()
    assert sorted(p.name for p in out.parent.iterdir()) == ["trajectory.mcap"]  # no temp dirs
    N = len(traj["t"])

    header, summary, msgs = read_mcap(out)
    assert header.profile == "ros2"
    channels = {c.topic: c for c in summary.channels.values()}
    expected_types = {"/clock": "rosgraph_msgs/msg/Clock",
                      "/joint_states": "sensor_msgs/msg/JointState",
                      "/odom": "nav_msgs/msg/Odometry", "/tf": "tf2_msgs/msg/TFMessage"}
    assert set(channels) == set(expected_types)
    for topic, typ in expected_types.items():
        schema = summary.schemas[channels[topic].schema_id]
        assert schema.name == typ
        assert schema.encoding == "ros2msg"
        assert channels[topic].message_encoding == "cdr"
        qos = channels[topic].metadata["offered_qos_profiles"]
        assert "reliability: reliable" in qos and "durability: volatile" in qos
    assert "depth: 100" in channels["/tf"].metadata["offered_qos_profiles"]
    counts = summary.statistics.channel_message_counts
    assert {channels[t].topic: counts[channels[t].id] for t in channels} == {
        t: N for t in expected_types}
    assert info.message_counts == {t: N for t in expected_types}
    assert {t: len(m) for t, m in msgs.items()} == {t: N for t in expected_types}
    # rosbag2 metadata record embedded (what `ros2 bag play file.mcap` reads)
    assert [m.name for m in summary.metadata_indexes] == ["rosbag2"]

    k = 333  # t = 0.333 s: stamps exact to the nanosecond, log time == header stamp
    log_time, js = msgs["/joint_states"][k]
    assert header_ns(js.header) == 333_000_000 == log_time
    assert list(js.name) == ["shoulder", "slider"]
    assert list(js.position) == list(traj["q"][k])      # float64 round trip is exact
    assert list(js.velocity) == list(traj["qd"][k])
    assert list(js.effort) == list(traj["effort"][k])

    _, odom = msgs["/odom"][k]
    assert (odom.header.frame_id, odom.child_frame_id) == ("odom", "base_link")
    o = odom.pose.pose.orientation
    R = rm.matrix_from_quat([o.x, o.y, o.z, o.w])
    np.testing.assert_allclose(R, traj["g"][k, :3, :3], atol=1e-14)
    p = odom.pose.pose.position
    assert [p.x, p.y, p.z] == list(traj["g"][k, :3, 3])
    tw = odom.twist.twist
    assert [tw.linear.x, tw.linear.y, tw.linear.z, tw.angular.x, tw.angular.y,
            tw.angular.z] == list(traj["V"][k])

    _, tf = msgs["/tf"][k]
    assert [(x.header.frame_id, x.child_frame_id) for x in tf.transforms] == [
        ("odom", "base_link")]
    r = tf.transforms[0].transform.rotation
    assert [r.x, r.y, r.z, r.w] == [o.x, o.y, o.z, o.w]

    clock_times = [header_ns_clock(c) for _, c in msgs["/clock"]]
    assert clock_times == [round(x * 1e9) for x in traj["t"]]
    assert clock_times[-1] == 500_000_000 == info.end_ns


def header_ns_clock(c):
    return c.clock.sec * 10**9 + c.clock.nanosec


def test_se2_base_iota_and_fixed_base(tmp_path, traj):
    N = len(traj["t"])
    V3 = np.column_stack([np.full(N, 0.5), np.full(N, -0.25), np.full(N, 0.125)])
    args = {k: v for k, v in traj.items() if k != "V"}
    with pytest.raises(ValueError, match="pass base_iota"):
        rec.write_mcap(tmp_path / "a.mcap", V=V3, **args)
    rec.write_mcap(tmp_path / "se2.mcap", V=V3, base_iota="SE2", decimate=100, **args)
    _, _, msgs = read_mcap(tmp_path / "se2.mcap")
    tw = msgs["/odom"][2][1].twist.twist
    assert [tw.linear.x, tw.linear.y, tw.linear.z] == [0.5, -0.25, 0.0]
    assert [tw.angular.x, tw.angular.y, tw.angular.z] == [0.0, 0.0, 0.125]
    rec.write_mcap(tmp_path / "so3.mcap", V=V3, base_iota="SO3", decimate=100, **args)
    tw = read_mcap(tmp_path / "so3.mcap")[2]["/odom"][0][1].twist.twist
    assert [tw.linear.x, tw.angular.x, tw.angular.y] == [0.0, 0.5, -0.25]
    rec.write_mcap(tmp_path / "fixed.mcap", V=np.zeros((N, 0)), decimate=100, **args)
    tw = read_mcap(tmp_path / "fixed.mcap")[2]["/odom"][-1][1].twist.twist
    assert [tw.linear.x, tw.angular.z] == [0.0, 0.0]
    from vm_dynamics.core import groups
    rec.write_mcap(tmp_path / "grp.mcap", V=V3, base_iota=groups.get_group("SE2"),
                   decimate=100, **args)
    tw = read_mcap(tmp_path / "grp.mcap")[2]["/odom"][0][1].twist.twist
    assert [tw.linear.x, tw.linear.y, tw.angular.z] == [0.5, -0.25, 0.125]
    with pytest.raises(ValueError, match=r"shape \(6, 3\)"):
        rec.write_mcap(tmp_path / "b.mcap", V=V3, base_iota=np.eye(6), **args)


def test_decimation_and_rate(tmp_path, traj):
    info = rec.write_mcap(tmp_path / "d.mcap", decimate=10, **traj)
    assert len(info.indices) == 51 and info.indices[1] == 10
    _, summary, msgs = read_mcap(tmp_path / "d.mcap")
    assert summary.statistics.message_count == 4 * 51

    info = rec.write_mcap(tmp_path / "r.mcap", rate_hz=50.0, **traj)
    _, _, msgs = read_mcap(tmp_path / "r.mcap")
    stamps = [header_ns(m.header) for _, m in msgs["/joint_states"]]
    assert stamps == [20_000_000 * i for i in range(26)]  # 0 .. 0.5 s every 20 ms
    with pytest.raises(ValueError, match="at most one"):
        rec.select_samples(traj["t"], decimate=2, rate_hz=10)
    with pytest.raises(ValueError, match="decimate"):
        rec.select_samples(traj["t"], decimate=0)


def test_extra_tf_static_and_dynamic_and_offset(tmp_path, traj):
    N = len(traj["t"])
    cam = np.eye(4)
    cam[:3, 3] = [0.1, 0.0, 0.2]
    arm = np.tile(np.eye(4), (N, 1, 1))
    arm[:, 2, 3] = traj["t"]
    info = rec.write_mcap(tmp_path / "x.mcap", decimate=250, time_offset_s=100.0,
                          frame_ids=("world", "vehicle"),
                          extra_tf=[("vehicle", "camera", cam), ("vehicle", "arm", arm)],
                          **traj)
    _, summary, msgs = read_mcap(tmp_path / "x.mcap")
    channels = {c.topic: c for c in summary.channels.values()}
    qos = channels["/tf_static"].metadata["offered_qos_profiles"]
    assert "durability: transient_local" in qos and "depth: 1" in qos
    assert len(msgs["/tf_static"]) == 1 and info.message_counts["/tf_static"] == 1
    st = msgs["/tf_static"][0][1].transforms[0]
    assert (st.header.frame_id, st.child_frame_id) == ("vehicle", "camera")
    assert st.transform.translation.z == 0.2
    _, tf = msgs["/tf"][2]
    assert [(x.header.frame_id, x.child_frame_id) for x in tf.transforms] == [
        ("world", "vehicle"), ("vehicle", "arm")]
    assert tf.transforms[1].transform.translation.z == traj["t"][500]
    assert header_ns(tf.transforms[0].header) == 100_500_000_000
    assert msgs["/odom"][0][1].header.frame_id == "world"


@pytest.mark.parametrize("change, match", [
    (dict(t=np.r_[0.0, 0.0, np.arange(2, 501) * 1e-3]), "strictly increasing"),
    (dict(joint_names=["only_one"]), r"q \(N, n_joints\) must have shape"),
    (dict(g=np.zeros((501, 4, 4))), "last row"),
    (dict(V=np.ones((501, 5))), "pass base_iota|shape"),
])
def test_write_mcap_errors(tmp_path, traj, change, match):
    with pytest.raises(ValueError, match=match):
        rec.write_mcap(tmp_path / "e.mcap", **{**traj, **change})
    assert not (tmp_path / "e.mcap").exists()


def test_write_mcap_nan_and_path_errors(tmp_path, traj):
    q = traj["q"].copy()
    q[123, 1] = np.nan
    with pytest.raises(ValueError, match=r"q .* NaN/Inf at sample 123"):
        rec.write_mcap(tmp_path / "n.mcap", **{**traj, "q": q})
    with pytest.raises(ValueError, match=".mcap"):
        rec.write_mcap(tmp_path / "n.bag", **traj)
    # the path is checked before the samples, as by McapRecorder
    (tmp_path / "dir.mcap").mkdir()
    with pytest.raises(ValueError, match=r"dir\.mcap' exists and is not a file"):
        rec.write_mcap(tmp_path / "dir.mcap", **{**traj, "q": q})
    (tmp_path / "dir.mcap").rmdir()
    rec.write_mcap(tmp_path / "once.mcap", decimate=100, **traj)
    with pytest.raises(FileExistsError):
        rec.write_mcap(tmp_path / "once.mcap", overwrite=False, **traj)
    info = rec.write_mcap(tmp_path / "once.mcap", decimate=250, **traj)  # overwrite
    assert read_mcap(tmp_path / "once.mcap")[1].statistics.message_count == 4 * 3
    assert len(info.indices) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["once.mcap"]


def test_write_summary_json(tmp_path):
    data = {"energy_rel_drift": np.float64(np.nan), "max_err": np.inf, "n": np.int64(3),
            "series": np.array([1.0, np.nan, -np.inf]), "ok": np.bool_(True),
            "path": tmp_path / "x", "nested": {"t": (1, 2.5)}}
    p = write_summary_json(tmp_path / "summary.json", data)

    def reject(token):
        raise AssertionError(f"non-standard JSON constant {token}")
    back = json.loads(p.read_text(), parse_constant=reject)
    assert back == {"energy_rel_drift": None, "max_err": None, "n": 3,
                    "series": [1.0, None, None], "ok": True, "path": str(tmp_path / "x"),
                    "nested": {"t": [1, 2.5]}}
    with pytest.raises(TypeError):
        write_summary_json(tmp_path / "bad.json", {"x": object()})


# ------------------------------------------------ complete recordings (robot description)

MIMIC_URDF = """<robot name="m">
  <link name="base"/><link name="a"/><link name="b"/><link name="c"/><link name="tool"/>
  <joint name="ja" type="revolute"><parent link="base"/><child link="a"/>
    <origin xyz="0.1 0.2 0.3" rpy="0.3 -0.4 0.5"/><axis xyz="0 1 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="jb" type="prismatic"><parent link="a"/><child link="b"/>
    <origin xyz="0 0 0.5" rpy="1.0 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="jc" type="continuous"><parent link="b"/><child link="c"/>
    <origin xyz="0.2 0 0"/><axis xyz="0 0 1"/>
    <mimic joint="ja" multiplier="-2" offset="0.1"/></joint>
  <joint name="jt" type="fixed"><parent link="c"/><child link="tool"/>
    <origin xyz="0 0 0.1" rpy="0 1.5707963 0"/></joint>
</robot>"""


def _compose_tf(tf_static, tf, fixed="odom"):
    """World poses of every child frame from TFMessages decoded by mcap_ros2 (independent
    of vm_dynamics: quaternion -> matrix by the standard formula)."""
    def mat(tr):
        x, y, z, w = (tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w)
        R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                      [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                      [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        T = np.eye(4)
        T[:3, :3] = R
        T[:3, 3] = [tr.translation.x, tr.translation.y, tr.translation.z]
        return T
    edges = {t.child_frame_id: (t.header.frame_id, mat(t.transform))
             for msg in (tf_static, tf) for t in msg.transforms}
    poses = {fixed: np.eye(4)}

    def pose(f):
        if f not in poses:
            parent, T = edges[f]
            poses[f] = pose(parent) @ T
        return poses[f]
    for f in edges:
        pose(f)
    return poses


def test_complete_recording_of_a_scenario_read_back_independently(tmp_path):
    """/robot_description (latched), /tf_static with the fixed joints and every movable joint
    on /tf: composing the TF read by mcap_ros2 gives the model's pose of every link."""
    from vm_dynamics.config.scenario import load_scenario
    scn = load_scenario("spacecraft_arm")
    model = scn.model
    rng = np.random.default_rng(3)
    N = 7
    t = np.arange(N) * 0.1
    q = scn.q0 + rng.normal(size=(N, model.n))
    g = np.tile(np.eye(4), (N, 1, 1))
    for k in range(N):
        g[k, :3, :3] = rot(rng.normal(size=3), rng.normal())
        g[k, :3, 3] = rng.normal(size=3)
    info = rec.write_mcap(tmp_path / "c.mcap", t, g, np.zeros((N, 6)), q, 0 * q,
                          model.joint_names, robot_description=str(scn.urdf_path))
    assert info.message_counts == {"/clock": N, "/joint_states": N, "/odom": N, "/tf": N,
                                   "/tf_static": 1, "/robot_description": 1}
    header, summary, msgs = read_mcap(tmp_path / "c.mcap")
    channels = {c.topic: c for c in summary.channels.values()}
    for topic in ("/robot_description", "/tf_static"):
        qos = channels[topic].metadata["offered_qos_profiles"]
        assert "durability: transient_local" in qos and "depth: 1" in qos
    assert summary.schemas[channels["/robot_description"].schema_id].name == \
        "std_msgs/msg/String"
    (t_desc, desc), = msgs["/robot_description"]
    assert t_desc == msgs["/tf"][0][0]            # available from the first sample on
    assert '<robot name="spacecraft_arm"' in desc.data and "joint7" in desc.data
    (_, static), = msgs["/tf_static"]
    assert sorted(x.child_frame_id for x in static.transforms) == sorted(
        ["solar_wing_left", "solar_wing_right", "arm_base", "ee_link"])
    for k in range(N):
        _, tf = msgs["/tf"][k]
        assert len(tf.transforms) == 1 + model.n   # odom->base_link + the 7 arm joints
        poses = _compose_tf(static, tf)
        for frame in model.frame_names:
            np.testing.assert_allclose(poses[frame], model.frame_pose(q[k], frame, g[k]),
                                       atol=1e-12, err_msg=f"{frame} at sample {k}")


def test_urdf_tree_mimic_prismatic_and_closed_form_match(tmp_path):
    tree = UrdfTree(MIMIC_URDF)
    assert tree.root == "base" and tree.position_joints == ["ja", "jb"]
    assert [p[:2] for p in tree.static_transforms()] == [("c", "tool")]
    pos = {"ja": 0.7, "jb": -0.3}
    mats = tree.moving_transforms(pos)
    for (p, c, T), (p2, c2, xyz, quat) in zip(mats, tree.moving_transforms_pq(pos)):
        assert (p, c) == (p2, c2)
        np.testing.assert_allclose(T[:3, 3], xyz, atol=1e-15)
        np.testing.assert_allclose(T[:3, :3], rm.matrix_from_quat(quat), atol=1e-14)
    # the mimic joint turns by -2 * 0.7 + 0.1 about z
    Tc = dict(((p, c), T) for p, c, T in mats)[("b", "c")]
    np.testing.assert_allclose(Tc[:3, :3], rot([0, 0, 1], -1.3), atol=1e-14)
    # the prismatic joint slides along its axis in the child frame
    Tb = dict(((p, c), T) for p, c, T in mats)[("a", "b")]
    np.testing.assert_allclose(Tb[:3, 3], [-0.3, 0, 0.5], atol=1e-15)
    poses = tree.link_poses(pos)
    np.testing.assert_allclose(poses["tool"], poses["c"] @ tree.static_transforms()[0][2])


@pytest.mark.parametrize("urdf, match", [
    ('<robot name="x"><link name="a"/><link name="b"/><joint name="j" type="floating">'
     '<parent link="a"/><child link="b"/></joint></robot>', "joint 'j': type 'floating'"),
    ('<robot name="x"><link name="a"/><joint name="j" type="fixed"><parent link="a"/>'
     '<child link="nope"/></joint></robot>', "child link 'nope'"),
    ('<robot name="x"><link name="a"/><link name="b"/></robot>', "one root link"),
    ('<robot name="x"><link name="a"/>', "not valid XML"),
    ('<robot name="x"><link name="a"/><link name="b"/><joint name="j" type="revolute">'
     '<parent link="a"/><child link="b"/><axis xyz="0 0 0"/></joint></robot>', "axis is zero"),
])
def test_urdf_tree_rejects(urdf, match):
    with pytest.raises(ValueError, match=match):
        UrdfTree(urdf)


def test_recorder_errors_name_the_culprit(tmp_path):
    with pytest.raises(ValueError, match=r"missing \['jb'\]"):
        rec.McapRecorder(tmp_path / "a.mcap", ["ja"], robot_description=MIMIC_URDF)
    with pytest.raises(ValueError, match="not movable joints of the URDF \\['jc'\\]"):
        rec.McapRecorder(tmp_path / "a.mcap", ["ja", "jb", "jc"], robot_description=MIMIC_URDF)
    with pytest.raises(ValueError, match="base frame 'a' is not the root link 'base'"):
        rec.McapRecorder(tmp_path / "a.mcap", ["ja", "jb"], robot_description=MIMIC_URDF,
                         frame_ids=("odom", "a"))
    r = rec.McapRecorder(tmp_path / "a.mcap", ["ja", "jb"], robot_description=MIMIC_URDF)
    r.add(0.0, np.eye(4), np.zeros(6), [0, 0], [0, 0])
    with pytest.raises(ValueError, match="strictly increasing"):
        r.add(0.0, np.eye(4), np.zeros(6), [0, 0], [0, 0])
    with pytest.raises(ValueError, match=r"q at sample 1 must have shape \(2\)"):
        r.add(0.1, np.eye(4), np.zeros(6), [0, 0, 0], [0, 0])
    with pytest.raises(ValueError, match="V at sample 1 has 3 entries"):
        r.add(0.2, np.eye(4), np.zeros(3), [0, 0], [0, 0])
    assert r.close().message_counts["/tf"] == 1
    with pytest.raises(ValueError, match="closed"):
        r.add(1.0, np.eye(4), np.zeros(6), [0, 0], [0, 0])
    empty = rec.McapRecorder(tmp_path / "e.mcap", [])
    with pytest.raises(ValueError, match="no sample"):
        empty.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.mcap"]   # no temp leftovers


def test_recorder_as_simulate_callback_streams_and_keeps_ctrl_c_samples(tmp_path):
    """The recorder is a vm.simulate callback; the file is complete after a Ctrl-C too."""
    import vm_dynamics as vm
    from vm_dynamics.config.scenario import load_scenario
    scn = load_scenario("tumbling")
    model = scn.model
    with rec.McapRecorder(tmp_path / "s.mcap", model.joint_names, rate_hz=50,
                          robot_description=str(scn.urdf_path)) as r:
        traj = vm.simulate(model, scn.g0, scn.V0, scn.q0, scn.qd0, 0.5, 1e-3, callback=r)
    assert len(traj.t) == 501
    _, _, msgs = read_mcap(tmp_path / "s.mcap")
    stamps = [lt for lt, _ in msgs["/tf"]]
    assert len(stamps) == 26 and stamps[1] - stamps[0] == 20_000_000
    _, js = msgs["/joint_states"][-1]
    np.testing.assert_array_equal(js.position, traj.q[-1])
    _, odom = msgs["/odom"][-1]
    assert [odom.pose.pose.position.x, odom.pose.pose.position.y,
            odom.pose.pose.position.z] == list(traj.g[-1, :3, 3])

    with pytest.raises(KeyboardInterrupt):
        with rec.McapRecorder(tmp_path / "k.mcap", model.joint_names,
                              robot_description=str(scn.urdf_path)) as r:
            for k in range(1000):
                r.add(k * 1e-3, np.eye(4), np.zeros(6), scn.q0, scn.qd0)
                if k == 100:
                    raise KeyboardInterrupt
    _, _, msgs = read_mcap(tmp_path / "k.mcap")
    assert len(msgs["/tf"]) == 101 and len(msgs["/robot_description"]) == 1


def test_recorder_memory_stays_flat(tmp_path):
    """Streaming: RSS after 3000 samples is within 3 MB of RSS after 500 (the old writer
    kept everything until the end; a 10x longer run must not cost 10x memory)."""
    def rss_mb():
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * 4096 / 2**20
    tree_xml = MIMIC_URDF
    r = rec.McapRecorder(tmp_path / "m.mcap", ["ja", "jb"], robot_description=tree_xml)
    g = np.eye(4)
    marks = {}
    for k in range(3000):
        r.add(k * 1e-2, g, np.zeros(6), [1e-3 * k, 0.0], [0.0, 0.0], effort=[0.0, 0.0])
        if k in (500, 2999):
            marks[k] = rss_mb()
    info = r.close()
    assert info.message_counts["/tf"] == 3000
    assert marks[2999] - marks[500] < 3.0, marks


# ------------------------------------------------ written to survive a kill or a full disk
def _read_plain(path):
    """Messages per topic by the standard reader, without decoding."""
    with open(path, "rb") as f:
        counts = {}
        for _, channel, _ in mcap_reader.make_reader(f).iter_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
    return counts


def test_recording_is_readable_after_every_chunk_before_it_is_closed(tmp_path):
    """What a killed recorder leaves: the file at its own name, read by the standard reader
    (no summary yet), holds every sample of the chunks written; close adds the summary."""
    path = tmp_path / "live.mcap"
    r = rec.McapRecorder(path, ["ja", "jb"], robot_description=MIMIC_URDF, flush_interval=1e9)
    assert _read_plain(path) == {}                       # valid from the start
    for k in range(300):
        r.add(k * 1e-3, np.eye(4), np.zeros(6), [0.1, 0.2], [0.0, 0.0])
        if k % 100 == 99:
            r.flush()       # a chunk, as the recorder writes one every second
            assert r.samples_on_disk == (k + 1, k * 1e-3)
            with open(path, "rb") as f:
                assert mcap_reader.make_reader(f).get_summary() is None
            counts = _read_plain(path)
            assert counts["/clock"] == counts["/tf"] == k + 1, counts
            assert counts["/robot_description"] == 1
    r.add(0.5, np.eye(4), np.zeros(6), [0.1, 0.2], [0.0, 0.0])
    assert _read_plain(path)["/clock"] == 300            # the open chunk is not on disk yet
    info = r.close()
    header, summary, msgs = read_mcap(path)
    assert summary.statistics.message_count == 4 * 301 + 2 and len(msgs["/joint_states"]) == 301
    assert [m.name for m in summary.metadata_indexes] == ["rosbag2"]
    assert info.error is None and info.message_counts["/clock"] == 301
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live.mcap"]


def test_a_failed_write_keeps_the_chunks_written_before(tmp_path, monkeypatch):
    """A full disk (ENOSPC from the system call, after part of the chunk went out): the error
    names the file and what it keeps; the file holds exactly the earlier chunks, readable,
    and close() still finishes it (its summary) when there is room."""
    import errno
    import os
    path = tmp_path / "full.mcap"
    r = rec.McapRecorder(path, ["ja", "jb"], flush_interval=1e9)
    for k in range(50):
        r.add(k * 1e-2, np.eye(4), np.zeros(6), [0.1, 0.2], [0.0, 0.0])
    r.flush()
    real = os.pwritev

    def disk_full(fd, buffers, offset):
        real(fd, [bytes(buffers[0])[:100]], offset)      # part of it, then no space
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "pwritev", disk_full)
    for k in range(50, 80):
        r.add(k * 1e-2, np.eye(4), np.zeros(6), [0.1, 0.2], [0.0, 0.0])
    with pytest.raises(rec.RecordingError, match=r"cannot write .*full\.mcap: No space left on "
                                                 r"device; it keeps 50 samples up to t = 0\.49 s"):
        r.flush()
    with pytest.raises(rec.RecordingError):
        r.add(0.95, np.eye(4), np.zeros(6), [0.1, 0.2], [0.0, 0.0])   # no more samples
    assert _read_plain(path) == {"/clock": 50, "/joint_states": 50, "/odom": 50, "/tf": 50}
    monkeypatch.setattr(os, "pwritev", real)                 # room again for the summary
    info = r.close()
    assert "No space left on device" in info.error and len(info.indices) == 50
    assert info.message_counts == {"/clock": 50, "/joint_states": 50, "/odom": 50, "/tf": 50}
    _, summary, msgs = read_mcap(path)
    assert summary.statistics.channel_message_counts and len(msgs["/clock"]) == 50
