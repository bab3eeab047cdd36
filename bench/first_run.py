"""First run after an install, and the analysis of a run, timed (wall clock; the machine's
load average is printed with them, as the figures move with it).

    python bench/first_run.py                  # setup's compile, then the first runs
    python bench/first_run.py --cold           # also: the first run with no compile at setup
    python bench/first_run.py --jobs-compare   # also: two processes compiling at once

"Fresh install" = an empty numba cache (a new ``NUMBA_CACHE_DIR``, as a new venv or checkout
has no cache; the installed sources are the same).  Timed, each in its own process:

* ``vm-sim --compile``: what ``scripts/setup.sh`` runs after ``pip install``;
* the first ``vm-sim spacecraft_arm --duration 1 --no-plots`` after it (the user-visible
  first run; the README's command with a shorter run);
* with ``--cold``: the same first run from another empty cache (no compile at setup);
* with ``--jobs-compare``: ``vm-sim --compile`` of half the scenarios in each of two
  processes at once, from an empty cache (does a 2-core machine compile faster in parallel?).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VM_SIM = str(Path(sys.executable).with_name("vm-sim"))


def timed(argv, env, cwd):
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode:
        print(p.stdout[-2000:], p.stderr[-2000:], file=sys.stderr)
    return dt, p


def load():
    return "load %.1f" % os.getloadavg()[0]


def main(argv):
    run = [VM_SIM, "spacecraft_arm", "--duration", "1", "--no-plots", "--quiet", "--out"]
    with tempfile.TemporaryDirectory(prefix="vm-first-run-") as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=f"{tmp}/cache1", MPLBACKEND="Agg")
        print(f"vm-sim --compile (empty cache) ... ({load()})", flush=True)
        dt, p = timed([VM_SIM, "--compile"], env, tmp)
        print(f"  {dt:.1f} s ({load()}); {p.stdout.strip().splitlines()[-1]}", flush=True)
        dt, p = timed(run + [f"{tmp}/o1"], env, tmp)
        notice = "compiling" in p.stderr
        print(f"first vm-sim spacecraft_arm after it: {dt:.1f} s ({load()}); compile notice: "
              f"{'yes' if notice else 'no'}", flush=True)
        if "--cold" in argv:
            env2 = dict(env, NUMBA_CACHE_DIR=f"{tmp}/cache2")
            dt, p = timed(run + [f"{tmp}/o2"], env2, tmp)
            print(f"first vm-sim spacecraft_arm with no compile at setup: {dt:.1f} s "
                  f"({load()})", flush=True)
        if "--jobs-compare" in argv:
            env3 = dict(env, NUMBA_CACHE_DIR=f"{tmp}/cache3")
            halves = (["spacecraft_arm", "tumbling", "uvms", "planar_rover"],
                      ["orbit_spacecraft_arm", "panda_on_bus", "prismatic_link",
                       "satellite_wheels"])
            t0 = time.perf_counter()
            ps = [subprocess.Popen([VM_SIM, "--compile", *h], env=env3, cwd=tmp,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                  for h in halves]
            rcs = [q.wait() for q in ps]
            print(f"two processes compiling half the scenarios each: "
                  f"{time.perf_counter() - t0:.1f} s ({load()}); exit {rcs}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
