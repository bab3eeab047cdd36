"""Grasp as a change of topology (vm_dynamics.capture.grasp, Model.with_attached_body) against
Pinocchio.

Oracle: the spacecraft arm's URDF with the target appended as a link on a fixed joint at the
grasp pose X under ``ee_link``, loaded by Pinocchio (free-flyer root).  Pinocchio's CRBA of the
merged and of the original robot, its LOCAL frame Jacobian of the target link, and its momentum
(sum of the bodies' momenta) give the impulse equation (G2) and the total momentum independently
of vm_dynamics' recursions.
"""
from __future__ import annotations

import numpy as np
import oracles
import pinocchio as pin
import pytest
from capture_fixtures import APPROACH_EFFORT, ARM_URDF, GRASPED_EFFORT, THRUST, arm_box_capture

import vm_dynamics as vm
from vm_dynamics.capture import (
    Box,
    TargetBody,
    grasp_velocity,
)
from vm_dynamics.core.rotations import matrix_to_rpy
from vm_dynamics.model.urdf import read_urdf_source

M_T, C_T = 150.0, np.array([0.04, -0.02, 0.25])
I_T = np.array([[12.0, 0.3, -0.2], [0.3, 9.0, 0.4], [-0.2, 0.4, 14.0]])
X = vm.pose([0.02, -0.01, 0.12], [0.1, -0.2, 0.3, np.sqrt(1 - 0.14)])   # target B in ee_link


def merged_urdf(xml: str, X: np.ndarray) -> str:
    rpy = matrix_to_rpy(X[:3, :3])
    f = lambda v: " ".join(f"{x:.17g}" for x in v)     # noqa: E731
    extra = f"""
  <link name="target_body"><inertial><origin xyz="{f(C_T)}" rpy="0 0 0"/><mass value="{M_T!r}"/>
    <inertia ixx="{float(I_T[0, 0])!r}" ixy="{float(I_T[0, 1])!r}" ixz="{float(I_T[0, 2])!r}" iyy="{float(I_T[1, 1])!r}"
             iyz="{float(I_T[1, 2])!r}" izz="{float(I_T[2, 2])!r}"/></inertial></link>
  <joint name="grasp_weld" type="fixed"><parent link="ee_link"/><child link="target_body"/>
    <origin xyz="{f(X[:3, 3])}" rpy="{f(rpy)}"/></joint>
</robot>"""
    return xml[:xml.rindex("</robot>")] + extra


@pytest.fixture(scope="module")
def setup():
    xml = read_urdf_source(ARM_URDF)[0]
    model = vm.load_model(xml, gravity=(0, 0, 0))
    target = TargetBody(mass=M_T, com=C_T, inertia=I_T, shape=Box([0.6, 0.6, 0.6]))
    orig = oracles.PinocchioOracle(xml, base="SE3", gravity=(0, 0, 0),
                                   joint_names=model.joint_names)
    merged = oracles.PinocchioOracle(merged_urdf(xml, X), base="SE3", gravity=(0, 0, 0),
                                     joint_names=model.joint_names)
    return model, target, orig, merged


def state(seed):
    rng = np.random.default_rng(seed)
    g = vm.pose(rng.normal(size=3), (lambda q: q / np.linalg.norm(q))(rng.normal(size=4)))
    q = rng.uniform(-1.0, 1.0, 7)
    return g, rng.normal(size=6) * 0.1, q, rng.normal(size=7) * 0.2, rng.normal(size=6) * 0.3


def target_momentum_by_hand(g_T, V_T):
    """[m v_c; R I_c Rᵀ ω + m p_c × v_c] in the inertial frame, about its origin."""
    R, p = g_T[:3, :3], g_T[:3, 3]
    w = R @ V_T[3:]
    v_c = R @ V_T[:3] + np.cross(w, R @ C_T)
    p_c = p + R @ C_T
    return np.concatenate([M_T * v_c, R @ I_T @ R.T @ w + M_T * np.cross(p_c, v_c)])


