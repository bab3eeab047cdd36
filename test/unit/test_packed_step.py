"""``Simulator.step`` passes the records that stay the same between steps as one pointer table
(:mod:`vm_dynamics.sim.packed`): the table rebuilds the very arrays it lists (data, shape,
strides, writes), the step through it is the step through the records bit for bit, the table
is built once and reused while the simulator's two state records alternate, built again when
the state's arrays are replaced, and a compiled step then unboxes only the table and the
arrays that change per step."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from numba_allocations import allocations  # noqa: E402
from urdf_factory import random_tree_urdf  # noqa: E402

import vm_dynamics as vm  # noqa: E402
from vm_dynamics.sim.packed import PackedRecords, from_table  # noqa: E402


class Inner(NamedTuple):
    a: np.ndarray
    idx: np.ndarray


class Outer(NamedTuple):
    inner: Inner
    cube: np.ndarray
    mask: np.ndarray
    empty: np.ndarray


@numba.njit
def _read(table, tref):
    rec, x, y = from_table(table, tref)
    rec.inner.a[1] = 7.0                      # writes reach the listed arrays
    y[1, 2] = -1.0
    s = rec.inner.a.sum() + rec.cube[1, 2, 0] + rec.cube.shape[2] + rec.empty.shape[0]
    s += rec.inner.idx[2] + rec.mask.sum() + x.sum() + y[1].sum() + y.shape[0]
    return s


def _outer():
    return Outer(Inner(np.arange(3.0), np.array([4, 5, 6])),
                 np.arange(24.0).reshape(2, 3, 4), np.array([True, False, True]),
                 np.zeros((0, 6)))


def test_the_table_rebuilds_the_same_arrays():
    rec, x, y = _outer(), np.ones(5), np.zeros((3, 4))
    p = PackedRecords(rec, x, y)
    got = _read(p.table, p.tref)
    assert rec.inner.a[1] == 7.0 and y[1, 2] == -1.0
    assert got == (0.0 + 7.0 + 2.0) + 20.0 + 4 + 0 + 6 + 2 + 5.0 + (-1.0) + 3
    assert p.parity(x, y) == 0 and p.parity(y, x) == 1 and p.parity(x, x.copy()) == -1


def test_the_table_takes_only_contiguous_arrays_of_the_engine_dtypes():
    rec = _outer()
    with pytest.raises(ValueError, match="C-contiguous"):
        PackedRecords(rec._replace(cube=rec.cube[:, :, ::2]), np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="float32"):
        PackedRecords(rec, np.ones(2, dtype=np.float32), np.ones(2))
    with pytest.raises(TypeError, match="only arrays"):
        PackedRecords((rec, 1.0), np.ones(2), np.ones(2))


@pytest.fixture(scope="module", params=["SE3", "SE2"])
def model(request):
    return vm.load_model(random_tree_urdf(seed=3), base=request.param, gravity=(0.0, 0.0, -9.81))


def _start(model):
    rng = np.random.default_rng(1)
    return (np.eye(4), 0.1 * rng.normal(size=model.b), 0.3 * rng.normal(size=model.n),
            rng.normal(size=model.n))


def test_the_packed_step_is_the_record_step_bit_for_bit(model):
    a, b = vm.Simulator(model, 1e-3), vm.Simulator(model, 1e-3)
    a.reset(*_start(model))
    b.reset(*_start(model))
    tau = np.linspace(-0.5, 0.5, model.n)
    ha, hb = a.held_inputs(tau, base_wrench=np.full(model.b, 0.2)), \
        b.held_inputs(tau, base_wrench=np.full(model.b, 0.2))
    ev = b.stages
    for k in range(12):
        a.step(inputs=ha)                              # through the table
        x, y = b.engine_state(), b.spare_state()       # through the records
        assert ev.k_step(ev.C, ev.F, ev.tab, b.spec, x, b.kernel_inputs(hb),
                         b.prescribed_rows(), y, ev.buf) == 0
        b.commit(y, ev.stages, x)
        for u, v in zip(a.arrays()[1:], b.arrays()[1:]):
            assert np.array_equal(u, v)
        assert (a.work, a.abs_work) == (b.work, b.abs_work)


def test_the_table_is_reused_while_the_states_alternate(model):
    sim = vm.Simulator(model, 1e-3).reset(*_start(model))
    held = sim.held_inputs(np.zeros(model.n))
    sim.step(inputs=held)
    pack = sim.stages.pack
    for _ in range(5):
        sim.step(inputs=held)
        assert sim.stages.pack is pack
    snap = sim.snapshot()
    sim.restore(snap)                                  # new state arrays: a new table
    sim.step(inputs=held)
    assert sim.stages.pack is not pack
    sim.restore(snap)
    sim.step(inputs=held)
    rows = sim.arrays()
    sim.restore(snap)
    sim.step(inputs=held)
    for u, v in zip(rows[1:], sim.arrays()[1:]):
        assert np.array_equal(u, v)


def test_a_table_rebuilt_for_new_states_keeps_its_type_and_fixed_entries(model, monkeypatch):
    """A node alternates rollouts (new state arrays) and single steps, so a table is built
    after every rollout: it takes the numba type and the fixed records' entries of the one
    before (building the type took milliseconds per table, a node ran at a third of its
    speed) and lists what a table built from nothing lists."""
    from vm_dynamics.sim import packed
    sim = vm.Simulator(model, 1e-3).reset(*_start(model))
    held = sim.held_inputs(np.zeros(model.n))
    sim.step(inputs=held)
    pack = sim.stages.pack
    sim.restore(sim.snapshot())                            # new state arrays
    typed = []
    monkeypatch.setattr(packed, "record_type", lambda v: typed.append(v) or 1 / 0)
    sim.step(inputs=held)                                  # new states: a new table, no type
    monkeypatch.undo()
    new = sim.stages.pack
    assert new is not pack and new.tref is pack.tref and not typed
    scratch = PackedRecords(new.fixed, new.a, new.b)
    assert scratch.tref == new.tref and np.array_equal(scratch.table, new.table)
    assert not np.array_equal(new.table, pack.table)       # the states' addresses changed
    # states of another layout (a non-contiguous array) are not read with the old type
    odd = new.a._replace(q=np.zeros(2 * model.n)[::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        PackedRecords(new.fixed, odd, new.b, like=new)


def test_a_rollout_leaves_its_end_state_in_the_listed_states(model, monkeypatch):
    """A node alternates rollouts and single steps: a rollout's last row goes into the
    simulator's spare state (as a step's end state does), so the step after it finds its states
    in the table and builds none (a table per rollout cost ~30 us, a fifth of a 10-step block).
    Rollouts and steps in any mix reach the states of steps alone, bit for bit, and the rows a
    rollout returned are not touched by what follows."""
    from vm_dynamics.sim import stages
    start = _start(model)
    sim = vm.Simulator(model, 1e-3).reset(*start)
    held = sim.held_inputs(np.zeros(model.n))
    sim.step(inputs=held)
    pack, built = sim.stages.pack, []
    monkeypatch.setattr(stages, "PackedRecords",
                        lambda *a, **k: built.append(a) or PackedRecords(*a, **k))
    first = sim.run(3, inputs=held)
    kept = [np.copy(r) for r in first]
    sim.step(inputs=held)
    for k in (1, 4, 2):
        sim.run(k, inputs=held)
        sim.step(inputs=held)
    assert not built and sim.stages.pack is pack
    assert all(np.array_equal(u, v) for u, v in zip(first, kept))
    ref = vm.Simulator(model, 1e-3).reset(*start)
    for _ in range(1 + 3 + 1 + 1 + 1 + 4 + 1 + 2 + 1):
        ref.step(inputs=held)
    assert sim.steps == ref.steps
    for u, v in zip(sim.arrays(), ref.arrays()):
        assert np.array_equal(u, v)


def test_a_packed_step_unboxes_only_what_changes_per_step(model):
    sim = vm.Simulator(model, 1e-3).reset(*_start(model))
    held = sim.held_inputs(np.full(model.n, 0.1))
    sim.step(inputs=held)
    p = sim.stages.pack
    args = (p.table, p.tref, p.parity(sim.engine_state(), sim.spare_state()), sim.spec,
            sim.kernel_inputs(held), sim.prescribed_rows())
    assert sim.stages.k_packed(*args) == 0
    # the table, the spec's two arrays, the five inputs and three prescribed rows
    assert allocations(lambda: sim.stages.k_packed(*args)) == 1 + 2 + 5 + 3


def test_prescribed_motion_steps_through_the_records(model):
    """The prescribed joint rows are the user's arrays: the step passes them as records (no
    table), and the joints follow the motion."""
    def motion(t):
        return np.full(model.n, 0.1 * t), np.full(model.n, 0.1), np.zeros(model.n)
    sim = vm.Simulator(model, 1e-3, prescribed=motion)
    sim.reset(np.eye(4), np.zeros(model.b))
    warm_up_table = sim.stages.pack          # the set-up's, no step's
    for _ in range(3):
        sim.step()
    assert sim.stages.pack is warm_up_table
    assert np.allclose(sim.state.q, 0.1 * sim.t, rtol=0, atol=1e-15)
