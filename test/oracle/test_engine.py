"""The simulation engine (vm_dynamics.sim.engine.Simulator).

Oracles: the compiled step is checked against the same RKMK method evaluated with the
closed-form LP reference (lp.py, paper 000 with the seeds-LP corrections; backend="lp"), which
shares no dynamics code with the recursions; against the per-stage driver (same kernels, Python
loop); against itself for order 4 (Richardson ratio) and against conservation laws (momentum to
round-off in the spatial-momentum formulation, energy balance with the work of the inputs).
Pinocchio + DOP853 checks of vm.simulate (which drives this engine) are in test_simulate.py.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import WRENCH_FRAMES, gravity_for, make_oracle, our_model

import vm_dynamics as vm  # noqa: E402
from vm_dynamics.config.scenario import load_scenario  # noqa: E402
from vm_dynamics.core import lie  # noqa: E402
from vm_dynamics.dynamics import fast
from vm_dynamics.sim.engine import SimulationError, Simulator  # noqa: E402

pytestmark = pytest.mark.skipif(not fast.numba_available(), reason="numba not installed")

FORMS = ["spatial_momentum", "body_momentum", "velocity"]
CASES = [("ur5", "SE3"), ("random_tree", "SE2"), ("ur5", "SO3"), ("panda", "fixed")]


def _err(a, b):
    return max(np.abs(a.g - b.g).max(), np.abs(a.V - b.V).max(initial=0.0),
               np.abs(a.q - b.q).max(), np.abs(a.qd - b.qd).max())


def _setup(robot, base, seed=5):
    model = our_model(robot, base, gravity_for(1))
    orc = make_oracle(robot, base, gravity_for(1), joint_names=list(model.joint_names))
    rng = np.random.default_rng(seed)
    g, V, q, qd = orc.random_state(rng, v_scale=2.0)
    inputs = dict(tau=rng.normal(size=model.n), base_wrench=rng.normal(size=model.b),
                  base_wrench_inertial=rng.normal(size=6),
                  frame_wrenches={WRENCH_FRAMES[robot][0]: rng.normal(size=6)})
    return model, (g, V, q, qd), inputs


@pytest.mark.parametrize("formulation", FORMS)
@pytest.mark.parametrize("robot,base", CASES)
@pytest.mark.parametrize("method", ["rkmk4", "lie_euler"])
def test_compiled_step_equals_lp_reference(robot, base, formulation, method):
    """One compiled call per step == the same method with stages from the LP reference, with
    gravity, joint efforts, body and inertial vehicle wrenches and a frame wrench."""
    model, state, inputs = _setup(robot, base)
    out = {}
    for backend in ("numba", "lp"):
        sim = Simulator(model, 0.01, method, formulation=formulation, backend=backend)
        sim.reset(*state)
        for _ in range(5):
            sim.step(**inputs)
        out[backend] = (sim.state, sim.work, sim.abs_work)
    (a, wa, aa), (b, wb, ab) = out["numba"], out["lp"]
    scale = 1.0 + max(np.abs(b.V).max(initial=0), np.abs(b.qd).max())
    assert _err(a, b) <= 1e-10 * scale, _err(a, b)
    assert abs(wa - wb) <= 1e-10 * (1.0 + aa) and abs(aa - ab) <= 1e-10 * (1.0 + ab)


@pytest.mark.parametrize("formulation", FORMS)
def test_per_stage_driver_and_rollout_equal_the_compiled_step(formulation):
    """Constant inputs given per stage (Python loop over compiled stages), held (one compiled
    call per step) and as a compiled run of steps give the same states."""
    model, state, inputs = _setup("ur5", "SE3", seed=2)
    a = Simulator(model, 0.01, formulation=formulation).reset(*state)
    b = Simulator(model, 0.01, formulation=formulation).reset(*state)
    c = Simulator(model, 0.01, formulation=formulation).reset(*state)
    held = dict(inputs)
    bwi = held.pop("base_wrench_inertial")

    def stage(t, s):
        R = s.g[:3, :3]
        return (held["tau"], held["base_wrench"] + np.r_[R.T @ bwi[:3], R.T @ bwi[3:]],
                held["frame_wrenches"])
    traj = c.run(6, **inputs)
    for k in range(6):
        a.step(**inputs)
        b.step(stage_inputs=stage)
        assert _err(a.state, b.state) < 1e-13
        assert np.abs(traj[1][k] - a.state.g).max() == 0.0
        assert np.abs(traj[4][k] - a.state.qd).max() == 0.0
    assert c.t == a.t == b.t == pytest.approx(0.06, abs=1e-15)


@pytest.mark.parametrize("formulation", FORMS)
def test_order_four_and_free_floating_momentum(formulation):
    """Global error O(h⁴) (ratio ~16 when h halves); without gravity and inputs the inertial
    momentum is conserved to round-off by the spatial-momentum formulation."""
    model = our_model("ur5", "SE3", (0.0, 0.0, 0.0))
    orc = make_oracle("ur5", "SE3", (0.0, 0.0, 0.0), joint_names=list(model.joint_names))
    g, V, q, qd = orc.random_state(np.random.default_rng(11))
    T = 0.4

    def final(steps):
        sim = Simulator(model, T / steps, formulation=formulation).reset(g, V, q, qd)
        sim.run(steps)
        return sim.state
    ref = final(320)
    errs = [max(np.abs(s.q - ref.q).max(), np.abs(lie.se3_log(lie.se3_inv(ref.g) @ s.g)).max())
            for s in (final(20), final(40))]
    assert 11.0 < errs[0] / errs[1] < 22.0, errs
    h0 = model.momentum(g, V, q, qd)
    sim = Simulator(model, 0.05, formulation=formulation).reset(g, V, q, qd)
    t, G, VV, Q, QD = sim.run(40)
    drift = max(np.linalg.norm(model.momentum(G[k], VV[k], Q[k], QD[k]) - h0)
                for k in range(40)) / np.linalg.norm(h0)
    if formulation == "spatial_momentum":
        assert drift < 1e-13, drift
    else:
        assert 1e-14 < drift < 1e-2, drift


def test_lie_euler_is_first_order():
    model = our_model("ur5", "SE3", gravity_for(3))
    orc = make_oracle("ur5", "SE3", gravity_for(3), joint_names=list(model.joint_names))
    g, V, q, qd = orc.random_state(np.random.default_rng(4))

    def final(steps, method):
        sim = Simulator(model, 0.2 / steps, method).reset(g, V, q, qd)
        sim.run(steps)
        return sim.state.q
    ref = final(200, "rkmk4")
    e1, e2 = (np.abs(final(k, "lie_euler") - ref).max() for k in (100, 200))
    assert 1.8 < e1 / e2 < 2.2


@pytest.mark.parametrize("name", ["uvms", "satellite_wheels", "planar_rover", "tumbling",
                                  "spacecraft_arm"])
def test_scenarios_environment_and_prescribed_motion_vs_lp(name):
    """Every scenario's features in the compiled step — hydrodynamic damping and buoyancy
    (vehicle and arm links, at every stage), added mass, prescribed joint motion — against the
    LP reference stages; and the prescribed efforts agree."""
    scn = load_scenario(name)
    presc = scn.prescribed_motion()
    out = {}
    for backend in ("numba", "lp"):
        sim = Simulator(scn.model, 0.004, backend=backend, environment=scn.hydrodynamics,
                        prescribed=presc)
        sim.reset(scn.g0, scn.V0 + 0.05, None if presc else scn.q0 + 0.3,
                  None if presc else scn.qd0 + 0.2)
        tau = None if presc else np.linspace(-1.0, 1.0, scn.model.n)
        sim.run(10, tau=tau)
        out[backend] = (sim.state, sim.work, sim.prescribed_effort() if presc else None)
    (a, wa, ea), (b, wb, eb) = out["numba"], out["lp"]
    assert _err(a, b) < 1e-11
    assert abs(wa - wb) < 1e-10 * (1.0 + abs(wb))
    if presc:
        np.testing.assert_allclose(ea, eb, rtol=1e-9, atol=1e-9 * np.abs(eb).max())


def test_prescribed_motion_moves_only_the_vehicle():
    scn = load_scenario("satellite_wheels")
    presc = scn.prescribed_motion()
    sim = Simulator(scn.model, 0.01, prescribed=presc).reset(scn.g0, scn.V0)
    sim.run(50)
    q, qd, _ = presc(sim.t)
    np.testing.assert_array_equal(sim.state.q, q)
    np.testing.assert_array_equal(sim.state.qd, qd)
    with pytest.raises(ValueError, match="q0: does not match prescribed"):
        sim.reset(scn.g0, scn.V0, q + 1.0, None)
    with pytest.raises(ValueError, match="velocity"):
        Simulator(scn.model, 0.01, prescribed=presc, formulation="velocity")


def test_energy_balance_with_work_of_the_inputs():
    """dE/dt = power of the applied inputs: E − E₀ − W is the truncation error (×16 per halving)."""
    model, state, inputs = _setup("ur5", "SE3", seed=8)
    res = []
    for dt in (0.002, 0.001):
        sim = Simulator(model, dt).reset(*state)
        K0, U0 = sim.energy()
        sim.run(int(round(0.1 / dt)), **inputs)
        K, U = sim.energy()
        res.append(abs(K + U - K0 - U0 - sim.work) / sim.abs_work)
        K_ref = model.kinetic_energy(sim.state.V, sim.state.q, sim.state.qd, backend="lp")
        assert abs(K - K_ref) <= 1e-12 * (1.0 + K_ref)
        assert abs(U - model.potential_energy(sim.state.g, sim.state.q)) <= 1e-10 * (1 + abs(U))
    assert res[0] < 1e-5 and 10.0 < res[0] / res[1] < 22.0, res


def test_failures_are_clear_errors_and_keep_the_state():
    model, state, inputs = _setup("ur5", "SE3")
    sim = Simulator(model, 0.01).reset(*state)
    sim.step(**inputs)
    before = sim.state
    with pytest.raises(SimulationError, match=r"diverged at t = 0\.01 s \(the step from t = "
                                              r"0\.01 s failed: the state became non-finite"):
        sim.step(tau=np.full(model.n, 1e300))
    assert _err(sim.state, before) == 0.0 and sim.t == before.t
    with pytest.raises(SimulationError) as exc:
        sim.run(50, tau=np.full(model.n, 1e200))
    assert len(exc.value.partial[0]) < 50 and np.all(np.isfinite(sim.state.q))
    with pytest.raises(ValueError, match=r"tau: expected shape \(6,\)"):
        sim.step(tau=np.zeros(5))
    with pytest.raises(ValueError, match="tau: contains NaN"):
        sim.step(tau=np.r_[np.nan, np.zeros(5)])
    with pytest.raises(ValueError, match="unknown frame 'nope'"):
        sim.step(frame_wrenches={"nope": np.zeros(6)})
    with pytest.raises(ValueError, match="dt: expected a positive"):
        Simulator(model, 0.0)
    with pytest.raises(ValueError, match="method='rk45'"):
        Simulator(model, 0.01, "rk45")
    with pytest.raises(ValueError, match="backend='gpu'"):
        Simulator(model, 0.01, backend="gpu")
    with pytest.raises(RuntimeError, match="reset"):
        Simulator(model, 0.01).step()


def test_dopri5_step_matches_rkmk4():
    model, state, inputs = _setup("ur5", "SE3", seed=9)
    a = Simulator(model, 0.02, "dopri5", rtol=1e-12, atol=1e-14).reset(*state)
    b = Simulator(model, 0.02 / 64, "rkmk4").reset(*state)
    a.step(**inputs)
    b.run(64, **inputs)
    assert _err(a.state, b.state) < 1e-9


def test_without_numba_the_same_kernels_run_as_plain_python():
    code = r"""
