#!/usr/bin/env python
"""Where a compiled step's time goes, by function: ``perf record`` with a symbol map of numba's code.

    perf record -D 12000 -F 4000 -o step.data .venv/bin/python bench/step_perf.py [run|ct] [ur5|b1_z1] [SECONDS]
    perf report -i step.data --stdio --no-children --sort sym

numba's machine code has no symbols for ``perf``; this writes ``/tmp/perf-PID.map`` (address,
size and name of every function of every compiled library this process loaded or compiled,
from the object code numba hands to LLVM) and then loops the workload for ``SECONDS`` (8): ``run``
``Simulator.run(2000, inputs=held)`` (the compiled rollout), ``ct`` ``vm.simulate`` with the
compiled computed-torque law at every stage, on the floating robot of ``bench/robots.py``
(gravity, dt 1 ms).  ``-D`` skips the start-up (imports, loading the kernels).  Prints the CPU
time per step of the loop, to turn the report's percentages into microseconds.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from numba.core import codegen

OBJECTS = []        # (library, object code) of every compiled library


def _keep(hook):
    """Wrap numba's object-code hook so that the object code is kept for the map."""
    def wrapped(cls, ll_module, *args):
        out = hook(cls, ll_module, *args)
        buf = args[0] if args else out
        lib = getattr(ll_module, "_CPUCodeLibrary__library", None)
        if buf and lib is not None:
            OBJECTS.append((lib, bytes(buf)))
        return out
    return classmethod(wrapped)


# before any kernel is loaded: numba registers these hooks when its CPU target starts
codegen.CPUCodeLibrary._object_compiled_hook = _keep(
    codegen.CPUCodeLibrary._object_compiled_hook.__func__)
codegen.CPUCodeLibrary._object_getbuffer_hook = _keep(
    codegen.CPUCodeLibrary._object_getbuffer_hook.__func__)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import robots  # noqa: E402

import vm_dynamics as vm  # noqa: E402


def write_map() -> int:
    """``/tmp/perf-PID.map`` of the functions in :data:`OBJECTS`; the number of entries."""
    lines = set()
    for lib, obj in OBJECTS:
        with tempfile.NamedTemporaryFile(suffix=".o") as fh:
            fh.write(obj)
            fh.flush()
            nm = subprocess.run(["nm", "-S", "--defined-only", fh.name], capture_output=True,
                                text=True).stdout
        for ln in nm.splitlines():
            p = ln.split()
            if len(p) != 4 or p[2] not in "tTwW":
                continue
            try:
                addr = lib.get_pointer_to_function(p[3])
            except Exception:       # noqa: BLE001 - a symbol the engine did not load
                addr = 0
            if addr:
                lines.add(f"{addr:x} {int(p[1], 16):x} {p[3]}")
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as fh:
        fh.write("\n".join(sorted(lines)) + "\n")
    return len(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    what = argv[0] if argv else "run"
    robot = argv[1] if len(argv) > 1 else "ur5"
    seconds = float(argv[2]) if len(argv) > 2 else 8.0
    fx = robots.floating_computed_torque(robot)
    m, dt, g, V, q, qd = fx.model, fx.dt, fx.g, fx.V, fx.q, fx.qd
    sim = vm.Simulator(m, dt)
    sim.reset(g, V, q, qd)
    held = sim.held_inputs(np.zeros(m.n))

    def run():
        sim.reset(g, V, q, qd)
        sim.run(2000, inputs=held)

    def ct():
        vm.simulate(m, g, V, q, qd, 1.0, dt, tau=fx.tau_fn, base_wrench=fx.bw_fn)

    f, per = (run, 2000) if what == "run" else (ct, 1000)
    f()
    print(f"perf map: {write_map()} functions", file=sys.stderr)
    n, t0, end = 0, time.process_time(), time.time() + seconds
    while time.time() < end:
        f()
        n += 1
    cpu = time.process_time() - t0
    print(f"{what} {robot}: {1e6 * cpu / (n * per):.2f} us/step CPU over {n * per} steps",
          file=sys.stderr)


if __name__ == "__main__":
    main()
