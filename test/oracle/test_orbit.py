"""Two-body gravity (vm_dynamics.forces.TwoBody) against oracles independent of its code.

* The gravity-gradient torque on a rigid body equals the closed form ``3μ/|r|³ (r̂ × I r̂)``
  computed from the URDF's inertia numbers.
* Force and torque are minus the gradient of the element's potential energy (central
  differences through the forward dynamics, near a small central body where the second-order
  terms are large).
* Relative motion: chief and deputy point masses propagated in inertial coordinates by scipy's
  DOP853 (the two-body equation written here); our vehicle (a single rigid body, point masses)
  follows the deputy over one 500 km orbit.
* Clohessy–Wiltshire: the closed-form state-transition matrix predicts the deputy's LVLH
  relative motion to second order in the separation (the error scales with its square).
* Energy (kinetic + orbital potential) and angular momentum about the central body are conserved
  by spacecraft_arm in orbit with the arm moving freely.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import our_model

import vm_dynamics as vm
from vm_dynamics.core import lie
from vm_dynamics.dynamics import fast
from vm_dynamics.forces import MU_EARTH, TwoBody, elements_from_config
from vm_dynamics.sim.engine import Simulator

needs_numba = pytest.mark.skipif(not fast.numba_available(), reason="numba not installed")

R_ORBIT = 6378137.0 + 500e3                     # 500 km circular orbit
N_ORBIT = np.sqrt(MU_EARTH / R_ORBIT ** 3)       # mean motion, rad/s
PERIOD = 2 * np.pi / N_ORBIT                     # 5676.98 s

# one rigid body, centre of mass at the link origin, full (rotated) inertia
BLOCK = """<robot name="block">
  <link name="block"><inertial><origin xyz="0 0 0"/><mass value="500.0"/>
    <inertia ixx="120.0" iyy="300.0" izz="250.0" ixy="15.0" ixz="-20.0" iyz="30.0"/>
  </inertial></link>