import sys
sys.modules["numba"] = None
import numpy as np, vm_dynamics as vm
from vm_dynamics.sim.engine import Simulator
m = vm.load_model(sys.argv[1], base="SE3")
rng = np.random.default_rng(0)
state = (vm.lie.se3_exp(rng.normal(size=6)) if hasattr(vm, "lie") else np.eye(4),
         rng.normal(size=6), rng.normal(size=6), rng.normal(size=6))
a = Simulator(m, 0.01).reset(*state)
b = Simulator(m, 0.01, backend="lp").reset(*state)
assert a.backend == "python", a.backend
for k in range(3):
    a.step(tau=np.ones(6)); b.step(tau=np.ones(6))
d = max(np.abs(a.state.q - b.state.q).max(), np.abs(a.state.V - b.state.V).max())
assert d < 1e-11, d
print("ok")
"""
    from conftest import robot_path
    r = subprocess.run([sys.executable, "-c", code, robot_path("ur5")], capture_output=True,
                       text=True, env=dict(os.environ), timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]


def test_simulate_held_and_callable_inputs_agree():
    """vm.simulate: array inputs (compiled runs) and the same inputs as callables (per-stage
    driver) give the same trajectory."""
    model, (g, V, q, qd), inputs = _setup("ur5", "SE3", seed=12)
    tau, bw = inputs["tau"], inputs["base_wrench"]
    a = vm.simulate(model, g, V, q, qd, 0.1, 0.01, tau=tau, base_wrench=bw)
    b = vm.simulate(model, g, V, q, qd, 0.1, 0.01, tau=lambda t, s: tau,
                    base_wrench=lambda t, s: bw)
    assert _err(a, b) < 1e-13
    np.testing.assert_array_equal(a.tau, b.tau)
    assert a.meta["backend"] == "numba"


def test_compile_notice_says_so_only_when_kernels_must_be_compiled():
    import io
    import types as _t

    from vm_dynamics.dynamics import fast as f

    def disp(index):
        cf = _t.SimpleNamespace(_load_index=lambda: index)
        return _t.SimpleNamespace(_cache=_t.SimpleNamespace(_cache_file=cf))
    printed = []
    out = io.StringIO()
    with f.compile_notice(disp({"sig": 1}), stream=out, printed=printed):
        pass
    assert out.getvalue() == ""                               # cached: silent
    with f.compile_notice(disp({"sig": 1}), disp({}), stream=out, printed=printed):
        pass
    assert "compiling dynamics kernels, first run only" in out.getvalue()
    printed = []
    out = io.StringIO()
    with f.compile_notice(stream=out, after=0.05, printed=printed):  # unknown: after a delay
        import time
        time.sleep(0.3)
    assert "compiling" in out.getvalue()
    assert f.kernels_cached(_t.SimpleNamespace()) is None


def test_prescribed_efforts_are_those_of_each_sample():
    """With per-stage input callables the recorded efforts of prescribed motion belong to the
    sample's own state: a zero base-wrench callable changes nothing."""
    scn = load_scenario("satellite_wheels")
    presc = scn.prescribed_motion()
    a = vm.simulate(scn.model, scn.g0, scn.V0, None, None, 0.05, 0.01, prescribed=presc)
    b = vm.simulate(scn.model, scn.g0, scn.V0, None, None, 0.05, 0.01, prescribed=presc,
                    base_wrench=lambda t, s: np.zeros(scn.model.b))
    np.testing.assert_allclose(b.tau, a.tau, rtol=0, atol=1e-12 * np.abs(a.tau).max())
    assert _err(a, b) < 1e-14


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_mimic_models_on_the_recursions_and_the_engine(backend):
    """Panda with its mimic gripper on a bus: the O(n) recursions with the coupling q_tree =
    G q + c (forward/inverse dynamics, mass matrix, frame poses) agree with the LP reference
    (itself checked against Pinocchio's mimic model in test_bring_your_own_robot.py), and the
    engine's stages on them agree with the LP stages."""
    scn = load_scenario("panda_on_bus")
    m = scn.model
    assert not m.coupling.trivial
    rng = np.random.default_rng(3)
    V, q, qd, tau = (rng.normal(size=m.b), scn.q0 + 0.1 * rng.normal(size=m.n),
                     rng.normal(size=m.n), rng.normal(size=m.n))
    fw = {"panda_hand": rng.normal(size=6)}
    a = np.r_[m.forward_dynamics(scn.g0, V, q, qd, tau, frame_wrenches=fw, backend=backend)]
    b = np.r_[m.forward_dynamics(scn.g0, V, q, qd, tau, frame_wrenches=fw, backend="lp")]
    assert np.abs(a - b).max() <= 1e-10 * np.abs(b).max()
    f0, t = m.inverse_dynamics(scn.g0, V, q, qd, b[:m.b], b[m.b:], frame_wrenches=fw,
                               backend=backend)
    assert np.abs(t - tau).max() <= 1e-9 * (1 + np.abs(tau).max()) and np.abs(f0).max() < 1e-8
    M, Ml = m.mass_matrix(q, backend=backend), m.mass_matrix(q, backend="lp")
    assert np.abs(M - Ml).max() <= 1e-12 * np.abs(Ml).max()
    for f in ("panda_hand_tcp", "panda_leftfinger", "panda_rightfinger"):
        assert np.abs(m.frame_pose(q, f, backend=backend)
                      - m.frame_pose(q, f, backend="lp")).max() < 1e-13
    if backend == "numba":
        s1 = Simulator(m, 2e-3).reset(scn.g0, V, q, qd)
        s2 = Simulator(m, 2e-3, backend="lp").reset(scn.g0, V, q, qd)
        s1.run(10, tau=tau, frame_wrenches=fw)
        s2.run(10, tau=tau, frame_wrenches=fw)
        assert _err(s1.state, s2.state) < 1e-11 and abs(s1.work - s2.work) < 1e-10


