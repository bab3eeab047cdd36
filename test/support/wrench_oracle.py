"""Independent oracle for a wrench at a frame of the spacecraft arm: Pinocchio's ABA with the
wrench as an external force, integrated by scipy's DOP853 on the free-flyer state
``[p, quaternion (x, y, z, w), V, q, q̇]`` (``ṗ = R v``, ``q̇uat = ½ quat ⊗ (0, ω)``).  Nothing
here uses vm_dynamics' dynamics: the URDF is expanded by xacro and read by Pinocchio."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from oracles import PinocchioOracle
from scipy.integrate import solve_ivp

SPACECRAFT = Path(__file__).resolve().parents[2] / "urdf" / "spacecraft_arm.urdf.xacro"


def _rotation(x):
    x = x / np.linalg.norm(x)
    qx, qy, qz, qw = x
    return np.array([
        [1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
        [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
        [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)]])


def spacecraft_oracle(joint_names) -> PinocchioOracle:
    """The spacecraft arm in Pinocchio, without gravity, joints in ``joint_names`` order."""
    import xacro
    return PinocchioOracle(xacro.process_file(str(SPACECRAFT)).toxml(), base="SE3",
                           gravity=(0.0, 0.0, 0.0), joint_names=list(joint_names))


def from_rest(oracle, p0, quat0, q0, frame_wrenches, times):
    """``[(g, V, q, q̇)]`` at ``times`` of the free system starting at rest at ``(p0, quat0,
    q0)`` under constant ``frame_wrenches`` ``{frame: [f; n]}`` (frame axes)."""
    n = len(q0)

    def rhs(_, x):
        R = _rotation(x[3:7])
        g = np.eye(4)
        g[:3, :3], g[:3, 3] = R, x[:3]
        V, q, qd = x[7:13], x[13:13 + n], x[13 + n:]
        Vdot, qdd = oracle.aba(g, V, q, qd, np.zeros(n), frame_wrenches=frame_wrenches)
        qx, qy, qz, qw = x[3:7]
        wx, wy, wz = V[3:]
        dquat = 0.5 * np.array([qw * wx + qy * wz - qz * wy, qw * wy + qz * wx - qx * wz,
                                qw * wz + qx * wy - qy * wx, -qx * wx - qy * wy - qz * wz])
        return np.concatenate([R @ V[:3], dquat, Vdot, qd, qdd])
    x0 = np.concatenate([p0, quat0, np.zeros(6), q0, np.zeros(n)])
    times = np.asarray(times, dtype=float)
    sol = solve_ivp(rhs, (0.0, float(times.max())), x0, method="DOP853", t_eval=times,
                    rtol=1e-13, atol=1e-15)
    out = []
    for x in sol.y.T:
        g = np.eye(4)
        g[:3, :3], g[:3, 3] = _rotation(x[3:7]), x[:3]
        out.append((g, x[7:13], x[13:13 + n], x[13 + n:]))
    return out
