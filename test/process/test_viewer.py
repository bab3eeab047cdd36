"""The viewer without a browser: the core stays free of viewer dependencies, URDF visuals,
playbacks read back from recordings (against the model's kinematics), the viser server over
HTTP, ``vm-view`` / ``vm-sim --view`` / ``vm-sim --video`` end to end, and the Foxglove
bridge's subprotocol and missing-extra hint.  The real-browser test is
``test_viewer_browser.py``."""
import re
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from vm_dynamics.config.scenario import load_scenario
from vm_dynamics.ros import recording as rec

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
VIEWER_DEPS = ("viser", "mcap", "matplotlib", "foxglove", "imageio_ffmpeg", "trimesh", "PIL")

# Makes the listed top-level modules unimportable in a child interpreter.
BLOCK = """
import sys


class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, _Block())
"""


def run_py(code, blocked=(), timeout=120):
    src = BLOCK.format(blocked=set(blocked)) + code
    return subprocess.run([PY, "-c", src], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def test_core_imports_and_simulates_without_viewer_dependencies():
    p = run_py("import numpy as np, vm_dynamics as vm\n"
               "from vm_dynamics.config.scenario import load_scenario\n"
               "s = load_scenario('tumbling')\n"
               "tr = vm.simulate(s.model, s.g0, s.V0, s.q0, s.qd0, 0.01, 1e-3, dynamics='lp')\n"
               "print(len(tr.t))\n", blocked=VIEWER_DEPS)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "11"


def spacecraft_recording(path, n=21, duration=2.0):
    """A recording of spacecraft_arm moving along its joint reference (kinematics only)."""
    scn = load_scenario("spacecraft_arm")
    m = scn.model
    t = np.linspace(0.0, duration, n)
    q0 = np.array(scn.q0)
    q1 = np.array([0.8, -0.3, 0.4, 1.0, -0.5, 0.6, 0.3])
    s = (t / duration)[:, None]
    q = q0 + (q1 - q0) * (10 * s**3 - 15 * s**4 + 6 * s**5)
    g = np.tile(np.eye(4), (n, 1, 1))
    g[:, 2, 3] = 0.05 * t
    rec.write_mcap(path, t, g, np.zeros((n, 6)), q, 0 * q, m.joint_names,
                   robot_description=str(scn.urdf_path))
    return scn, t, g, q


# ----------------------------------------------------------------------------- scene

def test_urdf_visuals_of_the_scenarios():
    from vm_dynamics.ros.urdf_tf import UrdfTree
    from vm_dynamics.viewer.scene import urdf_visuals
    scn = load_scenario("spacecraft_arm")
    vis, warnings = urdf_visuals(UrdfTree(str(scn.urdf_path)).xml)
    assert warnings == []
    links = {v.link for v in vis}
    assert {"base_link", "solar_wing_left", "link4", "ee_link"} <= links
    bus = [v for v in vis if v.link == "base_link" and v.kind == "box"]
    assert bus and bus[0].rgba == pytest.approx((0.85, 0.68, 0.20, 1.0))  # named material
    assert {v.kind for v in vis} >= {"box", "cylinder"}
    for name in ("uvms", "planar_rover", "satellite_wheels", "tumbling"):
        vis, warnings = urdf_visuals(UrdfTree(str(load_scenario(name).urdf_path)).xml)
        assert vis and warnings == [], name


def test_urdf_visuals_meshes_and_errors(tmp_path):
    from vm_dynamics.viewer.scene import urdf_visuals
    (tmp_path / "part.stl").write_text("solid x\nendsolid x\n")
    urdf = ('<robot name="r"><link name="a"><visual><geometry><mesh filename="part.stl" '
            'scale="2 2 2"/></geometry></visual><visual><geometry><mesh '
            'filename="package://nope/x.dae"/></geometry></visual></link></robot>')
    vis, warnings = urdf_visuals(urdf, base_dir=tmp_path)
    assert [(v.kind, v.size, Path(v.mesh).name) for v in vis] == [("mesh", (2, 2, 2),
                                                                  "part.stl")]
    assert len(warnings) == 1 and warnings[0].startswith(
        "1 visual cannot be drawn ('package://nope/x.dae': not found (searched AMENT_PREFIX_PATH")
    with pytest.raises(ValueError, match=r"link 'a' visual 0: box size needs 3"):
        urdf_visuals('<robot name="r"><link name="a"><visual><geometry><box size="1 2"/>'
                     '</geometry></visual></link></robot>')
    with pytest.raises(ValueError, match=r"cylinder radius needs 1 finite non-negative"):
        urdf_visuals('<robot name="r"><link name="a"><visual><geometry><cylinder radius="-1" '
                     'length="1"/></geometry></visual></link></robot>')


def test_playback_from_recording_matches_the_model(tmp_path):
    from vm_dynamics.viewer.scene import playback_from_mcap
    scn, t, g, q = spacecraft_recording(tmp_path / "r.mcap")
    pb = playback_from_mcap(tmp_path / "r.mcap", max_rate=None)
    assert len(pb) == len(t) and pb.fixed_frame == "odom" and pb.ee_frame == "ee_link"
    np.testing.assert_allclose(pb.t, t, atol=1e-9)
    for k in (0, 7, len(t) - 1):
        for frame in scn.model.frame_names:
            np.testing.assert_allclose(pb.poses[k, pb.links.index(frame)],
                                       scn.model.frame_pose(q[k], frame, g[k]), atol=1e-12)
    assert pb.index(t[7] + 1e-6) == 7 and pb.index(-5) == 0 and pb.index(1e9) == len(t) - 1
    assert len(playback_from_mcap(tmp_path / "r.mcap", max_rate=2.0)) == 5  # 0, .5, 1, 1.5, 2
    path = pb.ee_path()
    assert path.shape == (len(t), 3) and np.linalg.norm(path[-1] - path[0]) > 0.3


def test_playback_errors_name_what_is_missing(tmp_path):
    from vm_dynamics.viewer.scene import playback_from_mcap
    N = 3
    rec.write_mcap(tmp_path / "bare.mcap", np.arange(N) * 0.1, np.tile(np.eye(4), (N, 1, 1)),
                   np.zeros((N, 6)), np.zeros((N, 1)), np.zeros((N, 1)), ["j"])
    with pytest.raises(ValueError, match="no /robot_description in the recording"):
        playback_from_mcap(tmp_path / "bare.mcap")
    (tmp_path / "junk.mcap").write_bytes(b"not an mcap file at all")
    with pytest.raises(ValueError, match="cannot read the MCAP file"):
        playback_from_mcap(tmp_path / "junk.mcap")
    with pytest.raises(ValueError, match="no such recording"):
        playback_from_mcap(tmp_path / "missing.mcap")
    spacecraft_recording(tmp_path / "r.mcap", n=3)
    with pytest.raises(ValueError, match="end-effector frame 'nope' is not a link"):
        playback_from_mcap(tmp_path / "r.mcap", ee_frame="nope")


# ---------------------------------------------------------------------------- server

def test_robot_viewer_serves_the_page_and_replays(tmp_path):
    import viser  # noqa: F401

    from vm_dynamics.viewer.scene import playback_from_mcap
    from vm_dynamics.viewer.server import RobotViewer
    spacecraft_recording(tmp_path / "r.mcap")
    pb = playback_from_mcap(tmp_path / "r.mcap")
    with pytest.raises(ValueError, match="port must be an integer in 0..65535"):
        RobotViewer(pb.urdf, port=70000)
    v = RobotViewer(pb.urdf, port=0)
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", v.url) and v.port > 0
        html = urllib.request.urlopen(v.url, timeout=10).read().decode()
        assert "<title>Viser</title>" in html
        v.set_playback(pb)
        ee = v._links["ee_link"]
        v.set_time(pb.t[0])
        p0 = np.array(ee.position)
        v.set_time(pb.t[-1])
        p1 = np.array(ee.position)
        np.testing.assert_allclose(p1, pb.poses[-1, pb.links.index("ee_link"), :3, 3])
        assert np.linalg.norm(p1 - p0) > 0.3
        v.set_time(pb.t[0])
        v.play(True)
        time.sleep(1.0)
        assert v.t > pb.t[0] + 0.3   # the play loop advances in real time
        v.play(False)
    finally:
        v.stop()


# ------------------------------------------------------------------------------ CLIs

def test_vm_view_cli_errors_are_one_line(tmp_path):
    from vm_dynamics.viewer.cli import main
    cases = [([str(tmp_path / "missing.mcap")], "no such recording"),
             ([str(tmp_path), "--port", "70000"], "--port must be in 0..65535"),
             ([str(tmp_path), "--rate", "0"], "--rate must be a finite positive number"),
             ([], "give a recording or --ros SCENARIO"),
             ([str(tmp_path), "--ros", "tumbling"], "give a recording or --ros SCENARIO"),
             (["--ros", "no_such_scenario", "--port", "0"], "no_such_scenario")]
    for argv, msg in cases:
        p = subprocess.run([PY, "-m", "vm_dynamics.viewer.cli", *argv], capture_output=True,
                           text=True, timeout=60, cwd=ROOT)
        assert p.returncode == 2, (argv, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("vm-view: error: ") and msg in lines[0]
    assert main is not None


def test_missing_viz_extra_gives_a_one_line_hint(tmp_path):
    spacecraft_recording(tmp_path / "r.mcap", n=3)
    for code, prog in [("from vm_dynamics.viewer.cli import main; "
                        f"raise SystemExit(main([{str(tmp_path / 'r.mcap')!r}]))", "vm-view"),
                       ("from vm_dynamics.app.cli import main; "
                        "raise SystemExit(main(['tumbling', '--view', '--duration', '0.01']))",
                        "vm-sim"),
                       ("from vm_dynamics.nodes.foxglove_bridge import main; "
                        "raise SystemExit(main(['tumbling']))", "vm-foxglove")]:
        p = run_py(code, blocked=("viser", "foxglove"))
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1, (prog, p.stderr)
        assert lines[0].startswith(f"{prog}: error: ") and "vm_dynamics[viz]" in lines[0]


def test_vm_sim_video_gif_and_mp4(tmp_path):
    import imageio_ffmpeg
    import matplotlib  # noqa: F401
    from PIL import Image
    for name in ("v.gif", "v.mp4"):
        p = subprocess.run([PY, "-m", "vm_dynamics.app.cli", "planar_rover", "--duration", "1.0",
                            "--out", str(tmp_path / "o"), "--no-plots", "--quiet",
                            "--video", str(tmp_path / name)],
                           capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert p.returncode == 0, p.stderr
        assert f"wrote {tmp_path / name}" in p.stdout
    im = Image.open(tmp_path / "v.gif")
    assert im.n_frames == 11 and im.size == (440, 330)      # 10 fps over 1 s
    frames = []
    for k in (0, 10):
        im.seek(k)
        frames.append(np.asarray(im.convert("RGB"), dtype=int))
    assert (frames[0] != 255).any(axis=2).mean() > 0.02      # something is drawn
    assert (np.abs(frames[0] - frames[1]).sum(axis=2) > 30).mean() > 0.001   # it moved
    nframes, secs = imageio_ffmpeg.count_frames_and_secs(str(tmp_path / "v.mp4"))
    assert nframes == 26 and secs == pytest.approx(1.04, abs=0.05)   # 25 fps
    p = subprocess.run([PY, "-m", "vm_dynamics.app.cli", "planar_rover", "--video", "x.avi"],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 2 and p.stderr.strip() == (
        "vm-sim: error: --video: 'x.avi' must end with .mp4 or .gif")


def test_vm_sim_view_live_then_replay(tmp_path):
    import viser  # noqa: F401
    proc = subprocess.Popen([PY, "-u", "-m", "vm_dynamics.app.cli", "planar_rover", "--duration",
                             "1.0", "--view", "--port", "0", "--no-plots", "--quiet",
                             "--out", str(tmp_path / "o")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        lines = []
        deadline = time.monotonic() + 240
        url = None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"live view at (http://127\.0\.0\.1:\d+/)", line)
            if m:
                url = m.group(1)
                assert "Viser" in urllib.request.urlopen(url, timeout=10).read().decode()
            if "replay at" in line:
                break
        assert url and any(f"replay at {url}" in ln for ln in lines), "".join(lines)
        assert (tmp_path / "o" / "trajectory.mcap").is_file()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------------ Foxglove

def test_foxglove_server_speaks_only_the_sdk_subprotocol():
    """What the bridge's docs say: foxglove-sdk's server accepts ``foxglove.sdk.v1`` and
    refuses a client that offers only ``foxglove.websocket.v1`` with HTTP 400."""
    import foxglove
    from websockets.exceptions import InvalidStatus
    from websockets.sync import client
    server = foxglove.start_server(host="127.0.0.1", port=0)
    try:
        url = f"ws://127.0.0.1:{server.port}"
        with client.connect(url, subprotocols=["foxglove.sdk.v1"], open_timeout=10) as ws:
            assert ws.subprotocol == "foxglove.sdk.v1"
        with pytest.raises(InvalidStatus) as err:
            client.connect(url, subprotocols=["foxglove.websocket.v1"], open_timeout=10)
        assert err.value.response.status_code == 400
    finally:
        server.stop()


def test_vm_view_ros_follows_the_dynamics_node_over_dds(monkeypatch, tmp_path):
    """``vm-view --ros``'s follower on the plain-DDS transport draws what a real
    dynamics_node process publishes: the end effector where the model puts it."""
    import os

    import cyclonedds  # noqa: F401
    import viser  # noqa: F401

    from vm_dynamics.transport.dds import DdsTransport
    from vm_dynamics.viewer.ros import follow_nodes
    from vm_dynamics.viewer.server import RobotViewer
    env = dict(os.environ, CYCLONEDDS_URI=(ROOT / "test" / "cyclonedds-loopback.xml").as_uri(),
               ROS_DOMAIN_ID=str(20 + os.getpid() % 80), VM_DYNAMICS_TRANSPORT="dds")
    for k in ("CYCLONEDDS_URI", "ROS_DOMAIN_ID", "VM_DYNAMICS_TRANSPORT"):
        monkeypatch.setenv(k, env[k])
    scn = load_scenario("planar_rover")
    log = open(tmp_path / "dyn.log", "w")
    node = subprocess.Popen([PY, "-m", "vm_dynamics.nodes.dynamics_node", "--ros-args",
                             "--params-file", str(ROOT / "config" / "planar_rover.yaml"),
                             "-p", "dynamics_backend:=lp", "-p", "dt:=0.01",
                             "-p", "initial.joint_positions:=[0.6, -0.4]"],
                            env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    viewer = RobotViewer(str(scn.urdf_path), port=0)
    transport = DdsTransport("vm_view_test", {}, ["vm_view_test"])
    try:
        follower = follow_nodes(viewer, transport)
        assert transport.spin_until(lambda: follower.shown >= 3, 90.0), \
            (tmp_path / "dyn.log").read_text()
        follower.update(force=True)
        q = [follower.positions[j] for j in scn.model.joint_names]
        assert abs(q[0] - 0.6) < 0.3   # started at 0.6 rad, moves slowly under gravity
        ee = scn.model.frame_pose(q, "ee_link", follower.g)
        np.testing.assert_allclose(viewer._ee.position, ee[:3, 3], atol=1e-9)
        assert viewer.t > 0
    finally:
        transport.shutdown()
        viewer.stop()
        node.terminate()
        node.wait(timeout=20)
        log.close()


# ---------------------------------------------------- Foxglove: bounded clients and logs

def _sdk_server_and_gate(**gate_kw):
    import foxglove

    from vm_dynamics.nodes.foxglove_bridge import foxglove_droppable
    from vm_dynamics.nodes.ws_gate import WebSocketGate
    server = foxglove.start_server(host="127.0.0.1", port=0)
    gate = WebSocketGate(("127.0.0.1", server.port), droppable=foxglove_droppable,
                         **gate_kw).start()
    return server, gate


def test_ws_gate_bounds_the_queue_of_a_client_that_never_reads():
    """A subscribed client that never reads: what the server streams to it queues in the
    gate up to the bound (frames and bytes), the oldest data messages are dropped and
    counted, and a reading client beside it still gets the whole stream's end."""
    import foxglove
    from websockets.sync import client
    from ws_clients import channels, raw_client
    server, gate = _sdk_server_and_gate(max_clients=4, max_frames=40, max_bytes=1 << 20)
    chan = foxglove.Channel("/big", message_encoding="json")
    try:
        url = f"ws://127.0.0.1:{gate.port}"
        with client.connect(url, subprotocols=["foxglove.sdk.v1"], open_timeout=10,
                            max_size=None) as ws:
            ids = channels(ws, 1)
            ws.send('{"op":"subscribe","subscriptions":[{"id":1,"channelId":%d}]}'
                    % ids["/big"])
            silent, answer = raw_client(gate.port, subscribe=[ids["/big"]])
            assert answer.startswith(b"HTTP/1.1 101")
            time.sleep(0.5)                        # both subscriptions reach the server
            pad = "x" * 10_000
            n = 3000                               # 30 MB: far beyond any socket buffer
            last, end = -1, time.monotonic() + 60.0
            for k in range(n):
                chan.log({"k": k, "pad": pad})
                while True:                        # the reader keeps up with the stream
                    try:
                        msg = ws.recv(timeout=0 if k < n - 1 else 10.0)
                    except TimeoutError:
                        break
                    if isinstance(msg, bytes) and msg[0] == 1:
                        last = int(re.search(rb'"k":\s*(\d+)', msg).group(1))
                        if last == n - 1 or k < n - 1:
                            break
                if time.monotonic() > end:
                    break
            assert last == n - 1                   # the reading client got the end
            assert gate.dropped > 0, gate.dropped  # (how many: the sockets' buffers decide)
            assert gate.max_queued_frames <= 40, gate.max_queued_frames
            assert gate.max_queued <= 40 * 10_100, gate.max_queued
            assert gate.disconnected == 0 and gate.clients == 2
            silent.close()
    finally:
        gate.stop()
        server.stop()


class _FrameServer:
    """A stand-in WebSocket server for the gate: accepts one connection, answers its handshake
    with 101 and sends ``frames`` (unmasked, as a server does); ``done`` is set after."""

    def __init__(self, frames):
        import threading
        self.frames, self.done = frames, threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    @staticmethod
    def frame(opcode, payload):
        n = len(payload)
        head = bytes([0x80 | opcode]) + (bytes([n]) if n < 126 else
                                         bytes([126]) + struct.pack(">H", n) if n < 65536 else
                                         bytes([127]) + struct.pack(">Q", n))
        return head + payload

    def _serve(self):
        conn, _ = self.sock.accept()
        req = b""
        while b"\r\n\r\n" not in req:
            req += conn.recv(4096)
        conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\n\r\n")
        try:
            for f in self.frames:
                conn.sendall(f)
        except OSError:
            pass
        self.done.set()
        self.conn = conn


def _read_frames(sock, answer, timeout=10.0):
    """Every WebSocket frame a client socket receives until it is quiet for 1 s:
    [(opcode, payload)]; ``answer`` is what :func:`raw_client` read (the HTTP answer and
    perhaps the first frames)."""
    sock.settimeout(1.0)
    data, end = answer, time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            chunk = sock.recv(1 << 20)
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    data = data[data.index(b"\r\n\r\n") + 4:]
    out, pos = [], 0
    while pos + 2 <= len(data):
        op, n, head = data[pos] & 0x0F, data[pos + 1] & 0x7F, 2
        if n == 126:
            n, head = struct.unpack_from(">H", data, pos + 2)[0], 4
        elif n == 127:
            n, head = struct.unpack_from(">Q", data, pos + 2)[0], 10
        if pos + head + n > len(data):
            break
        out.append((op, data[pos + head:pos + head + n]))
        pos += head + n
    return out


def test_ws_gate_keeps_protocol_messages_and_drops_the_oldest_data():
    """The queue policy, against a stand-in server: 200 data frames of 64 kB (droppable:
    binary, first byte 1) with text frames between them, to a client that reads only once
    the server is done.  The client then gets every text frame, in order, the newest data
    frame, and data frames in order; what it does not get is what the gate counted as
    dropped; the queue never held more than its bound."""
    from vm_dynamics.nodes.foxglove_bridge import foxglove_droppable
    from vm_dynamics.nodes.ws_gate import WebSocketGate
    frames, texts = [], []
    for k in range(200):
        if k % 40 == 0:
            texts.append(f'{{"op":"status","k":{k}}}'.encode())
            frames.append(_FrameServer.frame(0x1, texts[-1]))
        frames.append(_FrameServer.frame(0x2, b"\x01" + k.to_bytes(4, "big") + bytes(65531)))
    server = _FrameServer(frames)
    gate = WebSocketGate(("127.0.0.1", server.port), max_clients=2, max_frames=10,
                         max_bytes=64 << 20, droppable=foxglove_droppable).start()
    try:
        from ws_clients import raw_client
        client, answer = raw_client(gate.port, subscribe=())
        assert answer.startswith(b"HTTP/1.1 101")
        assert server.done.wait(60.0)
        time.sleep(0.5)
        got = _read_frames(client, answer)
        client.close()
    finally:
        gate.stop()
    assert [p for op, p in got if op == 0x1] == texts
    data = [int.from_bytes(p[1:5], "big") for op, p in got if op == 0x2]
    assert data == sorted(data) and data[-1] == 199
    assert gate.dropped == 200 - len(data) > 0
    assert gate.max_queued_frames <= 10 and gate.disconnected == 0


def test_ws_gate_disconnects_a_client_that_never_reads_protocol_messages():
    """Frames that may not be dropped (text) pile up for a client that never reads: past
    ``max_bytes`` the gate disconnects it (counted) instead of buffering without end."""
    from vm_dynamics.nodes.foxglove_bridge import foxglove_droppable
    from vm_dynamics.nodes.ws_gate import WebSocketGate
    text = _FrameServer.frame(0x1, b'{"op":"status","message":"' + b"x" * 65000 + b'"}')
    server = _FrameServer([text] * 400)            # 26 MB
    gate = WebSocketGate(("127.0.0.1", server.port), max_clients=2, max_frames=10,
                         max_bytes=1 << 20, droppable=foxglove_droppable).start()
    try:
        from ws_clients import raw_client
        client, answer = raw_client(gate.port, subscribe=())
        assert answer.startswith(b"HTTP/1.1 101")
        deadline = time.monotonic() + 60.0
        while gate.disconnected == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gate.disconnected == 1 and gate.clients == 0
        assert gate.max_queued <= (1 << 20) + len(text)
        client.close()
    finally:
        gate.stop()


def test_ws_gate_refuses_connections_beyond_the_cap_with_a_reason():
    from websockets.exceptions import InvalidStatus
    from websockets.sync import client
    server, gate = _sdk_server_and_gate(max_clients=2, refusal="full: at most 2")
    try:
        url = f"ws://127.0.0.1:{gate.port}"
        first = client.connect(url, subprotocols=["foxglove.sdk.v1"], open_timeout=10)
        second = client.connect(url, subprotocols=["foxglove.sdk.v1"], open_timeout=10)
        for _ in range(3):
            with pytest.raises(InvalidStatus) as err:
                client.connect(url, subprotocols=["foxglove.sdk.v1"], open_timeout=10)
            assert err.value.response.status_code == 503
            assert bytes(err.value.response.body) == b"full: at most 2\n"
        assert gate.refused == 3 and gate.accepted == 2
        first.close()
        deadline = time.monotonic() + 10.0
        while gate.clients > 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        with client.connect(url, subprotocols=["foxglove.sdk.v1"], open_timeout=10) as third:
            assert third.subprotocol == "foxglove.sdk.v1"
        # the server's own refusal (wrong subprotocol) reaches the client through the gate
        with pytest.raises(InvalidStatus) as err:
            client.connect(url, subprotocols=["foxglove.websocket.v1"], open_timeout=10)
        assert err.value.response.status_code == 400
        second.close()
    finally:
        gate.stop()
        server.stop()


def test_throttled_log_handler_writes_one_line_per_kind_and_period():
    import io
    import logging

    from vm_dynamics.nodes.foxglove_bridge import ThrottledLogHandler
    now = [0.0]
    out = io.StringIO()
    h = ThrottledLogHandler(period=5.0, budget=20, stream=out, clock=lambda: now[0])

    def log(name, msg):
        h.handle(logging.LogRecord(name, logging.ERROR, __file__, 1, msg, None, None))
    for k in range(10_000):                         # one kind: the address varies
        log("foxglove.websocket.connected_client",
            f"Error sending message to client 127.0.0.1:{40000 + k % 500}: IO error: Broken "
            f"pipe (os error 32)")
    assert h.written == 1 and h.suppressed == 9_999
    for k in range(300):                            # many kinds: the budget holds
        log("foxglove.websocket.connected_client",
            f"Invalid message from 127.0.0.1:4711: unknown variant `op{k}`, kind {'ab'[k % 2]}"
            + "!" * k)
    assert h.written == 20
    now[0] = 6.0
    log("foxglove.websocket.connected_client",
        "Error sending message to client 127.0.0.1:1: IO error: Broken pipe (os error 32)")
    lines = out.getvalue().splitlines()
    assert "more log lines in the last 6 s left out" in lines[-2]
    assert lines[-1].endswith("(9999 more like this left out)"), lines[-1]
    assert lines[0].startswith("[ERROR] [foxglove.websocket.connected_client]: Error sending")


def test_vm_foxglove_caps_clients_bounds_slow_ones_and_throttles_sdk_logs(tmp_path):
    """The bridge end to end: clients beyond --max-clients get HTTP 503 naming the limit,
    non-reading clients do not stop a reading one from getting /joint_states, and 500
    invalid client messages (one SDK log line each) plus the broken pipes of vanished clients
    give a handful of log lines."""
    import json

    from websockets.exceptions import InvalidStatus
    from websockets.sync import client
    from ws_clients import channels, raw_client
    log_path = tmp_path / "bridge.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([PY, "-m", "vm_dynamics.nodes.foxglove_bridge", "planar_rover",
                                 "--port", "0", "--max-clients", "4", "--client-queue", "16"],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline, port = time.monotonic() + 120.0, None
        while port is None and time.monotonic() < deadline and proc.poll() is None:
            m = re.search(r"ws://127\.0\.0\.1:(\d+)", log_path.read_text())
            port = int(m.group(1)) if m else time.sleep(0.1)
        assert port, log_path.read_text()
        url = f"ws://127.0.0.1:{port}"
        ws = client.connect(url, subprotocols=["foxglove.sdk.v1"], open_timeout=20,
                            max_size=None, max_queue=None)       # reads all it is sent
        ids = channels(ws, 10)
        ws.send(json.dumps({"op": "subscribe", "subscriptions": [
            {"id": 1, "channelId": ids["/joint_states"]}]}))
        silent = [raw_client(port, subscribe=list(ids.values()))[0] for _ in range(3)]
        with pytest.raises(InvalidStatus) as err:
            client.connect(url, subprotocols=["foxglove.sdk.v1"], open_timeout=20)
        assert err.value.response.status_code == 503
        assert b"at most 4" in bytes(err.value.response.body)

        def joint_states(seconds):
            n, end = 0, time.monotonic() + seconds
            while time.monotonic() < end:
                try:
                    msg = ws.recv(timeout=max(0.01, end - time.monotonic()))
                except TimeoutError:
                    break
                n += isinstance(msg, bytes) and msg[:1] == b"\x01"
            return n
        for _ in range(3):                          # the stream goes on beside them
            assert joint_states(2.0) > 0
        for k in range(500):
            ws.send(f"not json {k}")
        for s in silent:                            # vanish without a close handshake
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        assert joint_states(3.0) > 0
        ws.close()
        time.sleep(1.0)
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    lines = log_path.read_text().splitlines()
    invalid = [ln for ln in lines if "Invalid message" in ln]
    assert 1 <= len(invalid) <= 2, invalid
    assert len(lines) <= 30, "\n".join(lines)
    assert "Traceback" not in log_path.read_text()
