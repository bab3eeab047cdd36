"""Uniform gravity as a force element (vm_dynamics.forces.gravity), and the force elements of a
configuration read once for vm-sim and the nodes (vm_dynamics.config.forces).

Oracles: the model's own gravity (the O(n) recursions and the LP potential), which the element
must reproduce exactly — bit for bit in the engine, where it folds into the model's gravity
constant, and to round-off through its Python wrenches and potential, which are computed
independently of the recursions (weights at the centres of mass mapped by the frame
Jacobians); the library's simulate() for the dynamics node's core.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import our_model

import vm_dynamics as vm
from vm_dynamics.core import lie
from vm_dynamics.dynamics import fast
from vm_dynamics.forces import (
    Spring,
    UniformGravity,
    elements_from_config,
    fold_gravity,
    total_wrenches,
)
from vm_dynamics.sim.engine import Simulator

needs_numba = pytest.mark.skipif(not fast.numba_available(), reason="numba not installed")

G = (0.3, -0.2, -9.81)
ZERO = (0.0, 0.0, 0.0)


def _state(model, seed=3):
    rng = np.random.default_rng(seed)
    return (lie.se3_exp(rng.normal(size=6) * 0.5), rng.normal(size=model.b) * 0.5,
            rng.normal(size=model.n), rng.normal(size=model.n))


def test_gravity_wrenches_and_potential_are_the_models_gravity():
    """UR5 on SE3: the element's weights (vehicle wrench + link frame wrenches) on a model
    without gravity give the accelerations of the model with gravity; its potential equals
    that model's gravitational potential."""
    model0, model_g = our_model("ur5", "SE3", ZERO), our_model("ur5", "SE3", G)
    e = UniformGravity(G)
    g, V, q, qd = _state(model0)
    tau = np.linspace(-1.0, 1.0, model0.n)
    bw, frames = total_wrenches(model0, [e], g, V, q)
    assert frames and np.abs(bw).max() > 1.0           # it acts on the vehicle and the links
    a = np.r_[model0.forward_dynamics(g, V, q, qd, tau, base_wrench=bw, frame_wrenches=frames,
                                      backend="lp")]
    b = np.r_[model_g.forward_dynamics(g, V, q, qd, tau, backend="lp")]
    assert np.abs(a - b).max() <= 1e-10 * np.abs(b).max(), np.abs(a - b).max()
    U = e.potential_energy(model0, g, q)
    assert abs(U - model_g.potential_energy(g, q)) <= 1e-12 * abs(U)


@needs_numba
@pytest.mark.parametrize("method", ["rkmk4", "dopri5"])
def test_simulate_with_the_gravity_element_is_bitwise_the_models_gravity(method):
    """simulate(model without gravity, forces=[UniformGravity(g), spring]) takes the same
    compiled steps as simulate(model with gravity g, forces=[spring]): identical arrays."""
    model0, model_g = our_model("ur5", "SE3", ZERO), our_model("ur5", "SE3", G)
    g, V, q, qd = _state(model0, seed=4)
    tau = np.linspace(-2.0, 2.0, model0.n)
    s = Spring("wrist_2_link", [0.05, -0.02, 0.1], [0.4, -0.3, 0.9], 120.0)
    a = vm.simulate(model0, g, V, q, qd, 0.05, 0.005, tau=tau, method=method,
                    forces=[UniformGravity(G), s])
    b = vm.simulate(model_g, g, V, q, qd, 0.05, 0.005, tau=tau, method=method, forces=[s])
    for key in ("g", "V", "q", "qd", "base_wrench"):
        assert np.array_equal(getattr(a, key), getattr(b, key)), key
    sim = Simulator(model0, 0.005, forces=[UniformGravity(G)]).reset(g, V, q, qd)
    assert sim.forces == () and np.array_equal(sim.model.gravity, G)
    assert sum(sim.energy()) == sum(Simulator(model_g, 0.005).reset(g, V, q, qd).energy())


