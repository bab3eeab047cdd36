"""Scenario spacecraft_arm (config/spacecraft_arm.yaml): sim.launch.py with that scenario.

    ros2 launch vm_dynamics spacecraft_arm.launch.py [controller:=NAME] [rviz:=false]
"""
from vm_dynamics.nodes.launching import scenario_launch_description


def generate_launch_description():
    return scenario_launch_description("spacecraft_arm")
