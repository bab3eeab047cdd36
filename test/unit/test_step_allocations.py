"""The compiled step allocates nothing: every array a step needs is a view of the simulator's one
work buffer or a scalar.  numba's runtime counts the arrays it allocates; a compiled call's only
ones are the handles of the numpy arrays it receives (one per array argument, made when the
call unboxes them), whatever the number of steps.  And :func:`vm_dynamics.sim.borrow.borrowed`
gives the same arrays (data, shape, writes) as the records it is given."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from numba_allocations import allocations  # noqa: E402
from urdf_factory import random_tree_urdf  # noqa: E402

import vm_dynamics as vm  # noqa: E402
from vm_dynamics.sim.borrow import borrowed  # noqa: E402


@pytest.fixture(scope="module", params=["SE3", "SE2"])
def sim(request):
    model = vm.load_model(random_tree_urdf(seed=3), base=request.param, gravity=(0.0, 0.0, -9.81))
    s = vm.Simulator(model, 1e-3)
    rng = np.random.default_rng(1)
    s.reset(np.eye(4), 0.1 * rng.normal(size=model.b), 0.3 * rng.normal(size=model.n),
            rng.normal(size=model.n))
    return s


def _arrays(obj) -> int:
    if isinstance(obj, np.ndarray):
        return 1
    return sum(_arrays(o) for o in obj) if isinstance(obj, tuple) else 0


def test_a_step_allocates_nothing(sim):
    held = sim.held_inputs(np.full(sim.model.n, 0.1))
    sim.step(inputs=held)                               # bound and warm
    x, y = sim.engine_state(), sim.spare_state()
    args = (sim.stages.C, sim.stages.F, sim.stages.tab, sim.spec, x, sim.kernel_inputs(held),
            sim.prescribed_rows(), y, sim.stages.buf)
    assert sim.stages.k_step(*args) == 0
    assert allocations(lambda: sim.stages.k_step(*args)) == _arrays(args)


def test_a_compiled_run_allocates_nothing_per_step(sim):
    held = sim.held_inputs(np.full(sim.model.n, 0.1))
    sim.run(3, inputs=held)
    assert allocations(lambda: sim.run(50, inputs=held)) == \
        allocations(lambda: sim.run(1, inputs=held))


class Inner(NamedTuple):
    a: np.ndarray
    k: int


class Outer(NamedTuple):
    inner: Inner
    b: np.ndarray
    dt: float


@numba.njit
def _through_borrowed(rec, x):
    r, y = borrowed((rec, x))
    r.inner.a[1] = 7.0
    y[0, 2] = -1.0
    return r.inner.a.sum() + r.inner.k + r.b.sum() + y.sum() + r.dt + y.shape[1]


def test_borrowed_records_are_the_same_arrays():
    rec = Outer(Inner(np.arange(3.0), 4), np.ones(2), 0.5)
    x = np.zeros((2, 3))
    got = _through_borrowed(rec, x)
    assert rec.inner.a[1] == 7.0 and x[0, 2] == -1.0          # writes reach the caller's arrays
    assert got == (0.0 + 7.0 + 2.0) + 4 + 2.0 + (-1.0) + 0.5 + 3
