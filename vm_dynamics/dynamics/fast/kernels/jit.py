"""Numba set-up of the kernels: ``njit`` with the package's options, or a stand-in that returns
the function unchanged when numba is not installed (the kernels then run as plain Python).
With numba, the kernels' disk cache is checked against every file they are compiled from, not
only each kernel's own file (:mod:`.cache`)."""
from __future__ import annotations

try:
    from numba import get_num_threads, njit, prange
    NUMBA = True
except ImportError:     # the same code runs as plain Python (slow; the fast path uses numpy)
    NUMBA = False
    prange = range

    def njit(*args, **kwargs):
        """Stand-in for numba.njit when numba is not installed: returns the function as is."""
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

    def get_num_threads() -> int:
        return 1

if NUMBA:     # before any kernel is decorated: their caches then carry the package's stamp
    from .cache import install
    install()

__all__ = ["NUMBA", "OPT", "njit", "prange", "get_num_threads"]

#: Options of every kernel: cached on disk, no GIL, numpy error semantics, no bounds checks.
OPT = dict(cache=True, nogil=True, error_model="numpy", boundscheck=False)
