#!/usr/bin/env python
"""vm_dynamics benchmark suite: one command, rows measured side by side in the same run.

    .venv/bin/python bench/run.py            # full run (~6 min), writes BENCHMARKS.md
    .venv/bin/python bench/run.py --quick    # smaller repeats, no LP-reference simulation
    .venv/bin/python bench/run.py --out -    # print only

Sections (all on floating-base models unless stated; times include the Python call):

1. forward dynamics, one call: the public ``model.forward_dynamics`` (input validation
   included) and ``vm_dynamics.dynamics.fast.forward_dynamics`` vs ``pinocchio.aba`` on UR5, Panda
   (fingers fixed) and B1-Z1, plus the LP reference and the numpy fallback;
2. integration: ``vm.Simulator.step`` (one compiled call per RKMK4 step), ``vm.simulate`` open
   loop with gravity (5 000 steps after a warm-up) and ``vm.simulate`` with the computed-torque
   controller evaluated at every stage, vs MuJoCo RK4 (``mjINT_RK4``) on the same model (MJCF
   generated from the URDF, free joint, no contacts/constraints);
3. scaling with the length of a serial chain (6, 12, 24, 48 joints);
4. batched forward dynamics, N = 1 … 4096: cost per state;
5. conservation over 10 s free-floating (no gravity, no inputs) at equal dt next to MuJoCo RK4:
   drift of the spatial momentum and of the energy, both evaluated by ``Model.momentum`` /
   ``Model.energy`` on each integrator's states;
6. the nodes over DDS (``bench/nodes.py``): real-time factor of ``dynamics_node`` at
   ``real_time_factor: 0`` measured by an independent subscriber, lockstep with
   ``controller_node`` at 1 kHz, and the jitter at ``real_time_factor: 1``;
7. ``vm-sim`` at its defaults on every scenario, and (8) its cold/warm start-up;
9. ``dynamics_node`` under a flood of invalid effort commands (``bench/flood.py``, also
   runnable on its own): valid commands applied, ``/joint_states`` rate and simulated-time
   rate at 0, 20 000 and 100 000 invalid messages/s.

Timing: every candidate in a row is timed in interleaved repeats (A, B, A, B, …) and the
minimum per call is reported, which is robust to other load on a shared machine.  The numba
kernels are compiled (or loaded from the on-disk cache) before any timing.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import robots  # noqa: E402

import vm_dynamics as vm  # noqa: E402
from vm_dynamics.dynamics import fast  # noqa: E402

TARGETS = {"fd_ur5": 10.0, "fd_tree": 15.0, "step": 5.0, "batch": 1.0,
           "model_fd": 3.0, "simulate": 3.0, "simulate_ct": 10.0}


# ------------------------------------------------------------------------------ timing
def _per_call(f, number):
    t0 = time.perf_counter()
    for _ in range(number):
        f()
    return (time.perf_counter() - t0) / number


def time_side_by_side(fns: dict, budget=0.04, repeats=7, per=1):
    """Minimum seconds per call (divided by ``per``) of each callable, interleaved repeats."""
    numbers = {}
    for name, f in fns.items():
        f()
        t = _per_call(f, 1)
        numbers[name] = max(1, int(budget / max(t, 1e-7)))
    best = {name: np.inf for name in fns}
    for _ in range(repeats):
        for name, f in fns.items():
            best[name] = min(best[name], _per_call(f, numbers[name]) / per)
    return best


def us(t):
    return f"{t * 1e6:.2f}" if t < 1e-3 else f"{t * 1e6:.0f}"


def table(title, header, rows, note=None):
    lines = [f"### {title}", ""]
    if note:
        lines += [note, ""]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return text


# ------------------------------------------------------------------------------ fixtures
def random_state(model, rng, v_scale=1.0):
    g = vm.lie.se3_exp(np.r_[rng.normal(size=3), rng.uniform(-2, 2, 3)])
    q = np.array([rng.uniform(lim.get("lower", -np.pi), lim.get("upper", np.pi))
                  for lim in model.joint_limits]) * 0.9
    return g, v_scale * rng.normal(size=6), q, v_scale * rng.normal(size=model.n)


class Robot:
    def __init__(self, name, xml, gravity=(0.0, 0.0, -9.81)):
        self.name, self.xml = name, xml
        self.model = vm.load_model(xml, base="SE3", gravity=gravity)
        self.pin, self.pdata, self.iq, self.iv = robots.pinocchio_model(xml, self.model.joint_names)
        self.pin.gravity.linear = np.asarray(gravity, float)


def fd_rows(robs, rng, repeats):
    import pinocchio as pin
    rows, ratios = [], {}
    for r in robs:
        m = r.model
        g, V, q, qd = random_state(m, rng)
        tau = rng.normal(size=m.n)
        qp, v, u = robots.pin_state(r.pin, r.iq, r.iv, g, V, q, qd, tau)
        ours = np.r_[fast.forward_dynamics(m, g, V, q, qd, tau)]
        a = pin.aba(r.pin, r.pdata, qp, v, u)
        ref = np.r_[a[:6], a[r.iv]]
        agree = np.abs(ours - ref).max() / np.linalg.norm(ref)
        t = time_side_by_side({
            "model": lambda: m.forward_dynamics(g, V, q, qd, tau),
            "ours": lambda: fast.forward_dynamics(m, g, V, q, qd, tau),
            "pin": lambda: pin.aba(r.pin, r.pdata, qp, v, u),
        }, repeats=repeats)
        slow = time_side_by_side({
            "lp": lambda: m.forward_dynamics(g, V, q, qd, tau, backend="lp"),
            "numpy": lambda: fast.forward_dynamics(m, g, V, q, qd, tau, backend="numpy"),
        }, budget=0.05, repeats=3)
        target = TARGETS["fd_ur5"] if m.n < 10 else TARGETS["fd_tree"]
        ratio = t["ours"] / t["pin"]
        mratio = t["model"] / t["pin"]
        ratios[r.name] = (ratio, target)
        ratios[r.name + " model"] = (mratio, TARGETS["model_fd"])
        rows.append([r.name, m.n, us(t["model"]), f"{mratio:.2f}", us(t["ours"]),
                     us(t["pin"]), f"{ratio:.2f}", f"≤ {target:g}",
                     "yes" if ratio <= target else "**no**",
                     us(slow["lp"]), us(slow["numpy"]), f"{agree:.1e}"])
    return rows, ratios


def step_rows(robs, rng, repeats, dt=1e-3, steps=5000):
    import mujoco

    from vm_dynamics.control import get_controller
    from vm_dynamics.control.references import reference_from_config
    rows, ratios = [], {}
    for r in robs:
        m = r.model
        mj = mujoco.MjModel.from_xml_string(robots.mjcf_from_urdf(r.xml, m.gravity, dt))
        d = mujoco.MjData(mj)
        sm = robots.StateMap(mj, m.joint_names)
        g, V, q, qd = random_state(m, rng)
        tau = np.zeros(m.n)
        d.qpos[:], d.qvel[:] = sm.to_mj(g, V, q, qd)
        mujoco.mj_forward(mj, d)
        # one step of each from the same state agrees to the methods' O(dt⁵) difference
        sim = vm.Simulator(m, dt).reset(g, V, q, qd)
        sim.step(tau=tau)
        s1 = sim.state
        d2 = mujoco.MjData(mj)
        d2.qpos[:], d2.qvel[:] = d.qpos, d.qvel
        mujoco.mj_step(mj, d2)
        gm, Vm, qm, qdm = sm.from_mj(d2.qpos, d2.qvel)
        diff = max(np.abs(qm - s1.q).max(), np.abs(qdm - s1.qd).max(), np.abs(Vm - s1.V).max(),
                   np.abs(gm - s1.g).max())
        sim.reset(g, V, q, qd)
        held = sim.held_inputs(tau)
        ctrl = get_controller("computed_torque", {"mode": "free_floating"})
        ctrl.reset(m, vm.State(0.0, g, V, q, qd))
        ref = reference_from_config({"joint": {"type": "waypoints", "times": [0.0, 5.0],
                                               "positions": [list(q), list(q + 0.5)]}})
        tau_fn, bw_fn = ctrl.inputs(ref)
        vm.simulate(m, g, V, q, qd, 0.05, dt)                       # warm-up
        vm.simulate(m, g, V, q, qd, 0.05, dt, tau=tau_fn, base_wrench=bw_fn)

        def run_sim():
            return vm.simulate(m, g, V, q, qd, steps * dt, dt).wall_time / steps

        def run_ct():
            n_ct = steps // 5
            return vm.simulate(m, g, V, q, qd, n_ct * dt, dt, tau=tau_fn,
                               base_wrench=bw_fn).wall_time / n_ct

        t = time_side_by_side({
            "ours_step": lambda: sim.step(inputs=held),
            "mj_step": lambda: mujoco.mj_step(mj, d),
        }, repeats=repeats)
        best = {"sim": np.inf, "ct": np.inf, "mj": np.inf}
        for _ in range(max(3, repeats // 2)):                      # interleaved repeats
            best["sim"] = min(best["sim"], run_sim())
            best["ct"] = min(best["ct"], run_ct())
            best["mj"] = min(best["mj"], _per_call(lambda: mujoco.mj_step(mj, d), steps))
        t.update(best)
        for label, key, mjkey, tgt in (
                ("Simulator.step (one compiled call per step)", "ours_step", "mj_step",
                 TARGETS["step"]),
                (f"vm.simulate open loop, gravity, {steps} steps", "sim", "mj",
                 TARGETS["simulate"]),
                ("vm.simulate + computed_torque at every RK stage", "ct", "mj",
                 TARGETS["simulate_ct"])):
            rr = t[key] / t[mjkey]
            ratios[f"{r.name} {key}"] = (rr, tgt)
            rows.append([r.name, label, us(t[key]), us(t[mjkey]), f"{rr:.2f}", f"≤ {tgt:g}",
                         "yes" if rr <= tgt else "**no**", f"{dt / t[key]:.0f}",
                         f"{dt / t[mjkey]:.0f}", f"{diff:.1e}" if key == "ours_step" else ""])
    return rows, ratios


def scaling_rows(rng, repeats, sizes=(6, 12, 24, 48)):
    import pinocchio as pin
    rows, tt = [], {"ours": [], "pin": [], "lp": []}
    for n in sizes:
        r = Robot(f"chain{n}", robots.chain_urdf(n))
        m = r.model
        g, V, q, qd = random_state(m, rng)
        tau = rng.normal(size=n)
        qp, v, u = robots.pin_state(r.pin, r.iq, r.iv, g, V, q, qd, tau)
        t = time_side_by_side({
            "ours": lambda: fast.forward_dynamics(m, g, V, q, qd, tau),
            "pin": lambda: pin.aba(r.pin, r.pdata, qp, v, u),
        }, repeats=repeats)
        t.update(time_side_by_side({"lp": lambda: m.forward_dynamics(g, V, q, qd, tau)},
                                   budget=0.05, repeats=2))
        for k in tt:
            tt[k].append(t[k])
        rows.append([n, us(t["ours"]), us(t["pin"]), f"{t['ours'] / t['pin']:.2f}", us(t["lp"])])
    slope = {k: np.polyfit(np.log(sizes[1:]), np.log(v[1:]), 1)[0] for k, v in tt.items()}
    rows.append(["log-log slope (12→48)", f"{slope['ours']:.2f}", f"{slope['pin']:.2f}", "",
                 f"{slope['lp']:.2f}"])
    # marginal cost per joint (removes the constant Python-call cost)
    per_joint = {k: (v[-1] - v[0]) / (sizes[-1] - sizes[0]) for k, v in tt.items()}
    rows.append(["µs per added joint (6→48)", f"{per_joint['ours'] * 1e6:.3f}",
                 f"{per_joint['pin'] * 1e6:.3f}", "", f"{per_joint['lp'] * 1e6:.0f}"])
    return rows, slope


def batch_rows(rob, rng, repeats, sizes=(1, 16, 256, 1024, 4096)):
    import pinocchio as pin
    m = rob.model
    states = [random_state(m, rng) for _ in range(max(sizes))]
    G = np.stack([s[0] for s in states])
    V = np.stack([s[1] for s in states])
    Q = np.stack([s[2] for s in states])
    QD = np.stack([s[3] for s in states])
    TAU = rng.normal(size=(max(sizes), m.n))
    qp, v, u = robots.pin_state(rob.pin, rob.iq, rob.iv, G[0], V[0], Q[0], QD[0], TAU[0])
    pins = [robots.pin_state(rob.pin, rob.iq, rob.iv, G[i], V[i], Q[i], QD[i], TAU[i])
            for i in range(64)]

    def pin_loop():
        for a in pins:
            pin.aba(rob.pin, rob.pdata, *a)

    res = {}
    for N in sizes:            # single-threaded rows first: idle OpenMP workers of the
        args = (G[:N], V[:N], Q[:N], QD[:N], TAU[:N])      # parallel rows spin for a while
        t = time_side_by_side({
            "ours": lambda: fast.forward_dynamics_batch(m, *args),
            "pin": lambda: pin.aba(rob.pin, rob.pdata, qp, v, u),
            "pin_loop": pin_loop,
        }, repeats=repeats)
        t["np"] = time_side_by_side(
            {"np": lambda: fast.forward_dynamics_batch(m, *args, backend="numpy")},
            budget=0.05, repeats=2)["np"]
        res[N] = t
    for N in sizes:
        args = (G[:N], V[:N], Q[:N], QD[:N], TAU[:N])
        res[N]["par"] = time_side_by_side(
            {"par": lambda: fast.forward_dynamics_batch(m, *args, parallel=True)},
            repeats=repeats)["par"]
    rows, ratio1024 = [], None
    for N, t in res.items():
        ratio = t["ours"] / N / t["pin"]
        if N == 1024:
            ratio1024 = ratio
        rows.append([N, f"{t['ours'] / N * 1e6:.3f}", f"{t['par'] / N * 1e6:.3f}",
                     f"{t['np'] / N * 1e6:.2f}", f"{t['pin'] * 1e6:.2f}",
                     f"{t['pin_loop'] / len(pins) * 1e6:.2f}", f"{ratio:.2f}",
                     ("yes" if ratio <= 1.0 else "**no**") if N == 1024 else ""])
    return rows, ratio1024


def conservation_rows(rob_xml, rng, T=10.0, dts=(1e-3, 1e-2), with_lp=True):
    import mujoco
    m = vm.load_model(rob_xml, base="SE3", gravity=(0.0, 0.0, 0.0))
    g, V, q, qd = random_state(m, rng, v_scale=1.0)
    h0 = m.momentum(g, V, q, qd)
    E0 = m.energy(g, V, q, qd)

    def drift(gs, Vs, qs, qds):
        dh = max(np.linalg.norm(m.momentum(a, b, c, d) - h0) for a, b, c, d in zip(gs, Vs, qs, qds))
        dE = max(abs(m.energy(a, b, c, d) - E0) for a, b, c, d in zip(gs, Vs, qs, qds))
        return dh / np.linalg.norm(h0), dE / abs(E0)

    rows = []
    for dt in dts:
        steps = int(round(T / dt))
        every = max(1, steps // 500)
        for form in ("spatial_momentum", "velocity"):
            t0 = time.perf_counter()
            sim = vm.Simulator(m, dt, formulation=form).reset(g, V, q, qd)
            _, G, VV, Q, QD = sim.run(steps)
            wall = time.perf_counter() - t0
            dh, dE = drift(*(x[::every] for x in (G, VV, Q, QD)))
            rows.append([f"{dt * 1e3:g}", f"ours: Simulator.run, formulation='{form}'",
                         f"{dh:.1e}", f"{dE:.1e}", f"{wall:.2f}"])

        mj = mujoco.MjModel.from_xml_string(robots.mjcf_from_urdf(rob_xml, (0, 0, 0), dt))
        d = mujoco.MjData(mj)
        sm = robots.StateMap(mj, m.joint_names)
        d.qpos[:], d.qvel[:] = sm.to_mj(g, V, q, qd)
        samples = [sm.from_mj(d.qpos, d.qvel)]
        wall = 0.0
        for _ in range(steps // every):
            t0 = time.perf_counter()
            mujoco.mj_step(mj, d, every)
            wall += time.perf_counter() - t0
            samples.append(sm.from_mj(d.qpos, d.qvel))
        dh, dE = drift(*zip(*samples))
        rows.append([f"{dt * 1e3:g}", "MuJoCo RK4 (qpos quaternion, qvel)", f"{dh:.1e}",
                     f"{dE:.1e}", f"{wall:.2f}"])
        if with_lp and dt >= 1e-2:
            t0 = time.perf_counter()
            traj = vm.simulate(m, g, V, q, qd, T, dt * every, method="rkmk4",
                               substeps=every, dynamics="lp")
            wall = time.perf_counter() - t0
            dh, dE = drift(traj.g, traj.V, traj.q, traj.qd)
            rows.append([f"{dt * 1e3:g}", "vm.simulate(dynamics='lp') (LP reference stages)",
                         f"{dh:.1e}", f"{dE:.1e}", f"{wall:.2f}"])
    return rows


# ------------------------------------------------------------------------------ main
def environment():
    info = {}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, val = line.partition(":")
                info.setdefault(key.strip(), val.strip())
    except OSError:
        pass
    cpu = (f"{info.get('model name', 'unknown')} (family {info.get('cpu family', '?')}, model "
           f"{info.get('model', '?')}, {info.get('cpu MHz', '?')} MHz, cache "
           f"{info.get('cache size', '?')})")
    import mujoco
    import numba
    import pinocchio
    return {
        "CPU": f"{cpu} ({os.cpu_count()} logical CPUs visible, shared machine)",
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "Python": platform.python_version(),
        "numpy / numba / pinocchio / mujoco": (f"{np.__version__} / {numba.__version__} / "
                                               f"{pinocchio.__version__} / {mujoco.__version__}"),
        "numba threads": str(numba.get_num_threads()),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "(unset)"),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, skip the slow rows")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "BENCHMARKS.md"),
                    help="markdown output file ('-' for none)")
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else 7
    rng = np.random.default_rng(2024)
    t_start = time.perf_counter()
    env = environment()
    print("\n".join(f"{k}: {v}" for k, v in env.items()), "\n", flush=True)

    t0 = time.perf_counter()
    ur5 = Robot("UR5", robots.robot_xml("ur5"))
    panda = Robot("Panda (fingers fixed)", robots.robot_xml("panda"))
    b1z1 = Robot("B1-Z1 (tree)", robots.robot_xml("b1_z1"))
    for r in (ur5, panda, b1z1):         # compile / load the numba cache before timing
        gg, VV, qq, qqd = random_state(r.model, rng)
        fast.forward_dynamics(r.model, gg, VV, qq, qqd, np.zeros(r.model.n))
        vm.Simulator(r.model, 1e-3).reset(gg, VV, qq, qqd).step()
        for par in (False, True):
            fast.forward_dynamics_batch(r.model, gg[None].repeat(300, 0), VV, qq, qqd,
                                        np.zeros(r.model.n), parallel=par)
    warm = time.perf_counter() - t0
    print(f"(models loaded and numba kernels compiled/loaded in {warm:.1f} s)\n", flush=True)

    out = []
    rows, fd_ratio = fd_rows([ur5, panda, b1z1], rng, repeats)
    out.append(table(
        "1. Forward dynamics, one call, floating base (µs per call)",
        ["robot", "n", "model.forward_dynamics", "ratio (target ≤ 3)", "fast.forward_dynamics",
         "pin.aba", "ratio", "target", "met", "LP reference", "numpy fallback",
         "rel. diff ours vs pin"], rows,
        "`model.forward_dynamics(g, V, q, qd, tau)` — the documented API with its input "
        "validation — and `fast.forward_dynamics(model, …)` (numba) vs "
        "`pinocchio.aba(model, data, q, v, tau)` on the same URDF with a free-flyer root; "
        "LP reference = `model.forward_dynamics(…, backend='lp')` (closed-form LP, lp.py)."))
    rows, step_ratio = step_rows([ur5, b1z1], rng, repeats)
    out.append(table(
        "2. Integration, dt = 1 ms (µs per step)",
        ["robot", "ours", "ours µs", "MuJoCo RK4 µs", "ratio", "target", "met",
         "ours sim-s/wall-s", "MuJoCo sim-s/wall-s", "1-step diff vs MuJoCo"], rows,
        "Ours: `vm.Simulator(model, dt).step(inputs=...)` (one compiled call per RKMK4 step, "
        "formulation 'auto'); `vm.simulate(model, g, V, q, qd, 5.0, 1e-3)` (wall time of the "
        "integration / steps, recording of every sample included); the same with "
        "`tau, base_wrench = computed_torque.inputs(waypoints)` evaluated at every RK stage "
        "(1 000 steps). MuJoCo: `mj_step` with `integrator=RK4` on an MJCF generated from the "
        "same URDF (free joint, contacts and constraints disabled; its accelerations agree "
        "with ours to 1e-14), one Python call per step. '1-step diff' = max abs difference of "
        "the states after one step from the same state (RKMK4 on SE(3) vs RK4 on the "
        "quaternion: O(dt⁵))."))
    rows, slope = scaling_rows(rng, repeats)
    out.append(table(
        "3. Scaling with serial-chain length, floating base (µs per forward-dynamics call)",
        ["n joints", "ours fast", "pin.aba", "ratio", "LP reference"], rows,
        "Synthetic chains (bench/robots.py: chain_urdf). Slope of log t vs log n over 12…48; "
        "the per-call Python overhead (~2-4 µs) flattens the small-n end of 'ours'."))
    rows, batch_ratio = batch_rows(ur5, rng, repeats)
    out.append(table(
        "4. Batched forward dynamics, UR5 floating (µs per state)",
        ["N", "ours (default, 1 thread)", "ours parallel=True", "ours numpy fallback",
         "pin.aba one call", "pin.aba Python loop", "ratio ours / pin one call",
         "target ≤ 1 at N=1024"], rows,
        "`fast.forward_dynamics_batch(model, g[N], V[N], q[N], qd[N], tau[N])`: one compiled "
        "loop over the states (Python call included, divided by N). `parallel=True` splits "
        "the batch over numba's threads (OpenMP here); on this shared, oversubscribed 2-core "
        "machine that is usually slower, hence off by default. Pinocchio one call is timed "
        "alongside in the same repeats; its Python loop runs over 64 distinct states."))
    rows = conservation_rows(ur5.xml, rng, with_lp=not args.quick)
    out.append(table(
        "5. Conservation, UR5 free-floating for 10 s (zero gravity, zero inputs)",
        ["dt (ms)", "integrator", "max ‖Δh‖ / ‖h₀‖", "max abs ΔE / E₀", "wall (s)"], rows,
        "h = total spatial momentum in the inertial frame, E = kinetic energy, both from "
        "`Model.momentum`/`Model.energy` evaluated on each integrator's states (≤ 500 "
        "samples); same initial state (|q̇|, |V| ~ 1). Wall time of the integration only. "
        "'spatial_momentum' integrates the momentum in the frame of each step's start "
        "(conserved exactly when no wrench acts); 'velocity' integrates the body twist V."))

    import nodes
    node_tab, node_res = nodes.node_rows(seconds=4.0 if args.quick else 8.0)
    out.append(table(
        "6. The nodes over DDS (simulated s per wall s, from an independent subscriber)",
        ["what runs", "real-time factor", "target", "met", "/joint_states Hz", "jitter"],
        node_tab,
        "`dynamics_node` (and `controller_node`) as processes on the Cyclone DDS transport "
        "(loopback, own domain), started with `--params-file config/<scenario>.yaml`; the "
        "lockstep also composed in one process (`composed_nodes`, samples between the two "
        "nodes handed over in the process), alternating with the two processes. A "
        "plain Cyclone DDS reader in the benchmark process (read in batches every 10 ms, so "
        "it takes no CPU from the nodes) receives `/joint_states` and divides the advance of "
        "their header stamps (simulated time) by the advance of the wall time at which the "
        "node wrote them (DDS source timestamps) over the window, after 2 s of settling. At "
        "real_time_factor 1: mean ± std, p99 and max of the publication period (nominal "
        "20 ms), and the spread of (wall − simulated) time, i.e. the pacing jitter of the "
        "node."))
    sim_tab, sim_res = nodes.vm_sim_rows()
    out.append(table(
        "7. vm-sim at its defaults (real-time factor of the integration, from summary.json)",
        ["command", "real-time factor", "target", "met", "", "notes"], sim_tab))
    start_tab = nodes.startup_rows()
    out.append(table(
        "8. Start-up of vm-sim (wall s of the whole command)",
        ["command", "numba kernels", "wall s", "compile notice shown", "exit code"], start_tab,
        "The first run on a machine compiles the kernels (announced on stderr: "
        "'compiling dynamics kernels, first run only ...'); numba caches them on disk, so "
        "later runs only load them."))
    import flood
    flood_tab, _ = flood.flood_rows(seconds=4.0 if args.quick else 8.0)
    out.append(table(
        "9. dynamics_node under a flood of invalid effort commands (DDS, planar_rover)",
        flood.HEADER, flood_tab,
        "`bench/flood.py` (see its docstring): flooder processes write effort commands of the "
        "wrong length while this process sends valid ones every 10 ms and reads "
        "`/joint_states` (source timestamps) and `/diagnostics`. The flooders share the "
        "machine's CPUs with the node; the rate they reach is reported, and so are the "
        "node's CPU time and the time its main thread waited for a CPU."))

    met = [("model.forward_dynamics ≤ 3× pin.aba, floating UR5", fd_ratio["UR5 model"]),
           ("FD ≤ 10× pin.aba, floating UR5", fd_ratio["UR5"]),
           ("FD ≤ 15× pin.aba, B1-Z1 tree (19 joints)", fd_ratio["B1-Z1 (tree)"]),
           ("RKMK4 step ≤ 5× MuJoCo RK4 step, floating UR5", step_ratio["UR5 ours_step"]),
           ("vm.simulate open loop ≤ 3× mj_step per step, floating UR5",
            step_ratio["UR5 sim"]),
           ("vm.simulate + computed torque per stage ≤ 10× mj_step, floating UR5",
            step_ratio["UR5 ct"]),
           ("batched FD per state ≤ pin.aba one call at N = 1024", (batch_ratio, 1.0))]
    for key, label in (("open_spacecraft_arm", "dynamics_node spacecraft_arm, rtf 0"),
                       ("open_uvms", "dynamics_node uvms, rtf 0")):
        met.append((f"{label} ≥ 10× real time", (node_res[key]["rtf"], 10.0)))
    rows_ge = [(f"{label} ≥ 10× real time", node_res[k]["rtf"], 10.0) for k, label in
               (("open_spacecraft_arm", "dynamics_node spacecraft_arm, rtf 0"),
                ("open_uvms", "dynamics_node uvms, rtf 0"))]
    rows_ge.append(("dynamics_node + controller_node lockstep 1 kHz ≥ 1× real time",
                    node_res["lockstep"]["rtf"], 1.0))
    rows_ge.append(("the lockstep composed in one process (composed_nodes) ≥ 3× real time",
                    node_res["lockstep_composed"]["rtf"], 3.0))
    rows_ge += [(f"vm-sim {k} real-time factor ≥ 5", v, 5.0) for k, v in sim_res.items()]
    met = [m for m in met if "dynamics_node" not in m[0]]
    rows = [[k, f"{r:.2f}", f"≤ {tgt:g}", "yes" if r <= tgt else "**no**"] for k, (r, tgt) in met]
    rows += [[k, f"{r:.2f}", f"≥ {tgt:g}", "yes" if r >= tgt else "**no**"]
             for k, r, tgt in rows_ge]
    rows.append(["FD cost growth close to linear in n (chains 12→48)", f"slope {slope['ours']:.2f}",
                 "≈ 1 (not 3)", "yes" if slope["ours"] < 1.5 else "**no**"])
    out.insert(0, table("Targets", ["target", "measured", "required", "met"], rows))
    total = time.perf_counter() - t_start
    print(f"total bench time {total:.0f} s; load average now "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    if args.out != "-":
        env["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
        env["bench wall time"] = f"{total:.0f} s (kernel compile/cache load {warm:.1f} s)"
        head = ["# Benchmarks", "",
                "Generated by `python bench/run.py` (see bench/README.md); every table's rows "
                "were measured side by side in one run, so ratios are meaningful even though "
                "absolute times vary with the load of this shared machine.", "",
                "| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in env.items()] + [""]
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write("\n".join(head) + "\n" + "\n".join(out))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
