#!/usr/bin/env python
"""Run a module as ``python -m`` would, with a sampling profiler of its main thread.

    python bench/sampled.py OUT.json MODULE [ARGS...]

A daemon thread looks at the main thread's Python stack every ``SAMPLE_EVERY`` seconds once
the process received SIGUSR1 (so that start-up — imports, kernel loading, discovery — is left
out), and on exit writes ``{"samples": [[count, [[file, function, line], ...innermost first]],
...], "seconds": sampled wall time}`` to OUT.json.  Unlike cProfile it adds no cost to each
Python call (the program runs at nearly its own speed: one stack walk per sample), and a
sample that finds the main thread inside a C function (a DDS write, a compiled kernel, a
sleep) is attributed to the Python line that called it.  Used by ``bench/lockstep_profile.py``.
"""
from __future__ import annotations

import atexit
import collections
import json
import runpy
import signal
import sys
import threading
import time

SAMPLE_EVERY = 0.0005
DEPTH = 40
#: the interpreter's GIL switch interval while sampling: the sampler can only look at the main
#: thread when it releases the GIL, which pure-Python code does every switch interval (5 ms by
#: default) and C calls that release it do at once; at 0.1 ms Python code is sampled about as
#: often as C calls, not 50 times less
SWITCH_INTERVAL = 1e-4


def main():
    out, module, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    counts: collections.Counter = collections.Counter()
    state = {"on": False, "t0": 0.0, "t": 0.0}
    lock = threading.Lock()
    main_id = threading.main_thread().ident

    def on_usr1(signum, frame):
        sys.setswitchinterval(SWITCH_INTERVAL)
        state["on"], state["t0"] = True, time.monotonic()

    def sample():
        frames = sys._current_frames
        while True:
            time.sleep(SAMPLE_EVERY)
            if not state["on"]:
                continue
            f = frames().get(main_id)
            stack = []
            while f is not None and len(stack) < DEPTH:
                co = f.f_code
                stack.append((co.co_filename, co.co_name, f.f_lineno or 0))
                f = f.f_back
            with lock:
                counts[tuple(stack)] += 1
                state["t"] = time.monotonic()

    def write():
        with lock:
            state["on"] = False
            text = json.dumps({"samples": [[c, [list(fr) for fr in st]]
                                           for st, c in counts.items()],
                               "seconds": max(0.0, state["t"] - state["t0"])})
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)

    signal.signal(signal.SIGUSR1, on_usr1)
    atexit.register(write)
    threading.Thread(target=sample, name="sampler", daemon=True).start()
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
