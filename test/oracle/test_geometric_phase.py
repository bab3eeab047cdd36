"""Geometric phase: vehicle rotation from closed joint loops at conserved momentum.

Paper 002 (Müller 2023) §5(f), §6(c), Fig. 3; seeds-Muller.md §2.5, §3.2.  A satellite with
three reaction wheels (SE(3) base) drives its wheels around the closed loop of the paper,
``r(t) = (π(cos 2πt − 1), π sin 2πt, (π/2) sin 4πt)`` (period 1 s), at zero momentum.  For
symmetric rotors the connection 𝒜 is constant, so the body-frame reconstruction equation
``g⁻¹ġ = −𝒜ṙ`` is the same in every cycle and the vehicle turns by the same rotation
(holonomy) each cycle.  The independent oracle: Pinocchio's ``crba`` gives ``M_bb``, ``M_bq``;
the base velocity ``V = M_bb⁻¹(P − M_bq q̇)`` (``P = 0``, or the body momentum from the
inertial one by Pinocchio's SE3 action) and the attitude quaternion/position are integrated
by scipy's DOP853 (rtol 1e-12).

Robots: a small cube-sat built here with large wheels (phase ≈ 6.5° per cycle), and
urdf/satellite_wheels.urdf (150 kg bus, phase ≈ 0.002° per cycle) if present.
"""
from __future__ import annotations

import os

import numpy as np
import oracles
import pinocchio as pin
import pytest
from scipy.integrate import solve_ivp

import vm_dynamics as vm
from vm_dynamics.core import lie

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # test/
URDF_DIR = os.path.join(os.path.dirname(HERE), "urdf")
SAT_FILE = os.path.join(URDF_DIR, "satellite_wheels.urdf")
DT = 2e-3
CYCLES = 3


def cubesat_urdf(wheel_mass=2.0, wheel_radius=0.15, wheel_width=0.04, bus_mass=6.0,
                 bus_size=0.5):
    """Cube satellite (bus with CoM offset and products of inertia) with three orthogonal
    symmetric disc wheels on continuous joints, 0.15 m off the bus origin."""
    Ib = bus_mass * bus_size**2 / 6
    Ia = 0.5 * wheel_mass * wheel_radius**2
    It = wheel_mass * (3 * wheel_radius**2 + wheel_width**2) / 12
    parts = [f'<link name="base_link"><inertial><origin xyz="0.02 -0.01 0.015" rpy="0 0 0"/>'
             f'<mass value="{bus_mass}"/><inertia ixx="{1.05 * Ib}" ixy="{0.02 * Ib}" '
             f'ixz="{-0.01 * Ib}" iyy="{0.97 * Ib}" iyz="{0.015 * Ib}" izz="{0.9 * Ib}"/>'
             f'</inertial></link>']
    for name, xyz, axis, inertia in (("x", "0.15 0 0", "1 0 0", (Ia, It, It)),
                                     ("y", "0 0.15 0", "0 1 0", (It, Ia, It)),
                                     ("z", "0 0 0.15", "0 0 1", (It, It, Ia))):
        parts.append(f'<link name="wheel_{name}"><inertial><origin xyz="0 0 0"/>'
                     f'<mass value="{wheel_mass}"/><inertia ixx="{inertia[0]}" ixy="0" ixz="0" '
                     f'iyy="{inertia[1]}" iyz="0" izz="{inertia[2]}"/></inertial></link>')
        parts.append(f'<joint name="wheel_{name}_joint" type="continuous"><parent link="base_link"/>'
                     f'<child link="wheel_{name}"/><origin xyz="{xyz}" rpy="0 0 0"/>'
                     f'<axis xyz="{axis}"/></joint>')
    return '<robot name="cubesat_wheels">' + "".join(parts) + "</robot>"


def paper_path(t, direction=1.0):
    """Paper 002 §6(c) rotor path (period 1 s); direction −1 runs it backwards."""
    w, a = 2 * np.pi * direction, np.pi
    q = np.array([a * (np.cos(w * t) - 1), a * np.sin(w * t), a / 2 * np.sin(2 * w * t)])
    qd = np.array([-a * w * np.sin(w * t), a * w * np.cos(w * t), a * w * np.cos(2 * w * t)])
    qdd = np.array([-a * w * w * np.cos(w * t), -a * w * w * np.sin(w * t),
                    -2 * a * w * w * np.sin(2 * w * t)])
    return q, qd, qdd


