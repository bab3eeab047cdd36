"""``vm-sim --compile`` (also ``python -m vm_dynamics.app.compile``): compile every numba kernel
a run of the shipped scenarios uses, or load it from numba's disk cache, with one progress line
per scenario, so that the first ``vm-sim`` run or node start after an install loads the kernels
(a few seconds) instead of compiling them (about a minute on an idle 2-core machine, several
under load).  ``scripts/setup.sh`` runs it after ``pip install``; ``colcon build`` (setup.py's
``install`` and ``develop`` commands) runs it on the installed copy, with ``--installed``.

Each scenario is run for a few steps in this process (``vm-sim NAME --duration …
--no-plots --quiet`` into a temporary folder): the engine, the compiled control laws, the force
elements and the analysis of that scenario are then in the cache, under ``NUMBA_CACHE_DIR`` if
set, else next to the installed sources.  A scenario that cannot run here (e.g. its robot's
package is not installed) is reported and skipped.

``--installed DIR``: the copy to compile is ``DIR/vm_dynamics`` (a build step that has just
installed the package there); if this process imported another copy, nothing is compiled and the
exit code is 2 (its cache would not be the one the installed executables look in)."""
from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import time

__all__ = ["compile_kernels", "main"]

#: Simulated time of each scenario's run, s (a few steps; every kernel is called at least once).
STEPS_DURATION = 0.01

#: This copy of the package (its kernels' cache is keyed by these source files' paths).
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The scenario compiled first (the one the README and scripts/demo.sh run).
FIRST = "spacecraft_arm"


def compile_kernels(names=None, log=None) -> tuple[list, list]:
    """Run each scenario of ``names`` (default: all shipped ones) for a few steps, printing
    one line per scenario to ``log`` (default stdout); returns ``(done, failed)``, lists of
    ``(name, seconds or reason)``."""
    from ..config.scenario import list_scenarios
    from ..dynamics.fast import numba_available
    from .cli import EXIT_INTERRUPTED
    from .cli import main as vm_sim
    say = log or (lambda s: print(s, flush=True))
    if not numba_available():
        say("vm_dynamics: numba is not installed: nothing to compile (the numpy engine runs; "
            "with numba installed later, e.g. the [fast] extra, the first start compiles the "
            "kernels, with a notice)")
        return [], []
    if not names:       # the README's scenario first: it is ready as soon as its line shows
        names = sorted((n for n, _ in list_scenarios()), key=lambda n: n != FIRST)
    names = list(names)
    say(f"vm_dynamics: kernels of {PACKAGE} (numba's cache: {cache_location()})")
    done, failed = [], []
    t_all = time.perf_counter()
    for i, name in enumerate(names, 1):
        say(f"vm_dynamics: compiling kernels [{i}/{len(names)}] {name} ...")
        t0 = time.perf_counter()
        out = io.StringIO()
        with tempfile.TemporaryDirectory(prefix="vm-compile-") as tmp, \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                rc = vm_sim([name, "--duration", str(STEPS_DURATION), "--no-plots", "--quiet",
                             "--out", f"{tmp}/out"])
            except KeyboardInterrupt:
                rc = EXIT_INTERRUPTED
            except Exception as exc:        # noqa: BLE001 - reported, the others still run
                rc = f"{type(exc).__name__}: {exc}"
        dt = time.perf_counter() - t0
        if rc == EXIT_INTERRUPTED:          # Ctrl-C: stop here; what is compiled stays cached
            say(f"vm_dynamics: compiling kernels interrupted at {name}")
            failed.append((name, "interrupted"))
            return done, failed
        if rc in (0, None):
            done.append((name, dt))
            say(f"vm_dynamics: compiling kernels [{i}/{len(names)}] {name}: {dt:.1f} s")
        else:
            lines = [ln for ln in out.getvalue().splitlines() if "error" in ln.lower()]
            why = str(rc) if isinstance(rc, str) else (lines[-1] if lines else f"exit {rc}")
            failed.append((name, why))
            say(f"vm_dynamics: compiling kernels [{i}/{len(names)}] {name}: skipped ({why})")
    say(f"vm_dynamics: kernels ready for {len(done)} of {len(names)} scenarios in "
        f"{time.perf_counter() - t_all:.0f} s (numba's disk cache)")
    return done, failed


def cache_location() -> str:
    """Where numba puts the kernels' cache: ``$NUMBA_CACHE_DIR`` if set, else the
    ``__pycache__`` folders next to the sources of this copy of the package."""
    where = os.environ.get("NUMBA_CACHE_DIR")
    return f"NUMBA_CACHE_DIR={where}" if where else f"__pycache__ next to {PACKAGE}"


def imported_elsewhere(lib: str) -> str | None:
    """None if this module is ``lib/vm_dynamics/app/compile.py``, else a sentence naming the
    copy this process imported instead."""
    expected = os.path.join(os.path.abspath(lib), "vm_dynamics")
    if PACKAGE == expected:
        return None
    return f"this process imported vm_dynamics from {PACKAGE}, not the installed {expected}"


def main(argv=None) -> int:
    """Exit 0 if at least one scenario's kernels are ready (or numba is absent), 130 after a
    Ctrl-C, 2 if ``--installed DIR`` names another copy than the imported one, else 1."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if any(a in ("-h", "--help") for a in argv):
        print("usage: vm-sim --compile [--installed DIR] [SCENARIO ...]\n\n" + (__doc__ or ""))
        return 0
    if "--installed" in argv:
        i = argv.index("--installed")
        if i + 1 >= len(argv):
            print("vm_dynamics: --installed needs the directory the package was installed in",
                  file=sys.stderr)
            return 2
        why = imported_elsewhere(argv[i + 1])
        if why:
            print(f"vm_dynamics: nothing compiled: {why}", flush=True)
            return 2
        del argv[i:i + 2]
    done, failed = compile_kernels([a for a in argv if not a.startswith("-")])
    if failed and failed[-1][1] == "interrupted":
        return 130
    return 0 if done or not failed else 1


if __name__ == "__main__":
    sys.exit(main())