def test_controller_compensates_the_gravity_element():
    """computed torque told about the element (external=[UniformGravity]) on a model without
    gravity commands what it commands on the model with gravity: the joint torques of a UR5
    on a fixed base, the vehicle wrench of one on an actuated SE(3) vehicle (a free-floating
    system falls as a whole: there uniform gravity changes no torque)."""
    from vm_dynamics.control import get_controller
    from vm_dynamics.control.references import JointSetpoint, Reference
    for base, mode, which in (("fixed", "free_floating", 0), ("SE3", "actuated_base", 1)):
        model0, model_g = our_model("ur5", base, ZERO), our_model("ur5", base, G)
        g, V, q, qd = _state(model0, seed=6)
        st = vm.State(0.0, g, V, q, qd)
        ref = Reference(joint=JointSetpoint(q + 0.1))
        out = []
        for model, external in ((model0, [UniformGravity(G)]), (model_g, None), (model0, None)):
            ctrl = get_controller("computed_torque", {"mode": mode, "dynamics": "lp"})
            ctrl.reset(model, st, external=external)
            out.append(ctrl.compute(0.0, st, ref)[which])
        assert np.abs(out[0] - out[1]).max() <= 1e-9 * np.abs(out[1]).max(), base
        assert np.abs(out[2] - out[1]).max() > 1.0, base     # without it: no compensation


def test_fold_gravity_rules_and_configuration_errors():
    """One field, one value: the element sets a zero model gravity, agrees with an equal one,
    conflicts with another; a second element, unknown kinds and keys are one-line errors
    naming the culprit with the nearest valid name."""
    model0, model_g = our_model("ur5", "SE3", ZERO), our_model("ur5", "SE3", G)
    s = Spring("wrist_2_link", [0, 0, 0], [0, 0, 0], 1.0)
    m, rest = fold_gravity(model0, [UniformGravity(G), s])
    assert rest == (s,) and np.array_equal(m.gravity, G) and m is not model0
    assert fold_gravity(model0, [UniformGravity(G)])[0] is m          # one copy per gravity
    assert fold_gravity(model_g, [UniformGravity(G)])[0] is model_g   # stated twice: once
    with pytest.raises(ValueError, match=r"forces\[0\]: uniform_gravity g = \[0.0, 0.0, -1.62\] "
                                         r"conflicts with the model's gravity"):
        fold_gravity(model_g, [UniformGravity((0, 0, -1.62))])
    with pytest.raises(ValueError, match=r"forces\[2\]: a second uniform_gravity"):
        Simulator(model0, 0.01, forces=[UniformGravity(G), s, UniformGravity(G)])
    (e,) = elements_from_config({"weight": {"kind": "uniform_gravity", "g": list(G)}})
    assert e == UniformGravity(G)
    for specs, msg in (
            ([{"kind": "uniform_gravity", "gg": [0, 0, 1]}],
             r"^forces\[0\]: unknown keys gg \(did you mean 'g'\?\); a uniform_gravity element "
             r"has g$"),
            ({"tether": {"kind": "sprng"}},
             r"^forces\.tether\.kind: unknown 'sprng' \(did you mean 'spring'\?\); kinds are "),
            ({"tether": {"kind": "spring", "frame": "ee_link", "stifness": 1.0}},
             r"^forces\.tether: unknown keys stifness \(did you mean 'stiffness'\?\)"),
            ([{"kind": "uniform_gravity"}], r"^forces\[0\]: missing key 'g'"),
            ([{"kind": "uniform_gravity", "g": [0, 0]}], r"^forces\[0\]: uniform_gravity g")):
        with pytest.raises(ValueError, match=msg):
            elements_from_config(specs)


@needs_numba
def test_a_compiled_law_compensating_the_gravity_element_runs_in_the_engine():
    """Computed torque told about [UniformGravity, spring] on a model without gravity runs
    compiled in an engine given the same elements (the engine and the controller fold the
    element into one shared model) and equals the run on the model with gravity."""
    from vm_dynamics.control import get_controller
    from vm_dynamics.control.references import JointSetpoint, Reference
    model0, model_g = our_model("ur5", "SE3", ZERO), our_model("ur5", "SE3", G)
    g, V, q, qd = _state(model0, seed=8)
    s = Spring("wrist_2_link", [0.05, -0.02, 0.1], [0.4, -0.3, 0.9], 120.0)
    runs = []
    for model, extra in ((model0, [UniformGravity(G)]), (model_g, [])):
        ctrl = get_controller("computed_torque", {"mode": "free_floating"})
        ctrl.reset(model, vm.State(0.0, g, V, q, qd), external=extra + [s])
        tau, bw = ctrl.inputs(Reference(joint=JointSetpoint(q + 0.2)))
        runs.append(vm.simulate(model, g, V, q, qd, 0.1, 0.005, tau=tau, base_wrench=bw,
                                forces=extra + [s]))
    assert [r.meta["compiled_law"] for r in runs] == ["computed_torque"] * 2
    for key in ("g", "V", "q", "qd", "tau"):
        a, b = getattr(runs[0], key), getattr(runs[1], key)
        assert np.abs(a - b).max() <= 1e-12 * max(1.0, np.abs(b).max()), key
