"""Cost of a step with kinematically driven joints (``Simulator(driven_joints=...)``, the
hybrid recursion in the compiled stage) against an ordinary step, and of the velocity jump
(``set_driven_velocity``) and ``driven_effort``: median of repeats, µs per call.

    python bench/hybrid_step.py [--robot ur5|panda|b1_z1] [--repeat 7]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robots import robot_xml  # noqa: E402

import vm_dynamics as vm  # noqa: E402


def per_call(fn, calls, repeat, before):
    """Median over ``repeat`` of the time of ``calls`` calls of ``fn`` (``before()`` untimed
    ahead of each repeat), µs per call."""
    out = []
    for _ in range(repeat):
        before()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
    return float(np.median(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="ur5")
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    model = vm.load_model(robot_xml(a.robot), base="SE3", gravity=(0.0, 0.0, 0.0))
    n = model.n
    rng = np.random.default_rng(0)
    state = (np.eye(4), 0.1 * rng.normal(size=6), 0.1 * rng.normal(size=n), rng.normal(size=n))
    tau = 0.01 * rng.normal(size=n)
    driven = list(range(0, n, 2))
    plain = vm.Simulator(model, 1e-3).reset(*state)
    hyb = vm.Simulator(model, 1e-3, driven_joints=driven).reset(*state)

    def before():
        plain.reset(*state)
        hyb.reset(*state)

    inp_p, inp_h = plain.held_inputs(tau), hyb.held_inputs(tau)
    v = [np.full(len(driven), 0.1), np.full(len(driven), -0.1)]
    flip = [0]

    def jump():             # alternate, so that every call is a jump
        flip[0] ^= 1
        hyb.set_driven_velocity(v[flip[0]])
    rows = [("step, ordinary", per_call(lambda: plain.step(inputs=inp_p), 2000, a.repeat, before)),
            ("step, driven joints", per_call(lambda: hyb.step(inputs=inp_h), 2000, a.repeat, before)),
            ("run(1000)/1000, ordinary", per_call(lambda: plain.run(1000, inputs=inp_p), 3,
                                                  a.repeat, before) / 1000),
            ("run(1000)/1000, driven joints", per_call(lambda: hyb.run(1000, inputs=inp_h), 3,
                                                       a.repeat, before) / 1000),
            ("set_driven_velocity", per_call(jump, 500, a.repeat, before)),
            ("driven_effort", per_call(lambda: hyb.driven_effort(tau), 500, a.repeat, before))]
    print(f"{a.robot}: n = {n}, driven joints {driven}")
    for name, us in rows:
        print(f"  {name:32s} {us:8.2f} µs")


if __name__ == "__main__":
    main()
