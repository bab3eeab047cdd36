"""Capture of a tumbling target in the nodes: sim.launch.py with a capture scenario (the chaser
and the target integrated together by dynamics_node) and RViz with rviz/capture.rviz, which
adds the target (its shape on ``/target/marker``, its odometry ``/target/odom``) and the contact
wrench (``/contact_wrench``) to the chaser's displays.

    ros2 launch vm_dynamics capture.launch.py                     # capture_tumbling, with RViz
    ros2 launch vm_dynamics capture.launch.py scenario:=/path/to/capture.yaml rviz:=false
    ros2 launch vm_dynamics capture.launch.py controller:=none    # no mission: grasp by hand
    ros2 service call /dynamics_node/grasp std_srvs/srv/Trigger   # weld when within tolerance
    ros2 service call /dynamics_node/release std_srvs/srv/Trigger

Arguments as sim.launch.py's (``scenario`` defaults to ``capture_tumbling``; the other
arguments are passed on).  Without ``controller``, controller_node runs the scenario's mission
(:mod:`vm_dynamics.nodes.controller_capture`: ``capture.approach`` and ``track`` fly the arm to
the fixture from ``/target/odom``, ``/dynamics_node/grasp`` is called from
``grasp.command_time`` until it succeeds, then ``detumble`` on the merged model), both nodes
in lockstep; ``controller:=NAME`` runs that plug-in instead, ``controller:=none`` none (the arm
floats free, and ``~/grasp`` grasps when called).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription
from vm_dynamics.nodes.launching import launch_scenario, parse_bool_argument, rviz_fixed_frame

PACKAGE = "vm_dynamics"
#: sim.launch.py's arguments, passed on (rviz is started here, with the capture config)
PASSED = ("scenario", "controller", "use_sim_time", "real_time_factor", "lockstep",
          "path_length")


def _actions(context):
    share = get_package_share_directory(PACKAGE)
    scenario = LaunchConfiguration("scenario").perform(context)
    try:
        _, params, _, _ = launch_scenario(scenario)
    except ValueError as exc:
        raise RuntimeError(f"scenario: {exc}") from None
    if "capture" not in params:
        raise RuntimeError(f"scenario {scenario!r} has no capture section (a target): use "
                           f"sim.launch.py")
    try:
        use_sim_time = parse_bool_argument(LaunchConfiguration("use_sim_time").perform(context),
                                           "use_sim_time")
    except ValueError as exc:
        raise RuntimeError(str(exc)) from None
    # read before the include: its arguments (rviz:=false for sim.launch.py's own RViz) are
    # set in this launch's configurations too
    try:
        start_rviz = parse_bool_argument(LaunchConfiguration("rviz").perform(context), "rviz")
    except ValueError as exc:
        raise RuntimeError(str(exc)) from None
    args = {name: LaunchConfiguration(name).perform(context) for name in PASSED}
    args["rviz"] = "false"
    actions = [IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, "launch", "sim.launch.py")),
        launch_arguments=args.items())]
    if start_rviz:
        actions.append(Node(package="rviz2", executable="rviz2", name="rviz2", output="log",
                            arguments=["-d", os.path.join(share, "rviz", "capture.rviz"),
                                       "-f", rviz_fixed_frame(params)],
                            parameters=[{"use_sim_time": use_sim_time}]))
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scenario", default_value="capture_tumbling",
                              description="capture scenario name (config/<name>.yaml) or YAML "
                                          "path"),
        DeclareLaunchArgument("controller", default_value="",
                              description="controller plug-in; empty: the capture mission; "
                                          "'none': no controller node"),
        DeclareLaunchArgument("rviz", default_value="true", choices=["true", "false"],
                              description="start RViz (rviz/capture.rviz)"),
        DeclareLaunchArgument("use_sim_time", default_value="true", choices=["true", "false"],
                              description="controller, robot_state_publisher and RViz follow "
                                          "/clock"),
        DeclareLaunchArgument("real_time_factor", default_value="",
                              description="simulated s per wall s; empty: the scenario's"),
        DeclareLaunchArgument("lockstep", default_value="",
                              description="as sim.launch.py"),
        DeclareLaunchArgument("path_length", default_value="3000",
                              description="poses kept in the ee_path and base_path trails"),
        OpaqueFunction(function=_actions),
    ])
