"""Bring your own robot (issue 11) and the loader's rejections (issue 14): mimic joints, locked
joints, mounting an arm on a vehicle, singular models, paper 004's prismatic robot, xacro as code.

Oracles:
* Pinocchio's own mimic support (``buildModelFromUrdf(path, mimic=True)``: CRBA, RNEA, frame
  kinematics and Jacobians; its ABA refuses mimic joints, so forward dynamics is checked against
  ``M⁻¹(τ − nle)``) on example-robot-data's unmodified Panda (gripper) and Baxter;
* the full-coordinate model (every mimic joint made independent) with the coupling applied by
  hand, ``G`` built here from the XML: ``M_red = diag(I, G)ᵀ M diag(I, G)``, ``τ = Gᵀ τ_full``
  (Panda, Baxter, Talos with mimics across branches, PR2, a synthetic chain of mimics);
* ``pinocchio.buildReducedModel`` for locked joints;
* a hand-spliced URDF (vehicle link + fixed joint) for mounting, to 1e-12;
* the closed forms (105), (106), (108) of paper 004 (corrected, seeds-From §3.1).

The LP reference is called explicitly (``vm_dynamics.dynamics.lp``) because the O(n) path gets the
coupling separately.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np
import oracles
import pinocchio as pin
import pytest
from conftest import erd_robots_dir

import vm_dynamics as vm
from vm_dynamics.core import lie
from vm_dynamics.dynamics import lp

RTOL = 1e-9


def erd(rel):
    return os.path.join(erd_robots_dir(), rel)


PANDA = "panda_description/urdf/panda.urdf"
BAXTER = "baxter_description/urdf/baxter.urdf"
TALOS = "talos_data/robots/talos_full_v2.urdf"
PR2 = "pr2_description/urdf/pr2.urdf"


def close(a, b, what, rtol=RTOL, scale=None):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    s = max(1.0, float(np.abs(b).max()) if scale is None else scale)
    err = float(np.abs(a - b).max()) if a.size else 0.0
    assert err <= rtol * s, f"{what}: max abs err {err:.3e} (scale {s:.3e})"
    return err / s          # relative to max(1, |reference|)


# ------------------------------------------------------------------ LP reference helpers
def lp_M(m, q):
    t = lp.lp_terms(m, np.asarray(q, float), derivatives=False)
    return np.block([[t.M0, t.M0m], [t.M0m.T, t.Mm]])


def lp_fd(m, g, V, q, qd, tau, bw=None, fw=None):
    Vd, qdd, _ = lp.forward_dynamics(m, g, V, q, qd, tau, bw, fw)
    return Vd, qdd


def lp_id(m, g, V, q, qd, Vd, qdd, fw=None):
    return lp.inverse_dynamics(m, g, V, q, qd, Vd, qdd, frame_wrenches=fw)


def random_pose(rng):
    return lie.make_pose(oracles.random_rotation(rng), rng.normal(size=3))


def random_q(m, rng):
    q = np.empty(m.n)
    for k, lim in enumerate(m.joint_limits):
        lo, hi = lim.get("lower", -np.pi), lim.get("upper", np.pi)
        q[k] = rng.uniform(lo, hi) if np.isfinite(lo) and np.isfinite(hi) and lo < hi else 0.0
    return q


# ------------------------------------------------------------------ Pinocchio mapping
class PinMap:
    """Our (g, V, q, q̇) ↔ a Pinocchio model with root joint (SE3: free flyer, fixed: none);
    joints located by name, so it serves mimic and reduced models alike."""

    def __init__(self, pm, base, joint_names):
        self.pm, self.base, self.b = pm, base, (6 if base == "SE3" else 0)
        self.data = pm.createData()
        self.iq, self.iv, self.cont = [], [], []
        for name in joint_names:
            j = pm.joints[pm.getJointId(name)]
            assert j.nv == 1, name
            self.iq.append(j.idx_q)
            self.iv.append(j.idx_v)
            self.cont.append(j.nq == 2)
        self.vidx = np.array(list(range(self.b)) + self.iv)
        assert sorted(self.vidx) == list(range(pm.nv)), "joint sets differ"

    def q(self, g, q):
        qp = pin.neutral(self.pm)
        if self.base == "SE3":
            qp[:3] = g[:3, 3]
            qp[3:7] = pin.Quaternion(g[:3, :3]).coeffs()
        for k, (i, c) in enumerate(zip(self.iq, self.cont)):
            if c:
                qp[i:i + 2] = [np.cos(q[k]), np.sin(q[k])]
            else:
                qp[i] = q[k]
        return qp

    def v(self, V, qd):
        v = np.zeros(self.pm.nv)
        v[self.vidx] = np.concatenate([V, qd])
        return v

    def M(self, qp):
        M = pin.crba(self.pm, self.data, qp)
        M = np.triu(M) + np.triu(M, 1).T
        return M[np.ix_(self.vidx, self.vidx)]

    def rnea(self, qp, v, a):
        return pin.rnea(self.pm, self.data, qp, v, a)[self.vidx]

    def fd(self, qp, v, tau_full):
        M = pin.crba(self.pm, self.data, qp)
        M = np.triu(M) + np.triu(M, 1).T
        nle = pin.nonLinearEffects(self.pm, self.data, qp, v)
        return np.linalg.solve(M, tau_full - nle)[self.vidx]

    def frame(self, qp, name):
        pin.framesForwardKinematics(self.pm, self.data, qp)
        return self.data.oMf[self.pm.getFrameId(name)].homogeneous

    def frame_jacobian(self, qp, name):
        pin.computeJointJacobians(self.pm, self.data, qp)
        pin.framesForwardKinematics(self.pm, self.data, qp)
        J = pin.getFrameJacobian(self.pm, self.data, self.pm.getFrameId(name), pin.LOCAL)
        return J[:, self.vidx]


def pin_build(path_or_xml, base, mimic=False):
    args = (pin.JointModelFreeFlyer(),) if base == "SE3" else ()
    if path_or_xml.lstrip().startswith("<"):
        return pin.buildModelFromXML(path_or_xml, *args, mimic=mimic)
    return pin.buildModelFromUrdf(path_or_xml, *args, mimic=mimic)


# ================================================================== 1. mimic vs Pinocchio
TIAGO_PRO = "tiago_pro_description/robots/tiago_pro.urdf"
MIMIC_PIN = [(PANDA, "SE3", ["panda_rightfinger", "panda_hand_tcp", "panda_link5"]),
             (TIAGO_PRO, "SE3", None),
             (PANDA, "fixed", ["panda_rightfinger", "panda_leftfinger"]),
             (BAXTER, "SE3", ["r_gripper_r_finger", "left_gripper", "head"]),
             (BAXTER, "fixed", ["l_gripper_r_finger", "r_gripper_l_finger"])]


@pytest.mark.parametrize("rel, base, frames", MIMIC_PIN,
                         ids=[f"{os.path.basename(r)}-{b}" for r, b, _ in MIMIC_PIN])
def test_mimic_joints_match_pinocchio_mimic_model(rel, base, frames):
    path = erd(rel)
    gravity = (0.3, -1.2, -9.7)
    m = vm.load_model(path, base=base, gravity=gravity)
    assert m.coupling.mimic and m.n == m.n_full - len(m.coupling.mimic)
    if frames is None:   # the links moved by the mimic joints
        frames = [m.link_names[m.coupling.joint_names.index(j) + 1] for j in m.coupling.mimic]
    assert not set(m.coupling.mimic) & set(m.joint_names)
    pm = pin_build(path, base, mimic=True)
    pm.gravity.linear = np.array(gravity)
    P = PinMap(pm, base, m.joint_names)
    assert pm.nv == m.b + m.n
    rng = np.random.default_rng(5)
    errs = []
    for _ in range(3):
        g = random_pose(rng) if base == "SE3" else np.eye(4)
        q, qd = random_q(m, rng), rng.normal(size=m.n)
        V, Vd, qdd, tau = (rng.normal(size=m.b), rng.normal(size=m.b), rng.normal(size=m.n),
                           5 * rng.normal(size=m.n))
        qp, v = P.q(g, q), P.v(V, qd)
        errs.append(close(lp_M(m, q), P.M(qp), "mass matrix"))
        bw, tq = lp_id(m, g, V, q, qd, Vd, qdd)
        errs.append(close(np.concatenate([bw, tq]), P.rnea(qp, v, P.v(Vd, qdd)),
                          "inverse dynamics"))
        Vd2, qdd2 = lp_fd(m, g, V, q, qd, tau)
        ref = P.fd(qp, v, P.v(np.zeros(m.b), tau))
        errs.append(close(np.concatenate([Vd2, qdd2]), ref, "forward dynamics"))
        kin = lp.kinematics(m, q)
        for f in frames:
            errs.append(close(g @ lp.frame_pose_vehicle(m, kin, f), P.frame(qp, f), f"pose {f}"))
            J0, Jm = lp.frame_jacobian(m, kin, f)
            errs.append(close(np.hstack([J0, Jm]), P.frame_jacobian(qp, f), f"Jacobian {f}"))
    print(f"{os.path.basename(rel)} {base}: max rel err vs pinocchio mimic {max(errs):.2e}")


def test_full_joint_positions_for_joint_state():
    m = vm.load_model(erd(PANDA), base="SE3")
    q = np.linspace(-0.5, 0.5, m.n)
    q[-1] = 0.031
    names, pos = m.full_joint_names, m.full_joint_positions(q)
    assert names[-2:] == ["panda_finger_joint1", "panda_finger_joint2"] and len(pos) == 9
    assert pos[-1] == pos[-2] == 0.031
    np.testing.assert_array_equal(pos[:8], q)
    np.testing.assert_array_equal(m.full_joint_velocities(q), pos)
    with pytest.raises(ValueError, match=r"q: expected shape \(8,\)"):
        m.full_joint_positions(np.zeros(9))


# ================================================================== 2. G-matrix test
def mimic_coupling_from_xml(xml, full_names, indep_names):
    """G and c from the <mimic> tags (chains composed), independently of the library."""
    raw = {}
    for j in ET.fromstring(xml).findall("joint"):
        mm = j.find("mimic")
        if mm is not None and j.get("type") != "fixed":
            raw[j.get("name")] = (mm.get("joint"), float(mm.get("multiplier", 1)),
                                  float(mm.get("offset", 0)))
    G = np.zeros((len(full_names), len(indep_names)))
    c = np.zeros(len(full_names))
    for r, name in enumerate(full_names):
        k, o = 1.0, 0.0
        while name in raw:
            name, mk, ok = raw[name]
            k, o = k * mk, k * ok + o
        G[r, indep_names.index(name)] = k
        c[r] = o
    return G, c


def chain_urdf():
    """A tree with a chain of mimics (j4 = 2·j3 + 0.1, j3 = −0.5·j1 + 0.2, so j4 = −j1 + 0.5)
    and a mimic in another branch (j6 mimics j2 across branches), rotated inertial frames."""
    rng = np.random.default_rng(3)
    links = ['<link name="base">' + oracles._random_inertial(rng, 10.0) + "</link>"]
    spec = [("j1", "base", "revolute", ""), ("j2", "l1", "revolute", ""),
            ("j3", "base", "revolute", '<mimic joint="j1" multiplier="-0.5" offset="0.2"/>'),
            ("j4", "l3", "prismatic", '<mimic joint="j3" multiplier="2" offset="0.1"/>'),
            ("j5", "l4", "continuous", ""),
            ("j6", "l5", "revolute", '<mimic joint="j2" multiplier="1.5"/>')]
    joints = []
    for i, (name, parent, jt, mim) in enumerate(spec, start=1):
        links.append(f'<link name="l{i}">' + oracles._random_inertial(rng) + "</link>")
        ax = rng.normal(size=3)
        joints.append(f'<joint name="{name}" type="{jt}"><parent link="{parent}"/>'
                      f'<child link="l{i}"/><origin xyz="{oracles._fmt(rng.normal(size=3) * .3)}" '
                      f'rpy="{oracles._fmt(rng.uniform(-3, 3, 3))}"/><axis xyz="{oracles._fmt(ax)}"/>'
                      f'<limit lower="-2" upper="2" effort="1" velocity="1"/>{mim}</joint>')
    links.append('<link name="tip"/>')
    joints.append('<joint name="tipj" type="fixed"><parent link="l6"/><child link="tip"/>'
                  '<origin xyz="0.1 0.2 0.3" rpy="0.1 0.2 0.3"/></joint>')
    return '<robot name="chain">' + "".join(links + joints) + "</robot>"


G_CASES = [(PANDA, "SE3", "panda_rightfinger"), (BAXTER, "SE3", "r_gripper_r_finger"),
           (TALOS, "SE3", "gripper_left_fingertip_3_link"), (PR2, "fixed", "r_gripper_r_finger_tip_link"),
           ("chain", "SE3", "tip"), ("chain", "fixed", "tip"), ("chain", "SO3", "l4")]


@pytest.mark.parametrize("rel, base, frame", G_CASES, ids=[f"{os.path.basename(r)}-{b}" for r, b, _ in G_CASES])
def test_mimic_model_equals_full_model_with_coupling_applied_by_hand(rel, base, frame):
    xml = chain_urdf() if rel == "chain" else oracles.read_urdf(erd(rel))
    gravity = (0.5, 0.2, -9.81)
    m = vm.load_model(xml, base=base, gravity=gravity)
    free_xml, touched = oracles.strip_mimic(xml, mode="free")
    full = vm.load_model(free_xml, base=base, gravity=gravity)
    assert full.joint_names == m.full_joint_names and sorted(touched) == sorted(m.coupling.mimic)
    G, c = mimic_coupling_from_xml(xml, full.joint_names, m.joint_names)
    np.testing.assert_array_equal(m.coupling.G, G)
    np.testing.assert_allclose(m.coupling.c, c, rtol=0, atol=1e-15)
    B = np.zeros((m.b + full.n, m.b + m.n))
    B[:m.b, :m.b] = np.eye(m.b)
    B[m.b:, m.b:] = G
    rng = np.random.default_rng(11)
    errs = []
    for _ in range(2):
        g = random_pose(rng)
        q, qd, qdd = random_q(m, rng) * 0.7, rng.normal(size=m.n), rng.normal(size=m.n)
        V, Vd = rng.normal(size=m.b), rng.normal(size=m.b)
        fw = {frame: 3 * rng.normal(size=6)}
        qf, qdf, qddf = G @ q + c, G @ qd, G @ qdd
        errs.append(close(lp_M(m, q), B.T @ lp_M(full, qf) @ B, "M_red = Bᵀ M B"))
        bw, tq = lp_id(m, g, V, q, qd, Vd, qdd, fw)
        bwf, tqf = lp_id(full, g, V, qf, qdf, Vd, qddf, fw)
        errs.append(close(np.concatenate([bw, tq]), np.concatenate([bwf, G.T @ tqf]),
                          "inverse dynamics (τ = Gᵀ τ_full)"))
        tau = 3 * rng.normal(size=m.n)
        Vd2, qdd2 = lp_fd(m, g, V, q, qd, tau, None, fw)
        bwf, tqf = lp_id(full, g, V, qf, qdf, Vd2, G @ qdd2, fw)
        errs.append(close(np.concatenate([bwf, G.T @ tqf]),
                          np.concatenate([np.zeros(m.b), tau]), "forward dynamics consistency"))
        kf, kr = lp.kinematics(full, qf), lp.kinematics(m, q)
        errs.append(close(lp.frame_pose_vehicle(m, kr, frame),
                          lp.frame_pose_vehicle(full, kf, frame), "frame pose"))
        J0f, Jmf = lp.frame_jacobian(full, kf, frame)
        errs.append(close(lp.frame_jacobian(m, kr, frame)[1], Jmf @ G, "Jacobian J G"))
        errs.append(close(m.momentum(g, V, q, qd), full.momentum(g, V, qf, qdf), "momentum"))
        errs.append(close(m.energy(g, V, q, qd), full.energy(g, V, qf, qdf), "energy"))
        # closed-form derivatives of the reduced blocks vs central differences
        t = lp.lp_terms(m, q)
        k = int(rng.integers(m.n))
        h = 1e-6
        e = np.zeros(m.n)
        e[k] = h
        dMhat = (lp.lp_terms(m, q + e, False).Mhat - lp.lp_terms(m, q - e, False).Mhat) / (2 * h)
        close(t.dMhat[k], dMhat, "∂M̂/∂q_k vs finite differences", rtol=1e-6)
    print(f"{os.path.basename(rel)} {base}: n={m.n} n_full={m.n_full}, max rel err {max(errs):.2e}")


def test_mimic_chain_is_composed():
    m = vm.load_model(chain_urdf(), base="fixed")
    assert m.joint_names == ["j1", "j2", "j5"]
    assert m.coupling.mimic["j4"][0] == "j1"
    np.testing.assert_allclose(m.coupling.mimic["j4"][1:], (-1.0, 0.5), rtol=0, atol=1e-15)
    assert m.coupling.mimic["j6"] == ("j2", 1.5, 0.0)


# ================================================================== 3. locked joints
LOCK_CASES = [("ur5", "fixed", {"shoulder_lift_joint": -1.1, "wrist_2_joint": 0.4}, "tool0"),
              ("ur5", "SE3", {"elbow_joint": 1.3}, "wrist_3_link"),
              ("panda", "SE3", {"panda_joint4": -1.5, "panda_finger_joint1": 0.03,
                                "panda_finger_joint2": 0.01}, "panda_leftfinger"),
              ("random_tree", "SE3", None, "tool_link")]


@pytest.mark.parametrize("robot, base, locked, frame", LOCK_CASES,
                         ids=[f"{r}-{b}" for r, b, _, _ in LOCK_CASES])
def test_locked_joints_match_pinocchio_build_reduced_model(robot, base, locked, frame):
    from conftest import robot_xml
    xml = robot_xml(robot)
    if locked is None:   # lock the second and a continuous joint of the random tree
        names = vm.load_model(xml, base="fixed").joint_names
        types = vm.load_model(xml, base="fixed").joint_types
        locked = {names[1]: 0.7, names[types.index("continuous")]: -2.5}
    gravity = (0.0, 1.0, -9.81)
    m = vm.load_model(xml, base=base, gravity=gravity, locked_joints=locked)
    full = vm.load_model(xml, base=base, gravity=gravity)
    assert m.n == full.n - len(locked) and not set(locked) & set(m.joint_names)
    assert set(m.frame_names) == set(full.frame_names)
    pfull = pin_build(xml, base)
    qref = pin.neutral(pfull)
    for name, val in locked.items():
        j = pfull.joints[pfull.getJointId(name)]
        if j.nq == 2:
            qref[j.idx_q:j.idx_q + 2] = [np.cos(val), np.sin(val)]
        else:
            qref[j.idx_q] = val
    pred = pin.buildReducedModel(pfull, [pfull.getJointId(n) for n in locked], qref)
    pred.gravity.linear = np.array(gravity)
    P = PinMap(pred, base, m.joint_names)
    rng = np.random.default_rng(2)
    errs = []
    for _ in range(3):
        g = random_pose(rng) if base == "SE3" else np.eye(4)
        q, qd, qdd = random_q(m, rng), rng.normal(size=m.n), rng.normal(size=m.n)
        V, Vd = rng.normal(size=m.b), rng.normal(size=m.b)
        qp, v = P.q(g, q), P.v(V, qd)
        errs.append(close(lp_M(m, q), P.M(qp), "mass matrix"))
        bw, tq = lp_id(m, g, V, q, qd, Vd, qdd)
        errs.append(close(np.concatenate([bw, tq]), P.rnea(qp, v, P.v(Vd, qdd)), "rnea"))
        errs.append(close(g @ lp.frame_pose_vehicle(m, lp.kinematics(m, q), frame),
                          P.frame(qp, frame), f"pose {frame}"))
    print(f"{robot} {base} locked {sorted(locked)}: max rel err vs buildReducedModel {max(errs):.2e}")


def test_locking_a_master_locks_its_mimic_joints():
    raw = oracles.read_urdf(erd(PANDA))
    stripped, _ = oracles.strip_mimic(raw, mode="free")
    a = vm.load_model(raw, locked_joints={"panda_finger_joint1": 0.03})
    b = vm.load_model(stripped, locked_joints={"panda_finger_joint1": 0.03,
                                               "panda_finger_joint2": 0.03})
    assert a.n == b.n == 7 and a.coupling.trivial
    q = np.linspace(-1, 1, 7)
    close(lp_M(a, q), lp_M(b, q), "M", rtol=1e-14)
    close(a.frame_pose(q, "panda_rightfinger"), b.frame_pose(q, "panda_rightfinger"), "pose",
          rtol=1e-14)


@pytest.mark.parametrize("locked, pattern", [
    ({"nope": 0.0}, "locked_joints: unknown joint 'nope'; movable joints are panda_joint1"),
    ({"panda_finger_joint2": 0.01}, "locked_joints: joint 'panda_finger_joint2' mimics "
                                    "'panda_finger_joint1'; lock 'panda_finger_joint1' instead"),
    ({"panda_joint8": 0.0}, "locked_joints: joint 'panda_joint8' is already fixed"),
    ({"panda_joint4": 0.5}, r"locked_joints\['panda_joint4'\] = 0.5 is outside the joint limits"),
    ({"panda_joint1": "abc"}, r"locked_joints\['panda_joint1'\]: expected a number, got 'abc'"),
    ({"panda_joint1": float("nan")}, r"locked_joints\['panda_joint1'\]: expected a finite value"),
    ([("panda_joint1", 0.0)], "locked_joints: expected a dict"),
])
def test_locked_joint_errors_name_the_joint(locked, pattern):
    with pytest.raises(ValueError, match=pattern):
        vm.load_model(erd(PANDA), locked_joints=locked)


# ================================================================== 4. mounting
def spliced(xml, mass, com, inertia6, xyz, rpy, name="vehicle"):
    """The hand-spliced URDF: a vehicle link and a fixed joint to the arm's root link."""
    root = ET.fromstring(xml)
    arm_root = oracles.urdf_root_link(xml)
    f = oracles._fmt
    link = ET.fromstring(
        f'<link name="{name}"><inertial><origin xyz="{f(com)}" rpy="0 0 0"/>'
        f'<mass value="{float(mass)!r}"/><inertia ' + " ".join(
            f'{k}="{float(v)!r}"' for k, v in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"),
                                                 inertia6)) + "/></inertial></link>")
    joint = ET.fromstring(f'<joint name="{name}_mount" type="fixed"><parent link="{name}"/>'
                          f'<child link="{arm_root}"/><origin xyz="{f(xyz)}" rpy="{f(rpy)}"/>'
                          f'</joint>')
    root.insert(0, joint)
    root.insert(0, link)
    return ET.tostring(root, encoding="unicode")


