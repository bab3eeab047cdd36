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
from launch.actions import DeclareLaunchArgument, OpaqueFunction

from launch import LaunchDescription
from vm_dynamics.nodes.launching import (
    argument,
    bool_argument,
    declare,
    include,
    rviz,
    rviz_fixed_frame,
    scenario_argument,
)

#: sim.launch.py's arguments, passed on (rviz is started here, with the capture config)
PASSED = ("scenario", "controller", "use_sim_time", "real_time_factor", "lockstep",
          "path_length", "composed")


def _actions(context):
    _, params, _, _ = scenario_argument(context)
    if "capture" not in params:
        raise RuntimeError(f"scenario {argument(context, 'scenario')!r} has no capture section "
                           f"(a target): use sim.launch.py")
    use_sim_time = bool_argument(context, "use_sim_time")
    # read before the include: its arguments (rviz:=false for sim.launch.py's own RViz) are
    # set in this launch's configurations too
    start_rviz = bool_argument(context, "rviz")
    args = {name: argument(context, name) for name in PASSED}
    args["rviz"] = "false"
    actions = [include("sim.launch.py", args)]
    if start_rviz:
        actions.append(rviz(use_sim_time, rviz_fixed_frame(params), config="capture.rviz",
                            when_argument=False))
    return actions


def generate_launch_description():
    return LaunchDescription([
        declare("scenario", default="capture_tumbling",
                description="capture scenario name (config/<name>.yaml) or YAML path"),
        DeclareLaunchArgument("controller", default_value="",
                              description="controller plug-in; empty: the capture mission; "
                                          "'none': no controller node"),
        declare("rviz", description="start RViz (rviz/capture.rviz)"),
        declare("use_sim_time"),
        declare("real_time_factor"),
        DeclareLaunchArgument("lockstep", default_value="",
                              description="as sim.launch.py"),
        declare("path_length"),
        declare("composed"),
        OpaqueFunction(function=_actions),
    ])
