#!/usr/bin/env python
"""Where one lockstep period goes: dynamics_node + controller_node at 1 kHz over DDS, profiled.

    .venv/bin/python bench/lockstep_profile.py [--seconds 8] [--domain 63] [--no-sampled]
    .venv/bin/python bench/lockstep_profile.py --composed [--no-sampled]
    .venv/bin/python bench/lockstep_profile.py --rclpy /work/ros2_ws/install/setup.bash \
        --python /work/ros2_ws/venv/bin/python3 [--numba-cache DIR]

With ``--composed`` the two nodes run composed in one process (``composed_nodes``,
:mod:`vm_dynamics.nodes.composed`: one executor, the samples between them handed over in the
process); its CPU time is that of both nodes, reported as ``composed_nodes``.

With ``--rclpy SETUP`` the nodes run on rclpy (``VM_DYNAMICS_TRANSPORT=rclpy``,
``RMW_IMPLEMENTATION=rmw_cyclonedds_cpp``) in the environment of the ROS 2 ``SETUP`` script
sourced, under the interpreter ``--python`` (the one rclpy was built for), with this tree's
vm_dynamics first on ``PYTHONPATH``; ``--numba-cache`` gives that interpreter a kernel cache of
its own.  The probe stays a plain Cyclone DDS reader here (the wire is the same).

Runs ``bench/nodes.py``'s lockstep case (``spacecraft_arm``, ``lockstep:=true``,
``control_rate:=1000``, ``dt:=0.001``, ``real_time_factor:=0``; Cyclone DDS on loopback, its own
domain) with an independent /joint_states subscriber, twice:

1. **plain** — the real-time factor, and each node's CPU time (``/proc/<pid>/stat``, user +
   system) over the window, per lockstep period (one period = one simulated millisecond = one
   dynamics step and one controller update, two DDS messages each way);
2. **sampled** — each node under ``bench/sampled.py`` (a sampling profiler of the main thread,
   started by SIGUSR1 after the start-up and the settling time, so only the steady state is
   sampled; it adds no per-call cost), stopped with SIGINT.  Each sample is attributed to
   what the innermost recognised frame does: waiting (the line calls sleep/wait/select), CDR
   encoding/decoding (our message codecs and Cyclone's IDL serializer), DDS (the rest of the
   Cyclone binding and our DDS transport), the dynamics step (``vm_dynamics.sim`` /
   ``dynamics``), the controller (``vm_dynamics.control``), the node's own Python
   (``vm_dynamics.nodes``/``core``/other ``transport``), other.  A sample inside a C function
   (a DDS write, a compiled kernel) counts for the Python line that called it.

   These shares are of wall-clock samples of the main thread, not of its CPU time: a thread
   that is runnable but waiting for a CPU (the machine loaded) is sampled where it stands, and
   the sampler itself needs the GIL, which a compiled call holds until it returns.  Under load
   they put far more on the compiled calls and the DDS writes than those cost (lockstep at
   load 7-12: 'step' 38 % of the dynamics node's samples, its compiled code 5 % of its CPU
   time by ``--perf``).

With ``--perf`` the plain run also records each node with ``perf record`` over the measured
window (CPU-time samples of all its threads) and prints each node's CPU time per period by
shared object: the Python interpreter, numpy, numba's compiled code (``[JIT]``), Cyclone DDS,
the kernel (system calls, wake-ups), libc.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import linecache
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dds_probe import dds_env  # noqa: E402
from nodes import REPO, JointStateProbe  # noqa: E402

PY = sys.executable
#: the process of the composed nodes (``--composed``)
COMPOSED = ("composed_nodes",)
PARAMS = ["-p", "lockstep:=true", "-p", "control_rate:=1000.0", "-p", "dt:=0.001",
          "-p", "real_time_factor:=0.0"]

WAIT = "waiting (sleep, wait, select)"
#: (category, substrings of a frame's file), first match wins, innermost frame first
CATEGORIES = [
    ("CDR encode/decode", ("/transport/exact_cdr", "/transport/dds_wire", "/transport/dds_idl",
                           "/ros/messages", "/ros/fields", "/ros/cdr_counts", "cyclonedds/idl/")),
    ("DDS (Cyclone binding, our DDS transport)", ("cyclonedds/", "/transport/dds")),
    ("dynamics step (engine, compiled kernels)", ("vm_dynamics/sim/", "vm_dynamics/dynamics/",
                                                  "vm_dynamics/forces/")),
    ("controller", ("vm_dynamics/control/",)),
    ("node Python (cores, pacing, messages)", ("vm_dynamics/",)),
    (WAIT, ("threading.py", "selectors.py", "queue.py")),
]


def _cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    return _cpu_of(Path(f"/proc/{pid}/stat"))


def _threads_cpu(pid: int) -> dict:
    """CPU seconds so far of each thread of process ``pid``, by thread name (the main thread
    as ``main``; Cyclone DDS names its own: ``recv``, ``tev``, ``dq.builtins``, ...)."""
    out: collections.Counter = collections.Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = "main" if task.name == str(pid) else (task / "comm").read_text().strip()
            out[name] += _cpu_of(task / "stat")
        except (FileNotFoundError, ProcessLookupError):
            continue                  # the thread ended meanwhile
    return out


def _cpu_of(stat: Path) -> float:
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ros_env(setup: str) -> dict:
    """The environment after ``source setup`` in bash."""
    out = subprocess.run(["bash", "-c", f"source {setup} >/dev/null 2>&1 && env -0"],
                         check=True, capture_output=True).stdout
    return dict(kv.split("=", 1) for kv in out.decode().split("\0") if "=" in kv)


def node_env(domain: int, args) -> dict:
    env = dds_env(domain)
    if args.rclpy:
        env.update(ros_env(args.rclpy))
        env.update(VM_DYNAMICS_TRANSPORT="rclpy", RMW_IMPLEMENTATION="rmw_cyclonedds_cpp",
                   ROS_DOMAIN_ID=str(domain), CYCLONEDDS_URI=dds_env(domain)["CYCLONEDDS_URI"],
                   PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH"))
                                              if p))
        if args.numba_cache:
            env["NUMBA_CACHE_DIR"] = args.numba_cache
    return env


@contextlib.contextmanager
def lockstep_nodes(env: dict, work: Path, *, tree: Path = REPO, py: str = PY,
                   sampled: str = "", composed: bool = False):
    """The lockstep of ``tree`` running: its dynamics_node and controller_node started under
    ``py`` in ``env`` (``bench/<sampled>.py`` around each with ``sampled``, writing
    ``<node>.json`` in ``work``; their output in ``<node>.log`` there) -- with ``composed``
    both in one process, ``composed_nodes`` (:mod:`vm_dynamics.nodes.composed`) --, yielded as
    ``(processes by node name, the /joint_states probe)`` once the first state arrived and 2 s
    more went by (start-up and settling left out); stopped with SIGINT (the nodes' clean
    exit) at the end.  Shared by this script and ``bench/lockstep_ab.py``."""
    params = ["--ros-args", "--params-file", str(tree / "config" / "spacecraft_arm.yaml"),
              *PARAMS]
    work.mkdir(exist_ok=True)
    probe = JointStateProbe(env)
    procs = {}
    try:
        for name in COMPOSED if composed else ("dynamics_node", "controller_node"):
            mod = "vm_dynamics.nodes.composed" if composed else f"vm_dynamics.nodes.{name}"
            cmd = [py, str(HERE / f"{sampled}.py"), str(work / f"{name}.json"), mod, *params] \
                if sampled else [py, "-m", mod, *params]
            procs[name] = subprocess.Popen(cmd, env=env, cwd=tree,
                                           stdout=open(work / f"{name}.log", "w"),
                                           stderr=subprocess.STDOUT)
        if not probe.wait_first(180.0):
            raise RuntimeError("no /joint_states: " + (
                work / f"{next(iter(procs))}.log").read_text()[-2000:])
        probe.collect(2.0)
        yield procs, probe
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGINT)
        for p in procs.values():
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        probe.close()


def per_period(samples, cpu0: dict, cpu1: dict) -> dict:
    """Real-time factor and wall time per period of the probe's ``samples`` (wall, stamp), and
    each node's CPU µs per period between the readings ``cpu0`` and ``cpu1``."""
    wall, stamp = samples[:, 0], samples[:, 1]
    periods = (stamp[-1] - stamp[0]) / 1e-3
    return {"rtf": (stamp[-1] - stamp[0]) / (wall[-1] - wall[0]),
            "wall_per_period_us": 1e6 * (wall[-1] - wall[0]) / periods,
            "cpu_per_period_us": {k: 1e6 * (cpu1[k] - cpu0[k]) / periods for k in cpu1},
            "periods": periods}


