#!/usr/bin/env python
"""Two checkouts of vm_dynamics side by side: the same workloads, each round in fresh processes.

    .venv/bin/python bench/tree_ab.py A_TREE B_TREE [--rounds 9] [--repeats 5] [--best]
        [--cache-a DIR] [--cache-b DIR] [--only ct,open,step,run] [--robot ur5|b1_z1]

e.g. ``bench/tree_ab.py /work/wt/before-028 . --cache-a /work/wt/.numba-before-028
--cache-b /work/wt/.numba-s-stage``.  Every round starts one process per tree (``PYTHONPATH``
the tree, ``NUMBA_CACHE_DIR`` its cache; the order alternates between rounds, so a change of the
machine's load hits both alike), which loads the kernels, runs every workload once (warm-up),
then times it ``--repeats`` times and reports the median per step of the process's CPU time
(``time.process_time``: time spent waiting for a processor is not counted); with ``--best``
the workloads take turns within each repeat and the process reports each one's least time (on
a busy machine a median of five moves with the load; e.g. ``--repeats 15 --best``).  The table gives,
per workload, the median over the rounds of each tree's figure and of the per-round ratio B/A,
with their min–max; with ``mj`` among the workloads, a second table gives each workload's
ratio to ``mj_step`` in the same process (the load changes both alike), median over the rounds.

Workloads on the floating UR5 (``--robot b1_z1``: the B1-Z1 tree) of example-robot-data with
gravity, dt 1 ms, the state of
``bench/breakdown.py``'s fixture: ``ct`` ``vm.simulate`` 1 s with ``computed_torque``'s inputs
(the compiled law at every RK stage); ``open`` ``vm.simulate`` 2 s open loop; ``step``
``Simulator.step(inputs=held)`` 2000 times; ``run`` ``Simulator.run(2000, inputs=held)`` (the
compiled rollout: the step kernel with no Python between steps); ``mixed`` 200 times
``run(9)`` then ``step()`` (a node's pattern: a rollout up to the next message, then single
steps); ``mj`` MuJoCo's ``mj_step``
(RK4) 2000 times on the MJCF of the same robot (the peer, for the ratio to it in each tree).
Only the public API used by both trees.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from trees import child_result, tree_arguments

HERE = os.path.dirname(os.path.abspath(__file__))


def _child(only, repeats, robot="ur5", best=False):
    """Time the workloads with the vm_dynamics on ``sys.path``; print one JSON line."""
    import numpy as np
    sys.path.insert(0, HERE)
    import robots

    import vm_dynamics as vm
    fx = robots.floating_computed_torque(robot)
    m, dt, g, V, q, qd = fx.model, fx.dt, fx.g, fx.V, fx.q, fx.qd
    tau_fn, bw_fn = fx.tau_fn, fx.bw_fn
    sim = vm.Simulator(m, dt)
    sim.reset(g, V, q, qd)
    held = sim.held_inputs(np.zeros(m.n))

    def steps():
        sim.reset(g, V, q, qd)
        for _ in range(2000):
            sim.step(inputs=held)

    def rollout():
        sim.reset(g, V, q, qd)
        sim.run(2000, inputs=held)

    def mixed():                # a node's pattern: a rollout up to the next message, one step
        sim.reset(g, V, q, qd)
        for _ in range(200):
            sim.run(9, inputs=held)
            sim.step(inputs=held)

    def mj_steps():             # the peer: MuJoCo RK4 on the same model (same in both trees)
        import mujoco
        if not hasattr(mj_steps, "md"):
            mj_steps.mm = mujoco.MjModel.from_xml_string(robots.mjcf_from_urdf(
                robots.robot_xml(robot), m.gravity, dt))
            mj_steps.md = mujoco.MjData(mj_steps.mm)
            sm = robots.StateMap(mj_steps.mm, m.joint_names)
            mj_steps.x0 = sm.to_mj(g, V, q, qd)
        mj_steps.md.qpos[:], mj_steps.md.qvel[:] = mj_steps.x0
        for _ in range(2000):
            mujoco.mj_step(mj_steps.mm, mj_steps.md)

    work = {"ct": (lambda: vm.simulate(m, g, V, q, qd, 1.0, dt, tau=tau_fn, base_wrench=bw_fn),
                   1000),
            "open": (lambda: vm.simulate(m, g, V, q, qd, 2.0, dt), 2000),
            "step": (steps, 2000), "run": (rollout, 2000), "mixed": (mixed, 2000),
            "mj": (mj_steps, 2000)}
    out = {}
    if best:                    # the workloads take turns; each one's least time per step
        runs = {name: [] for name in only}
        for name in only:
            work[name][0]()
        for _ in range(repeats):
            for name in only:
                f, per = work[name]
                t0 = time.process_time()
                f()
                runs[name].append((time.process_time() - t0) / per)
        out = {name: min(runs[name]) for name in only}
    for name in ([] if best else only):
        f, per = work[name]
        f()
        runs = []
        for _ in range(repeats):
            t0 = time.process_time()
            f()
            runs.append((time.process_time() - t0) / per)
        out[name] = statistics.median(runs)
    out["file"] = vm.__file__
    print(json.dumps(out))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    tree_arguments(ap)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--best", action="store_true",
                    help="workloads in turn, each process's least time (not the median)")
    ap.add_argument("--only", default="ct,open,step,run")       # and mj
    ap.add_argument("--robot", default="ur5", help="ur5 (default) or b1_z1")
    args = ap.parse_args(argv)
    only = args.only.split(",")
    if args.child:
        _child(only, args.repeats, args.robot, args.best)
        return
    rows = {"a": [], "b": []}
    for k in range(args.rounds):
        order = ("a", "b") if k % 2 == 0 else ("b", "a")
        for side in order:
            tree, cache = (args.a, args.cache_a) if side == "a" else (args.b, args.cache_b)
            rows[side].append(child_result(__file__, tree, cache,
                                           ["--only", ",".join(only), "--repeats",
                                            str(args.repeats), "--robot", args.robot]
                                           + (["--best"] if args.best else [])))
        print(f"round {k + 1}: " + ", ".join(
            f"{w} {rows['b'][-1][w] / rows['a'][-1][w]:.3f}" for w in only), flush=True)
    print(f"\nA = {args.a}, B = {args.b}, {args.robot}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; CPU time per step, median over "
          f"{args.rounds} alternating rounds of fresh processes (min–max)\n")
    print("| workload | A µs | B µs | B/A per round |")
    print("|---|---:|---:|---:|")

    def fmt(v, scale, digits):
        return (f"{statistics.median(v) * scale:.{digits}f} "
                f"({min(v) * scale:.{digits}f}–{max(v) * scale:.{digits}f})")
    for w in only:
        a = [r[w] for r in rows["a"]]
        b = [r[w] for r in rows["b"]]
        ratio = [y / x for x, y in zip(a, b)]
        print(f"| {w} | {fmt(a, 1e6, 2)} | {fmt(b, 1e6, 2)} | {fmt(ratio, 1, 3)} |")
    if "mj" in only and len(only) > 1:
        print("\n| workload / mj_step | A | B |\n|---|---:|---:|")
        for w in only:
            if w != "mj":
                a = [r[w] / r["mj"] for r in rows["a"]]
                b = [r[w] / r["mj"] for r in rows["b"]]
                print(f"| {w} | {fmt(a, 1, 3)} | {fmt(b, 1, 3)} |")


if __name__ == "__main__":
    main()
