"""Fuzzing the public dynamics API with hypothesis: one validation for every backend.

For every call of ``forward_dynamics``, ``inverse_dynamics``, ``frame_pose``,
``frame_jacobian``, ``mass_matrix``, ``energy``, ``momentum`` (and ``simulate`` with a short
``t_final``) on models with a floating (SE3), planar (SE2) and fixed base, with and without mimic
joints:

* documented-valid input of physical size (arrays, lists, tuples, int and float32 arrays,
  non-contiguous views) succeeds with finite output;
* valid input up to the documented limits (``MAX_COORDINATE`` for joint coordinates,
  ``MAX_MAGNITUDE`` for the rest) succeeds with finite output or raises a ``ValueError``
  naming an argument (a float overflow of the result), never a silent Inf/NaN;
* input with one argument corrupted (complex, string, object, bool arrays or bools among
  numbers, NaN/Inf, beyond the limit, wrong shape, None, wrong kind of frame) raises a
  ``ValueError`` whose message starts with that argument's name — and the default path
  (``backend="auto"``, the compiled kernels), the numpy kernels and the reference
  (``backend="lp"``) raise the very same message;
* never another exception (TypeError, MemoryError, ...) and never a RuntimeWarning.

Budget: the examples are fixed (``derandomize=True``) so a failure reproduces; about 3 000
calls in all, under a minute on a busy 2-core machine.  ``VM_HYPOTHESIS_EXAMPLES`` runs more
(e.g. 2000 per test for a soak).
"""
import math
import os
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from oracles import random_tree_urdf

import vm_dynamics as vm
from vm_dynamics.core.validation import MAX_COORDINATE, MAX_MAGNITUDE

N_EXAMPLES = int(os.environ.get("VM_HYPOTHESIS_EXAMPLES", "0")) or None


def budget(n):
    return settings(max_examples=N_EXAMPLES or n, deadline=None, derandomize=True,
                    database=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.generate])     # no shrinking: minutes here


MIMIC_URDF = """<?xml version="1.0"?>
<robot name="mimic_arm">
  <link name="base"><inertial><mass value="8"/><origin xyz="0 0 0.1"/>
    <inertia ixx="0.4" iyy="0.5" izz="0.6" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="a"><inertial><mass value="2"/><origin xyz="0.2 0 0"/>
    <inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><origin xyz="0.1 0 0"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="c"><inertial><mass value="0.5"/><origin xyz="0.05 0 0"/>
    <inertia ixx="0.004" iyy="0.005" izz="0.006" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="tip"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
    <origin xyz="0 0 0.2"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <joint name="j2" type="prismatic"><parent link="a"/><child link="b"/>
    <origin xyz="0.4 0 0"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="0.3" effort="10" velocity="1"/></joint>
  <joint name="j3" type="revolute"><parent link="b"/><child link="c"/>
    <origin xyz="0.2 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/>
    <mimic joint="j1" multiplier="0.5" offset="0.1"/></joint>
  <joint name="tip_fixed" type="fixed"><parent link="c"/><child link="tip"/>
    <origin xyz="0.1 0 0"/></joint>
</robot>
"""


@pytest.fixture(scope="module", params=["tree_SE3", "tree_fixed", "rover_SE2", "mimic_SE3"])
def model(request):
    if request.param == "rover_SE2":
        from vm_dynamics.config.scenario import load_scenario
        return load_scenario("planar_rover").model
    if request.param == "mimic_SE3":
        return vm.load_model(MIMIC_URDF)
    return vm.load_model(random_tree_urdf(seed=7), base=request.param.split("_")[1])


# ------------------------------------------------------------------------------ values
#: moderate floats: the documented-valid input of physical size
moderate = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)


def extreme(limit):
    """Finite floats spread log-uniformly up to ``limit`` in magnitude (limit included)."""
    def make(sign, e, mant):
        return sign * min(mant * 10.0 ** e, limit)
    return st.one_of(st.builds(make, st.sampled_from([-1.0, 1.0]), st.integers(-320, 101),
                               st.floats(1.0, 9.99)),
                     st.sampled_from([limit, -limit, 0.0, 5e-324]))


