"""Force elements (vm_dynamics.forces), proved on the linear spring to an inertial anchor.

Oracles, none of which uses the element's own wrench formula: the generalized forces of the
spring's wrench equal minus the finite-difference gradient of its potential energy (checked
through the forward dynamics, which maps a frame wrench by the frame Jacobian); a single rigid
body held by a spring at its centre of mass oscillates as ``x(t) = a + (x₀ − a) cos ωt +
(v₀/ω) sin ωt``, ``ω² = k/m`` (closed form); the total energy with the spring's potential is
conserved to the integrator's order and the engine's work account stays zero; the compiled
element equals the Python one inside the engine (LP reference stages); a controller
compensating the spring gives the same run compiled and through compute().
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import our_model

import vm_dynamics as vm
from vm_dynamics.core import lie
from vm_dynamics.dynamics import fast
from vm_dynamics.forces import Spring, elements_from_config, total_wrenches
from vm_dynamics.sim.engine import Simulator

needs_numba = pytest.mark.skipif(not fast.numba_available(), reason="numba not installed")

FRAME = "wrist_2_link"


def _state(model, seed=3):
    rng = np.random.default_rng(seed)
    g = lie.se3_exp(rng.normal(size=6) * 0.5)
    V = rng.normal(size=model.b) * 0.5
    q, qd = rng.normal(size=model.n), rng.normal(size=model.n)
    return g, V, q, qd


def _spring():
    return Spring(FRAME, [0.05, -0.02, 0.1], [0.4, -0.3, 0.9], 120.0)


def test_spring_wrench_is_minus_the_gradient_of_its_potential():
    """Accelerations under the spring's frame wrench == under the generalized force −∇U from
    central differences of U in q and along the vehicle's body twists (g exp(εξ))."""
    model = our_model("ur5", "SE3", (0.0, 0.0, -9.81))
    s = _spring()
    g, V, q, qd = _state(model)
    _, frames = s.wrenches(model, g, V, q)
    h = 1e-6

    def U(gg, qq):
        return s.potential_energy(model, gg, qq)
    tau = np.array([-(U(g, q + h * e) - U(g, q - h * e)) / (2 * h) for e in np.eye(model.n)])
    f0 = np.array([-(U(g @ lie.se3_exp(h * model.group.embed(e)), q)
                     - U(g @ lie.se3_exp(-h * model.group.embed(e)), q)) / (2 * h)
                   for e in np.eye(model.b)])
    a = np.r_[model.forward_dynamics(g, V, q, qd, np.zeros(model.n), frame_wrenches=frames)]
    b = np.r_[model.forward_dynamics(g, V, q, qd, tau, base_wrench=f0)]
    assert np.abs(a - b).max() <= 1e-6 * np.abs(b).max(), np.abs(a - b).max()


SINGLE_BODY = """<robot name="block">
  <link name="block"><inertial><origin xyz="0.1 -0.2 0.05"/><mass value="3.0"/>
    <inertia ixx="0.2" iyy="0.3" izz="0.25" ixy="0.01" ixz="0.0" iyz="0.02"/></inertial></link>
</robot>"""


@needs_numba
@pytest.mark.parametrize("formulation", ["spatial_momentum", "body_momentum", "velocity"])
def test_spring_at_the_centre_of_mass_is_a_harmonic_oscillator(formulation):
    """One free rigid body (mass 3 kg), spring at its centre of mass, no gravity: the centre of
    mass follows the closed form, the body does not rotate."""
    model = vm.load_model(SINGLE_BODY, base="SE3", gravity=(0.0, 0.0, 0.0))
    assert model.n == 0
    com, k, m, anchor = np.array([0.1, -0.2, 0.05]), 50.0, 3.0, np.array([0.3, 0.1, -0.2])
    w = np.sqrt(k / m)
    x0, v0 = np.array([1.0, -0.5, 0.25]), np.array([0.0, 0.4, -0.3])
    g0 = np.eye(4)
    g0[:3, 3] = x0 - com
    V0 = np.r_[v0, 0.0, 0.0, 0.0]
    T, dt = 2.0, 1e-3
    traj = vm.simulate(model, g0, V0, np.zeros(0), np.zeros(0), T, dt,
                       forces=[Spring("block", com, anchor, k)], formulation=formulation)
    t = traj.t[:, None]
    x_exact = anchor + (x0 - anchor) * np.cos(w * t) + v0 / w * np.sin(w * t)
    x = traj.g[:, :3, :3] @ com + traj.g[:, :3, 3]
    assert np.abs(x - x_exact).max() < 1e-9
    assert np.abs(traj.g[:, :3, :3] - np.eye(3)).max() < 1e-9


