"""Property-based tests (hypothesis) of the numeric API and of the scenario / CLI validation.

The properties (issue 14): for *any* input -- any magnitude, NaN, Inf, wrong shape, wrong type --
a function either returns finite values of the documented shape or raises ``ValueError`` /
``TypeError`` whose message names the culprit (the argument, parameter or option).  No
``OverflowError``, ``IndexError``, ``ZeroDivisionError``, ``RuntimeWarning`` or silent NaN/Inf.

Budget: examples per test are fixed (``derandomize=True``: the same cases on every run, so a
failure reproduces) and the whole file runs in well under a minute on one core.  Set
``VM_HYPOTHESIS_EXAMPLES`` to run more (e.g. 5000 for a soak).
"""
import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp  # noqa: E402

import vm_dynamics as vm  # noqa: E402
from vm_dynamics.app import cli
from vm_dynamics.config.scenario import load_scenario  # noqa: E402
from vm_dynamics.control.references import reference_from_config  # noqa: E402
from vm_dynamics.core import lie  # noqa: E402
from vm_dynamics.core.validation import MAX_COORDINATE, MAX_MAGNITUDE  # noqa: E402

N = int(os.environ.get("VM_HYPOTHESIS_EXAMPLES", "0")) or None


def budget(n):
    return settings(max_examples=N or n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.function_scoped_fixture])


# ---------------------------------------------------------------------------- strategies
#: floats over the whole range: 0, subnormals, 1e-300 .. 1e308, NaN, ±Inf
any_float = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True, width=64)
#: magnitudes spread log-uniformly (hypothesis' float strategy favours small values)
log_float = st.builds(lambda s, e, m: s * m * 10.0 ** e, st.sampled_from([-1.0, 1.0]),
                      st.integers(-320, 308), st.floats(1.0, 9.99))
number = st.one_of(any_float, log_float, st.integers(-10**30, 10**30))


def arrays_near(shape):
    """Mostly the right shape with extreme entries; sometimes a wrong shape or dtype."""
    right = hnp.arrays(np.float64, shape, elements=st.one_of(any_float, log_float))
    wrong_shape = hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=7),
                             elements=st.floats(-10, 10))
    wrong_kind = st.one_of(hnp.arrays(np.bool_, shape), hnp.arrays(np.complex128, shape,
                           elements=st.complex_numbers(max_magnitude=10)),
                           st.just("abc"), st.none(), st.lists(st.text(max_size=3), max_size=4))
    return st.one_of(right, right, right, wrong_shape, wrong_kind)


def _finite(x):
    return all(np.all(np.isfinite(np.asarray(a, dtype=float)))
               for a in (x if isinstance(x, tuple) else (x,)))


