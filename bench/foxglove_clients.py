#!/usr/bin/env python
"""``vm-foxglove`` with many WebSocket clients that subscribe to everything and never read.

    .venv/bin/python bench/foxglove_clients.py                 # 0 and 1 000 silent clients
    .venv/bin/python bench/foxglove_clients.py --clients 300 --seconds 30

For each number of silent clients, one ``vm-foxglove planar_rover`` process at its defaults
(real time, loopback).  A reading client (websockets, subscribed to ``/joint_states``) connects
first; then the silent ones (plain sockets with a 4 kB receive buffer: handshake, subscribe to
every channel, never read; ``test/support/ws_clients.py``).  Reported:

* connections refused (HTTP 503 or reset) among the silent ones;
* the bridge's resident memory before the silent clients, at the end of the window, and the
  growth per minute over the window;
* ``/joint_states`` messages per second received by the reading client (the stream runs at
  ``publish_rate``, 50 Hz, when the bridge keeps real time on this machine), over the window
  and after the silent clients have gone;
* lines the bridge logged (the SDK logs a line per failed send to a vanished client and per
  invalid client message unless throttled).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "test" / "support"))
from ws_clients import channels, raw_client  # noqa: E402

PY = sys.executable
#: the tree whose vm_dynamics the bridge runs: the one this process imports (PYTHONPATH)
TREE = Path(importlib.util.find_spec("vm_dynamics").origin).resolve().parents[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def run(silent: int, seconds: float, workdir: Path) -> dict:
    from websockets.sync import client
    log_path = workdir / f"bridge_{silent}.log"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(TREE), os.environ.get("PYTHONPATH")) if p))
    with open(log_path, "w") as log:
        proc = subprocess.Popen([PY, "-m", "vm_dynamics.nodes.foxglove_bridge", "planar_rover",
                                 "--port", "0"], cwd=TREE, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
    socks, refused = [], 0
    try:
        port, end = None, time.monotonic() + 120.0
        while port is None and time.monotonic() < end and proc.poll() is None:
            m = re.search(r"ws://127\.0\.0\.1:(\d+)", log_path.read_text())
            port = int(m.group(1)) if m else time.sleep(0.1)
        if port is None:
            raise RuntimeError(log_path.read_text()[-2000:])
        ws = client.connect(f"ws://127.0.0.1:{port}", subprotocols=["foxglove.sdk.v1"],
                            open_timeout=30, max_size=None, max_queue=None)
        ids = channels(ws, 10)
        ws.send(json.dumps({"op": "subscribe", "subscriptions": [
            {"id": 1, "channelId": ids["/joint_states"]}]}))

        def joint_states(secs: float) -> int:
            n, stop = 0, time.monotonic() + secs
            while time.monotonic() < stop:
                try:
                    msg = ws.recv(timeout=max(0.01, stop - time.monotonic()))
                except TimeoutError:
                    continue
                n += isinstance(msg, bytes) and msg[:1] == b"\x01"
            return n
        joint_states(3.0)                             # settle
        rss0 = rss_mb(proc.pid)
        for _ in range(silent):
            try:
                s, answer = raw_client(port, subscribe=list(ids.values()))
                socks.append(s)
                refused += not answer.startswith(b"HTTP/1.1 101")
            except OSError:
                refused += 1
        t0, rss1 = time.monotonic(), rss_mb(proc.pid)
        got = joint_states(seconds)
        window = time.monotonic() - t0
        rss2 = rss_mb(proc.pid)
        for s in socks:
            s.close()
        socks.clear()
        time.sleep(2.0)
        after = joint_states(5.0) / 5.0
        ws.close()
        alive = proc.poll() is None
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    lines = log_path.read_text().splitlines()
    return {"silent": silent, "refused": refused, "rss_before": rss0, "rss_end": rss2,
            "growth_per_min": (rss2 - rss1) / window * 60.0, "hz": got / window,
            "hz_after": after, "log_lines": len(lines), "alive": alive,
            "load": os.getloadavg()[0]}


HEADER = ["silent clients", "refused", "RSS before → end of window (MB)", "growth MB/min",
          "reader /joint_states Hz", "after they left", "log lines", "alive", "load average"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[0, 1000])
    ap.add_argument("--seconds", type=float, default=60.0, help="window per run")
    args = ap.parse_args(argv)
    print(f"vm_dynamics from {TREE}")
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.clients:
            r = run(n, args.seconds, Path(tmp))
            print(f"| {n} | {r['refused']} | {r['rss_before']:.0f} → {r['rss_end']:.0f} | "
                  f"{r['growth_per_min']:.1f} | {r['hz']:.1f} | {r['hz_after']:.1f} | "
                  f"{r['log_lines']} | {'yes' if r['alive'] else '**no**'} | {r['load']:.1f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
