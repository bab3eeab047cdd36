"""``bind_compiled`` remembers a kernel's entry point per argument types: the same entry for
arguments of the same types (whatever their sizes), another one as soon as numba would type an
argument differently (dtype, dimensions, layout, writeability, record class)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from vm_dynamics.dynamics.fast.backend import bind_compiled  # noqa: E402


class Pair(NamedTuple):
    a: np.ndarray
    k: int


class Other(NamedTuple):
    a: np.ndarray
    k: int


@numba.njit
def _total(x, rec):
    return x.sum() + rec.a.sum() + rec.k


def test_same_types_share_one_entry_point_and_compute_the_same():
    e1 = bind_compiled(_total, (np.ones(3), Pair(np.ones(2), 1)))
    e2 = bind_compiled(_total, (np.ones(7), Pair(np.ones(5), 4)))
    assert e2 is e1
    assert e1(np.ones(7), Pair(np.ones(5), 4)) == _total.py_func(np.ones(7), Pair(np.ones(5), 4))


@pytest.mark.parametrize("x, rec", [
    (np.ones(3, dtype=np.int64), Pair(np.ones(2), 1)),                  # dtype
    (np.ones((3, 2)), Pair(np.ones(2), 1)),                              # dimensions
    (np.ones(6)[::2], Pair(np.ones(2), 1)),                              # layout
    (np.ones(3), Pair(np.ones(2), 1.5)),                                 # item type
    (np.ones(3), Other(np.ones(2), 1)),                                  # record class
])
def test_other_types_get_their_own_entry_point(x, rec):
    base = bind_compiled(_total, (np.ones(3), Pair(np.ones(2), 1)))
    entry = bind_compiled(_total, (x, rec))
    assert entry is not base
    assert entry(x, rec) == pytest.approx(_total.py_func(x, rec))


def test_a_read_only_array_is_another_type():
    base = bind_compiled(_total, (np.ones(3), Pair(np.ones(2), 1)))
    ro = np.ones(3)
    ro.flags.writeable = False
    entry = bind_compiled(_total, (ro, Pair(np.ones(2), 1)))
    assert entry is not base
    assert entry(ro, Pair(np.ones(2), 1)) == 6.0
