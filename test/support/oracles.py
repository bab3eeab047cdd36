"""Independent Pinocchio-based oracles for testing vm_dynamics.

Nothing in this module imports or uses ``vm_dynamics``: everything is computed
with Pinocchio (and plain numpy) from the same URDF, so it can serve as an
independent reference for the library.

Conventions (identical to the public vm_dynamics API):

* ``g``: 4x4 pose of the vehicle (URDF root link) in the inertial frame.
* ``V``, ``Vdot``, ``base_wrench``: ``b``-vectors in the vehicle BODY frame,
  twists ``[v; w]`` (linear first), wrenches ``[f; n]`` (force first).
  ``b`` = 6 (SE3), 3 (SE2: vx, vy, wz / fx, fy, nz), 3 (SO3: w / n), 0 (fixed).
* ``q``, ``qd``, ``qdd``, ``tau``: one scalar per movable URDF joint, ordered as
  ``joint_names`` (pass ``model.joint_names`` of the library model).  Continuous
  joints use a plain angle (Pinocchio stores ``[cos, sin]``).
* ``frame_wrenches``: ``{frame_name: [f; n]}`` applied at the frame origin and
  expressed in the frame axes.
* ``gravity``: acceleration vector in the inertial frame.

Correspondence with Pinocchio:

* SE3 -> ``JointModelFreeFlyer`` root, q = [p, quat(x,y,z,w), joints],
  v = body twist of the root link ``[v; w]`` (== our V), a[:6] == Vdot.
* SE2 -> ``JointModelPlanar`` root, q = [x, y, cos th, sin th, ...],
  v = [vx, vy, wz] in the body frame.
* SO3 -> ``JointModelSpherical`` root, q = quat, v = body angular velocity.
* fixed -> no root joint.

Pinocchio's "world" frame W0 need not coincide with our inertial frame: for
the restricted bases (fixed, SO3, SE2) the part of ``g`` that the Pinocchio
root joint cannot represent is kept in ``g_W0`` with
``g = g_W0 @ g_pin(q_pin)``; gravity is expressed in W0 for Pinocchio and
momentum / potential energy / poses are mapped back to the inertial frame.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin

BASES = ("SE3", "SE2", "SO3", "fixed")
BASE_DIM = {"SE3": 6, "SE2": 3, "SO3": 3, "fixed": 0}
# rows of the 6-vector [v; w] kept by each base type
BASE_ROWS = {"SE3": [0, 1, 2, 3, 4, 5], "SE2": [0, 1, 5], "SO3": [3, 4, 5], "fixed": []}


# --------------------------------------------------------------------------
# small Lie-group helpers (plain numpy)
# --------------------------------------------------------------------------
def hat3(w):
    w = np.asarray(w, dtype=float)
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def twist_hat(xi):
    """4x4 matrix of a 6-twist [v; w]."""
    X = np.zeros((4, 4))
    X[:3, :3] = hat3(xi[3:])
    X[:3, 3] = xi[:3]
    return X


def inv_pose(T):
    T = np.asarray(T, dtype=float)
    Ti = np.eye(4)
    Ti[:3, :3] = T[:3, :3].T
    Ti[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return Ti


def pose_to_se3(T):
    T = np.asarray(T, dtype=float)
    return pin.SE3(T[:3, :3].copy(), T[:3, 3].copy())


def random_rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return pin.Quaternion(q[3], q[0], q[1], q[2]).toRotationMatrix()


def rpy_matrix(rpy):
    return pin.rpy.rpyToMatrix(*[float(x) for x in rpy])


def base_to_6(base, x):
    """Embed a b-vector (twist or wrench) into a 6-vector [lin; ang]."""
    out = np.zeros(6)
    out[BASE_ROWS[base]] = np.asarray(x, dtype=float).reshape(-1)
    return out


# --------------------------------------------------------------------------
# URDF utilities
# --------------------------------------------------------------------------
def read_urdf(source):
    """URDF XML text from a path or an XML string."""
    if isinstance(source, (str, os.PathLike)) and not str(source).lstrip().startswith("<"):
        with open(source, "r", encoding="utf-8") as f:
            return f.read()
    return str(source)


def urdf_root_link(xml):
    root = ET.fromstring(xml)
    links = [l.get("name") for l in root.findall("link")]
    children = {j.find("child").get("link") for j in root.findall("joint")}
    roots = [l for l in links if l not in children]
    if len(roots) != 1:
        raise ValueError(f"URDF has {len(roots)} root links: {roots}")
    return roots[0]


def urdf_link_names(xml):
    return [l.get("name") for l in ET.fromstring(xml).findall("link")]


def urdf_total_mass(xml):
    return sum(float(m.get("value")) for m in ET.fromstring(xml).findall("link/inertial/mass"))


def urdf_movable_joints(xml):
    return [
        j.get("name")
        for j in ET.fromstring(xml).findall("joint")
        if j.get("type") in ("revolute", "continuous", "prismatic")
    ]


def strip_mimic(xml, mode="free"):
    """Remove ``<mimic>`` tags from top-level joints.

    mode="free": the mimicking joint becomes an independent joint.
    mode="fixed": the mimicking joint becomes a fixed joint (at q = 0).
    Returns (new_xml, list_of_affected_joint_names).
    """
    root = ET.fromstring(xml)
    touched = []
    for j in root.findall("joint"):
        m = j.find("mimic")
        if m is None:
            continue
        j.remove(m)
        touched.append(j.get("name"))
        if mode == "fixed":
            j.set("type", "fixed")
            for tag in ("axis", "limit", "dynamics", "safety_controller"):
                for e in j.findall(tag):
                    j.remove(e)
    return ET.tostring(root, encoding="unicode"), touched


def remove_subtree(xml, link_name):
    """Remove a link, everything below it, and the joint attaching it."""
    root = ET.fromstring(xml)
    joints = root.findall("joint")
    children_of = {}
    for j in joints:
        children_of.setdefault(j.find("parent").get("link"), []).append(j)
    doomed_links, stack = set(), [link_name]
    while stack:
        l = stack.pop()
        doomed_links.add(l)
        stack.extend(j.find("child").get("link") for j in children_of.get(l, []))
    for j in joints:
        if j.find("child").get("link") in doomed_links:
            root.remove(j)
    for l in root.findall("link"):
        if l.get("name") in doomed_links:
            root.remove(l)
    return ET.tostring(root, encoding="unicode")


# --------------------------------------------------------------------------
# Random URDF with every feature the loader must handle
# --------------------------------------------------------------------------
def _fmt(x):
    return " ".join(repr(float(v)) for v in x)


INERTIA_KEYS = [("ixx", (0, 0)), ("ixy", (0, 1)), ("ixz", (0, 2)), ("iyy", (1, 1)), ("iyz", (1, 2)), ("izz", (2, 2))]


def _random_inertial(rng, mass_scale=1.0):
    """Physically consistent inertia with off-diagonal terms + rotated frame."""
    m = mass_scale * rng.uniform(0.3, 3.0)
    # principal moments satisfying the triangle inequality
    while True:
        d = m * rng.uniform(0.005, 0.08, size=3)
        if d[0] + d[1] > d[2] and d[1] + d[2] > d[0] and d[0] + d[2] > d[1]:
            break
    R = random_rotation(rng)
    I = R @ np.diag(d) @ R.T
    xyz = rng.uniform(-0.15, 0.15, size=3)
    rpy = rng.uniform(-np.pi, np.pi, size=3)
    return (
        "<inertial>"
        f'<origin xyz="{_fmt(xyz)}" rpy="{_fmt(rpy)}"/>'
        f'<mass value="{float(m)!r}"/>'
        '<inertia ' + " ".join(f'{k}="{float(I[i, j])!r}"' for k, (i, j) in INERTIA_KEYS) + "/>"
        "</inertial>"
    )


def random_tree_urdf(seed=0, name="random_tree"):
    """A synthetic vehicle-manipulator URDF exercising the loader.

    Features: vehicle root link with rotated inertial frame and products of
    inertia; fixed joints carrying mass that must be merged (on the vehicle and
    mid-chain, some with rotated origins); a massless intermediate link;
    revolute (with limits), continuous and prismatic joints; unaligned joint
    axes (incl. negative axes); two branches (an arm and a 2-DoF "head") plus
    a wheel-like continuous joint on the vehicle; an end-effector frame link.
    """
    rng = np.random.default_rng(seed)

    def origin():
        return f'<origin xyz="{_fmt(rng.uniform(-0.3, 0.3, 3))}" rpy="{_fmt(rng.uniform(-np.pi, np.pi, 3))}"/>'

    def unit():
        a = rng.normal(size=3)
        return a / np.linalg.norm(a)

    links, joints = [], []

    def link(lname, massive=True, scale=1.0):
        body = _random_inertial(rng, scale) if massive else ""
        links.append(f'<link name="{lname}">{body}</link>')

    def joint(jname, jtype, parent, child, axis=None, limit=None):
        s = f'<joint name="{jname}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>{origin()}'
        if axis is not None:
            s += f'<axis xyz="{_fmt(axis)}"/>'
        if limit is not None:
            s += f'<limit lower="{float(limit[0])!r}" upper="{float(limit[1])!r}" effort="100" velocity="10"/>'
        elif jtype in ("revolute", "prismatic"):
            raise AssertionError
        elif jtype == "continuous":
            s += '<limit effort="100" velocity="10"/>'
        joints.append(s + "</joint>")

    link("vehicle", scale=10.0)
    link("vehicle_payload", scale=3.0)
    joint("payload_mount", "fixed", "vehicle", "vehicle_payload")
    link("wheel")
    joint("wheel_joint", "continuous", "vehicle", "wheel", axis=[0.0, 0.0, -1.0])
    # arm: lift (prismatic, unaligned) -> shoulder -> upper (fixed, massive)
    link("lift_link")
    joint("lift_joint", "prismatic", "vehicle_payload", "lift_link", axis=unit(), limit=(-0.2, 0.35))
    link("shoulder_link")
    joint("shoulder_joint", "revolute", "lift_link", "shoulder_link", axis=[0.0, 0.0, 1.0], limit=(-2.5, 2.5))
    link("upper_arm_link")
    joint("upper_arm_joint", "revolute", "shoulder_link", "upper_arm_link", axis=unit(), limit=(-1.9, 2.1))
    link("upper_arm_cover", scale=0.5)
    joint("upper_arm_cover_fixed", "fixed", "upper_arm_link", "upper_arm_cover")
    link("massless_spacer", massive=False)
    joint("spacer_fixed", "fixed", "upper_arm_cover", "massless_spacer")
    link("forearm_link")
    joint("elbow_joint", "revolute", "massless_spacer", "forearm_link", axis=[0.0, -1.0, 0.0], limit=(-2.8, 0.3))
    link("wrist_link")
    joint("wrist_joint", "continuous", "forearm_link", "wrist_link", axis=unit())
    link("slider_link", scale=0.3)
    joint("slider_joint", "prismatic", "wrist_link", "slider_link", axis=[1.0, 0.0, 0.0], limit=(0.0, 0.1))
    link("tool_link", massive=False)
    joint("tool_fixed", "fixed", "slider_link", "tool_link")
    # second branch: 2-DoF head on the vehicle payload
    link("pan_link", scale=0.5)
    joint("pan_joint", "revolute", "vehicle_payload", "pan_link", axis=unit(), limit=(-1.2, 1.2))
    link("tilt_link", scale=0.5)
    joint("tilt_joint", "revolute", "pan_link", "tilt_link", axis=[0.0, 1.0, 0.0], limit=(-0.8, 0.8))
    link("camera_link", massive=False)
    joint("camera_fixed", "fixed", "tilt_link", "camera_link")

    return f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "\n".join(links + joints) + "\n</robot>\n"


# --------------------------------------------------------------------------
# The oracle
# --------------------------------------------------------------------------
class PinocchioOracle:
    """Pinocchio counterpart of a ``vm_dynamics`` model.

    Parameters
    ----------
    urdf : path or XML string (the same one given to ``vm.load_model``)
    base : "SE3" | "SE2" | "SO3" | "fixed"
    gravity : gravity acceleration in the inertial frame
    joint_names : order of our joint coordinates (``model.joint_names``);
        defaults to Pinocchio's depth-first order.
    """

    def __init__(self, urdf, base="SE3", gravity=(0.0, 0.0, -9.81), joint_names=None):
        if base not in BASES:
            raise ValueError(base)
        self.xml = read_urdf(urdf)
        self.base = base
        self.b = BASE_DIM[base]
        self.gravity = np.asarray(gravity, dtype=float).reshape(3)
        root_joint = {
            "SE3": pin.JointModelFreeFlyer(),
            "SE2": pin.JointModelPlanar(),
            "SO3": pin.JointModelSpherical(),
            "fixed": None,
        }[base]
        if root_joint is None:
            self.model = pin.buildModelFromXML(self.xml)
        else:
            self.model = pin.buildModelFromXML(self.xml, root_joint)
        self.data = self.model.createData()
        self._scratch = self.model.createData()
        assert np.all(self.model.armature == 0.0)
        self.root_link = urdf_root_link(self.xml)
        self.link_names = urdf_link_names(self.xml)
        self.total_mass = sum(I.mass for I in self.model.inertias)
        urdf_mass = urdf_total_mass(self.xml)
        if abs(self.total_mass - urdf_mass) > 1e-9 * max(1.0, urdf_mass):
            raise AssertionError(f"Pinocchio mass {self.total_mass} != URDF mass {urdf_mass} (parse error?)")

        first = 1 if base == "fixed" else 2  # skip universe (+ root joint)
        pin_joint_names = list(self.model.names)[first:]
        if joint_names is None:
            joint_names = pin_joint_names
        joint_names = list(joint_names)
        if sorted(joint_names) != sorted(pin_joint_names):
            raise AssertionError(
                f"joint sets differ: ours-only {sorted(set(joint_names) - set(pin_joint_names))}, "
                f"pinocchio-only {sorted(set(pin_joint_names) - set(joint_names))}"
            )
        self.joint_names = joint_names
        self.n = len(joint_names)
        self.joint_ids = [self.model.getJointId(j) for j in joint_names]
        for jid in self.joint_ids:
            assert self.model.joints[jid].nv == 1, self.model.names[jid]
        self.v_idx = np.array(
            list(range(self.b)) + [self.model.joints[j].idx_v for j in self.joint_ids], dtype=int
        )
        assert sorted(self.v_idx) == list(range(self.model.nv))
        self.continuous = np.array([self.model.joints[j].nq == 2 for j in self.joint_ids])

        lo = np.full(self.n, -np.pi)
        hi = np.full(self.n, np.pi)
        for k, jid in enumerate(self.joint_ids):
            if self.continuous[k]:
                continue
            iq = self.model.joints[jid].idx_q
            l, h = self.model.lowerPositionLimit[iq], self.model.upperPositionLimit[iq]
            if np.isfinite(l) and np.isfinite(h) and h > l and max(abs(l), abs(h)) < 1e10:
                lo[k], hi[k] = l, h
        self.q_lower, self.q_upper = lo, hi

    # ---------------------------------------------------------------- frames
    def frame_id(self, name):
        if self.model.existFrame(name, pin.FrameType.BODY):
            return self.model.getFrameId(name, pin.FrameType.BODY)
        if self.model.existFrame(name):
            return self.model.getFrameId(name)
        raise KeyError(name)

    # ----------------------------------------------------------- conversions
    def g_pin_of(self, q_pin):
        """Pose of the root link (vehicle) frame in Pinocchio's world W0."""
        if self.base == "fixed":
            return self.model.frames[self.frame_id(self.root_link)].placement.homogeneous
        pin.forwardKinematics(self.model, self._scratch, q_pin)
        return (self._scratch.oMi[1] * self.model.frames[self.frame_id(self.root_link)].placement).homogeneous

    def to_pin_q(self, g, q):
        """(g, q) -> (q_pin, g_W0) with g = g_W0 @ g_pin(q_pin)."""
        q = np.asarray(q, dtype=float).reshape(self.n)
        g = np.eye(4) if g is None else np.asarray(g, dtype=float)
        qp = pin.neutral(self.model)
        R, p = g[:3, :3], g[:3, 3]
        if self.base == "SE3":
            qp[:3] = p
            qp[3:7] = pin.Quaternion(R).normalized().coeffs()
        elif self.base == "SE2":
            th = np.arctan2(R[1, 0], R[0, 0])
            qp[:4] = [p[0], p[1], np.cos(th), np.sin(th)]
        elif self.base == "SO3":
            qp[:4] = pin.Quaternion(R).normalized().coeffs()
        for k, jid in enumerate(self.joint_ids):
            iq = self.model.joints[jid].idx_q
            if self.continuous[k]:
                qp[iq : iq + 2] = [np.cos(q[k]), np.sin(q[k])]
            else:
                qp[iq] = q[k]
        g_W0 = g @ inv_pose(self.g_pin_of(qp))
        return qp, g_W0

    def from_pin_q(self, q_pin, g_W0=None):
        """(q_pin, g_W0) -> (g, q)."""
        g_W0 = np.eye(4) if g_W0 is None else g_W0
        g = g_W0 @ self.g_pin_of(q_pin)
        q = np.zeros(self.n)
        for k, jid in enumerate(self.joint_ids):
            iq = self.model.joints[jid].idx_q
            q[k] = np.arctan2(q_pin[iq + 1], q_pin[iq]) if self.continuous[k] else q_pin[iq]
        return g, q

    def to_pin_v(self, V, qd):
        v = np.zeros(self.model.nv)
        v[self.v_idx] = np.concatenate([np.asarray(V, float).reshape(self.b), np.asarray(qd, float).reshape(self.n)])
        return v

    def from_pin_v(self, v):
        x = np.asarray(v)[self.v_idx]
        return x[: self.b].copy(), x[self.b :].copy()

    def _set_gravity(self, g_W0):
        self.model.gravity.linear = g_W0[:3, :3].T @ self.gravity

    def fext(self, frame_wrenches):
        """Per-joint external forces (local joint frames) from body wrenches at frames."""
        f = [pin.Force.Zero() for _ in range(self.model.njoints)]
        for name, w in (frame_wrenches or {}).items():
            w = np.asarray(w, dtype=float).reshape(6)
            fr = self.model.frames[self.frame_id(name)]
            f[fr.parentJoint] = f[fr.parentJoint] + fr.placement.act(pin.Force(w[:3], w[3:]))
        return pin.StdVec_Force(f) if hasattr(pin, "StdVec_Force") else f

    # ------------------------------------------------------------- sampling
    def random_state(self, rng, v_scale=1.0):
        """Random (g, V, q, qd) in our coordinates, q within finite limits."""
        g = np.eye(4)
        if self.base in ("SE3", "fixed"):
            g[:3, :3] = random_rotation(rng)
            g[:3, 3] = rng.normal(size=3)
        elif self.base == "SE2":
            th = rng.uniform(-np.pi, np.pi)
            g[:2, :2] = [[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]]
            g[:2, 3] = rng.normal(size=2)
        elif self.base == "SO3":
            g[:3, :3] = random_rotation(rng)
        u = rng.uniform(0.02, 0.98, size=self.n)
        q = self.q_lower + u * (self.q_upper - self.q_lower)
        V = v_scale * rng.normal(size=self.b)
        qd = v_scale * rng.normal(size=self.n)
        return g, V, q, qd

    # ------------------------------------------------------------ dynamics
    def mass_matrix(self, q, g=None):
        qp, _ = self.to_pin_q(g, q)
        M = pin.crba(self.model, self.data, qp).copy()
        M = np.triu(M) + np.triu(M, 1).T
        return M[np.ix_(self.v_idx, self.v_idx)]

    def aba(self, g, V, q, qd, tau, base_wrench=None, frame_wrenches=None):
        """Forward dynamics -> (Vdot, qdd)."""
        qp, g_W0 = self.to_pin_q(g, q)
        v = self.to_pin_v(V, qd)
        bw = np.zeros(self.b) if base_wrench is None else base_wrench
        u = self.to_pin_v(bw, tau)  # generalized forces (same index map as v)
        self._set_gravity(g_W0)
        if frame_wrenches:
            a = pin.aba(self.model, self.data, qp, v, u, self.fext(frame_wrenches))
        else:
            a = pin.aba(self.model, self.data, qp, v, u)
        return self.from_pin_v(a.copy())

    def rnea(self, g, V, q, qd, Vdot, qdd, frame_wrenches=None):
        """Inverse dynamics -> (base_wrench, tau)."""
        qp, g_W0 = self.to_pin_q(g, q)
        v = self.to_pin_v(V, qd)
        a = self.to_pin_v(Vdot, qdd)
        self._set_gravity(g_W0)
        if frame_wrenches:
            u = pin.rnea(self.model, self.data, qp, v, a, self.fext(frame_wrenches))
        else:
            u = pin.rnea(self.model, self.data, qp, v, a)
        return self.from_pin_v(u.copy())

    def momentum(self, g, V, q, qd):
        """Total spatial momentum [linear; angular] in the inertial frame, about its origin.

        Computed by summing body momenta (data.oMi, data.v, model.inertias).
        """
        qp, g_W0 = self.to_pin_q(g, q)
        v = self.to_pin_v(V, qd)
        pin.forwardKinematics(self.model, self.data, qp, v)
        h = pin.Force.Zero()
        for i in range(1, self.model.njoints):
            h = h + self.data.oMi[i].act(self.model.inertias[i] * self.data.v[i])
        h = pose_to_se3(g_W0).act(h)
        return np.concatenate([h.linear, h.angular])

    def momentum_ccrba(self, g, V, q, qd):
        """Same quantity via pin.ccrba (centroidal, shifted to the origin); oracle self-check."""
        qp, g_W0 = self.to_pin_q(g, q)
        v = self.to_pin_v(V, qd)
        pin.ccrba(self.model, self.data, qp, v)
        hg = self.data.hg
        c = self.data.com[0]
        h = pin.Force(hg.linear, hg.angular + np.cross(c, hg.linear))
        h = pose_to_se3(g_W0).act(h)
        return np.concatenate([h.linear, h.angular])

    def energy(self, g, V, q, qd):
        """Kinetic + gravitational potential energy (potential zero at the inertial origin)."""
        return sum(self.energy_terms(g, V, q, qd))

    def energy_terms(self, g, V, q, qd):
        """(kinetic, potential). Potential = -sum_i m_i gravity . c_i over ALL bodies,
        including the body rigidly attached to the universe for a fixed base (which
        pin.computePotentialEnergy skips)."""
        qp, g_W0 = self.to_pin_q(g, q)
        v = self.to_pin_v(V, qd)
        self._set_gravity(g_W0)
        ke = pin.computeKineticEnergy(self.model, self.data, qp, v)
        pe = pin.computePotentialEnergy(self.model, self.data, qp)
        I0 = self.model.inertias[0]
        pe -= I0.mass * float(self.model.gravity.linear @ I0.lever)  # universe body (oMi[0] = identity)
        pe -= self.total_mass * float(self.gravity @ g_W0[:3, 3])
        return float(ke), float(pe)

    def potential_energy_by_bodies(self, g, q):
        """Independent cross-check of the potential: -sum m_i gravity . c_i (inertial frame)."""
        qp, g_W0 = self.to_pin_q(g, q)
        pin.forwardKinematics(self.model, self.data, qp)
        pe = 0.0
        for i in range(self.model.njoints):
            I = self.model.inertias[i]
            c = g_W0[:3, :3] @ self.data.oMi[i].act(I.lever) + g_W0[:3, 3]
            pe -= I.mass * float(self.gravity @ c)
        return pe

    def frame_pose(self, q, frame, g=None):
        """4x4 pose of a URDF link/frame: in the vehicle frame if g is None, else inertial."""
        qp, g_W0 = self.to_pin_q(g, q)
        pin.framesForwardKinematics(self.model, self.data, qp)
        oMf = self.data.oMf[self.frame_id(frame)].homogeneous
        if g is None:
            oMroot = self.data.oMf[self.frame_id(self.root_link)].homogeneous
            return inv_pose(oMroot) @ oMf
        return g_W0 @ oMf

    def frame_body_twist(self, g, V, q, qd, frame):
        """Body twist [v; w] of a frame (in its own axes)."""
        qp, _ = self.to_pin_q(g, q)
        v = self.to_pin_v(V, qd)
        pin.forwardKinematics(self.model, self.data, qp, v)
        pin.updateFramePlacements(self.model, self.data)
        nu = pin.getFrameVelocity(self.model, self.data, self.frame_id(frame), pin.ReferenceFrame.LOCAL)
        return nu.vector.copy()

    # ------------------------------------------------------------ simulation
    def state_derivative(self, t, x, tau_fn=None, base_wrench_fn=None, frame_wrenches_fn=None):
        """ODE right-hand side on the embedded state x = [vec(R), p, V, q, qd].

        Base pose is propagated by g_dot = g * hat(V) (body twist).
        """
        g, V, q, qd = self.unpack_state(x)
        tau = np.zeros(self.n) if tau_fn is None else tau_fn(t, g, V, q, qd)
        bw = None if base_wrench_fn is None else base_wrench_fn(t, g, V, q, qd)
        fw = None if frame_wrenches_fn is None else frame_wrenches_fn(t, g, V, q, qd)
        Vdot, qdd = self.aba(g, V, q, qd, tau, bw, fw)
        gdot = g @ twist_hat(base_to_6(self.base, V)) if self.b else np.zeros((4, 4))
        return np.concatenate([gdot[:3, :3].reshape(-1), gdot[:3, 3], Vdot, qd, qdd])

    def pack_state(self, g, V, q, qd):
        g = np.asarray(g, float)
        return np.concatenate([g[:3, :3].reshape(-1), g[:3, 3], np.asarray(V, float).reshape(self.b), q, qd])

    def unpack_state(self, x):
        g = np.eye(4)
        g[:3, :3] = x[:9].reshape(3, 3)
        g[:3, 3] = x[9:12]
        V = x[12 : 12 + self.b]
        q = x[12 + self.b : 12 + self.b + self.n]
        qd = x[12 + self.b + self.n :]
        return g, V, q, qd

    def simulate(self, g0, V0, q0, qd0, t_final, tau_fn=None, base_wrench_fn=None,
                 frame_wrenches_fn=None, t_eval=None, rtol=1e-12, atol=1e-12, method="DOP853"):
        """High-accuracy reference simulation with scipy's solve_ivp.

        ``*_fn(t, g, V, q, qd)`` return tau / base wrench / frame-wrench dict.
        Returns the solve_ivp result; use ``unpack_state(sol.y[:, k])``.
        """
        from scipy.integrate import solve_ivp

        x0 = self.pack_state(g0, V0, q0, qd0)
        return solve_ivp(
            self.state_derivative, (0.0, t_final), x0, method=method, t_eval=t_eval,
            rtol=rtol, atol=atol, args=(tau_fn, base_wrench_fn, frame_wrenches_fn),
        )

