"""The tumbling scenario's Euler-angle comparison (``compare_with_lp``, what ``vm-sim tumbling``
runs after the integration) timed against the LP run it compares with (wall clock; the load
average is printed with them, as the figures move with it).

    python bench/euler_comparison.py          # first call in the process, then best of 5

The first call includes loading the Euler kernels from numba's cache (a ``vm-sim`` process
makes only that one call); the repeated calls are the comparison's own arithmetic.
"""
from __future__ import annotations

import os
import time

import numpy as np

from vm_dynamics.analysis.euler_model import compare_with_lp
from vm_dynamics.config.scenario import load_scenario
from vm_dynamics.sim.simulate import simulate


def main(repeats: int = 5) -> None:
    s = load_scenario("tumbling")
    m, i = s.model, s.initial
    duration, dt = float(s.params["duration"]), float(s.params["dt"])
    simulate(m, i.g, i.V, i.q, i.qd, 10 * dt, dt, tau=np.zeros(m.n), method="rkmk4")
    t0 = time.perf_counter()
    traj = simulate(m, i.g, i.V, i.q, i.qd, duration, dt, tau=np.zeros(m.n), method="rkmk4")
    t_lp = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = compare_with_lp(m, traj)
    t_first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        compare_with_lp(m, traj)
        times.append(time.perf_counter() - t0)
    print(f"load {os.getloadavg()[0]:.1f}; LP run of {duration:g} s: {t_lp:.3f} s; "
          f"compare_with_lp first call {t_first:.3f} s, best of {repeats} {min(times):.3f} s; "
          f"Euler run: {out['euler_steps']} steps, {out['euler_status'][:40]}")


if __name__ == "__main__":
    main()
