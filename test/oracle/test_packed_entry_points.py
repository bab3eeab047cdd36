"""The public forward/inverse dynamics' compiled entry points with the model in one array
(``vm_dynamics.dynamics.fast.kernels.packed``).

Oracle: the record kernels ``kernels.forward_dynamics`` / ``inverse_dynamics`` (the ones the
simulation engine and the compiled control law call, themselves checked against Pinocchio in
test_fast_path.py and test_dynamics_vs_pinocchio.py), which the packed entry points must
reproduce bit for bit; and the public API's results for arrays of every accepted kind (a list,
float32, a non-contiguous or read-only view), which go through its full validation, must
equal those of the same values as plain float64 arrays.
"""
from __future__ import annotations

import copy
import threading

import numpy as np
import pytest
from conftest import gravity_for, make_oracle, our_model

from vm_dynamics.dynamics.fast import fast_model
from vm_dynamics.dynamics.fast import kernels as K

CASES = [("ur5", "SE3"), ("b1_z1", "SE3"), ("random_tree", "SE2"), ("panda", "fixed")]


def _states(robot, base, count, seed=5):
    grav = gravity_for(2)
    m = our_model(robot, base, grav)
    orc = make_oracle(robot, base, grav, joint_names=list(m.joint_names))
    rng = np.random.default_rng(seed)
    for _ in range(count):
        g, V, q, qd = (np.ascontiguousarray(x, dtype=float) for x in orc.random_state(rng))
        tau, qdd = rng.normal(size=m.n), rng.normal(size=m.n)
        bw, Vdot = rng.normal(size=m.b), rng.normal(size=m.b)
        yield m, g, V, q, qd, tau, qdd, bw, Vdot


@pytest.mark.parametrize("robot, base", CASES, ids=[f"{r}-{b}" for r, b in CASES])
def test_packed_entry_points_reproduce_the_record_kernels_bit_for_bit(robot, base):
    none_i, none_w = np.zeros(0, dtype=np.int64), np.zeros((0, 6))
    for m, g, V, q, qd, tau, qdd, bw, Vdot in _states(robot, base, 20):
        fm = fast_model(m)
        C, P = fm.kernel_constants, fm.packed_constants
        assert P is not None
        ref, got = np.empty(m.b + m.n), np.empty(m.b + m.n)
        for w in (bw, None):
            st = K.forward_dynamics(C, g, V, q, qd, tau, np.zeros(m.b) if w is None else w,
                                    none_i, none_w, ref)
            assert st == 0
            for entry in (K.packed.forward_dynamics, K.packed.forward_dynamics_checked):
                got[:] = np.nan
                assert entry(P, g, V, q, qd, tau, w, got) == 0
                assert np.array_equal(got, ref), entry
            Vd, a = m.forward_dynamics(g, V, q, qd, tau, w)
            assert np.array_equal(np.r_[Vd, a], ref)
        assert K.inverse_dynamics(C, g, V, q, qd, Vdot, qdd, none_i, none_w, ref) == 0
        for entry in (K.packed.inverse_dynamics, K.packed.inverse_dynamics_checked):
            got[:] = np.nan
            assert entry(P, g, V, q, qd, Vdot, qdd, got) == 0
            assert np.array_equal(got, ref), entry
        f, t = m.inverse_dynamics(g, V, q, qd, Vdot, qdd)
        assert np.array_equal(np.r_[f, t], ref)


def test_arm_only_packs_its_own_inertias():
    """The massless-vehicle copy's packed model is its own (vehicle inertia zero)."""
    for m, g, V, q, qd, tau, qdd, bw, Vdot in _states("ur5", "SE3", 3):
        arm = fast_model(m).arm_only()
        ref = np.empty(m.b + m.n)
        K.inverse_dynamics(arm.kernel_constants, g, V, q, qd, Vdot, qdd,
                           np.zeros(0, dtype=np.int64), np.zeros((0, 6)), ref)
        f, t = arm.inverse_dynamics(g, V, q, qd, Vdot, qdd)
        assert np.array_equal(np.r_[f, t], ref)
        assert not np.array_equal(ref, np.r_[m.inverse_dynamics(g, V, q, qd, Vdot, qdd)])


def _kinds(x):
    """The same values as every other accepted kind of argument: a list, a non-contiguous
    view, a read-only array, a Fortran-ordered array."""
    nc = np.empty((x.shape[0] * 2,) + x.shape[1:])[::2]
    nc[...] = x
    ro = x.copy()
    ro.setflags(write=False)
    return [x.tolist(), nc, ro, np.asfortranarray(x)]


def test_public_api_same_result_for_every_kind_of_array():
    """Arguments that are not float64 C-contiguous writeable arrays take the full validation
    (the compiled dispatcher rejects their type); the result is the same bit for bit."""
    for m, g, V, q, qd, tau, qdd, bw, Vdot in _states("ur5", "SE3", 3):
        for call, args in ((m.forward_dynamics, [g, V, q, qd, tau, bw]),
                           (m.inverse_dynamics, [g, V, q, qd, Vdot, qdd])):
            ref = np.r_[call(*args)]
            for i, x in enumerate(args):
                for y in _kinds(x):
                    a = list(args)
                    a[i] = y
                    assert np.array_equal(np.r_[call(*a)], ref), (call.__name__, i)


