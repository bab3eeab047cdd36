"""Run a benchmark script's child in another checkout of vm_dynamics (the A/B scripts
``tree_ab.py`` and ``tree_identity.py``): no vm_dynamics is imported here, so the parent runs
with any tree on its path."""
from __future__ import annotations

import json
import os
import subprocess
import sys


def tree_arguments(ap) -> None:
    """Add an A/B script's arguments for its two checkouts to the parser ``ap``: the trees
    ``a`` and ``b`` (optional where the script can run as ``--child``), their numba caches
    ``--cache-a`` and ``--cache-b`` (:func:`child_result`'s ``cache``), and ``--child`` (the
    run inside one tree)."""
    ap.add_argument("a", nargs="?")
    ap.add_argument("b", nargs="?")
    ap.add_argument("--cache-a")
    ap.add_argument("--cache-b")
    ap.add_argument("--child", action="store_true")


def child_result(script: str, tree: str, cache: str | None, args: list[str]) -> dict:
    """Run ``script --child args`` with ``PYTHONPATH`` the ``tree`` (and ``NUMBA_CACHE_DIR``
    ``cache`` if given); the JSON object of its last output line, less its ``file`` (the
    ``vm_dynamics.__file__`` the child imported, which must lie in ``tree``).  A failed child or
    one that imported another vm_dynamics ends the run with a message naming the tree."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    if cache:
        env["NUMBA_CACHE_DIR"] = cache
    r = subprocess.run([sys.executable, os.path.abspath(script), "--child", *args], env=env,
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{tree}: {r.stderr[-2000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    if not out.pop("file").startswith(os.path.abspath(tree)):
        sys.exit(f"{tree}: the child imported another vm_dynamics")
    return out
