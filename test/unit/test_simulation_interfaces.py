"""simulation_interfaces handlers over a DynamicsCore in-process (no transport): requests and
responses are the rosbags types of the project's copied definitions, as on the DDS transport.

Oracles: the constants as rosbags parses the copied .msg files (an independent parser),
simulated time ``steps · dt``, the scenario's initial state, a fresh engine reset at the state
that was set (Simulator.set_vehicle), and the /odom message's body twist of the same state
rotated into the odom frame (EntityState's twist convention)."""
from __future__ import annotations

import numpy as np
import pytest
from node_cores import scenario

from vm_dynamics.nodes.dynamics_core import DynamicsCore
from vm_dynamics.nodes.simulation_interfaces import (
    FEATURES,
    RESULT,
    SERVICES,
    STATE,
    SimulationInterfaces,
)
from vm_dynamics.ros import simulation_interfaces_defs as defs

pytest.importorskip("rosbags")
from vm_dynamics.transport.types import build_message, service_typestore  # noqa: E402

OK, NOT_FOUND, FAILED, UNSUPPORTED = 1, 2, 4, 0


def core_of(name, **overrides):
    return DynamicsCore.from_params(scenario(name, **overrides))


class Transport:
    """Records what :meth:`SimulationInterfaces.register` serves."""

    def __init__(self, actions=True):
        self.handlers = {}
        if actions:
            self.action_server = lambda name, t, execute: self.handlers.__setitem__(name,
                                                                                    execute)

    def service(self, name, srvtype, handler):
        self.handlers[name] = handler


class Api:
    """Calls by service name with rosbags requests; responses checked against the types."""

    def __init__(self, core):
        self.core = core
        self.changes = 0
        self.si = SimulationInterfaces(core, self._changed)
        self.t = Transport()
        self.si.register(self.t)

    def _changed(self):
        self.changes += 1

    def __call__(self, name, **fields):
        srvtype = SERVICES[name][0]
        out = self.t.handlers[name](build_message(f"{srvtype}_Request", fields))
        return build_message(f"{srvtype}_Response", out)


@pytest.fixture(scope="module")
def rover():
    return core_of("planar_rover")


@pytest.fixture()
def api(rover):
    rover.reset()
    rover.pause(False)
    return Api(rover)


def test_constants_are_those_rosbags_parses_from_the_copies():
    store = service_typestore()
    for mapping, msg in ((FEATURES, "SimulatorFeatures"), (RESULT, "Result"),
                         (STATE, "SimulationState")):
        consts = {n: v for n, _, v in store.fielddefs[f"simulation_interfaces/msg/{msg}"][0]}
        assert mapping == consts
    assert defs.VERSION == "1.5.1" and len(defs.COMMIT) == 40
    assert "Apache License" in (defs.FOLDER / "LICENSE").read_text()


def test_features_list_what_is_served(api):
    f = api("get_simulator_features").features.features
    names = sorted(k for k, v in FEATURES.items() if v in list(f))
    assert names == sorted(["SIMULATION_STATE_GETTING", "SIMULATION_STATE_SETTING",
                            "SIMULATION_STATE_PAUSE", "SIMULATION_RESET",
                            "STEP_SIMULATION_SINGLE", "STEP_SIMULATION_MULTIPLE",
                            "STEP_SIMULATION_ACTION", "ENTITY_STATE_GETTING",
                            "ENTITY_STATE_SETTING"])
    assert set(api.t.handlers) == set(SERVICES) | {"simulate_steps"}


def test_pause_step_exactly_and_reset_to_the_initial_state(api):
    core = api.core
    assert api("get_simulation_state").state.state == STATE["STATE_PLAYING"]
    assert core.run(7) == 7
    assert api("set_simulation_state", state={"state": STATE["STATE_PAUSED"]}).result.result == OK
    assert core.run(5) == 0                                     # paused: time stands
    r = api("step_simulation", steps=1)
    assert r.result.result == OK and core.steps == 8
    assert api("step_simulation", steps=12).result.result == OK
    assert core.steps == 20 and core.t == pytest.approx(20 * core.dt, abs=1e-15)
    assert core.user_paused and api("get_simulation_state").state.state == STATE["STATE_PAUSED"]
    assert api("reset_simulation", scope=0).result.result == OK
    assert core.steps == 0 and core.t == 0.0
    np.testing.assert_array_equal(core.g, core.g0)
    np.testing.assert_array_equal(core.q, core.q0)
    np.testing.assert_array_equal(core.qd, core.qd0)
    assert api("get_simulation_state").state.state == STATE["STATE_PAUSED"]   # kept
    assert api.changes == 4