def quat_xyzw(R):
    return pin.Quaternion(R).coeffs()   # x y z w


MOUNT_CASES = [("panda", "SE3"), ("panda", "SO3"), ("random_tree", "SE3"), ("ur5", "SE2")]


@pytest.mark.parametrize("robot, base", MOUNT_CASES, ids=[f"{r}-{b}" for r, b in MOUNT_CASES])
@pytest.mark.parametrize("form", ["xyz_rpy", "position_orientation", "matrix"])
def test_mounted_arm_is_identical_to_a_hand_spliced_urdf(robot, base, form):
    from conftest import robot_xml
    xml = oracles.read_urdf(erd(PANDA)) if robot == "panda" else robot_xml(robot)
    mass, com = 500.0, np.array([0.02, -0.01, 0.05])
    inertia6 = [187.5, 1.5, -2.0, 190.0, 0.5, 185.0]
    xyz, rpy = np.array([0.3, -0.2, 0.75]), np.array([0.2, -0.4, 1.1])
    gravity = (0.0, 0.0, -9.81)
    ref = vm.load_model(spliced(xml, mass, com, inertia6, xyz, rpy, name="bus"), base=base,
                        gravity=gravity)
    R = oracles.rpy_matrix(rpy)
    mount = {"xyz_rpy": {"xyz": list(xyz), "rpy": list(rpy)},
             "position_orientation": {"position": list(xyz), "orientation": list(quat_xyzw(R))},
             "matrix": lie.make_pose(R, xyz)}[form]
    m = vm.load_model(xml, base=base, gravity=gravity, vehicle={
        "mass": mass, "com": com, "inertia": inertia6, "mount": mount, "name": "bus"})
    assert m.vehicle_link == "bus" and m.joint_names == ref.joint_names
    assert m.frame_names == ref.frame_names and m.n_full == ref.n_full
    tol = 1e-12
    close(m.vehicle_inertia, ref.vehicle_inertia, "vehicle inertia", rtol=tol)
    close(m.xi, ref.xi, "joint twists", rtol=tol)
    close(m.body_inertia_home, ref.body_inertia_home, "body inertias", rtol=tol)
    for f in m.frame_names:
        close(m.frame_home[f], ref.frame_home[f], f"frame {f}", rtol=tol)
    rng = np.random.default_rng(4)
    g = random_pose(rng)
    q, qd, tau = random_q(m, rng), rng.normal(size=m.n), rng.normal(size=m.n)
    V = rng.normal(size=m.b)
    close(lp_M(m, q), lp_M(ref, q), "mass matrix", rtol=tol)
    close(np.concatenate(lp_fd(m, g, V, q, qd, tau)), np.concatenate(lp_fd(ref, g, V, q, qd, tau)),
          "forward dynamics", rtol=tol)
    close(m.momentum(g, V, q, qd), ref.momentum(g, V, q, qd), "momentum", rtol=tol)


