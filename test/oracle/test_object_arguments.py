"""Entry points that take their arguments as Python objects and check their kind in compiled
code (``vm_dynamics.dynamics.fast.kernels.objects``, ``kernels.packed.*_objects`` / ``*_into``,
``dynamics.fast.calls``).

Oracles: the dispatcher-called packed entry points (``*_checked``, themselves checked bit for
bit against the record kernels in test_packed_entry_points.py), which these must reproduce bit
for bit on float64 arrays; and numpy's own description of an argument (dtype, dimensions,
flags), by which every other kind of argument must be refused — status ``WRONG_KIND``, a
``TypeError`` on ``model.fast`` — without its memory being read as float64.
"""
from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest
from conftest import gravity_for, make_oracle, our_model

from vm_dynamics.dynamics.fast import calls, fast_model
from vm_dynamics.dynamics.fast import kernels as K
from vm_dynamics.dynamics.fast.kernels import objects

pytestmark = pytest.mark.skipif(not K.NUMBA, reason="numba entry points")


def _state(robot="ur5", base="SE3", seed=3):
    grav = gravity_for(2)
    m = our_model(robot, base, grav)
    orc = make_oracle(robot, base, grav, joint_names=list(m.joint_names))
    rng = np.random.default_rng(seed)
    g, V, q, qd = (np.ascontiguousarray(x, dtype=float) for x in orc.random_state(rng))
    return m, g, V, q, qd, rng.normal(size=m.n), rng.normal(size=m.b), rng.normal(size=m.n)


def test_the_array_header_layout_is_verified_here():
    """On 64-bit CPython (this test environment) the header layout holds, so the object
    entry points are the ones bound."""
    if sys.implementation.name == "cpython" and sys.maxsize == 2 ** 63 - 1:
        assert objects.LAYOUT_OK
        assert calls.object_entries(K.packed) is not None


@pytest.mark.parametrize("robot, base", [("ur5", "SE3"), ("b1_z1", "SE3"),
                                         ("random_tree", "SE2"), ("panda", "fixed")])
def test_object_entry_points_reproduce_the_dispatcher_ones_bit_for_bit(robot, base):
    m, g, V, q, qd, tau, bw, qdd = _state(robot, base)
    P = fast_model(m).packed_constants
    fdo, ido, fdi, idi = calls.object_entries(K.packed)
    ref, got = np.empty(m.b + m.n), np.empty(m.b + m.n)
    assert K.packed.forward_dynamics_checked(P, g, V, q, qd, tau, bw, ref) == 0
    assert fdo(P, g, V, q, qd, tau, bw, got) == 0
    assert np.array_equal(got, ref)
    got[:] = np.nan
    assert fdi(P, g, V, q, qd, tau, bw, got) is got and np.array_equal(got, ref)
    assert K.packed.inverse_dynamics_checked(P, g, V, q, qd, bw, qdd, ref) == 0
    got[:] = np.nan
    assert ido(P, g, V, q, qd, bw, qdd, got) == 0
    assert np.array_equal(got, ref)
    got[:] = np.nan
    assert idi(P, g, V, q, qd, bw, qdd, got) is got and np.array_equal(got, ref)


def _other_kinds(x):
    """Arguments that must not be read as this float64 array: other dtypes, other
    dimensions, non-contiguous, not an array at all, an ndarray subclass."""
    nc = np.empty((x.shape[0] * 2,) + x.shape[1:])[::2]
    nc[...] = x
    return [x.astype(np.int64), x.astype(np.float32), x.astype(bool), x.astype(">f8"),
            x[None], x.reshape(-1, 1) if x.ndim == 1 else x.ravel(), nc, x.tolist(), None,
            3.0, "abc", x.view(np.recarray), np.asfortranarray(x) if x.ndim == 2 else nc]


