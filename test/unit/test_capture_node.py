"""The capture in the dynamics core (nodes/capture.py), in-process: the target's published
odometry and TF, ``~/grasp`` and ``~/release`` as the node serves them, the contact wrench, and
the measured wrench acting equal and opposite on chaser and target.

Oracles, all from the published messages: the total momentum of chaser and target — the
chaser's from Pinocchio (test/support/wrench_oracle.py), the target's
``Ad_{g⁻¹}ᵀ 𝕄 V`` with its spatial inertia written out here — is conserved to 1e-10 (no
external wrench) through the free tumble, the grasp, the grasped motion and the release; the
weld holds the target fixed in the grasp frame; the measured wrench changes the chaser's
momentum by exactly what the target loses."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from capture_scenario import CAPTURE, target_momentum
from wrench_oracle import spacecraft_oracle

from vm_dynamics.config.params import flatten
from vm_dynamics.nodes.dynamics_core import DynamicsCore
from vm_dynamics.ros import messages as rm

REPO = Path(__file__).resolve().parents[2]
def core(without=(), **overrides):
    p = {k: v for k, v in flatten(CAPTURE).items() if not k.startswith(tuple(without))}
    p.update(flatten(overrides))
    return DynamicsCore.from_params(p, folders=[str(REPO / "urdf")])


def published(d) -> dict:
    return {k: m for k, m in d.state_messages()}


def momenta(d, oracle):
    """``(chaser, target)`` spatial momenta from the published messages."""
    msgs = published(d)
    od, js = rm.parse_odometry(msgs["odom"]), rm.parse_joint_state(msgs["joint_states"])
    to = rm.parse_odometry(msgs["target_odom"])
    return (oracle.momentum(od.g, od.twist, js.position, js.velocity),
            target_momentum(to.g, to.twist))


@pytest.fixture(scope="module")
def oracle():
    return spacecraft_oracle(core().model.joint_names)


def test_target_is_published_in_the_odometry_frame_and_tumbles_freely(oracle):
    d = core()
    msgs = published(d)
    to = rm.parse_odometry(msgs["target_odom"])
    assert (to.frame_id, to.child_frame_id) == ("odom", "target")
    tf = {(t.parent, t.child): t.g for t in rm.parse_tf(msgs["tf"])}
    assert set(tf) == {("odom", "base_link"), ("odom", "target")}
    np.testing.assert_allclose(tf[("odom", "target")], to.g, atol=0)
    np.testing.assert_allclose(to.g[:3, 3], [2.46, 0.0, 0.6488], atol=1e-15)
    np.testing.assert_allclose(to.twist, [0, 0, 0, 0.01, 0.02, 0.005], atol=1e-15)
    marker = msgs["target_marker"]
    assert (marker.header.frame_id, marker.type) == ("target", 1)          # a CUBE
    assert (marker.scale.x, marker.scale.y, marker.scale.z) == (0.4, 0.4, 0.4)
    h0 = target_momentum(to.g, to.twist)
    assert d.run(100) == 100
    hc, ht = momenta(d, oracle)
    np.testing.assert_allclose(ht, h0, rtol=0, atol=1e-10 * np.linalg.norm(h0))
    np.testing.assert_allclose(hc, 0, atol=1e-12)               # no contact: at rest
    assert rm.parse_odometry(published(d)["target_odom"]).g[0, 0] < 1.0   # it turned
    w = rm.parse_wrench_stamped(published(d)["contact_wrench"])
    assert w.frame_id == "target" and not np.any(w.wrench)


def test_grasp_and_release_keep_the_total_momentum_and_the_weld_holds(oracle):
    d = core()
    assert d.run(25) == 25
    h0 = sum(momenta(d, oracle))
    ok, text = d.grasp()
    assert ok and text.startswith("grasped at t=0.050 s"), text
    assert d.grasp() == (False, "already grasped")
    hc, ht = momenta(d, oracle)
    scale = np.linalg.norm(h0)
    np.testing.assert_allclose(hc + ht, h0, rtol=0, atol=1e-10 * scale)
    assert np.linalg.norm(hc) > 0.1 * scale                 # the chaser took its share
    # grasped: the target is fixed in the grasp frame; the momentum stays
    def weld():
        msgs = published(d)
        js = rm.parse_joint_state(msgs["joint_states"])
        g = rm.parse_odometry(msgs["odom"]).g
        g_e = d.model.frame_pose(js.position, "ee_link", g)
        return np.linalg.inv(g_e) @ rm.parse_odometry(msgs["target_odom"]).g
    X0 = weld()
    assert d.run(50) == 50 and not d.diverged
    # the energy balance counts the weld's loss: the guard's residual stays at round-off
    E, K, U = d.energy()
    assert abs(d.residual) < 1e-9 * K and d.work < 0
    np.testing.assert_allclose(weld(), X0, atol=1e-12)
    np.testing.assert_allclose(sum(momenta(d, oracle)), h0, rtol=0, atol=1e-10 * scale)
    assert published(d)["target_marker"].color.g > 0.7           # drawn green when grasped
    ok, text = d.release()
    assert ok and text == "released at t=0.150 s"
    assert d.release() == (False, "not grasped: nothing to release")
    assert d.run(25) == 25
    np.testing.assert_allclose(sum(momenta(d, oracle)), h0, rtol=0, atol=1e-10 * scale)
    diag = {s["name"]: s for s in rm.parse_diagnostic_array(d.diagnostics_message())}
    cap = diag["vm_dynamics: capture"]
    assert cap["values"]["grasps"] == "1" and cap["values"]["releases"] == "1"
    assert not d.diverged and diag["vm_dynamics: simulation"]["level"] == 0


def test_grasp_is_refused_naming_the_misses_when_the_fixture_is_out_of_reach():
    d = core(capture={"target": {"initial": {"position": [3.0, 0.0, 0.6488]}}})
    ok, text = d.grasp()
    assert not ok
    assert re.fullmatch(r"grasp condition not met at t=0.000 s: the fixture is 0.54\d* m "
                        r"\(grasp.position_tol 0.02\) and [\d.e-]+ rad \(grasp.angle_tol 0.1\) "
                        r"from 'ee_link'", text), text
    assert any("grasp condition not met" in m for _, _, m in d.log.records)
    assert d.run(5) == 5                                         # keeps running


def test_contact_pushes_the_target_and_the_total_momentum_stays(oracle):
    """The chaser's tip sphere starts 2.1 mm inside the box's face: Hunt–Crossley pushes the
    pair apart, the contact wrench is published, the total momentum stays."""
    d = core(capture={"target": {"initial": {"position": [2.4371, 0.0, 0.6488],
                                             "twist": [0.0] * 6}}})
    h0 = sum(momenta(d, oracle))
    w0 = rm.parse_wrench_stamped(published(d)["contact_wrench"]).wrench
    assert w0[0] > 0                                       # pushed along +x (away)
    assert d.run(50) == 50 and not d.diverged
    hc, ht = momenta(d, oracle)
    scale = np.linalg.norm(ht)
    assert ht[0] > 0 and scale > 0
    np.testing.assert_allclose(hc + ht, h0, rtol=0, atol=1e-10 * scale)


def test_measured_wrench_acts_equal_and_opposite_on_chaser_and_target(oracle):
    d = core(wrench_source="measured")
    h0 = sum(momenta(d, oracle))
    w = np.array([2.0, -1.0, 3.0, 0.2, 0.1, -0.1])
    assert d.apply_measured_wrench(rm.wrench_stamped_msg(1.0, w, "ee_link"), 1.0)
    assert d.run(50) == 50 and not d.diverged
    hc, ht = momenta(d, oracle)
    assert np.linalg.norm(hc) > 0.1                        # it pushed the chaser
    np.testing.assert_allclose(hc + ht, h0, rtol=0, atol=1e-10 * np.linalg.norm(hc))
    # the contact wrench topic carries the opposite of the sensor's, on the target
    cw = rm.parse_wrench_stamped(published(d)["contact_wrench"]).wrench
    assert abs(np.linalg.norm(cw[:3]) - np.linalg.norm(w[:3])) < 1e-12


def test_capture_configuration_errors_name_the_culprit():
    with pytest.raises(ValueError, match="joint_source must be simulated"):
        core(joint_source="measured")
    with pytest.raises(ValueError, match="capture.target.initial: expected"):
        core(capture={"target": {"initial": {"velocity": [0.0] * 6}}})
    with pytest.raises(ValueError, match="grasp.frame: unknown chaser frame 'hand'"):
        core(capture={"grasp": {"frame": "hand"}})
    with pytest.raises(ValueError, match="integrator: capture takes rkmk4 or lie_euler"):
        core(integrator="dopri5")


def test_without_a_target_there_is_no_capture():
    d = core(without=("capture.",))
    assert d.capture is None
    assert set(published(d)) == {"joint_states", "odom", "tf"}
    assert d.grasp() == (False, "no target in this simulation (the scenario has no capture "
                                "section)")


def test_simulation_interfaces_list_the_target_read_only():
    """GetEntities lists the vehicle and the target; the target's EntityState is its
    published odometry (pose in the odometry frame, twist rotated into it); neither body can
    be set (a jump of one body of a contact has no physical meaning) and the features say so."""
    from vm_dynamics.nodes.simulation_interfaces import SimulationInterfaces
    from vm_dynamics.ros.simulation_interfaces_defs import constants
    from vm_dynamics.transport.types import build_message
    d = core()
    d.run(25)
    handlers = {}

    class Transport:
        def service(self, name, srvtype, handler):
            handlers[name] = (srvtype, handler)

    SimulationInterfaces(d, lambda: None).register(Transport())

    def call(name, **fields):
        srvtype, handler = handlers[name]
        return build_message(f"{srvtype}_Response",
                             handler(build_message(f"{srvtype}_Request", fields)))

    assert list(call("get_entities").entities) == [d.model.name, "target"]
    st = call("get_entity_state", entity="target")
    assert st.result.result == 1
    to = rm.parse_odometry(published(d)["target_odom"])
    s = st.state
    assert s.header.frame_id == to.frame_id == "odom"
    np.testing.assert_allclose([s.pose.position.x, s.pose.position.y, s.pose.position.z],
                               to.g[:3, 3], atol=0)
    R = to.g[:3, :3]
    np.testing.assert_allclose([s.twist.angular.x, s.twist.angular.y, s.twist.angular.z],
                               R @ to.twist[3:], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose([s.twist.linear.x, s.twist.linear.y, s.twist.linear.z],
                               R @ to.twist[:3], rtol=1e-12, atol=1e-15)
    unsupported = constants("simulation_interfaces/msg/Result")["RESULT_FEATURE_UNSUPPORTED"]
    for name in (d.model.name, "target"):
        r = call("set_entity_state", entity=name,
                 state={"pose": {"orientation": {"w": 1.0}}}).result
        assert r.result == unsupported and "capture" in r.error_message
    features = list(call("get_simulator_features").features.features)
    setting = constants("simulation_interfaces/msg/SimulatorFeatures")["ENTITY_STATE_SETTING"]
    assert setting not in features
