"""vm_dynamics.capture: bad input is a ValueError naming the culprit; shapes' signed distances
against hand values; the Hunt–Crossley damping relation."""
from __future__ import annotations

import math

import numpy as np
import pytest

import vm_dynamics as vm
from vm_dynamics.capture import (
    Box,
    Capsule,
    CaptureSimulator,
    CaptureSystem,
    ChaserPrimitive,
    ContactModel,
    CoulombFriction,
    Cylinder,
    GraspSpec,
    HuntCrossley,
    MeasuredWrench,
    Sphere,
    TargetBody,
    contact_geometry,
    contact_model_from_config,
    primitive_from_config,
    shape_from_config,
    target_from_config,
)

BALL = """<robot name="ball"><link name="ball"><inertial><mass value="2"/><origin xyz="0 0 0"/>
<inertia ixx="0.02" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>"""


@pytest.fixture(scope="module")
def ball():
    return vm.load_model(BALL, gravity=(0.0, 0.0, 0.0))


def target(shape=None):
    return TargetBody(mass=10.0, com=[0, 0, 0], inertia=np.eye(3), shape=shape or Box([1, 1, 1]))


@pytest.mark.parametrize("shape, p, phi, n", [
    (Sphere(0.5), [0, 0, 2.0], 1.5, [0, 0, 1]),
    (Box([2, 2, 2]), [3, 0, 0], 2.0, [1, 0, 0]),
    (Box([2, 2, 2]), [2, 2, 0], math.sqrt(2), [math.sqrt(0.5), math.sqrt(0.5), 0]),
    (Box([2, 4, 2]), [0, 1.5, 0.2], -0.5, [0, 1, 0]),
    (Cylinder(1.0, 2.0), [0, 3, 0], 2.0, [0, 1, 0]),
    (Cylinder(1.0, 2.0), [0, 0, -1.5], 0.5, [0, 0, -1]),
    (Cylinder(1.0, 2.0), [0.1, 0, 0.95], -0.05, [0, 0, 1]),
    (Capsule(0.5, 2.0), [0, 0, 3.0], 1.5, [0, 0, 1]),
    (Capsule(0.5, 2.0), [2.0, 0, 0.3], 1.5, [1, 0, 0]),
])
def test_signed_distances(shape, p, phi, n):
    d, g = shape.signed_distance(np.array(p, float))
    assert d == pytest.approx(phi, abs=1e-15)
    assert np.allclose(g, n, atol=1e-15)


def test_capsule_finds_the_closest_point_of_its_axis():
    prim = ChaserPrimitive("finger", "ball", Capsule(0.05, 0.4))
    g_prim = vm.pose([0.0, 0.0, 0.0], [0, math.sin(0.3), 0, math.cos(0.3)])   # tilted capsule
    geom = contact_geometry(prim, g_prim, Box([1, 1, 1]), vm.pose([0.0, 0.0, -0.62]))
    # the lower end of the axis: z = −0.2·cos(0.6); penetration of the swept sphere into the top
    z_end = -0.2 * math.cos(0.6)
    assert geom.delta == pytest.approx(0.05 - (z_end + 0.12), abs=1e-9)
    assert np.allclose(geom.normal, [0, 0, 1])


def test_exact_damping_solves_its_relation():
    for e in (0.1, 0.5, 0.9, 1.0):
        h = HuntCrossley(1e5, 1.5, e)
        if e < 1:
            assert h.chi * (1 + e) == pytest.approx(math.log((1 + h.chi) / (1 - h.chi * e)),
                                                    rel=1e-12)
        assert h.predicted_restitution() == pytest.approx(e, rel=1e-12)


@pytest.mark.parametrize("kwargs, culprit", [
    ({"stiffness": -1.0}, "contact.stiffness"),
    ({"stiffness": 1e5, "restitution": 0.0}, "contact.restitution"),
    ({"stiffness": 1e5, "restitution": 1.5}, "contact.restitution"),
    ({"stiffness": 1e5, "damping": "viscous"}, "contact.damping"),
])
def test_hunt_crossley_rejects_bad_parameters(kwargs, culprit):
    with pytest.raises(ValueError, match=culprit):
        HuntCrossley(**kwargs)