def test_every_other_kind_of_argument_is_refused():
    m, g, V, q, qd, tau, bw, qdd = _state()
    P = fast_model(m).packed_constants
    fdo, ido, fdi, idi = calls.object_entries(K.packed)
    out = np.empty(m.b + m.n)
    for entry, args in ((fdo, [P, g, V, q, qd, tau, bw, out]), (ido, [P, g, V, q, qd, bw, qdd, out])):
        for i in range(1, 8):
            for bad in _other_kinds(args[i]):
                a = list(args)
                a[i] = bad
                out[:] = 7.0
                assert entry(*a) == K.packed.WRONG_KIND, (entry, i, type(bad), getattr(bad, "dtype", None))
                assert np.all(out == 7.0) or i == 7
    ro = out.copy()
    ro.setflags(write=False)
    assert ido(P, g, V, q, qd, bw, qdd, ro) == K.packed.WRONG_KIND    # out must be writeable
    for entry, args in ((fdi, [P, g, V, q, qd, tau, bw, out]), (idi, [P, g, V, q, qd, bw, qdd, out])):
        for i in (1, 3, 7):
            a = list(args)
            a[i] = args[i].astype(np.int64)
            with pytest.raises(TypeError, match="float64 C-contiguous"):
                entry(*a)
            a[i] = args[i][:-1] if args[i].ndim == 1 else args[i][:3]
            with pytest.raises(ValueError, match="wrong length"):
                entry(*a)


def test_read_only_inputs_and_equal_dtypes_are_read():
    """A read-only input (never written) and a float64 array whose dtype object is not
    numpy's own (an unpickled array) are read, with the same results."""
    m, g, V, q, qd, tau, bw, qdd = _state()
    ref = np.r_[m.inverse_dynamics(g, V, q, qd, bw, qdd)]
    ro = q.copy()
    ro.setflags(write=False)
    other = pickle.loads(pickle.dumps(qd))
    P = fast_model(m).packed_constants
    ido = calls.object_entries(K.packed)[1]
    out = np.empty(m.b + m.n)
    assert ido(P, g, V, ro, other, bw, qdd, out) == 0
    assert np.array_equal(out, ref)
    assert np.array_equal(m.fast.inverse_dynamics(g, V, ro, other, bw, qdd, out), ref)


def test_public_calls_keep_returning_fresh_arrays_and_fall_back_on_other_kinds():
    m, g, V, q, qd, tau, bw, qdd = _state()
    a = m.inverse_dynamics(g, V, q, qd, bw, qdd)
    b = m.inverse_dynamics(g, V, q, qd, bw, qdd)
    assert not np.shares_memory(a[0], b[0]) and not np.shares_memory(a[1], b[1])
    assert np.array_equal(np.r_[a], np.r_[m.inverse_dynamics(g, V, q.tolist(), qd, bw, qdd)])
    assert np.array_equal(np.r_[m.inverse_dynamics(g, V, q.astype(np.float32), qd, bw, qdd)],
                          np.r_[m.inverse_dynamics(g, V, q.astype(np.float32).astype(float),
                                                   qd, bw, qdd)])
    with pytest.raises(ValueError, match="qd: expected real numbers"):
        m.inverse_dynamics(g, V, q, qd.astype(bool), bw, qdd)
    with pytest.raises(ValueError, match=r"q: expected shape"):
        m.forward_dynamics(g, V, q[:-1], qd, tau)


def test_returning_out_keeps_its_reference_count():
    m, g, V, q, qd, tau, bw, qdd = _state()
    fast = m.fast
    out = fast.output()
    fast.inverse_dynamics(g, V, q, qd, bw, qdd, out)
    fast.forward_dynamics(g, V, q, qd, tau, out)
    before = sys.getrefcount(out)
    for _ in range(1000):
        fast.inverse_dynamics(g, V, q, qd, bw, qdd, out)
        fast.forward_dynamics(g, V, q, qd, tau, out, base_wrench=bw)
    assert sys.getrefcount(out) == before


def test_fast_path_takes_keyword_arguments():
    """``out=`` (numpy's convention) and the other parameters by name, as the methods that
    the instance's calls shadow."""
    m, g, V, q, qd, tau, bw, qdd = _state()
    fast = m.fast
    out, ref = fast.output(), fast.output()
    fast.inverse_dynamics(g, V, q, qd, bw, qdd, ref)
    assert fast.inverse_dynamics(g=g, V=V, q=q, qd=qd, Vdot=bw, qdd=qdd, out=out) is out
    assert np.array_equal(out, ref)
    fast.forward_dynamics(g, V, q, qd, tau, ref, bw)
    assert fast.forward_dynamics(g, V, q, qd, tau=tau, out=out, base_wrench=bw) is out
    assert np.array_equal(out, ref)
