"""Benchmarks of what users run as processes: the nodes over DDS and ``vm-sim``.

Every measurement starts real processes (``dynamics_node``, ``controller_node``, ``vm-sim``) and
observes them from outside:

* **nodes** — an independent subscriber in this process (a plain Cyclone DDS reader, loopback
  only, its own domain, read in batches so that it takes no CPU from the nodes) receives
  ``/joint_states`` and compares their header stamps (simulated time) with the wall time at
  which the node wrote each one (the DDS source timestamp): real-time factor = Δstamp / Δwall
  over a window that starts after the node's start-up (kernel loading) is over;
* **vm-sim** — the command as a user types it; its summary.json reports the simulated time over
  the wall time of the integration; the whole command's wall time is measured here too;
* **start-up** — ``vm-sim tumbling --duration 0.1`` after clearing numba's on-disk cache of the
  package's kernels (cold: compiles) and again (warm: loads the cache).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from dds_probe import DdsProbe, best_effort, dds_env

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
VM_SIM = str(Path(PY).with_name("vm-sim"))




class JointStateProbe:
    """Independent /joint_states observer: for every sample, the wall time at which the node
    wrote it (the DDS source timestamp, the writer's CLOCK_REALTIME) and its header stamp
    (simulated time).

    A plain Cyclone DDS reader with a deep best-effort queue, read in batches every 10 ms:
    the probe takes next to no CPU from the processes it measures (on a 2-core machine a
    probe that woke and decoded every 1 kHz sample would compete with the dynamics and
    controller nodes), and its own scheduling does not enter the timings.
    """

    def __init__(self, env: dict):
        from vm_dynamics.ros import messages as rm
        self._dds = DdsProbe(env)
        self._reader = self._dds.reader("/joint_states", rm.JOINT_STATE, best_effort(200_000))
        self.samples: list = []

    def poll(self) -> None:
        """Read what arrived: (source wall time s, header stamp s) per sample."""
        self._dds.read_stamps(self._reader, self.samples)

    def wait_first(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while not self.samples and time.monotonic() < end:
            time.sleep(0.05)
            self.poll()
        return bool(self.samples)

    def collect(self, seconds: float) -> np.ndarray:
        start = len(self.samples)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(0.01)
            self.poll()
        return np.asarray(self.samples[start:], dtype=float).reshape(-1, 2)

    def close(self):
        self._reader = None
        self._dds.close()


def _start(module: str, args: list, env: dict, log: Path) -> subprocess.Popen:
    fh = open(log, "w")
    return subprocess.Popen([PY, "-m", module, *args], env=env, cwd=REPO, stdout=fh,
                            stderr=subprocess.STDOUT)


def _stop(procs):
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def node_run(scenario: str, extra: list, with_controller: bool, seconds: float, domain: int,
             workdir: Path, composed: bool = False) -> dict:
    """Start the node(s) on ``config/<scenario>.yaml`` with ``extra`` parameters (``composed``:
    dynamics_node and controller_node in one process, ``composed_nodes``); measure from the
    first /joint_states sample on."""
    env = dds_env(domain)
    params = ["--ros-args", "--params-file", str(REPO / "config" / f"{scenario}.yaml"), *extra]
    probe = JointStateProbe(env)
    module = "vm_dynamics.nodes.composed" if composed else "vm_dynamics.nodes.dynamics_node"
    procs = [_start(module, params, env, workdir / "dyn.log")]
    if with_controller and not composed:
        procs.append(_start("vm_dynamics.nodes.controller_node", params, env,
                            workdir / "ctl.log"))
    try:
        if not probe.wait_first(120.0):
            raise RuntimeError("no /joint_states: " + (workdir / "dyn.log").read_text()[-2000:])
        probe.collect(2.0)                       # settle (discovery, first bursts)
        s = probe.collect(seconds)
    finally:
        _stop(procs)
        probe.close()
    if len(s) < 3:
        raise RuntimeError(f"only {len(s)} samples")
    wall, stamp = s[:, 0], s[:, 1]
    out = {"rtf": (stamp[-1] - stamp[0]) / (wall[-1] - wall[0]), "samples": len(s),
           "rate_hz": (len(s) - 1) / (wall[-1] - wall[0])}
    period = np.diff(wall)
    out.update(period_mean_ms=1e3 * period.mean(), period_std_ms=1e3 * period.std(),
               period_p99_ms=1e3 * np.percentile(period, 99), period_max_ms=1e3 * period.max())
    lag = (wall - wall[0]) - (stamp - stamp[0])
    out.update(lag_spread_ms=1e3 * (np.percentile(lag, 99) - np.percentile(lag, 1)))
    return out


def node_rows(seconds: float = 8.0) -> tuple[list, dict]:
    rows, res = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        domain = 150 + os.getpid() % 50
        for scn in ("spacecraft_arm", "uvms"):
            r = node_run(scn, ["-p", "real_time_factor:=0.0"], False, seconds, domain, work)
            res[f"open_{scn}"] = r
            rows.append([f"dynamics_node {scn}, real_time_factor 0, open loop", f"{r['rtf']:.1f}",
                         "≥ 10", "yes" if r["rtf"] >= 10 else "**no**",
                         f"{r['rate_hz']:.0f}", ""])
        lockstep = ["-p", "lockstep:=true", "-p", "control_rate:=1000.0", "-p", "dt:=0.001",
                    "-p", "real_time_factor:=0.0"]
        # two processes and composed (composed_nodes), alternating, the median of 3 each
        runs: dict = {"lockstep": [], "lockstep_composed": []}
        for k in range(3):
            for key in (("lockstep", "lockstep_composed") if k % 2 == 0 else
                        ("lockstep_composed", "lockstep")):
                runs[key].append(node_run("spacecraft_arm", lockstep, True, seconds, domain,
                                          work, composed=key == "lockstep_composed"))
        for key, label in (("lockstep", "dynamics_node + controller_node spacecraft_arm, "
                                        "lockstep at 1 kHz (two processes)"),
                           ("lockstep_composed", "the same composed in one process "
                                                 "(composed_nodes)")):
            r = res[key] = sorted(runs[key], key=lambda x: x["rtf"])[1]
            target = 3 if key == "lockstep_composed" else 1
            rows.append([label, f"{r['rtf']:.2f}", f"≥ {target}",
                         "yes" if r["rtf"] >= target else "**no**", f"{r['rate_hz']:.0f}",
                         "median of 3, alternating"])
        for scn in ("spacecraft_arm", "uvms"):
            r = node_run(scn, ["-p", "real_time_factor:=1.0"], False, seconds, domain, work)
            res[f"rt_{scn}"] = r
            rows.append([f"dynamics_node {scn}, real_time_factor 1", f"{r['rtf']:.3f}", "", "",
                         f"{r['rate_hz']:.1f}",
                         f"period {r['period_mean_ms']:.2f} ± {r['period_std_ms']:.2f} ms "
                         f"(p99 {r['period_p99_ms']:.2f}, max {r['period_max_ms']:.2f}); "
                         f"sim-vs-wall lag spread (p1–p99) {r['lag_spread_ms']:.2f} ms"])
    return rows, res


def vm_sim_rows() -> tuple[list, dict]:
    """``vm-sim SCENARIO`` at its defaults for every scenario."""
    out = subprocess.run([VM_SIM, "--list"], capture_output=True, text=True, check=True)
    names = [line.split()[0] for line in out.stdout.splitlines() if line.strip()]
    rows, res = [], {}
    env = dict(os.environ, MPLBACKEND="Agg")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            t0 = time.perf_counter()
            r = subprocess.run([VM_SIM, name, "--out", str(Path(tmp) / name)], env=env,
                               capture_output=True, text=True)
            total = time.perf_counter() - t0
            if r.returncode != 0:
                rows.append([f"vm-sim {name}", "failed", "≥ 5", "**no**", "", r.stderr[-200:]])
                continue
            s = json.loads((Path(tmp) / name / "summary.json").read_text())
            rtf = s["real_time_factor"]
            res[name] = rtf
            rows.append([f"vm-sim {name}", f"{rtf:.1f}", "≥ 5", "yes" if rtf >= 5 else "**no**",
                         "", f"{s['simulated_time']:g} s simulated; whole command "
                             f"{total:.1f} s (start-up, plots, recording included)"])
    return rows, res


def startup_rows() -> list:
    """Cold (kernels compiled) and warm (loaded from the disk cache) start-up of a short run."""
    from vm_dynamics.dynamics.fast import kernels  # numba caches beside the kernel sources
    cache = Path(kernels.__file__).parent / "__pycache__"
    env = dict(os.environ, MPLBACKEND="Agg")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label in ("cold (numba cache cleared: compiles the kernels)", "warm (cache on disk)"):
            if label.startswith("cold") and cache.is_dir():
                for f in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
                    f.unlink()
            t0 = time.perf_counter()
            r = subprocess.run([VM_SIM, "tumbling", "--duration", "0.1", "--out",
                                str(Path(tmp) / "t")], env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            notice = "compiling dynamics kernels" in r.stderr
            rows.append(["vm-sim tumbling --duration 0.1", label, f"{wall:.1f}",
                         "yes" if notice else "no", r.returncode])
    return rows


if __name__ == "__main__":      # quick manual run
    if shutil.which(VM_SIM) is None and not Path(VM_SIM).exists():
        sys.exit(f"{VM_SIM} not found; install the package first")
    for row in node_rows(5.0)[0] + vm_sim_rows()[0]:
        print(row)
