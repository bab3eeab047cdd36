"""Expanding ``.xacro`` files: the one function every entry point uses, with one policy.

**Xacro files are code.** Expanding one evaluates Python expressions and substitution
arguments (``${…}``, ``$(eval …)``, ``$(env …)``, ``xacro.load_yaml``), which can run anything
and read any file.  Every place that turns a robot description file into a URDF -- the
library's ``load_model``/``parse_urdf``/``read_urdf_source``, ``vm-sim`` and the scenarios,
the nodes, the launch files, ``vm-view``, the recorder -- goes through :func:`expand_xacro`
with a mode from :data:`XACRO_MODES`:

* ``"safe"`` (:data:`DEFAULT_XACRO`, the default everywhere): ``${…}`` expressions are
  arithmetic only (numbers, strings, properties, operators, ``a if c else b``, the math
  functions of :data:`~.xacro_worker.SAFE_XACRO_FUNCTIONS`), with every intermediate
  integer, string and list bounded; only the ``$(arg)``, ``$(find)``, ``$(cwd)`` and
  ``$(dirname)`` substitutions; includes only of regular files.
* ``"full"``: every xacro feature, for a trusted file of your own (``xacro="full"`` in the
  library, ``robot_description_xacro: full`` in a scenario or node parameter file, ``-p
  robot_description_xacro:=full`` on the command line).
* ``"off"``: no xacro at all (plain URDF only).

In both expanding modes the work is bounded: the expansion runs in a child process
(:mod:`.xacro_worker`) that is killed after :data:`XACRO_TIME_BUDGET` seconds of wall-clock
time, may use at most :data:`XACRO_MEMORY_BUDGET` bytes of memory and
:data:`MAX_MACRO_CALLS` macro expansions, and may produce at most :data:`MAX_URDF_BYTES` of
URDF.  Going over a bound is a ``ValueError`` naming the file and the bound, like every other
failure.  Results are cached per process for unchanged files (the file and everything it
included, by modification time and size), so loading the same robot twice expands it once.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import OrderedDict

__all__ = ["XACRO_MODES", "DEFAULT_XACRO", "XACRO_TIME_BUDGET", "XACRO_MEMORY_BUDGET",
           "MAX_MACRO_CALLS", "MAX_URDF_BYTES", "xacro_mode", "expand_xacro"]

#: ``xacro=`` modes (see the module docstring).
XACRO_MODES = ("full", "safe", "off")
#: The mode of every entry point unless the caller opts into another.
DEFAULT_XACRO = "safe"
#: Wall-clock seconds one expansion may take (the shipped robots take ~0.2 s, most of it the
#: start of the child process).
XACRO_TIME_BUDGET = 30.0
#: Address space of the expansion process (bytes).
XACRO_MEMORY_BUDGET = 1024 * 2**20
#: Macro expansions in one expansion (a robot of :data:`~.urdf.MAX_LINKS` links with a few
#: macros per link stays well below).
MAX_MACRO_CALLS = 10_000
#: Largest URDF read or produced (bytes): a file, an XML string, or an expansion's output.
MAX_URDF_BYTES = 16 * 2**20

_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "xacro_worker.py")
_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 16
_CACHE_LOCK = threading.Lock()
_ENV_KEYS = ("AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH", "ROS_PACKAGE_PATH", "PYTHONPATH")


def xacro_mode(value, what: str = "xacro") -> str:
    """``value`` if it is one of :data:`XACRO_MODES`, else a ``ValueError`` naming ``what``."""
    if not isinstance(value, str) or value not in XACRO_MODES:
        raise ValueError(f"{what}={value!r}: choose one of {', '.join(XACRO_MODES)} (xacro "
                         f"files are code: 'full' only for trusted files)")
    return value


def _stat_key(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _cache_key(path: str, mode: str, budget: tuple):
    env = tuple(os.environ.get(k, "") for k in _ENV_KEYS)
    try:
        cwd = os.getcwd()                 # $(cwd) and relative includes depend on it
    except OSError:                       # removed under us: no cache entry can match
        cwd = None
    return (os.path.abspath(path), path, mode, budget, cwd, env)


def _cached(key):
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            return None
        deps, xml = hit
        if any(_stat_key(p) != st for p, st in deps):
            del _CACHE[key]
            return None
        _CACHE.move_to_end(key)
        return xml


def _remember(key, deps, xml):
    with _CACHE_LOCK:
        _CACHE[key] = (deps, xml)
        _CACHE.move_to_end(key)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)


def _child_env() -> dict:
    """The environment of the expansion process: this one, with the directory holding the
    ``xacro`` package first on ``PYTHONPATH`` (it may come from a ROS underlay)."""
    import importlib.util
    env = dict(os.environ)
    try:
        spec = importlib.util.find_spec("xacro")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        raise ValueError("expanding .xacro needs the 'xacro' package (pip install xacro, or "
                         "source a ROS 2 setup file)")
    root = os.path.dirname(os.path.dirname(spec.origin))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(
        os.pathsep) if p])
    return env


def _failure(proc_rc: int, err: bytes, time_budget: float, memory: int) -> str:
    tail = " ".join(err.decode("utf-8", "replace").split())[-300:]
    if proc_rc < 0:
        sig = -proc_rc
        if sig == getattr(signal, "SIGXCPU", None):
            what = f"used more than {time_budget:g} s of CPU time (the budget of one expansion)"
        elif sig == signal.SIGKILL:
            what = (f"was killed (over the memory budget of {memory // 2**20} MiB, or by "
                    f"another process)")
        else:
            try:
                what = f"was ended by signal {signal.Signals(sig).name}"
            except ValueError:
                what = f"was ended by signal {sig}"
    else:
        what = f"the expansion process failed (exit code {proc_rc})"
    return what + (f": {tail}" if tail else "")


def expand_xacro(path, mode: str = DEFAULT_XACRO, *, time_budget: float = XACRO_TIME_BUDGET,
                 max_bytes: int = MAX_URDF_BYTES, max_macro_calls: int = MAX_MACRO_CALLS,
                 memory_budget: int = XACRO_MEMORY_BUDGET) -> str:
    """The URDF text of the ``.xacro`` file ``path`` expanded in ``mode`` (``"safe"`` or
    ``"full"``; see the module docstring) within the budget.  ``ValueError`` naming the file
    for every failure: bad xacro, a construct the mode refuses, a bound exceeded."""
    path = os.fspath(path)
    mode = xacro_mode(mode)
    if mode == "off":
        raise ValueError(f"{path}: xacro files are code and xacro='off' accepts plain URDF "
                         f"only; expand it yourself (xacro {os.path.basename(path)} > "
                         f"robot.urdf) or pass xacro='safe'")
    budget = (float(time_budget), int(max_bytes), int(max_macro_calls), int(memory_budget))
    key = _cache_key(path, mode, budget)
    xml = _cached(key)
    if xml is not None:
        return xml
    try:
        env = _child_env()
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if not sys.executable:   # pragma: no cover - an embedded interpreter
        raise ValueError(f"{path}: cannot start a Python process to expand xacro "
                         f"(sys.executable is empty)")
    request = {"path": path, "mode": mode, "max_bytes": budget[1], "max_macro_calls": budget[2],
               "memory_bytes": budget[3], "cpu_seconds": int(budget[0]) + 1}
    proc = subprocess.Popen([sys.executable, _WORKER, json.dumps(request)], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=budget[0])
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise ValueError(f"{path}: xacro expansion failed: did not finish within "
                         f"{budget[0]:g} s (the time budget of one expansion)") from None
    finally:
        if proc.poll() is None:      # an exception (Ctrl-C) while waiting: do not leave it
            proc.kill()
            proc.wait()
    head, _, body = out.partition(b"\n")
    if head == b"ERR":
        raise ValueError(f"{path}: xacro expansion failed: "
                         f"{body.decode('utf-8', 'replace')}")
    if head != b"OK" or proc.returncode != 0:
        raise ValueError(f"{path}: xacro expansion failed: "
                         f"{_failure(proc.returncode, err, budget[0], budget[3])}")
    includes, _, xml_bytes = body.partition(b"\n")
    if len(xml_bytes) > budget[1]:
        raise ValueError(f"{path}: xacro expansion failed: the expanded URDF has "
                         f"{len(xml_bytes)} bytes; at most {budget[1]} are allowed")
    if err.strip():                  # xacro's warnings, as it would print them itself
        sys.stderr.write(err.decode("utf-8", "replace")[-20000:])
    xml = xml_bytes.decode("utf-8")
    deps = [(p, _stat_key(p)) for p in [os.path.abspath(path)] + json.loads(includes)]
    _remember(key, deps, xml)
    return xml
