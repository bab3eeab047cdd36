"""Benchmark robots: the same URDF fed to vm_dynamics, Pinocchio and MuJoCo.

* ``robot_xml(name)`` — URDF text of UR5, Panda (mimic finger joints made fixed: a 7-DoF arm
  carrying its hand) or B1-Z1, from the example-robot-data package installed in the venv;
* ``chain_urdf(n)`` — a synthetic serial chain of n revolute joints (for the scaling rows);
* ``pinocchio_model(xml, floating)`` — Pinocchio model with a free-flyer root;
* ``mjcf_from_urdf(xml, ...)`` — MJCF generated from the tree that ``vm_dynamics.model.urdf`` parses
  (fixed joints merged exactly, the same body frames, axes and inertias) with a free joint on
  the root, contacts and constraints disabled and no geoms;
* ``StateMap`` — exact conversion between our state ``(g, V, q, q̇)`` and MuJoCo's
  ``(qpos, qvel)`` (free joint: position + quaternion ``w x y z``; linear velocity in the world
  frame, angular velocity in the body frame);
* ``floating_computed_torque(robot)`` — a floating robot (UR5 by default) with gravity in one
  seeded state, with ``computed_torque``'s compiled inputs tracking a joint ramp (the A/B scripts' shared workload).
"""
from __future__ import annotations

import glob
import os
import sys
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import numpy as np

from vm_dynamics.core import lie
from vm_dynamics.model.urdf import parse_urdf

ROBOT_FILES = {
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "panda": "panda_description/urdf/panda.urdf",
    "b1_z1": "b1_description/urdf/b1-z1.urdf",
}


