"""The one backend seam: which implementation of the dynamics runs (numba, numpy, LP), the
compiled-kernel helpers and the first-run compile notice."""

from __future__ import annotations

import contextlib
import sys
import threading

import numpy as np

__all__ = ["BACKENDS", "COMPILE_NOTICE", "NOTICE_PRINTED", "numba_available", "numba_kernels",
           "bind_compiled", "kernels_cached", "forget_found_caches", "compile_notice",
           "resolve_backend"]


def numba_available() -> bool:
    """True if the numba kernels can be used (numba importable)."""
    return numba_kernels() is not None


def numba_kernels():
    """The compiled kernel package :mod:`.kernels`, or None without numba."""
    from . import kernels
    return kernels if kernels.NUMBA else None


BACKENDS = ("auto", "numba", "numpy", "lp")

COMPILE_NOTICE = ("vm_dynamics: compiling dynamics kernels, first run only (about a minute; "
                  "cached on disk for later runs) ...")


#: Records that the compile notice was printed in this process (it is printed once).
NOTICE_PRINTED: list = []


def _type_key(a):
    """What numba's ``typeof`` reads of an argument of the package's kernels, read cheaply: an
    array's dtype, dimensions, layout, alignment and writeability; a tuple's (or named
    record's) class and items; otherwise the Python type (an int also by its width)."""
    if type(a) is np.ndarray:
        f = a.flags
        return (a.dtype.num, a.ndim, f.c_contiguous, f.f_contiguous, f.aligned, f.writeable)
    if isinstance(a, tuple):
        return (type(a), tuple(_type_key(x) for x in a))
    if type(a) is int:
        return (int, a.bit_length() > 63)
    return type(a)


_BOUND: dict = {}
_BOUND_LOCK = threading.Lock()


def bind_compiled(dispatcher, args):
    """Call a numba kernel once with ``args`` (compiling it, or loading it from the disk cache)
    and return the compiled entry point for exactly those argument types.

    Calling the entry point skips the dispatcher's per-call type resolution (about half of the
    call overhead of a kernel with 15-30 arguments).  It is only ever called with arguments of
    the same types — arrays this package allocates or validates (float64/int64, C-contiguous,
    writeable) — so the types always match the signature.  The entry point is remembered per
    kernel and argument types (:func:`_type_key`): numba's own ``typeof`` of the named records
    runs in Python and took ~2 ms of every ``Simulator``'s set-up, i.e. of every short
    ``simulate`` call."""
    key = (dispatcher, _type_key(tuple(args)))
    try:
        hit = _BOUND.get(key)
    except TypeError:           # an argument type that cannot be a key: no memory
        key, hit = None, None
    if hit is not None:
        return hit
    dispatcher(*args)
    try:
        sig = tuple(dispatcher.typeof_pyval(a) for a in args)
        entry = dispatcher.overloads[sig].entry_point
    except (KeyError, AttributeError, TypeError):     # numba internals changed: stay general
        return dispatcher
    if key is not None:
        with _BOUND_LOCK:
            _BOUND[key] = entry
    return entry


#: Dispatchers whose disk cache was found valid in this process, by id (the objects are kept,
#: so an id is never reused): their index is read once, not at every engine's set-up (reading
#: and unpickling it took about a millisecond of every ``Simulator``).
_FOUND_CACHED: dict = {}


def forget_found_caches() -> None:
    """Read every dispatcher's cache index again at the next :func:`kernels_cached` (for
    measurements of the engine's set-up, ``bench/setup_ab.py``)."""
    _FOUND_CACHED.clear()


def kernels_cached(*dispatchers) -> bool | None:
    """True if numba's on-disk cache holds a valid entry for every dispatcher (the index of
    each matches its current source file), False if one must be compiled, None if unknown.
    A valid cache stays valid for the process: each dispatcher's index is read once."""
    todo = [d for d in dispatchers if id(d) not in _FOUND_CACHED]
    try:
        ok = all(bool(d._cache._cache_file._load_index()) for d in todo)
    except Exception:          # noqa: BLE001 - numba internals changed or caching disabled
        return None
    if ok:
        _FOUND_CACHED.update((id(d), d) for d in todo)
    return ok


@contextlib.contextmanager
def compile_notice(*dispatchers, after: float = 1.0, stream=None, printed: list | None = None):
    """Announce on stderr (once per process) that the kernels are being compiled: at once if
    numba's disk cache has no valid entry for one of ``dispatchers``, or, if that cannot be
    told, when the block takes longer than ``after`` seconds.  Later processes load the
    kernels from the cache without a word.  ``printed`` records whether the notice was shown
    (default :data:`NOTICE_PRINTED`, once per process)."""
    out = sys.stderr if stream is None else stream
    cached = kernels_cached(*dispatchers) if dispatchers else None

    record = NOTICE_PRINTED if printed is None else printed

    def say():
        if not record:
            record.append(True)
            print(COMPILE_NOTICE, file=out, flush=True)
    if cached is False:
        say()
    if cached is not None:
        yield
        return
    done = threading.Event()

    def notify():
        if not done.wait(after):
            say()
    th = threading.Thread(target=notify, name="vm_dynamics-compile-notice", daemon=True)
    th.start()
    try:
        yield
    finally:
        done.set()
        th.join()


def resolve_backend(backend: str = "auto", engine: bool = False) -> str:
    """The one place that picks the implementation of the dynamics (every entry point asks it).

    ``"auto"`` → ``"numba"`` if numba can be imported, else the numba-free fallback: for the
    algorithms (forward/inverse dynamics, mass matrix, LP blocks) that is ``"numpy"`` (the same
    recursions vectorised with numpy, :mod:`.numpy_kernels`); for the simulation engine
    (``engine=True``) it is ``"python"`` (the engine's kernels run as plain Python; much slower,
    install numba).  ``"lp"`` — the closed-form LP reference of :mod:`vm_dynamics.dynamics.lp` — is only
    ever used when asked for by name.  ``"numba"`` without numba raises ValueError.
    """
    choices = ("auto", "numba", "lp") if engine else BACKENDS
    if backend not in choices:
        raise ValueError(f"backend={backend!r}: unknown; choose one of {', '.join(choices)}")
    if backend == "lp":
        return "lp"
    have = numba_available()
    if backend == "numba" and not have:
        raise ValueError("backend='numba': numba is not installed (pip install numba, or "
                         "vm_dynamics[fast]); use backend='auto' for the numba-free fallback")
    if backend == "numpy":
        return "numpy"
    if have:
        return "numba"
    return "python" if engine else "numpy"
