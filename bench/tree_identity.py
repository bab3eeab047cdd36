#!/usr/bin/env python
"""Two checkouts of vm_dynamics give the same trajectories, bit for bit.

    .venv/bin/python bench/tree_identity.py A_TREE B_TREE [--cache-a DIR] [--cache-b DIR]

Runs the same runs in one process per tree (``PYTHONPATH`` the tree, ``NUMBA_CACHE_DIR`` its
cache) and compares a SHA-256 of every array of every trajectory (time, pose, velocities,
joints, efforts, base wrench, work): the shipped scenarios as ``vm-sim`` runs them (shortened
to ``--duration`` s; their controllers, force elements, prescribed motions and integrators),
and on the floating UR5 with gravity: open loop, compiled computed torque at every stage,
``Simulator.step`` with held inputs, a Python callable per stage, the velocity formulation
with Lie–Euler, and dopri5.  Prints one line per run and exits 1 if any differs.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

from trees import child_result, tree_arguments

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = ("panda_on_bus", "uvms", "spacecraft_arm", "tumbling", "satellite_wheels",
             "orbit_spacecraft_arm", "prismatic_link", "orbit_station_keeping")


def _digest(traj) -> str:
    h = hashlib.sha256()
    for name in ("t", "g", "V", "q", "qd", "tau", "base_wrench", "work", "abs_work"):
        a = getattr(traj, name, None)
        if a is not None:
            import numpy as np
            h.update(name.encode())
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _scenario(name, duration):
    import tempfile

    from vm_dynamics.app.run import prepare_run, run_inputs
    from vm_dynamics.config.scenario import load_scenario
    from vm_dynamics.sim.simulate import simulate
    scn = load_scenario(name)
    with tempfile.TemporaryDirectory() as tmp:
        run = prepare_run(scn, None, tmp, 0.0, False, False, ())
        ctrl = run.ctrl.inputs(run.reference) if run.ctrl is not None else None
        tau, bw, prescribed, frame_fn = run_inputs(run, ctrl)
        return simulate(scn.model, scn.g0, scn.V0, scn.q0, scn.qd0, min(duration, scn.duration),
                        scn.dt, tau=tau, base_wrench=bw, method=scn.integrator,
                        prescribed=prescribed, forces=scn.forces,
                        **({"frame_wrenches": frame_fn} if frame_fn else {}))


def _ur5_runs():
    import numpy as np
    sys.path.insert(0, HERE)
    import robots

    import vm_dynamics as vm
    fx = robots.floating_computed_torque()
    m, dt, g, V, q, qd, tau = fx.model, fx.dt, fx.g, fx.V, fx.q, fx.qd, fx.tau
    tau_fn, bw_fn = fx.tau_fn, fx.bw_fn
    out = {"ur5 open loop": vm.simulate(m, g, V, q, qd, 0.5, dt, tau=tau),
           "ur5 computed torque (compiled)": vm.simulate(m, g, V, q, qd, 0.5, dt, tau=tau_fn,
                                                         base_wrench=bw_fn),
           "ur5 callable per stage": vm.simulate(m, g, V, q, qd, 0.1, dt,
                                                 tau=lambda t, s: -s.qd),
           "ur5 velocity lie_euler": vm.simulate(m, g, V, q, qd, 0.2, dt, tau=tau,
                                                 method="lie_euler", formulation="velocity"),
           "ur5 spatial momentum": vm.simulate(m, g, V, q, qd, 0.2, dt, tau=tau,
                                               formulation="spatial_momentum"),
           "ur5 dopri5": vm.simulate(m, g, V, q, qd, 0.2, 0.01, tau=tau, method="dopri5")}
    sim = vm.Simulator(m, dt)
    sim.reset(g, V, q, qd)
    held = sim.held_inputs(tau)
    h = hashlib.sha256()
    for _ in range(300):
        sim.step(inputs=held)
        s = sim.state
        for a in (s.g, s.V, s.q, s.qd):
            h.update(np.ascontiguousarray(a).tobytes())
    return {k: _digest(v) for k, v in out.items()} | {"ur5 Simulator.step": h.hexdigest()[:16]}


def _child(duration):
    import vm_dynamics as vm
    res = {"file": vm.__file__}
    for name in SCENARIOS:
        res[f"scenario {name}"] = _digest(_scenario(name, duration))
    res.update(_ur5_runs())
    print(json.dumps(res))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    tree_arguments(ap)
    ap.add_argument("--duration", type=float, default=1.0)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.duration)
        return 0
    res = [child_result(__file__, tree, cache, ["--duration", str(args.duration)])
           for tree, cache in ((args.a, args.cache_a), (args.b, args.cache_b))]
    bad = 0
    for k in res[0]:
        same = res[0][k] == res[1].get(k)
        bad += not same
        print(f"{'same' if same else 'DIFFERENT'}  {k}: {res[0][k]} {res[1].get(k)}")
    print(f"{len(res[0]) - bad} of {len(res[0])} runs bit-identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
