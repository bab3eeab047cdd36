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
= 60 s at the 50 Hz state rate, so the whole motion of a scenario stays visible),
``composed`` (``true``: dynamics_node and controller_node in one process, ``composed_nodes``,
on one executor, the samples between them handed over in the process -- same topics,
parameters and behaviour; on the DDS transport the lockstep at 1 kHz then costs about half
the CPU per period, see docs/performance.md; without a controller node it changes nothing).

The scenario YAML is the parameter file of both vm_dynamics nodes; the URDF it names (a
package:// URI, or a file next to the scenario, else in urdf/) is expanded with xacro once and
given as ``robot_description`` to both nodes, and the URDF of the model they build from it (with the scenario's vehicle
spliced in and locked joints fixed) to robot_state_publisher, so all three use the same robot.

A scenario with ``constraints: {type: diff_drive}`` (a vehicle that does not slip, paper 002 §4)
is run by diff_drive_node instead: this file then includes diff_drive.launch.py (``scenario``,
``rviz``, ``real_time_factor``, ``path_length``; it is driven by ``/cmd_vel``, no controller).
"""
from launch.actions import DeclareLaunchArgument, OpaqueFunction

from launch import LaunchDescription
from vm_dynamics.config.scenario import scenario_section
from vm_dynamics.nodes.launching import (
    argument,
    bool_argument,
    composed_node,
    declare,
    include,
    launch_lockstep,
    robot_state_publisher,
    rviz,
    rviz_fixed_frame,
    scenario_argument,
    string_parameter,
    vm_node,
)


def _constraint_type(scenario):
    """``constraints.type`` of the scenario (``None``: none, or no such scenario, which
    :func:`scenario_argument` then names)."""
    found = scenario_section(scenario, "constraints")
    return None if found is None else found[1].get("type")


def _constrained(context, scenario, kind):
    """diff_drive.launch.py for a differential drive; other constrained systems are vm-sim's."""
    if kind != "diff_drive":
        raise RuntimeError(f"scenario {scenario!r}: constraints.type {kind!r} has no ROS node "
                           "(run it with vm-sim); diff_drive scenarios run diff_drive_node")
    controller = argument(context, "controller")
    if controller not in ("", "none"):
        raise RuntimeError(f"controller:={controller}: a diff_drive scenario is driven by "
                           "/cmd_vel (geometry_msgs/Twist), without a controller node")
    args = {"scenario": scenario}
    for name in ("rviz", "real_time_factor", "path_length"):
        args[name] = argument(context, name)
    return [include("diff_drive.launch.py", args)]


def _nodes(context):
    scenario = argument(context, "scenario")
    kind = _constraint_type(scenario)
    if kind is not None:
        return _constrained(context, scenario, kind)
    # the URDF the nodes take (with the scenario's vehicle/locked_joints parameters) and the
    # URDF of the model they build, for robot_state_publisher and RViz
    path, params, node_urdf, model_urdf = scenario_argument(context)
    use_sim_time = bool_argument(context, "use_sim_time")

    overrides = {"robot_description": string_parameter(node_urdf)}
    rtf = argument(context, "real_time_factor")
    if rtf:
        overrides["real_time_factor"] = float(rtf)
    controller = argument(context, "controller")
    # a capture scenario without a controller: the controller node runs the capture mission
    has_controller = bool((params.get("controller") or {}).get("name")) or "capture" in params
    start_controller = controller != "none" and bool(controller or has_controller)
    try:
        overrides["lockstep"] = launch_lockstep(argument(context, "lockstep"), params,
                                                start_controller)
    except ValueError as exc:
        raise RuntimeError(str(exc)) from None

    dyn_overrides = dict(overrides)
    path_length = argument(context, "path_length")
    if path_length:
        try:
            dyn_overrides["ee_path_length"] = int(path_length)
        except ValueError:
            raise RuntimeError(f"path_length:={path_length!r}: expected an integer") from None
    actions = [robot_state_publisher(model_urdf, use_sim_time),
               rviz(use_sim_time, rviz_fixed_frame(params))]
    ctrl_overrides = dict(overrides, use_sim_time=use_sim_time)
    ctrl_overrides.pop("real_time_factor", None)
    if controller:
        ctrl_overrides["controller"] = controller
    if start_controller and bool_argument(context, "composed"):
        # one process: the URDF as a plain string in its parameter file
        plain = {"robot_description": node_urdf}
        actions.insert(0, composed_node(path, {
            "dynamics_node": dict(dyn_overrides, **plain),
            "controller_node": dict(ctrl_overrides, **plain)}))
        return actions
    actions.insert(0, vm_node("dynamics_node", path, dyn_overrides))
    if start_controller:
        actions.append(vm_node("controller_node", path, ctrl_overrides))
    return actions


def generate_launch_description():
    return LaunchDescription([
        declare("scenario"),
        DeclareLaunchArgument("controller", default_value="",
                              description="controller plug-in; empty: the scenario's; "
                                          "'none': no controller node"),
        declare("rviz"),
        declare("use_sim_time"),
        declare("real_time_factor",
                description="simulated s per wall s (0: as fast as possible); empty: the "
                            "scenario's"),
        DeclareLaunchArgument("lockstep", default_value="",
                              description="true: advance one control period per command "
                                          "(paced to real_time_factor); empty: the "
                                          "scenario's, else true when the controller node "
                                          "runs"),
        declare("path_length",
                description="poses kept in the ee_path and base_path trails; empty: the "
                            "scenario's ee_path_length"),
        declare("composed"),
        OpaqueFunction(function=_nodes),
    ])
