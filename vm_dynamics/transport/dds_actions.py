"""ROS 2 actions on the DDS transport: an action server laid out as rcl_action puts one on
rmw_cyclonedds, so that an rclpy/rclcpp ``ActionClient`` talks to it.

An action ``/a`` of type ``pkg/action/A`` is three services and two topics (rcl_action
``rcl_action_get_*_service_name`` / ``_topic_name``):

* ``/a/_action/send_goal`` (``pkg/action/A_SendGoal``: ``goal_id``, ``goal`` ->
  ``accepted``, ``stamp``), ``/a/_action/cancel_goal`` (``action_msgs/srv/CancelGoal``),
  ``/a/_action/get_result`` (``pkg/action/A_GetResult``: ``goal_id`` -> ``status``,
  ``result``; answered when the goal has finished);
* ``/a/_action/feedback`` (``pkg/action/A_FeedbackMessage``, default QoS) and
  ``/a/_action/status`` (``action_msgs/msg/GoalStatusArray``, reliable, transient local,
  depth 1: ``rcl_action_qos_profile_status_default``).

Goals run one at a time in the executor's turn after the one that accepted them
(single-threaded, like the rest of the node): a cancel request reaches a goal that has not
started yet (it then ends CANCELED at once), not one that is running.  Finished goals are kept
for ``get_result`` (the newest :data:`KEEP_GOALS`).
"""
from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any, Callable

from .dds_entities import DdsService
from .qos import QosSpec
from .types import build_message

__all__ = ["DdsActionServer", "GOAL_STATUS", "KEEP_GOALS", "STATUS_QOS"]

#: action_msgs/msg/GoalStatus values
GOAL_STATUS = {"unknown": 0, "accepted": 1, "executing": 2, "canceling": 3, "succeeded": 4,
               "canceled": 5, "aborted": 6}
_TERMINAL = (4, 5, 6)
#: rcl_action_qos_profile_status_default
STATUS_QOS = QosSpec(reliable=True, transient_local=True, depth=1)
#: finished goals kept for get_result
KEEP_GOALS = 100
#: action_msgs/srv/CancelGoal return codes
_CANCEL_NONE, _CANCEL_REJECTED, _CANCEL_UNKNOWN, _CANCEL_TERMINATED = 0, 1, 2, 3


