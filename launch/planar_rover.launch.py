"""Scenario planar_rover (config/planar_rover.yaml): sim.launch.py with that scenario.

    ros2 launch vm_dynamics planar_rover.launch.py [controller:=NAME] [rviz:=false]
"""
from vm_dynamics.nodes.launching import scenario_launch_description


def generate_launch_description():
    return scenario_launch_description("planar_rover")