@needs_numba
def test_energy_with_the_spring_is_conserved_and_is_not_work():
    """UR5 floating under gravity with a spring, no inputs: kinetic + gravitational + spring
    energy is constant (RKMK4, 1 ms), the work account stays exactly zero, and the compiled
    energy equals the Python one (model energy + the element's potential)."""
    model = our_model("ur5", "SE3", (0.0, 0.0, -9.81))
    s = _spring()
    g, V, q, qd = _state(model, seed=5)
    sim = Simulator(model, 1e-3, forces=[s]).reset(g, V, q, qd)
    K, U = sim.energy()
    assert abs(K + U - (model.energy(g, V, q, qd) + s.potential_energy(model, g, q))) \
        <= 1e-12 * (abs(K) + abs(U))
    E0 = K + U
    energies = []
    for _ in range(10):
        sim.run(100)
        energies.append(sum(sim.energy()))
    st = sim.state
    U_spring = s.potential_energy(model, st.g, st.q)
    assert U_spring > 1.0                                  # the spring does act
    assert np.abs(np.array(energies) - E0).max() <= 1e-7 * abs(E0)
    assert sim.work == 0.0
    # without the spring's potential the balance would be off by its change
    assert abs(U_spring - s.potential_energy(model, g, q)) > 1e3 * 1e-7 * abs(E0)


@needs_numba
@pytest.mark.parametrize("formulation", ["spatial_momentum", "body_momentum", "velocity"])
def test_compiled_spring_equals_the_python_element_in_the_lp_reference(formulation):
    """Five steps with a spring and other inputs: compiled stages == LP reference stages
    (which take the spring's wrench from its Python ``wrenches``), work accounts included."""
    model = our_model("ur5", "SE3", (0.0, 0.0, -9.81))
    state = _state(model, seed=7)
    rng = np.random.default_rng(1)
    tau = rng.normal(size=model.n)
    out = {}
    for backend in ("numba", "lp"):
        sim = Simulator(model, 0.01, formulation=formulation, backend=backend,
                        forces=[_spring(), Spring("tool0", [0, 0, 0.02], [0, 0.5, 0.5], 30.0)])
        sim.reset(*state)
        for _ in range(5):
            sim.step(tau=tau)
        out[backend] = (sim.state, sim.work, sim.abs_work, sum(sim.energy()))
    (a, wa, aa, ea), (b, wb, ab, eb) = out["numba"], out["lp"]
    for x, y in zip((a.g, a.V, a.q, a.qd), (b.g, b.V, b.q, b.qd)):
        assert np.abs(x - y).max() <= 1e-10 * (1.0 + np.abs(y).max())
    assert abs(wa - wb) <= 1e-10 * (1.0 + ab) and abs(aa - ab) <= 1e-10 * (1.0 + ab)
    assert abs(ea - eb) <= 1e-10 * abs(eb)


