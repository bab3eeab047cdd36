"""A compiled rollout is its single steps, bit for bit.

``Simulator.run`` and ``Simulator.run_law`` take the first stage of every step after the first
from the end of the step before (its kinematics, momentum terms and velocity are already in the
workspace: :func:`vm_dynamics.sim.kernels._stage_resume`), where ``Simulator.step`` computes it
from the state.  Both must give exactly the same numbers: every state, the work accounts and the
law's efforts, for every formulation, with force elements (conservative and not), external
wrenches and inputs, on a chain and on a tree, on SE(3) and SE(2).
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import our_model
from urdf_factory import random_tree_urdf

import vm_dynamics as vm
from vm_dynamics.control import get_controller
from vm_dynamics.control.inputs import compiled_law_of
from vm_dynamics.control.references import reference_from_config
from vm_dynamics.dynamics import fast
from vm_dynamics.forces import Spring
from vm_dynamics.forces.hydrodynamics import LinkBuoyancy

pytestmark = pytest.mark.skipif(not fast.numba_available(), reason="numba not installed")

FORMS = ["spatial_momentum", "body_momentum", "velocity"]
STEPS = 25


def _state(model, seed):
    rng = np.random.default_rng(seed)
    g = vm.lie.se3_exp(np.r_[rng.normal(size=3), rng.uniform(-2, 2, 3)])
    if model.b == 3:
        g = vm.lie.se3_exp(np.r_[rng.normal(size=2), 0.0, 0.0, 0.0, rng.uniform(-2, 2)])
    return g, rng.normal(size=model.b), 0.5 * rng.normal(size=model.n), rng.normal(size=model.n)


def _ur5():
    return our_model("ur5", "SE3", (0.0, 0.0, -9.81))


def _forces():
    return [Spring("wrist_2_link", [0.05, -0.02, 0.1], [0.4, -0.3, 0.9], 120.0),
            LinkBuoyancy("forearm_link", 3.0, [0.0, 0.01, 0.05])]


def _steps(sim, state, steps, inputs):
    """``steps`` calls of ``sim.step``: the rows ``run`` returns, and the work after each."""
    sim.reset(*state)
    rows, work = [], []
    for _ in range(steps):
        sim.step(inputs=inputs)
        t, g, V, q, qd = sim.arrays()
        rows.append((t, g.copy(), V.copy(), q.copy(), qd.copy()))
        work.append((sim.work, sim.abs_work))
    return [np.array([r[i] for r in rows]) for i in range(5)], np.array(work)


def _same(run_rows, run_work, step_rows, step_work):
    for a, b in zip(run_rows, step_rows):
        assert np.array_equal(a, b)
    assert np.array_equal(run_work, step_work)


@pytest.mark.parametrize("formulation", FORMS)
@pytest.mark.parametrize("case", ["ur5 forces", "tree SE3", "tree SE2"])
def test_run_equals_its_steps_bit_for_bit(case, formulation):
    if case == "ur5 forces":
        model, forces = _ur5(), _forces()
    else:
        base = case.split()[1]
        model, forces = vm.load_model(random_tree_urdf(seed=4), base=base,
                                      gravity=(0.0, 0.0, -9.81)), []
    sim = vm.Simulator(model, 2e-3, formulation=formulation, forces=forces)
    rng = np.random.default_rng(11)
    state = _state(model, 3)
    held = sim.held_inputs(rng.normal(size=model.n), rng.normal(size=model.b),
                           rng.normal(size=6))
    step_rows, step_work = _steps(sim, state, STEPS, held)
    sim.reset(*state)
    run_rows = sim.run(STEPS, inputs=held)
    _same(run_rows, sim.run_work, step_rows, step_work)
    assert sim.t == step_rows[0][-1]


@pytest.mark.parametrize("formulation", FORMS)
def test_run_law_equals_its_single_step_runs_bit_for_bit(formulation):
    """The compiled computed-torque law at every stage: one run of many steps == runs of one
    step each (every one starts from the state, none resumes), states and efforts."""
    model = _ur5()
    state = _state(model, 5)
    ctrl = get_controller("computed_torque", {"mode": "free_floating", "kp": 25, "kd": 10})
    ctrl.reset(model, vm.State(0.0, *state))
    ref = reference_from_config({"joint": {"type": "waypoints", "times": [0.0, 1.0],
                                           "positions": [list(state[2]),
                                                         list(state[2] + 0.5)]}})
    law = compiled_law_of(*ctrl.inputs(ref))
    sim = vm.Simulator(model, 1e-3, formulation=formulation)
    assert sim.supports_law(law)
    sim.reset(*state)
    single, efforts, work = [], [], []
    for _ in range(STEPS):
        single.append(sim.run_law(1, law))
        efforts.append(sim.run_efforts[0].copy())
        work.append(sim.run_work[0].copy())
    sim.reset(*state)
    whole = sim.run_law(STEPS, law)
    for i in range(1, 5):       # (the times are t0 + k dt, rounded as each run starts)
        assert np.array_equal(whole[i], np.concatenate([s[i] for s in single]))
    assert np.array_equal(sim.run_efforts, np.array(efforts))
    assert np.array_equal(sim.run_work, np.array(work))



def _both(sims, f):
    for s in sims:
        f(s)


def _cleared_step(sim, held):
    """A step that computes its first stage (the buffer's record of it cleared)."""
    sim.stages.sc.last[-1] = 0.0
    sim.step(inputs=held)


@pytest.mark.parametrize("formulation", FORMS)
def test_steps_resume_only_what_the_buffer_still_holds(formulation):
    """``Simulator.step`` after a step or a run starts from the stage that step left; after
    the buffer served other states (energy, momentum, a step with per-stage inputs), after the
    state's arrays were changed in place, after a reset to another reference frame, it computes
    the stage again.  Every step equals, bit for bit, that of a twin simulator that always
    computes it."""
    model = _ur5()
    a, b = (vm.Simulator(model, 2e-3, formulation=formulation) for _ in range(2))
    rng = np.random.default_rng(2)
    held = a.held_inputs(rng.normal(size=model.n), rng.normal(size=model.b))
    other = _state(model, 8)

    def staged(s):
        s.step(stage_inputs=lambda t, st: (held.tau, held.base_wrench, None))

    def in_place(s):
        s.arrays()[3][0] += 0.25

    def reference(s):          # the same state, g_ref = its own pose
        s.reset(*(x.copy() for x in s.arrays()[1:]))
    disturbances = [None, lambda s: s.stages.energy(*other),
                    lambda s: s.stages.momentum_variable(s.spec, *other), staged, in_place,
                    reference, lambda s: s.run(3, inputs=held)]
    _both((a, b), lambda s: s.reset(*_state(model, 7)))
    a.step(inputs=held)
    _cleared_step(b, held)
    for disturb in disturbances:
        if disturb is not None:
            _both((a, b), disturb)
        for _ in range(2):
            a.step(inputs=held)
            _cleared_step(b, held)
            for x, y in zip(a.arrays(), b.arrays()):
                assert np.array_equal(x, y)
            assert (a.work, a.abs_work) == (b.work, b.abs_work)
