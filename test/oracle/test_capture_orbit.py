"""Capture in orbit (vm_dynamics.capture.orbit + the force elements of CaptureSimulator) against
independent oracles.

* The target alone: scipy DOP853 of equations written here from the physics, in Earth-centred
  inertial coordinates for the chief (``r̈_c = −μ r_c/|r_c|³``, integrated with the rest, not
  taken from ReferenceOrbit) and relative to it for the target's centre of mass (two-body
  gravity at ``r_c + ρ`` minus the chief's, by the exact difference
  ``s⁻³ − r⁻³ = (r − s)(r² + rs + s²)/(r³s³)``, ``r − s = −(2 r_c·ρ + |ρ|²)/(r + s)``, plus the
  second-order MacCullagh force), and the attitude as a unit quaternion with Euler's equations
  and the gravity-gradient torque ``3μ/|x|⁵ x × I x``.
* Chaser (the 7-DoF spacecraft arm) + target through contact, grasp, thrusters and release:
  the total momentum minus the thrusters' impulse changes by exactly the elements' impulse, and
  that impulse equals a Simpson quadrature of the external wrench computed here from
  Pinocchio's bodies (mass, CoM, inertia of every joint body) and the formulas above; the energy
  balance with the elements' potential closes.
* The element itself: its potential against 40-digit arithmetic (mpmath), its wrenches against
  the finite-difference gradient of its potential (rigid displacements and joint coordinates),
  its explicit time rate against a difference quotient along the orbit.
* Limits: with a vanishing central body the run equals the free-space one; the generic element
  path (``forces.TwoBody`` about a small central body) conserves the angular momentum about it.
"""
from __future__ import annotations

import mpmath
import numpy as np
import oracles
import pinocchio as pin
import pytest
from capture_fixtures import APPROACH_EFFORT, ARM_URDF, GRASPED_EFFORT, THRUST, arm_box_capture, free_ball
from capture_orbit_oracle import MU, quat_mul, target_oracle, tidal_force
from scipy.integrate import simpson, solve_ivp

import vm_dynamics as vm
from vm_dynamics.capture import (
    Box,
    CaptureSimulator,
    CaptureSystem,
    TargetBody,
)
from vm_dynamics.capture.orbit import ChiefFrameGravity, TidalGravity, target_model
from vm_dynamics.core import lie
from vm_dynamics.core.rotations import quat_from_matrix
from vm_dynamics.forces import TwoBody
from vm_dynamics.forces.orbit import ReferenceOrbit
from vm_dynamics.model.urdf import read_urdf_source

A400 = 6378137.0 + 400e3


ORBITS = {"circular_400km_51.6deg": ReferenceOrbit.circular(MU, A400, np.radians(51.6)),
          "elliptical_e0.1": ReferenceOrbit(MU, 7.5e6, 0.1, np.radians(30.0), 0.0, 0.0, 0.7)}


@pytest.fixture(scope="module")
def ball():
    return free_ball(0.1, 0.1, 0.1)