def vector_forms(x: np.ndarray):
    """Documented-valid spellings of the float vector x."""
    forms = [st.just(x), st.just(list(x)), st.just(tuple(float(v) for v in x)),
             st.just(np.repeat(x, 2)[::2])]            # a non-contiguous view
    if np.all(x == np.round(x)) and np.all(np.abs(x) < 2**62):
        forms.append(st.just([int(v) for v in x]))
    if np.all(np.abs(x) < 1e30):
        forms.append(st.just(x.astype(np.float32).astype(np.float64)
                             if np.any(x != x.astype(np.float32)) else x.astype(np.float32)))
    return st.one_of(forms)


@st.composite
def valid_vector(draw, n, limit, big):
    x = np.array(draw(st.lists(extreme(limit) if big else moderate, min_size=n, max_size=n)),
                 dtype=float)
    return draw(vector_forms(x))


@st.composite
def valid_pose(draw, big):
    quat = np.array(draw(st.lists(st.floats(-1, 1), min_size=4, max_size=4)))
    if np.linalg.norm(quat) < 0.1:
        quat = np.array([0.0, 0.0, 0.0, 1.0])
    p = draw(st.lists(extreme(MAX_MAGNITUDE) if big else moderate, min_size=3, max_size=3))
    g = vm.pose(p, quat / np.linalg.norm(quat))
    return draw(st.sampled_from([g, g.tolist(), np.asfortranarray(g)]))


def bad_vector(n, limit):
    """One corruption of an n-vector (each is a ValueError naming the argument)."""
    ok = [0.5] * n
    entries = st.integers(0, max(n - 1, 0))

    def with_entry(value):
        return entries.map(lambda i: [value if k == i else v for k, v in enumerate(ok)])
    cases = [
        st.just(np.full(n, 0.5) + 1j),                          # complex array
        st.just([complex(v, 1.0) for v in ok] or [1j]),         # complex list
        st.just("0.5"), st.just(b"\x00" * 8),                   # strings
        st.just(["0.5"] * max(n, 1)),                           # list of strings
        st.just(np.full(max(n, 1), 0.5, dtype=object)),         # object array
        st.just(np.ones(max(n, 1), dtype=bool)),                # bool array
        st.just([True] * max(n, 1)),                            # list of bools
        st.just({"q": ok}), st.just(object()),                  # not numbers at all
        st.just(np.zeros(n + 1)), st.just(np.zeros((1, n))),    # wrong shapes
        st.just([ok]), st.just(np.zeros((n, 2))),
        st.just([10**400] * max(n, 1)),                         # an int beyond the floats
    ]
    if n:
        cases += [with_entry(True), with_entry(np.bool_(False)), with_entry(math.nan),
                  with_entry(math.inf), with_entry(-math.inf), with_entry(limit * 10.0),
                  with_entry(-1e300), with_entry(1 + 2j), with_entry("1"), with_entry(None)]
    else:
        cases += [st.just(None)]
    return st.one_of(cases)


def bad_pose():
    g = np.eye(4)

    def setting(i, j, v):
        a = g.astype(object if isinstance(v, (str, complex)) else float).copy()
        a[i, j] = v
        return a
    return st.one_of([
        st.just(np.zeros((4, 4))), st.just(2.0 * g), st.just(np.eye(3)), st.just(np.eye(4)[:3]),
        st.just(g + 0j), st.just(g.astype(bool)), st.just(g.astype(object)), st.just("eye"),
        st.just(None), st.just([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, True]]),
        st.sampled_from([math.nan, math.inf, 1e101, -1e300]).flatmap(
            lambda v: st.integers(0, 2).map(lambda i: setting(i, 3, v))),
        st.sampled_from([math.nan, 1e101]).map(lambda v: setting(0, 0, v)),
        st.just(np.diag([1.0, 1.0, -1.0, 1.0])),                # a reflection
    ])