@pytest.mark.parametrize("formulation", ["spatial_momentum", "body_momentum", "velocity"])
def test_mimic_joints_on_the_compiled_step(formulation):
    """With mimic joints the compiled step integrates the tree's coordinates and projects the
    articulated-body accelerations onto the coupling (TᵀMT q̈ = TᵀM a): the same trajectory
    and work as the closed-form LP stages (gravity, vehicle and frame wrenches, every
    formulation), the coupling q_tree = G q + c kept exactly, the model's coordinates in
    state/run, and free-floating momentum and energy conserved."""
    scn = load_scenario("panda_on_bus")
    m = load_scenario("panda_on_bus", {"gravity": [0.3, -0.2, -9.81]}).model
    assert np.abs(m.gravity).max() > 9
    rng = np.random.default_rng(7)
    V, q, qd = 0.1 * rng.normal(size=m.b), scn.q0 + 0.1 * rng.normal(size=m.n), \
        0.5 * rng.normal(size=m.n)
    q[-1] = 0.02
    tau, bw, fw = rng.normal(size=m.n), rng.normal(size=m.b), {"panda_hand": rng.normal(size=6)}
    s1 = Simulator(m, 2e-3, formulation=formulation).reset(scn.g0, V, q, qd)
    s2 = Simulator(m, 2e-3, formulation=formulation, backend="lp").reset(scn.g0, V, q, qd)
    assert s1._tree and not s1.python_stages
    t1, G1, V1, Q1, QD1 = s1.run(40, tau=tau, base_wrench=bw, frame_wrenches=fw)
    t2, G2, V2, Q2, QD2 = s2.run(40, tau=tau, base_wrench=bw, frame_wrenches=fw)
    assert Q1.shape == Q2.shape == (40, m.n)
    for a, b in ((G1, G2), (V1, V2), (Q1, Q2), (QD1, QD2)):
        assert np.abs(a - b).max() <= 1e-11 * max(1.0, np.abs(b).max())
    assert abs(s1.work - s2.work) <= 1e-11 * max(1.0, abs(s2.work))
    cp = m.coupling
    assert np.abs(s1._q - (cp.G @ s1.state.q + cp.c)).max() < 1e-15
    # free floating, no inputs, no gravity: momentum and energy
    free = Simulator(scn.model, 1e-3).reset(scn.g0, V, q, qd)
    E0, h0 = sum(free.energy()), scn.model.momentum(scn.g0, V, q, qd)
    free.run(500)
    st = free.state
    assert abs(sum(free.energy()) - E0) <= 1e-9 * E0
    h1 = scn.model.momentum(st.g, st.V, st.q, st.qd)
    assert np.abs(h1 - h0).max() <= 1e-12 * np.abs(h0).max()