@pytest.mark.parametrize("vehicle, pattern", [
    ({"inertia": [1, 1, 1]}, "vehicle: 'mass' is required"),
    ({"mass": 10, "colour": 1}, r"vehicle: unknown key\(s\) \['colour'\]; valid keys are mass"),
    ({"mass": -1}, "vehicle.mass: expected 0 <= mass"),
    ({"mass": 10, "name": "panda_link0"}, "vehicle.name: the URDF already has a link named "
                                          "'panda_link0'"),
    ({"mass": 10, "mount": {"position": [0, 0, 1], "orientation": [0, 0, 0, 2]}},
     r"vehicle.mount.orientation: not a unit quaternion"),
    ({"mass": 10, "mount": {"pos": [0, 0, 1]}}, r"vehicle.mount: unknown keys \['pos'\]"),
    ({"mass": 10, "mount": 2 * np.eye(4)}, "vehicle.mount: not a rigid transform"),
    ({"mass": 10, "inertia": [1, 1, 5]}, "vehicle 'vehicle'.*triangle inequality"),
    ({"mass": 10, "inertia": [1, 2]}, "vehicle.inertia: expected a 3x3 matrix"),
    ({"mass": 10, "com": [0, 0]}, r"vehicle.com: expected shape \(3,\)"),
    ("heavy", "vehicle: expected a dict"),
])
def test_vehicle_errors_name_the_key(vehicle, pattern):
    with pytest.raises(ValueError, match=pattern):
        vm.load_model(erd(PANDA), vehicle=vehicle)


