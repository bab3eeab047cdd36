"""The lockstep messages as CDR straight from the nodes' arrays, and back
(:mod:`vm_dynamics.transport.array_cdr`): no message objects on either side of a period.

:class:`StateWire` is the dynamics node's: it writes ``joint_states``, ``odom`` and ``/clock``
from the state's arrays (:meth:`DynamicsCore.iter_state_messages` yields these bytes instead
of messages while it is set) and reads the controller's ``joint_commands`` and
``base_wrench`` into arrays.  :class:`CommandWire` is the controller node's: it reads the
states and writes the commands.  Each returns ``None`` for what it does not take -- a
sample off the layout the nodes send, a bad value -- and the node then takes the message
path as before, with its checks and errors; the nodes use them only on transports whose
publishers write serialized samples and whose subscriptions hand them over first
(:attr:`~vm_dynamics.transport.base.Transport.cdr_handlers`).
"""
from __future__ import annotations

from typing import Any

from ..transport.array_cdr import (
    ClockWriter,
    JointStateReader,
    JointStateWriter,
    OdometryReader,
    OdometryWriter,
    WrenchStampedReader,
    WrenchStampedWriter,
)

__all__ = ["StateWire", "CommandWire"]


class StateWire:
    """The dynamics node's side for a robot (:class:`~vm_dynamics.nodes.robot.Robot`)."""

    def __init__(self, robot: Any) -> None:
        m = robot.model
        self.base_frame = robot.base_frame
        self._js = JointStateWriter(m.joint_names)
        self._odom: dict = {}
        n = len(robot.joints)
        self.command = JointStateReader(robot.joints, "", ({0}, {0}, {n}))
        self.wrench = WrenchStampedReader(robot.base_frame)

    def joint_state(self, stamp_ns: int, q: Any, qd: Any, tau: Any) -> bytes | None:
        return self._js.encode(stamp_ns, q, qd, tau)

    def odometry(self, stamp_ns: int, g: Any, V6: Any, frame_id: str) -> bytes | None:
        w = self._odom.get(frame_id)
        if w is None:
            w = self._odom[frame_id] = OdometryWriter(frame_id, self.base_frame)
        return w.encode(stamp_ns, g, V6)

    @staticmethod
    def clock(stamp_ns: int) -> bytes | None:
        return ClockWriter.encode(stamp_ns)


class CommandWire:
    """The controller node's side: reads ``joint_states`` (model joint order) and ``odom``
    (``odom_frame`` -> ``base_frame``), writes ``joint_commands`` (``joints`` order) and
    ``base_wrench`` (body frame)."""

    def __init__(self, robot: Any, odom_frame: str) -> None:
        m = robot.model
        n = m.n
        self.state = JointStateReader(m.joint_names, "", ({n}, {n}, {0, n}))
        self.odometry = OdometryReader(odom_frame, robot.base_frame)
        self._efforts = JointStateWriter(robot.joints, "", (False, False, True))
        self._wrench = WrenchStampedWriter(robot.base_frame)

    def commands(self, stamp_ns: int, tau: Any, wrench6: Any) -> list | None:
        """``[('joint_commands', bytes), ('base_wrench', bytes)]``, or None."""
        e, w = self._efforts.encode(stamp_ns, tau), self._wrench.encode(stamp_ns, wrench6)
        if e is None or w is None:
            return None
        return [("joint_commands", e), ("base_wrench", w)]
