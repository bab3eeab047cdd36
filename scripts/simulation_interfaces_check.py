#!/usr/bin/env python3
"""Call every feature a simulator's GetSimulatorFeatures lists and check that it behaves as
ros-simulation/simulation_interfaces specifies; exit 0 if every check passed.

    simulation_interfaces_check.py [--transport rclpy|dds] [--namespace /ns] [--timeout 10]

``rclpy`` (default) needs a ROS 2 installation with simulation_interfaces sourced; ``dds``
speaks the same wire protocol through vm_dynamics' own DDS transport (no ROS).  The
simulator must be running (e.g. vm_dynamics' dynamics node).  The script leaves it PLAYING.

Checks, per listed feature (a listed feature without a check here is a failure):

* SIMULATION_STATE_GETTING: the state is one of SimulationState's values;
* SIMULATION_STATE_SETTING / SIMULATION_STATE_PAUSE: PAUSED then GetSimulationState says so and
  simulated time stands still; PAUSED again answers ALREADY_IN_TARGET_STATE; PLAYING makes
  time advance; STOPPED reads back STOPPED at t = 0; an unknown state value is refused;
* STEP_SIMULATION_SINGLE / _MULTIPLE: while paused, 1 step advances time by one step, N
  steps by exactly N of them (the stamps, +-1 ns rounding); stepping while playing is
  RESULT_OPERATION_FAILED (StepSimulation.srv);
* STEP_SIMULATION_ACTION: a SimulateSteps goal of N steps sends N feedbacks, succeeds with
  RESULT_OK and advances time by N steps;
* SIMULATION_RESET: after steps, ResetSimulation brings time to 0 and the state to the one
  read when stopped;
* ENTITY_STATE_GETTING: GetEntities lists entities, GetEntityState of each is OK, of an
  unknown name RESULT_NOT_FOUND, GetEntitiesStates agrees with GetEntityState;
* ENTITY_STATE_SETTING: a state read earlier, set again after the entity moved on, reads
  back equal (pose and twist, 1e-9); a zero quaternion is INVALID_POSE; an unknown entity
  RESULT_NOT_FOUND.

The time checks read ``header.stamp`` of GetEntityState (they need ENTITY_STATE_GETTING).
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Callable

PKG = "simulation_interfaces"
SRV = {
    "get_simulator_features": "GetSimulatorFeatures",
    "get_simulation_state": "GetSimulationState",
    "set_simulation_state": "SetSimulationState",
    "reset_simulation": "ResetSimulation",
    "step_simulation": "StepSimulation",
    "get_entities": "GetEntities",
    "get_entities_states": "GetEntitiesStates",
    "get_entity_state": "GetEntityState",
    "set_entity_state": "SetEntityState",
}
# SimulatorFeatures.msg, SimulationState.msg, Result.msg (simulation_interfaces 1.5)
F = dict(ENTITY_STATE_GETTING=10, ENTITY_STATE_SETTING=11, SIMULATION_RESET=20,
         SIMULATION_STATE_GETTING=24, SIMULATION_STATE_SETTING=25, SIMULATION_STATE_PAUSE=26,
         STEP_SIMULATION_SINGLE=31, STEP_SIMULATION_MULTIPLE=32, STEP_SIMULATION_ACTION=33)
STOPPED, PLAYING, PAUSED = 0, 1, 2
OK, NOT_FOUND, OPERATION_FAILED = 1, 2, 4
ALREADY_IN_TARGET_STATE, INVALID_POSE = 101, 101


# ----------------------------------------------------------------------- clients
class DdsClient:
    """Service calls through vm_dynamics' DDS transport (rosbags messages)."""

    def __init__(self, namespace: str, timeout: float) -> None:
        from vm_dynamics.transport.dds import DdsServiceClient, DdsTransport
        from vm_dynamics.transport.types import build_message
        self._build = build_message
        self.t = DdsTransport("simulation_interfaces_check", {}, ["check"])
        self.timeout = timeout
        self.ns = namespace.rstrip("/")
        self._clients = {name: DdsServiceClient(self.t, f"{self.ns}/{name}",
                                                f"{PKG}/srv/{srv}")
                         for name, srv in SRV.items()}
        self._action: Any = None
        self.actions = True

    def wait(self) -> bool:
        return all(c.wait_for_service(self.timeout) for c in self._clients.values())

    def call(self, name: str, **fields: Any) -> Any:
        c = self._clients[name]
        return c.call(self._build(f"{c.srvtype}_Request", fields), self.timeout)

    def simulate_steps(self, steps: int) -> tuple[int, Any, list]:
        """(status, result, feedback messages) of a SimulateSteps goal, through the action's
        services and feedback topic (rcl_action's layout)."""
        import os

        from vm_dynamics.transport import QosSpec
        from vm_dynamics.transport.dds import DdsServiceClient
        from vm_dynamics.transport.types import service_typestore
        base = f"{self.ns}/simulate_steps/_action/"
        atype = f"{PKG}/action/SimulateSteps"
        if self._action is None:
            self._action = (DdsServiceClient(self.t, base + "send_goal", f"{atype}_SendGoal"),
                            DdsServiceClient(self.t, base + "get_result", f"{atype}_GetResult"),
                            [])
            fb_type = f"{atype}_FeedbackMessage"
            store = service_typestore()
            got = self._action[2]
            self.t.subscribe(base + "feedback", fb_type,
                             lambda data: got.append(store.deserialize_cdr(data, fb_type)),
                             QosSpec(reliable=True, transient_local=False, depth=10_000),
                             raw=True)
        send, result, got = self._action
        for c in (send, result):
            if not c.wait_for_service(self.timeout):
                raise TimeoutError("no simulate_steps action server")
        uuid = {"uuid": list(os.urandom(16))}
        self.last_goal_id = uuid
        accepted = send.call(self._build(f"{atype}_SendGoal_Request",
                                         {"goal_id": uuid, "goal": {"steps": steps}}),
                             self.timeout)
        if not accepted.accepted:
            raise RuntimeError("SimulateSteps goal rejected")
        res = result.call(self._build(f"{atype}_GetResult_Request", {"goal_id": uuid}),
                          self.timeout)
        mine = lambda: [m.feedback for m in got if list(m.goal_id.uuid) == uuid["uuid"]]  # noqa: E731
        self.t.spin_until(lambda: len(mine()) >= steps, 5.0)
        return res.status, res.result, mine()

    def close(self) -> None:
        self.t.shutdown()