</robot>"""
I_BLOCK = np.array([[120.0, 15.0, -20.0], [15.0, 300.0, 30.0], [-20.0, 30.0, 250.0]])


def _orbit_pose(seed):
    rng = np.random.default_rng(seed)
    g = lie.se3_exp(np.r_[0.0, 0.0, 0.0, rng.normal(size=3)])
    g[:3, 3] = R_ORBIT * lie.so3_exp(rng.normal(size=3) * 0.3) @ np.array([1.0, 0.0, 0.0])
    return g


def test_gravity_gradient_torque_equals_the_closed_form():
    """Torque on the block (about its centre of mass, which is the link origin) == 3μ/r³ r̂ × I r̂
    with I = R I_urdf Rᵀ, to 1e-12 relative, at three poses on the 500 km orbit."""
    model = vm.load_model(BLOCK, base="SE3", gravity=(0.0, 0.0, 0.0))
    for seed in range(3):
        g = _orbit_pose(seed)
        _, frames = TwoBody().wrenches(model, g, np.zeros(6), np.zeros(0))
        R, r = g[:3, :3], g[:3, 3]
        rh = r / np.linalg.norm(r)
        exact = 3 * MU_EARTH / np.linalg.norm(r) ** 3 * np.cross(rh, R @ I_BLOCK @ R.T @ rh)
        ours = R @ frames["block"][3:]                  # frame axes -> inertial
        assert np.linalg.norm(exact) > 1e-5
        assert np.abs(ours - exact).max() <= 1e-12 * np.linalg.norm(exact), \
            np.abs(ours - exact).max() / np.linalg.norm(exact)
        # point masses: no torque, the exact point-mass force
        _, pm = TwoBody(gradient=False).wrenches(model, g, np.zeros(6), np.zeros(0))
        assert not pm["block"][3:].any()
        F = -MU_EARTH * 500.0 * r / np.linalg.norm(r) ** 3
        assert np.abs(R @ pm["block"][:3] - F).max() <= 1e-14 * np.linalg.norm(F)


@pytest.mark.parametrize("gradient", [True, False])
def test_two_body_wrenches_are_minus_the_gradient_of_its_potential(gradient):
    """UR5 floating near a small central body (μ = 200, |r| ≈ 3 m, so the second-order force and
    torque are not negligible): accelerations under the element's frame wrenches == under the
    generalized force −∇U from five-point central differences of U in q and along the vehicle's
    twists, to 1e-7 of the accelerations the element causes."""
    model = our_model("ur5", "SE3", (0.0, 0.0, 0.0))
    e = TwoBody(mu=200.0, gradient=gradient)
    rng = np.random.default_rng(4)
    g = lie.se3_exp(rng.normal(size=6) * 0.5)
    g[:3, 3] = [2.0, -1.5, 1.8]
    V, q, qd = rng.normal(size=6) * 0.5, rng.normal(size=model.n), rng.normal(size=model.n)
    _, frames = e.wrenches(model, g, V, q)
    h = 1e-3

    def minus_d(f):           # −f'(0), five-point central difference (error O(h⁴))
        return -(8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)
    tau = np.array([minus_d(lambda s: e.potential_energy(model, g, q + s * d))
                    for d in np.eye(model.n)])
    f0 = np.array([minus_d(lambda s: e.potential_energy(model, g @ lie.se3_exp(s * d), q))
                   for d in np.eye(6)])
    a = np.r_[model.forward_dynamics(g, V, q, qd, np.zeros(model.n), frame_wrenches=frames)]
    b = np.r_[model.forward_dynamics(g, V, q, qd, tau, base_wrench=f0)]
    # the accelerations these wrenches cause, against those of the potential's gradient
    a0 = np.r_[model.forward_dynamics(g, V, q, qd, np.zeros(model.n))]
    assert np.abs((a - a0)).max() > 1e-2                # the element does act
    assert np.abs(a - b).max() <= 1e-7 * np.abs(b - a0).max(), \
        np.abs(a - b).max() / np.abs(b - a0).max()


def test_two_body_parameters_and_errors():
    (e,) = elements_from_config([{"kind": "two_body", "mu": 4.9048695e12}])
    assert e == TwoBody(4.9048695e12) and e.gradient
    assert elements_from_config([{"kind": "two_body"}])[0] == TwoBody(MU_EARTH, True)
    for spec, msg in (({"kind": "two_body", "mu": -1.0}, r"forces\[0\]: two_body mu"),
                      ({"kind": "two_body", "mu": "x"}, r"forces\[0\]: two_body mu"),
                      ({"kind": "two_body", "gradient": "yes"}, r"forces\[0\]: two_body gradient"),
                      ({"kind": "two_body", "radius": 1.0}, r"forces\[0\]: unknown keys radius")):
        with pytest.raises(ValueError, match=msg):
            elements_from_config([spec])
    model = our_model("ur5", "SE3", (0.0, 0.0, -9.81))
    with pytest.raises(ValueError, match=r"two_body: the model's uniform gravity must be zero"):
        Simulator(model, 0.01, forces=[TwoBody()])


def test_scenario_two_body_section():
    """A scenario file asks for an orbit with the flat ``two_body`` section (a ROS parameter
    file holds no list of mappings); its values and names are checked, and uniform gravity
    with it is an error naming both."""
    from vm_dynamics.config.scenario import load_scenario
    assert load_scenario("orbit_spacecraft_arm").forces == (TwoBody(),)
    scn = load_scenario("orbit_spacecraft_arm", {"two_body.mu": 4.9048695e12,
                                                 "two_body.gradient": False})
    assert scn.forces == (TwoBody(4.9048695e12, gradient=False),)
    with pytest.raises(ValueError, match=r"orbit: a reference orbit needs a central body"):
        load_scenario("orbit_spacecraft_arm", {"two_body.mu": 0.0})     # mu 0: no element
    for over, msg in (({"two_body.mu": -1.0}, r"two_body"),
                      ({"two_body.gradient": "yes"}, r"two_body.gradient"),
                      ({"two_body.radius": 1.0}, r"two_body.radius"),
                      ({"gravity": [0.0, 0.0, -9.81]}, r"two_body: the model's uniform gravity")):
        with pytest.raises(ValueError, match=msg):
            load_scenario("orbit_spacecraft_arm", over)


# ----------------------------------------------------------------------------- orbits
def _two_body_rhs(t, y):
    r = y[:3]
    return np.r_[y[3:], -MU_EARTH * r / np.linalg.norm(r) ** 3]


def _dop853(y0, t):
    from scipy.integrate import solve_ivp
    sol = solve_ivp(_two_body_rhs, (0.0, t[-1]), y0, method="DOP853", t_eval=t,
                    rtol=1e-13, atol=1e-9)
    assert sol.success
    return sol.y.T


CHIEF0 = np.r_[R_ORBIT, 0.0, 0.0, 0.0, np.sqrt(MU_EARTH / R_ORBIT), 0.0]


def _lvlh(chief, deputy):
    """Deputy's position and velocity relative to the chief in the chief's LVLH frame
    (x radial, y along-track, z orbit normal; velocity seen from the rotating frame)."""
    out = np.empty_like(deputy)
    for i, (c, d) in enumerate(zip(chief, deputy)):
        r, v = c[:3], c[3:]
        x = r / np.linalg.norm(r)
        hv = np.cross(r, v)
        z = hv / np.linalg.norm(hv)
        C = np.column_stack([x, np.cross(z, x)[:], z])
        w = np.array([0.0, 0.0, np.linalg.norm(hv) / (r @ r)])
        rho = C.T @ (d[:3] - r)
        out[i] = np.r_[rho, C.T @ (d[3:] - v) - np.cross(w, rho)]
    return out


def _cw(x0, t, n):
    """Closed-form Clohessy–Wiltshire state transition (x radial, y along-track, z normal)."""
    c, s = np.cos(n * t), np.sin(n * t)
    Phi = np.array([
        [4 - 3 * c, 0, 0, s / n, 2 * (1 - c) / n, 0],
        [6 * (s - n * t), 1, 0, -2 * (1 - c) / n, (4 * s - 3 * n * t) / n, 0],
        [0, 0, c, 0, 0, s / n],
        [3 * n * s, 0, 0, c, 2 * s, 0],
        [-6 * n * (1 - c), 0, 0, -2 * s, 4 * c - 3, 0],
        [0, 0, -n * s, 0, 0, c]])
    return Phi @ x0


def _deputy_run(y0, T, dt, formulation="auto"):
    """Our block (point masses: gradient off) from the inertial state y0 of its centre of mass,
    sampled every 10 s; returns (t, inertial state of its centre of mass)."""
    model = vm.load_model(BLOCK, base="SE3", gravity=(0.0, 0.0, 0.0))
    g0 = np.eye(4)
    g0[:3, 3] = y0[:3]
    traj = vm.simulate(model, g0, np.r_[y0[3:], 0.0, 0.0, 0.0], np.zeros(0), np.zeros(0), T, dt,
                       forces=[TwoBody(gradient=False)], formulation=formulation,
                       record_every=max(1, int(round(10.0 / dt))))
    v = np.einsum("kij,kj->ki", traj.g[:, :3, :3], traj.V[:, :3])
    return traj, np.column_stack([traj.g[:, :3, 3], v])


DEPUTY_OFFSET = np.r_[200.0, -500.0, 300.0, 0.1, -0.3, 0.2]     # m, m/s (inertial)


@needs_numba
def test_vehicle_follows_the_two_body_deputy_over_one_orbit():
    """Deputy = chief + (200, −500, 300) m, (0.1, −0.3, 0.2) m/s; our vehicle (formulation
    "auto", i.e. velocity), RKMK4 over one orbit: at dt = 1 s the inertial position is
    within 1e-11 |r| of DOP853 and the LVLH relative position within 1e-8 of the separation
    scale; halving dt from 2 s divides the error by more than 8 (fourth-order method)."""
    y0 = CHIEF0 + DEPUTY_OFFSET
    errs = []
    for dt in (2.0, 1.0):
        traj, ours = _deputy_run(y0, PERIOD, dt)
        assert traj.formulation == "velocity"
        t = traj.t
        truth = _dop853(y0, t)
        err = np.linalg.norm(ours[:, :3] - truth[:, :3], axis=1).max() / R_ORBIT
        chief = _dop853(CHIEF0, t)
        rel_ours, rel_true = _lvlh(chief, ours), _lvlh(chief, truth)
        rel = np.abs(rel_ours[:, :3] - rel_true[:, :3]).max() / np.abs(rel_true[:, :3]).max()
        errs.append((err, rel))
    (e2, r2), (e1, r1) = errs
    assert e1 <= 1e-11 and r1 <= 1e-8, errs
    assert e2 / e1 > 8.0 and r2 / r1 > 8.0, errs
    # no torque acts: the attitude stays put up to the round-off of ad*_V P at orbital speed
    # (|P| |V| ≈ 3e10 in the body momentum's rate)
    assert np.abs(traj.g[:, :3, :3] - np.eye(3)).max() <= 5e-3


@needs_numba
def test_clohessy_wiltshire_error_is_second_order_in_the_separation():
    """The CW state-transition matrix against our deputy's LVLH relative motion over one orbit:
    the error is of second order in the separation (×10 separation -> ≈ ×100 error), and small
    next to the motion itself."""
    errs = []
    for scale in (0.1, 1.0):
        d0 = scale * DEPUTY_OFFSET
        traj, ours = _deputy_run(CHIEF0 + d0, PERIOD, 1.0)
        chief = _dop853(CHIEF0, traj.t)
        rel = _lvlh(chief, ours)
        cw = np.array([_cw(rel[0], t, N_ORBIT) for t in traj.t])
        err = np.abs(rel[:, :3] - cw[:, :3]).max()
        assert err <= 2e-3 * np.abs(rel[:, :3]).max() / 0.1 * scale
        errs.append(err)
    ratio = errs[1] / errs[0]
    assert 70.0 <= ratio <= 130.0, (errs, ratio)


@needs_numba
def test_energy_and_angular_momentum_in_orbit_with_the_arm_moving():
    """spacecraft_arm on the 500 km orbit, free-floating, joints moving from their initial
    velocities (up to 0.6 rad/s), gravity gradient on, 1 s at dt = 10 ms and 5 ms (formulation
    "auto": velocity): kinetic + orbital potential energy and the angular momentum about the
    central body stay constant to round-off of the orbital energy (the integrator's error is
    below it) and the work account is exactly zero (the element is conservative).  The body
    momentum formulation, for contrast, loses digits to ad*_V P at orbital speed."""
    from vm_dynamics.config.scenario import load_scenario
    scn = load_scenario("orbit_spacecraft_arm")
    assert scn.forces == (TwoBody(),)
    qd0 = np.array([0.4, -0.3, 0.5, 0.6, -0.4, 0.5, 0.3])
    out = {}
    for dt, formulation in ((0.01, "auto"), (0.005, "auto"), (0.01, "body_momentum")):
        sim = Simulator(scn.model, dt, forces=scn.forces, formulation=formulation)
        sim.reset(scn.g0, scn.V0, scn.q0, qd0)
        E0 = sum(sim.energy())
        L0 = scn.model.momentum(scn.g0, scn.V0, scn.q0, qd0)[3:]
        E = []
        for _ in range(5):
            sim.run(int(round(0.2 / dt)))
            E.append(sum(sim.energy()))
        st = sim.state
        assert np.abs(st.q - scn.q0).max() > 0.4                     # the arm did move
        L = scn.model.momentum(st.g, st.V, st.q, st.qd)[3:]
        assert sim.work == 0.0
        out[dt, sim.formulation] = (np.abs(np.array(E) - E0).max() / abs(E0),
                                    np.linalg.norm(L - L0) / np.linalg.norm(L0))
    for dt in (0.01, 0.005):
        drift, turn = out[dt, "velocity"]
        assert drift <= 1e-13 and turn <= 1e-13, out
    assert out[0.01, "body_momentum"][0] > 1e3 * out[0.01, "velocity"][0], out


@needs_numba
@pytest.mark.parametrize("formulation", ["spatial_momentum", "body_momentum", "velocity"])
def test_compiled_two_body_equals_the_python_element_in_the_lp_reference(formulation):
    """Five steps of UR5 near a small central body (μ = 200, |r| ≈ 3 m: every term of the
    element matters) with joint efforts: compiled stages == LP reference stages (which take the
    element's wrenches from its Python ``wrenches``), energies included."""
    model = our_model("ur5", "SE3", (0.0, 0.0, 0.0))
    rng = np.random.default_rng(6)
    g = lie.se3_exp(rng.normal(size=6) * 0.5)
    g[:3, 3] = [2.0, -1.5, 1.8]
    state = (g, rng.normal(size=6) * 0.5, rng.normal(size=model.n), rng.normal(size=model.n))
    tau = rng.normal(size=model.n)
    out = {}
    for backend in ("numba", "lp"):
        sim = Simulator(model, 0.01, formulation=formulation, backend=backend,
                        forces=[TwoBody(mu=200.0)])
        sim.reset(*state)
        for _ in range(5):
            sim.step(tau=tau)
        out[backend] = (sim.state, sim.work, sum(sim.energy()))
    (a, wa, ea), (b, wb, eb) = out["numba"], out["lp"]
    for x, y in zip((a.g, a.V, a.q, a.qd), (b.g, b.V, b.q, b.qd)):
        assert np.abs(x - y).max() <= 1e-10 * (1.0 + np.abs(y).max())
    assert abs(wa - wb) <= 1e-10 * (1.0 + abs(wb)) and abs(ea - eb) <= 1e-10 * abs(eb)
    assert abs(ea - (model.energy(b.g, b.V, b.q, b.qd)
                     + TwoBody(mu=200.0).potential_energy(model, b.g, b.q))) <= 1e-10 * abs(eb)


@needs_numba
def test_conservation_checks_count_the_orbital_potential():
    """An eccentric orbit (0.9 × circular speed: kinetic and potential energy exchange ~1e-3 of
    the energy in 60 s): the energy balance of vm-sim's analysis is at round-off with the
    element's potential counted (5e-11: the
    integration error at 10 ms), and off by that exchange without it; momentum is reported as
    not conserved because of the element."""
    from vm_dynamics.analysis import metrics
    from vm_dynamics.config.scenario import load_scenario
    scn = load_scenario("orbit_spacecraft_arm")
    V0 = scn.V0.copy()
    V0[1] *= 0.9
    traj = vm.simulate(scn.model, scn.g0, V0, scn.q0, scn.qd0, 60.0, 0.01, forces=scn.forces,
                       record_every=100)
    checks = metrics.conservation_checks(scn.model, traj, None, scn.forces)
    s = checks.summary()
    assert s["energy_balance_rel"] <= 1e-9, s          # 5e-11 measured (integration error)
    assert s["momentum_drift_rel"] is None and "two_body" in s["conservation"]["momentum"]
    # the compiled potential of the analysis == the element's own (Python) potential
    U = metrics.element_potentials(scn.model, traj, scn.forces)
    for k in (0, len(traj.t) // 2, -1):
        Uk = scn.forces[0].potential_energy(scn.model, traj.g[k], traj.q[k])
        assert abs(U[k] - Uk) <= 1e-13 * abs(Uk)
    without = metrics.conservation_checks(scn.model, traj).summary()
    assert without["energy_balance_rel"] > 1e-5, without
