"""Fixtures of the capture oracle tests (test/oracle/test_capture_*.py): a free ball chaser,
the independent 1-D impact oracle, a run until a contact has come and gone, and the spacecraft
arm with a box whose face hovers just above its tip.

Each test builds its own bodies and laws from these and keeps its own tolerances; what is here
is the set-up the tests had in several copies, so that they stay the same experiment.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
from scipy.integrate import solve_ivp

import vm_dynamics as vm
from vm_dynamics.capture import (
    CaptureSimulator,
    CaptureSystem,
    ChaserPrimitive,
    ContactModel,
    GraspSpec,
    HuntCrossley,
    Sphere,
)

ARM_URDF = str(Path(__file__).resolve().parents[2] / "urdf" / "spacecraft_arm.urdf.xacro")
#: joint efforts before and while grasped and the base wrench (thrusters) while grasped, of the
#: contact → grasp → release sequence on the arm (read-only: the tests share them)
APPROACH_EFFORT, GRASPED_EFFORT = np.full(7, 0.5), np.full(7, -0.5)
THRUST = np.array([2.0, -1.0, 0.5, 0.3, 0.1, -0.2])
APPROACH_EFFORT.setflags(write=False)
GRASPED_EFFORT.setflags(write=False)
THRUST.setflags(write=False)


def free_ball(ixx: float, iyy: float, izz: float):
    """A 2 kg one-link chaser (link ``ball``, principal inertias as given), free-flying and
    without gravity, as a capture chaser must be."""
    urdf = f"""<robot name="ball"><link name="ball"><inertial><mass value="2"/>
<origin xyz="0 0 0"/><inertia ixx="{ixx!r}" iyy="{iyy!r}" izz="{izz!r}" ixy="0" ixz="0" iyz="0"/>
</inertial></link></robot>"""
    return vm.load_model(urdf, gravity=(0.0, 0.0, 0.0))


def restitution_1d(k: float, n: float, chi: float, m_eff: float, v0: float) -> float:
    """Independent 1-D impact: ``m* δ̈ = −k δⁿ (1 + χ δ̇/v₀)`` (force never pulling) from
    ``δ = 0``, ``δ̇ = v0`` until δ returns to 0 (scipy DOP853); the ratio of the exit to the
    entry speed."""
    def rhs(t, x):
        d, dd = x
        return [dd, -max(0.0, k * max(d, 0.0) ** n * (1.0 + chi * dd / v0)) / m_eff]

    def out(t, x):
        return x[0]
    out.terminal, out.direction = True, -1
    sol = solve_ivp(rhs, (0.0, 10.0), [0.0, v0], method="DOP853", rtol=1e-12, atol=1e-15,
                    events=out, first_step=1e-8)
    return -sol.y_events[0][0][1] / v0


def relative_velocity(s) -> np.ndarray:
    """Inertial velocity of the chaser's origin minus the target's (capture state ``s``)."""
    return s.g[:3, :3] @ s.V[:3] - s.g_T[:3, :3] @ s.V_T[:3]


def impact(ball, target, primitive, contact, dt, g, V, V_T, max_steps, **options):
    """The ``ball`` chaser (one ``primitive``) at ``(g, V)`` against ``target`` at the origin
    with twist ``V_T``, stepped until a contact has come and gone or ``max_steps`` ran out.

    Returns ``sim``, the last state ``s``, ``touched``, ``points`` (most contact points at once)
    and the initial ``h0`` (total momentum), ``h0_T`` (the target's) and ``E0`` (balance).
    ``options`` go to :class:`CaptureSimulator` (method, rtol, atol)."""
    system = CaptureSystem(ball, target, [primitive], contact)
    sim = CaptureSimulator(system, dt, **options)
    sim.reset(g, V, np.zeros(0), np.zeros(0), np.eye(4), V_T)
    h = sim.momentum()
    out = SimpleNamespace(sim=sim, s=sim.state, touched=False, points=0, h0=h["total"],
                          h0_T=h["target"], E0=sim.energy()["balance"])
    for _ in range(max_steps):
        out.s = sim.step()
        out.points = max(out.points, len(sim.contacts))
        out.touched = out.touched or bool(sim.contacts)
        if out.touched and not sim.contacts:
            break
    return out


def head_on(ball, target, law, x0, dt, max_steps, v0=0.2, **options):
    """:func:`impact` of the ball's 0.1 m sphere tip, from ``x0`` on the x axis at ``v0``
    along +x, head on into ``target`` at rest (no friction)."""
    return impact(ball, target, ChaserPrimitive("tip", "ball", Sphere(0.1)), ContactModel(law),
                  dt, vm.pose([x0, 0.0, 0.0]), [v0, 0, 0, 0, 0, 0], np.zeros(6), max_steps,
                  **options)


def arm_box_capture(arm, target, g, V, q, qd, forces=(), **options):
    """The spacecraft ``arm`` (7 joints at ``q, qd``, base at ``(g, V)``) with a 0.05 m sphere
    ``tip`` at ``ee_link``, Hunt–Crossley contact (2e5, 1.5, e 0.5), grasping at ``ee_link``
    (0.05 m, 0.2 rad), and ``target`` (a box 0.6 m deep along the tip's z) placed on the tip's
    z axis with its face 2 mm above the tip, closing at 0.3 m/s while it tumbles.  Steps of
    0.5 ms; ``options`` go to :class:`CaptureSimulator`.  Returns the reset simulator."""
    system = CaptureSystem(arm, target, [ChaserPrimitive("tip", "ee_link", Sphere(0.05))],
                           ContactModel(HuntCrossley(2e5, 1.5, 0.5)),
                           GraspSpec("ee_link", 0.05, 0.2), forces)
    sim = CaptureSimulator(system, 5e-4, **options)
    g_T = g @ arm.frame_pose(q, "ee_link") @ vm.pose([0.0, 0.0, 0.05 + 0.3 + 0.002])
    sim.reset(g, V, q, qd, g_T, np.array([0.0, 0.0, -0.3, 0.05, 0.1, -0.05]))
    return sim