def test_state_machine_stopped_already_and_divergence(api):
    core = api.core
    set_state = lambda s: api("set_simulation_state", state={"state": STATE[s]}).result  # noqa: E731
    assert set_state("STATE_PLAYING").result == 101             # ALREADY_IN_TARGET_STATE
    core.run(4)
    assert set_state("STATE_STOPPED").result == OK
    assert core.steps == 0 and core.user_paused
    assert api("get_simulation_state").state.state == STATE["STATE_STOPPED"]
    r = api("step_simulation", steps=1).result
    assert r.result == FAILED and "STATE_STOPPED" in r.error_message
    assert set_state("STATE_PAUSED").result == OK               # stopped -> paused
    assert api("get_simulation_state").state.state == STATE["STATE_PAUSED"]
    core.energy_guard.diverge("test divergence")
    r = set_state("STATE_PLAYING")
    assert r.result == 102 and "test divergence" in r.error_message   # STATE_TRANSITION_ERROR
    r = api("step_simulation", steps=1).result
    assert r.result == FAILED and "test divergence" in r.error_message
    assert set_state("STATE_STOPPED").result == OK              # stop = pause + reset
    assert not core.diverged and set_state("STATE_PLAYING").result == OK
    for bad, code in ((3, UNSUPPORTED), (4, UNSUPPORTED), (5, UNSUPPORTED), (6, NOT_FOUND),
                      (255, NOT_FOUND)):
        assert set_state_value(api, bad) == code
    assert api("get_simulation_state").state.state == STATE["STATE_PLAYING"]


def set_state_value(api, value):
    return api("set_simulation_state", state={"state": value}).result.result


def test_reset_scopes(api):
    for scope, code in ((0, OK), (255, OK), (3, OK), (7, OK), (1, UNSUPPORTED),
                        (2, UNSUPPORTED), (4, UNSUPPORTED), (11, UNSUPPORTED)):
        api.core.run(2)
        assert api("reset_simulation", scope=scope).result.result == code, scope
        assert (api.core.steps == 0) == (code == OK)


def test_simulate_steps_feedback_and_cancel(api):
    run = api.t.handlers["simulate_steps"]
    goal = build_message("simulation_interfaces/action/SimulateSteps_Goal", {"steps": 6})
    fb = []
    outcome, res = run(goal, fb.append, lambda: False)
    assert outcome == "aborted" and res["result"]["result"] == FAILED and not fb   # playing
    api("set_simulation_state", state={"state": STATE["STATE_PAUSED"]})
    outcome, res = run(goal, fb.append, lambda: False)
    assert (outcome, res["result"]["result"]) == ("succeeded", OK)
    assert fb == [{"completed_steps": k, "remaining_steps": 6 - k} for k in range(1, 7)]
    assert api.core.steps == 6
    fb.clear()
    outcome, res = run(goal, fb.append, lambda: len(fb) >= 2)
    assert outcome == "canceled" and len(fb) == 2 and api.core.steps == 8


def test_entity_state_is_the_odometry_state_in_the_odom_frame(api):
    core = api.core
    core.run(300)
    name = core.model.name
    assert list(api("get_entities").entities) == [name] == ["planar_rover"]
    st = api("get_entity_state", entity=name)
    assert st.result.result == OK
    s = st.state
    odom = dict(core.state_messages())["odom"]
    assert s.header.frame_id == odom.header.frame_id == "odom"
    assert s.header.stamp.sec * 10**9 + s.header.stamp.nanosec == round(core.t * 1e9)
    for k in "xyz":
        assert getattr(s.pose.position, k) == getattr(odom.pose.pose.position, k)
    for k in "xyzw":
        assert getattr(s.pose.orientation, k) == pytest.approx(
            getattr(odom.pose.pose.orientation, k), abs=1e-15)
    q = odom.pose.pose.orientation
    from vm_dynamics.core.rotations import matrix_from_quat
    R = matrix_from_quat(np.array([q.x, q.y, q.z, q.w]))
    tw = odom.twist.twist
    v_b = np.array([tw.linear.x, tw.linear.y, tw.linear.z])
    w_b = np.array([tw.angular.x, tw.angular.y, tw.angular.z])
    assert np.linalg.norm(v_b) > 1e-6                    # it moves: the check means something
    np.testing.assert_allclose([s.twist.linear.x, s.twist.linear.y, s.twist.linear.z], R @ v_b,
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose([s.twist.angular.x, s.twist.angular.y, s.twist.angular.z],
                               R @ w_b, rtol=1e-12, atol=1e-15)
    assert np.isnan(s.acceleration.linear.x)             # not computed
    both = api("get_entities_states")
    assert list(both.entities) == [name] and both.states[0].pose == s.pose
    assert api("get_entities", filters={"filter": "^planar"}).entities == [name]
    assert api("get_entities", filters={"filter": "arm$"}).entities == []
    r = api("get_entity_state", entity="nope").result
    assert r.result == NOT_FOUND and "planar_rover" in r.error_message


def test_set_vehicle_continues_like_a_fresh_reset_at_that_state():
    """Simulator.set_vehicle mid-run, then steps == a fresh engine reset at the same state and
    time, then the same steps (spacecraft arm, free SE3 base)."""
    a = core_of("spacecraft_arm")
    b = core_of("spacecraft_arm")
    a.run(20)
    g1 = a.g0 @ np.array([[0.0, -1.0, 0.0, 0.3], [1.0, 0.0, 0.0, -0.2], [0.0, 0.0, 1.0, 0.1],
                          [0.0, 0.0, 0.0, 1.0]])
    V1 = np.array([0.05, -0.02, 0.01, 0.02, -0.03, 0.04])
    q, qd, t = a.q, a.qd, a.t
    a.set_vehicle_state(g1, V1)
    assert a.steps == 20 and a.t == t
    np.testing.assert_array_equal(a.g, g1)
    np.testing.assert_array_equal(a.V, V1)
    np.testing.assert_array_equal(a.q, q)
    b.sim.reset(g1, V1, q, qd, t=t)
    b.energy_guard.reset()
    assert a.run(40) == 40 and b.run(40) == 40
    assert a.t == pytest.approx(b.t, abs=1e-15)
    for x, y in ((a.g, b.g), (a.V, b.V), (a.q, b.q), (a.qd, b.qd)):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)
    assert not a.diverged


