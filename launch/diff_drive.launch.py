"""A differential-drive scenario (``constraints: {type: diff_drive}``, config/diff_drive*.yaml):
diff_drive_node, robot_state_publisher, RViz.

    ros2 launch vm_dynamics diff_drive.launch.py                  # diff_drive_arm, with RViz
    ros2 launch vm_dynamics diff_drive.launch.py scenario:=diff_drive rviz:=false
    ros2 topic pub -r 10 /cmd_vel geometry_msgs/msg/Twist "{linear: {x: 0.3}, angular: {z: 0.4}}"

sim.launch.py includes this file for a scenario with a ``constraints`` section of type
``diff_drive``.  Arguments: ``scenario`` (name in config/ or a YAML path), ``rviz``,
``real_time_factor`` (empty: the node's 1.0), ``path_length`` (poses kept in the
``base_path``/``ee_path`` trails).  diff_drive_node publishes ``/clock`` (simulated time), so
robot_state_publisher and RViz run with ``use_sim_time``; robot_state_publisher gets the
scenario's URDF without the root link's inertia (KDL rejects it) and turns ``joint_states``
(wheels, arm) into TF below ``base_link``, the node publishes ``odom`` → ``base_link``.
"""
from launch.actions import OpaqueFunction

from launch import LaunchDescription
from vm_dynamics.nodes.diff_drive_node import launch_robot_description
from vm_dynamics.nodes.launching import argument, declare, robot_state_publisher, rviz, vm_node


def _nodes(context):
    try:
        path, urdf = launch_robot_description(argument(context, "scenario"))
    except ValueError as exc:
        raise RuntimeError(f"scenario: {exc}") from None
    params = {"scenario": path}
    rtf = argument(context, "real_time_factor")
    length = argument(context, "path_length")
    try:
        if rtf:
            params["real_time_factor"] = float(rtf)
        if length:
            params["path_length"] = int(length)
    except ValueError as exc:
        raise RuntimeError(f"real_time_factor/path_length: {exc}") from None
    return [vm_node("diff_drive_node", params),
            robot_state_publisher(urdf, use_sim_time=True),
            rviz(use_sim_time=True)]


def generate_launch_description():
    return LaunchDescription([
        declare("scenario", default="diff_drive_arm",
                description="diff-drive scenario name (config/<name>.yaml) or YAML path"),
        declare("rviz"),
        declare("real_time_factor", description="simulated s per wall s; empty: 1.0"),
        declare("path_length", description="poses kept in the base_path and ee_path trails"),
        OpaqueFunction(function=_nodes),
    ])
