"""Hardware in the loop: a real arm's joint states drive the simulated vehicle.

    ros2 launch vm_dynamics hil.launch.py                       # satellite wheels, fake driver
    ros2 launch vm_dynamics hil.launch.py scenario:=spacecraft_arm fake_driver:=false \\
        measured_topic:=/arm/joint_states rate:=1000.0

Starts ``dynamics_node`` with ``joint_source: measured`` (it integrates only the vehicle's
reaction, LP-1 and the reconstruction equation, to the arm's measured motion),
robot_state_publisher (the robot as the node sees it, for RViz) and, unless
``fake_driver:=false``, ``fake_arm_driver`` replaying the scenario's ``prescribed`` path in
place of the real arm's driver.  Arguments: ``scenario`` (config/<name>.yaml or a YAML path),
``fake_driver``, ``measured_topic`` (the arm driver's sensor_msgs/JointState topic), ``rate``
(the driver's sample rate, Hz; the node steps once per sample, dt = 1/rate; default 250, which
the fake driver and the node hold under rclpy: at 1 kHz they fell behind), ``rviz``.  The node
publishes ``hil/vehicle_pose_command`` (for a motion platform), ``hil/base_reaction_wrench`` and
``hil/joint_efforts``; see the README, "Hardware in the loop".  Every node runs on the system
clock: the samples' stamps are the arm's time.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from launch import LaunchDescription
from vm_dynamics.nodes.launching import launch_scenario

PACKAGE = "vm_dynamics"


def _nodes(context):
    share = get_package_share_directory(PACKAGE)
    scenario = LaunchConfiguration("scenario").perform(context)
    try:      # the library's lookup and reader; the URDF the nodes take, and the URDF of
        # their model (vehicle spliced in)
        path, _, node_urdf, model_urdf = launch_scenario(scenario)
    except ValueError as exc:
        raise RuntimeError(f"scenario: {exc}") from None
    robot_description = ParameterValue(node_urdf, value_type=str)
    topic = LaunchConfiguration("measured_topic").perform(context)
    try:
        rate = float(LaunchConfiguration("rate").perform(context))
    except ValueError:
        raise RuntimeError("rate: expected a number of samples per second") from None
    if not rate > 0:
        raise RuntimeError(f"rate:={rate!r}: expected a positive sample rate")
    fake = LaunchConfiguration("fake_driver").perform(context) == "true"
    actions = [
        Node(package=PACKAGE, executable="dynamics_node", name="dynamics_node",
             output="screen",
             parameters=[path, {"robot_description": robot_description,
                                "joint_source": "measured", "measured.topic": topic,
                                "dt": 1.0 / rate}]),
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             name="robot_state_publisher", output="screen",
             parameters=[{"robot_description": ParameterValue(model_urdf, value_type=str),
                          "use_sim_time": False,
                          # TF for every state, also the heartbeats while the node holds
                          # (see sim.launch.py)
                          "ignore_timestamp": True}]),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="log",
             arguments=["-d", os.path.join(share, "rviz", "vm_dynamics.rviz")],
             parameters=[{"use_sim_time": False}],
             condition=IfCondition(LaunchConfiguration("rviz"))),
    ]
    if fake:
        actions.append(Node(package=PACKAGE, executable="fake_arm_driver",
                            name="fake_arm_driver", output="screen",
                            parameters=[path, {"robot_description": robot_description,
                                               "topic": topic, "rate": rate}]))
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scenario", default_value="satellite_wheels",
                              description="scenario name (config/<name>.yaml) or YAML path"),
        DeclareLaunchArgument("fake_driver", default_value="true", choices=["true", "false"],
                              description="replay the scenario's prescribed path in place of "
                                          "a real arm's driver"),
        DeclareLaunchArgument("measured_topic", default_value="/measured/joint_states",
                              description="the arm driver's sensor_msgs/JointState topic"),
        DeclareLaunchArgument("rate", default_value="250.0",
                              description="the driver's sample rate, Hz (node dt = 1/rate)"),
        DeclareLaunchArgument("rviz", default_value="true", choices=["true", "false"],
                              description="start RViz"),
        OpaqueFunction(function=_nodes),
    ])