@needs_numba
def test_controller_compensating_the_spring_runs_compiled_and_equals_compute():
    """Computed torque told about the spring (external=[spring]) runs inside the compiled
    step with the engine's own element, and equals compute() called at every stage."""
    from vm_dynamics.control import get_controller
    from vm_dynamics.control.references import JointSetpoint, Reference
    model = our_model("ur5", "SE3", (0.0, 0.0, -9.81))
    s = _spring()
    g, V, q, qd = _state(model, seed=2)
    ctrl = get_controller("computed_torque", {"mode": "free_floating"})
    ctrl.reset(model, vm.State(0.0, g, V, q, qd), external=[s])
    tau, bw = ctrl.inputs(Reference(joint=JointSetpoint(q + 0.2)))
    traj = vm.simulate(model, g, V, q, qd, 0.2, 0.002, tau=tau, base_wrench=bw, forces=[s])
    assert traj.meta["compiled_law"] == "computed_torque"
    py = vm.simulate(model, g, V, q, qd, 0.2, 0.002, tau=lambda t, st: tau(t, st),
                     base_wrench=lambda t, st: bw(t, st), forces=[s])
    assert py.meta["compiled_law"] is None
    for key in ("g", "V", "q", "qd", "tau", "base_wrench"):
        x, y = getattr(traj, key), getattr(py, key)
        assert np.abs(x - y).max() <= 1e-10 * max(1.0, np.abs(y).max()), key


def test_spring_from_parameters_and_its_errors():
    """The ``forces`` parameter list builds the element; bad input names the culprit."""
    model = our_model("ur5", "SE3", (0.0, 0.0, -9.81))
    (s,) = elements_from_config([{"kind": "spring", "frame": FRAME, "point": [0, 0, 0.1],
                                  "anchor": [1, 2, 3], "stiffness": 10}])
    assert s == Spring(FRAME, [0, 0, 0.1], [1, 2, 3], 10.0)
    bw, frames = total_wrenches(model, [s], np.eye(4), np.zeros(6), np.zeros(model.n))
    assert set(frames) == {FRAME} and not bw.any()
    for specs, msg in (([{"kind": "rope"}], r"forces\[0\]\.kind: unknown 'rope'"),
                       ([{"kind": "spring", "frame": FRAME}], r"forces\[0\]: missing key"),
                       ([{"kind": "spring", "frame": FRAME, "stiffness": 1, "damping": 2}],
                        r"forces\[0\]: unknown keys damping"),
                       ([{"kind": "spring", "frame": FRAME, "stiffness": -1}],
                        r"forces\[0\]: spring stiffness"),
                       ({"kind": "spring"}, r"forces: expected a list")):
        with pytest.raises(ValueError, match=msg):
            elements_from_config(specs)
    with pytest.raises(ValueError, match=r"spring: unknown frame 'nowhere'"):
        Simulator(model, 0.01, forces=[Spring("nowhere", [0, 0, 0], [0, 0, 0], 1.0)])
    with pytest.raises(ValueError, match=r"forces\[1\]: expected a force element"):
        Simulator(model, 0.01, forces=[s, "spring"])


def test_scenario_parameters_add_a_spring_to_the_run():
    """A scenario's ``forces`` list becomes Scenario.forces, which vm-sim passes to simulate:
    the spring then pulls the vehicle (its vehicle-frame point) towards the anchor."""
    from vm_dynamics.config.scenario import load_scenario
    spec = {"kind": "spring", "frame": "base_link", "point": [0, 0, 0],
            "anchor": [5.0, 0, 0], "stiffness": 50.0}
    scn = load_scenario("tumbling", {"forces": [spec]})
    assert scn.forces == (Spring("base_link", [0, 0, 0], [5.0, 0, 0], 50.0),)
    free = vm.simulate(scn.model, scn.g0, scn.V0, scn.q0, scn.qd0, 0.2, scn.dt)
    held = vm.simulate(scn.model, scn.g0, scn.V0, scn.q0, scn.qd0, 0.2, scn.dt,
                       forces=scn.forces)
    dx = held.g[-1, 0, 3] - free.g[-1, 0, 3]
    assert dx > 1e-3                                   # pulled towards +x
    with pytest.raises(ValueError, match=r"spring: unknown frame 'nowhere'"):
        load_scenario("tumbling", {"forces": [dict(spec, frame="nowhere")]})
