#!/usr/bin/env python
"""What taking a step's first stage from the workspace saves (sim/resume.py), in one process.

    .venv/bin/python bench/resume_ab.py [--robot ur5|b1_z1] [--repeats 9]

Two simulators of the same floating robot (gravity, dt 1 ms, the state of bench/tree_ab.py)
step 2000 times with held inputs, interleaved: ``resumed`` as ``Simulator.step`` runs, and
``computed``, whose buffer's record of the first stage is cleared before every step (so every
step computes it, as before the cut; the clearing is one numpy item write, timed alone and
subtracted).  Both give the same states bit for bit (checked).  CPU time per step, median of the
repeats, with MuJoCo's RK4 ``mj_step`` on the same model in the same repeats.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import robots  # noqa: E402

import vm_dynamics as vm  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", default="ur5")
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args(argv)
    import mujoco
    dt, N = 1e-3, 2000
    m = vm.load_model(robots.robot_xml(args.robot), base="SE3", gravity=(0.0, 0.0, -9.81))
    rng = np.random.default_rng(7)
    g = vm.lie.se3_exp(np.r_[rng.normal(size=3), rng.uniform(-2, 2, 3)])
    V, q, qd = rng.normal(size=6), 0.5 * rng.normal(size=m.n), rng.normal(size=m.n)
    a, b = vm.Simulator(m, dt), vm.Simulator(m, dt)
    held = a.held_inputs(np.zeros(m.n))
    last = b.stages.sc.last
    mm = mujoco.MjModel.from_xml_string(robots.mjcf_from_urdf(robots.robot_xml(args.robot),
                                                               m.gravity, dt))
    md = mujoco.MjData(mm)
    x0 = robots.StateMap(mm, m.joint_names).to_mj(g, V, q, qd)

    def resumed():
        a.reset(g, V, q, qd)
        for _ in range(N):
            a.step(inputs=held)

    def computed():
        b.reset(g, V, q, qd)
        for _ in range(N):
            last[-1] = 0.0
            b.step(inputs=held)

    def clearing():
        for _ in range(N):
            last[-1] = 0.0

    def mj():
        md.qpos[:], md.qvel[:] = x0
        for _ in range(N):
            mujoco.mj_step(mm, md)
    fns = {"Simulator.step, first stage resumed": resumed,
           "Simulator.step, first stage computed (clearing subtracted)": computed,
           "clearing alone": clearing, "mujoco.mj_step (RK4)": mj}
    for f in fns.values():
        f()
    for x, y in zip(a.arrays(), b.arrays()):
        assert np.array_equal(x, y)
    times = {k: [] for k in fns}
    for _ in range(args.repeats):
        for k, f in fns.items():
            t0 = time.process_time()
            f()
            times[k].append((time.process_time() - t0) / N)
    med = {k: statistics.median(v) for k, v in times.items()}
    comp = [c - s for c, s in zip(times["Simulator.step, first stage computed (clearing "
                                         "subtracted)"], times["clearing alone"])]
    med["Simulator.step, first stage computed (clearing subtracted)"] = statistics.median(comp)
    ratios = [r / c for r, c in zip(times["Simulator.step, first stage resumed"], comp)]
    print(f"{args.robot}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"CPU µs per step, median of {args.repeats} interleaved repeats\n")
    print("| what | µs | / mj_step |\n|---|---:|---:|")
    for k, v in med.items():
        print(f"| {k} | {v * 1e6:.2f} | {v / med['mujoco.mj_step (RK4)']:.2f} |")
    print(f"\nresumed / computed per repeat: median {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}–{max(ratios):.3f})")


if __name__ == "__main__":
    main()
