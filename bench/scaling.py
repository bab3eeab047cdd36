#!/usr/bin/env python
"""Cost growth with the number of joints: serial chains of 6 → 60 joints, floating base.

    .venv/bin/python bench/scaling.py                  # n = 6 12 24 36 48 60, ~2 min
    .venv/bin/python bench/scaling.py --sizes 6 30 60 --repeats 5

The same synthetic chain (``bench/robots.py: chain_urdf``) in vm_dynamics, Pinocchio and MuJoCo
(MJCF generated from the parsed URDF, free joint, no contacts/constraints).  Per size, in
interleaved repeats (CPU time of this process, median over the repeats):

* forward dynamics per call: the ABA kernel alone (looped in compiled code: no Python),
  ``model.fast.forward_dynamics`` (unchecked, the Python call included), the public
  ``model.forward_dynamics``, and ``pin.aba``;
* integration per step (dt 1 ms, gravity): ``vm.simulate`` open loop (compiled rollout, per
  step) and ``mujoco.mj_step`` (RK4).

Then, per column, a least-squares line ``t = a + b·n`` over all sizes: ``b`` (µs per joint),
``a`` (µs), the worst relative deviation of a measured point from the line, and the log-log
slope of the last two sizes' time above the intercept (1 for linear growth, 2 for quadratic).
Linear growth (O(n), as ABA and an RKMK step built on it must be) shows as a small deviation
from the line and a log-log slope near 1.
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
from breakdown import compiled_loop, interleaved  # noqa: E402

import vm_dynamics as vm  # noqa: E402

COLUMNS = ("ABA kernel alone", "model.fast.forward_dynamics", "model.forward_dynamics",
           "pin.aba", "vm.simulate /step", "mj_step RK4")


def measure(n, repeats, dt=1e-3, steps=500):
    """µs per call/step of every column for a chain of ``n`` joints."""
    import mujoco
    import pinocchio as pin

    from vm_dynamics.dynamics.fast import fast_model
    from vm_dynamics.dynamics.fast import kernels as K
    xml = robots.chain_urdf(n)
    grav = (0.0, 0.0, -9.81)
    m = vm.load_model(xml, base="SE3", gravity=grav)
    P, pdata, iq, iv = robots.pinocchio_model(xml, m.joint_names)
    P.gravity.linear = np.array(grav)
    rng = np.random.default_rng(n)
    g = vm.lie.se3_exp(np.r_[rng.normal(size=3), rng.uniform(-1, 1, 3)])
    V, q, qd = 0.5 * rng.normal(size=6), rng.uniform(-1, 1, n), 0.5 * rng.normal(size=n)
    tau = rng.normal(size=n)
    pq, pv, pu = robots.pin_state(P, iq, iv, g, V, q, qd, tau)
    C = fast_model(m).kernel_constants
    out = np.empty(6 + n)
    fd_args = (C.parent, C.jtype, C.xi, C.inert, C.rootx, C.axes, C.grav, g, V, q, qd, tau,
               np.zeros(6), np.zeros(0, dtype=np.int64), np.zeros((0, 6)), out)
    loop = compiled_loop(K.forward_dynamics)
    loop(1, *fd_args)
    ours = np.r_[m.forward_dynamics(g, V, q, qd, tau)]
    a = pin.aba(P, pdata, pq, pv, pu)
    agree = np.abs(ours - np.r_[a[:6], a[iv]]).max() / np.linalg.norm(a)
    mj = mujoco.MjModel.from_xml_string(robots.mjcf_from_urdf(xml, grav, dt))
    d = mujoco.MjData(mj)
    d.qpos[:], d.qvel[:] = robots.StateMap(mj, m.joint_names).to_mj(g, V, q, qd)
    fast = m.fast
    fo = fast.output()
    vm.simulate(m, g, V, q, qd, 0.01, dt)
    t = interleaved({
        "ABA kernel alone": (lambda: loop(50, *fd_args), 50),
        "model.fast.forward_dynamics": (lambda: fast.forward_dynamics(g, V, q, qd, tau, fo), 1),
        "model.forward_dynamics": (lambda: m.forward_dynamics(g, V, q, qd, tau), 1),
        "pin.aba": (lambda: pin.aba(P, pdata, pq, pv, pu), 1),
        "vm.simulate /step": (lambda: vm.simulate(m, g, V, q, qd, steps * dt, dt), steps),
        "mj_step RK4": (lambda: mujoco.mj_step(mj, d), 1),
    }, repeats, budget=0.04)
    return {k: v[0] * 1e6 for k, v in t.items()}, agree


def fit(ns, ts):
    """``(b, a, worst relative deviation, log-log slope of t − a over the last two sizes)``
    of the least-squares line ``t = a + b n``."""
    ns, ts = np.asarray(ns, float), np.asarray(ts, float)
    b, a = np.polyfit(ns, ts, 1)
    dev = np.max(np.abs(ts - (a + b * ns)) / ts)
    hi = ts[-2:] - a
    slope = np.log(hi[1] / hi[0]) / np.log(ns[-1] / ns[-2]) if np.all(hi > 0) else float("nan")
    return b, a, dev, slope


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[6, 12, 24, 36, 48, 60])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = {}
    for n in args.sizes:
        rows[n] = measure(n, args.repeats)
        print(f"n = {n} done", file=sys.stderr, flush=True)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; µs per call (per "
          f"step), CPU time, median of {args.repeats} interleaved repeats\n")
    print("| n joints | " + " | ".join(COLUMNS) + " | ours/pin (fast) | simulate/mj_step "
          "| FD rel. diff vs pin |")
    print("|---:|" + "---:|" * (len(COLUMNS) + 3))
    for n, (t, agree) in rows.items():
        print(f"| {n} | " + " | ".join(f"{t[c]:.2f}" for c in COLUMNS)
              + f" | {t['model.fast.forward_dynamics'] / t['pin.aba']:.2f} | "
              f"{t['vm.simulate /step'] / t['mj_step RK4']:.2f} | {agree:.1e} |")
    ns = list(rows)
    fits = {c: fit(ns, [rows[n][0][c] for n in ns]) for c in COLUMNS}
    print("| µs per joint (slope b of t = a + b·n) | "
          + " | ".join(f"{fits[c][0]:.3f}" for c in COLUMNS) + " | | | |")
    print("| intercept a (µs) | " + " | ".join(f"{fits[c][1]:.2f}" for c in COLUMNS)
          + " | | | |")
    print("| worst deviation from the line | "
          + " | ".join(f"{100 * fits[c][2]:.1f} %" for c in COLUMNS) + " | | | |")
    print(f"| log-log slope of t − a, n = {ns[-2]}→{ns[-1]} | "
          + " | ".join(f"{fits[c][3]:.2f}" for c in COLUMNS) + " | | | |")
    print(f"\n(bench time {time.perf_counter() - t0:.0f} s; {statistics.mean(ns):.0f} joints on "
          f"average)")


if __name__ == "__main__":
    main()