def robots_dir() -> str:
    for sp in sys.path:
        d = os.path.join(sp, "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(d):
            return d
    hits = glob.glob(os.path.join(sys.prefix, "**", "example-robot-data", "robots"),
                     recursive=True)
    if not hits:
        raise RuntimeError("example-robot-data robots directory not found")
    return hits[0]


def robot_xml(name: str) -> str:
    with open(os.path.join(robots_dir(), ROBOT_FILES[name]), encoding="utf-8") as fh:
        xml = fh.read()
    if name == "panda":
        xml = fix_mimic_joints(xml)
    return xml


def fix_mimic_joints(xml: str) -> str:
    """Make every mimic joint and the joint it mimics fixed (Panda: the two finger joints)."""
    root = ET.fromstring(xml)
    joints = {j.get("name"): j for j in root.findall("joint")}
    doomed = set()
    for j in joints.values():
        m = j.find("mimic")
        if m is not None:
            doomed.update({j.get("name"), m.get("joint")})
            j.remove(m)
    for name in doomed:
        j = joints[name]
        j.set("type", "fixed")
        for tag in ("axis", "limit", "dynamics", "safety_controller"):
            for e in j.findall(tag):
                j.remove(e)
    return ET.tostring(root, encoding="unicode")


def chain_urdf(n: int, seed: int = 0) -> str:
    """Serial chain: a 10 kg base and n revolute joints with cycling axes, 1 kg links of 0.15 m
    with off-axis centres of mass and full inertia tensors."""
    rng = np.random.default_rng(seed)
    axes = ["0 0 1", "0 1 0", "1 0 0"]
    parts = [f'<robot name="chain{n}">',
             '<link name="base"><inertial><mass value="10"/><origin xyz="0 0 0"/>'
             '<inertia ixx="0.5" iyy="0.6" izz="0.7" ixy="0" ixz="0" iyz="0"/></inertial></link>']
    parent = "base"
    for i in range(n):
        c = rng.uniform(-0.02, 0.02, 3) + [0, 0, 0.075]
        parts.append(
            f'<link name="l{i}"><inertial><mass value="1.0"/>'
            f'<origin xyz="{c[0]:.6f} {c[1]:.6f} {c[2]:.6f}" rpy="0.1 0.2 0.3"/>'
            '<inertia ixx="0.004" iyy="0.005" izz="0.002" ixy="0.0001" ixz="0" iyz="0.0002"/>'
            '</inertial></link>')
        parts.append(
            f'<joint name="j{i}" type="revolute"><parent link="{parent}"/><child link="l{i}"/>'
            f'<origin xyz="0 0 {0.15 if i else 0.1}" rpy="0 0 0"/><axis xyz="{axes[i % 3]}"/>'
            '<limit lower="-3" upper="3" effort="10" velocity="5"/></joint>')
        parent = f"l{i}"
    parts.append("</robot>")
    return "".join(parts)


def pinocchio_model(xml: str, joint_names, floating: bool = True):
    """Pinocchio model + data with a free-flyer root, and the index maps of our joints."""
    import pinocchio as pin
    model = (pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating
             else pin.buildModelFromXML(xml))
    iq = [model.joints[model.getJointId(j)].idx_q for j in joint_names]
    iv = [model.joints[model.getJointId(j)].idx_v for j in joint_names]
    for j in joint_names:
        if model.joints[model.getJointId(j)].nq != 1:
            raise ValueError(f"joint {j}: continuous joints are not handled by the bench map")
    return model, model.createData(), np.array(iq), np.array(iv)


def pin_state(pmodel, iq, iv, g, V, q, qd, tau):
    """Pinocchio (q, v, τ) of our state (free-flyer: position, quaternion x y z w; body twist)."""
    import pinocchio as pin
    qp = np.zeros(pmodel.nq)
    qp[:3] = g[:3, 3]
    qp[3:7] = pin.Quaternion(g[:3, :3]).coeffs()
    qp[iq] = q
    v, u = np.zeros(pmodel.nv), np.zeros(pmodel.nv)
    v[:6], v[iv] = V, qd
    u[iv] = tau
    return qp, v, u


def _fmt(x):
    return " ".join(f"{float(v):.17g}" for v in np.ravel(x))


def _quat_wxyz(R):
    """Rotation matrix → unit quaternion (w, x, y, z), w ≥ 0 (Shepperd's method)."""
    t = np.trace(R)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        qv = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        qv = [0.0] * 4
        qv[0] = (R[k, j] - R[j, k]) / s
        qv[1 + i] = 0.25 * s
        qv[1 + j] = (R[j, i] + R[i, j]) / s
        qv[1 + k] = (R[k, i] + R[i, k]) / s
    qv = np.array(qv)
    return qv / np.linalg.norm(qv) * (1.0 if qv[0] >= 0 else -1.0)


def _quat_to_R(qw):
    w, x, y, z = qw
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _inertial(M):
    """(mass, CoM, 3×3 inertia about the CoM) of a 6×6 spatial inertia about the body origin."""
    m = M[0, 0]
    c = lie.unskew(M[3:, :3]) / m
    C = lie.skew(c)
    Ic = M[3:, 3:] + m * C @ C
    return m, c, 0.5 * (Ic + Ic.T)


def mjcf_from_urdf(xml: str, gravity=(0.0, 0.0, -9.81), dt: float = 1e-3,
                   integrator: str = "RK4") -> str:
    """MJCF of the URDF's kinematic tree with a free root (see the module docstring)."""
    tree = parse_urdf(xml)
    bodies = tree.bodies
    children = {i: [] for i in range(len(bodies))}
    for i, bd in enumerate(bodies[1:], start=1):
        children[bd.parent].append(i)

    def body(i, indent):
        bd = bodies[i]
        m, c, Ic = _inertial(bd.inertia)
        pad = " " * indent
        if i == 0:
            head = f'{pad}<body name="vehicle" pos="0 0 0">\n{pad}  <freejoint name="root"/>\n'
        else:
            head = (f'{pad}<body name="{bd.name}" pos="{_fmt(bd.home[:3, 3])}" '
                    f'quat="{_fmt(_quat_wxyz(bd.home[:3, :3]))}">\n')
            jt = "slide" if bd.joint_type == "prismatic" else "hinge"
            head += (f'{pad}  <joint name="{bd.joint}" type="{jt}" axis="{_fmt(bd.axis)}" '
                     f'limited="false" damping="0" armature="0" frictionloss="0"/>\n')
        full = [Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2], Ic[1, 2]]
        head += (f'{pad}  <inertial pos="{_fmt(c)}" mass="{m:.17g}" '
                 f'fullinertia="{_fmt(full)}"/>\n')
        return head + "".join(body(k, indent + 2) for k in children[i]) + f"{pad}</body>\n"

    return (f'<mujoco model="{tree.name}">\n'
            '  <compiler angle="radian" balanceinertia="false" boundmass="0" boundinertia="0"/>\n'
            f'  <option timestep="{dt:.17g}" integrator="{integrator}" gravity="{_fmt(gravity)}">\n'
            '    <flag contact="disable" constraint="disable" energy="enable"/>\n'
            '  </option>\n'
            '  <worldbody>\n' + body(0, 4) + "  </worldbody>\n</mujoco>\n")


