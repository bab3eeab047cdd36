#!/usr/bin/env python
"""``dynamics_node`` under a flood of invalid effort commands, side by side with no flood.

    .venv/bin/python bench/flood.py                       # 0, 20 000, 100 000 invalid msgs/s
    .venv/bin/python bench/flood.py --rates 0 20000 --seconds 6

For each flood rate, one run on its own DDS domain (loopback only):

* ``dynamics_node`` on ``config/planar_rover.yaml`` (real_time_factor 1, command_timeout 5 s);
* flooder processes (``test/support/flooder.py invalid-efforts``: efforts of the wrong length)
  sharing the rate; one publisher process cannot write much more than ~25 000 samples/s here,
  so the higher rates use several, and the rate reached is reported (on a 2-core machine the
  flooders compete with the node for CPU, which is part of what a flood does);
* this process: valid effort commands every 10 ms on ``/effort_controller/commands``, and a
  plain Cyclone DDS participant that reads ``/joint_states`` (batches, source timestamps) and
  ``/diagnostics``.

Reported over the window in which the valid commands are sent, which starts 1 s after the
flood has reached the node (its diagnostics count it); the flood stops at the window's end:

* valid acceptance: the rise of ``effort_accepted`` in the node's diagnostics, up to the
  first diagnostics 1.5 s after the flood, over the valid commands sent (a flood may cost
  valid commands: the node keeps the newest ``max_commands_per_turn`` samples per turn);
* ``/joint_states`` rate (Hz) and simulated-time rate (Δ header stamp / Δ source wall time):
  both stay at their no-flood values when the flood does not reach the simulation's clock;
* invalid samples the node rejected and dropped per second (``effort_rejected``,
  ``effort_dropped`` between the diagnostics that bracket the window), next to the rate the
  flooders wrote (over their own sending time); the samples neither rejected nor
  dropped were overwritten in the reader's history (KEEP_LAST ``command_queue_depth``)
  between two turns or lost before it;
* the node's CPU time over the window (all its threads, % of one core), the share of the
  window its main thread spent runnable but waiting for a CPU (``/proc/<pid>/schedstat``),
  and the machine's 1-minute load average at the end: on a shared machine a node that gets
  less CPU than
  stepping needs falls behind real time with or without a flood, and flooders on the same
  CPUs take their share.  ``--pin`` puts the node on a CPU of its own and the flooders on the
  others, as for a flood from another machine.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from dds_probe import DdsProbe, best_effort, reliable
from dds_probe import dds_env as probe_env

REPO = Path(__file__).resolve().parents[1]
FLOODER = REPO / "test" / "support" / "flooder.py"
#: the tree whose vm_dynamics the processes run: the one this process imports (PYTHONPATH),
#: also their working directory, which ``python -m`` puts first on their path
TREE = Path(importlib.util.find_spec("vm_dynamics").origin).resolve().parents[1]
PY = sys.executable
#: what one flooder process is asked for at most
PER_FLOODER = 25_000


def dds_env(domain: int) -> dict:
    """The node processes' environment: loopback DDS on ``domain``, this tree's vm_dynamics."""
    return probe_env(domain, TREE)


class Probe:
    """Plain Cyclone DDS participant: /joint_states (source time, header stamp), the effort
    counters of /diagnostics, and a writer of valid effort commands."""

    def __init__(self, env: dict):
        from vm_dynamics.ros import messages as rm
        from vm_dynamics.transport.dds import to_idl
        rm.use_message_library("rosbags")
        self.rm = rm
        self._dds = DdsProbe(env)
        self._states = self._dds.reader("/joint_states", rm.JOINT_STATE, best_effort(100_000))
        self._diags = self._dds.reader("/diagnostics", rm.DIAGNOSTIC_ARRAY, reliable(100))
        self._writer = self._dds.writer("/effort_controller/commands", rm.FLOAT64_MULTI_ARRAY,
                                        reliable(10))
        self._valid = to_idl(rm.float64_multi_array_msg([0.1, 0.2]), rm.FLOAT64_MULTI_ARRAY)
        self.states: list = []
        self.counts: dict | None = None
        self.counts_at = -1.0                   # when they arrived (monotonic s)

    def poll(self) -> None:
        self._dds.read_stamps(self._states, self.states)
        for data, info in self._dds.take(self._diags, 100):
            if not info.valid_data:
                continue
            msg = self.rm.deserialize(data, self.rm.DIAGNOSTIC_ARRAY)
            for status in self.rm.parse_diagnostic_array(msg):
                v = status["values"]
                if "effort_accepted" in v:
                    self.counts = {k: int(float(v.get(k, 0))) for k in
                                   ("effort_accepted", "effort_rejected", "effort_dropped")}
                    self.counts_at = time.monotonic()

    def send_valid(self) -> None:
        self._writer.write(self._valid)

    def spin(self, seconds: float, send_every: float | None = None) -> int:
        """Poll for ``seconds``; with ``send_every``, write a valid command at that period.
        Returns the number of commands written."""
        sent, end, next_send = 0, time.monotonic() + seconds, time.monotonic()
        while (now := time.monotonic()) < end:
            if send_every is not None and now >= next_send:
                self.send_valid()
                sent += 1
                next_send += send_every
            self.poll()
            time.sleep(0.002 if send_every else 0.01)
        return sent

    def close(self) -> None:
        self._writer = self._states = self._diags = None
        self._dds.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc), s."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_queue_wait(pid: int) -> float:
    """Time the process's main thread has spent runnable but waiting for a CPU, s
    (``/proc/<pid>/schedstat``)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) * 1e-9


