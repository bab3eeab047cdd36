"""Wall time of the constrained stepper (the step diff_drive_node runs) on a scenario.

    python bench/constrained_step.py [scenario] [--seconds 2.0]

Prints the simulated seconds per wall second (and per CPU second of this process: on a shared
machine the wall figure includes waiting for a core) at the scenario's ``dt`` (RKMK4, four evaluations
of the Hamel equations per step) and the time per step; real time needs a ratio above 1.  The
first call of each kernel (numba compile or cache load) is made before timing starts.
"""
from __future__ import annotations

import argparse
import time

from vm_dynamics.config.params import read_params_file
from vm_dynamics.config.scenario import scenario_path
from vm_dynamics.constraints.drive import ConstrainedStepper
from vm_dynamics.nodes.diff_drive_node import load_diff_drive


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="?", default="diff_drive_arm")
    ap.add_argument("--seconds", type=float, default=2.0, help="simulated seconds to time")
    args = ap.parse_args()
    dt = float(read_params_file(scenario_path(args.scenario)).get("dt", 0.002))
    scn = load_diff_drive(args.scenario)
    st = ConstrainedStepper(scn.system, scn.g0, scn.r0, scn.rd0, scn.forces)
    st.step(dt)                                   # compile / load kernels outside the timing
    steps = max(1, int(round(args.seconds / dt)))
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        st.step(dt)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"{args.scenario}: dt = {dt:g} s, {steps} steps: {wall / steps * 1e6:.0f} us/step wall "
          f"({steps * dt / wall:.2f} simulated s per wall s), {cpu / steps * 1e6:.0f} us/step CPU "
          f"({steps * dt / cpu:.2f} simulated s per CPU s)")


if __name__ == "__main__":
    main()
