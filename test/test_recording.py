"""Tests for vm_dynamics.recording: MCAP read back with an independent reader
(``mcap`` + ``mcap_ros2``, not rosbags), JSON summaries and plots."""

import json
import math

import numpy as np
import pytest

from vm_dynamics import recording as rec
from vm_dynamics import ros_msgs as rm

mcap_reader = pytest.importorskip('mcap.reader')
mcap_ros2_decoder = pytest.importorskip('mcap_ros2.decoder')


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
    return dict(t=t, g=g, V=V, q=q, qd=qd, joint_names=['shoulder', 'slider'],
                effort=effort)


def read_mcap(path):
    """Independent reader: header, summary and decoded messages per topic."""
    with open(path, 'rb') as f:
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
    out = tmp_path / 'out' / 'trajectory.mcap'
    info = rec.write_mcap(out, **traj)
    assert out.is_file()
    assert sorted(p.name for p in out.parent.iterdir()) == ['trajectory.mcap']  # no temp dirs
    N = len(traj['t'])

    header, summary, msgs = read_mcap(out)
    assert header.profile == 'ros2'
    channels = {c.topic: c for c in summary.channels.values()}
    expected_types = {'/clock': 'rosgraph_msgs/msg/Clock',
                      '/joint_states': 'sensor_msgs/msg/JointState',
                      '/odom': 'nav_msgs/msg/Odometry', '/tf': 'tf2_msgs/msg/TFMessage'}
    assert set(channels) == set(expected_types)
    for topic, typ in expected_types.items():
        schema = summary.schemas[channels[topic].schema_id]
        assert schema.name == typ
        assert schema.encoding == 'ros2msg'
        assert channels[topic].message_encoding == 'cdr'
        qos = channels[topic].metadata['offered_qos_profiles']
        assert 'reliability: reliable' in qos and 'durability: volatile' in qos
    assert 'depth: 100' in channels['/tf'].metadata['offered_qos_profiles']
    counts = summary.statistics.channel_message_counts
    assert {channels[t].topic: counts[channels[t].id] for t in channels} == {
        t: N for t in expected_types}
    assert info.message_counts == {t: N for t in expected_types}
    assert {t: len(m) for t, m in msgs.items()} == {t: N for t in expected_types}
    # rosbag2 metadata record embedded (what `ros2 bag play file.mcap` reads)
    assert [m.name for m in summary.metadata_indexes] == ['rosbag2']

    k = 333  # t = 0.333 s: stamps exact to the nanosecond, log time == header stamp
    log_time, js = msgs['/joint_states'][k]
    assert header_ns(js.header) == 333_000_000 == log_time
    assert list(js.name) == ['shoulder', 'slider']
    assert list(js.position) == list(traj['q'][k])      # float64 round trip is exact
    assert list(js.velocity) == list(traj['qd'][k])
    assert list(js.effort) == list(traj['effort'][k])

    _, odom = msgs['/odom'][k]
    assert (odom.header.frame_id, odom.child_frame_id) == ('odom', 'base_link')
    o = odom.pose.pose.orientation
    R = rm.matrix_from_quat([o.x, o.y, o.z, o.w])
    np.testing.assert_allclose(R, traj['g'][k, :3, :3], atol=1e-14)
    p = odom.pose.pose.position
    assert [p.x, p.y, p.z] == list(traj['g'][k, :3, 3])
    tw = odom.twist.twist
    assert [tw.linear.x, tw.linear.y, tw.linear.z, tw.angular.x, tw.angular.y,
            tw.angular.z] == list(traj['V'][k])

    _, tf = msgs['/tf'][k]
    assert [(x.header.frame_id, x.child_frame_id) for x in tf.transforms] == [
        ('odom', 'base_link')]
    r = tf.transforms[0].transform.rotation
    assert [r.x, r.y, r.z, r.w] == [o.x, o.y, o.z, o.w]

    clock_times = [header_ns_clock(c) for _, c in msgs['/clock']]
    assert clock_times == [round(x * 1e9) for x in traj['t']]
    assert clock_times[-1] == 500_000_000 == info.end_ns


def header_ns_clock(c):
    return c.clock.sec * 10**9 + c.clock.nanosec