def _stop_flooders(flooders: list) -> tuple[int, float]:
    """Stop the flooders; the messages they wrote in all and the longest sending time, s."""
    written, flood_s = 0, 0.0
    for f in flooders:
        f.send_signal(signal.SIGTERM)     # the DDS transport turns it into Ctrl-C
    for f in flooders:
        out, err = f.communicate(timeout=60)
        m = re.search(r"flooder: (\d+) messages in ([\d.]+) s", err)
        if m:
            written += int(m.group(1))
            flood_s = max(flood_s, float(m.group(2)))
    return written, flood_s


def _end(node: subprocess.Popen, flooders: list) -> None:
    """Kill what still runs of the flooders, and end the node."""
    for f in flooders:
        if f.poll() is None:
            f.kill()
    node.terminate()
    try:
        node.wait(10)
    except subprocess.TimeoutExpired:
        node.kill()


def flood_run(rate: int, seconds: float, domain: int, workdir: Path,
              pin: bool = False) -> dict:
    env = dds_env(domain)
    cpus = sorted(os.sched_getaffinity(0))
    if pin and len(cpus) < 2:
        raise ValueError("--pin needs two CPUs")
    if pin:                                  # this process and the flooders: the other CPU
        os.sched_setaffinity(0, cpus[1:])
    probe = Probe(env)
    log = open(workdir / f"dyn_{rate}.log", "w")
    node = subprocess.Popen([PY, "-m", "vm_dynamics.nodes.dynamics_node", "--ros-args",
                             "--params-file", str(REPO / "config" / "planar_rover.yaml"),
                             "-p", "command_timeout:=5.0"], env=env, cwd=TREE, stdout=log,
                            stderr=subprocess.STDOUT)
    if pin:
        os.sched_setaffinity(node.pid, cpus[:1])
    n = math.ceil(rate / PER_FLOODER)
    flooders = []
    try:
        end = time.monotonic() + 120.0
        while (probe.counts is None or not probe.states) and time.monotonic() < end:
            probe.spin(0.1)
        if probe.counts is None:
            raise RuntimeError("no diagnostics: " + (workdir / f"dyn_{rate}.log").read_text())
        base = probe.counts
        for _ in range(n):
            flooders.append(subprocess.Popen(
                [PY, str(FLOODER), "invalid-efforts", "600", f"{rate / n}"], env=env,
                cwd=TREE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        # until the flood reaches the node (its diagnostics may come late: a node that the
        # flood holds publishes none), then 1 s more
        end = time.monotonic() + 30.0
        while rate and time.monotonic() < end and \
                probe.counts["effort_rejected"] + probe.counts["effort_dropped"] \
                < base["effort_rejected"] + base["effort_dropped"] + 500:
            probe.spin(0.1)
        probe.spin(1.0)
        c0, t0, k0 = dict(probe.counts), probe.counts_at, len(probe.states)
        cpu0, wait0 = cpu_seconds(node.pid), run_queue_wait(node.pid)
        sent = probe.spin(seconds, send_every=0.01)
        k1, cpu1, wait1 = len(probe.states), cpu_seconds(node.pid), run_queue_wait(node.pid)
        written, flood_s = _stop_flooders(flooders)
        # counts that include every valid command: diagnostics from after the flood
        stopped, end = time.monotonic(), time.monotonic() + 30.0
        while probe.counts_at < stopped + 1.5 and time.monotonic() < end:
            probe.spin(0.1)
        c1, t1 = dict(probe.counts), probe.counts_at
        alive = node.poll() is None
    finally:
        _end(node, flooders)
        log.close()
        probe.close()
        os.sched_setaffinity(0, cpus)
    s = np.asarray(probe.states[k0:k1], dtype=float).reshape(-1, 2)
    wall = (s[-1, 0] - s[0, 0]) if len(s) > 1 else 0.0
    d = {k: c1[k] - c0[k] for k in c0}
    span = max(t1 - t0, 1e-9)
    return {
        "rate": rate, "flooders": n, "written_per_s": written / flood_s if flood_s else 0.0,
        "sent": sent, "acceptance": d["effort_accepted"] / sent if sent else float("nan"),
        "joint_states_hz": (len(s) - 1) / wall if wall > 0 else 0.0,
        "sim_rate": (s[-1, 1] - s[0, 1]) / wall if wall > 0 else 0.0,
        "rejected_per_s": d["effort_rejected"] / span,
        "dropped_per_s": d["effort_dropped"] / span,
        "joint_states": len(s), "alive": alive,
        "node_cpu": (cpu1 - cpu0) / seconds, "node_wait": (wait1 - wait0) / seconds,
        "load": os.getloadavg()[0],
    }


def flood_rows(rates=(0, 20_000, 100_000), seconds: float = 8.0,
               pin: bool = False) -> tuple[list, list]:
    """One row per flood rate (see the module docstring); also returns the raw results."""
    rows, res = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k, rate in enumerate(rates):
            r = flood_run(rate, seconds, 150 + (os.getpid() + k) % 50, Path(tmp), pin)
            res.append(r)
            rows.append([f"{rate:,}".replace(",", " ") + (f" ({r['flooders']} flooders)"
                                                          if r["flooders"] > 1 else ""),
                         f"{r['written_per_s']:,.0f}".replace(",", " "),
                         f"{100 * r['acceptance']:.0f} % of {r['sent']}",
                         f"{r['joint_states_hz']:.1f}", f"{r['sim_rate']:.3f}",
                         f"{r['rejected_per_s']:,.0f}".replace(",", " "),
                         f"{r['dropped_per_s']:,.0f}".replace(",", " "),
                         f"{100 * r['node_cpu']:.0f} %", f"{100 * r['node_wait']:.0f} %",
                         f"{r['load']:.1f}",
                         "yes" if r["alive"] else "**no**"])
    return rows, res


HEADER = ["invalid efforts/s asked", "written/s", "valid commands applied", "/joint_states Hz",
          "simulated s per wall s", "rejected/s", "dropped/s", "node CPU",
          "node waiting for a CPU", "load average", "node alive"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", type=int, nargs="+", default=[0, 20_000, 100_000])
    ap.add_argument("--seconds", type=float, default=8.0, help="measurement window per rate")
    ap.add_argument("--pin", action="store_true",
                    help="node on the first CPU, flooders and this process on the others (as a "
                         "flood from another machine: the flooders do not take the node's CPU)")
    args = ap.parse_args(argv)
    rows, _ = flood_rows(args.rates, args.seconds, args.pin)
    print(f"vm_dynamics from {TREE}" + (" (node pinned to its own CPU)" if args.pin else ""))
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
