"""Kinematically driven joints in the simulation engine (``Simulator(driven_joints=[...])``).

Oracles: Pinocchio's total momentum (summed over the bodies, independent of the engine) over a
run with driven-velocity jumps and no external effects; Pinocchio's dense partitioned solve
(``pin.crba``, ``pin.rnea``) for the driven joints' efforts at states along a run; the closed
form of a constant-velocity motion ``q₀ + q̇ t``; the energy balance ``E − E₀ − W`` (the work
of every input, the driven efforts' and the jumps' included) shrinking at the method's order;
the ordinary engine for an empty driven set.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import WRENCH_FRAMES, gravity_for, make_oracle, our_model

from vm_dynamics.dynamics import fast
from vm_dynamics.sim.engine import Simulator

pytestmark = pytest.mark.skipif(not fast.numba_available(), reason="numba not installed")
pytest.importorskip("pinocchio")

ZERO_G = (0.0, 0.0, 0.0)


def _setup(robot, grav, seed, base="SE3"):
    model = our_model(robot, base, grav)
    orc = make_oracle(robot, base, grav, joint_names=list(model.joint_names))
    rng = np.random.default_rng(seed)
    return model, orc, rng, orc.random_state(rng)


def _inputs(robot, model, rng):
    return dict(tau=rng.normal(size=model.n), base_wrench=rng.normal(size=model.b),
                frame_wrenches={WRENCH_FRAMES[robot][0]: rng.normal(size=6)})


def test_driven_joints_move_at_constant_velocity():
    model, orc, rng, (g, V, q, qd) = _setup("ur5", gravity_for(1), 3)
    driven = [1, "elbow_joint"]
    sim = Simulator(model, 1e-3, driven_joints=driven).reset(g, V, q, qd)
    assert sim.driven_joints == (1, 2)
    t, _, _, Q, QD = sim.run(400, **_inputs("ur5", model, rng))
    for j in (1, 2):
        line = q[j] + qd[j] * t
        assert np.max(np.abs(Q[:, j] - line)) <= 1e-12 * (1.0 + np.max(np.abs(line)))
        assert np.all(QD[:, j] == qd[j])
    free = [0, 3, 4, 5]
    assert np.max(np.abs(QD[-1, free] - qd[free])) > 1e-3     # the others do move freely


def test_drive_to_reaches_the_target_at_the_period_end():
    model, orc, rng, (g, V, q, qd) = _setup("panda", gravity_for(2), 4)
    sim = Simulator(model, 2e-3, driven_joints=["panda_joint2", "panda_joint4"])
    sim.reset(g, V, q, qd)
    target = q[[1, 3]] + np.array([0.2, -0.3])
    v = sim.drive_to(target, 0.1)
    np.testing.assert_array_equal(sim.state.qd[[1, 3]], v)
    sim.run(50)
    assert np.max(np.abs(sim.state.q[[1, 3]] - target)) <= 1e-12 * (1.0 + np.abs(target).max())


@pytest.mark.parametrize("robot", ["ur5", "b1_z1"])
def test_total_momentum_is_conserved_through_velocity_jumps(robot):
    model, orc, rng, (g, V, q, qd) = _setup(robot, ZERO_G, 5)
    driven = list(np.flatnonzero(rng.random(model.n) < 0.4)) or [0]
    sim = Simulator(model, 1e-3, driven_joints=driven).reset(g, V, q, qd)
    h0 = orc.momentum(g, V, q, qd)
    tau = 2.0 * rng.normal(size=model.n)            # internal: joint efforts only
    for k in range(6):
        sim.run(40, tau=tau)
        v = rng.normal(size=len(driven)) * 1.5
        sim.set_driven_velocity(v)
        _, g1, V1, q1, qd1 = sim.arrays()
        np.testing.assert_array_equal(qd1[driven], v)
        h = orc.momentum(g1, V1, q1, qd1)
        assert np.max(np.abs(h - h0)) <= 1e-10 * np.max(np.abs(h0)), (k, h - h0)


def test_energy_balance_closes_with_driven_efforts_and_jumps():
    """E − E₀ − W is the truncation error (×16 per halving): W holds the driven joints' power
    and the kinetic energy of the jumps."""
    model, orc, rng, (g, V, q, qd) = _setup("ur5", gravity_for(1), 8)
    inputs = _inputs("ur5", model, rng)
    jumps = [np.array([0.7, -0.4]), np.array([-1.1, 0.3])]
    res = []
    for dt in (0.002, 0.001):
        sim = Simulator(model, dt, driven_joints=[1, 4]).reset(g, V, q, qd)
        E0 = sum(sim.energy())
        steps = int(round(0.05 / dt))
        for v in jumps:
            sim.run(steps, **inputs)
            W = sim.work
            K = sim.energy()[0]
            sim.set_driven_velocity(v)
            assert abs(sim.work - W - (sim.energy()[0] - K)) <= 1e-12 * (1.0 + abs(sim.work))
        sim.run(steps, **inputs)
        res.append(abs(sum(sim.energy()) - E0 - sim.work) / sim.abs_work)
    assert res[0] < 1e-6 and 10.0 < res[0] / res[1] < 22.0, res


def _partitioned_efforts(orc, g, V, q, qd, tau, mask, bw, fw):
    """Pinocchio: τ_p with q̈_p = 0 from the dense partitioned solve."""
    b, n = orc.b, orc.n
    M = orc.mass_matrix(q, g)
    h0, hj = orc.rnea(g, V, q, qd, np.zeros(b), np.zeros(n), fw)
    h, f = np.r_[h0, hj], np.r_[bw, tau]
    x = np.r_[np.ones(b, bool), ~mask]
    ax = np.linalg.solve(M[np.ix_(x, x)], f[x] - h[x])
    return M[np.ix_(~x, x)] @ ax + h[~x]


@pytest.mark.parametrize("robot,base", [("ur5", "SE3"), ("panda", "SE3"), ("b1_z1", "SE3"),
                                        ("random_tree", "SE2")])
def test_driven_efforts_vs_pinocchio(robot, base):
    model, orc, rng, (g, V, q, qd) = _setup(robot, gravity_for(3), 9, base)
    mask = rng.random(model.n) < 0.5
    mask[0] = True
    driven = list(np.flatnonzero(mask))
    inputs = _inputs(robot, model, rng)
    sim = Simulator(model, 1e-3, driven_joints=driven).reset(g, V, q, qd)
    for k in range(3):
        _, g1, V1, q1, qd1 = sim.arrays()
        ours = sim.driven_effort(**inputs)
        ref = _partitioned_efforts(orc, g1, V1, q1, qd1, inputs["tau"], mask,
                                   inputs["base_wrench"], inputs["frame_wrenches"])
        assert np.max(np.abs(ours - ref)) <= 1e-9 * np.max(np.abs(ref)), (k, ours - ref)
        sim.run(30, **inputs)


def test_empty_driven_set_reproduces_the_ordinary_engine():
    model, orc, rng, (g, V, q, qd) = _setup("ur5", gravity_for(1), 11)
    inputs = _inputs("ur5", model, rng)
    a = Simulator(model, 1e-3).reset(g, V, q, qd)
    b = Simulator(model, 1e-3, driven_joints=[]).reset(g, V, q, qd)
    ra, rb = a.run(200, **inputs), b.run(200, **inputs)
    for x, y in zip(ra, rb):
        assert np.max(np.abs(x - y)) <= 1e-13 * (1.0 + np.max(np.abs(x)))
    assert abs(a.work - b.work) <= 1e-13 * (1.0 + abs(a.work))


def test_per_stage_inputs_equal_held_inputs():
    model, orc, rng, (g, V, q, qd) = _setup("ur5", gravity_for(1), 12)
    inputs = _inputs("ur5", model, rng)
    a = Simulator(model, 1e-3, driven_joints=[0, 5]).reset(g, V, q, qd)
    b = Simulator(model, 1e-3, driven_joints=[0, 5]).reset(g, V, q, qd)
    fn = lambda t, s: (inputs["tau"], inputs["base_wrench"], inputs["frame_wrenches"])
    for _ in range(20):
        a.step(**inputs)
        b.step(stage_inputs=fn)
    for x, y in zip(a.arrays()[1:], b.arrays()[1:]):
        assert np.max(np.abs(x - y)) <= 1e-13 * (1.0 + np.max(np.abs(x)))
    assert abs(a.work - b.work) <= 1e-13 * (1.0 + abs(a.work))


def test_bad_arguments_name_the_culprit():
    model, orc, rng, (g, V, q, qd) = _setup("ur5", gravity_for(1), 13)
    with pytest.raises(ValueError, match="unknown joint 'nope'"):
        Simulator(model, 1e-3, driven_joints=["nope"])
    with pytest.raises(ValueError, match="backend 'lp'"):
        Simulator(model, 1e-3, backend="lp", driven_joints=[0])
    with pytest.raises(ValueError, match="adaptive method 'dopri5'"):
        Simulator(model, 1e-3, method="dopri5", driven_joints=[0])
    with pytest.raises(ValueError, match="prescribed motion"):
        Simulator(model, 1e-3, prescribed=lambda t: (q, qd, 0 * q), driven_joints=[0])
    sim = Simulator(model, 1e-3, driven_joints=["shoulder_lift_joint", "wrist_1_joint"])
    sim.reset(g, V, q, qd)
    with pytest.raises(ValueError, match="expected 2 values"):
        sim.set_driven_velocity([1.0])
    with pytest.raises(ValueError, match="'wrist_1_joint' is nan"):
        sim.set_driven_velocity([1.0, np.nan])
    with pytest.raises(ValueError, match="duration"):
        sim.drive_to([0.0, 0.0], 0.0)
    plain = Simulator(model, 1e-3).reset(g, V, q, qd)
    with pytest.raises(ValueError, match="no driven joints"):
        plain.driven_effort()
    np.testing.assert_array_equal(sim.state.qd, qd)         # nothing changed on the errors


def test_force_elements_act_on_the_hybrid_step():
    """A spring on the tool and a link's buoyancy: the engine's driven efforts (compiled force
    elements) equal the library's hybrid dynamics with the elements' wrenches summed in Python
    (``forces.total_wrenches``), the driven joints keep their velocity, and the energy balance
    (spring potential in E, buoyancy and driven efforts in W) closes at the method's order."""
    from vm_dynamics.forces import LinkBuoyancy, Spring, total_wrenches
    model, orc, rng, (g, V, q, qd) = _setup("ur5", gravity_for(1), 14)
    forces = [Spring("tool0", [0.0, 0.0, 0.1], [0.5, 0.2, 1.0], 80.0),
              LinkBuoyancy("forearm_link", 15.0, [0.0, 0.0, 0.2])]
    inputs = _inputs("ur5", model, rng)
    mask = np.zeros(model.n, bool)
    mask[[0, 3]] = True
    res = []
    for dt in (0.002, 0.001):
        sim = Simulator(model, dt, forces=forces, driven_joints=[0, 3]).reset(g, V, q, qd)
        E0 = sum(sim.energy())
        sim.run(int(round(0.1 / dt)), **inputs)
        _, g1, V1, q1, qd1 = sim.arrays()
        assert np.all(qd1[mask] == qd[mask])
        bw, fw = total_wrenches(sim.model, sim.forces, g1, V1, q1, inputs["base_wrench"],
                                inputs["frame_wrenches"])
        _, qdd, eff = fast.hybrid_dynamics(sim.model, g1, V1, q1, qd1, inputs["tau"],
                                           np.zeros(model.n), mask, bw, fw)
        ours = sim.driven_effort(**inputs)
        assert np.max(np.abs(ours - eff[mask])) <= 1e-10 * np.max(np.abs(eff[mask]))
        res.append(abs(sum(sim.energy()) - E0 - sim.work) / sim.abs_work)
    assert res[0] < 1e-6 and 10.0 < res[0] / res[1] < 22.0, res