def run(seconds: float, domain: int, work: Path, sampled: str = "", args=None) -> dict:
    """One run of the lockstep; ``sampled``: ``"sampled"`` or ``"timed"`` runs each node
    under ``bench/<sampled>.py``, writing ``<node>.json`` in ``work``."""
    env = node_env(domain, args) if args is not None else dds_env(domain)
    py = (args.python if args is not None and args.python else PY)
    composed = bool(args is not None and args.composed)
    with lockstep_nodes(env, work, py=py, sampled=sampled, composed=composed) as (procs,
                                                                                   probe):
        if sampled:
            for p in procs.values():
                p.send_signal(signal.SIGUSR1)
        perf = {} if sampled or args is None or not args.perf else {
            k: subprocess.Popen(["perf", "record", "-q", "-F", "1999", "-o",
                                 str(work / f"{k}.perf"), "-p", str(p.pid), "--", "sleep",
                                 str(seconds)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
            for k, p in procs.items()}
        cpu0 = {k: _cpu(p.pid) for k, p in procs.items()}
        thr0 = {k: _threads_cpu(p.pid) for k, p in procs.items()}
        s = probe.collect(seconds)
        for rec in perf.values():
            rec.wait(60)
        cpu1 = {k: _cpu(p.pid) for k, p in procs.items()}
        thr1 = {k: _threads_cpu(p.pid) for k, p in procs.items()}
        if sampled == "timed":                    # the timed window ends with this one
            for p in procs.values():
                p.send_signal(signal.SIGUSR2)
            time.sleep(0.2)
    out = per_period(s, cpu0, cpu1)
    periods = out["periods"]
    out["threads_per_period_us"] = {
        k: {t: 1e6 * (thr1[k][t] - thr0[k].get(t, 0.0)) / periods
            for t in thr1[k] if thr1[k][t] > thr0[k].get(t, 0.0)} for k in procs}
    return out


#: (label, substrings of a shared object's name), first match wins
DSOS = [("Python interpreter", ("libpython", "python3")), ("numpy", ("_multiarray", "numpy")),
        ("numba-compiled code (the kernels)", ("[JIT]",)),
        ("numba dispatch", ("_dispatcher", "_helperlib")),
        ("Cyclone DDS", ("libddsc", "_clayer", "cyclonedds")),
        ("kernel (system calls, wake-ups)", ("[kernel",)), ("libc", ("libc.so", "libm.so"))]


def perf_shares(path: Path) -> dict:
    """Share of a ``perf record`` file's samples per :data:`DSOS` label (the rest 'other')."""
    out = subprocess.run(["perf", "report", "-i", str(path), "--stdio", "--no-children",
                          "-g", "none", "--sort", "dso"], capture_output=True, text=True).stdout
    shares: collections.Counter = collections.Counter()
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) != 2 or not parts[0].endswith("%") or line.lstrip().startswith("#"):
            continue
        label = next((name for name, keys in DSOS if any(k in parts[1] for k in keys)),
                     "other")
        shares[label] += float(parts[0].rstrip("%")) / 100
    return shares


def categorize(path: Path) -> dict:
    """Samples per category of a ``bench/sampled.py`` output, and the innermost lines most
    often sampled."""
    data = json.loads(path.read_text())
    cats: collections.Counter = collections.Counter()
    lines: collections.Counter = collections.Counter()
    writers: collections.Counter = collections.Counter()
    for count, stack in data["samples"]:
        if not stack:
            continue
        # the line that waits or calls into a library: the innermost frame of our package
        # (or the innermost frame if none)
        file, func, line = next((fr for fr in stack if "vm_dynamics/" in fr[0]), stack[0])
        text = linecache.getline(file, line or 0).strip()
        lines[f"{file.rsplit('/', 2)[-1]}:{line} {func}: {text[:70]}"] += count
        inner = linecache.getline(stack[0][0], stack[0][2] or 0)
        if "ddspy_write" in text:          # which publication of the node writes
            caller = next((fr for fr in stack if "vm_dynamics/nodes/" in fr[0]), None)
            if caller is not None:
                writers[f"{caller[0].rsplit('/', 1)[-1]}:{caller[2]} {caller[1]}: "
                        f"{linecache.getline(caller[0], caller[2] or 0).strip()[:60]}"] += count
        if any(w in t for t in (text, inner) for w in ("sleep(", "wait(", "select(", ".poll(")) \
                or stack[0][1] in ("wait", "select", "poll", "_wait_for_tstate_lock"):
            cats[WAIT] += count
            continue
        for file, func, line in stack:
            hit = next((name for name, keys in CATEGORIES if any(k in file for k in keys)),
                       None)
            if hit:
                cats[hit] += count
                break
        else:
            cats["other"] += count
    return {"categories": cats, "total": sum(cats.values()), "top": lines.most_common(12),
            "writers": writers.most_common(6), "seconds": data["seconds"]}


def print_timings(timings: dict, periods: float) -> None:
    """The ``--timed`` run's table per node: calls per period, mean self CPU µs per call,
    and self CPU µs per period of each timed part; the main thread's CPU per period and
    what of it no timed part took."""
    dyn = timings.get("dynamics_node", {}).get("functions", {})
    ticks = dyn.get("vm_dynamics.nodes.dynamics_core:DynamicsCore.advance_lockstep",
                    {}).get("calls") or periods
    for node, data in timings.items():
        funcs = data["functions"]
        main = 1e6 * data["main_thread_cpu_s"] / ticks
        timed = 1e6 * sum(f["sum_self_s"] for f in funcs.values()) / ticks
        print(f"\n#### {node}: CPU time of the main thread per lockstep period ({ticks:.0f} "
              f"periods): {main:.0f} µs, of which the timed parts {timed:.0f} µs (clock read "
              f"{data['clock_read_us']:.1f} µs, subtracted)\n")
        print("| part | calls per period | self CPU µs per call | self CPU µs per period |")
        print("|---|---:|---:|---:|")
        for key, f in sorted(funcs.items(), key=lambda kv: -kv[1]["sum_self_s"]):
            print(f"| `{key.split(':', 1)[-1]}` | {f['calls'] / ticks:.2f} | "
                  f"{1e6 * f['sum_self_s'] / f['calls']:.1f} | "
                  f"{1e6 * f['sum_self_s'] / ticks:.0f} |")
        print(f"| (not timed) | | | {main - timed:.0f} |")
        ex = data.get("executor") or {}
        if ex.get("waits"):
            print(f"\nrclpy executor per period: {ex['waits'] / ticks:.2f} waits, "
                  f"{ex['taken'] / ticks:.2f} samples taken, of which "
                  f"{ex['swept'] / ticks:.2f} by a sweep after a wait's callbacks")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--domain", type=int, default=int(os.environ.get("ROS_DOMAIN_ID", "63")))
    ap.add_argument("--no-sampled", action="store_true",
                    help="only the plain run (real-time factor and CPU per period)")
    ap.add_argument("--rclpy", metavar="SETUP", default="",
                    help="run the nodes on rclpy in the environment of this setup script")
    ap.add_argument("--python", default="", help="interpreter of the nodes (with --rclpy)")
    ap.add_argument("--timed", action="store_true",
                    help="also a run with bench/timed.py: µs per period of each timed part")
    ap.add_argument("--perf", action="store_true",
                    help="also perf record the nodes in the plain run: CPU per period by "
                         "shared object (interpreter, numpy, compiled kernels, DDS, kernel)")
    ap.add_argument("--numba-cache", default="", help="NUMBA_CACHE_DIR of the nodes (--rclpy)")
    ap.add_argument("--composed", action="store_true",
                    help="the two nodes composed in one process (composed_nodes)")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()
    names = COMPOSED if args.composed else ("dynamics_node", "controller_node")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plain = run(args.seconds, args.domain, work, args=args)
        timed = None
        if args.timed:
            timed = run(args.seconds, args.domain, work / "timed", sampled="timed", args=args)
        samp = None if args.no_sampled else run(args.seconds, args.domain, work,
                                                sampled="sampled", args=args)
        time.sleep(0.5)
        timings = {k: json.loads((work / "timed" / f"{k}.json").read_text())
                   for k in names
                   if timed and (work / "timed" / f"{k}.json").exists()}
        perf = {k: perf_shares(work / f"{k}.perf") for k in names
                if args.perf and (work / f"{k}.perf").exists()}
        cats = {} if samp is None else {k: categorize(work / f"{k}.json")
                                        for k in names
                                        if (work / f"{k}.json").exists()}
    print(f"transport {'rclpy (' + args.rclpy + ')' if args.rclpy else 'DDS (ours)'}; load "
          f"average before {' '.join(f'{x:.2f}' for x in load0)}, after "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| run | real-time factor | wall per period µs | "
          + " | ".join(f"{k} CPU per period µs" for k in names) + " |")
    print("|---|---:|---:|" + "---:|" * len(names))
    for label, r in (("plain", plain), ("timed", timed), ("sampled", samp)):
        if r is None or not r["periods"]:
            continue
        c = r["cpu_per_period_us"]
        print(f"| {label} | {r['rtf']:.2f} | {r['wall_per_period_us']:.0f} | "
              + " | ".join(f"{c[k]:.0f}" for k in names) + " |")
    print("\nCPU µs per period by thread (plain run): " + "; ".join(
        f"{node}: " + ", ".join(f"{t} {v:.0f}" for t, v in sorted(
            th.items(), key=lambda kv: -kv[1]))
        for node, th in plain["threads_per_period_us"].items()))
    for node, shares in perf.items():
        cpu = plain["cpu_per_period_us"][node]
        print(f"\n#### {node}: its CPU time per period by shared object (perf, {cpu:.0f} µs)\n")
        print("| what | share | µs per period |")
        print("|---|---:|---:|")
        for name, v in shares.most_common():
            print(f"| {name} | {100 * v:.1f} % | {v * cpu:.0f} |")
    if timings:
        print_timings(timings, timed["periods"])
    for node, res in cats.items():
        tot = max(res["total"], 1)
        print(f"\n#### {node}: where its main thread is, {res['total']} samples over "
              f"{res['seconds']:.1f} s of the steady state\n")
        print("| what | share of samples |")
        print("|---|---:|")
        for name, v in res["categories"].most_common():
            print(f"| {name} | {100 * v / tot:.1f} % |")
        print("\nmost sampled lines: " + "; ".join(
            f"`{w}` {100 * c / tot:.1f} %" for w, c in res["top"]))
        print("\nDDS writes by the node's line that publishes: " + "; ".join(
            f"`{w}` {100 * c / tot:.1f} %" for w, c in res["writers"]))
    print(f"\nperiods measured: plain {plain['periods']:.0f}"
          + (f", sampled {samp['periods']:.0f}" if samp else ""))


if __name__ == "__main__":
    main()