@pytest.mark.parametrize("bad, msg", [
    (("q", np.zeros(5)), "q: expected shape (6,)"),
    (("tau", np.zeros((6, 1))), "tau: expected shape (6,)"),
    (("V", np.full(6, np.nan)), "V: contains NaN or Inf"),
    (("g", np.diag([1.0, 1.0, -1.0, 1.0])), "g: not a rigid transform"),
    (("qd", np.zeros(6, dtype=bool)), "qd: expected real numbers, got booleans"),
])
def test_public_api_bad_input_names_the_argument(bad, msg):
    """Wrong shapes (status WRONG_SHAPE of the packed entry point), values out of range and
    wrong kinds (rejected by the dispatcher) all end in the full validation's message."""
    m, g, V, q, qd, tau, qdd, bw, Vdot = next(_states("ur5", "SE3", 1))
    kw = dict(g=g, V=V, q=q, qd=qd, tau=tau)
    kw[bad[0]] = bad[1]
    with pytest.raises(ValueError) as exc:
        m.forward_dynamics(**kw)
    assert str(exc.value).startswith(msg), str(exc.value)


def test_concurrent_calls_do_not_share_a_workspace():
    """The kernels release the GIL; each call allocates its own workspace, so threads calling
    the same model at once get the single-threaded results."""
    states = list(_states("b1_z1", "SE3", 8))
    m = states[0][0]
    refs = [np.r_[m.forward_dynamics(*s[1:6])] for s in states]
    fast = m.fast
    errors = []

    def work(k):
        out = fast.output()
        for _ in range(300):
            for s, ref in zip(states[k::2], refs[k::2]):
                if not np.array_equal(np.r_[m.forward_dynamics(*s[1:6])], ref) or \
                        not np.array_equal(fast.forward_dynamics(*s[1:6], out), ref):
                    errors.append(k)
    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors


@pytest.mark.parametrize("backend", [["auto"], 3, None, {"auto": 1}])
def test_backend_of_another_kind_is_named_after_a_cached_call(backend):
    """The model's one-look-up cache of its fast path (Model._fast) still names a backend that
    is not a string, hashable or not, after the default backend was cached."""
    m, g, V, q, qd, tau, qdd, bw, Vdot = next(_states("ur5", "SE3", 1))
    m.forward_dynamics(g, V, q, qd, tau)
    with pytest.raises(ValueError, match=r"^backend: expected"):
        m.forward_dynamics(g, V, q, qd, tau, backend=backend)
    with pytest.raises(ValueError, match=r"^backend: expected"):
        m.inverse_dynamics(g, V, q, qd, Vdot, qdd, backend=backend)


def test_public_inline_call_serves_only_the_model_that_cached_it():
    """The public call runs its common case inline from the model's cached tuple
    (Model._fast_auto), which copy.copy carries into copies: a copy with other inertias and the
    same gravity array (with_added_vehicle_inertia, with_attached_body), and a model whose
    gravity was replaced, must each get their own results — those of their own FastModel —
    and not the cached model's."""
    m, g, V, q, qd, tau, qdd, bw, Vdot = next(_states("ur5", "SE3", 1))
    ref_id = np.r_[m.inverse_dynamics(g, V, q, qd, Vdot, qdd)]     # caches the inline call
    ref_fd = np.r_[m.forward_dynamics(g, V, q, qd, tau)]
    frame = m.frame_names[-1]
    heavy = m.with_added_vehicle_inertia(np.diag([5.0, 5.0, 5.0, 1.0, 1.0, 1.0]))
    loaded = m.with_attached_body(frame, np.diag([2.0, 2.0, 2.0, 0.1, 0.1, 0.1]))
    moon = copy.copy(m)
    moon.gravity = np.array([0.0, 0.0, -1.62])
    for other in (heavy, loaded, moon):
        assert other.gravity is m.gravity or other is moon
        own = fast_model(other)
        got_id = np.r_[other.inverse_dynamics(g, V, q, qd, Vdot, qdd)]
        got_fd = np.r_[other.forward_dynamics(g, V, q, qd, tau)]
        assert np.array_equal(got_id, np.r_[own.inverse_dynamics(g, V, q, qd, Vdot, qdd)])
        assert np.array_equal(got_fd, np.r_[own.forward_dynamics(g, V, q, qd, tau)])
        assert not np.array_equal(got_id, ref_id) and not np.array_equal(got_fd, ref_fd)
    # the cached model itself: unchanged, and its other paths (frame wrenches, backend) intact
    assert np.array_equal(np.r_[m.inverse_dynamics(g, V, q, qd, Vdot, qdd)], ref_id)
    fw = {frame: np.ones(6)}
    assert not np.array_equal(np.r_[m.inverse_dynamics(g, V, q, qd, Vdot, qdd, fw)], ref_id)
    lp = np.r_[m.inverse_dynamics(g, V, q, qd, Vdot, qdd, backend="lp")]
    assert np.allclose(lp, ref_id, rtol=1e-9, atol=1e-9 * np.abs(ref_id).max())
