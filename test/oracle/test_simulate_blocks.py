"""``vm.simulate`` with held inputs or a controller's compiled law runs the steps in compiled
blocks of several hundred steps: a run spanning several blocks gives, bit for bit, the samples of
the same run taken one sample at a time (a callback forces that), and stops at the sample its
callback asks for.  Oracle: the one-sample-at-a-time path of the same engine (itself checked
against Pinocchio/MuJoCo and DOP853 in test_simulate.py and test_engine.py)."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import gravity_for, our_model

import vm_dynamics as vm

T_FINAL = 1.2345        # 1235 steps of 1 ms: several compiled blocks and a partial one


def test_held_inputs_in_several_blocks_equal_one_sample_at_a_time():
    m = our_model("ur5", "SE3", gravity_for(0))
    rng = np.random.default_rng(8)
    args = (m, np.eye(4), 0.1 * rng.normal(size=6), rng.uniform(-1, 1, m.n), np.zeros(m.n),
            T_FINAL, 1e-3)
    kw = dict(tau=0.2 * np.ones(m.n), base_wrench=np.r_[1.0, 0, 0, 0, 0.5, 0])
    blocks = vm.simulate(*args, **kw)
    one_by_one = vm.simulate(*args, callback=lambda s: False, **kw)
    assert len(blocks) == 1236
    for key in ("t", "g", "V", "q", "qd", "tau", "base_wrench", "work", "abs_work"):
        np.testing.assert_array_equal(getattr(blocks, key), getattr(one_by_one, key),
                                      err_msg=key)
    stopped = vm.simulate(*args, callback=lambda s: s.t >= 1.0005, **kw)
    assert stopped.stopped and stopped.t[-1] == pytest.approx(1.001)
    np.testing.assert_array_equal(stopped.q, blocks.q[:len(stopped)])


def test_compiled_law_in_several_blocks_equals_the_python_stages():
    """Computed torque at every stage: the compiled law's blocks against the same law
    evaluated by Python at every stage (its inputs wrapped in plain callables)."""
    from vm_dynamics.control import get_controller
    from vm_dynamics.control.references import reference_from_config
    m = our_model("ur5", "SE3", gravity_for(0))
    rng = np.random.default_rng(9)
    g, V, q, qd = np.eye(4), 0.1 * rng.normal(size=6), rng.uniform(-1, 1, m.n), np.zeros(m.n)
    ctrl = get_controller("computed_torque", {"mode": "free_floating", "kp": 25, "kd": 10})
    ctrl.reset(m, vm.State(0.0, g, V, q, qd))
    ref = reference_from_config({"joint": {"type": "waypoints", "times": [0.0, 1.0],
                                           "positions": [list(q), list(q + 0.3)]}})
    tau_fn, bw_fn = ctrl.inputs(ref)
    compiled = vm.simulate(m, g, V, q, qd, T_FINAL, 1e-3, tau=tau_fn, base_wrench=bw_fn)
    assert compiled.meta["compiled_law"] == "computed_torque"
    python = vm.simulate(m, g, V, q, qd, T_FINAL, 1e-3, tau=lambda t, s: tau_fn(t, s),
                         base_wrench=lambda t, s: bw_fn(t, s))
    assert python.meta["compiled_law"] is None
    for key in ("q", "qd", "V", "tau"):
        a, b = getattr(compiled, key), getattr(python, key)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * max(1.0, np.abs(b).max()),
                                   err_msg=key)