@pytest.mark.parametrize("cfg, culprit", [
    ({"stiffness": "stiff"}, "contact.stiffness: expected a number"),
    ({"stiffnes": 1e5}, "unknown keys"),
    ({"exponent": 1.5}, "missing stiffness"),
    ({"stiffness": 1e5, "friction": {"mu": 0.3, "vreg": 1}}, "friction"),
])
def test_contact_config_errors(cfg, culprit):
    with pytest.raises(ValueError, match=culprit):
        contact_model_from_config(cfg)


def test_contact_config_takes_yaml_exponent_text():
    """YAML 1.1 (PyYAML) reads ``2.0e5`` as a string; it is the number it spells."""
    assert contact_model_from_config({"stiffness": "2.0e5"}).normal.stiffness == 2.0e5


@pytest.mark.parametrize("cfg, culprit", [
    ({"type": "cone", "radius": 1}, "not one of"),
    ({"type": "box", "size": [1, 1]}, "shape.size"),
    ({"type": "box", "size": [1, -1, 1]}, "shape.size: expected three positive"),
    ({"type": "sphere"}, "missing radius"),
    ({"type": "cylinder", "radius": 1, "height": 2}, "unknown height"),
])
def test_shape_config_errors(cfg, culprit):
    with pytest.raises(ValueError, match=culprit):
        shape_from_config(cfg)


@pytest.mark.parametrize("cfg, culprit", [
    ({"mass": 10, "shape": {"type": "sphere", "radius": 1}}, "missing inertia"),
    ({"mass": -1, "inertia": [1, 1, 1], "shape": {"type": "sphere", "radius": 1}},
     "target.mass"),
    ({"mass": 1, "inertia": [1, 1, 5], "shape": {"type": "sphere", "radius": 1}},
     "triangle inequality"),
    ({"mass": 1, "inertia": [1, 1], "shape": {"type": "sphere", "radius": 1}}, "target.inertia"),
    ({"mass": 1, "inertia": [1, 1, 1], "shape": {"type": "sphere", "radius": 1},
      "fixture": {"pos": [0, 0, 0]}}, "target.fixture"),
])
def test_target_config_errors(cfg, culprit):
    with pytest.raises(ValueError, match=culprit):
        target_from_config(cfg)


def test_system_rejects_what_it_cannot_simulate(ball):
    with pytest.raises(ValueError, match="gravity"):
        CaptureSystem(vm.load_model(BALL), target())
    with pytest.raises(ValueError, match="free-flying"):
        CaptureSystem(vm.load_model(BALL, base="SO3", gravity=(0, 0, 0)), target())
    with pytest.raises(ValueError, match="unknown chaser frame 'hand'"):
        CaptureSystem(ball, target(), [ChaserPrimitive("p", "hand", Sphere(0.1))],
                      ContactModel(HuntCrossley(1e5)))
    # every chaser primitive meets every target shape (a chaser box: box and cylinder pairs)
    CaptureSystem(ball, target(), [ChaserPrimitive("p", "ball", Box([1, 1, 1]))],
                  ContactModel(HuntCrossley(1e5)))
    with pytest.raises(ValueError, match="without a contact model"):
        CaptureSystem(ball, target(), [ChaserPrimitive("p", "ball", Sphere(0.1))])
    with pytest.raises(ValueError, match="grasp.frame"):
        CaptureSystem(ball, target(), grasp=GraspSpec("hand"))
    with pytest.raises(ValueError, match="unknown chaser frame"):
        primitive_from_config("p", {"frame": "hand", "shape": {"type": "sphere", "radius": 1}},
                              ball.frame_names)
    with pytest.raises(ValueError, match="the chaser side takes"):
        ChaserPrimitive("p", "ball", Cylinder(1, 1))


def test_simulator_input_errors(ball):
    sim = CaptureSimulator(CaptureSystem(ball, target(Sphere(0.5)),
                                         [ChaserPrimitive("p", "ball", Sphere(0.1))],
                                         ContactModel(HuntCrossley(1e5), CoulombFriction())),
                           1e-3)
    with pytest.raises(RuntimeError, match="reset"):
        sim.step()
    with pytest.raises(ValueError, match="method"):
        CaptureSimulator(sim.system, 1e-3, "rk45")
    sim.reset(vm.pose([2.0, 0, 0]), np.zeros(6), [], [], np.eye(4), np.zeros(6))
    with pytest.raises(ValueError, match="base_wrench"):
        sim.step(base_wrench=[1, 2, 3])
    with pytest.raises(ValueError, match="measured_wrench.frame"):
        sim.step(measured_wrench=MeasuredWrench("hand", np.zeros(6)))
    with pytest.raises(ValueError, match="grasp spec"):
        sim.grasp()
    sim.step()        # still usable after the rejected calls
    assert sim.t == pytest.approx(1e-3)