def test_se2_base_iota_and_fixed_base(tmp_path, traj):
    N = len(traj['t'])
    V3 = np.column_stack([np.full(N, 0.5), np.full(N, -0.25), np.full(N, 0.125)])
    args = {k: v for k, v in traj.items() if k != 'V'}
    with pytest.raises(ValueError, match='pass base_iota'):
        rec.write_mcap(tmp_path / 'a.mcap', V=V3, **args)
    rec.write_mcap(tmp_path / 'se2.mcap', V=V3, base_iota='SE2', decimate=100, **args)
    _, _, msgs = read_mcap(tmp_path / 'se2.mcap')
    tw = msgs['/odom'][2][1].twist.twist
    assert [tw.linear.x, tw.linear.y, tw.linear.z] == [0.5, -0.25, 0.0]
    assert [tw.angular.x, tw.angular.y, tw.angular.z] == [0.0, 0.0, 0.125]
    rec.write_mcap(tmp_path / 'so3.mcap', V=V3, base_iota='SO3', decimate=100, **args)
    tw = read_mcap(tmp_path / 'so3.mcap')[2]['/odom'][0][1].twist.twist
    assert [tw.linear.x, tw.angular.x, tw.angular.y] == [0.0, 0.5, -0.25]
    rec.write_mcap(tmp_path / 'fixed.mcap', V=np.zeros((N, 0)), decimate=100, **args)
    tw = read_mcap(tmp_path / 'fixed.mcap')[2]['/odom'][-1][1].twist.twist
    assert [tw.linear.x, tw.angular.z] == [0.0, 0.0]
    groups = pytest.importorskip('vm_dynamics.groups')
    rec.write_mcap(tmp_path / 'grp.mcap', V=V3, base_iota=groups.get_group('SE2'),
                   decimate=100, **args)
    tw = read_mcap(tmp_path / 'grp.mcap')[2]['/odom'][0][1].twist.twist
    assert [tw.linear.x, tw.linear.y, tw.angular.z] == [0.5, -0.25, 0.125]
    with pytest.raises(ValueError, match=r'shape \(6, 3\)'):
        rec.write_mcap(tmp_path / 'b.mcap', V=V3, base_iota=np.eye(6), **args)


def test_decimation_and_rate(tmp_path, traj):
    info = rec.write_mcap(tmp_path / 'd.mcap', decimate=10, **traj)
    assert len(info.indices) == 51 and info.indices[1] == 10
    _, summary, msgs = read_mcap(tmp_path / 'd.mcap')
    assert summary.statistics.message_count == 4 * 51

    info = rec.write_mcap(tmp_path / 'r.mcap', rate_hz=50.0, **traj)
    _, _, msgs = read_mcap(tmp_path / 'r.mcap')
    stamps = [header_ns(m.header) for _, m in msgs['/joint_states']]
    assert stamps == [20_000_000 * i for i in range(26)]  # 0 .. 0.5 s every 20 ms
    with pytest.raises(ValueError, match='at most one'):
        rec.select_samples(traj['t'], decimate=2, rate_hz=10)
    with pytest.raises(ValueError, match='decimate'):
        rec.select_samples(traj['t'], decimate=0)


def test_extra_tf_static_and_dynamic_and_offset(tmp_path, traj):
    N = len(traj['t'])
    cam = np.eye(4)
    cam[:3, 3] = [0.1, 0.0, 0.2]
    arm = np.tile(np.eye(4), (N, 1, 1))
    arm[:, 2, 3] = traj['t']
    info = rec.write_mcap(tmp_path / 'x.mcap', decimate=250, time_offset_s=100.0,
                          frame_ids=('world', 'vehicle'),
                          extra_tf=[('vehicle', 'camera', cam), ('vehicle', 'arm', arm)],
                          **traj)
    _, summary, msgs = read_mcap(tmp_path / 'x.mcap')
    channels = {c.topic: c for c in summary.channels.values()}
    qos = channels['/tf_static'].metadata['offered_qos_profiles']
    assert 'durability: transient_local' in qos and 'depth: 1' in qos
    assert len(msgs['/tf_static']) == 1 and info.message_counts['/tf_static'] == 1
    st = msgs['/tf_static'][0][1].transforms[0]
    assert (st.header.frame_id, st.child_frame_id) == ('vehicle', 'camera')
    assert st.transform.translation.z == 0.2
    _, tf = msgs['/tf'][2]
    assert [(x.header.frame_id, x.child_frame_id) for x in tf.transforms] == [
        ('world', 'vehicle'), ('vehicle', 'arm')]
    assert tf.transforms[1].transform.translation.z == traj['t'][500]
    assert header_ns(tf.transforms[0].header) == 100_500_000_000
    assert msgs['/odom'][0][1].header.frame_id == 'world'


