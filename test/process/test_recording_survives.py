"""`vm-sim` loses no recorded work to a kill or a full disk (issue 28, item 5).

* ``kill -9`` in the middle of a run: ``trajectory.mcap`` (in its own name, no hidden folder)
  is read by the standard ``mcap`` reader as it is, with every sample of the chunks written
  so far (complete samples, consecutive stamps), and ``summary.json`` says the run did not
  finish.  The test waits for chunks in the file, not for a time.
* a full disk (a tmpfs of 3 MiB in a private mount namespace; skipped where namespaces are not
  available) and a file size limit (``RLIMIT_FSIZE``, any user): one line on stderr naming the
  file and what it keeps, exit 4, no traceback, and the file keeps exactly that many samples,
  readable; ``summary.json`` says what was written.
"""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

import pytest
from mcap.reader import make_reader
from mcap.stream_reader import StreamReader
from mcap_ros2.decoder import DecoderFactory

from vm_dynamics.app import cli

SCENARIO = "planar_rover"


def vm_sim(*args):
    return [sys.executable, "-m", "vm_dynamics.app.cli", SCENARIO, *args]


def read_recording(path):
    """Messages per topic and the /clock stamps, by the standard reader (make_reader)."""
    counts, clock = {}, []
    with open(path, "rb") as fh:
        reader = make_reader(fh, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == "ros2"
        for _, channel, message, decoded in reader.iter_decoded_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            if channel.topic == "/clock":
                clock.append(decoded.clock.sec * 10**9 + decoded.clock.nanosec)
    return counts, clock


def chunks_in(path) -> int:
    """Chunk records in the file so far (0 while it cannot be read yet)."""
    try:
        with open(path, "rb") as fh:
            return sum(type(r).__name__ == "Chunk"
                       for r in StreamReader(fh, emit_chunks=True).records)
    except Exception:       # noqa: BLE001 - absent, or caught between two writes
        return 0


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """One short run first: the kernels of this scenario compiled or loaded into numba's
    cache (a later run under a file size limit must not need to write it)."""
    out = tmp_path_factory.mktemp("warm")
    subprocess.run(vm_sim("--duration", "0.01", "--out", str(out), "--no-plots", "--quiet"),
                   check=True, capture_output=True, timeout=900)


def test_kill_9_mid_run_leaves_a_readable_recording(tmp_path, warm):
    out = tmp_path / "o"
    proc = subprocess.Popen(vm_sim("--duration", "1000", "--record-rate", "0", "--out", str(out),
                                   "--no-plots", "--quiet"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300
        while chunks_in(out / "trajectory.mcap") < 3 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.05)
        assert chunks_in(out / "trajectory.mcap") >= 3, "no chunks written"
        seen = read_recording(out / "trajectory.mcap")[0]["/clock"]
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    counts, clock = read_recording(out / "trajectory.mcap")
    n = counts["/clock"]
    assert n >= seen > 0
    assert counts == {"/clock": n, "/joint_states": n, "/odom": n, "/tf": n,
                      "/tf_static": 1, "/robot_description": 1}, counts
    assert clock == [k * 1_000_000 for k in range(n)]          # dt = 1 ms, no gap
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "trajectory.mcap"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] is False and summary["scenario"] == SCENARIO


def _check_full_disk_outcome(rc, err, out, reason, copy=None):
    """``out``: the output directory vm-sim wrote; ``copy``: where it is now (default out)."""
    lines = err.strip().splitlines()
    assert rc == cli.EXIT_WRITE_ERROR, err
    assert len(lines) == 1 and "Traceback" not in err, err
    line = lines[0]
    assert line.startswith(f"vm-sim: error: cannot write {out / 'trajectory.mcap'}: {reason}; "
                           f"it keeps "), line
    kept = int(line.split("it keeps ")[1].split()[0])
    out = copy or out
    counts, clock = read_recording(out / "trajectory.mcap")
    assert kept > 0 and counts["/clock"] == counts["/tf"] == kept, (kept, counts)
    assert clock == [k * 1_000_000 for k in range(kept)]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] is False
    assert summary["recording"]["samples"] == kept
    assert summary["write_error"] == line.removeprefix("vm-sim: error: ")


def test_a_file_size_limit_stops_the_run_with_one_line_and_keeps_what_was_written(tmp_path,
                                                                                    warm):
    out = tmp_path / "o"

    def limit():                  # EFBIG instead of the default SIGXFSZ (death)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (3 << 20, 3 << 20))
    proc = subprocess.run(vm_sim("--duration", "1000", "--record-rate", "0", "--out",
                                 str(out), "--no-plots", "--quiet"),
                          capture_output=True, text=True, timeout=900, preexec_fn=limit)
    _check_full_disk_outcome(proc.returncode, proc.stderr, out, "File too large")
    assert (out / "trajectory.mcap").stat().st_size <= 3 << 20


def _private_tmpfs_available() -> str | None:
    """None if ``unshare`` can give this user a mount namespace with a tmpfs, else why not."""
    if shutil.which("unshare") is None:
        return "no unshare(1) on this machine"
    probe = subprocess.run(["unshare", "-rm", "sh", "-c",
                            "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"no private mount namespace here: {probe.stderr.strip()[:120]}"
    return None


def test_a_full_disk_stops_the_run_with_one_line_and_keeps_what_was_written(tmp_path, warm):
    why = _private_tmpfs_available()
    if why is not None:
        pytest.skip(why)
    mnt, kept = tmp_path / "disk", tmp_path / "kept"
    mnt.mkdir()
    out = mnt / "o"
    argv = " ".join(f"'{a}'" for a in vm_sim("--duration", "1000", "--record-rate", "0",
                                             "--out", str(out), "--no-plots", "--quiet"))
    script = (f"mount -t tmpfs -o size=3m tmpfs '{mnt}' || exit 99; {argv} 2>'{tmp_path}/err'; "
              f"rc=$?; cp -a '{out}' '{kept}'; exit $rc")
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True,
                          text=True, timeout=900, env=dict(os.environ))
    assert proc.returncode != 99, proc.stderr
    _check_full_disk_outcome(proc.returncode, (tmp_path / "err").read_text(), out,
                             "No space left on device", copy=kept)