def test_a_massless_vehicle_at_the_identity_is_the_arm_itself():
    """vehicle={"mass": 0} with the identity mount adds nothing: same dynamics as the arm's own
    root link as the vehicle (only the root frame is renamed)."""
    a = vm.load_model(erd(PANDA), base="SE3", vehicle={"mass": 0.0})
    b = vm.load_model(erd(PANDA), base="SE3")
    q = np.linspace(-0.5, 0.5, 8)
    close(lp_M(a, q), lp_M(b, q), "M", rtol=1e-14)
    assert a.vehicle_link == "vehicle" and "panda_link0" in a.frame_names


# ================================================================== 5. scenario + node params
def test_panda_on_bus_scenario_tracks_with_free_floating_computed_torque():
    from vm_dynamics.config.scenario import load_scenario
    from vm_dynamics.control import get_controller
    from vm_dynamics.control.references import reference_from_config
    s = load_scenario("panda_on_bus")
    m = s.model
    assert m.vehicle_link == "bus" and m.b == 6 and (m.n, m.n_full) == (8, 9)
    panda = vm.load_model(erd(PANDA), base="fixed")
    assert abs(m.total_mass - (500.0 + panda.total_mass)) < 1e-9
    params = {k: v for k, v in s.controller.items() if k != "name"}
    ctrl = get_controller("computed_torque", {**params, "dynamics": "lp"})
    ctrl.reset(m, vm.State(0.0, s.g0, s.V0, s.q0, s.qd0))
    ref = reference_from_config(s.reference)
    tau_fn, bw_fn = ctrl.inputs(ref)
    tr = vm.simulate(m, s.g0, s.V0, s.q0, s.qd0, 0.15, 2e-3, tau=tau_fn, base_wrench=bw_fn,
                     dynamics="lp")
    from vm_dynamics.control.computed_torque import joint_reference
    err = max(np.abs(tr.q[k] - joint_reference(ref.joint, t, m.n, s.q0)[0]).max()
              for k, t in enumerate(tr.t))
    p0, p1 = m.momentum(tr.g[0], tr.V[0], tr.q[0], tr.qd[0]), m.momentum(tr.g[-1], tr.V[-1],
                                                                           tr.q[-1], tr.qd[-1])
    moved = np.abs(tr.g[-1] - tr.g[0]).max()
    print(f"panda_on_bus 0.15 s: tracking error {err:.2e} rad, momentum change "
          f"{np.abs(p1 - p0).max():.2e}, bus pose change {moved:.2e}")
    assert err < 1e-6 and np.abs(p1 - p0).max() < 1e-9 and moved > 1e-7


