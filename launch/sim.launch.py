"""Simulate a vm_dynamics scenario: dynamics node, controller node, robot_state_publisher, RViz.

    ros2 launch vm_dynamics sim.launch.py                        # spacecraft_arm, with RViz
    ros2 launch vm_dynamics sim.launch.py scenario:=uvms controller:=pd_gravity rviz:=false
    ros2 launch vm_dynamics sim.launch.py scenario:=/path/to/my_scenario.yaml lockstep:=true

Arguments: ``scenario`` (name of a file in config/, or a path to a scenario YAML),
``controller`` (plug-in name; empty = the scenario's -- with a ``capture`` section and no
``controller.name``, the capture mission (:mod:`vm_dynamics.nodes.controller_capture`) --,
``none`` = no controller node), ``rviz``,
``use_sim_time`` (for the controller, robot_state_publisher and RViz; the dynamics node is the
clock source), ``real_time_factor`` (empty = the scenario's), ``lockstep`` (empty = the
scenario's, else **true whenever the controller node is started**: the closed loop is then the
same on any machine, paced to ``real_time_factor``; see
:func:`vm_dynamics.nodes.launching.launch_lockstep`),
``path_length`` (poses kept in the ``ee_path``/``base_path`` trails RViz draws; default 3000
= 60 s at the 50 Hz state rate, so the whole motion of a scenario stays visible).

The scenario YAML is the parameter file of both vm_dynamics nodes; the URDF it names (a
package:// URI, or a file next to the scenario, else in urdf/) is expanded with xacro once and
given as ``robot_description`` to both nodes, and the URDF of the model they build from it (with the scenario's vehicle
spliced in and locked joints fixed) to robot_state_publisher, so all three use the same robot.

A scenario with ``constraints: {type: diff_drive}`` (a vehicle that does not slip, paper 002 §4)
is run by diff_drive_node instead: this file then includes diff_drive.launch.py (``scenario``,
``rviz``, ``real_time_factor``, ``path_length``; it is driven by ``/cmd_vel``, no controller).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from launch import LaunchDescription
from vm_dynamics.config.params import read_params_file
from vm_dynamics.config.scenario import scenario_path
from vm_dynamics.nodes.launching import (
    launch_lockstep,
    launch_scenario,
    parse_bool_argument,
    rviz_fixed_frame,
)

PACKAGE = "vm_dynamics"


def _scenario(scenario):
    """(path, ros__parameters, node URDF, model URDF) of a scenario name or YAML path: the
    library's lookup and reader (vm_dynamics.nodes.launching.launch_scenario), as vm-sim and
    the nodes use them."""
    try:
        return launch_scenario(scenario)
    except ValueError as exc:
        raise RuntimeError(f"scenario: {exc}") from None


def _bool(text, name):
    try:
        return parse_bool_argument(text, name)
    except ValueError as exc:
        raise RuntimeError(str(exc)) from None


def _constraint_type(scenario):
    """``constraints.type`` of the scenario (``None``: none, or no such scenario, which
    :func:`_scenario` then names)."""
    try:
        section = read_params_file(scenario_path(scenario)).get("constraints")
    except ValueError:
        return None
    return section.get("type") if isinstance(section, dict) else None


def _constrained(context, share, scenario, kind):
    """diff_drive.launch.py for a differential drive; other constrained systems are vm-sim's."""
    if kind != "diff_drive":
        raise RuntimeError(f"scenario {scenario!r}: constraints.type {kind!r} has no ROS node "
                           "(run it with vm-sim); diff_drive scenarios run diff_drive_node")
    controller = LaunchConfiguration("controller").perform(context)
    if controller not in ("", "none"):
        raise RuntimeError(f"controller:={controller}: a diff_drive scenario is driven by "
                           "/cmd_vel (geometry_msgs/Twist), without a controller node")
    args = {"scenario": scenario}
    for name in ("rviz", "real_time_factor", "path_length"):
        args[name] = LaunchConfiguration(name).perform(context)
    return [IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, "launch", "diff_drive.launch.py")),
        launch_arguments=args.items())]


