"""A vm_dynamics scenario driven by ros2_control's own controllers (docs/ros2_control.md).

    ros2 launch vm_dynamics ros2_control.launch.py                 # spacecraft_arm, JTC (effort)
    ros2 launch vm_dynamics ros2_control.launch.py controller:=forward_effort_controller rviz:=false
    ros2 launch vm_dynamics ros2_control.launch.py command_interface:=position   # JTC (position)

Starts the dynamics node (the clock source, in lockstep with the controller manager:
``controller_manager_sync``), robot_state_publisher with the scenario's URDF plus a generated
``<ros2_control>`` tag (``joint_state_topic_hardware_interface/JointStateTopicSystem`` on
``/joint_commands`` and ``/joint_states``, effort command interfaces, or position/velocity
for kinematically driven joints: :func:`vm_dynamics.nodes.ros2_control.ros2_control_tag`),
``ros2_control_node`` on
``use_sim_time`` with the controllers file, spawners for ``joint_state_broadcaster`` and
``controller``, and RViz.

Arguments: ``scenario`` (default spacecraft_arm), ``command_interface`` (empty: the
scenario's, effort unless it sets ``driven_joints``; position or velocity: every joint driven
by those commands), ``controllers`` (YAML; default config/ros2_control/<scenario>.yaml, with
``command_interface`` position or velocity <scenario>_<command_interface>.yaml),
``controller`` (joint_trajectory_controller or forward_effort_controller), ``update_rate``
(Hz, the manager's and the lockstep's period; must be a whole number of the scenario's
steps), ``real_time_factor`` (the dynamics node's pacing; 0: as fast as the loop runs),
``rviz``, ``state_barrier`` (default true: ``/clock`` waits until the hardware component's
node took the state, docs/ros2_control.md).

Then: ``ros2 action send_goal /joint_trajectory_controller/follow_joint_trajectory
control_msgs/action/FollowJointTrajectory ...``.
"""
import os

from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription
from vm_dynamics.config.params import read_params_file
from vm_dynamics.nodes.launching import (
    declare,
    robot_state_publisher,
    rviz,
    rviz_fixed_frame,
    share,
    string_parameter,
    vm_node,
)
from vm_dynamics.nodes.ros2_control import ros2_control_launch

CONTROLLERS = ("joint_trajectory_controller", "forward_effort_controller")
#: The spawner's wall-time timeouts (s): services, and the switch, which waits for /clock.
SPAWN_TIMEOUT_S = 900


def _nodes(context):
    scenario = LaunchConfiguration("scenario").perform(context)
    rate_text = LaunchConfiguration("update_rate").perform(context)
    try:
        update_rate = int(rate_text)
    except ValueError:
        raise RuntimeError(f"update_rate:={rate_text!r}: expected an integer (Hz)") from None
    interface = LaunchConfiguration("command_interface").perform(context)
    try:
        path, overrides, node_urdf, urdf = ros2_control_launch(scenario, update_rate, interface)
    except ValueError as exc:
        raise RuntimeError(str(exc)) from None
    suffix = f"_{interface}" if interface in ("position", "velocity") else ""
    controllers = LaunchConfiguration("controllers").perform(context) or share(
        "config", "ros2_control",
        f"{os.path.splitext(os.path.basename(scenario))[0]}{suffix}.yaml")
    if not os.path.isfile(controllers):
        raise RuntimeError(f"controllers:={controllers}: no such file (write the controllers "
                           "of this scenario, see config/ros2_control/spacecraft_arm.yaml)")
    controller = LaunchConfiguration("controller").perform(context)
    if controller not in CONTROLLERS:
        raise RuntimeError(f"controller:={controller}: expected one of {', '.join(CONTROLLERS)}")
    if controller == "forward_effort_controller" and any(
            k.startswith("driven_joints.") for k in overrides):
        raise RuntimeError(f"controller:={controller} needs effort command interfaces "
                           f"(command_interface:={interface})")
    rtf = LaunchConfiguration("real_time_factor").perform(context)
    if rtf:
        try:
            overrides["real_time_factor"] = float(rtf)
        except ValueError:
            raise RuntimeError(f"real_time_factor:={rtf!r}: expected a number") from None
    if LaunchConfiguration("state_barrier").perform(context) == "false":
        overrides["controller_manager_state_barrier"] = ""
    overrides["robot_description"] = string_parameter(node_urdf)
    cm = "/controller_manager"
    return [
        vm_node("dynamics_node", path, overrides),
        robot_state_publisher(urdf, use_sim_time=True),
        # use_sim_time as a global argument: the hardware component's own node (which stamps
        # the commands) must follow /clock too, and a parameters dict reaches only the named
        # node
        Node(package="controller_manager", executable="ros2_control_node",
             name="controller_manager", namespace="/", output="screen",
             parameters=[controllers, {"update_rate": update_rate}],
             ros_arguments=["-p", "use_sim_time:=true"]),
        # the switch waits for the manager's first update, i.e. for the dynamics node's
        # /clock (its start may take minutes on a loaded machine): wall-time timeouts to match
        Node(package="controller_manager", executable="spawner", output="screen",
             arguments=["joint_state_broadcaster", controller, "--controller-manager", cm,
                        "--controller-manager-timeout", str(SPAWN_TIMEOUT_S),
                        "--switch-timeout", str(SPAWN_TIMEOUT_S),
                        "--service-call-timeout", str(SPAWN_TIMEOUT_S)]),
        rviz(use_sim_time=True, fixed_frame=rviz_fixed_frame(read_params_file(path))),
    ]


def generate_launch_description():
    return LaunchDescription([
        declare("scenario"),
        DeclareLaunchArgument("command_interface", default_value="",
                              choices=["", "effort", "position", "velocity"],
                              description="every joint's command interface (position, "
                                          "velocity: kinematically driven joints); empty: "
                                          "the scenario's"),
        DeclareLaunchArgument("controllers", default_value="",
                              description="controllers YAML; empty: "
                                          "config/ros2_control/<scenario>.yaml"),
        DeclareLaunchArgument("controller", default_value="joint_trajectory_controller",
                              choices=list(CONTROLLERS),
                              description="the arm's controller, spawned with "
                                          "joint_state_broadcaster"),
        DeclareLaunchArgument("update_rate", default_value="100",
                              description="controller manager rate, Hz (= the lockstep period)"),
        DeclareLaunchArgument("real_time_factor", default_value="1.0",
                              description="simulated s per wall s at most (0: as fast as the "
                                          "loop runs); empty: the scenario's"),
        declare("rviz"),
        DeclareLaunchArgument("state_barrier", default_value="true",
                              choices=["true", "false"],
                              description="/clock waits until the hardware component took the "
                                          "state (false: the manager may read the state of the "
                                          "period before)"),
        OpaqueFunction(function=_nodes),
    ])