def test_without_numba_the_same_hybrid_step_runs_as_plain_python():
    """Backend ``python`` (numba not importable): the same kernels as plain Python give the
    compiled run's state."""
    import json
    import os
    import subprocess
    import sys

    from conftest import robot_path
    code = r"""
import sys
sys.modules["numba"] = None
import json
import numpy as np, vm_dynamics as vm
from vm_dynamics.sim.engine import Simulator
m = vm.load_model(sys.argv[1], base="SE3")
sim = Simulator(m, 0.01, driven_joints=[1, 3]).reset(np.eye(4), 0.1 * np.ones(6), 0.2 * np.ones(6), 0.3 * np.ones(6))
assert sim.backend == "python", sim.backend
sim.set_driven_velocity([0.5, -0.5])
for k in range(3):
    sim.step(tau=np.ones(6))
print(json.dumps(np.r_[sim.state.V, sim.state.q, sim.state.qd, sim.work].tolist()))
"""
    r = subprocess.run([sys.executable, "-c", code, robot_path("ur5")], capture_output=True,
                       text=True, env=dict(os.environ), timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = np.array(json.loads(r.stdout.strip().splitlines()[-1]))
    import vm_dynamics as vm
    m = vm.load_model(robot_path("ur5"), base="SE3")
    sim = Simulator(m, 0.01, driven_joints=[1, 3]).reset(np.eye(4), 0.1 * np.ones(6),
                                                         0.2 * np.ones(6), 0.3 * np.ones(6))
    sim.set_driven_velocity([0.5, -0.5])
    for k in range(3):
        sim.step(tau=np.ones(6))
    ours = np.r_[sim.state.V, sim.state.q, sim.state.qd, sim.work]
    assert np.max(np.abs(ours - theirs)) <= 1e-11 * (1.0 + np.max(np.abs(ours)))