def _sources():
    out = [pytest.param(cubesat_urdf(), 1.0, id="cubesat")]
    if os.path.exists(SAT_FILE):
        out.append(pytest.param(open(SAT_FILE).read(), 0.0, id="satellite_wheels.urdf"))
    else:
        out.append(pytest.param(None, 0.0, id="satellite_wheels.urdf",
                                marks=pytest.mark.skip(reason="urdf/satellite_wheels.urdf absent")))
    return out


def _quat_R(x):
    x = x / np.linalg.norm(x)
    return pin.Quaternion(x[3], x[0], x[1], x[2]).toRotationMatrix()


def pinocchio_reconstruction(xml, joint_names, path, t_eval, momentum=None):
    """Independent: Pinocchio crba blocks + DOP853 on [p, quaternion (x, y, z, w)]."""
    orc = oracles.PinocchioOracle(xml, base="SE3", gravity=(0, 0, 0), joint_names=joint_names)

    def f(t, x):
        q, qd = path(t)[:2]
        M = orc.mass_matrix(q)
        R = _quat_R(x[3:7])
        P = np.zeros(6)
        if momentum is not None:
            Pb = pin.SE3(R, x[:3]).actInv(pin.Force(momentum[:3], momentum[3:]))
            P = np.r_[Pb.linear, Pb.angular]
        V = np.linalg.solve(M[:6, :6], P - M[:6, 6:] @ qd)
        w, qv, qw = V[3:], x[3:6], x[6]
        return np.r_[R @ V[:3], 0.5 * (qw * w + np.cross(qv, w)), -0.5 * qv @ w]

    sol = solve_ivp(f, (t_eval[0], t_eval[-1]), np.r_[0, 0, 0, 0, 0, 0, 1.0], method="DOP853",
                    rtol=1e-12, atol=1e-12, t_eval=t_eval)
    return np.array([lie.make_pose(_quat_R(sol.y[3:7, k]), sol.y[:3, k])
                     for k in range(len(t_eval))])


def _angle_deg(R1, R2):
    return np.degrees(np.linalg.norm(lie.so3_log(R1[:3, :3].T @ R2[:3, :3])))


@pytest.mark.parametrize("xml,min_phase_deg", _sources())
def test_wheel_loop_holonomy(xml, min_phase_deg):
    """Zero momentum, prescribed wheel loop: momentum stays zero, the per-cycle rotation angle
    is the same every cycle (to 1e-9°), agrees with the Pinocchio/DOP853 oracle to 1e-6° (and
    relatively to 1e-6), and reconstruct_base gives the same poses."""
    model = vm.load_model(xml, gravity=(0, 0, 0))
    assert model.n == 3
    q0, qd0, _ = paper_path(0.0)
    Vz = -model.connection(q0) @ qd0
    tr = vm.simulate(model, np.eye(4), Vz, None, None, float(CYCLES), DT, prescribed=paper_path)
    assert np.abs(tr[::10].momentum(model)).max() < 1e-12 * model.total_mass
    idx = [int(round(k / DT)) for k in range(CYCLES + 1)]
    gc = tr.g[idx]
    np.testing.assert_allclose(tr.t[idx], np.arange(CYCLES + 1.0), atol=1e-12)
    angles = np.array([_angle_deg(gc[k], gc[k + 1]) for k in range(CYCLES)])
    assert np.ptp(angles) < 1e-9, angles
    assert angles[0] > min_phase_deg
    np.testing.assert_allclose(tr.q[idx], np.tile(q0, (CYCLES + 1, 1)), atol=1e-12)  # closed loop

    ref = pinocchio_reconstruction(xml, model.joint_names, paper_path, np.arange(CYCLES + 1.0))
    dev = [_angle_deg(ref[k], gc[k]) for k in range(CYCLES + 1)]
    ref_angles = np.array([_angle_deg(ref[k], ref[k + 1]) for k in range(CYCLES)])
    print(f"\nper-cycle rotation {angles[0]:.12f} deg (Pinocchio {ref_angles[0]:.12f}); "
          f"cycle spread {np.ptp(angles):.1e} deg; max attitude deviation {max(dev):.1e} deg; "
          f"position deviation {np.abs(ref[:, :3, 3] - gc[:, :3, 3]).max():.1e} m")
    assert max(dev) < 1e-6
    assert np.abs(angles - ref_angles).max() < 1e-6 * angles[0]
    assert np.abs(ref[:, :3, 3] - gc[:, :3, 3]).max() < 1e-9

    first = tr[:idx[1] + 1]                                   # first cycle
    rb = vm.reconstruct_base(model, np.eye(4), paper_path, first.t)
    assert np.abs(rb.g - first.g).max() < 1e-12