def orbit_tumble(ball, orbit, T=6.0, dt=0.01, **options):
    """A 250 kg box tumbling 36 m from the chief (CoM off the body origin) for ``T`` seconds
    (CaptureSimulator ``options``: method, rtol, atol): ``(sim, E0, errors)`` with the errors
    against :func:`capture_orbit_oracle.target_oracle`, relative (position and drift to the
    drift's size), and the oracle's drift from straight-line motion and its angular velocity
    without the gravity-gradient torque."""
    c = np.array([0.05, -0.03, 0.02])
    I_c = np.array([[40.0, 1.0, -2.0], [1.0, 60.0, 3.0], [-2.0, 3.0, 75.0]])
    m = 250.0
    target = TargetBody(mass=m, com=c, inertia=I_c, shape=Box([1.0, 1.2, 1.5]))
    sim = CaptureSimulator(CaptureSystem(ball, target, forces=[ChiefFrameGravity(orbit)]), dt,
                           **options)
    g0 = vm.pose([30.0, -20.0, 10.0], [0.1, 0.2, -0.3, np.sqrt(1 - 0.14)])
    V0 = np.array([0.02, -0.01, 0.03, 0.03, -0.05, 0.08])
    sim.reset(vm.pose([-40.0, 0.0, 0.0]), np.zeros(6), np.zeros(0), np.zeros(0), g0, V0)
    E0 = sim.energy()["balance"]
    for _ in range(int(round(T / dt))):
        s = sim.step()
    R0 = g0[:3, :3]
    rho0, v0 = g0[:3, 3] + R0 @ c, R0 @ (V0[:3] + np.cross(V0[3:], c))
    rho, v, R, w = target_oracle(orbit, m, I_c, rho0, v0, quat_from_matrix(R0), V0[3:], T)
    R_s = s.g_T[:3, :3]
    rho_s = s.g_T[:3, 3] + R_s @ c
    v_s = R_s @ (s.V_T[:3] + np.cross(s.V_T[3:], c))
    drift = rho - (rho0 + T * v0)
    torque_free = solve_ivp(
        lambda t, y: np.concatenate([0.5 * quat_mul(y[:4], np.append(y[4:], 0.0)),
                                     np.linalg.solve(I_c, -np.cross(y[4:], I_c @ y[4:]))]),
        (0.0, T), np.concatenate([quat_from_matrix(R0), V0[3:]]), method="DOP853",
        rtol=1e-13, atol=1e-15).y[4:, -1]
    err = {"position": np.abs(rho_s - rho).max() / np.linalg.norm(rho),
           "drift": np.abs(rho_s - rho).max() / np.linalg.norm(drift),
           "velocity": np.abs(v_s - v).max() / np.linalg.norm(v),
           "attitude": np.abs(R_s - R).max(),
           "angular_velocity": np.abs(s.V_T[3:] - w).max() / np.linalg.norm(w),
           "drift_size": np.linalg.norm(drift),
           "torque_free": np.abs(torque_free - w).max() / np.linalg.norm(w)}
    return sim, E0, err


@pytest.mark.parametrize("name", list(ORBITS))
def test_target_in_orbit_matches_independent_dop853(ball, name):
    """6 s of the tumble of :func:`orbit_tumble`: CoM position, velocity, attitude and angular
    velocity within 1e-9 (relative) of the oracle, and the departure from straight-line
    motion (the tidal drift, about a millimetre) within 1e-7 of it.  The orbit's effects are
    far above the tolerance: the straight line misses by the drift, and the oracle without the
    gravity-gradient torque differs by more than 1e-5."""
    sim, E0, err = orbit_tumble(ball, ORBITS[name])
    assert err["drift_size"] > 1e-4 and err["torque_free"] > 1e-5
    assert err["drift"] <= 1e-7, err
    for k in ("position", "velocity", "attitude", "angular_velocity"):
        assert err[k] <= 1e-9, (k, err)
    # energy: kinetic + the elements' potential − ∫∂U/∂t closes (no contact here)
    E = sim.energy()
    assert abs(E["balance"] - E0) <= 1e-12 * max(E["target"], abs(E["potential"]))
    assert abs(E["field_work"]) > 1e-6 * E["target"]


# ----------------------------------------------------------------------------- the element
@pytest.fixture(scope="module")
def arm():
    return vm.load_model(ARM_URDF, gravity=(0.0, 0.0, 0.0))


def test_tidal_potential_matches_extended_precision(arm):
    """Point masses (no gradient terms): ``U = −μ Σ m_i (1/|r_c+ρ_i| − 1/r + r_c·ρ_i/r³)`` in
    40-digit arithmetic, body by body from Pinocchio's inertias, to 1e-12 relative (the
    float64 evaluation of the same expression loses ~6 digits to cancellation)."""
    rng = np.random.default_rng(3)
    q = rng.uniform(-1.0, 1.0, 7)
    g = vm.pose([3.0, -4.0, 2.0], [0.2, -0.1, 0.3, np.sqrt(1 - 0.14)])
    rc = np.array([4.1e6, -3.2e6, 4.0e6])
    U = TidalGravity(MU, rc, gradient=False).potential_energy(arm, g, q)
    pino = oracles.PinocchioOracle(read_urdf_source(ARM_URDF)[0], "SE3", (0, 0, 0), arm.joint_names)
    qp, gW = pino.to_pin_q(g, q)
    pin.forwardKinematics(pino.model, pino.data, qp)
    mpmath.mp.dps = 40
    rcm = [mpmath.mpf(float(x)) for x in rc]
    r = mpmath.sqrt(sum(x * x for x in rcm))
    ref = mpmath.mpf(0)
    for i in range(pino.model.njoints):
        I = pino.model.inertias[i]
        if I.mass == 0:
            continue
        p = gW[:3, :3] @ pino.data.oMi[i].act(I.lever) + gW[:3, 3]
        pm = [mpmath.mpf(float(x)) for x in p]
        s = mpmath.sqrt(sum((a + b) ** 2 for a, b in zip(rcm, pm)))
        ref += -MU * I.mass * (1 / s - 1 / r + sum(a * b for a, b in zip(rcm, pm)) / r ** 3)
    assert abs(U - float(ref)) <= 1e-12 * abs(float(ref))


