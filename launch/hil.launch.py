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
from launch.actions import DeclareLaunchArgument, OpaqueFunction

from launch import LaunchDescription
from vm_dynamics.nodes.launching import (
    argument,
    declare,
    robot_state_publisher,
    rviz,
    scenario_argument,
    string_parameter,
    vm_node,
)


def _nodes(context):
    # the library's lookup and reader; the URDF the nodes take, and the URDF of their model
    # (vehicle spliced in)
    path, _, node_urdf, model_urdf = scenario_argument(context)
    robot_description = string_parameter(node_urdf)
    topic = argument(context, "measured_topic")
    try:
        rate = float(argument(context, "rate"))
    except ValueError:
        raise RuntimeError("rate: expected a number of samples per second") from None
    if not rate > 0:
        raise RuntimeError(f"rate:={rate!r}: expected a positive sample rate")
    fake = argument(context, "fake_driver") == "true"
    # every node on the system clock: the samples' stamps are the arm's time
    actions = [
        vm_node("dynamics_node", path, {"robot_description": robot_description,
                                        "joint_source": "measured", "measured.topic": topic,
                                        "dt": 1.0 / rate}),
        robot_state_publisher(model_urdf, use_sim_time=False),
        rviz(use_sim_time=False),
    ]
    if fake:
        actions.append(vm_node("fake_arm_driver", path, {"robot_description": robot_description,
                                                         "topic": topic, "rate": rate}))
    return actions


def generate_launch_description():
    return LaunchDescription([
        declare("scenario", default="satellite_wheels"),
        DeclareLaunchArgument("fake_driver", default_value="true", choices=["true", "false"],
                              description="replay the scenario's prescribed path in place of "
                                          "a real arm's driver"),
        DeclareLaunchArgument("measured_topic", default_value="/measured/joint_states",
                              description="the arm driver's sensor_msgs/JointState topic"),
        DeclareLaunchArgument("rate", default_value="250.0",
                              description="the driver's sample rate, Hz (node dt = 1/rate)"),
        declare("rviz"),
        OpaqueFunction(function=_nodes),
    ])