def test_fixture_reference_twist_and_acceleration_match_its_pose(ball):
    """(M1): the reference's body twist and its derivative equal central differences of the
    reference pose along the target's actual torque-free motion (standoff shrinking)."""
    from vm_dynamics.capture.mission import FixtureReference
    from vm_dynamics.core import lie
    tgt = TargetBody(mass=50.0, com=[0.02, 0.0, -0.01], inertia=np.diag([3.0, 4.0, 6.0]),
                     shape=Box([1, 1, 1]), fixture=vm.pose([0.6, 0.1, 0.0], [0, -0.6, 0, 0.8]))
    ref = FixtureReference(tgt, standoff=0.3, start=0.0, arrive=2.6)   # s̈(1 s) != 0
    h = 1e-3
    sim = CaptureSimulator(CaptureSystem(ball, tgt), h / 4)
    sim.reset(vm.pose([50.0, 0, 0]), np.zeros(6), [], [], np.eye(4),
              [0.05, 0.0, -0.02, 0.3, -0.4, 0.5])
    samples = []
    for k in range(int(round(1.0 / h)) + 2):
        if k:
            for _ in range(4):
                sim.step()
        s = sim.state
        if k >= int(round(1.0 / h)) - 2:
            ref.observe(s.g_T, s.V_T)
            samples.append(ref(s.t))
    (g1, V1, _), (g2, V2, A2), (g3, V3, _) = samples[-3:]
    V_fd = (lie.se3_log(lie.se3_inv(g2) @ g3) - lie.se3_log(lie.se3_inv(g2) @ g1)) / (2 * h)
    assert np.abs(V_fd - V2).max() <= 1e-6 * np.abs(V2).max()
    A_fd = (V3 - V1) / (2 * h)
    assert np.abs(A_fd - A2).max() <= 1e-5 * np.abs(A2).max()
    assert np.abs(A2).max() > 1e-3


def test_frame_twist_equals_the_body_jacobian_times_the_velocity():
    """vm_dynamics.capture.kinematics.frame_twist (compiled frame poses) = J_f ν with the
    reference Jacobian (lp), for every frame of the 7-DoF arm."""
    from pathlib import Path

    from vm_dynamics.capture.kinematics import frame_twist
    arm = vm.load_model(str(Path(__file__).resolve().parents[2] / "urdf"
                            / "spacecraft_arm.urdf.xacro"), gravity=(0, 0, 0))
    rng = np.random.default_rng(3)
    for frame in arm.frame_names:
        q, V, qd = rng.normal(size=7), rng.normal(size=6), rng.normal(size=7)
        ref = arm.frame_jacobian(q, frame) @ np.concatenate([V, qd])
        assert np.abs(frame_twist(arm, q, frame, V, qd) - ref).max() <= 1e-13 * max(
            1.0, np.abs(ref).max()), frame


def test_target_from_a_one_link_urdf():
    """Mass, CoM and inertia about the CoM (rotated inertial frame) read from a one-link URDF."""
    xml = """<robot name="sat"><link name="sat"><inertial><origin xyz="0.1 -0.2 0.3"
      rpy="0 0 1.5707963267948966"/><mass value="40"/><inertia ixx="2" iyy="3" izz="4" ixy="0"
      ixz="0" iyz="0"/></inertial></link></robot>"""
    t = target_from_config({"urdf": xml, "shape": {"type": "sphere", "radius": 0.5}})
    assert t.mass == 40.0 and t.name == "target"      # the scenario name, not the URDF's
    assert np.allclose(t.com, [0.1, -0.2, 0.3], atol=1e-15)
    assert np.allclose(t.inertia, np.diag([3.0, 2.0, 4.0]), atol=1e-12)   # axes turned by 90°
    two = xml.replace("</robot>", """<link name="b"><inertial><mass value="1"/><inertia ixx="1"
      iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j" type="revolute">
      <parent link="sat"/><child link="b"/><axis xyz="0 0 1"/><limit lower="-1" upper="1"
      effort="1" velocity="1"/></joint></robot>""")
    with pytest.raises(ValueError, match="one rigid body"):
        target_from_config({"urdf": two, "shape": {"type": "sphere", "radius": 0.5}})
