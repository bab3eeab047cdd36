"""Scenario uvms (config/uvms.yaml): sim.launch.py with that scenario.

    ros2 launch vm_dynamics uvms.launch.py [controller:=NAME] [rviz:=false]
"""
from vm_dynamics.nodes.launching import scenario_launch_description


def generate_launch_description():
    return scenario_launch_description("uvms")