class RclpyClient:
    """Service calls and the SimulateSteps action through rclpy (rosidl messages)."""

    def __init__(self, namespace: str, timeout: float) -> None:
        import importlib

        import rclpy
        from rclpy.action import ActionClient
        from rclpy.node import Node
        self.rclpy = rclpy
        rclpy.init()
        self.node = Node("simulation_interfaces_check")
        self.timeout = timeout
        self.ns = namespace.rstrip("/")
        srv = importlib.import_module(f"{PKG}.srv")
        self._types = {name: getattr(srv, s) for name, s in SRV.items()}
        self._clients = {name: self.node.create_client(t, f"{self.ns}/{name}")
                         for name, t in self._types.items()}
        self.action_type = importlib.import_module(f"{PKG}.action").SimulateSteps
        self._action = ActionClient(self.node, self.action_type, f"{self.ns}/simulate_steps")
        # every feedback message, read from the action's feedback topic: ActionClient drops
        # the feedback it takes after the goal's result (it takes one sample per endpoint and
        # turn, so a fast goal's result overtakes its feedback)
        from rclpy.qos import QoSProfile
        self._feedback: list = []
        self.node.create_subscription(self.action_type.Impl.FeedbackMessage,
                                      f"{self.ns}/simulate_steps/_action/feedback",
                                      self._feedback.append, QoSProfile(depth=10_000))
        self.actions = True

    def wait(self) -> bool:
        return all(c.wait_for_service(timeout_sec=self.timeout)
                   for c in self._clients.values())

    def _until(self, future: Any) -> Any:
        self.rclpy.spin_until_future_complete(self.node, future, timeout_sec=self.timeout)
        if not future.done():
            raise TimeoutError("no answer within the timeout")
        return future.result()

    def call(self, name: str, **fields: Any) -> Any:
        req = self._types[name].Request()
        _fill(req, fields)
        return self._until(self._clients[name].call_async(req))

    def simulate_steps(self, steps: int) -> tuple[int, Any, list]:
        """(status, result, feedback messages) of a SimulateSteps goal."""
        if not self._action.wait_for_server(timeout_sec=self.timeout):
            raise TimeoutError("no simulate_steps action server")
        goal = self.action_type.Goal(steps=steps)
        handle = self._until(self._action.send_goal_async(goal))
        if not handle.accepted:
            raise RuntimeError("SimulateSteps goal rejected")
        res = self._until(handle.get_result_async())
        uuid = bytes(handle.goal_id.uuid)

        def mine() -> list:
            return [m.feedback for m in self._feedback if bytes(m.goal_id.uuid) == uuid]
        deadline = time.monotonic() + 5.0
        while len(mine()) < steps and time.monotonic() < deadline:
            self.rclpy.spin_once(self.node, timeout_sec=0.05)
        return res.status, res.result, mine()

    def close(self) -> None:
        self.node.destroy_node()
        self.rclpy.shutdown()