def _nodes(context):
    share = get_package_share_directory(PACKAGE)
    scenario = LaunchConfiguration("scenario").perform(context)
    kind = _constraint_type(scenario)
    if kind is not None:
        return _constrained(context, share, scenario, kind)
    # the URDF the nodes take (with the scenario's vehicle/locked_joints parameters) and the
    # URDF of the model they build, for robot_state_publisher and RViz
    path, params, node_urdf, model_urdf = _scenario(scenario)
    robot_description = ParameterValue(node_urdf, value_type=str)
    use_sim_time = _bool(LaunchConfiguration("use_sim_time").perform(context), "use_sim_time")

    overrides = {"robot_description": robot_description}
    rtf = LaunchConfiguration("real_time_factor").perform(context)
    if rtf:
        overrides["real_time_factor"] = float(rtf)
    controller = LaunchConfiguration("controller").perform(context)
    # a capture scenario without a controller: the controller node runs the capture mission
    has_controller = bool((params.get("controller") or {}).get("name")) or "capture" in params
    start_controller = controller != "none" and bool(controller or has_controller)
    try:
        overrides["lockstep"] = launch_lockstep(LaunchConfiguration("lockstep").perform(context),
                                                params, start_controller)
    except ValueError as exc:
        raise RuntimeError(str(exc)) from None

    dyn_overrides = dict(overrides)
    path_length = LaunchConfiguration("path_length").perform(context)
    if path_length:
        try:
            dyn_overrides["ee_path_length"] = int(path_length)
        except ValueError:
            raise RuntimeError(f"path_length:={path_length!r}: expected an integer") from None
    actions = [
        Node(package=PACKAGE, executable="dynamics_node", name="dynamics_node",
             output="screen", parameters=[path, dyn_overrides]),
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             name="robot_state_publisher", output="screen",
             parameters=[{"robot_description": ParameterValue(model_urdf, value_type=str),
                          "use_sim_time": use_sim_time,
                          # TF for every joint state, not only for one stamped
                          # 1/publish_frequency after its last: while the simulation is
                          # paused, the dynamics node's heartbeat states advance the stamp by
                          # nanoseconds only, and a TF listener started during the pause (RViz,
                          # tf2_echo) would never get the arm's frames ("two or more
                          # unconnected trees"); tf2 drops exact repeats silently
                          "ignore_timestamp": True}]),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="log",
             arguments=["-d", os.path.join(share, "rviz", "vm_dynamics.rviz"),
                        "-f", rviz_fixed_frame(params)],
             parameters=[{"use_sim_time": use_sim_time}],
             condition=IfCondition(LaunchConfiguration("rviz"))),
    ]
    if start_controller:
        ctrl_overrides = dict(overrides, use_sim_time=use_sim_time)
        ctrl_overrides.pop("real_time_factor", None)
        if controller:
            ctrl_overrides["controller"] = controller
        actions.append(Node(package=PACKAGE, executable="controller_node",
                            name="controller_node", output="screen",
                            parameters=[path, ctrl_overrides]))
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scenario", default_value="spacecraft_arm",
                              description="scenario name (config/<name>.yaml) or YAML path"),
        DeclareLaunchArgument("controller", default_value="",
                              description="controller plug-in; empty: the scenario's; "
                                          "'none': no controller node"),
        DeclareLaunchArgument("rviz", default_value="true", choices=["true", "false"],
                              description="start RViz"),
        DeclareLaunchArgument("use_sim_time", default_value="true", choices=["true", "false"],
                              description="controller, robot_state_publisher and RViz follow "
                                          "/clock"),
        DeclareLaunchArgument("real_time_factor", default_value="",
                              description="simulated s per wall s (0: as fast as possible); "
                                          "empty: the scenario's"),
        DeclareLaunchArgument("lockstep", default_value="",
                              description="true: advance one control period per command "
                                          "(paced to real_time_factor); empty: the "
                                          "scenario's, else true when the controller node "
                                          "runs"),
        DeclareLaunchArgument("path_length", default_value="3000",
                              description="poses kept in the ee_path and base_path trails; "
                                          "empty: the scenario's ee_path_length"),
        OpaqueFunction(function=_nodes),
    ])