def test_node_parameters_build_the_same_mounted_model():
    from vm_dynamics.config.params import flatten, read_params_file
    from vm_dynamics.config.scenario import load_scenario, share_dir
    from vm_dynamics.nodes.robot import load_robot
    s = load_scenario("panda_on_bus")
    robot = load_robot(flatten(read_params_file(share_dir() / "config" / "panda_on_bus.yaml")))
    q = s.q0 + 0.1
    close(lp_M(robot.model, q), lp_M(s.model, q), "M", rtol=1e-15)
    assert robot.model.frame_names == s.model.frame_names and robot.base_frame == "bus"
    assert oracles.urdf_root_link(robot.urdf_xml) == "bus"     # viewers get the mounted URDF
    # locked joints as node parameters
    p = flatten(read_params_file(share_dir() / "config" / "panda_on_bus.yaml"))
    p.update({"locked_joints.names": ["panda_finger_joint1"], "locked_joints.values": [0.02]})
    p["joints"] = p["joints"][:7]
    r2 = load_robot(p)
    assert r2.model.n == 7 and r2.model.coupling.trivial
    p["locked_joints.values"] = []
    with pytest.raises(ValueError, match=r"locked_joints.values: expected 1 numbers"):
        load_robot(p)


@pytest.mark.parametrize("locked", [None, {"panda_finger_joint1": 0.03, "panda_joint4": -1.5}])
def test_effective_urdf_loads_the_same_model(locked):
    """effective_urdf (what the nodes hand to viewers) reproduces the locked / mounted model."""
    from vm_dynamics.model.mounting import effective_urdf
    xml = oracles.read_urdf(erd(PANDA))
    veh = {"mass": 500.0, "inertia": [187.5, 1.0, 2.0, 190.0, 0.5, 185.0], "com": [0.1, 0, 0],
           "mount": {"xyz": [0, 0, 0.75], "rpy": [0.3, 1.2, -2.0]}, "name": "bus"}
    a = vm.load_model(xml, locked_joints=locked, vehicle=veh)
    text = effective_urdf(xml, locked, veh)
    b = vm.load_model(text)
    assert a.joint_names == b.joint_names and a.frame_names == b.frame_names
    assert oracles.urdf_root_link(text) == "bus"
    q = np.linspace(-0.5, 0.5, a.n)
    close(lp_M(a, q), lp_M(b, q), "M", rtol=1e-12)
    for f in a.frame_names:
        close(a.frame_pose(q, f), b.frame_pose(q, f), f, rtol=1e-12)
    # and Pinocchio reads it with the same mass
    assert abs(sum(I.mass for I in pin.buildModelFromXML(text).inertias) - a.total_mass) < 1e-9


