"""Monte Carlo campaign benchmarks (issue 24), side by side in one run.

1. Closed-loop throughput per core: floating UR5 (free base, no gravity), joint-space computed
   torque evaluated at every RK4 stage (the compiled law inside the engine's step), dt = 1 ms,
   one process -- against ``mujoco.rollout`` open loop (fixed control sequence, RK4, the same
   bodies and inertias: bench/robots.py's MJCF with a motor per joint) on one thread.  Both in
   simulated steps per wall second and per CPU second of the process (``time.process_time``:
   what a busy machine's other processes do not change; ours over the whole ``vm.simulate``
   call, its set-up included); the best of interleaved repeats.
2. Scaling of a campaign from 1 core to all local cores: the same runs on the serial backend,
   the local process pool and a Dask LocalCluster of the same size (worker start-up included,
   and reported separately as the time to the first result).
3. A spacecraft_arm campaign (10 s runs, dt 1 ms, mass/inertia/initial-tumble dispersions,
   metrics and report) of ``--runs`` runs on every core; its time for 1 000 runs is
   extrapolated from the measured rate when ``--runs`` is below 1 000 (and printed as such).

    python bench/campaign.py                  # ~10 min on a quiet 2-core machine
    python bench/campaign.py --runs 1000      # the full 1 000-run campaign
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import robots  # noqa: E402

import vm_dynamics as vm  # noqa: E402

ARM_DISPERSIONS = {
    "seed": 2026,
    "success": "tracking_error_final < 0.01 and attitude_max_deg < 30",
    "dispersions": {
        "mass": {"*": {"dist": "truncated_normal", "mean": 1.0, "std": 0.03, "low": 0.85,
                       "high": 1.15}},
        "inertia": {"*": {"dist": "lognormal", "median": 1.0, "sigma": 0.05}},
        "initial": {"tumble": {"dist": "normal", "mean": 0.0, "std": 0.01}},
    },
}


def with_motors(mjcf: str, joints) -> str:
    """The MJCF with a torque motor (gear 1, unlimited) on each joint."""
    motors = "".join(f'    <motor joint="{j}" gear="1" ctrllimited="false"/>\n' for j in joints)
    return mjcf.replace("</mujoco>", f"  <actuator>\n{motors}  </actuator>\n</mujoco>")


def ur5_closed_loop(seconds: float, dt: float = 1e-3):
    """(steps per wall s of vm.simulate with computed torque, steps per CPU s of the whole
    call, the law's kind, the model)."""
    from vm_dynamics.control import get_controller
    from vm_dynamics.control.references import reference_from_config
    m = vm.load_model(robots.robot_xml("ur5"), base="SE3", gravity=(0.0, 0.0, 0.0))
    g, V = np.eye(4), np.zeros(6)
    q, qd = np.array([0.0, -1.2, 1.5, -0.3, 0.4, 0.0]), np.zeros(m.n)
    ctrl = get_controller("computed_torque", {"mode": "free_floating", "kp": 25.0, "kd": 10.0})
    ctrl.reset(m, vm.State(0.0, g, V, q, qd))
    ref = reference_from_config({"joint": {"type": "waypoints", "times": [0.0, seconds],
                                           "positions": [list(q), list(q + 0.5)]}})
    tau, bw = ctrl.inputs(ref)
    cpu = time.process_time()
    traj = vm.simulate(m, g, V, q, qd, seconds, dt, tau=tau, base_wrench=bw, record_every=10)
    cpu = time.process_time() - cpu
    return traj.steps / traj.wall_time, traj.steps / cpu, traj.meta.get("compiled_law"), m


def mujoco_rollout(model, seconds: float, nbatch: int = 8, dt: float = 1e-3):
    """(steps per wall s, per CPU s) of mujoco.rollout on one thread: ``nbatch`` open-loop
    rollouts of the UR5."""
    import mujoco
    from mujoco import rollout
    xml = with_motors(robots.mjcf_from_urdf(robots.robot_xml("ur5"), (0.0, 0.0, 0.0), dt),
                      model.joint_names)
    mj = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(mj)
    nstep = int(round(seconds / dt))
    sm = robots.StateMap(mj, model.joint_names)
    data.qpos[:], data.qvel[:] = sm.to_mj(np.eye(4), np.zeros(6),
                                         np.array([0.0, -1.2, 1.5, -0.3, 0.4, 0.0]),
                                         np.zeros(model.n))
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.empty(mujoco.mj_stateSize(mj, spec))
    mujoco.mj_getState(mj, data, state0, spec)
    ctrl = np.random.default_rng(0).normal(0.0, 1.0, (nbatch, nstep, mj.nu))
    rollout.rollout(mj, [data], np.tile(state0, (nbatch, 1)), ctrl[:, :10], nstep=10)  # warm
    t0, c0 = time.perf_counter(), time.process_time()
    rollout.rollout(mj, [data], np.tile(state0, (nbatch, 1)), ctrl, nstep=nstep)
    return nbatch * nstep / (time.perf_counter() - t0), nbatch * nstep / (time.process_time() - c0)


def section_throughput(repeats: int, seconds: float) -> list[str]:
    ours, mj, law, model = [0.0, 0.0], [0.0, 0.0], None, None
    for _ in range(repeats):                       # interleaved
        wall, cpu, law, model = ur5_closed_loop(seconds)
        ours = [max(ours[0], wall), max(ours[1], cpu)]
        mj = [max(a, b) for a, b in zip(mj, mujoco_rollout(model, seconds))]
    ratio = [a / b for a, b in zip(ours, mj)]
    met = ["met" if r >= 1 else "not met" for r in ratio]
    return ["## 1. Closed-loop throughput per core (floating UR5, dt 1 ms)", "",
            "| | steps per wall s (one core / thread) | steps per CPU s |", "|---|---|---|",
            f"| vm.simulate, computed torque at every RK4 stage (law: {law}) | {ours[0]:,.0f} "
            f"| {ours[1]:,.0f} |",
            f"| mujoco.rollout, open loop, RK4, 1 thread | {mj[0]:,.0f} | {mj[1]:,.0f} |",
            f"| ratio ours / MuJoCo | {ratio[0]:.2f} (target >= 1: {met[0]}) | {ratio[1]:.2f} "
            f"({met[1]}) |", f"Load average {os.getloadavg()[0]:.1f}.", ""]


def timed_campaign(spec, runs, backend, workers, cluster=None):
    """(wall s, s to the first result, results) of ``runs`` runs of ``spec``."""
    from vm_dynamics.campaign import backends
    first = []
    t0 = time.perf_counter()
    results = backends.execute(spec, range(runs), backend, workers, cluster,
                               on_done=lambda part: first or first.append(time.perf_counter()))
    wall = time.perf_counter() - t0
    return wall, (first[0] - t0) if first else wall, results


def section_scaling(runs: int, duration: float) -> list[str]:
    """Serial, the local pool (forked from this warm process) and a standing Dask
    LocalCluster whose workers ran one run each before the timing (the scenario loaded and
    the kernels read from the disk cache: a cluster that is already up)."""
    from vm_dynamics.campaign import make_spec
    from vm_dynamics.campaign.runner import run_chunk
    spec = make_spec("spacecraft_arm", ARM_DISPERSIONS, {"duration": duration})
    cores = robots_cores()
    run_chunk(spec, [0])                                 # warm this process
    rows = []
    t1, f1, r1 = timed_campaign(spec, runs, "serial", 1)
    rows.append(("serial (1 core)", 1, t1, f1))
    tl, fl, rl = timed_campaign(spec, runs, "local", cores)
    rows.append((f"local process pool, fork ({cores})", cores, tl, fl))
    same = [repr(a.metrics) == repr(b.metrics) for a, b in zip(r1, rl)]
    try:
        from distributed import Client, LocalCluster
        with LocalCluster(n_workers=cores, threads_per_worker=1, processes=True,
                          host="127.0.0.1", dashboard_address=None) as cluster:
            t0 = time.perf_counter()
            with Client(cluster) as client:
                client.run(run_chunk, spec, [0])         # every worker: load and warm
            warm = time.perf_counter() - t0
            td, fd, rd = timed_campaign(spec, runs, "dask", cores, cluster.scheduler_address)
        rows.append((f"Dask LocalCluster ({cores} workers; warm-up {warm:.1f} s not counted)",
                     cores, td, fd))
        same += [repr(a.metrics) == repr(b.metrics) for a, b in zip(r1, rd)]
    except ImportError as exc:
        print(f"(dask skipped: {exc})")
    out = [f"## 2. Scaling: {runs} spacecraft_arm runs of {duration:g} s", "",
           "| backend | cores | wall s | first result s | runs/s | efficiency vs 1 core (wall) "
           "| CPU s per run in the workers | efficiency (CPU per run vs serial) |",
           "|---|---|---|---|---|---|---|---|"]
    cpu1 = sum(r.cpu for r in r1) / len(r1)
    for (name, c, wall, first), res in zip(rows, [r1, rl] + ([rd] if len(rows) > 2 else [])):
        eff = t1 / wall / c
        cpu = sum(r.cpu for r in res) / len(res)
        out.append(f"| {name} | {c} | {wall:.2f} | {first:.2f} | {runs / wall:.2f} | "
                   f"{100 * eff:.0f} % | {cpu:.3f} | {100 * cpu1 / cpu:.0f} % |")
    out += ["", f"Results identical across backends: {all(same)} ({len(same)} runs compared); "
                f"load average {os.getloadavg()[0]:.1f} on {cores} cores.", ""]
    return out


def robots_cores() -> int:
    from vm_dynamics.campaign.backends import default_workers
    return default_workers()


def section_campaign(runs: int) -> list[str]:
    from vm_dynamics.campaign import make_spec, run_campaign
    from vm_dynamics.campaign.report import write_report
    spec = make_spec("spacecraft_arm", ARM_DISPERSIONS)
    t0 = time.perf_counter()
    result = run_campaign(None, spec=spec, runs=runs, progress=True)
    t_runs = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as out:
        write_report(result, out)
    t_report = time.perf_counter() - t0 - t_runs
    s = result.summary()
    cpu = sum(r.cpu for r in result.results) / runs
    lines = [f"## 3. spacecraft_arm campaign: {runs} runs x 10 s, dt 1 ms, {s['workers']} workers",
             "", f"- measured: {t_runs:.1f} s for the {runs} runs ({runs / t_runs:.3g} runs/s; "
                 f"{cpu:.2f} CPU s per run in the workers) + {t_report:.1f} s for the report "
                 f"(JSON, markdown, histograms, scatter)",
             f"- outcomes: {s['counts']}; failure probability "
             f"{s['failure_probability']['estimate']:.3g} "
             f"{[round(x, 4) for x in s['failure_probability']['interval']]}",
             f"- load average {os.getloadavg()[0]:.1f} on {robots_cores()} cores"]
    if runs < 1000:
        lines.append(f"- 1 000 runs: **extrapolated, not measured**: "
                     f"{(1000 * t_runs / runs + t_report) / 60:.1f} min at this rate and load; "
                     f"{1000 * cpu / robots_cores() / 60:.1f} min from the CPU time per run on "
                     f"{robots_cores()} otherwise idle cores")
    return lines + [""]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=40, help="section 3's campaign size")
    ap.add_argument("--scaling-runs", type=int, default=16)
    ap.add_argument("--scaling-duration", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0, help="section 1's simulated time")
    ap.add_argument("--skip", default="", help="sections to skip, e.g. 2,3")
    args = ap.parse_args(argv)
    skip = set(args.skip.split(",")) - {""}
    import mujoco
    print(f"cores: {robots_cores()}, load average {os.getloadavg()}, mujoco {mujoco.__version__}",
          flush=True)
    out = []
    if "1" not in skip:
        out += section_throughput(args.repeats, args.seconds)
        print("\n".join(out), flush=True)
    if "2" not in skip:
        part = section_scaling(args.scaling_runs, args.scaling_duration)
        print("\n".join(part), flush=True)
        out += part
    if "3" not in skip:
        part = section_campaign(args.runs)
        print("\n".join(part), flush=True)
        out += part
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
