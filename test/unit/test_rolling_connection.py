"""vm_dynamics.constraints: the kinematic connection's curvature against the holonomy it
predicts, and precise errors for bad input."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vm_dynamics.constraints import KinematicConnection, differential_drive, rolling_ball
from vm_dynamics.core.lie import so3_log
from vm_dynamics.model import load_model
from vm_dynamics.sim.integrators import integrate

ROOT = Path(__file__).resolve().parents[2]


def loop_holonomy(ball, eps, steps=400):
    """Rotation vector of R(1)R(0)ᵀ after the contact point runs once counter-clockwise round a
    circle of radius eps (prescribed r(t); reconstruction ġ = ξ^g, ξ = −𝒜ṙ, by RKMK4)."""
    conn = ball.connection
    w = 2 * np.pi

    def rhs(t, g, y):
        r = eps * np.array([np.cos(w * t), np.sin(w * t)])
        rd = eps * w * np.array([-np.sin(w * t), np.cos(w * t)])
        return conn.body_velocity(g, conn.fiber_velocity(r, rd)), np.zeros(1), None
    out = {}
    integrate(rhs, conn.group, "rkmk4", np.array([0.0, 1.0]), np.eye(4), np.zeros(1),
              lambda k, t, g, y, aux: out.__setitem__(k, g.copy()), substeps=steps)
    return so3_log(out[1][:3, :3])


def test_ball_holonomy_is_the_curvature_times_the_enclosed_area():
    """Small loops (002 Rem. 4.2, (4.8)): log(R(1)R₀ᵀ) → Σ_{I<J} ℬ_IJ a_IJ = ℬ₄₅ πε² (a_45 = ∮r⁴dr⁵
    = πε² counter-clockwise), i.e. a turn of −πε²/R² about the normal; the relative error is
    O(ε/R) (measured 0.196, 0.0995, 0.0499 for ε/R = 0.2, 0.1, 0.05), and the opposite sign
    (a bracket sign error in (4.7)) would give a relative error near 2."""
    ball = rolling_ball(0.5, 1.0)
    B45 = ball.connection.curvature(np.zeros(2))[0, 1]
    errs = []
    for eps in (0.1, 0.05, 0.025):
        phase = loop_holonomy(ball, eps)
        pred = B45 * np.pi * eps ** 2
        errs.append(np.linalg.norm(phase - pred) / np.linalg.norm(pred))
    assert B45[2] < 0
    assert errs[-1] < 0.06 and errs[0] / errs[1] > 1.8 and errs[1] / errs[2] > 1.8, errs


def test_curvature_is_antisymmetric_and_zero_for_an_abelian_constant_connection():
    """ℬ_IJ = −ℬ_JI; a constant connection into commuting directions (vx, vy of SE(2)) is
    flat: those constraints are holonomic."""
    A = np.array([[1.0, 0.5], [-0.3, 2.0], [0.0, 0.0]])
    flat = KinematicConnection("SE2", 2, lambda r: A)
    assert np.all(flat.curvature(np.zeros(2)) == 0.0)
    A[2] = [0.4, -0.1]
    curved = KinematicConnection("SE2", 2, lambda r: A)
    B = curved.curvature(np.zeros(2))
    assert np.allclose(B, -np.transpose(B, (1, 0, 2))) and np.max(np.abs(B)) > 0.1


@pytest.mark.parametrize("kwargs,match", [
    (dict(group="SE2", shape_dim=2, A=lambda r: np.zeros((3, 2)), trivialisation="up"),
     "trivialisation='up'"),
    (dict(group="fixed", shape_dim=2, A=lambda r: np.zeros((0, 2))), "non-trivial group"),
    (dict(group="SE2", shape_dim=0, A=lambda r: np.zeros((3, 0))), "shape_dim=0"),
])
def test_bad_connection_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        KinematicConnection(**kwargs)


def test_a_connection_of_the_wrong_shape_is_named():
    conn = KinematicConnection("SO3", 2, lambda r: np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"connection A\(r\): expected a finite 3x2"):
        conn.A(np.zeros(2))


@pytest.mark.parametrize("kwargs,match", [(dict(radius=0.0), "radius=0.0"),
                                          (dict(mass=-1.0), "mass=-1.0"),
                                          (dict(incline=2.0), "incline=2.0")])
def test_bad_ball_parameters_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rolling_ball(**kwargs)


def test_bad_differential_drive_inputs_are_named():
    urdf = ROOT / "urdf" / "diff_drive_arm.urdf"
    with pytest.raises(ValueError, match="base='SE3'|moves in SE2"):
        differential_drive(load_model(urdf, base="SE3"), 0.1, 0.5)
    model = load_model(urdf, base="SE2")
    with pytest.raises(ValueError, match="left='front_wheel'"):
        differential_drive(model, 0.1, 0.5, left="front_wheel")
    with pytest.raises(ValueError, match="wheel joint 'joint2'"):
        differential_drive(model, 0.1, 0.5, right="joint2")
    with pytest.raises(ValueError, match="gravity"):
        differential_drive(load_model(urdf, base="SE2", gravity=(1.0, 0.0, -9.81)), 0.1, 0.5)


def test_bad_generalised_forces_are_named():
    ball = rolling_ball(0.2, 1.0)
    with pytest.raises(ValueError, match="Q_shape: expected 2 finite"):
        ball.accelerations([0, 0], [1, 0], Q_shape=[1.0, float("nan")])
    with pytest.raises(ValueError, match="Q_fiber: expected 3 finite"):
        ball.accelerations([0, 0], [1, 0], Q_fiber=[1.0, 2.0])


@pytest.mark.parametrize("theta", [0.0, 1e-9, 5e-5, 2e-3, 0.4, 2.9, -1.3])
def test_planar_group_closed_forms_equal_the_generic_se2_maps(theta):
    """The scalar SE(2) exp and dexp⁻¹_{−Θ} of the stepper equal the generic 6×6 ones (≤ 1e-12,
    across the small-angle branches)."""
    from vm_dynamics.constraints.drive import PlanarGroup
    from vm_dynamics.core.groups import SE2
    P = PlanarGroup(SE2)
    T = np.array([0.7, -1.9, theta])
    assert np.max(np.abs(P.exp(T) - SE2.exp(T))) <= 1e-12
    assert np.max(np.abs(P.dexp_inv_body(T) - SE2.dexp_inv_body(T))) <= 1e-12
    assert P.dim == 3 and np.allclose(P.project(np.arange(6.0)), [0, 1, 5])