def test_locked_and_mounted_models_run_on_the_fast_path():
    """Locking and mounting only change the tree: the O(n) path takes them as they are."""
    from vm_dynamics.dynamics import fast
    m = vm.load_model(erd(PANDA), gravity=(0.1, 0.2, -9.81),
                      locked_joints={"panda_finger_joint1": 0.02},
                      vehicle={"mass": 500.0, "inertia": [187.5, 187.5, 187.5],
                               "mount": {"position": [0, 0, 0.75], "orientation": [0, 0, 0, 1]}})
    assert m.coupling.trivial and m.n == 7
    fm = fast.fast_model(m, backend="numpy")
    rng = np.random.default_rng(1)
    g, V, q, qd, tau = random_pose(rng), rng.normal(size=6), random_q(m, rng), \
        rng.normal(size=7), rng.normal(size=7)
    close(np.concatenate(fm.forward_dynamics(g, V, q, qd, tau)),
          np.concatenate(lp_fd(m, g, V, q, qd, tau)), "fast vs LP", rtol=1e-10)


def test_model_option_parameters_errors_name_the_key():
    from vm_dynamics.model.mounting import model_options
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['vehicle.colour'\]"):
        model_options({"vehicle": {"mass": 1.0, "colour": "red"}})
    with pytest.raises(ValueError, match="locked_joints.names: duplicate names"):
        model_options({"locked_joints.names": ["a", "a"], "locked_joints.values": [0, 1]})
    with pytest.raises(ValueError, match="vehicle.mass: expected a number, got 'x'"):
        model_options({"vehicle.mass": "x"})
    assert model_options({}) == {"locked_joints": None, "vehicle": None}


def test_dynamics_node_core_runs_the_panda_on_bus_scenario():
    from vm_dynamics.config.params import flatten, read_params_file
    from vm_dynamics.config.scenario import share_dir
    from vm_dynamics.nodes.dynamics_core import DynamicsCore
    d = DynamicsCore.from_params(flatten(read_params_file(share_dir() / "config" /
                                                          "panda_on_bus.yaml")))
    assert d.backend != "lp" and d.model.n == 8          # the O(n) path carries the coupling
    d.set_effort([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.5])
    for _ in range(20):
        d.step()
    assert not d.diverged and np.all(np.isfinite(d.g))


def test_package_uri_resolution():
    from vm_dynamics.model.urdf import resolve_package_path
    path = resolve_package_path("package://example-robot-data/robots/" + PANDA)
    assert os.path.samefile(path, erd(PANDA))
    with pytest.raises(ValueError, match="package 'no_such_pkg' or its file"):
        vm.load_model("package://no_such_pkg/robot.urdf")
    with pytest.raises(ValueError, match="expected package://PACKAGE/relative/path"):
        resolve_package_path("package://example-robot-data/../../etc/passwd")


# ================================================================== 6. singular models
def coaxial_urdf(mid_mass=0.0, mid_inertia=0.0):
    mid = ("" if mid_mass == 0 and mid_inertia == 0 else
           f'<inertial><mass value="{mid_mass!r}"/><inertia ixx="{mid_inertia!r}" '
           f'iyy="{mid_inertia!r}" izz="{mid_inertia!r}" ixy="0" ixz="0" iyz="0"/></inertial>')
    return ('<robot name="coax"><link name="base"><inertial><mass value="20"/><inertia ixx="2" '
            'iyy="2" izz="2" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            f'<link name="spacer">{mid}</link>'
            '<link name="arm"><inertial><origin xyz="0.5 0 0"/><mass value="2"/><inertia '
            'ixx="0.01" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="j1" type="continuous"><parent link="base"/><child link="spacer"/>'
            '<origin xyz="0 0 0.3"/><axis xyz="0 0 1"/></joint>'
            '<joint name="j2" type="continuous"><parent link="spacer"/><child link="arm"/>'
            '<origin xyz="0 0 0.2"/><axis xyz="0 0 1"/></joint></robot>')