def _stamp(ns: int) -> dict:
    return {"sec": int(ns // 1_000_000_000), "nanosec": int(ns % 1_000_000_000)}


class _Goal:
    def __init__(self, uuid: bytes, stamp_ns: int, goal: Any) -> None:
        self.uuid, self.stamp_ns, self.goal = uuid, stamp_ns, goal
        self.status = GOAL_STATUS["accepted"]
        self.cancel = False
        self.result: dict = {}
        self.waiters: list[Callable[[dict], None]] = []

    def info(self) -> dict:
        return {"goal_id": {"uuid": list(self.uuid)}, "stamp": _stamp(self.stamp_ns)}


class DdsActionServer:
    """Serves ``actiontype`` under the fully qualified ``name`` on a
    :class:`~vm_dynamics.transport.dds.DdsTransport` with ``execute(goal, feedback,
    cancel_requested) -> (outcome, result fields)`` (the contract of
    :meth:`RclpyTransport.action_server`).  :attr:`services` are drained by the transport's
    executor like its other services."""

    def __init__(self, transport: Any, name: str, actiontype: str,
                 execute: Callable[..., tuple[str, Any]]) -> None:
        self.name, self.actiontype = name, actiontype
        self._transport = transport
        self._execute = execute
        base = f"{name}/_action/"
        self.services = [
            DdsService(transport, base + "send_goal", f"{actiontype}_SendGoal", self._on_goal),
            DdsService(transport, base + "cancel_goal", "action_msgs/srv/CancelGoal",
                       self._on_cancel),
            DdsService(transport, base + "get_result", f"{actiontype}_GetResult",
                       self._on_result, deferred=True),
        ]
        self._feedback_type = f"{actiontype}_FeedbackMessage"
        self._feedback = transport.publisher(base + "feedback", self._feedback_type, "default")
        self._status = transport.publisher(base + "status", "action_msgs/msg/GoalStatusArray",
                                           STATUS_QOS)
        self._goals: OrderedDict[bytes, _Goal] = OrderedDict()
        self._pending: deque[_Goal] = deque()
        self._timer: Any = None

    # ---------------------------------------------------------------- services
    def _on_goal(self, request: Any) -> dict:
        uuid = bytes(bytearray(int(x) & 0xFF for x in request.goal_id.uuid))
        now = self._transport.now_ns()
        if uuid in self._goals:
            return {"accepted": False, "stamp": _stamp(now)}
        goal = _Goal(uuid, now, request.goal)
        self._goals[uuid] = goal
        self._pending.append(goal)
        self._publish_status()
        if self._timer is None:     # run it after this turn's replies are written
            self._timer = self._transport.timer(1e-6, self._run_pending)
        return {"accepted": True, "stamp": _stamp(now)}

    def _on_result(self, request: Any, answer: Callable[[dict], None]) -> None:
        uuid = bytes(bytearray(int(x) & 0xFF for x in request.goal_id.uuid))
        goal = self._goals.get(uuid)
        if goal is None:
            answer({"status": GOAL_STATUS["unknown"]})
        elif goal.status in _TERMINAL:
            answer({"status": goal.status, "result": goal.result})
        else:
            goal.waiters.append(answer)

    def _on_cancel(self, request: Any) -> dict:
        info = request.goal_info
        uuid = bytes(bytearray(int(x) & 0xFF for x in info.goal_id.uuid))
        stamp_ns = int(info.stamp.sec) * 1_000_000_000 + int(info.stamp.nanosec)
        zero = not any(uuid)
        if not zero and uuid not in self._goals:
            return {"return_code": _CANCEL_UNKNOWN}
        chosen = [g for g in self._goals.values()
                  if (not zero and g.uuid == uuid) or (zero and stamp_ns == 0)
                  or (stamp_ns and g.stamp_ns <= stamp_ns)]
        live = [g for g in chosen if g.status not in _TERMINAL]
        if not live:
            return {"return_code": _CANCEL_TERMINATED if chosen and not zero
                    else _CANCEL_NONE}
        for g in live:
            g.cancel = True
            g.status = GOAL_STATUS["canceling"]
        self._publish_status()
        return {"return_code": _CANCEL_NONE, "goals_canceling": [g.info() for g in live]}

    # ---------------------------------------------------------------- execution
    def _run_pending(self) -> None:
        self._timer.cancel()
        self._timer = None
        while self._pending and not self._transport.closed:
            self._run(self._pending.popleft())

    def _run(self, goal: _Goal) -> None:
        if not goal.cancel:
            goal.status = GOAL_STATUS["executing"]
            self._publish_status()

        def feedback(fields: Any) -> None:
            self._feedback.publish(build_message(self._feedback_type, {
                "goal_id": {"uuid": list(goal.uuid)}, "feedback": fields}))
        try:
            outcome, result = self._execute(goal.goal, feedback, lambda: goal.cancel)
            build_message(f"{self.actiontype}_Result", result)     # checks the fields
        except Exception as exc:  # noqa: BLE001 - no goal may end the node
            self._transport.report_bad_response(f"{self.actiontype} goal", exc)
            outcome, result = "aborted", {}
        goal.status = GOAL_STATUS.get(outcome, GOAL_STATUS["aborted"])
        if goal.status not in _TERMINAL:
            goal.status = GOAL_STATUS["aborted"]
        goal.result = dict(result)
        for answer in goal.waiters:
            answer({"status": goal.status, "result": goal.result})
        goal.waiters.clear()
        while len(self._goals) > KEEP_GOALS:
            old = next(iter(self._goals.values()))
            if old.status not in _TERMINAL:
                break
            del self._goals[old.uuid]
        self._publish_status()

    def _publish_status(self) -> None:
        self._status.publish(build_message("action_msgs/msg/GoalStatusArray", {
            "status_list": [{"goal_info": g.info(), "status": g.status}
                            for g in self._goals.values()]}))