def test_tidal_wrenches_are_the_gradient_of_the_potential(arm):
    """The element's spatial wrench (sum over bodies) is −∂U along rigid displacements of the
    whole system, its frame wrenches' generalized forces ``Σ J_fᵀ w_f`` are −∂U/∂q, and
    ``potential_rate`` is ∂U/∂t along the orbit: central differences, to 1e-6 relative."""
    rng = np.random.default_rng(5)
    q = rng.uniform(-1.0, 1.0, 7)
    g = vm.pose([3.0, -4.0, 2.0], [0.2, -0.1, 0.3, np.sqrt(1 - 0.14)])
    orbit = ORBITS["elliptical_e0.1"]
    fam = ChiefFrameGravity(orbit)
    e = fam.at(100.0)
    frames, spatial, rate, U = e.evaluate(arm, g, q)
    h = 1e-4
    for k in range(6):
        xi = np.zeros(6)
        xi[k] = h
        Up = e.potential_energy(arm, lie.se3_exp(xi) @ g, q)
        Um = e.potential_energy(arm, lie.se3_exp(-xi) @ g, q)
        assert abs(-(Up - Um) / (2 * h) - spatial[k]) <= 1e-6 * np.abs(spatial).max(), k
    Q = sum(arm.frame_jacobian(q, f).T @ w for f, w in frames.items())
    for j in range(7):
        dq = np.zeros(7)
        dq[j] = h
        dU = (e.potential_energy(arm, g, q + dq) - e.potential_energy(arm, g, q - dq)) / (2 * h)
        assert abs(-dU - Q[6 + j]) <= 1e-6 * np.abs(Q[6:]).max(), j
    ht = 1e-2
    dUdt = (fam.at(100.0 + ht).potential_energy(arm, g, q)
            - fam.at(100.0 - ht).potential_energy(arm, g, q)) / (2 * ht)
    assert abs(dUdt) > 0 and abs(rate - dUdt) <= 1e-6 * abs(dUdt)
    assert U == e.potential_energy(arm, g, q)


# ----------------------------------------------------------------------------- chaser + target
def pinocchio_external_wrench(pino, g, q, target, g_T, rc):
    """Spatial wrench [f; n] about the chief (inertial axes) of the orbit field on all the
    chaser's bodies (Pinocchio's joint inertias) and the target."""
    qp, gW = pino.to_pin_q(g, q)
    pin.forwardKinematics(pino.model, pino.data, qp)
    W = np.zeros(6)
    bodies = []
    for i in range(pino.model.njoints):
        I = pino.model.inertias[i]
        if I.mass == 0:
            continue
        Ri = gW[:3, :3] @ pino.data.oMi[i].rotation
        bodies.append((I.mass, gW[:3, :3] @ pino.data.oMi[i].act(I.lever) + gW[:3, 3],
                       Ri @ I.inertia @ Ri.T))
    R_T = g_T[:3, :3]
    bodies.append((target.mass, g_T[:3, 3] + R_T @ target.com, R_T @ target.inertia @ R_T.T))
    for m, p, I_w in bodies:
        F, tau = tidal_force(MU, m, rc, p, I_w)
        W[:3] += F
        W[3:] += np.cross(p, F) + tau
    return W


