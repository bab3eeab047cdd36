"""``composed_nodes``: ``dynamics_node`` and ``controller_node`` composed in one process, on one
executor (what a ROS 2 user does with rclcpp's component container and intra-process
communication).

    composed_nodes --ros-args --params-file config/spacecraft_arm.yaml -p lockstep:=true
    ros2 launch vm_dynamics sim.launch.py composed:=true

Each node is the node of its own executable: its name, topics, services, parameters and
behaviour are the same as when it runs in a process of its own (external subscribers --
RViz, ``ros2 topic echo``, a recorder -- see ``joint_states``, ``odom``, ``/clock`` and ``/tf``
on DDS as before).  The ROS arguments apply as they do to every node of a process in ROS 2:
``-p`` and ``/**`` sections of a ``--params-file`` to both nodes, a section named after a node
(``dynamics_node:`` / ``controller_node:``) to that node only, and node-prefixed remaps
(``-r dynamics_node:__ns:=/sim``) to that node.  As in their own executables the dynamics
node's ``use_sim_time`` is forced to false (it is the clock source) and the controller's
defaults to true.

Why: in lockstep a control period is five DDS samples in series between the two processes
(docs/performance.md, "The lockstep loop over DDS").  Composed on the DDS transport, the
samples between the two nodes are handed over in the process (:mod:`vm_dynamics.transport.
dds_executor`): no DDS round trip and no wake-up per sample; the DDS write still happens
for the readers outside the process.  On rclpy both nodes run on one rclpy executor, their
samples still through the rmw (rclpy has no intra-process communication); measured, that is
no faster than two processes (docs/performance.md, "Composing the two nodes in one
process").

A configuration error of either node ends the process with exit code 2 and the node's FATAL
line (the container does not run half of the loop); Ctrl-C / SIGTERM end it with 0.
"""
from __future__ import annotations

import sys

from ..core.signals import deferred_interrupts
from . import controller_node, dynamics_node
from .entry import run_nodes

__all__ = ["main", "EXECUTABLE", "COMPOSED"]

#: the console script
EXECUTABLE = "composed_nodes"
#: the nodes composed, in the order they are built (the clock source first)
COMPOSED = (dynamics_node.NODE_NAME, controller_node.NODE_NAME)


def main(argv=None) -> int:
    argv = list(sys.argv if argv is None else argv)
    try:      # reads the parameter files: a Ctrl-C in it ends the process quietly
        with deferred_interrupts() as stop:
            specs = [dynamics_node.node_spec(argv), controller_node.node_spec(argv)]
    except ValueError as exc:
        print(f"{EXECUTABLE}: error: {exc}", file=sys.stderr)
        return 2
    if stop:
        return 0
    return run_nodes(specs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