class StateMap:
    """Exact conversion between ``(g, V, q, q̇)`` and MuJoCo ``(qpos, qvel)``."""

    def __init__(self, mj_model, joint_names):
        import mujoco
        self.nq, self.nv = mj_model.nq, mj_model.nv
        jid = [mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in joint_names]
        if min(jid) < 0:
            raise ValueError("joint missing in the MJCF")
        self.iq = np.array([mj_model.jnt_qposadr[j] for j in jid])
        self.iv = np.array([mj_model.jnt_dofadr[j] for j in jid])

    def to_mj(self, g, V, q, qd):
        qpos, qvel = np.zeros(self.nq), np.zeros(self.nv)
        R = g[:3, :3]
        qpos[:3], qpos[3:7] = g[:3, 3], _quat_wxyz(R)
        qvel[:3], qvel[3:6] = R @ V[:3], V[3:]
        qpos[self.iq], qvel[self.iv] = q, qd
        return qpos, qvel

    def from_mj(self, qpos, qvel):
        g = np.eye(4)
        quat = qpos[3:7] / np.linalg.norm(qpos[3:7])
        g[:3, :3], g[:3, 3] = _quat_to_R(quat), qpos[:3]
        V = np.r_[g[:3, :3].T @ qvel[:3], qvel[3:6]]
        return g, V, qpos[self.iq].copy(), qvel[self.iv].copy()


def floating_computed_torque(robot: str = "ur5", dt: float = 1e-3) -> SimpleNamespace:
    """The floating ``robot`` (gravity; a :func:`robot_xml` name), one seeded state and the
    computed-torque inputs that track it.

    Uses only the public API, so a checkout from before any refactor runs it unchanged (the A/B
    scripts import it into both trees' processes).  Fields: ``model``, ``dt``, the state ``g, V,
    q, qd`` (seed 7), ``tau`` a small seeded joint effort (open-loop runs), ``tau_fn, bw_fn``
    ``computed_torque`` (free floating, kp 25, kd 10) following waypoints from ``q`` to
    ``q + 0.5`` over 5 s.
    """
    import vm_dynamics as vm
    from vm_dynamics.control import get_controller
    from vm_dynamics.control.references import reference_from_config
    m = vm.load_model(robot_xml(robot), base="SE3", gravity=(0.0, 0.0, -9.81))
    rng = np.random.default_rng(7)
    g = vm.lie.se3_exp(np.r_[rng.normal(size=3), rng.uniform(-2, 2, 3)])
    V, q, qd = rng.normal(size=6), 0.5 * rng.normal(size=m.n), rng.normal(size=m.n)
    tau = 0.1 * rng.normal(size=m.n)
    ctrl = get_controller("computed_torque", {"mode": "free_floating", "kp": 25, "kd": 10})
    ctrl.reset(m, vm.State(0.0, g, V, q, qd))
    ref = reference_from_config({"joint": {"type": "waypoints", "times": [0.0, 5.0],
                                           "positions": [list(q), list(q + 0.5)]}})
    tau_fn, bw_fn = ctrl.inputs(ref)
    return SimpleNamespace(model=m, dt=dt, g=g, V=V, q=q, qd=qd, tau=tau, tau_fn=tau_fn,
                           bw_fn=bw_fn)