@pytest.mark.parametrize("base", ["fixed", "SE3", "SE2"])
def test_coaxial_joints_with_a_massless_link_are_named_with_the_fix(base):
    with pytest.raises(ValueError) as exc:
        vm.load_model(coaxial_urdf(), base=base)
    msg = str(exc.value)
    print(msg)
    assert msg.startswith("joints 'j1', 'j2'") or msg.startswith("joints 'j2', 'j1'")
    assert "they are coaxial and the link between them ('spacer') has no mass" in msg
    assert "singular" in msg and "locked_joints=" in msg and "mimic" in msg
    assert "vehicle (root link)" not in msg           # the vehicle is not blamed


def test_nearly_singular_model_is_rejected_and_the_fix_works():
    # a point-like spacer (iCub-style neck link): regular in exact arithmetic, eigenvalue ratio ~1e-14
    with pytest.raises(ValueError, match=r"joints 'j[12]', 'j[12]': they are coaxial and the link "
                                         r"between them \('spacer'\) has no inertia about their "
                                         r"axis \(mass 0.001 kg\)"):
        vm.load_model(coaxial_urdf(1e-3, 1e-15), base="fixed")
    with pytest.raises(ValueError, match=r"joints 'j[12]', 'j[12]': .* nearly singular"):
        vm.load_model(coaxial_urdf(1e-3, 1e-12), base="fixed")
    m = vm.load_model(coaxial_urdf(), base="fixed", locked_joints={"j2": 0.0})   # the fix
    assert m.joint_names == ["j1"]
    m = vm.load_model(coaxial_urdf(1.0, 0.01), base="fixed")                     # a real link
    assert m.n == 2


def test_full_icub_is_rejected_naming_the_neck_joints_and_the_fix_loads_it():
    """iCub's point-mass neck links make M nearly singular (eigenvalue ratio ~1e-17)."""
    path = erd("icub_description/robots/icub.urdf")
    with pytest.raises(ValueError, match=r"joints 'neck_yaw', 'neck_roll': .* singular .* "
                                         r"locked_joints=\{'neck_roll': 0.0\}"):
        vm.load_model(path, base="SE3")
    m = vm.load_model(path, base="SE3", locked_joints={"neck_roll": 0.0})
    assert "neck_roll" not in m.joint_names and "neck_yaw" in m.joint_names


def test_a_configuration_dependent_singularity_raises_a_clear_error_in_the_lp_solve():
    # j1 about z carries a slider j2 along x with a point mass: at q2 = 0 the mass is on the
    # j1 axis and j1 moves nothing; the limits keep the load-time checks away from it
    xml = ('<robot name="r"><link name="base"/><link name="s"/>'
           '<link name="p"><inertial><mass value="1"/><inertia ixx="0" iyy="0" izz="0" ixy="0" '
           'ixz="0" iyz="0"/></inertial></link>'
           '<joint name="j1" type="revolute"><parent link="base"/><child link="s"/>'
           '<axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>'
           '<joint name="j2" type="prismatic"><parent link="s"/><child link="p"/>'
           '<axis xyz="1 0 0"/><limit lower="0.1" upper="1" effort="1" velocity="1"/></joint>'
           '</robot>')
    m = vm.load_model(xml, base="fixed", gravity=(0, 0, 0))
    g = np.eye(4)
    _, qdd = lp_fd(m, g, np.zeros(0), np.array([0.3, 0.5]), np.zeros(2), np.ones(2))
    assert np.all(np.isfinite(qdd))
    for q2 in (0.0, 1e-9):
        with pytest.raises(ValueError, match=r"M̂ is numerically singular at q = .*joints 'j1'"):
            lp_fd(m, g, np.zeros(0), np.array([0.3, q2]), np.zeros(2), np.ones(2))


def test_singular_joint_on_a_floating_base_names_the_joint():
    # a rotor whose inertia is symmetric about its own axis, and is the only body: its spin
    # can be reproduced by the vehicle when the vehicle has no inertia about that axis
    xml = ('<robot name="r"><link name="base"><inertial><mass value="5"/><inertia ixx="1" '
           'iyy="1" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>'
           '<link name="rotor"><inertial><mass value="1"/><inertia ixx="0.5" iyy="0.5" izz="0" '
           'ixy="0" ixz="0" iyz="0"/></inertial></link>'
           '<joint name="spin" type="continuous"><parent link="base"/><child link="rotor"/>'
           '<axis xyz="0 0 1"/></joint></robot>')
    with pytest.raises(ValueError, match="joint 'spin'|base=SE3"):
        vm.load_model(xml, base="SE3")


# ================================================================== 7. paper 004 §6
def prismatic_urdf(mb, Jb, m, J, l):
    def f(x):
        return repr(float(x))
    return (f'<robot name="p"><link name="base"><inertial><mass value="{f(mb)}"/><inertia '
            f'ixx="{f(Jb[0])}" iyy="{f(Jb[1])}" izz="{f(Jb[2])}" ixy="0" ixz="0" iyz="0"/>'
            f'</inertial></link><link name="l1"><inertial><mass value="{f(m)}"/><inertia '
            f'ixx="{f(J[0])}" iyy="{f(J[1])}" izz="{f(J[2])}" ixy="0" ixz="0" iyz="0"/>'
            f'</inertial></link><joint name="q1" type="prismatic"><parent link="base"/>'
            f'<child link="l1"/><origin xyz="0 0 {f(l)}"/><axis xyz="0 1 0"/>'
            f'<limit lower="-2" upper="2" effort="1" velocity="1"/></joint></robot>')


def M105(mb, Jb, m, J, l, q):
    """Paper 004 (105), with M_b = m_b + m and J_t = J_b + J."""
    Mb = mb + m
    Jx, Jy, Jz = (Jb[i] + J[i] for i in range(3))
    return np.array([
        [Mb, 0, 0, 0, m * l, -m * q, 0],
        [0, Mb, 0, -m * l, 0, 0, m],
        [0, 0, Mb, m * q, 0, 0, 0],
        [0, -m * l, m * q, Jx + m * l ** 2 + m * q ** 2, 0, 0, -m * l],
        [m * l, 0, 0, 0, Jy + m * l ** 2, -m * l * q, 0],
        [-m * q, 0, 0, 0, -m * l * q, Jz + m * q ** 2, 0],
        [0, m, 0, -m * l, 0, 0, m]])


