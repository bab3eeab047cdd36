"""How many arrays numba's runtime allocates while a call runs (its allocation statistics)."""
from __future__ import annotations

from typing import Callable


def allocations(f: Callable[[], object]) -> int:
    """Arrays numba's runtime allocates while ``f()`` runs (statistics switched on for the call
    and restored after)."""
    from numba.core.runtime import _nrt_python, rtsys
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats().alloc
        f()
        return rtsys.get_allocation_stats().alloc - before
    finally:
        if not was:
            _nrt_python.memsys_disable_stats()
