"""simulation_interfaces on the dynamics node, over the DDS transport (no ROS): the node runs as
a process on loopback, its own ``ROS_DOMAIN_ID``; a client on vm_dynamics' DDS transport calls
every service with the project's copies of the simulation_interfaces definitions.

Oracles: the spec's texts (result codes, states), simulated time ``steps · dt`` read from the
stamps, the initial state of the scenario file (reset), the state that was set (round trip),
and ``scripts/simulation_interfaces_check.py`` (every listed feature, the same script that is
run against the node on ROS 2).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from processes import dds_env, stop_processes

REPO = Path(__file__).resolve().parents[2]
pytest.importorskip("cyclonedds")


def _check_script():
    spec = importlib.util.spec_from_file_location(
        "simulation_interfaces_check", REPO / "scripts" / "simulation_interfaces_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """(client, process, log path): the dynamics node (planar rover, dt 1 ms) on DDS."""
    tmp = tmp_path_factory.mktemp("simif")
    domain = 120 + os.getpid() % 100
    env = dds_env(domain)
    saved = {k: os.environ.get(k) for k in ("CYCLONEDDS_URI", "ROS_DOMAIN_ID",
                                            "VM_DYNAMICS_TRANSPORT")}
    os.environ.update({k: env[k] for k in saved})
    log_path = tmp / "dyn.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "vm_dynamics.nodes.dynamics_node", "--ros-args",
         "--params-file", str(REPO / "config" / "planar_rover.yaml"),
         "-p", "dynamics_backend:=lp", "-p", "dt:=0.001", "-p", "real_time_factor:=1.0"],
        env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    client = _check_script().DdsClient("", 20.0)
    try:
        assert client.wait() or proc.poll() is not None, log_path.read_text()
        assert proc.poll() is None, log_path.read_text()
        yield client, proc, log_path
    finally:
        client.close()
        stop_processes([proc], [log])
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def result(client, name, **fields):
    return client.call(name, **fields).result


def stamp(client, entity):
    st = client.call("get_entity_state", entity=entity).state
    return st.header.stamp.sec * 1_000_000_000 + st.header.stamp.nanosec


def test_every_listed_feature_passes_the_check_script(node):
    client, proc, log = node
    lines = []
    assert _check_script().run_checks(client, lines.append), "\n".join(lines)
    features = lines[0]
    for name in ("SIMULATION_STATE_GETTING", "SIMULATION_STATE_SETTING", "SIMULATION_RESET",
                 "STEP_SIMULATION_SINGLE", "STEP_SIMULATION_MULTIPLE", "ENTITY_STATE_GETTING",
                 "ENTITY_STATE_SETTING", "STEP_SIMULATION_ACTION"):
        assert name in features, features
    assert all(line.startswith(("features", "OK ")) for line in lines), lines
    assert proc.poll() is None


def test_simulate_steps_action_over_dds(node):
    from vm_dynamics.transport.dds import DdsServiceClient
    from vm_dynamics.transport.types import build_message
    client, proc, log = node
    entity = "planar_rover"
    assert result(client, "set_simulation_state", state={"state": 2}).result in (1, 101)
    t0 = stamp(client, entity)
    status, res, feedback = client.simulate_steps(40)
    assert (status, res.result.result) == (4, 1)                # SUCCEEDED, RESULT_OK
    assert [(f.completed_steps, f.remaining_steps) for f in feedback] == \
        [(k, 40 - k) for k in range(1, 41)]
    assert stamp(client, entity) - t0 == 40 * 1_000_000
    # while playing: the goal ends ABORTED with RESULT_OPERATION_FAILED (SimulateSteps.action)
    assert result(client, "set_simulation_state", state={"state": 1}).result == 1
    status, res, feedback = client.simulate_steps(3)
    assert (status, res.result.result, feedback) == (6, 4, [])
    assert "must be paused" in res.result.error_message
    # get_result of a goal id never sent: status UNKNOWN (rcl_action)
    getres = DdsServiceClient(client.t, "/simulate_steps/_action/get_result",
                              "simulation_interfaces/action/SimulateSteps_GetResult")
    r = getres.call(build_message("simulation_interfaces/action/SimulateSteps_GetResult_Request",
                                  {"goal_id": {"uuid": [7] * 16}}), 20.0)
    assert r.status == 0
    # cancel: an unknown goal id is ERROR_UNKNOWN_GOAL_ID, a finished goal's
    # ERROR_GOAL_TERMINATED (action_msgs/srv/CancelGoal)
    cancel = DdsServiceClient(client.t, "/simulate_steps/_action/cancel_goal",
                              "action_msgs/srv/CancelGoal")
    req = "action_msgs/srv/CancelGoal_Request"
    r = cancel.call(build_message(req, {"goal_info": {"goal_id": {"uuid": [7] * 16}}}), 20.0)
    assert r.return_code == 2 and list(r.goals_canceling) == []
    status, res, feedback = client.simulate_steps(1)          # playing: aborted, terminal
    done_id = client.last_goal_id
    r = cancel.call(build_message(req, {"goal_info": {"goal_id": done_id}}), 20.0)
    assert r.return_code == 3
    assert proc.poll() is None


def test_states_steps_reset_and_aliases(node):
    from vm_dynamics.transport.dds import DdsServiceClient
    from vm_dynamics.transport.types import build_message
    client, proc, log = node
    entity = list(client.call("get_entities").entities)[0]
    assert entity == "planar_rover"
    assert result(client, "set_simulation_state", state={"state": 2}).result == 1
    assert client.call("get_simulation_state").state.state == 2
    t0 = stamp(client, entity)
    assert result(client, "step_simulation", steps=250).result == 1
    assert stamp(client, entity) - t0 == 250 * 1_000_000       # exactly 250 steps of 1 ms
    # the ~/pause alias: false plays, true pauses, read back through GetSimulationState
    pause = DdsServiceClient(client.t, "/dynamics_node/pause", "std_srvs/srv/SetBool")
    assert pause.wait_for_service(20.0)
    assert pause.call(build_message("std_srvs/srv/SetBool_Request", {"data": False}), 20).success
    assert client.call("get_simulation_state").state.state == 1
    assert pause.call(build_message("std_srvs/srv/SetBool_Request", {"data": True}), 20).success
    assert client.call("get_simulation_state").state.state == 2
    # ~/reset alias = ResetSimulation: time 0, the scenario's initial pose (planar_rover.yaml)
    reset = DdsServiceClient(client.t, "/dynamics_node/reset", "std_srvs/srv/Trigger")
    assert reset.wait_for_service(20.0)
    assert reset.call(build_message("std_srvs/srv/Trigger_Request"), 20).success
    st = client.call("get_entity_state", entity=entity).state
    assert stamp(client, entity) == 0 and st.header.frame_id == "odom"
    p = st.pose.position
    np.testing.assert_allclose([p.x, p.y, p.z], [0.0, 0.0, 0.5], atol=1e-12)
    # STOPPED: paused at the initial state; stepping is refused until paused
    assert result(client, "set_simulation_state", state={"state": 0}).result == 1
    assert client.call("get_simulation_state").state.state == 0
    r = result(client, "step_simulation", steps=1)
    assert r.result == 4 and "STATE_STOPPED" in r.error_message
    assert result(client, "set_simulation_state", state={"state": 2}).result == 1
    assert result(client, "step_simulation", steps=1).result == 1
    assert client.call("get_simulation_state").state.state == 2
    assert proc.poll() is None


def test_set_entity_state_round_trip_and_motion(node):
    client, proc, log = node
    entity = "planar_rover"
    assert result(client, "set_simulation_state", state={"state": 2}).result in (1, 101)
    s = np.sin(0.3)
    c = np.cos(0.3)
    want = {"header": {"frame_id": ""},
            "pose": {"position": {"x": 1.5, "y": -0.25, "z": 0.5},
                     "orientation": {"x": 0.0, "y": 0.0, "z": s, "w": c}},
            "twist": {"linear": {"x": 0.2, "y": 0.1, "z": 0.0},
                      "angular": {"x": 0.0, "y": 0.0, "z": 0.05}}}
    t0 = stamp(client, entity)
    assert result(client, "set_entity_state", entity=entity, state=want).result == 1
    got = client.call("get_entity_state", entity=entity).state
    assert stamp(client, entity) == t0                  # setting keeps the time
    for part, keys in (("position", "xyz"), ("orientation", "xyzw")):
        for k in keys:
            assert getattr(getattr(got.pose, part), k) == pytest.approx(
                want["pose"][part][k], abs=1e-12), (part, k)
    for part in ("linear", "angular"):
        for k in "xyz":
            assert getattr(getattr(got.twist, part), k) == pytest.approx(
                want["twist"][part][k], abs=1e-12), (part, k)
    # it moves on from there: one step later the position advanced by about v dt
    assert result(client, "step_simulation", steps=1).result == 1
    moved = client.call("get_entity_state", entity=entity).state.pose.position
    assert moved.x - 1.5 == pytest.approx(0.2e-3, rel=0.05)
    # a planar base cannot leave its plane or roll: INVALID_POSE / OPERATION_FAILED
    off = {**want, "pose": {**want["pose"], "position": {"x": 1.5, "y": -0.25, "z": 0.9}}}
    r = result(client, "set_entity_state", entity=entity, state=off)
    assert r.result == 101 and "SE2" in r.error_message
    climb = {**want, "twist": {"linear": {"x": 0.0, "y": 0.0, "z": 1.0},
                               "angular": {"x": 0.0, "y": 0.0, "z": 0.0}}}
    r = result(client, "set_entity_state", entity=entity, state=climb)
    assert r.result == 4 and "twist" in r.error_message
    assert proc.poll() is None


@pytest.mark.parametrize("name, fields, code, text", [
    ("set_simulation_state", {"state": {"state": 9}}, 2, "unknown simulation state 9"),
    ("set_simulation_state", {"state": {"state": 3}}, 0, "STATE_QUITTING"),
    ("step_simulation", {"steps": 0}, 4, "at least 1"),
    ("step_simulation", {"steps": 2**63}, 4, "per call"),
    ("reset_simulation", {"scope": 1}, 0, "reset scope 1"),
    ("get_entity_state", {"entity": "ghost"}, 2, "no entity 'ghost'"),
    ("set_entity_state", {"entity": "ghost"}, 2, "no entity 'ghost'"),
    ("set_entity_state", {"entity": "planar_rover"}, 101, "quaternion"),
    ("set_entity_state", {"entity": "planar_rover",
                          "state": {"header": {"frame_id": "map"},
                                    "pose": {"orientation": {"w": 1.0}}}}, 2, "'map'"),
    ("get_entities", {"filters": {"filter": "("}}, 4, "not a regular expression"),
    ("get_entities", {"filters": {"tags": {"tags": ["robot"]}}}, 0, "tags"),
    ("get_entities", {"filters": {"categories": [{"category": 1}]}}, 0, "categories"),
    ("get_entities", {"filters": {"bounds": {"type": 3}}}, 0, "bounds"),
])
def test_bad_requests_get_the_specs_error_and_the_node_keeps_running(node, name, fields,
                                                                      code, text):
    client, proc, log = node
    assert result(client, "set_simulation_state", state={"state": 2}).result in (1, 101)
    r = result(client, name, **fields)
    assert (r.result, text in r.error_message) == (code, True), r
    assert proc.poll() is None
    assert client.call("get_simulation_state").state.state == 2