def test_paper_004_prismatic_robot_mass_matrix_105_and_joint_equation_108():
    from vm_dynamics.config.scenario import load_scenario
    s = load_scenario("prismatic_link")
    mdl = s.model
    # the seeds' reference numbers (seeds-From §3.1)
    M_ref = np.array([[12, 0, 0, 0, 1, -1.4, 0], [0, 12, 0, -1, 0, 0, 2], [0, 0, 12, 1.4, 0, 0, 0],
                      [0, -1, 1.4, 2.58, 0, 0, -1], [1, 0, 0, 0, 2.7, -0.7, 0],
                      [-1.4, 0, 0, 0, -0.7, 4.28, 0], [0, 2, 0, -1, 0, 0, 2]])
    close(lp_M(mdl, [0.7]), M_ref, "(105) reference numbers", rtol=1e-14)
    V, qd = s.V0, s.qd0
    _, tau = lp_id(mdl, s.g0, V, s.q0, qd, np.zeros(6), np.zeros(1))
    close(tau, [-1.148], "joint-row bias (106)·v = -1.148", rtol=1e-14)
    # (105) and (108) at random parameters and states
    rng = np.random.default_rng(8)
    for _ in range(5):
        mb, m, l = rng.uniform(5, 20), rng.uniform(0.5, 3), rng.uniform(-1, 1)
        Jb, J = rng.uniform(1, 2, 3), rng.uniform(0.1, 0.2, 3)
        model = vm.load_model(prismatic_urdf(mb, Jb, m, J, l), base="SE3", gravity=(0, 0, 0))
        q = rng.uniform(-2, 2, 1)
        close(lp_M(model, q), M105(mb, Jb, m, J, l, q[0]), "(105)", rtol=1e-13)
        V, Vd = rng.normal(size=6), rng.normal(size=6)
        qd, qdd = rng.normal(size=1), rng.normal(size=1)
        _, tau = lp_id(model, np.eye(4), V, q, qd, Vd, qdd)
        vx, vy, vz, wx, wy, wz = V
        dvx, dvy, dvz, dwx, dwy, dwz = Vd
        q1 = q[0]
        tau108 = (m * qdd[0] + m * dvy - m * l * dwx + m * wz * vx - m * wx * vz
                  + m * l * wy * wz - m * q1 * (wx ** 2 + wz ** 2))       # m·(108), corrected
        close(tau, [tau108], "(108)", rtol=1e-12)


def test_prismatic_link_scenario_conserves_energy_and_momentum():
    from vm_dynamics.config.scenario import load_scenario
    s = load_scenario("prismatic_link")
    m = s.model
    tr = vm.simulate(m, s.g0, s.V0, s.q0, s.qd0, 0.5, 1e-3, dynamics="lp")
    E = [m.energy(g, V, q, qd) for g, V, q, qd in zip(tr.g, tr.V, tr.q, tr.qd)]
    P = [m.momentum(g, V, q, qd) for g, V, q, qd in zip(tr.g, tr.V, tr.q, tr.qd)]
    dE, dP = abs(E[-1] - E[0]) / abs(E[0]), np.abs(P[-1] - P[0]).max() / np.abs(P[0]).max()
    print(f"prismatic_link 0.5 s: energy drift {dE:.2e}, momentum drift {dP:.2e}")
    assert dE < 1e-10 and dP < 1e-12
    assert abs(tr.q[-1, 0] - s.q0[0]) > 1e-3        # the link really slides


# ================================================================== 8. xacro files are code
EVIL = {
    "eval_substitution": "$(eval exec('open(\"{marker}\", \"w\").write(\"x\")'))",
    "eval_escape": "$(eval exec${'\\x28'}'open(\"{marker}\",\"w\")'${'\\x29'})",
    "dunder": "${{__import__('os').system('touch {marker}')}}",
    "attribute": "${{xacro.load_yaml('/etc/passwd')}}",
    "env": "$(env HOME)",
    "lambda": "${{(lambda: 1)()}}",
}


@pytest.mark.parametrize("kind", sorted(EVIL))
def test_safe_xacro_refuses_code(kind, tmp_path):
    marker = tmp_path / "pwned"
    body = EVIL[kind].replace("{marker}", str(marker)).replace("{{", "{").replace("}}", "}")
    path = tmp_path / "evil.urdf.xacro"
    path.write_text('<?xml version="1.0"?><robot name="e" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                    '<xacro:property name="w" value="${2*pi}"/>'
                    f'<link name="base">{body}</link></robot>')
    with pytest.raises(ValueError, match=r"evil.urdf.xacro: xacro expansion failed: "
                                         r"(xacro='safe'|.*not allowed|invalid)"):
        vm.load_model(str(path), xacro="safe")
    with pytest.raises(ValueError, match="xacro files are code and xacro='off' accepts plain"):
        vm.load_model(str(path), xacro="off")
    assert not marker.exists()


def test_safe_xacro_expands_the_shipped_robots_identically():
    from vm_dynamics.config.scenario import share_dir
    from vm_dynamics.model.urdf import read_urdf_source
    for name in ("spacecraft_arm.urdf.xacro", "uvms.urdf.xacro"):
        p = str(share_dir() / "urdf" / name)
        assert read_urdf_source(p, xacro="safe")[0] == read_urdf_source(p, xacro="full")[0]
    with pytest.raises(ValueError, match="xacro='bogus': choose one of full, safe, off"):
        vm.load_model(str(share_dir() / "urdf" / "tumbling.urdf"), xacro="bogus")
    with pytest.raises(ValueError, match="URDF string: contains xacro markup"):
        vm.load_model('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="a"/>'
                      '</robot>', xacro="off", base="fixed")


def test_node_parameters_expand_xacro_safely_by_default(tmp_path):
    from vm_dynamics.nodes.robot import load_robot
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.urdf.xacro"
    path.write_text('<?xml version="1.0"?><robot name="e" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                    f'<link name="base">$(eval exec(\'open("{marker}", "w")\'))</link></robot>')
    with pytest.raises(ValueError, match=r"substitution \$\(eval …\) is not allowed"):
        load_robot({"robot_description_file": str(path), "base_type": "fixed"})
    assert not marker.exists()
