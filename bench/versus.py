"""This tree's public API against another checkout's, side by side in one run.

``python bench/versus.py --other /path/to/other/checkout`` runs the same timing child once per
tree and round, alternating (this, other, this, other, …) so that drifts of a shared machine's
speed hit both, and prints per-call times (median over rounds of each round's median) and the
ratio this/other (median of the per-round ratios).  Times are the process's CPU time
(``time.process_time``): on a shared machine the time spent waiting for a processor is not
counted, so the figures and ratios hold under load (single-threaded code: CPU time = run time
on an idle machine).  Each tree imports its own code
(``PYTHONPATH``) and keeps its own numba cache (``--cache``/``--other-cache``), so compiled
kernels of one never serve the other.  What is timed is what users call, with its validation:

* ``Simulator.step(tau=...)`` — one held-input RKMK4 step (README example);
* ``Simulator.run(1000, tau=...)`` per step;
* ``vm.simulate`` open loop with gravity, per step (wall time of the whole call / steps);
* ``vm.simulate`` with ``computed_torque``'s ``inputs()`` (the law at every RK stage), per step;
* ``vm.simulate`` with a Python callable effort (evaluated at every stage), per step;
* ``model.forward_dynamics`` and ``model.inverse_dynamics``, per call.

Model: the floating UR5 of example-robot-data with gravity (``bench/robots.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = ("Simulator.step", "Simulator.run /step", "simulate open loop /step",
         "simulate computed_torque /step", "simulate Python tau(t, s) /step",
         "model.forward_dynamics", "model.inverse_dynamics")


def per_call(fn, number, repeats):
    """Median over ``repeats`` of the mean time of ``number`` calls of ``fn`` (s)."""
    out = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(number):
            fn()
        out.append((time.process_time() - t0) / number)
    return statistics.median(out)


def child(repeats):
    """Time every case in this process (this PYTHONPATH's vm_dynamics); print JSON (µs)."""
    import numpy as np

    sys.path.insert(0, HERE)
    import robots

    import vm_dynamics as vm
    fx = robots.floating_computed_torque()
    m, dt, g, V, q, qd, tau = fx.model, fx.dt, fx.g, fx.V, fx.q, fx.qd, fx.tau
    tau_fn, bw_fn = fx.tau_fn, fx.bw_fn
    zeros = np.zeros(m.n)

    def py_tau(t, s):
        return zeros

    sim = vm.Simulator(m, dt).reset(g, V, q, qd)
    Vdot, qdd = m.forward_dynamics(g, V, q, qd, tau)

    def sim_per_step(steps, **kw):
        def f():
            t0 = time.process_time()
            vm.simulate(m, g, V, q, qd, steps * dt, dt, **kw)
            return (time.process_time() - t0) / steps
        f()                                                           # warm-up (compile/load)
        return statistics.median(f() for _ in range(repeats))

    def run_1000():
        sim.reset(g, V, q, qd)
        sim.run(1000, tau=tau)

    res = {}
    sim.step(tau=tau)
    res["Simulator.step"] = per_call(lambda: sim.step(tau=tau), 2000, repeats)
    run_1000()
    res["Simulator.run /step"] = per_call(run_1000, 3, repeats) / 1000
    res["simulate open loop /step"] = sim_per_step(5000)
    res["simulate computed_torque /step"] = sim_per_step(1000, tau=tau_fn, base_wrench=bw_fn)
    res["simulate Python tau(t, s) /step"] = sim_per_step(500, tau=py_tau)
    res["model.forward_dynamics"] = per_call(lambda: m.forward_dynamics(g, V, q, qd, tau),
                                             5000, repeats)
    res["model.inverse_dynamics"] = per_call(
        lambda: m.inverse_dynamics(g, V, q, qd, Vdot, qdd), 5000, repeats)
    print(json.dumps({k: v * 1e6 for k, v in res.items()}))


def run_child(tree, cache, repeats):
    env = dict(os.environ, PYTHONPATH=tree, NUMBA_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child",
                          "--repeats", str(repeats)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--other", help="the other checkout (its root, put on PYTHONPATH)")
    ap.add_argument("--this", default=os.path.dirname(HERE),
                    help="this checkout (default: the one holding this script)")
    ap.add_argument("--cache", default=os.environ.get("NUMBA_CACHE_DIR", ""),
                    help="NUMBA_CACHE_DIR for this tree")
    ap.add_argument("--other-cache", help="NUMBA_CACHE_DIR for the other tree")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5, help="repeats inside one child")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.repeats)
        return
    if not args.other or not args.other_cache:
        ap.error("--other and --other-cache are required")
    this = args.this
    mine, theirs = [], []
    for i in range(args.rounds):
        first, second = (this, args.other) if i % 2 == 0 else (args.other, this)
        for tree in (first, second):
            cache = args.cache if tree == this else args.other_cache
            (mine if tree == this else theirs).append(run_child(tree, cache, args.repeats))
        print(f"round {i + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"| case (floating UR5, gravity, dt 1 ms) | other: {args.other} µs | this: {this} µs "
          f"| this/other (median of {args.rounds} rounds) |")
    print("|---|---:|---:|---:|")
    for case in CASES:
        a = statistics.median(r[case] for r in mine)
        b = statistics.median(r[case] for r in theirs)
        ratio = statistics.median(x[case] / y[case] for x, y in zip(mine, theirs))
        print(f"| {case} | {b:.2f} | {a:.2f} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
