"""ROS' standard simulator API (ros-simulation/simulation_interfaces 1.x) on the dynamics node.

The services and the action that fit a dynamics simulator, on any transport (rclpy or the
DDS transport; the action where the transport serves actions), over a
:class:`~vm_dynamics.nodes.dynamics_core.DynamicsCore`.  Names are relative (remappable; in
the node's namespace, the root namespace by default):

==========================  ==============================================  ==================
name                        type                                            feature
==========================  ==============================================  ==================
get_simulator_features      ``srv/GetSimulatorFeatures``                    (always)
get_simulation_state        ``srv/GetSimulationState``                      SIMULATION_STATE_GETTING
set_simulation_state        ``srv/SetSimulationState``                      SIMULATION_STATE_SETTING, _PAUSE
reset_simulation            ``srv/ResetSimulation``                         SIMULATION_RESET
step_simulation             ``srv/StepSimulation``                          STEP_SIMULATION_SINGLE, _MULTIPLE
simulate_steps              ``action/SimulateSteps``                        STEP_SIMULATION_ACTION
get_entities                ``srv/GetEntities``                             (always)
get_entities_states         ``srv/GetEntitiesStates``                       ENTITY_STATE_GETTING
get_entity_state            ``srv/GetEntityState``                          ENTITY_STATE_GETTING
set_entity_state            ``srv/SetEntityState``                          ENTITY_STATE_SETTING
==========================  ==============================================  ==================

Semantics (docs/simulation_interfaces.md has the table with the result codes):

* **States**: the node starts PLAYING (as before: ``~/pause`` is false).  PAUSED is the
  core's pause (``~/pause`` true, or a divergence, which only a reset clears); STOPPED is
  "paused and reset" (SimulationState.msg): SetSimulationState(STOPPED) pauses and resets,
  and the state reads STOPPED until the simulation is played, paused or stepped.  A stopped
  simulation may be paused (SimulationState.msg: "starting simulation in a paused state").
  QUITTING and the world states are not supported (FEATURE_UNSUPPORTED); an unknown state
  value is NOT_FOUND.
* **Aliases**: ``~/pause`` (std_srvs/SetBool) is SetSimulationState(PAUSED / PLAYING) and
  ``~/reset`` (std_srvs/Trigger) is ResetSimulation(SCOPE_ALL); both act on the same core,
  so each reads back through the other.
* **Reset** restores the initial state at t = 0 (time and state together): scopes
  DEFAULT, ALL, or any scope with both TIME and STATE (SPAWNED: nothing is ever spawned);
  TIME or STATE alone is FEATURE_UNSUPPORTED.  It keeps the simulation state (a paused
  simulation stays paused).
* **A step** is one integration step ``dt`` of the engine (the simulation loop), also in
  lockstep mode.  Stepping needs PAUSED (not STOPPED, not PLAYING: OPERATION_FAILED, as
  StepSimulation.srv says); at most :data:`MAX_STEPS_PER_CALL` per call, since the node
  steps in the executor's turn.  The stepped states are published.
* **Entities**: :meth:`DynamicsCore.entities` (the vehicle, named after the robot;
  :mod:`~vm_dynamics.nodes.entities`).  GetEntities filters by name (Python ``re.search``,
  which agrees with POSIX extended expressions on the common syntax); categories, tags and
  bounds are FEATURE_UNSUPPORTED.  EntityState: pose in ``header.frame_id`` (the frame of
  ``/odom``), twist observed in that frame, acceleration not computed (NaN).
  SetEntityState accepts ``header.frame_id`` empty (= world) or that frame; acceleration is
  ignored, as the service allows.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Mapping

import numpy as np

from ..core import lie
from ..core.rotations import quat_from_matrix
from ..ros import simulation_interfaces_defs as defs
from .entities import InvalidPose

__all__ = ["SimulationInterfaces", "SERVICES", "ACTIONS", "FEATURES", "RESULT", "STATE",
           "MAX_STEPS_PER_CALL", "state_name"]

_PKG = defs.PACKAGE
#: Result.msg constants (RESULT_OK, ...)
RESULT = defs.constants(f"{_PKG}/msg/Result")
#: SimulationState.msg constants (STATE_PLAYING, ...)
STATE = defs.constants(f"{_PKG}/msg/SimulationState")
#: SimulatorFeatures.msg constants (SIMULATION_RESET, ...)
FEATURES = defs.constants(f"{_PKG}/msg/SimulatorFeatures")
_SET_STATE = defs.constants(f"{_PKG}/srv/SetSimulationState")
_RESET = defs.constants(f"{_PKG}/srv/ResetSimulation")
_SET_ENTITY = defs.constants(f"{_PKG}/srv/SetEntityState")
_BOUNDS = defs.constants(f"{_PKG}/msg/Bounds")

#: Most steps one StepSimulation call or SimulateSteps goal may ask for: the node steps in
#: its executor's turn, serving nothing else meanwhile.
MAX_STEPS_PER_CALL = 1_000_000

#: service name -> (type, handler method); names relative to the node's namespace
SERVICES = {
    "get_simulator_features": (f"{_PKG}/srv/GetSimulatorFeatures", "get_simulator_features"),
    "get_simulation_state": (f"{_PKG}/srv/GetSimulationState", "get_simulation_state"),
    "set_simulation_state": (f"{_PKG}/srv/SetSimulationState", "set_simulation_state"),
    "reset_simulation": (f"{_PKG}/srv/ResetSimulation", "reset_simulation"),
    "step_simulation": (f"{_PKG}/srv/StepSimulation", "step_simulation"),
    "get_entities": (f"{_PKG}/srv/GetEntities", "get_entities"),
    "get_entities_states": (f"{_PKG}/srv/GetEntitiesStates", "get_entities_states"),
    "get_entity_state": (f"{_PKG}/srv/GetEntityState", "get_entity_state"),
    "set_entity_state": (f"{_PKG}/srv/SetEntityState", "set_entity_state"),
}
#: action name -> (type, execute method)
ACTIONS = {"simulate_steps": (f"{_PKG}/action/SimulateSteps", "simulate_steps")}


def state_name(value: int) -> str:
    """``STATE_PAUSED`` for 2, ... (``state 17`` for an unknown value)."""
    for name, v in STATE.items():
        if v == value:
            return name
    return f"state {value}"


def _result(code: str | int, message: str = "") -> dict:
    value = RESULT[code] if isinstance(code, str) else int(code)
    return {"result": value, "error_message": message}


def _ok() -> dict:
    return _result("RESULT_OK")


def _stamp(ns: int) -> dict:
    return {"sec": int(ns // 1_000_000_000), "nanosec": int(ns % 1_000_000_000)}


def _xyz(v) -> dict:
    return {"x": float(v[0]), "y": float(v[1]), "z": float(v[2])}


class SimulationInterfaces:
    """The simulation_interfaces handlers over a :class:`DynamicsCore` (see the module
    docstring).  ``after_change()`` is the node's hook after a change of state (re-anchor
    its pacing to the wall clock and publish what is due).  Each handler takes a request of
    either message library (rosidl or rosbags: only its fields are read) and returns the
    response fields as a mapping (:meth:`Transport.service`); a handler never raises for a
    request, whatever its values."""

    def __init__(self, core: Any, after_change: Callable[[], None] = lambda: None,
                 *, actions: bool = False) -> None:
        self.core = core
        self.after_change = after_change
        self.actions = bool(actions)
        self.stopped = False

    # ------------------------------------------------------------------ wiring
    def register(self, transport: Any) -> list[str]:
        """Serve :data:`SERVICES` and, if the transport serves actions (``action_server``),
        :data:`ACTIONS` on ``transport``; returns the names served."""
        served = []
        for name, (srvtype, method) in SERVICES.items():
            transport.service(name, srvtype, self._guarded(getattr(self, method)))
            served.append(name)
        if hasattr(transport, "action_server"):
            for name, (actiontype, method) in ACTIONS.items():
                transport.action_server(name, actiontype, getattr(self, method))
                served.append(name)
            self.actions = True
        return served

    def _guarded(self, handler: Callable[[Any], dict]) -> Callable[[Any], dict]:
        """``handler`` with a ``ValueError``/``TypeError``/``AttributeError`` from reading
        the request (a field of the wrong type or missing) answered with
        RESULT_OPERATION_FAILED naming it, instead of a failed callback."""
        def run(request: Any) -> dict:
            try:
                return handler(request)
            except (ValueError, TypeError, AttributeError) as exc:
                return {"result": _result("RESULT_OPERATION_FAILED",
                                          f"bad request: {type(exc).__name__}: {exc}")}
        run.__name__ = run.__qualname__ = handler.__name__
        return run

    # ------------------------------------------------------------------ state
    def features(self) -> list[int]:
        """The SimulatorFeatures values implemented (sorted)."""
        names = ["SIMULATION_STATE_GETTING", "SIMULATION_STATE_SETTING",
                 "SIMULATION_STATE_PAUSE", "SIMULATION_RESET", "STEP_SIMULATION_SINGLE",
                 "STEP_SIMULATION_MULTIPLE", "ENTITY_STATE_GETTING"]
        if self.actions:
            names.append("STEP_SIMULATION_ACTION")
        if any(e.settable for e in self.core.entities()):
            names.append("ENTITY_STATE_SETTING")
        return sorted(FEATURES[n] for n in names)

    def state(self) -> int:
        """The SimulationState value now."""
        core = self.core
        if self.stopped and core.user_paused and core.steps == 0:
            return STATE["STATE_STOPPED"]
        self.stopped = False
        return STATE["STATE_PAUSED"] if core.paused else STATE["STATE_PLAYING"]

    def get_simulator_features(self, request: Any) -> dict:
        return {"features": {
            "features": self.features(), "spawn_formats": [],
            "custom_info": ("vm_dynamics dynamics node (docs/simulation_interfaces.md): "
                            "a step is one integration step dt = "
                            f"{self.core.dt:g} s; entities {[e.name for e in self.core.entities()]}"
                            "; GetEntities filters by name only")}}

    def get_simulation_state(self, request: Any) -> dict:
        return {"state": {"state": self.state()}, "result": _ok()}

    def set_simulation_state(self, request: Any) -> dict:
        target = int(request.state.state)
        core = self.core
        if target not in STATE.values():
            return {"result": _result("RESULT_NOT_FOUND", f"unknown simulation state "
                                      f"{target}; known: {sorted(STATE.values())}")}
        if target not in (STATE["STATE_PLAYING"], STATE["STATE_PAUSED"],
                          STATE["STATE_STOPPED"]):
            return {"result": _result("RESULT_FEATURE_UNSUPPORTED",
                                      f"{state_name(target)} is not supported: the dynamics "
                                      "node has no world to load or unload and quits on "
                                      "SIGINT/SIGTERM")}
        current = self.state()
        if current == target:
            return {"result": _result(_SET_STATE["ALREADY_IN_TARGET_STATE"],
                                      f"already {state_name(target)}")}
        if target == STATE["STATE_PLAYING"]:
            ok, text = core.pause(False)
            if not ok:
                return {"result": _result(_SET_STATE["STATE_TRANSITION_ERROR"], text)}
            self.stopped = False
        elif target == STATE["STATE_PAUSED"]:
            core.pause(True)
            self.stopped = False
        else:
            core.pause(True)
            core.reset()
            self.stopped = True
        self.after_change()
        return {"result": _ok()}

    def reset_simulation(self, request: Any) -> dict:
        scope = int(request.scope)
        time_state = _RESET["SCOPE_TIME"] | _RESET["SCOPE_STATE"]
        known = time_state | _RESET["SCOPE_SPAWNED"]
        if not (scope in (_RESET["SCOPE_DEFAULT"], _RESET["SCOPE_ALL"])
                or (scope & time_state == time_state and scope & ~known == 0)):
            return {"result": _result("RESULT_FEATURE_UNSUPPORTED",
                                      f"reset scope {scope} is not supported: time and state "
                                      "reset together (SCOPE_DEFAULT, SCOPE_ALL, or SCOPE_TIME "
                                      "| SCOPE_STATE [| SCOPE_SPAWNED])")}
        self.core.reset()
        self.after_change()
        return {"result": _ok()}

    # ------------------------------------------------------------------ stepping
    def _check_steps(self, steps: Any) -> str:
        """Why ``steps`` cannot be stepped now ("" if it can)."""
        steps = int(steps)
        if steps < 1:
            return f"steps must be at least 1, got {steps}"
        if steps > MAX_STEPS_PER_CALL:
            return (f"steps {steps} is more than {MAX_STEPS_PER_CALL} per call (the node "
                    "steps in its executor's turn); split the request")
        state = self.state()
        if state != STATE["STATE_PAUSED"]:
            return f"the simulation must be paused to step; it is {state_name(state)}"
        if self.core.diverged:
            return f"cannot step: {self.core.error}"
        return ""

    def _step(self, steps: int) -> int:
        """Advance ``steps`` engine steps of the paused core; returns those taken (fewer if
        the simulation diverged)."""
        core = self.core
        core.user_paused = False
        try:
            done = core.run(steps)
        finally:
            core.user_paused = True
        if done:
            core.schedule.state_pending = True
        return done

    def step_simulation(self, request: Any) -> dict:
        steps = int(request.steps)
        why = self._check_steps(steps)
        if why:
            return {"result": _result("RESULT_OPERATION_FAILED", why)}
        done = self._step(steps)
        self.after_change()
        if done < steps:
            return {"result": _result("RESULT_OPERATION_FAILED", f"stepped {done} of {steps}: "
                                      f"{self.core.error or 'stopped early'}")}
        return {"result": _ok()}

    def simulate_steps(self, goal: Any, feedback: Callable[[Mapping[str, Any]], None],
                       cancel_requested: Callable[[], bool]) -> tuple[str, dict]:
        """The SimulateSteps action: ``(outcome, result fields)``, feedback after each step."""
        try:
            steps = int(goal.steps)
        except (TypeError, ValueError, AttributeError) as exc:
            return "aborted", {"result": _result("RESULT_OPERATION_FAILED",
                                                 f"bad goal: {exc}")}
        why = self._check_steps(steps)
        if why:
            return "aborted", {"result": _result("RESULT_OPERATION_FAILED", why)}
        outcome, result = "succeeded", _ok()
        for k in range(steps):
            if cancel_requested():
                outcome, result = "canceled", _result("RESULT_OK", f"canceled after {k} steps")
                break
            if not self._step(1):
                outcome = "aborted"
                result = _result("RESULT_OPERATION_FAILED", f"stepped {k} of {steps}: "
                                 f"{self.core.error or 'stopped early'}")
                break
            feedback({"completed_steps": k + 1, "remaining_steps": steps - k - 1})
        self.after_change()
        return outcome, {"result": result}

    # ------------------------------------------------------------------ entities
    def _entity(self, name: Any):
        for e in self.core.entities():
            if e.name == name:
                return e
        return None

    def _not_found(self, name: Any) -> dict:
        return _result("RESULT_NOT_FOUND", f"no entity {name!r}; entities: "
                       f"{[e.name for e in self.core.entities()]}")

    def _filtered(self, filters: Any) -> tuple[list, dict | None]:
        """(entities matching ``filters``, None) or ([], error result)."""
        unsupported = []
        if len(filters.categories):
            unsupported.append("categories (ENTITY_CATEGORIES)")
        if len(filters.tags.tags):
            unsupported.append("tags (ENTITY_TAGS)")
        if int(filters.bounds.type) != _BOUNDS["TYPE_EMPTY"] or len(filters.bounds.points):
            unsupported.append("bounds")
        if unsupported:
            return [], _result("RESULT_FEATURE_UNSUPPORTED", "entity filters not supported: "
                               + ", ".join(unsupported) + "; filter by name only")
        try:
            rx = re.compile(str(filters.filter))
        except re.error as exc:
            return [], _result("RESULT_OPERATION_FAILED",
                               f"filter {filters.filter!r} is not a regular expression: {exc}")
        return [e for e in self.core.entities() if rx.search(e.name)], None

    def get_entities(self, request: Any) -> dict:
        found, error = self._filtered(request.filters)
        if error:
            return {"result": error}
        return {"result": _ok(), "entities": [e.name for e in found]}

    def get_entities_states(self, request: Any) -> dict:
        found, error = self._filtered(request.filters)
        if error:
            return {"result": error}
        return {"result": _ok(), "entities": [e.name for e in found],
                "states": [self._state_fields(e) for e in found]}

    @staticmethod
    def _state_fields(entity: Any) -> dict:
        s = entity.state()
        q = quat_from_matrix(s.g[:3, :3])
        nan = {"x": math.nan, "y": math.nan, "z": math.nan}
        return {"header": {"stamp": _stamp(s.stamp_ns), "frame_id": s.frame_id},
                "pose": {"position": _xyz(s.g[:3, 3]),
                         "orientation": {"x": float(q[0]), "y": float(q[1]),
                                         "z": float(q[2]), "w": float(q[3])}},
                "twist": {"linear": _xyz(s.twist[:3]), "angular": _xyz(s.twist[3:])},
                "acceleration": {"linear": dict(nan), "angular": dict(nan)}}

    def get_entity_state(self, request: Any) -> dict:
        entity = self._entity(request.entity)
        if entity is None:
            return {"result": self._not_found(request.entity)}
        return {"result": _ok(), "state": self._state_fields(entity)}

    def set_entity_state(self, request: Any) -> dict:
        entity = self._entity(request.entity)
        if entity is None:
            return {"result": self._not_found(request.entity)}
        if not entity.settable:
            return {"result": _result("RESULT_FEATURE_UNSUPPORTED",
                                      f"the state of entity {entity.name} cannot be set in "
                                      "this configuration (an orbit's output frame, or a "
                                      "body of a capture)")}
        st = request.state
        frame = str(st.header.frame_id)
        own = entity.state().frame_id
        if frame not in ("", own):
            return {"result": _result("RESULT_NOT_FOUND", f"header.frame_id {frame!r}: states "
                                      f"are set in {own!r} (or empty, the same world frame)")}
        p, o = st.pose.position, st.pose.orientation
        try:
            g = lie.pose([p.x, p.y, p.z], [o.x, o.y, o.z, o.w])
        except ValueError as exc:
            return {"result": _result(_SET_ENTITY["INVALID_POSE"], f"pose: {exc}")}
        lin, ang = st.twist.linear, st.twist.angular
        twist = np.array([lin.x, lin.y, lin.z, ang.x, ang.y, ang.z], dtype=float)
        try:
            entity.set_state(g, twist)
        except InvalidPose as exc:
            return {"result": _result(_SET_ENTITY["INVALID_POSE"], str(exc))}
        except ValueError as exc:
            return {"result": _result("RESULT_OPERATION_FAILED", str(exc))}
        self.after_change()
        return {"result": _ok()}