@pytest.mark.parametrize('change, match', [
    (dict(t=np.r_[0.0, 0.0, np.arange(2, 501) * 1e-3]), 'strictly increasing'),
    (dict(joint_names=['only_one']), r'q \(N, n_joints\) must have shape'),
    (dict(g=np.zeros((501, 4, 4))), 'last row'),
    (dict(V=np.ones((501, 5))), 'pass base_iota|shape'),
])
def test_write_mcap_errors(tmp_path, traj, change, match):
    with pytest.raises(ValueError, match=match):
        rec.write_mcap(tmp_path / 'e.mcap', **{**traj, **change})
    assert not (tmp_path / 'e.mcap').exists()


def test_write_mcap_nan_and_path_errors(tmp_path, traj):
    q = traj['q'].copy()
    q[123, 1] = np.nan
    with pytest.raises(ValueError, match=r'q .* NaN/Inf at sample 123'):
        rec.write_mcap(tmp_path / 'n.mcap', **{**traj, 'q': q})
    with pytest.raises(ValueError, match='.mcap'):
        rec.write_mcap(tmp_path / 'n.bag', **traj)
    rec.write_mcap(tmp_path / 'once.mcap', decimate=100, **traj)
    with pytest.raises(FileExistsError):
        rec.write_mcap(tmp_path / 'once.mcap', overwrite=False, **traj)
    info = rec.write_mcap(tmp_path / 'once.mcap', decimate=250, **traj)  # overwrite
    assert read_mcap(tmp_path / 'once.mcap')[1].statistics.message_count == 4 * 3
    assert len(info.indices) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ['once.mcap']


def test_write_summary_json(tmp_path):
    data = {'energy_rel_drift': np.float64(np.nan), 'max_err': np.inf, 'n': np.int64(3),
            'series': np.array([1.0, np.nan, -np.inf]), 'ok': np.bool_(True),
            'path': tmp_path / 'x', 'nested': {'t': (1, 2.5)}}
    p = rec.write_summary_json(tmp_path / 'summary.json', data)

    def reject(token):
        raise AssertionError(f'non-standard JSON constant {token}')
    back = json.loads(p.read_text(), parse_constant=reject)
    assert back == {'energy_rel_drift': None, 'max_err': None, 'n': 3,
                    'series': [1.0, None, None], 'ok': True, 'path': str(tmp_path / 'x'),
                    'nested': {'t': [1, 2.5]}}
    with pytest.raises(TypeError):
        rec.write_summary_json(tmp_path / 'bad.json', {'x': object()})


def _check_png(path, min_width=600):
    image = pytest.importorskip('matplotlib.image')
    assert path.is_file() and path.stat().st_size > 10_000
    assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    img = image.imread(path)
    assert img.shape[1] >= min_width and img.shape[0] >= 300
    assert float(img[..., :3].std()) > 0.05  # not a blank canvas


def test_plots(tmp_path, traj):
    t = traj['t']
    _check_png(rec.plot_joints(tmp_path / 'joints.png', t, traj['q'], traj['joint_names'],
                               qd=traj['qd'], units=['rad', 'm']))
    _check_png(rec.plot_base(tmp_path / 'base.png', t, traj['g']))
    e = 1e-13 * t
    _check_png(rec.plot_conservation(tmp_path / 'cons.png', t, e,
                                     np.column_stack([1e-15 * t, np.zeros_like(t)])))
    _check_png(rec.plot_tracking(tmp_path / 'track.png', t, traj['q'] * 1e-3,
                                 traj['joint_names']))
    # many joints -> legend outside, still works
    _check_png(rec.plot_joints(tmp_path / 'many.png', t, np.outer(t, np.arange(12)),
                               [f'j{i}' for i in range(12)]))


def test_plot_input_errors(tmp_path, traj):
    with pytest.raises(ValueError, match='2 columns but 3 names'):
        rec.plot_joints(tmp_path / 'x.png', traj['t'], traj['q'], ['a', 'b', 'c'])
    with pytest.raises(ValueError, match='energy_rel_drift and/or'):
        rec.plot_conservation(tmp_path / 'x.png', traj['t'])
    with pytest.raises(ValueError):
        rec.plot_base(tmp_path / 'x.png', traj['t'][:-1], traj['g'])
    assert not (tmp_path / 'x.png').exists()


def test_rotation_vector_unwrapping_is_continuous():
    angles = np.linspace(0, 2.5 * np.pi, 400)
    R = np.stack([rot([0, 0, 1], a) for a in angles])
    phi = rm.rotvec_from_matrix(R)
    assert np.max(np.abs(np.diff(phi[:, 2]))) > np.pi  # principal log jumps at pi
    un = rec._unwrap_rotvec(phi)
    np.testing.assert_allclose(un[:, 2], angles, atol=1e-9)
