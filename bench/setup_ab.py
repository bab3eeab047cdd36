#!/usr/bin/env python
"""The engine's set-up and block size, before and after, side by side in one process.

    .venv/bin/python bench/setup_ab.py [--repeats 9]

Two settings of this tree's code, alternated in interleaved repeats (CPU time of this process,
median and min–max), on the floating UR5 with gravity, dt 1 ms:

* **before** — every engine set-up reads numba's on-disk cache index of its kernels again (the
  memory of :func:`vm_dynamics.dynamics.fast.kernels_cached` cleared before each call) and
  ``vm.simulate`` runs held inputs and compiled laws in blocks of 100 steps;
* **after** — the index read once per process, blocks of ``vm_dynamics.sim.simulate._CHUNK``.

Rows: a ``Simulator``'s set-up and reset; ``vm.simulate`` open loop (2 000 steps) and with
computed torque at every stage (1 000 steps), the whole call per step.  Only the engine's
set-up and the block size differ between the two; the kernels are the same.
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from breakdown import Fixture, interleaved  # noqa: E402

import vm_dynamics as vm  # noqa: E402
from vm_dynamics.dynamics.fast import backend  # noqa: E402
from vm_dynamics.sim import simulate as simulate_module  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args(argv)
    from vm_dynamics.control import get_controller
    from vm_dynamics.control.references import reference_from_config
    fx = Fixture()
    m, g, V, q, qd, dt = fx.model, fx.g, fx.V, fx.q, fx.qd, fx.dt
    ctrl = get_controller("computed_torque", {"mode": "free_floating", "kp": 25, "kd": 10})
    ctrl.reset(m, vm.State(0.0, g, V, q, qd))
    ref = reference_from_config({"joint": {"type": "waypoints", "times": [0.0, 5.0],
                                           "positions": [list(q), list(q + 0.5)]}})
    tau_fn, bw_fn = ctrl.inputs(ref)
    after_chunk = simulate_module.BLOCK_STEPS

    def setting(before, fn):
        def run():
            simulate_module.BLOCK_STEPS = 100 if before else after_chunk
            if before:
                backend.forget_found_caches()
            fn()
        return run

    cases = {
        "Simulator(model, dt).reset(...)": (lambda: vm.Simulator(m, dt).reset(g, V, q, qd), 1),
        "vm.simulate open loop, 2000 steps, per step":
            (lambda: vm.simulate(m, g, V, q, qd, 2.0, dt), 2000),
        "vm.simulate + computed torque per stage, 1000 steps, per step":
            (lambda: vm.simulate(m, g, V, q, qd, 1.0, dt, tau=tau_fn, base_wrench=bw_fn), 1000),
    }
    fns = {}
    for name, (fn, per) in cases.items():
        fns[f"{name} | before"] = (setting(True, fn), per)
        fns[f"{name} | after"] = (setting(False, fn), per)
    t = interleaved(fns, args.repeats, budget=0.2)
    simulate_module.BLOCK_STEPS = after_chunk
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; CPU time, median "
          f"of {args.repeats} interleaved repeats (min–max)\n")
    print("| what | before µs | after µs | after/before |")
    print("|---|---:|---:|---:|")
    for name in cases:
        b, a = t[f"{name} | before"], t[f"{name} | after"]
        print(f"| {name} | {b[0] * 1e6:.2f} ({b[1] * 1e6:.2f}–{b[2] * 1e6:.2f}) | "
              f"{a[0] * 1e6:.2f} ({a[1] * 1e6:.2f}–{a[2] * 1e6:.2f}) | {a[0] / b[0]:.3f} |")


if __name__ == "__main__":
    main()
