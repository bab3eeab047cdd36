"""Small URDFs built in code for tests: random trees with full inertia tensors and rotated
inertial frames, and deliberately broken variants."""
from __future__ import annotations

import numpy as np


def _inertia_xml(rng, mass, scale=0.1):
    # physically valid inertia: principal moments from a random box, rotated randomly
    a, b, c = rng.uniform(0.2, 1.0, size=3) * scale
    Ixx, Iyy, Izz = mass / 12 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    I = Q @ np.diag([Ixx, Iyy, Izz]) @ Q.T
    xyz = " ".join(f"{v:.17g}" for v in rng.normal(size=3) * 0.1)
    rpy = " ".join(f"{v:.17g}" for v in rng.uniform(-np.pi, np.pi, size=3))
    return (f'<inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{mass:.17g}"/>'
            f'<inertia ixx="{I[0, 0]:.17g}" ixy="{I[0, 1]:.17g}" ixz="{I[0, 2]:.17g}" '
            f'iyy="{I[1, 1]:.17g}" iyz="{I[1, 2]:.17g}" izz="{I[2, 2]:.17g}"/></inertial>')


def random_tree_urdf(seed=0, n=5, branching=True, prismatic=True, base_mass=20.0,
                     with_fixed=True) -> str:
    """A random tree: revolute/prismatic/continuous joints with random axes, origins, inertias,
    plus fixed-joint dummy links (zero mass) and a fixed sensor link with mass."""
    rng = np.random.default_rng(seed)
    links = [f'<link name="base">{_inertia_xml(rng, base_mass, 1.0)}</link>']
    joints = []
    for i in range(1, n + 1):
        parent = "base" if i == 1 else (f"l{rng.integers(1, i)}" if branching else f"l{i - 1}")
        types = ["revolute", "continuous"] + (["prismatic"] if prismatic else [])
        jtype = types[i % len(types)]
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        xyz = " ".join(f"{v:.17g}" for v in rng.normal(size=3) * 0.3)
        rpy = " ".join(f"{v:.17g}" for v in rng.uniform(-np.pi, np.pi, size=3))
        ax = " ".join(f"{v:.17g}" for v in axis)
        limit = '<limit lower="-2" upper="2" effort="100" velocity="3"/>' if jtype != "continuous" else ""
        links.append(f'<link name="l{i}">{_inertia_xml(rng, rng.uniform(0.5, 3.0))}</link>')
        joints.append(f'<joint name="j{i}" type="{jtype}"><parent link="{parent}"/>'
                      f'<child link="l{i}"/><origin xyz="{xyz}" rpy="{rpy}"/>'
                      f'<axis xyz="{ax}"/>{limit}</joint>')
    if with_fixed:
        links.append('<link name="tool0"/>')
        joints.append(f'<joint name="tool_fixed" type="fixed"><parent link="l{n}"/>'
                      '<child link="tool0"/><origin xyz="0.1 0 0.05" rpy="0.3 0.2 0.1"/></joint>')
        links.append(f'<link name="camera">{_inertia_xml(rng, 0.7)}</link>')
        joints.append('<joint name="camera_fixed" type="fixed"><parent link="base"/>'
                      '<child link="camera"/><origin xyz="0.4 0.1 0.2" rpy="0 0.5 0"/></joint>')
    return '<robot name="random_tree">' + "".join(links) + "".join(joints) + "</robot>"