def test_set_entity_state_round_trip_and_refusals(api):
    core = api.core
    name = core.model.name
    api("set_simulation_state", state={"state": STATE["STATE_PAUSED"]})
    c, s = np.cos(0.2), np.sin(0.2)
    state = {"header": {"frame_id": "odom"},
             "pose": {"position": {"x": 0.4, "y": 0.3, "z": 0.5},
                      "orientation": {"x": 0.0, "y": 0.0, "z": s, "w": c}},
             "twist": {"linear": {"x": 0.1, "y": -0.1, "z": 0.0},
                       "angular": {"x": 0.0, "y": 0.0, "z": 0.2}}}
    assert api("set_entity_state", entity=name, state=state).result.result == OK
    got = api("get_entity_state", entity=name).state
    assert (got.pose.position.x, got.pose.position.y, got.pose.position.z) == \
        pytest.approx((0.4, 0.3, 0.5), abs=1e-15)
    assert (got.pose.orientation.z, got.pose.orientation.w) == pytest.approx((s, c), abs=1e-15)
    assert (got.twist.linear.x, got.twist.linear.y, got.twist.angular.z) == \
        pytest.approx((0.1, -0.1, 0.2), abs=1e-14)
    bad_q = {**state, "pose": {**state["pose"], "orientation": {"x": 0.0, "y": 0.0, "z": 1.0,
                                                                 "w": 1.0}}}
    r = api("set_entity_state", entity=name, state=bad_q).result
    assert r.result == 101 and "quaternion" in r.error_message
    tilt = {**state, "pose": {**state["pose"], "orientation": {"x": s, "y": 0.0, "z": 0.0,
                                                                "w": c}}}
    r = api("set_entity_state", entity=name, state=tilt).result
    assert r.result == 101 and "SE2" in r.error_message
    nan = {**state, "twist": {"linear": {"x": float("nan")}}}
    r = api("set_entity_state", entity=name, state=nan).result
    assert r.result == FAILED and "not finite" in r.error_message
    r = api("set_entity_state", entity=name, state={**state, "header": {"frame_id": "map"}})
    assert r.result.result == NOT_FOUND
    got2 = api("get_entity_state", entity=name).state
    assert got2.pose == got.pose                         # refusals changed nothing


def test_a_malformed_request_is_answered_not_raised(api):
    class Odd:
        steps = "many"
    r = api.t.handlers["step_simulation"](Odd())
    assert r["result"]["result"] == FAILED and "bad request" in r["result"]["error_message"]
    r = api.t.handlers["get_entity_state"](object())
    assert r["result"]["result"] == FAILED


def test_orbit_vehicle_state_is_read_in_the_output_frame_and_not_set():
    core = core_of("orbit_spacecraft_arm")
    a = Api(core)
    f = list(a("get_simulator_features").features.features)
    assert FEATURES["ENTITY_STATE_SETTING"] not in f and FEATURES["ENTITY_STATE_GETTING"] in f
    name = core.model.name
    st = a("get_entity_state", entity=name).state
    odom = dict(core.state_messages())["odom"]
    assert st.header.frame_id == odom.header.frame_id
    assert st.pose.position.x == odom.pose.pose.position.x
    r = a("set_entity_state", entity=name, state={"pose": {"orientation": {"w": 1.0}}}).result
    assert r.result == UNSUPPORTED