def bad_frame(m):
    f = m.frame_names[-1]
    return st.sampled_from([[f], (f,), None, 3, f.encode(), "no_such_frame", {f: 1}])


def bad_frame_wrenches(m):
    f = m.frame_names[-1]
    return st.one_of(st.sampled_from([[1.0] * 6, "w", {"no_such_frame": [0.0] * 6},
                                      {(f,): [0.0] * 6}]),
                     bad_vector(6, MAX_MAGNITUDE).map(lambda w: {f: w}))


# ------------------------------------------------------------------------------ functions
#: argument kinds: ("pose",), ("vec", size attribute or int, limit), ("frame",), ("fw",)
SIGNATURES = {
    "forward_dynamics": [("g", "pose"), ("V", "b"), ("q", "q"), ("qd", "n"), ("tau", "n"),
                         ("base_wrench", "b?"), ("frame_wrenches", "fw")],
    "inverse_dynamics": [("g", "pose"), ("V", "b"), ("q", "q"), ("qd", "n"), ("Vdot", "b"),
                         ("qdd", "n"), ("frame_wrenches", "fw")],
    "frame_pose": [("q", "q"), ("frame", "frame"), ("g", "pose?")],
    "frame_jacobian": [("q", "q"), ("frame", "frame")],
    "mass_matrix": [("q", "q")],
    "energy": [("g", "pose"), ("V", "b"), ("q", "q"), ("qd", "n")],
    "momentum": [("g", "pose"), ("V", "b"), ("q", "q"), ("qd", "n")],
}
BACKENDS = {"forward_dynamics": ("auto", "numpy", "lp"),
            "inverse_dynamics": ("auto", "numpy", "lp"),
            "frame_pose": ("auto", "numpy", "lp"), "mass_matrix": ("auto", "numpy", "lp")}


def valid_arg(m, kind, big):
    if kind.startswith("pose"):
        return valid_pose(big)
    if kind == "frame":
        return st.sampled_from(m.frame_names)
    if kind == "fw":
        w = valid_vector(6, MAX_MAGNITUDE, big)
        return st.one_of(st.none(), st.builds(lambda f, x: {f: x}, st.sampled_from(m.frame_names), w))
    size = m.b if kind.startswith("b") else m.n
    return valid_vector(size, MAX_COORDINATE if kind == "q" else MAX_MAGNITUDE, big)


def corrupt_arg(m, kind):
    if kind.endswith("?"):          # optional: None is its default, not a corruption
        return corrupt_arg(m, kind[:-1]).filter(lambda x: x is not None)
    if kind.startswith("pose"):
        return bad_pose()
    if kind == "frame":
        return bad_frame(m)
    if kind == "fw":
        return bad_frame_wrenches(m)
    size = m.b if kind.startswith("b") else m.n
    return bad_vector(size, MAX_COORDINATE if kind == "q" else MAX_MAGNITUDE)


def call(fn, kwargs):
    """('ok', result) or ('ValueError', message); any other exception or a RuntimeWarning
    propagates (a failure)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return "ok", fn(**kwargs)
        except ValueError as exc:
            return "ValueError", str(exc)


def finite(out):
    parts = out if isinstance(out, tuple) else (out,)
    return all(np.all(np.isfinite(np.asarray(p, dtype=float))) for p in parts)


def names(msg, arg):
    """Does the message start with the argument's name (``q: ...``, ``frame_wrenches['x']:``)?"""
    return re.match(rf"{re.escape(arg)}(\W|$)", msg) is not None


def names_any(msg, args):
    return any(re.search(rf"(^|\W){re.escape(a)}(\W|$)", msg) for a in args)


