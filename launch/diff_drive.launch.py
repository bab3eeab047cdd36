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
import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from launch import LaunchDescription
from vm_dynamics.nodes.diff_drive_node import launch_robot_description

PACKAGE = "vm_dynamics"


def _nodes(context):
    share = get_package_share_directory(PACKAGE)
    try:
        path, urdf = launch_robot_description(LaunchConfiguration("scenario").perform(context))
    except ValueError as exc:
        raise RuntimeError(f"scenario: {exc}") from None
    params = {"scenario": path}
    rtf = LaunchConfiguration("real_time_factor").perform(context)
    length = LaunchConfiguration("path_length").perform(context)
    try:
        if rtf:
            params["real_time_factor"] = float(rtf)
        if length:
            params["path_length"] = int(length)
    except ValueError as exc:
        raise RuntimeError(f"real_time_factor/path_length: {exc}") from None
    return [
        Node(package=PACKAGE, executable="diff_drive_node", name="diff_drive_node",
             output="screen", parameters=[params]),
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             name="robot_state_publisher", output="screen",
             parameters=[{"robot_description": ParameterValue(urdf, value_type=str),
                          "use_sim_time": True, "ignore_timestamp": True}]),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="log",
             arguments=["-d", os.path.join(share, "rviz", "vm_dynamics.rviz")],
             parameters=[{"use_sim_time": True}],
             condition=IfCondition(LaunchConfiguration("rviz"))),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scenario", default_value="diff_drive_arm",
                              description="diff-drive scenario name (config/<name>.yaml) or "
                                          "YAML path"),
        DeclareLaunchArgument("rviz", default_value="true", choices=["true", "false"],
                              description="start RViz"),
        DeclareLaunchArgument("real_time_factor", default_value="",
                              description="simulated s per wall s; empty: 1.0"),
        DeclareLaunchArgument("path_length", default_value="3000",
                              description="poses kept in the base_path and ee_path trails"),
        OpaqueFunction(function=_nodes),
    ])