def check_outcome(fn, names, *args, **kwargs):
    """Call ``fn``; it must return finite values or raise ValueError/TypeError naming one of
    ``names``; a RuntimeWarning (overflow/invalid) is a failure too."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            out = fn(*args, **kwargs)
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            assert any(n in msg for n in names), f"{fn.__name__}: {msg!r} names none of {names}"
            return None
    assert _finite(out), f"{fn.__name__} returned NaN/Inf for {args}"
    return out


# ---------------------------------------------------------------------------- lie
LIE = {"skew": ("w", (3,)), "so3_exp": ("w", (3,)), "so3_left_jacobian": ("w", (3,)),
       "so3_left_jacobian_inv": ("w", (3,)), "hat": ("V", (6,)), "se3_exp": ("V", (6,)),
       "ad": ("V", (6,)), "coad": ("V", (6,)), "dexp": ("V", (6,)), "dexp_inv": ("V", (6,)),
       "unskew": ("W", (3, 3)), "so3_log": ("R", (3, 3)), "vee": ("X", (4, 4)),
       "se3_log": ("g", (4, 4)), "se3_inv": ("g", (4, 4)), "Ad": ("g", (4, 4)),
       "Ad_inv": ("g", (4, 4))}


@pytest.mark.parametrize("fn", sorted(LIE))
def test_lie_functions_return_finite_values_or_name_their_argument(fn):
    name, shape = LIE[fn]

    @budget(150)
    @given(arrays_near(shape))
    def prop(x):
        out = check_outcome(getattr(lie, fn), [f"{name}: "], x)
        if out is not None:
            assert isinstance(out, np.ndarray) and out.ndim >= 1

    prop()


@budget(300)
@given(st.lists(log_float, min_size=3, max_size=3))
def test_so3_exp_is_a_rotation_or_a_clean_error(w):
    R = check_outcome(lie.so3_exp, ["w: "], w)
    if R is not None:
        np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-13)
        assert abs(np.linalg.det(R) - 1.0) < 1e-13


@budget(200)
@given(arrays_near((3,)), arrays_near((4,)))
def test_pose_from_position_and_quaternion(p, quat):
    g = check_outcome(vm.pose, ["position: ", "quaternion_xyzw: "], p, quat)
    if g is not None:
        np.testing.assert_allclose(g[:3, :3].T @ g[:3, :3], np.eye(3), atol=1e-12)


# ---------------------------------------------------------------------------- model API
@pytest.fixture(scope="module")
def rover():
    return load_scenario("planar_rover").model


#: Entries the model API must handle: extreme values of moderate size (finite, |x| <= 1e6;
#: beyond that see test_model_api_beyond_physical_magnitudes), NaN and Inf.
model_float = st.one_of(st.floats(-1e6, 1e6), st.sampled_from([math.nan, math.inf, -math.inf]))


def model_vec(n):
    return st.one_of(hnp.arrays(np.float64, n, elements=model_float),
                     hnp.arrays(np.float64, n, elements=st.floats(-1, 1)),
                     hnp.arrays(np.float64, n + 1, elements=st.floats(-1, 1)), st.just("x"))


@budget(60)
@given(st.data())
def test_model_api_returns_finite_values_or_names_the_argument(rover, data):
    m = rover
    q = data.draw(model_vec(m.n), "q")
    qd = data.draw(model_vec(m.n), "qd")
    V = data.draw(model_vec(m.b), "V")
    tau = data.draw(model_vec(m.n), "tau")
    g = np.eye(4)
    check_outcome(m.mass_matrix, ["q"], q)
    check_outcome(m.energy, ["g", "V", "q", "qd"], g, V, q, qd)
    check_outcome(m.momentum, ["g", "V", "q", "qd"], g, V, q, qd)
    check_outcome(m.forward_dynamics, ["g", "V", "q", "qd", "tau"], g, V, q, qd, tau)


@pytest.mark.parametrize("big", [1e50, 1.0000001e50, 1e100, 1.0000001e100, 1e150, 1e200, 1e308])
def test_model_api_beyond_physical_magnitudes(rover, big):
    """Up to MAX_MAGNITUDE (1e100; joint coordinates MAX_COORDINATE, 1e50) the results are
    finite; beyond it the argument is named."""
    m = rover
    g, V, q, qd = np.eye(4), np.zeros(m.b), np.zeros(m.n), np.zeros(m.n)
    for name, fn, args in (
            ("q", m.mass_matrix, (np.full(m.n, big),)),
            ("qd", m.energy, (g, V, q, np.full(m.n, big))),
            ("V", m.energy, (g, np.full(m.b, big), q, qd)),
            ("q", m.energy, (g, V, np.full(m.n, big), qd)),
            ("qd", m.momentum, (g, V, q, np.full(m.n, big))),
            ("tau", m.forward_dynamics, (g, V, q, qd, np.full(m.n, big)))):
        out = check_outcome(fn, [name], *args)
        limit = MAX_COORDINATE if name == "q" else MAX_MAGNITUDE
        if big <= limit:        # within the documented range: a finite result
            assert out is not None, (name, fn.__name__, big)
        else:                   # beyond it: rejected, on the O(n) path as on the reference
            assert out is None, (name, fn.__name__, big)


# ---------------------------------------------------------------------------- references
joint_cfg = st.fixed_dictionaries({
    "type": st.sampled_from(["waypoints", "sinusoid", "setpoint", "bogus", 3]),
    "times": st.one_of(st.lists(number, max_size=4), st.just("abc")),
    "positions": st.one_of(st.lists(st.lists(number, min_size=2, max_size=2), max_size=4),
                           st.lists(number, max_size=8)),
    "q0": st.lists(number, min_size=2, max_size=3), "amplitude": number, "frequency": number,
    "q": st.lists(number, min_size=1, max_size=3)})
pose_cfg = st.fixed_dictionaries({
    "type": st.sampled_from(["setpoint", "waypoints", "nope"]),
    "pose": st.fixed_dictionaries({"position": st.lists(number, min_size=2, max_size=4),
                                   "orientation": st.lists(number, min_size=3, max_size=5)}),
    "times": st.lists(number, max_size=3)})


@budget(150)
@given(st.one_of(st.fixed_dictionaries({"joint": joint_cfg}),
                 st.fixed_dictionaries({"base": pose_cfg}),
                 st.dictionaries(st.text(max_size=4), st.integers(), max_size=2)),
       st.one_of(st.floats(0, 100), any_float))
def test_reference_config_is_built_and_evaluated_or_rejected_with_its_key(cfg, t):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            ref = reference_from_config(cfg)
        except (ValueError, TypeError) as exc:
            assert "reference" in str(exc) or any(k in str(exc) for k in
                                                  ("times", "positions", "q0", "amplitude",
                                                   "frequency", "phase", "pose", "position",
                                                   "orientation", "type", "q:")), str(exc)
            return
        for part in (ref.joint, ref.base):
            if part is None or not math.isfinite(t):
                continue
            try:
                out = part(t)
            except ValueError as exc:
                assert str(exc), "an empty error message names nothing"
                continue
            assert all(np.all(np.isfinite(np.asarray(a))) for a in out), (cfg, t, out)


# ---------------------------------------------------------------------------- scenario / CLI
#: Scenario parameters and values to throw at them: each failure must name the parameter.
PARAMS = {
    "dt": number, "duration": number,
    "integrator": st.one_of(st.sampled_from(["rkmk4", "lie_euler", "dopri5", "rk45"]), number),
    "initial.joint_positions": st.lists(number, max_size=4),
    "initial.joint_velocities": st.lists(number, max_size=4),
    "initial.base_position": st.lists(number, max_size=4),
    "initial.base_orientation": st.lists(number, max_size=5),
    "initial.base_twist": st.lists(number, max_size=7),
    "initial": st.one_of(st.lists(number, max_size=3), st.text(max_size=5)),
    "input.type": st.sampled_from(["none", "constant", "sinusoid", "bogus"]),
    "input.effort": st.one_of(st.lists(number, max_size=3), st.text(max_size=3)),
    "input.amplitude": st.lists(number, max_size=3),
    "input.frequency": number,
    "controller.kp": st.one_of(number, st.text(max_size=4), st.lists(number, max_size=3)),
    "controller.kd": st.one_of(number, st.lists(number, max_size=3)),
    "controller.mode": st.sampled_from(["free_floating", "actuated_base", "sideways"]),
    "controller.name": st.sampled_from(["computed_torque", "pd_gravity", "nope"]),
    "gravity": st.lists(number, max_size=4),
}


def _names_culprit(msg, keys):
    """Does ``msg`` name one of the overridden parameters (or its section)?"""
    for k in keys:
        top = k.split(".")[0]
        leaf = k.split(".")[-1]
        if k in msg or (leaf in msg and top in msg) or msg.startswith(top) \
                or (top == "controller" and (leaf in msg or "controller" in msg)):
            return True
    return False


@budget(120)
@given(st.dictionaries(st.sampled_from(sorted(PARAMS)), st.none(), min_size=1, max_size=3)
       .flatmap(lambda d: st.fixed_dictionaries({k: PARAMS[k] for k in d})))
def test_scenario_values_are_accepted_or_rejected_naming_the_parameter(tmp_path_factory,
                                                                       overrides):
    out = tmp_path_factory.mktemp("o")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            scn = load_scenario("planar_rover", overrides)
            cli.prepare_run(scn, None, str(out), 100.0, False, False,
                         {k.split(".", 1)[1] for k in overrides if k.startswith("controller.")})
        except (ValueError, TypeError, cli.UsageError) as exc:
            msg = str(exc).splitlines()[0]
            assert _names_culprit(msg, overrides), f"{msg!r} names none of {sorted(overrides)}"


option_value = st.one_of(st.sampled_from(["inf", "-inf", "nan", "0", "-1", "1e-300", "1e300",
                                          "abc", "", "5", "0.001", "1e-3"]),
                         log_float.map(repr))


@budget(80)
@given(st.lists(st.tuples(st.sampled_from(["--dt", "--duration", "--record-rate",
                                           "--joint-positions", "--base-orientation", "-p"]),
                          option_value), min_size=1, max_size=3))
def test_cli_options_fail_with_one_line_naming_the_option(tmp_path_factory, capsys, opts):
    argv = ["planar_rover", "--out", str(tmp_path_factory.mktemp("o")), "--no-plots", "--quiet"]
    for flag, value in opts:
        argv += [flag, f"dt:={value}" if flag == "-p" else value]
    # validation only: a run that passes every check is not started
    real_execute = cli.execute_run
    cli.execute_run = lambda run, log: {"diverged": False, "interrupted": False}
    try:
        rc = cli.main(argv)
    finally:
        cli.execute_run = real_execute
    err = capsys.readouterr().err
    if rc == 0:
        return
    assert rc == 2 and err.count("\n") == 1 and err.startswith("vm-sim: error: "), err
    flags = {f for f, _ in opts}
    names = set(flags) | {"dt", "duration", "initial.", "argument"}
    assert any(n in err for n in names), err