def contact_grasp_release(arm, forces, samples=None, options=None):
    """Contact, grasp, thrusters while grasped, release, free motion (the sequence of
    test_capture_grasp), the pair 2–5 m from the chief; ``samples`` collects (t, state)."""
    target = TargetBody(mass=60.0, com=[0.02, -0.01, 0.03],
                        inertia=[[5.0, 0.2, 0.0], [0.2, 4.0, 0.1], [0.0, 0.1, 6.0]],
                        shape=Box([0.6, 0.6, 0.6]))
    q = np.array([0.3, -1.0, 0.2, 2.0, 0.1, -0.9, 0.2])
    g = vm.pose([-2.0, 1.5, 0.8], [0.05, -0.02, 0.1, np.sqrt(1 - 0.0129)])
    sim = arm_box_capture(arm, target, g, [0.01, -0.02, 0.0, 0.0, 0.01, 0.0], q, np.full(7, 0.01),
                          forces, **(options or {}))
    out = {"h0": sim.momentum()["total"], "E0": sim.energy()["balance"], "touched": False}

    def run(k, **kw):
        for _ in range(k):
            sim.step(**kw)
            out["touched"] = out["touched"] or bool(sim.contacts)
            if samples is not None:
                samples.append(sim.state)
    if samples is not None:
        samples.append(sim.state)
    run(60, tau=APPROACH_EFFORT)
    assert sim.grasp(force=True)
    run(40, tau=GRASPED_EFFORT, base_wrench=THRUST)
    assert sim.release()
    run(40)
    return sim, target, out


@pytest.fixture(scope="module")
def runs(arm):
    """The sequence in orbit (with its samples), in free space, and with a vanishing μ."""
    orbit = ORBITS["circular_400km_51.6deg"]
    samples = []
    out = {"orbit": contact_grasp_release(arm, [ChiefFrameGravity(orbit)], samples),
           "free": contact_grasp_release(arm, []),
           "tiny": contact_grasp_release(
               arm, [ChiefFrameGravity(ReferenceOrbit.circular(1e-30, A400))])}
    out["samples"], out["reference"] = samples, orbit
    return out


def test_momentum_changes_by_the_external_impulse_in_orbit(arm, runs):
    """Through contact, grasp, thrusters and release in the chief frame of a 400 km orbit:
    total momentum − initial − thrusters' impulse = the elements' impulse (1e-12 of the
    momentum), and that impulse = Simpson's rule of the external wrench computed from
    Pinocchio's bodies and the target (1e-8 relative)."""
    sim, target, out = runs["orbit"]
    samples, orbit = runs["samples"], runs["reference"]
    assert out["touched"] and sim.energy()["weld_loss"] > 0
    s = sim.state
    h = sim.momentum()["total"]
    scale = np.abs(out["h0"]).max()
    ext = s.external_impulse
    assert np.abs(ext).max() > 1e-7
    assert np.abs(h - out["h0"] - s.impulse - ext).max() <= 1e-12 * scale
    pino = oracles.PinocchioOracle(read_urdf_source(ARM_URDF)[0], "SE3", (0, 0, 0),
                                   arm.joint_names)
    t = np.array([x.t for x in samples])
    W = np.array([pinocchio_external_wrench(pino, x.g, x.q, target, x.g_T,
                                            orbit.state(x.t)[0]) for x in samples])
    quad = simpson(W, x=t, axis=0)
    assert np.abs(quad - ext).max() <= 1e-8 * np.abs(ext).max(), (quad, ext)


def test_energy_balance_in_orbit_closes_as_in_free_space(runs):
    """The energy balance (kinetic + elastic + the field's potential − work − ∫∂U/∂t +
    dissipation + weld loss) drifts in orbit exactly as in free space (the contact's
    integration error, 1.4e-5 J of 3 J at these 0.5 ms steps) to 1e-6 of the field's potential:
    the field's accounts close."""
    sim, _, out = runs["orbit"]
    free, _, out_f = runs["free"]
    E, E_f = sim.energy(), free.energy()
    assert E["dissipated"] > 0 and E["weld_loss"] > 0 and E["field_work"] != 0
    drift, drift_f = E["balance"] - out["E0"], E_f["balance"] - out_f["E0"]
    assert abs(drift_f) <= 1e-5 * out_f["E0"]
    assert abs(drift - drift_f) <= 1e-6 * abs(E["potential"]), (drift, drift_f)


