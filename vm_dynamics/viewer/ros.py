"""The nodes' state in the browser (``vm-view --ros SCENARIO``): a subscriber of
``joint_states`` and ``odom`` (the dynamics node's outputs, over rclpy or the plain-DDS
transport) that draws the robot of the scenario's URDF at each new state.  The arm's link poses
are computed from the URDF like robot_state_publisher does, so no robot_state_publisher is
needed.  A capture target is drawn from ``target/marker`` (its shape, visualization_msgs/Marker)
at the pose of ``target/odom``."""
from __future__ import annotations

import time

from ..ros import messages as rm
from .scene import body_from_marker

__all__ = ["NodeFollower", "follow_nodes"]


class NodeFollower:
    """Keeps the latest ``joint_states`` and ``odom`` and shows them in ``viewer`` (a
    :class:`~vm_dynamics.viewer.server.RobotViewer`) at most ``max_rate`` times per wall
    second.  Joints missing from the messages stay at 0; bad messages raise ValueError (the
    transport drops them with a warning)."""

    def __init__(self, viewer, max_rate: float = 30.0):
        self.viewer = viewer
        self.positions = {j: 0.0 for j in viewer.tree.position_joints}
        self.g = None
        self.stamp_ns = 0
        self.min_period = 1.0 / max_rate
        self._last = 0.0
        self.shown = 0
        self.body = None           # the target's shape (from target/marker)
        self.bodies: dict = {}     # {frame: pose} of the bodies (from target/odom)

    def on_joint_state(self, msg) -> None:
        js = rm.parse_joint_state(msg)
        for name, x in zip(js.names, js.position):
            if name in self.positions:
                self.positions[name] = float(x)
        self.stamp_ns = max(self.stamp_ns, js.stamp_ns)
        self.update()

    def on_odom(self, msg) -> None:
        od = rm.parse_odometry(msg)
        self.g = od.g
        self.stamp_ns = max(self.stamp_ns, od.stamp_ns)
        self.update()

    def on_target_marker(self, msg) -> None:
        """The target's shape; drawn anew when it changes (a new colour once grasped)."""
        body = body_from_marker(msg)
        if self.body is None or (body.kind, body.size, body.rgba) != \
                (self.body.kind, self.body.size, self.body.rgba):
            self.viewer.add_body(body)
            self.body = body
            self.update(force=True)

    def on_target_odom(self, msg) -> None:
        od = rm.parse_odometry(msg)
        self.bodies[od.child_frame_id] = od.g
        self.update()

    def update(self, force: bool = False) -> bool:
        """Draw the latest state (if due); returns True if it drew."""
        now = time.monotonic()
        if self.g is None or (not force and now - self._last < self.min_period):
            return False
        self._last = now
        poses = self.viewer.tree.link_poses(self.positions, root_pose=self.g)
        self.viewer.show(poses, self.stamp_ns * 1e-9, self.bodies)
        self.viewer.extend_path(poses[self.viewer.ee_frame][:3, 3])
        self.shown += 1
        return True


def follow_nodes(viewer, transport, namespace: str = "") -> NodeFollower:
    """Subscribe ``transport`` to ``<namespace>/joint_states``, ``<namespace>/odom`` and the
    target's ``<namespace>/target/odom`` and ``<namespace>/target/marker``."""
    follower = NodeFollower(viewer)
    ns = namespace.rstrip("/")
    transport.subscribe(f"{ns}/joint_states", rm.JOINT_STATE, follower.on_joint_state,
                        qos="sensor")
    transport.subscribe(f"{ns}/odom", rm.ODOMETRY, follower.on_odom, qos="sensor")
    transport.subscribe(f"{ns}/target/odom", rm.ODOMETRY, follower.on_target_odom, qos="sensor")
    transport.subscribe(f"{ns}/target/marker", "visualization_msgs/msg/Marker",
                        follower.on_target_marker, qos="default")
    return follower
