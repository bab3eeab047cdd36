#!/usr/bin/env python
"""The lockstep of ``bench/nodes.py`` (dynamics_node + controller_node, ``spacecraft_arm``,
1 kHz, ``dt`` 1 ms, ``real_time_factor`` 0, over DDS) for two checkouts side by side.

    .venv/bin/python bench/lockstep_ab.py A B [--cache-a DIR] [--cache-b DIR] \
        [--rounds 4] [--seconds 6] [--domain 81] [--composed-a] [--composed-b]
    .venv/bin/python bench/lockstep_ab.py . . --composed-b     # two processes vs composed

Each round runs the nodes of A, then those of B (the order alternates from round to round),
each tree's ``vm_dynamics`` first on ``PYTHONPATH`` and, with ``--cache-a``/``--cache-b``, its
own ``NUMBA_CACHE_DIR``; the nodes are started from that tree (its ``config/``).  Measured
from outside as in ``bench/nodes.py`` (an independent /joint_states reader; real-time
factor = Δstamp / Δwall of its samples) and, as in ``bench/lockstep_profile.py``, each
node's CPU time per lockstep period (``/proc/<pid>/stat``).  With ``--composed-a`` /
``--composed-b`` that tree's nodes run composed in one process (``composed_nodes``); its CPU
time is that of both nodes (the dyn/ctl columns then show the process's total as "sum").  Printed: each round, then the
median and the best of each tree, and the load average.  A busy machine moves both trees
alike only when they alternate: compare within one run, never with figures of another.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dds_probe import dds_env  # noqa: E402
from lockstep_profile import _cpu, lockstep_nodes, per_period  # noqa: E402


def one(tree: Path, cache: str, seconds: float, domain: int, log: Path,
        composed: bool = False) -> dict:
    """One lockstep run of the nodes of ``tree`` (``composed``: in one process): real-time
    factor and CPU µs per period (``dyn``/``ctl`` of each node's process, NaN when composed;
    ``sum`` of the processes)."""
    env = dds_env(domain, tree)
    if cache:
        env["NUMBA_CACHE_DIR"] = cache
    with lockstep_nodes(env, log, tree=tree, composed=composed) as (procs, probe):
        cpu0 = {k: _cpu(p.pid) for k, p in procs.items()}
        s = probe.collect(seconds)
        cpu1 = {k: _cpu(p.pid) for k, p in procs.items()}
    r = per_period(s, cpu0, cpu1)
    c = r["cpu_per_period_us"]
    return {"rtf": r["rtf"], "dyn": c.get("dynamics_node", math.nan),
            "ctl": c.get("controller_node", math.nan), "sum": sum(c.values())}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--cache-a", default="")
    ap.add_argument("--cache-b", default="")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--domain", type=int, default=int(os.environ.get("ROS_DOMAIN_ID", "81")))
    ap.add_argument("--composed-a", action="store_true", help="A's nodes in one process")
    ap.add_argument("--composed-b", action="store_true", help="B's nodes in one process")
    args = ap.parse_args(argv)
    trees = {"A": (args.a.resolve(), args.cache_a, args.composed_a),
             "B": (args.b.resolve(), args.cache_b, args.composed_b)}
    out: dict = {"A": [], "B": []}
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"lockstep_ab.{os.getpid()}"
    log.mkdir(exist_ok=True)
    load0 = os.getloadavg()
    print("| round | tree | real-time factor | dynamics_node CPU µs/period | "
          "controller_node CPU µs/period | sum CPU µs/period | load (1 min) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for k in range(args.rounds):
        for name in (("A", "B") if k % 2 == 0 else ("B", "A")):
            tree, cache, composed = trees[name]
            r = one(tree, cache, args.seconds, args.domain, log, composed)
            out[name].append(r)
            print(f"| {k} | {name} | {r['rtf']:.2f} | {r['dyn']:.0f} | {r['ctl']:.0f} | "
                  f"{r['sum']:.0f} | {os.getloadavg()[0]:.2f} |", flush=True)
            time.sleep(0.5)
    mode = {True: " (composed)", False: ""}
    print(f"\nA = {args.a}{mode[args.composed_a]}, B = {args.b}{mode[args.composed_b]}; "
          f"load average before "
          f"{' '.join(f'{x:.2f}' for x in load0)}, after "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| tree | rtf median | rtf best | dyn CPU median | ctl CPU median | "
          "sum CPU median | sum CPU least |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, rs in out.items():
        tot = [r["sum"] for r in rs]
        print(f"| {name} | {statistics.median(r['rtf'] for r in rs):.2f} | "
              f"{max(r['rtf'] for r in rs):.2f} | {statistics.median(r['dyn'] for r in rs):.0f} "
              f"| {statistics.median(r['ctl'] for r in rs):.0f} | {statistics.median(tot):.0f} "
              f"| {min(tot):.0f} |")


if __name__ == "__main__":
    main()