def test_vanishing_central_body_equals_free_space(runs):
    """With μ = 1e-30 (same orbit radius) the run equals the free-space run (forces=()) to
    round-off: the element path adds nothing else."""
    a, b = runs["tiny"][0], runs["free"][0]
    sa, sb = a.state, b.state
    for k in ("g", "V", "q", "qd", "g_T", "V_T", "impulse"):
        x, y = getattr(sa, k), getattr(sb, k)
        assert np.abs(x - y).max() <= 1e-13 * max(1.0, np.abs(y).max()), k
    assert abs(a.energy()["balance"] - b.energy()["balance"]) <= 1e-15


def test_generic_element_on_both_bodies_conserves_angular_momentum_about_the_attractor(ball):
    """``forces.TwoBody`` (the engine's element, evaluated on the chaser and on the target's
    one-link model) about a small central body (μ = 2 m³/s², 8–12 m away): its potential is
    invariant under rotations about the attractor, so the total angular momentum about it is
    conserved to round-off while the linear momentum changes by the elements' impulse; the
    energy with both potentials closes to the integration error."""
    target = TargetBody(mass=30.0, com=[0.05, 0.0, -0.02], inertia=np.diag([2.0, 3.0, 3.5]),
                        shape=Box([0.5, 0.6, 0.7]))
    tb = TwoBody(2.0, gradient=True)
    sim = CaptureSimulator(CaptureSystem(ball, target, forces=[tb]), 2e-3)
    sim.reset(vm.pose([8.0, 0.0, 0.0]), [0.0, 0.4, 0.05, 0.1, 0.0, 0.2], np.zeros(0),
              np.zeros(0), vm.pose([0.0, -10.0, 3.0], [0.1, 0.0, 0.2, np.sqrt(0.95)]),
              [0.35, 0.0, 0.0, 0.2, -0.3, 0.5])
    h0, E0 = sim.momentum()["total"], sim.energy()
    for _ in range(500):
        s = sim.step()
    h, E = sim.momentum()["total"], sim.energy()
    assert np.linalg.norm(h[:3] - h0[:3]) > 1e-2                 # gravity moved the pair
    assert np.abs(h[3:] - h0[3:]).max() <= 1e-12 * np.abs(h0).max()
    assert np.abs(h - h0 - s.external_impulse).max() <= 1e-12 * np.abs(h0).max()
    assert abs(E["potential"] - E0["potential"]) > 1e-3
    assert abs(E["balance"] - E0["balance"]) <= 1e-9 * (E0["chaser"] + E0["target"])
    # the target's one-link model carries the target's mass properties
    Mt = target_model(target).vehicle_inertia
    assert np.abs(Mt - target.spatial_inertia).max() <= 1e-12


def test_bad_force_inputs_are_named(ball):
    """A non-element in ``forces``, a bare element, ``two_body`` without ``orbit`` and an unknown
    ``orbit.initial_frame`` are refused, each naming the culprit."""
    from vm_dynamics.capture.orbit import orbit_forces
    target = TargetBody(mass=1.0, com=np.zeros(3), inertia=np.eye(3), shape=Box([1, 1, 1]))
    with pytest.raises(ValueError, match=r"capture forces\[1\]: expected a force element"):
        CaptureSystem(ball, target, forces=[TwoBody(), "gravity"])
    with pytest.raises(ValueError, match="capture forces: expected a list"):
        CaptureSystem(ball, target, forces=TwoBody())
    with pytest.raises(ValueError, match="two_body: a capture in orbit needs an orbit section"):
        orbit_forces({"mu": MU}, None)
    with pytest.raises(ValueError, match="orbit.initial_frame: expected lvlh or chief"):
        orbit_forces(None, {"altitude": 4e5, "initial_frame": "eci"})
    with pytest.raises(ValueError, match="two_body mu"):
        orbit_forces({"mu": -1.0}, {"altitude": 4e5})
    forces, orbit, frame = orbit_forces(None, {"altitude": 4e5, "inclination_deg": 51.6})
    assert frame == "lvlh" and abs(orbit.a - A400) < 1e-6 and forces[0].gradient