def test_with_attached_body_mass_matrix_matches_pinocchio(setup):
    model, target, orig, merged = setup
    mm = model.with_attached_body("ee_link", target.spatial_inertia, X)
    for seed in range(3):
        g, V, q, qd, _ = state(seed)
        M_ref = merged.mass_matrix(q, g)
        for backend in ("auto", "lp"):
            M = mm.mass_matrix(q, backend=backend)
            assert np.abs(M - M_ref).max() <= 1e-10 * np.abs(M_ref).max()
        assert np.abs(mm.momentum(g, V, q, qd) - merged.momentum(g, V, q, qd)).max() \
            <= 1e-10 * np.abs(merged.momentum(g, V, q, qd)).max()
    assert mm.total_mass == pytest.approx(model.total_mass + M_T, rel=1e-15)
    # the original is untouched
    assert np.abs(model.mass_matrix(q) - orig.mass_matrix(q, g)).max() <= 1e-10 * np.abs(
        orig.mass_matrix(q, g)).max()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grasp_velocities_match_pinocchio_impulse_equation(setup, seed):
    model, target, orig, merged = setup
    g, V, q, qd, _ = state(seed)
    g_E = g @ model.frame_pose(q, "ee_link")
    g_T = g_E @ X
    V_T = np.random.default_rng(100 + seed).normal(size=6) * 0.3
    Vp, qdp = grasp_velocity(model, target.spatial_inertia, q, V, qd, V_T, "ee_link", X)

    # Pinocchio: (M + Jᵀ𝕄J) from the merged CRBA, M from the original, J the LOCAL Jacobian
    qp, _ = merged.to_pin_q(g, q)
    fid = merged.frame_id("target_body")
    pin.computeJointJacobians(merged.model, merged.data, qp)
    pin.updateFramePlacements(merged.model, merged.data)
    J = pin.getFrameJacobian(merged.model, merged.data, fid, pin.LOCAL)[:, merged.v_idx]
    M_T6 = pin.Inertia(M_T, C_T, I_T).matrix()          # about B's origin, [v; ω]
    nu = np.concatenate([V, qd])
    rhs = orig.mass_matrix(q, g) @ nu + J.T @ M_T6 @ V_T
    nu_ref = np.linalg.solve(merged.mass_matrix(q, g), rhs)
    scale = np.abs(nu_ref).max()
    assert np.abs(np.concatenate([Vp, qdp]) - nu_ref).max() <= 1e-10 * scale

    h_before = orig.momentum(g, V, q, qd) + target_momentum_by_hand(g_T, V_T)
    h_after = merged.momentum(g, Vp, q, qdp)
    assert np.abs(h_after - h_before).max() <= 1e-10 * np.abs(h_before).max()

    # the plastic weld loses ½ Δᵀ (𝕄_T⁻¹ + J M⁻¹ Jᵀ)⁻¹ Δ, Δ = V_T⁻ − J ν⁻ (docs/capture.md)
    M = orig.mass_matrix(q, g)
    T_before = 0.5 * nu @ M @ nu + 0.5 * V_T @ M_T6 @ V_T
    nu_p = np.concatenate([Vp, qdp])
    T_after = 0.5 * nu_p @ merged.mass_matrix(q, g) @ nu_p
    D = V_T - J @ nu
    loss = 0.5 * D @ np.linalg.solve(np.linalg.inv(M_T6) + J @ np.linalg.solve(M, J.T), D)
    assert abs((T_before - T_after) - loss) <= 1e-10 * T_before


def test_grasp_and_release_in_the_simulator_conserve_momentum(setup):
    """Contact, grasp (weld at the current relative pose), motion while grasped (with a base
    wrench), release, free motion: the total momentum (the chaser's momentum map + the
    target's) equals the initial one plus the base wrench's spatial impulse to 1e-10 through all
    of it, after release the target moves with its attachment's twist, and the energy balance
    closes with the contact dissipation and the weld's loss."""
    model, target, _, _ = setup
    g, V, q, qd, _ = state(5)
    sim = arm_box_capture(model, target, g, V, q, qd)      # box face 2 mm above the tip
    h0 = sim.momentum()["total"]
    E0 = sim.energy()["balance"]
    scale = np.abs(h0).max()
    touched = False
    for _ in range(60):
        sim.step(tau=APPROACH_EFFORT)
        touched = touched or bool(sim.contacts)
    assert touched
    assert not sim.can_grasp()                    # the fixture (B's origin) is 0.35 m away
    assert sim.grasp(force=True) and sim.grasped
    h_g = sim.momentum()["total"]
    assert np.abs(h_g - h0).max() <= 1e-10 * scale
    X_w = sim.weld
    for _ in range(40):     # with thrusters: the base wrench's impulse is the only change
        s = sim.step(tau=GRASPED_EFFORT, base_wrench=THRUST)
    g_E = s.g @ model.frame_pose(s.q, "ee_link")
    assert np.abs(g_E @ X_w - s.g_T).max() <= 1e-12      # welded
    assert np.abs(s.impulse).max() > 1e-2
    h0 = h0 + s.impulse
    assert np.abs(sim.momentum()["total"] - h0).max() <= 1e-10 * scale
    V_att = oracles.pose_to_se3(X_w).toActionMatrixInverse() @ (model.frame_jacobian(s.q, "ee_link")
                                        @ np.concatenate([s.V, s.qd]))
    assert sim.release() and not sim.grasped
    s2 = sim.state
    assert np.abs(s2.V_T - V_att).max() <= 1e-10 * np.abs(V_att).max()
    assert np.abs(sim.momentum()["total"] - h0).max() <= 1e-10 * scale
    for _ in range(20):
        sim.step()
    assert np.abs(sim.momentum()["total"] - h0).max() <= 1e-10 * scale
    E = sim.energy()        # contact dissipation, the weld's loss, the efforts' work
    assert E["weld_loss"] > 0 and E["dissipated"] > 0 and E["work"] != 0
    assert abs(E["balance"] - E0) <= 1e-6 * E0, (E["balance"] - E0, E0)