@pytest.mark.parametrize("fn", sorted(SIGNATURES))
def test_public_api_succeeds_finite_or_names_the_argument_same_on_every_backend(model, fn):
    m = model
    sig = SIGNATURES[fn]

    @budget(40)
    @given(st.data())
    def prop(data):
        bad = data.draw(st.sampled_from([None, None] + [a for a, _ in sig]), "corrupted")
        big = bad is None and data.draw(st.booleans(), "extreme values")
        kwargs = {}
        for arg, kind in sig:
            if arg == bad:
                kwargs[arg] = data.draw(corrupt_arg(m, kind), arg)
            elif kind.endswith("?") and data.draw(st.booleans(), f"{arg} left out"):
                continue
            else:
                kwargs[arg] = data.draw(valid_arg(m, kind, big), arg)
        outcomes = {}
        for backend in BACKENDS.get(fn, (None,)):
            kw = dict(kwargs) if backend is None else dict(kwargs, backend=backend)
            outcomes[backend] = call(getattr(m, fn), kw)
        kinds = {o[0] for o in outcomes.values()}
        if bad is not None:
            assert kinds == {"ValueError"}, (bad, outcomes)
            msgs = {o[1] for o in outcomes.values()}
            assert len(msgs) == 1, f"backends disagree: {outcomes}"
            msg = msgs.pop()
            assert names(msg, bad), f"{msg!r} does not name {bad}"
        elif not big:
            for backend, (k, out) in outcomes.items():
                assert k == "ok", f"{fn}({backend}) rejected valid input: {out}"
                assert finite(out), f"{fn}({backend}) returned NaN/Inf"
        else:
            for backend, (k, out) in outcomes.items():
                if k == "ok":
                    assert finite(out), f"{fn}({backend}) returned NaN/Inf silently"
                else:
                    assert names_any(out, [a for a, _ in sig]), (backend, out)

    prop()


# ------------------------------------------------------------------------------ simulate
def _returns(value):
    return lambda t, state: value


@budget(60)
@given(st.data())
def test_simulate_runs_finite_or_names_the_argument(data):
    m = vm.load_model(MIMIC_URDF) if data.draw(st.booleans(), "mimic") else _rover()
    n, b = m.n, m.b
    sig = [("g0", "pose"), ("V0", "b"), ("q0", "q"), ("qd0", "n"), ("t_final", "time"),
           ("dt", "time"), ("tau", "input"), ("base_wrench", "input_b")]
    bad = data.draw(st.sampled_from([None, None] + [a for a, _ in sig]), "corrupted")
    kwargs = {}
    for arg, kind in sig:
        if kind == "time":
            if arg == bad:
                kwargs[arg] = data.draw(st.sampled_from(
                    [True, 0, -1.0, math.nan, math.inf, 1j, "0.01", None, [0.01],
                     1e-300 if arg == "dt" else 1e7]), arg)
            else:
                kwargs[arg] = data.draw(st.sampled_from([0.004, 0.01, 0.02] if arg == "t_final"
                                                        else [0.002, 0.005, np.float32(0.01)]), arg)
        elif kind.startswith("input"):
            size = b if kind == "input_b" else n
            if arg == bad:
                wrong = bad_vector(size, MAX_MAGNITUDE)
                kwargs[arg] = data.draw(st.one_of(wrong, wrong.map(_returns),
                                                  st.just(_returns(None))), arg)
            elif data.draw(st.booleans(), f"{arg} given"):
                x = valid_vector(size, MAX_MAGNITUDE, False)
                kwargs[arg] = data.draw(st.one_of(x, x.map(_returns)), arg)
        elif arg == bad:
            kwargs[arg] = data.draw(corrupt_arg(m, kind), arg)
        else:
            kwargs[arg] = data.draw(valid_arg(m, kind, False), arg)
    k, out = call(vm.simulate, dict(kwargs, model=m))
    if bad is None:
        assert k == "ok", out
        assert len(out) >= 2 and finite((out.g, out.V, out.q, out.qd, out.tau))
    else:
        assert k == "ValueError", (bad, out)
        want = "t_final/dt" if bad in ("t_final", "dt") and "steps" in out else bad
        assert names(out, want) or names(out, bad), f"{out!r} does not name {bad}"


_ROVER = []


def _rover():
    if not _ROVER:
        from vm_dynamics.config.scenario import load_scenario
        _ROVER.append(load_scenario("planar_rover").model)
    return _ROVER[0]


