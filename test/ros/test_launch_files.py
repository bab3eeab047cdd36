"""Launch files, parameter YAML and the RViz config validated without ROS.

The launch files are executed against a small strict stand-in for exactly the parts of
``launch``/``launch_ros``/``ament_index_python`` they use (constructor signatures as in ROS 2
Jazzy's launch 3.4 / launch_ros 0.26: keyword-only arguments where the real API has them,
unknown keywords rejected), which records the actions.  The recorded description is then
checked: every executable exists (console_scripts of setup.py resolving to a callable, or a
ROS package in package.xml), every file exists (parameter files, RViz config, the xacro input,
which must expand to a URDF the model loader accepts), every parameter is declared by the node
that receives it with the right type (the same resolution the DDS transport applies), and every
topic named by the RViz config or subscribed by a node is published by a launched node with
the same type.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import runpy
import shlex
import sys
import types
from pathlib import Path

import pytest
import yaml

from vm_dynamics.config.params import flatten, parameter_defaults, read_params_file
from vm_dynamics.nodes import controller_node, diff_drive_node, dynamics_node, fake_arm_driver
from vm_dynamics.nodes.controller_core import controller_parameter_defaults
from vm_dynamics.nodes.parameters import DYNAMICS_PARAMETERS
from vm_dynamics.ros import messages as rm
from vm_dynamics.transport import ros_args as rargs

REPO = Path(__file__).resolve().parents[2]
LAUNCH = REPO / "launch"
#: scenario files of the dynamics node; those with a ``constraints`` section (rolling ball,
#: differential drive) are vm-sim's and diff_drive_node's (test/oracle/test_rolling_scenarios.py),
#: those with a ``capture`` section vm-sim's (test/process/test_capture_cli.py)
SCENARIOS = sorted(p.stem for p in (REPO / "config").glob("*.yaml")
                   if not {"constraints", "capture"} & set(read_params_file(p)))

#: executables of other ROS packages the launch files may start, with the parameters they
#: declare and the topics they publish/subscribe (robot_state_publisher README, rviz2)
ROS_EXECUTABLES = {
    ("robot_state_publisher", "robot_state_publisher"): {
        "params": {"robot_description": "", "publish_frequency": 20.0, "ignore_timestamp": False,
                   "frame_prefix": ""},
        "pub": {"/robot_description": "std_msgs/msg/String", "/tf": rm.TF_MESSAGE,
                "/tf_static": rm.TF_MESSAGE},
        "sub": {"/joint_states": rm.JOINT_STATE}},
    ("rviz2", "rviz2"): {"params": {}, "pub": {}, "sub": {}},
}


# ------------------------------------------------------------------ strict launch stand-in
class Subst:
    """Base of the fake substitutions: ``perform(context) -> str``."""

    def perform(self, context):  # pragma: no cover - overridden
        raise NotImplementedError


def perform(value, context):
    if isinstance(value, str):
        return value
    if isinstance(value, Subst):
        return value.perform(context)
    if isinstance(value, (list, tuple)):
        return "".join(perform(v, context) for v in value)
    raise TypeError(f"not a substitution: {value!r}")


class LaunchConfiguration(Subst):
    def __init__(self, variable_name, *, default=None):
        self.name, self.default = variable_name, default

    def perform(self, context):
        if self.name in context.configs:
            return context.configs[self.name]
        if self.default is not None:
            return perform(self.default, context)
        raise KeyError(f"launch configuration {self.name!r} is not declared")


class Command(Subst):
    def __init__(self, command, *, on_stderr="fail"):
        self.command, self.on_stderr = command, on_stderr

    def perform(self, context):
        argv = shlex.split(perform(self.command, context))
        context.commands.append(argv)
        if argv[0] != "xacro" or len(argv) != 2:
            raise AssertionError(f"unexpected command {argv}")
        from vm_dynamics.model.urdf import read_urdf_source
        return read_urdf_source(argv[1])[0]


class PathJoinSubstitution(Subst):
    def __init__(self, substitutions):
        self.parts = list(substitutions)

    def perform(self, context):
        return str(Path(*[perform(p, context) for p in self.parts]))


class FindPackageShare(Subst):
    def __init__(self, package):
        self.package = package

    def perform(self, context):
        return get_package_share_directory(perform(self.package, context))


def get_package_share_directory(package):
    if package == "vm_dynamics":
        return str(REPO)            # the source tree has the installed share/ layout
    raise LookupError(f"package {package!r} not found (only vm_dynamics is resolvable here)")


class ParameterValue:
    def __init__(self, value, *, value_type=None):
        self.value, self.value_type = value, value_type

    def evaluate(self, context):
        text = perform(self.value, context)
        if self.value_type is str:
            return text
        return yaml.safe_load(text)


class IfCondition:
    def __init__(self, predicate_expression):
        self.expr = predicate_expression

    def evaluate(self, context):
        value = perform(self.expr, context).strip().lower()
        if value not in ("true", "false", "1", "0"):
            raise AssertionError(f"IfCondition: {value!r} is not a boolean expression")
        return value in ("true", "1")


class UnlessCondition(IfCondition):
    def evaluate(self, context):
        return not super().evaluate(context)


class Action:
    def __init__(self, *, condition=None):
        self.condition = condition


class DeclareLaunchArgument(Action):
    def __init__(self, name, *, default_value=None, description=None, choices=None, **kwargs):
        super().__init__(**kwargs)
        if choices is not None and default_value is not None and default_value not in choices:
            raise AssertionError(f"argument {name}: default {default_value!r} not in {choices}")
        self.name, self.default_value, self.choices = name, default_value, choices
        self.description = description


class OpaqueFunction(Action):
    def __init__(self, *, function, args=None, kwargs=None, **left_over_kwargs):
        super().__init__(**left_over_kwargs)
        if not callable(function):
            raise TypeError("OpaqueFunction expected a callable")
        self.function, self.args, self.kwargs = function, args or [], kwargs or {}


class PythonLaunchDescriptionSource:
    def __init__(self, launch_file_path):
        self.path = launch_file_path


class IncludeLaunchDescription(Action):
    def __init__(self, launch_description_source, *, launch_arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.source = launch_description_source
        self.launch_arguments = list(launch_arguments or [])


_EXECUTE_PROCESS_KWARGS = {"name", "cwd", "env", "additional_env", "shell", "sigterm_timeout",
                           "sigkill_timeout", "emulate_tty", "output", "output_format",
                           "cached_output", "log_cmd", "on_exit", "respawn", "respawn_delay",
                           "respawn_max_retries", "prefix", "condition"}


class Node(Action):
    def __init__(self, *, executable, package=None, name=None, namespace=None, exec_name=None,
                 parameters=None, remappings=None, ros_arguments=None, arguments=None,
                 **kwargs):
        unknown = set(kwargs) - _EXECUTE_PROCESS_KWARGS
        if unknown:
            raise TypeError(f"Node: unexpected keyword arguments {sorted(unknown)}")
        super().__init__(condition=kwargs.get("condition"))
        if kwargs.get("output", "log") not in ("screen", "log", "both", "own_log"):
            raise AssertionError(f"Node output {kwargs['output']!r}")
        self.package, self.executable, self.name = package, executable, name
        self.parameters = list(parameters or [])
        self.remappings = list(remappings or [])
        self.arguments = list(arguments or [])


class LaunchDescription:
    def __init__(self, initial_entities=None):
        self.entities = list(initial_entities or [])


def fake_modules():
    mods = {}

    def mod(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        mods[name] = m
        return m
    mod("launch", LaunchDescription=LaunchDescription)
    mod("launch.actions", DeclareLaunchArgument=DeclareLaunchArgument,
        OpaqueFunction=OpaqueFunction, IncludeLaunchDescription=IncludeLaunchDescription)
    mod("launch.conditions", IfCondition=IfCondition, UnlessCondition=UnlessCondition)
    mod("launch.substitutions", LaunchConfiguration=LaunchConfiguration, Command=Command,
        PathJoinSubstitution=PathJoinSubstitution)
    mod("launch.launch_description_sources",
        PythonLaunchDescriptionSource=PythonLaunchDescriptionSource)
    mod("launch_ros")
    mod("launch_ros.actions", Node=Node)
    mod("launch_ros.parameter_descriptions", ParameterValue=ParameterValue)
    mod("launch_ros.substitutions", FindPackageShare=FindPackageShare)
    mod("ament_index_python")
    mod("ament_index_python.packages", get_package_share_directory=get_package_share_directory)
    return mods


class Context:
    def __init__(self, configs):
        self.configs = dict(configs)
        self.commands = []
        self.declared = {}


def run_launch(path, arguments=None, context=None):
    """Execute a launch file; return (started Nodes with resolved parameters, context)."""
    context = context or Context(arguments or {})
    ld = runpy.run_path(str(path))["generate_launch_description"]()
    assert isinstance(ld, LaunchDescription)
    nodes = []

    def visit(entities):
        for e in entities:
            if e.condition is not None and not e.condition.evaluate(context):
                continue
            if isinstance(e, DeclareLaunchArgument):
                context.declared[e.name] = e
                if e.name not in context.configs:
                    assert e.default_value is not None, f"argument {e.name} needs a value"
                    context.configs[e.name] = perform(e.default_value, context)
                if e.choices is not None:
                    assert context.configs[e.name] in e.choices, (e.name, context.configs)
            elif isinstance(e, OpaqueFunction):
                visit(e.function(context, *e.args, **e.kwargs) or [])
            elif isinstance(e, IncludeLaunchDescription):
                assert isinstance(e.source, PythonLaunchDescriptionSource)
                inner = Path(perform(e.source.path, context))
                assert inner.is_file(), inner
                args = {perform(k, context): perform(v, context) for k, v in e.launch_arguments}
                sub = Context({**context.configs, **args})
                inner_nodes, sub = run_launch(inner, context=sub)
                context.commands += sub.commands
                for k, v in sub.configs.items():     # bookkeeping for the checks below
                    context.configs.setdefault(k, v)
                nodes.extend(inner_nodes)
            elif isinstance(e, Node):
                nodes.append(e)
            else:
                raise AssertionError(f"unexpected launch entity {e!r}")
    visit(ld.entities)
    return nodes, context


@pytest.fixture(autouse=True)
def _fake_launch(monkeypatch):
    for name, module in fake_modules().items():
        monkeypatch.setitem(sys.modules, name, module)


# ------------------------------------------------------------------ the package's declarations
def console_scripts():
    """``{name: 'module:function'}`` from setup.py's entry_points (parsed, not executed)."""
    tree = ast.parse((REPO / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "console_scripts":
                    out = {}
                    for item in ast.literal_eval(v):
                        name, _, target = item.partition("=")
                        out[name.strip()] = target.strip()
                    return out
    raise AssertionError("setup.py has no console_scripts")


def _interface_exists(mtype):
    """A ROS interface type exists: as a rosidl class where ROS is installed, else in the
    rosbags Jazzy typestore (the .msg files of common_interfaces)."""
    pkg, sub, name = mtype.split("/")
    try:
        return hasattr(importlib.import_module(f"{pkg}.{sub}"), name)
    except ImportError:
        pass
    try:
        return mtype in rm.TYPESTORE.types
    except ImportError:
        pytest.skip("neither the ROS interface packages nor rosbags are installed")


def exec_depends():
    import xml.etree.ElementTree as ET
    root = ET.parse(REPO / "package.xml").getroot()
    return {e.text for tag in ("exec_depend", "depend") for e in root.iter(tag)}


def node_interface(node):
    """(declared parameter defaults, published {topic: type}, subscribed {topic: type})."""
    if node.package == "vm_dynamics" and node.executable == "dynamics_node":
        pub = {"/" + t.lstrip("/"): mt for t, mt, _ in {
            **dynamics_node.PUBLICATIONS, **dynamics_node.NODE_PUBLICATIONS}.values()}
        sub = {"/" + t: mt for t, mt in dynamics_node.SUBSCRIPTIONS.items()}
        return dynamics_node.node_parameter_defaults(), pub, sub
    if node.package == "vm_dynamics" and node.executable == "diff_drive_node":
        pub = {"/" + t.lstrip("/"): mt for t, mt in diff_drive_node.PUBLICATIONS.items()}
        sub = {"/" + t: mt for t, mt in diff_drive_node.SUBSCRIPTIONS.items()}
        return parameter_defaults(diff_drive_node.NODE_PARAMETERS), pub, sub
    if node.package == "vm_dynamics" and node.executable == "fake_arm_driver":
        params = parameter_defaults(fake_arm_driver.parameter_table())
        return params, {"/" + params["topic"].lstrip("/"): rm.JOINT_STATE}, {}
    if node.package == "vm_dynamics" and node.executable == "controller_node":
        pub = {"/" + t: mt for t, mt, _ in controller_node.PUBLICATIONS.values()}
        sub = {("/" + t.lstrip("/") if not t.startswith("~") else
                f"/controller_node{t[1:]}"): mt
               for t, (mt, _) in controller_node.SUBSCRIPTIONS.items()}
        return None, pub, sub     # parameters depend on the overrides (see check_parameters)
    spec = ROS_EXECUTABLES[(node.package, node.executable)]
    return spec["params"], spec["pub"], spec["sub"]


def resolved_parameters(node, context):
    """The node's parameter overrides as launch_ros builds them: parameter files, then the
    dicts (launch_ros writes each dict to a temporary file), in the given order."""
    ra = rargs.parse_ros_args(["node", "--ros-args"] + [
        a for item in node.parameters if isinstance(item, (str, Path))
        for a in ("--params-file", str(item))])
    for item in node.parameters:
        if isinstance(item, (str, Path)):
            assert Path(item).is_file(), f"parameter file {item} missing"
    table = list(ra.overrides)
    for item in node.parameters:
        if isinstance(item, dict):
            values = []
            for key, value in item.items():
                if isinstance(value, ParameterValue):
                    value = value.evaluate(context)
                elif isinstance(value, Subst):
                    value = yaml.safe_load(value.perform(context))
                values.append((key, value))
            table.append((f"/{node.name}", tuple(values)))
    return dataclasses.replace(ra, overrides=tuple(table))


def check_parameters(node, context):
    """Every override is declared by the node with the same type; returns the values."""
    defaults, _, _ = node_interface(node)
    ra = resolved_parameters(node, context)
    fqn = f"/{node.name}"
    overrides = rargs.parameter_overrides_for(ra, fqn)
    dict_keys = {k for item in node.parameters if isinstance(item, dict) for k in item}
    if defaults is None:
        defaults = controller_parameter_defaults(overrides)
    declared = set(flatten(defaults)) | {"use_sim_time"}
    for key in dict_keys:
        assert key in declared, f"{node.executable}: launch passes undeclared parameter {key!r}"
    resolved = rargs.resolve_parameters(defaults, ra, fqn)   # raises on a type mismatch
    return resolved


# vm-sim-only keys of scenario files (not node parameters)
SIM_ONLY = ("scenario", "description", "duration", "input.", "prescribed.",
            "compare_euler_model")


# ------------------------------------------------------------------ tests
def test_console_scripts_resolve_to_callables():
    scripts = console_scripts()
    for name in ("dynamics_node", "controller_node", "fake_arm_driver", "vm-foxglove"):
        module, _, func = scripts[name].partition(":")
        assert callable(getattr(importlib.import_module(module), func)), name


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_yaml_is_a_parameter_file_for_both_nodes(scenario):
    path = REPO / "config" / f"{scenario}.yaml"
    params = flatten(read_params_file(path))
    ra = rargs.parse_ros_args(["x", "--ros-args", "--params-file", str(path)])
    dyn = rargs.resolve_parameters(dynamics_node.node_parameter_defaults(
        rargs.parameter_overrides_for(ra, "/dynamics_node")), ra, "/dynamics_node")
    consumed = set(dyn.overridden)
    if "controller.name" in params:
        ctl_defaults = controller_parameter_defaults(rargs.parameter_overrides_for(
            ra, "/controller_node"))
        ctl = rargs.resolve_parameters(ctl_defaults, ra, "/controller_node")
        consumed |= set(ctl.overridden)
    unused = [k for k in params if k not in consumed and not k.startswith(SIM_ONLY)]
    assert not unused, f"{scenario}.yaml: keys no node declares: {unused}"


def test_sim_launch_default_scenario_starts_the_four_nodes():
    nodes, ctx = run_launch(LAUNCH / "sim.launch.py")
    assert [(n.package, n.executable) for n in nodes] == [
        ("vm_dynamics", "dynamics_node"), ("robot_state_publisher", "robot_state_publisher"),
        ("rviz2", "rviz2"), ("vm_dynamics", "controller_node")]
    assert set(ctx.declared) == {"scenario", "controller", "rviz", "use_sim_time",
                                 "real_time_factor", "lockstep", "path_length", "composed"}
    dyn = nodes[0]
    assert {"ee_path_length": 3000} in [p for p in dyn.parameters if isinstance(p, dict)] \
        or any(isinstance(p, dict) and p.get("ee_path_length") == 3000 for p in dyn.parameters)


@pytest.mark.parametrize("launch_file", sorted(p.name for p in LAUNCH.glob("*.launch.py")
                                                if p.name not in ("hil.launch.py",
                                                                  "diff_drive.launch.py",
                                                                  "capture.launch.py",
                                                                  "ros2_control.launch.py")))
@pytest.mark.parametrize("args", [{}, {"rviz": "false", "controller": "pd_gravity",
                                       "lockstep": "true", "real_time_factor": "0.5"},
                                  {"controller": "none", "use_sim_time": "false"}])
def test_launch_file_names_only_existing_things(launch_file, args):
    _check_launch(launch_file, args)


@pytest.mark.parametrize("args", [{}, {"controller": "pd_gravity", "real_time_factor": "0.5",
                                       "use_sim_time": "false", "path_length": "40"}])
def test_composed_launch_gives_each_node_the_parameters_of_its_own_process(args):
    """composed:=true: one composed_nodes process (no launch name: it would rename both
    nodes) whose parameter files give each node exactly what it gets as a process of its
    own."""
    two, ctx2 = run_launch(LAUNCH / "sim.launch.py", args)
    one, ctx1 = run_launch(LAUNCH / "sim.launch.py", dict(args, composed="true"))
    assert [(n.package, n.executable) for n in one] == [
        ("vm_dynamics", "composed_nodes"), ("robot_state_publisher", "robot_state_publisher"),
        ("rviz2", "rviz2")]
    assert getattr(one[0], "name", None) is None
    assert "composed_nodes" in console_scripts()
    files = [str(p) for p in one[0].parameters]
    assert all(Path(p).is_file() for p in files)
    ra = rargs.parse_ros_args(["composed_nodes", "--ros-args"]
                              + [a for p in files for a in ("--params-file", p)])
    for node in two:
        if node.package != "vm_dynamics":
            continue
        fqn = f"/{node.executable}"
        alone = check_parameters(node, ctx2)
        defaults, _, _ = node_interface(node)
        overrides = rargs.parameter_overrides_for(ra, fqn)
        if defaults is None:
            defaults = controller_parameter_defaults(overrides)
        composed = rargs.resolve_parameters(defaults, ra, fqn)
        assert composed.values == alone.values, node.executable


def test_ros2_control_launch_gives_the_manager_the_tag_and_the_node_its_lockstep():
    """ros2_control.launch.py (its other packages' executables are checked by the real launch,
    test/ros/test_ros2_control_real.py): the dynamics node in lockstep with the controller
    manager at update_rate, robot_state_publisher with the URDF and its <ros2_control> tag,
    the manager with the controllers file of the scenario, the spawners."""
    import xml.etree.ElementTree as ET
    nodes, ctx = run_launch(LAUNCH / "ros2_control.launch.py",
                            {"rviz": "false", "update_rate": "200"})
    by_exe = {n.executable: n for n in nodes}
    assert [(n.package, n.executable) for n in nodes] == [
        ("vm_dynamics", "dynamics_node"), ("robot_state_publisher", "robot_state_publisher"),
        ("controller_manager", "ros2_control_node"), ("controller_manager", "spawner")]
    dyn = check_parameters(by_exe["dynamics_node"], ctx).values
    assert (dyn["lockstep"], dyn["controller_manager_sync"], dyn["control_rate"],
            dyn["lockstep_wrench"]) == (True, True, 200.0, False)
    assert dyn["controller_manager_state_barrier"] == "/vm_dynamics/list_parameters"
    off, ctx_off = run_launch(LAUNCH / "ros2_control.launch.py",
                              {"rviz": "false", "state_barrier": "false"})
    assert check_parameters(off[0], ctx_off).values["controller_manager_state_barrier"] == ""
    rsp = rargs.parameter_overrides_for(resolved_parameters(by_exe["robot_state_publisher"],
                                                            ctx), "/robot_state_publisher")
    tag = ET.fromstring(rsp["robot_description"]).find("ros2_control")
    joints = read_params_file(REPO / "config" / "spacecraft_arm.yaml")["joints"]
    assert [j.get("name") for j in tag.findall("joint")] == joints
    cm = by_exe["ros2_control_node"]
    controllers = next(Path(p) for p in cm.parameters if isinstance(p, str))
    assert controllers == REPO / "config" / "ros2_control" / "spacecraft_arm.yaml"
    cfg = yaml.safe_load(controllers.read_text())
    assert cfg["joint_trajectory_controller"]["ros__parameters"]["joints"] == joints
    assert {"update_rate": 200} in cm.parameters
    assert by_exe["spawner"].arguments[:2] == ["joint_state_broadcaster",
                                               "joint_trajectory_controller"]
    with pytest.raises(RuntimeError, match="update_rate 300 Hz with dt=0.001"):
        run_launch(LAUNCH / "ros2_control.launch.py", {"rviz": "false", "update_rate": "300"})


@pytest.mark.parametrize("interface", ["position", "velocity"])
def test_ros2_control_launch_with_driven_command_interfaces(interface):
    """command_interface:=position|velocity: every joint driven by those commands (the node's
    driven_joints.<interface>), those command interfaces in the tag, the controllers of
    config/ros2_control/spacecraft_arm_<interface>.yaml (joint_trajectory_controller on that
    interface; on velocity alone its PID adapter, whose gains must feed the trajectory's
    velocity forward and make the loop of a velocity-driven joint contract,
    e_k+1 = (1 - p T) e_k: 0 < p T < 2); an effort-only controller is refused."""
    import xml.etree.ElementTree as ET
    nodes, ctx = run_launch(LAUNCH / "ros2_control.launch.py",
                            {"rviz": "false", "command_interface": interface})
    by_exe = {n.executable: n for n in nodes}
    joints = read_params_file(REPO / "config" / "spacecraft_arm.yaml")["joints"]
    dyn = check_parameters(by_exe["dynamics_node"], ctx).values
    assert dyn[f"driven_joints.{interface}"] == joints
    rsp = rargs.parameter_overrides_for(resolved_parameters(by_exe["robot_state_publisher"],
                                                            ctx), "/robot_state_publisher")
    tag = ET.fromstring(rsp["robot_description"]).find("ros2_control")
    assert [c.get("name") for c in tag.iter("command_interface")] == [interface] * len(joints)
    cm = by_exe["ros2_control_node"]
    controllers = next(Path(p) for p in cm.parameters if isinstance(p, str))
    assert controllers == REPO / "config" / "ros2_control" / f"spacecraft_arm_{interface}.yaml"
    cfg = yaml.safe_load(controllers.read_text())["joint_trajectory_controller"]
    jtc = cfg["ros__parameters"]
    assert jtc["joints"] == joints and jtc["command_interfaces"] == [interface]
    if interface == "velocity":
        assert jtc["state_interfaces"] == ["position", "velocity"]   # the adapter needs both
        rate = next(p["update_rate"] for p in cm.parameters if isinstance(p, dict))
        for joint in joints:
            gains = jtc["gains"][joint]
            assert gains["ff_velocity_scale"] == 1.0, (joint, gains)
            assert 0.0 < gains["p"] / rate < 2.0, (joint, gains)
    with pytest.raises(RuntimeError, match="forward_effort_controller needs effort command"):
        run_launch(LAUNCH / "ros2_control.launch.py",
                   {"rviz": "false", "command_interface": interface,
                    "controller": "forward_effort_controller"})


def test_sim_launch_of_an_arm_mounted_on_a_vehicle():
    """panda_on_bus: a package:// URDF with a vehicle spliced in by the scenario; the nodes
    get the Panda's URDF and robot_state_publisher the URDF with the bus (odom → bus → arm).
    example-robot-data has no rosdep key: without it (a ROS install with the rosdep keys
    only) the test is skipped, saying how to get it."""
    from vm_dynamics.model.urdf import resolve_package_path
    try:
        resolve_package_path("package://example-robot-data/robots/panda_description/urdf/"
                             "panda.urdf")
    except ValueError as exc:
        pytest.skip(f"panda_on_bus needs example-robot-data (no rosdep key; pip install "
                    f"example-robot-data, or its share/ on ROS_PACKAGE_PATH): {exc}")
    _check_launch("sim.launch.py", {"scenario": "panda_on_bus"})


def _check_launch(launch_file, args):
    nodes, ctx = run_launch(LAUNCH / launch_file, args)
    scripts, depends = console_scripts(), exec_depends()
    published, subscribed = {}, {}
    for node in nodes:
        # executables
        if node.package == "vm_dynamics":
            assert node.executable in scripts, node.executable
        else:
            assert (node.package, node.executable) in ROS_EXECUTABLES
            assert node.package in depends, f"package.xml lacks exec_depend {node.package}"
        # files named in arguments (rviz -d)
        for i, a in enumerate(node.arguments):
            if a == "-d":
                rviz = Path(node.arguments[i + 1])
                assert rviz.is_file() and rviz.parent.name == "rviz"
        # parameters
        resolved = check_parameters(node, ctx)
        if node.executable == "controller_node":
            assert resolved.values["use_sim_time"] is (args.get("use_sim_time") != "false")
            if args.get("controller") == "pd_gravity":
                assert resolved.values["controller"] == "pd_gravity"
        if node.executable == "dynamics_node":
            assert "use_sim_time" not in {k for d in node.parameters if isinstance(d, dict)
                                          for k in d}      # the clock source runs on wall time
            if "lockstep" in args:
                assert resolved.values["lockstep"] is True
                assert resolved.values["real_time_factor"] == 0.5
        _, pub, sub = node_interface(node)
        published.update(pub)
        subscribed.update(sub)
    names = [n.executable for n in nodes]
    assert names.count("dynamics_node") == 1 and "robot_state_publisher" in names
    assert ("rviz2" in names) == (args.get("rviz", "true") == "true")
    scenario = ctx.configs["scenario"]
    has_ctrl = "controller.name" in flatten(read_params_file(REPO / "config" /
                                                             f"{scenario}.yaml"))
    expect_ctrl = args.get("controller") != "none" and (has_ctrl or bool(args.get("controller")))
    assert ("controller_node" in names) == expect_ctrl
    # the nodes get the scenario's URDF (they mount its vehicle themselves); robot_state_publisher
    # gets the URDF of the model they build without the root link's inertia (KDL rejects it),
    # which loads into the same joints, frames and mass beyond the root
    from vm_dynamics.config.scenario import load_scenario
    from vm_dynamics.nodes.robot import robot_descriptions
    params = read_params_file(REPO / "config" / f"{scenario}.yaml")
    node_urdf, model_urdf = robot_descriptions(params)
    by_exe = {n.executable: n for n in nodes}
    assert check_parameters(by_exe["dynamics_node"], ctx).values["robot_description"] == node_urdf
    rsp = resolved_parameters(by_exe["robot_state_publisher"], ctx)
    rsp_urdf = rargs.parameter_overrides_for(rsp, "/robot_state_publisher")["robot_description"]
    assert rsp_urdf == model_urdf
    # TF for every joint state, also for the paused heartbeats, whose stamps advance by
    # nanoseconds only: a TF listener started during a pause gets the arm's frames
    # (test_sim_launch_real.py checks it with the real robot_state_publisher)
    assert rargs.parameter_overrides_for(rsp, "/robot_state_publisher")["ignore_timestamp"] \
        is True
    scn = load_scenario(scenario)
    from vm_dynamics import load_model
    rsp_model = load_model(rsp_urdf, base=scn.model.base_type, gravity=scn.model.gravity)
    assert rsp_model.joint_names == scn.model.joint_names
    import xml.etree.ElementTree as ET
    assert rsp_model.frame_names == scn.model.frame_names
    root = ET.fromstring(scn.robot_description).find(
        f"link[@name='{scn.model.vehicle_link}']/inertial/mass")
    root_mass = float(root.get("value")) if root is not None else 0.0
    assert abs(rsp_model.total_mass + root_mass - scn.model.total_mass) \
        <= 1e-9 * scn.model.total_mass
    # topics: everything subscribed is published by a launched node with the same type
    for topic, mtype in subscribed.items():
        if topic.startswith("/controller_node/"):
            continue                                   # references: from the user
        if topic in ("/effort_controller/commands", "/joint_commands", "/base_wrench") \
                and not expect_ctrl:
            continue                                   # open loop: nobody commands
        if topic in ("/measured/joint_states", "/measured/wrench"):
            continue                                   # hardware in the loop (measured_*)
        assert published.get(topic) == mtype, (topic, mtype, published.get(topic))
    for topic, mtype in published.items():
        assert _interface_exists(mtype), mtype


@pytest.mark.parametrize("args", [{}, {"scenario": "spacecraft_arm", "fake_driver": "false",
                                       "measured_topic": "/arm/joint_states", "rate": "500.0",
                                       "rviz": "false"}])
def test_hil_launch_wires_the_driver_to_the_measured_node(args):
    nodes, ctx = run_launch(LAUNCH / "hil.launch.py", args)
    names = [n.executable for n in nodes]
    assert names[:2] == ["dynamics_node", "robot_state_publisher"]
    assert ("fake_arm_driver" in names) == (args.get("fake_driver", "true") == "true")
    assert ("rviz2" in names) == (args.get("rviz", "true") == "true")
    topic = args.get("measured_topic", "/measured/joint_states")
    published = {}
    for node in nodes:
        resolved = check_parameters(node, ctx)
        if node.executable == "dynamics_node":
            assert resolved.values["joint_source"] == "measured"
            assert resolved.values["measured.topic"] == topic
            assert resolved.values["dt"] == pytest.approx(1.0 / float(args.get("rate", 250.0)))
        if node.executable == "fake_arm_driver":
            assert resolved.values["topic"] == topic
        if node.executable == "robot_state_publisher":    # TF also while the node holds
            assert resolved.values["ignore_timestamp"] is True
        _, pub, _ = node_interface(node)
        published.update(pub)
    if "fake_arm_driver" in names:
        assert published.get(topic) == rm.JOINT_STATE
    # the scenario's joints and its prescribed path are what the driver would replay
    scenario = ctx.configs["scenario"]
    params = flatten(read_params_file(REPO / "config" / f"{scenario}.yaml"))
    if "fake_arm_driver" in names:
        assert params.get("prescribed.type")


@pytest.mark.parametrize("launch_file, args", [
    ("diff_drive.launch.py", {}),
    ("diff_drive.launch.py", {"scenario": "diff_drive", "rviz": "false",
                              "real_time_factor": "0.5", "path_length": "100"}),
    ("sim.launch.py", {"scenario": "diff_drive_arm"}),
    ("sim.launch.py", {"scenario": "diff_drive", "controller": "none", "rviz": "false"})])
def test_diff_drive_launch_starts_the_constrained_node_with_its_robot(launch_file, args):
    """A diff_drive scenario (constraints section): diff_drive_node + robot_state_publisher
    (+ RViz), every parameter declared, every subscribed topic (joint_states for
    robot_state_publisher) published with its type, the RViz config's topics published, the
    scenario's joints in the URDF robot_state_publisher gets, sim time from the node's /clock."""
    from vm_dynamics.nodes.diff_drive_node import load_diff_drive
    nodes, ctx = run_launch(LAUNCH / launch_file, args)
    names = [n.executable for n in nodes]
    rviz = args.get("rviz", "true") == "true"
    assert names == ["diff_drive_node", "robot_state_publisher"] + ["rviz2"] * rviz
    published, subscribed = {}, {}
    for node in nodes:
        resolved = check_parameters(node, ctx)
        if node.executable != "diff_drive_node":
            assert resolved.values["use_sim_time"] is True
        _, pub, sub = node_interface(node)
        published.update(pub)
        subscribed.update(sub)
    assert "diff_drive_node" in console_scripts()
    for topic, mtype in subscribed.items():
        if topic != "/cmd_vel":                              # from the user (teleop, nav2)
            assert published.get(topic) == mtype, (topic, mtype, published.get(topic))
    assert published["/clock"] == rm.CLOCK
    cfg = yaml.safe_load((REPO / "rviz" / "vm_dynamics.rviz").read_text())
    for display in cfg["Visualization Manager"]["Displays"]:
        topic = (display.get("Topic") or display.get("Description Topic") or {}).get("Value")
        assert not topic or topic in published, topic
    dd = check_parameters(nodes[0], ctx).values
    scenario = args.get("scenario", "diff_drive_arm")
    assert Path(dd["scenario"]) == (REPO / "config" / f"{scenario}.yaml").resolve()
    assert dd["real_time_factor"] == float(args.get("real_time_factor", 1.0))
    assert dd["path_length"] == int(args.get("path_length", 3000))
    rsp = resolved_parameters(nodes[1], ctx)
    urdf = rargs.parameter_overrides_for(rsp, "/robot_state_publisher")["robot_description"]
    from vm_dynamics import load_model
    scn = load_diff_drive(scenario)
    assert load_model(urdf, base="SE2").joint_names == scn.joint_names


def test_sim_launch_names_what_a_constrained_scenario_cannot_do():
    with pytest.raises(RuntimeError, match="'rolling_ball': constraints.type 'rolling_ball' "
                       "has no ROS node"):
        run_launch(LAUNCH / "sim.launch.py", {"scenario": "rolling_ball"})
    with pytest.raises(RuntimeError, match="controller:=pd_gravity: a diff_drive scenario"):
        run_launch(LAUNCH / "sim.launch.py", {"scenario": "diff_drive",
                                              "controller": "pd_gravity"})


def test_rviz_config_topics_are_published_and_frames_exist():
    nodes, ctx = run_launch(LAUNCH / "sim.launch.py")
    published = {}
    for node in nodes:
        published.update(node_interface(node)[1])
    cfg = yaml.safe_load((REPO / "rviz" / "vm_dynamics.rviz").read_text())
    vm = cfg["Visualization Manager"]
    assert vm["Global Options"]["Fixed Frame"] == DYNAMICS_PARAMETERS["odom_frame"][0]
    wanted = {"rviz_default_plugins/RobotModel": "std_msgs/msg/String",
              "rviz_default_plugins/Odometry": rm.ODOMETRY,
              "rviz_default_plugins/Path": "nav_msgs/msg/Path",
              "rviz_default_plugins/TF": None}
    seen = set()
    for display in vm["Displays"]:
        cls = display["Class"]
        seen.add(cls)
        topic = (display.get("Topic") or display.get("Description Topic") or {}).get("Value")
        if topic:
            assert topic in published, f"{cls} shows {topic}, which no launched node publishes"
            assert published[topic] == wanted[cls]
    assert set(wanted) <= seen
    robot = next(d for d in vm["Displays"] if d["Class"].endswith("RobotModel"))
    assert robot["Description Topic"]["Durability Policy"] == "Transient Local"


def test_capture_launch_runs_the_target_with_its_rviz_config():
    """capture.launch.py: sim.launch.py's dynamics node, robot_state_publisher and the
    controller node running the capture mission (no controller selected: the core's law is the
    capture's), both in lockstep, on the capture scenario; RViz with rviz/capture.rviz, whose
    topics -- the chaser's and the target's -- the launched nodes publish with those types.
    ``controller:=none``: no controller node."""
    from vm_dynamics.nodes.capture import CAPTURE_PUBLICATIONS
    from vm_dynamics.nodes.controller_core import ControllerCore
    nodes, ctx = run_launch(LAUNCH / "capture.launch.py")
    assert [(n.package, n.executable) for n in nodes] == [
        ("vm_dynamics", "dynamics_node"), ("robot_state_publisher", "robot_state_publisher"),
        ("vm_dynamics", "controller_node"), ("rviz2", "rviz2")]
    ctrl = nodes[2]
    ra = resolved_parameters(ctrl, ctx)
    overrides = rargs.parameter_overrides_for(ra, "/controller_node")
    assert overrides["lockstep"] is True and not overrides.get("controller")
    core = ControllerCore.from_params(overrides)
    assert core.controller_name == "capture" and core.capture.command_time == 13.0
    assert rargs.parameter_overrides_for(resolved_parameters(nodes[0], ctx),
                                         "/dynamics_node")["lockstep"] is True
    rviz = nodes[-1]
    config = Path(rviz.arguments[rviz.arguments.index("-d") + 1])
    assert config.name == "capture.rviz" and config.is_file()
    assert ctx.configs["scenario"] == "capture_tumbling"
    dyn = nodes[0]
    ra = resolved_parameters(dyn, ctx)
    overrides = rargs.parameter_overrides_for(ra, "/dynamics_node")
    declared = dynamics_node.node_parameter_defaults(overrides)
    assert any(k.startswith("capture.target.") for k in declared)   # the node reads them
    published = {"/" + t: mt for t, mt, _ in CAPTURE_PUBLICATIONS.values()}
    for node in nodes:
        published.update(node_interface(node)[1])
    cfg = yaml.safe_load(config.read_text())
    topics = set()
    for display in cfg["Visualization Manager"]["Displays"]:
        topic = (display.get("Topic") or display.get("Description Topic") or {}).get("Value")
        if topic:
            assert topic in published, f"{display['Class']} shows {topic}, not published"
            topics.add(topic)
    assert {"/target/marker", "/target/odom", "/contact_wrench"} <= topics
    nodes, _ = run_launch(LAUNCH / "capture.launch.py", {"rviz": "false"})
    assert [n.executable for n in nodes] == ["dynamics_node", "robot_state_publisher",
                                             "controller_node"]
    nodes, _ = run_launch(LAUNCH / "capture.launch.py", {"rviz": "false", "controller": "none"})
    assert [n.executable for n in nodes] == ["dynamics_node", "robot_state_publisher"]
    with pytest.raises(RuntimeError, match="'spacecraft_arm' has no capture section"):
        run_launch(LAUNCH / "capture.launch.py", {"scenario": "spacecraft_arm"})


def test_setup_installs_launch_rviz_config_and_urdf():
    text = (REPO / "setup.py").read_text()
    for pattern in ('"launch/*.launch.py"', '"rviz/*.rviz"', '"config/*.yaml"', '"urdf/*"'):
        assert pattern in text, pattern


# ---------------------------------------------------------------- package.xml is exact

#: Python module -> rosdep key (REP-145 / rosdistro python.yaml names)
_ROSDEP_OF_MODULE = {"numpy": "python3-numpy", "yaml": "python3-yaml", "xacro": "xacro",
                     "scipy": "python3-scipy", "matplotlib": "python3-matplotlib",
                     "mpl_toolkits": "python3-matplotlib", "tqdm": "python3-tqdm",
                     "rclpy": "rclpy", "rcl_interfaces": "rcl_interfaces", "launch": "launch",
                     "launch_ros": "launch_ros", "ament_index_python": "ament_index_python",
                     "numba": "python3-numba",     # rosdistro rosdep/python.yaml has the key
                     # numba's code generator, which compiled-code extensions write to
                     # (dynamics/fast/kernels/objects.py); python3-numba depends on it
                     "llvmlite": "python3-numba"}
#: imported only by features outside the ROS nodes, from pip extras with a one-line hint:
#: DDS transport/recording ([dds]), Foxglove bridge and browser viewer ([viz]), Dask ([campaign])
_PIP_ONLY = {"rosbags", "cyclonedds", "foxglove", "viser", "trimesh", "mcap", "distributed",
             "imageio_ffmpeg", "PIL"}
#: executables/tools the launch files need, beyond their imports
_LAUNCH_RUNS = {"robot_state_publisher", "rviz2", "ros2launch"}


def _imported_top_modules(paths):
    out = set()
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                out.add(node.module.split(".")[0])
    return out - set(sys.stdlib_module_names) - {"vm_dynamics", "__future__"}


def _interface_packages(paths):
    """ROS interface packages named by type strings (pkg/msg/T, pkg/srv/T) in the code that
    runs under rclpy (the rosidl classes are imported by name)."""
    import re
    pat = re.compile(r"^([a-z][a-z0-9_]*)/(msg|srv)/[A-Z]\w*$")
    out = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                m = pat.match(node.value)
                if m:
                    out.add(m.group(1))
    return out


def test_package_xml_lists_exactly_what_the_package_needs_with_rosdep_keys():
    code = [p for p in (REPO / "vm_dynamics").rglob("*.py")]
    modules = _imported_top_modules(code + list(LAUNCH.glob("*.py")))
    unknown = modules - set(_ROSDEP_OF_MODULE) - _PIP_ONLY
    assert not unknown, f"imports without a known rosdep key: {sorted(unknown)}"
    node_code = [p for p in code if p.parent.name in ("nodes", "transport")
                 and p.name not in ("dds.py", "foxglove_bridge.py")] \
        + [REPO / "vm_dynamics" / "ros" / name for name in ("messages.py", "msgtypes.py")]
    interfaces = _interface_packages(node_code)
    assert {"sensor_msgs", "std_srvs", "rosgraph_msgs"} <= interfaces
    expected = ({_ROSDEP_OF_MODULE[m] for m in modules if m in _ROSDEP_OF_MODULE}
                | interfaces | _LAUNCH_RUNS)
    assert exec_depends() == expected, (
        f"missing: {sorted(expected - exec_depends())}, "
        f"unused: {sorted(exec_depends() - expected)}")
    import xml.etree.ElementTree as ET
    root = ET.parse(REPO / "package.xml").getroot()
    listed = [e.text for e in root.iter() if e.tag.endswith("depend")]
    assert not set(listed) & _PIP_ONLY and len(listed) == len(set(listed))


def test_ros_tests_need_no_pinocchio():
    """``colcon test`` on a ROS install has only what rosdep installs: the ROS tests (and the
    shared conftest) must run without the Pinocchio oracle."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['pinocchio'] = None; import pytest; "
            "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', "
            "'test/ros/test_launch_files.py', '-k', 'not need_no_pinocchio']))")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
