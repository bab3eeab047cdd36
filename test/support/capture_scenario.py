"""The capture scenario of the node tests (a chaser, a tumbling box within grasp reach) and an
independent expression of the box's momentum."""
from __future__ import annotations

import numpy as np

MASS, INERTIA = 100.0, np.diag([4.0, 5.0, 6.0])
#: ee_link is at (2.2092, 0, 0.6488) with its z axis along +x at the initial joint positions;
#: the fixture (on the box's −x face) starts 1.3 mm from it, within the tolerances
CAPTURE = {
    "robot_description_file": "spacecraft_arm.urdf.xacro", "base_type": "SE3",
    "gravity": [0.0, 0.0, 0.0], "integrator": "rkmk4", "dt": 0.002,
    "joints": [f"joint{k}" for k in range(1, 8)],
    "initial": {"joint_positions": [0.0, -1.2, 0.0, 2.2, 0.0, -1.0, 0.0]},
    "capture": {
        "target": {
            "name": "target", "mass": MASS, "inertia": [4.0, 5.0, 6.0],
            "shape": {"type": "box", "size": [0.4, 0.4, 0.4]},
            "fixture": {"position": [-0.25, 0.0, 0.0],
                        "orientation": [0.0, 0.7071067811865476, 0.0, 0.7071067811865476]},
            "initial": {"position": [2.46, 0.0, 0.6488], "orientation": [0.0, 0.0, 0.0, 1.0],
                        "twist": [0.0, 0.0, 0.0, 0.01, 0.02, 0.005]}},
        "contact": {"stiffness": 1.0e5, "exponent": 1.5, "restitution": 0.5,
                    "primitives": {"tip": {"frame": "ee_link",
                                           "shape": {"type": "sphere", "radius": 0.03}}}},
        "grasp": {"frame": "ee_link", "position_tol": 0.02, "angle_tol": 0.1}},
}


def target_momentum(g, V):
    """``Ad_{g⁻¹}ᵀ 𝕄 V`` of the box (CoM at its origin), inertial frame about the origin."""
    M = np.zeros((6, 6))
    M[:3, :3], M[3:, 3:] = MASS * np.eye(3), INERTIA
    R, p = g[:3, :3], g[:3, 3]
    h = M @ V                                   # body momentum [linear; angular]
    lin = R @ h[:3]
    return np.concatenate([lin, R @ h[3:] + np.cross(p, lin)])