def test_reversed_loop_gives_inverse_holonomy():
    """Running the loop backwards undoes it: hol(γ⁻¹) = hol(γ)⁻¹."""
    model = vm.load_model(cubesat_urdf(), gravity=(0, 0, 0))
    t = np.array([0.0, 1.0])
    fwd = vm.reconstruct_base(model, np.eye(4), paper_path, t, substeps=500)
    bwd = vm.reconstruct_base(model, np.eye(4), lambda s: paper_path(s, -1.0), t, substeps=500)
    assert _angle_deg(np.eye(4), fwd.g[-1]) > 1.0
    assert np.abs(fwd.g[-1] @ bwd.g[-1] - np.eye(4)).max() < 1e-10
    adaptive = vm.reconstruct_base(model, np.eye(4), paper_path, t, method="dopri5", rtol=1e-11)
    assert np.abs(adaptive.g[-1] - fwd.g[-1]).max() < 1e-9


def test_small_loop_holonomy_is_curvature():
    """A small counter-clockwise circle of radius ε in the (q_i, q_j) plane of the spacecraft
    arm at zero momentum displaces the vehicle by exp(−πε² B_ij) + O(ε³), with B the curvature
    of the mechanical connection, B_ij = ∂_i𝒜_j − ∂_j𝒜_i − [𝒜_i, 𝒜_j] (Model.curvature;
    second-order BCH of the four legs of a small loop gives −B_ij·area)."""
    import xacro
    model = vm.load_model(xacro.process_file(os.path.join(URDF_DIR, "spacecraft_arm.urdf.xacro"))
                          .toxml(), gravity=(0, 0, 0))
    qs = np.array([0.3, -0.6, 0.4, 1.2, -0.5, 0.8, 0.2])
    B = model.curvature(qs)
    w = 2 * np.pi
    for i, j in ((1, 3), (0, 1), (3, 5)):
        ei, ej = np.eye(7)[i], np.eye(7)[j]
        rel = []
        for eps in (1e-2, 5e-3):
            def path(t, eps=eps):
                return (qs + eps * (np.cos(w * t) * ei + np.sin(w * t) * ej),
                        eps * w * (-np.sin(w * t) * ei + np.cos(w * t) * ej))
            g = vm.reconstruct_base(model, np.eye(4), path, np.array([0.0, 1.0]), substeps=40).g[-1]
            Th = lie.se3_log(g) / (np.pi * eps**2)
            rel.append(np.linalg.norm(Th + B[i, j]) / np.linalg.norm(B[i, j]))
        assert rel[0] < 3e-3 and 1.6 < rel[0] / rel[1] < 2.5, (i, j, rel)   # O(ε) convergence


def test_released_with_spinning_wheels_total_phase():
    """Paper 002 Fig. 3b: nonzero momentum Π = K ṙ(0) (base initially at rest, wheels
    spinning).  The total phase (dynamic + geometric) from simulate(prescribed) and
    reconstruct_base(momentum=π) agrees with the Pinocchio oracle; the dynamic phase alone
    (wheels held at ṙ = 0 after release, same momentum) differs from it."""
    xml = cubesat_urdf()
    model = vm.load_model(xml, gravity=(0, 0, 0))
    q0, qd0, _ = paper_path(0.0)
    pi = model.momentum(np.eye(4), np.zeros(6), q0, qd0)
    assert np.linalg.norm(pi) > 0.1
    tr = vm.simulate(model, np.eye(4), np.zeros(6), None, None, 1.0, DT, prescribed=paper_path)
    np.testing.assert_allclose(tr.momentum(model)[::50], np.tile(pi, (11, 1)), rtol=0,
                               atol=1e-12 * np.linalg.norm(pi))
    t_eval = np.linspace(0.0, 1.0, 5)
    ref = pinocchio_reconstruction(xml, model.joint_names, paper_path, t_eval, momentum=pi)
    ours = tr.g[[int(round(t / DT)) for t in t_eval]]
    assert max(_angle_deg(a, b) for a, b in zip(ref, ours)) < 1e-6
    assert np.abs(ref[:, :3, 3] - ours[:, :3, 3]).max() < 1e-9
    rb = vm.reconstruct_base(model, np.eye(4), paper_path, tr.t, momentum=pi)
    assert np.abs(rb.g - tr.g).max() < 1e-11
    held = vm.reconstruct_base(model, np.eye(4), lambda t: (q0, np.zeros(3)), t_eval, momentum=pi,
                               substeps=100)
    assert _angle_deg(held.g[-1], ours[-1]) > 1.0