def _fill(msg: Any, fields: dict) -> None:
    for k, v in fields.items():
        if isinstance(v, dict):
            _fill(getattr(msg, k), v)
        else:
            setattr(msg, k, v)


# ----------------------------------------------------------------------- checks
class Failed(AssertionError):
    pass


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise Failed(what)


def stamp_ns(state: Any) -> int:
    return int(state.header.stamp.sec) * 1_000_000_000 + int(state.header.stamp.nanosec)


def pose_twist(state: Any) -> list[float]:
    p, o = state.pose.position, state.pose.orientation
    lin, ang = state.twist.linear, state.twist.angular
    return [p.x, p.y, p.z, o.x, o.y, o.z, o.w, lin.x, lin.y, lin.z, ang.x, ang.y, ang.z]


def close(a: list[float], b: list[float], tol: float = 1e-9) -> bool:
    return all(abs(x - y) <= tol * (1.0 + abs(y)) for x, y in zip(a, b))


class Checker:
    def __init__(self, client: Any) -> None:
        self.c = client
        self.entity = ""

    # helpers
    def result(self, name: str, **fields: Any) -> Any:
        return self.c.call(name, **fields).result

    def ok(self, name: str, **fields: Any) -> Any:
        r = self.c.call(name, **fields)
        expect(r.result.result == OK, f"{name} {fields}: result {r.result.result} "
               f"({r.result.error_message!r}), expected RESULT_OK")
        return r

    def state(self) -> int:
        return int(self.ok("get_simulation_state").state.state)

    def set_state(self, value: int, allow_already: bool = True) -> None:
        r = self.result("set_simulation_state", state={"state": value})
        expect(r.result == OK or (allow_already and r.result == ALREADY_IN_TARGET_STATE),
               f"set_simulation_state {value}: result {r.result} ({r.error_message!r})")

    def entity_state(self) -> Any:
        return self.ok("get_entity_state", entity=self.entity).state

    def now(self) -> int:
        return stamp_ns(self.entity_state())

    def wait_advance(self, t0: int, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            t = self.now()
            if t > t0:
                return t
            time.sleep(0.05)
        raise Failed(f"simulated time did not advance past {t0} ns within {timeout} s")

    # per feature
    def check_get_state(self) -> str:
        s = self.state()
        expect(s in (0, 1, 2, 3, 4, 5), f"unknown state {s}")
        return f"state {s}"

    def check_set_state(self, timed: bool) -> str:
        self.set_state(PAUSED)
        expect(self.state() == PAUSED, "not PAUSED after SetSimulationState(PAUSED)")
        r = self.result("set_simulation_state", state={"state": PAUSED})
        expect(r.result == ALREADY_IN_TARGET_STATE,
               f"PAUSED twice: result {r.result}, expected ALREADY_IN_TARGET_STATE")
        text = "PAUSED, ALREADY_IN_TARGET_STATE"
        if timed:
            t0 = self.now()
            time.sleep(0.5)
            expect(self.now() == t0, "simulated time moved while paused")
            self.set_state(PLAYING, allow_already=False)
            expect(self.state() == PLAYING, "not PLAYING after SetSimulationState(PLAYING)")
            self.wait_advance(t0, 30.0)
            text += ", time stands while paused and runs while playing"
        else:
            self.set_state(PLAYING, allow_already=False)
        self.set_state(STOPPED, allow_already=False)
        expect(self.state() == STOPPED, "not STOPPED after SetSimulationState(STOPPED)")
        if timed:
            expect(self.now() == 0, f"stopped at t={self.now()} ns, expected 0")
            text += ", STOPPED at t=0"
        r = self.result("set_simulation_state", state={"state": 77})
        expect(r.result != OK, "an unknown state value 77 was accepted")
        self.set_state(PAUSED, allow_already=False)
        return text + f", unknown value refused ({r.result})"

    def check_steps(self, n: int) -> str:
        self.set_state(PAUSED)
        t0 = self.now()
        self.ok("step_simulation", steps=1)
        t1 = self.now()
        dt = t1 - t0
        expect(dt > 0, "a step did not advance time")
        if n == 1:
            self.ok("step_simulation", steps=1)
            expect(abs(self.now() - t1 - dt) <= 1, "two single steps differ in length")
            return f"1 step = {dt} ns, twice"
        self.ok("step_simulation", steps=n)
        t2 = self.now()
        expect(abs(t2 - t1 - n * dt) <= 1, f"{n} steps advanced {t2 - t1} ns, expected {n * dt}")
        self.set_state(PLAYING)
        r = self.result("step_simulation", steps=2)
        expect(r.result == OPERATION_FAILED,
               f"stepping while playing: result {r.result}, expected RESULT_OPERATION_FAILED")
        self.set_state(PAUSED)
        return f"{n} steps = {t2 - t1} ns = {n} x {dt} ns; refused while playing"

    def check_action(self, n: int) -> str:
        self.set_state(PAUSED)
        t0 = self.now()
        self.ok("step_simulation", steps=1)
        dt = self.now() - t0
        t1 = self.now()
        status, result, feedback = self.c.simulate_steps(n)
        expect(status == 4, f"SimulateSteps status {status}, expected SUCCEEDED (4)")
        expect(result.result.result == OK, f"SimulateSteps result {result.result.result}")
        expect([f.completed_steps for f in feedback] == list(range(1, n + 1)),
               f"feedback {[f.completed_steps for f in feedback]}")
        expect(abs(self.now() - t1 - n * dt) <= 1, "SimulateSteps advanced time wrongly")
        return f"goal {n}: {len(feedback)} feedbacks, SUCCEEDED, time +{n} steps"

    def check_reset(self, timed: bool) -> str:
        self.set_state(STOPPED)
        initial = pose_twist(self.entity_state()) if timed else None
        self.set_state(PAUSED)
        self.ok("step_simulation", steps=3)
        self.ok("reset_simulation", scope=0)
        if timed:
            expect(self.now() == 0, "time not 0 after reset")
            expect(close(pose_twist(self.entity_state()), initial),
                   "state after reset differs from the initial state")
            return "time 0 and the initial state again"
        return "RESULT_OK"

    def check_entities(self) -> str:
        names = list(self.ok("get_entities").entities)
        expect(len(names) > 0, "GetEntities lists no entity")
        for name in names:
            self.ok("get_entity_state", entity=name)
        r = self.result("get_entity_state", entity="no such entity \u2603")
        expect(r.result == NOT_FOUND, f"unknown entity: result {r.result}, expected NOT_FOUND")
        self.set_state(PAUSED)
        both = self.ok("get_entities_states")
        expect(list(both.entities) == names, "GetEntitiesStates lists other entities")
        for name, st in zip(both.entities, both.states):
            one = self.ok("get_entity_state", entity=name).state
            expect(close(pose_twist(st), pose_twist(one), 0.0), f"{name}: states differ")
        return f"entities {names}; unknown name NOT_FOUND"

    def check_set_entity(self) -> str:
        self.set_state(PLAYING)
        self.wait_advance(self.now(), 30.0)
        self.set_state(PAUSED)
        a = self.entity_state()
        self.ok("step_simulation", steps=50)
        expect(not close(pose_twist(self.entity_state()), pose_twist(a), 1e-12)
               or max(abs(x) for x in pose_twist(a)[7:]) == 0.0, "the entity did not move")
        fields = {"entity": self.entity, "state": _state_fields(a)}
        self.ok("set_entity_state", **fields)
        b = self.entity_state()
        expect(close(pose_twist(b), pose_twist(a)), f"read back {pose_twist(b)} after setting "
               f"{pose_twist(a)}")
        bad = _state_fields(a)
        bad["pose"]["orientation"] = {"x": 0.0, "y": 0.0, "z": 0.0, "w": 0.0}
        r = self.result("set_entity_state", entity=self.entity, state=bad)
        expect(r.result == INVALID_POSE, f"zero quaternion: result {r.result}, "
               "expected INVALID_POSE")
        r = self.result("set_entity_state", entity="no such entity", state=_state_fields(a))
        expect(r.result == NOT_FOUND, f"unknown entity: result {r.result}, expected NOT_FOUND")
        return "round trip of a recorded state; zero quaternion INVALID_POSE; unknown NOT_FOUND"


def _state_fields(s: Any) -> dict:
    p, o = s.pose.position, s.pose.orientation
    lin, ang = s.twist.linear, s.twist.angular
    return {"header": {"frame_id": s.header.frame_id},
            "pose": {"position": {"x": p.x, "y": p.y, "z": p.z},
                     "orientation": {"x": o.x, "y": o.y, "z": o.z, "w": o.w}},
            "twist": {"linear": {"x": lin.x, "y": lin.y, "z": lin.z},
                      "angular": {"x": ang.x, "y": ang.y, "z": ang.z}}}


def run_checks(client: Any, report: Callable[[str], None] = print) -> bool:
    """Every listed feature's check; report one line each; True if all passed."""
    features = [int(f) for f in client.call("get_simulator_features").features.features]
    names = {v: k for k, v in F.items()}
    report(f"features: {[names.get(f, f) for f in features]}")
    ck = Checker(client)
    timed = F["ENTITY_STATE_GETTING"] in features
    if timed:
        ck.entity = list(ck.ok("get_entities").entities)[0]
    checks: dict[int, Callable[[], str]] = {
        F["SIMULATION_STATE_GETTING"]: ck.check_get_state,
        F["SIMULATION_STATE_SETTING"]: lambda: ck.check_set_state(timed),
        F["SIMULATION_STATE_PAUSE"]: lambda: ck.check_set_state(timed),
        F["STEP_SIMULATION_SINGLE"]: lambda: ck.check_steps(1),
        F["STEP_SIMULATION_MULTIPLE"]: lambda: ck.check_steps(7),
        F["STEP_SIMULATION_ACTION"]: lambda: ck.check_action(5),
        F["SIMULATION_RESET"]: lambda: ck.check_reset(timed),
        F["ENTITY_STATE_GETTING"]: ck.check_entities,
        F["ENTITY_STATE_SETTING"]: ck.check_set_entity,
    }
    passed = True
    for f in features:
        name = names.get(f, str(f))
        check = checks.get(f)
        if check is None:
            report(f"FAIL {name}: listed, but this script has no check for it")
            passed = False
            continue
        if f == F["STEP_SIMULATION_ACTION"] and not client.actions:
            report(f"SKIP {name}: this client ({type(client).__name__}) has no action client")
            continue
        try:
            report(f"OK   {name}: {check()}")
        except (Failed, TimeoutError) as exc:
            report(f"FAIL {name}: {exc}")
            passed = False
    try:
        ck.set_state(PLAYING)
    except (Failed, TimeoutError) as exc:
        report(f"FAIL leaving the simulation PLAYING: {exc}")
        passed = False
    return passed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transport", choices=("rclpy", "dds"), default="rclpy")
    ap.add_argument("--namespace", default="", help="namespace of the services (default /)")
    ap.add_argument("--timeout", type=float, default=10.0, help="per call and wait (s)")
    args = ap.parse_args(argv)
    client = (RclpyClient if args.transport == "rclpy" else DdsClient)(args.namespace,
                                                                      args.timeout)
    try:
        if not client.wait():
            print(f"no simulation_interfaces services under {args.namespace or '/'} within "
                  f"{args.timeout} s", file=sys.stderr)
            return 2
        ok = run_checks(client)
    finally:
        client.close()
    print("all listed features behave as specified" if ok else "some checks FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