def test_simulate_refuses_a_run_too_long_before_allocating_it():
    """t_final = 1e7 s at dt = 1e-3 s would allocate 74.5 GiB of samples; dt = 1e-300 an array
    numpy refuses: both are a ValueError naming t_final/dt and the limit, at once."""
    m = _rover()
    g, V, q, qd = np.eye(4), np.zeros(m.b), np.zeros(m.n), np.zeros(m.n)
    for t_final, dt in ((1e7, 1e-3), (1.0, 1e-300), (1.0, 5e-324)):
        with pytest.raises(ValueError, match=r"^t_final/dt: .* steps, more than "
                                             r"max_steps=2000000"):
            vm.simulate(m, g, V, q, qd, t_final, dt)
    assert vm.simulate(m, g, V, q, qd, 0.01, 1e-3, max_steps=10).t[-1] == 0.01
    with pytest.raises(ValueError, match=r"max_steps=9 "):
        vm.simulate(m, g, V, q, qd, 0.01, 1e-3, max_steps=9)


def test_pose_docstring_and_behaviour_agree():
    """vm.pose normalises a quaternion that is unit within QUAT_NORM_TOL and rejects one that
    is not (a typo such as [0, 0, 1, 1]); its docstring says so."""
    from vm_dynamics.core.rotations import QUAT_NORM_TOL
    assert "QUAT_NORM_TOL" in vm.pose.__doc__ and "normalised" in vm.pose.__doc__
    g = vm.pose([0, 0, 1], [0, 0, 0.7071068, 0.7071068])
    np.testing.assert_allclose(g[:3, :3].T @ g[:3, :3], np.eye(3), atol=1e-15)
    g = vm.pose([0, 0, 0], [0, 0, 0, 1 + 0.5 * QUAT_NORM_TOL])
    np.testing.assert_array_equal(g, np.eye(4))
    for quat in ([0, 0, 1, 1], [0, 0, 0, 2], [0, 0, 0, 0]):
        with pytest.raises(ValueError, match=r"^quaternion_xyzw: not a unit quaternion"):
            vm.pose([0, 0, 0], quat)


WEIRD = [["rkmk4"], {"a": 1}, 1.5, True, -1, "nope", b"rkmk4", np.array([1]), 1j, math.nan]


@pytest.mark.parametrize("arg", ["method", "formulation", "dynamics", "substeps", "record_every",
                                 "max_steps", "environment", "callback", "on_sample",
                                 "prescribed", "frame_wrenches"])
def test_simulate_options_of_the_wrong_kind_name_the_option(arg):
    """Every keyword option of simulate given a value of the wrong kind: a ValueError naming
    it (an environment that is not a Hydrodynamics was an AttributeError), or, where the
    value is one of the option's valid kinds, a finite run."""
    m = _rover()
    g, V, q, qd = np.eye(4), np.zeros(m.b), np.zeros(m.n), np.zeros(m.n)
    for value in WEIRD:
        k, out = call(vm.simulate, dict(model=m, g0=g, V0=V, q0=q, qd0=qd, t_final=0.004,
                                        dt=0.002, **{arg: value}))
        if k == "ok":
            assert finite((out.g, out.V, out.q, out.qd)), (arg, value)
        else:
            assert arg in out, (arg, value, out)


@pytest.mark.parametrize("form", ["array", "callable"])
@pytest.mark.parametrize("arg", ["tau", "base_wrench"])
def test_simulate_inputs_beyond_the_range_name_the_input(arg, form):
    """An effort or wrench beyond MAX_MAGNITUDE, held or returned by a callable, is the same
    ValueError as for the dynamics' functions (it ran into a nameless divergence)."""
    m = _rover()
    size = m.n if arg == "tau" else m.b
    value = np.full(size, 0.5)
    value[-1] = -1e300
    given = value if form == "array" else _returns(value)
    with pytest.raises(ValueError, match=rf"^{arg}: entries must not exceed 1e\+100"):
        vm.simulate(m, np.eye(4), np.zeros(m.b), np.zeros(m.n), np.zeros(m.n), 0.01, 0.002,
                    **{arg: given})
