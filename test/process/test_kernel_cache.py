"""numba's disk cache of the kernels follows every source file they are compiled from: a kernel
whose own file is unchanged but which calls a kernel of another file, or reads a constant of
another module, is compiled again after that file changed, instead of running the cached, old
code (numba alone checks only the kernel's own file).  Each test runs a copy of the package in
new processes, with its own cache; the kernels are small ones (seconds to compile)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

REPO = Path(__file__).resolve().parents[2]

#: Prints the result of ``checked.states_in_range`` (calls ``algebra.within``, another file) on
#: one valid state and of ``checked.pose_in_range`` (reads ``core.validation.MAX_MAGNITUDE``) on
#: a pose 2 m away, and whether both were in the disk cache before the calls.
PROBE = """
import numpy as np
from vm_dynamics.dynamics.fast import backend
from vm_dynamics.dynamics.fast.kernels import checked
from vm_dynamics.dynamics.fast.records import ForwardInputs
kernels = (checked.states_in_range, checked.pose_in_range)
cached = backend.kernels_cached(*kernels)
g = np.eye(4)[None].copy()
z = np.zeros((1, 6))
X = ForwardInputs(g, z, np.zeros((1, 1)), np.zeros((1, 1)), np.zeros((1, 1)), z, np.zeros(1, np.int64),
                  np.zeros((1, 1, 6)))
status = np.zeros(1, np.int64)
ok = checked.states_in_range(X, status)
far = g[0].copy()
far[0, 3] = 2.0
print("cached", cached, "states_in_range", ok, int(status[0]), "pose_in_range",
      checked.pose_in_range(far))
"""


def _package_copy(tmp_path):
    """A copy of the package's sources (no caches) in ``tmp_path/src``."""
    src = tmp_path / "src"
    shutil.copytree(REPO / "vm_dynamics", src / "vm_dynamics",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    return src


def _probe(src, cache):
    """Run :data:`PROBE` on the copy ``src`` in a new process; ``cache`` is NUMBA_CACHE_DIR, or
    None for numba's cache next to the sources (an installed copy's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["PYTHONPATH"] = str(src)
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = str(cache)
    p = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env,
                       cwd=src, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.split()


def _append(path, text):
    with open(path, "a") as f:
        f.write(text)


@pytest.fixture(params=["NUMBA_CACHE_DIR", "next to the sources"])
def warm_copy(request, tmp_path):
    """A package copy whose probed kernels are compiled into an empty cache: ``(src, cache)``."""
    src = _package_copy(tmp_path)
    cache = tmp_path / "numba-cache" if request.param == "NUMBA_CACHE_DIR" else None
    first = _probe(src, cache)
    assert first == ["cached", "False", "states_in_range", "True", "0", "pose_in_range", "True"]
    return src, cache


def test_an_unchanged_tree_loads_the_kernels_from_the_cache(warm_copy):
    src, cache = warm_copy
    assert _probe(src, cache)[:2] == ["cached", "True"]
    (src / "vm_dynamics" / "app").joinpath("unrelated_note.py").write_text('"""no kernel"""\n')
    assert _probe(src, cache)[:2] == ["cached", "True"]     # a file no kernel reads: no compile


def test_a_changed_kernel_of_another_file_is_compiled_again(warm_copy):
    """``within`` (algebra.py) changed to reject everything: ``states_in_range`` (checked.py,
    unchanged) is compiled again and reports the state out of range (status 4)."""
    src, cache = warm_copy
    _append(src / "vm_dynamics" / "dynamics" / "fast" / "kernels" / "algebra.py",
            "\n\n@njit(**OPT)\ndef within(x, limit):\n    return False\n")
    out = _probe(src, cache)
    assert out[2:5] == ["states_in_range", "False", "4"], out       # not the cached, old code
    assert out[:2] == ["cached", "False"]


def test_a_changed_constant_of_another_module_is_compiled_again(warm_copy):
    """``MAX_MAGNITUDE`` (core/validation.py, no kernel there) lowered to 1: ``pose_in_range``
    (checked.py, unchanged) is compiled again and rejects a translation of 2."""
    src, cache = warm_copy
    _append(src / "vm_dynamics" / "core" / "validation.py", "\nMAX_MAGNITUDE = 1.0\n")
    out = _probe(src, cache)
    assert out[5:] == ["pose_in_range", "False"], out
    assert out[:2] == ["cached", "False"]
