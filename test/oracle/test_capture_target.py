"""The capture target alone (vm_dynamics.capture.body + the product RKMK step of
vm_dynamics.capture.system) against an independent oracle.

Oracle: the torque-free rigid body written from the physics, not from the SE(3) formulation: the
CoM moves on a straight line at constant velocity, the attitude is a unit quaternion (x, y, z, w)
with ``q̇ = ½ q ⊗ [ω; 0]`` and Euler's equations ``I_c ω̇ = −ω × I_c ω`` about the CoM, integrated by
scipy's DOP853 at rtol 1e-13.  The body frame is deliberately *not* at the CoM, so the test also
checks the spatial inertia about an offset origin and the momentum map.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import vm_dynamics as vm
from vm_dynamics.capture import Box, CaptureSimulator, CaptureSystem, TargetBody
from vm_dynamics.core.rotations import matrix_from_quat, quat_from_matrix

BALL = """<robot name="ball"><link name="ball"><inertial><mass value="2"/><origin xyz="0 0 0"/>
<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>"""


def quat_mul(a, b):
    """Hamilton product of quaternions in x, y, z, w order."""
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), [aw * bw - av @ bv]])


def euler_oracle(I_c, q0, w0, T):
    def rhs(t, s):
        q, w = s[:4], s[4:]
        return np.concatenate([0.5 * quat_mul(q, np.append(w, 0.0)),
                               np.linalg.solve(I_c, -np.cross(w, I_c @ w))])
    sol = solve_ivp(rhs, (0.0, T), np.concatenate([q0, w0]), method="DOP853", rtol=1e-13,
                    atol=1e-15)
    q = sol.y[:4, -1]
    return matrix_from_quat(q / np.linalg.norm(q)), sol.y[4:, -1]


@pytest.fixture(scope="module")
def chaser():
    return vm.load_model(BALL, gravity=(0.0, 0.0, 0.0))


@pytest.mark.parametrize("method, dt, tol", [("rkmk4", 1e-3, 1e-9), ("rkmk4", 5e-3, 1e-8)])
def test_torque_free_tumble_matches_euler_equations(chaser, method, dt, tol):
    """Pose and twist after 6 s of an asymmetric tumble (CoM off the body origin) within
    ``tol`` of the quaternion/Euler-equation oracle; the momentum stays exact to round-off."""
    c = np.array([0.05, -0.03, 0.02])
    I_c = np.array([[4.0, 0.1, -0.2], [0.1, 6.0, 0.3], [-0.2, 0.3, 7.5]])
    m = 80.0
    target = TargetBody(mass=m, com=c, inertia=I_c, shape=Box([1.0, 1.2, 1.5]))
    sim = CaptureSimulator(CaptureSystem(chaser, target), dt, method)
    g0 = vm.pose([1.0, -2.0, 0.5], [0.1, 0.2, -0.3, np.sqrt(1 - 0.14)])
    V0 = np.array([0.02, -0.01, 0.03, 0.3, -0.5, 0.8])
    far = vm.pose([50.0, 0.0, 0.0])
    sim.reset(far, np.zeros(6), np.zeros(0), np.zeros(0), g0, V0)
    h0 = sim.momentum()["target"]
    T = 6.0
    for _ in range(int(round(T / dt))):
        s = sim.step()
    R0, p0 = g0[:3, :3], g0[:3, 3]
    w0 = V0[3:]
    v_com = R0 @ (V0[:3] + np.cross(w0, c))        # inertial CoM velocity
    R_ref, w_ref = euler_oracle(I_c, quat_from_matrix(R0), w0, T)
    p_com = p0 + R0 @ c + T * v_com
    p_ref = p_com - R_ref @ c
    v_ref = R_ref.T @ v_com - np.cross(w_ref, c)     # body twist at the body origin
    assert abs(s.t - T) < 1e-9
    assert np.abs(s.g_T[:3, :3] - R_ref).max() <= tol
    assert np.abs(s.g_T[:3, 3] - p_ref).max() <= tol * 10
    assert np.abs(s.V_T[3:] - w_ref).max() <= tol
    assert np.abs(s.V_T[:3] - v_ref).max() <= tol
    h1 = sim.momentum()["target"]
    assert np.abs(h1 - h0).max() <= 1e-13 * np.abs(h0).max()


def test_axisymmetric_tumble_matches_closed_form(chaser):
    """An axisymmetric body (I₁ = I₂): ω precesses about the symmetry axis at
    λ = (I₃ − I₁)/I₁ · ω₃ in the body frame (closed form: ω̇₁ = −λω₂, ω̇₂ = λω₁)."""
    I1, I3 = 5.0, 8.0
    target = TargetBody(mass=30.0, com=np.zeros(3), inertia=np.diag([I1, I1, I3]),
                        shape=Box([1.0, 1.0, 1.0]))
    sim = CaptureSimulator(CaptureSystem(chaser, target), 2e-3)
    w0 = np.array([0.4, 0.0, 1.1])
    sim.reset(vm.pose([50.0, 0, 0]), np.zeros(6), np.zeros(0), np.zeros(0), np.eye(4),
              np.concatenate([np.zeros(3), w0]))
    T = 4.0
    for _ in range(int(round(T / 2e-3))):
        s = sim.step()
    lam = (I3 - I1) / I1 * w0[2]
    w_ref = np.array([w0[0] * np.cos(lam * T) - w0[1] * np.sin(lam * T),
                      w0[0] * np.sin(lam * T) + w0[1] * np.cos(lam * T), w0[2]])
    assert np.abs(s.V_T[3:] - w_ref).max() <= 1e-9
