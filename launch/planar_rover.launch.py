"""Scenario planar_rover (config/planar_rover.yaml): sim.launch.py with that scenario.

    ros2 launch vm_dynamics planar_rover.launch.py [controller:=NAME] [rviz:=false]
"""
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description():
    sim = PathJoinSubstitution([FindPackageShare("vm_dynamics"), "launch", "sim.launch.py"])
    return LaunchDescription([
        IncludeLaunchDescription(PythonLaunchDescriptionSource(sim),
                                 launch_arguments={"scenario": "planar_rover"}.items()),
    ])
