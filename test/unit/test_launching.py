"""Decisions of the launch files (vm_dynamics.nodes.launching) and the URDF they give
robot_state_publisher, without ROS."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from vm_dynamics.config.params import read_params_file
from vm_dynamics.model.mounting import kinematic_urdf
from vm_dynamics.nodes.launching import launch_lockstep
from vm_dynamics.nodes.robot import robot_descriptions

REPO = Path(__file__).resolve().parents[2]


def test_the_closed_loop_runs_in_lockstep_by_default_and_the_argument_wins():
    assert launch_lockstep("", {}, controller_started=True) is True
    assert launch_lockstep("", {}, controller_started=False) is False   # nothing would answer
    assert launch_lockstep("", {"lockstep": False}, controller_started=True) is False
    assert launch_lockstep("false", {"lockstep": True}, controller_started=True) is False
    assert launch_lockstep(" TRUE ", {}, controller_started=False) is True
    with pytest.raises(ValueError, match="lockstep:='yes'"):
        launch_lockstep("yes", {}, True)
    with pytest.raises(ValueError, match="scenario parameter lockstep"):
        launch_lockstep("", {"lockstep": "on"}, True)


@pytest.mark.parametrize("name", ["spacecraft_arm", "uvms", "planar_rover", "tumbling"])
def test_robot_state_publisher_gets_no_root_inertia_and_the_same_tree(name):
    params = read_params_file(REPO / "config" / f"{name}.yaml")
    node_urdf, rsp_urdf = robot_descriptions(params)
    full, kin = ET.fromstring(node_urdf), ET.fromstring(rsp_urdf)
    children = {j.find("child").get("link") for j in kin.findall("joint")}
    roots = [ln for ln in kin.findall("link") if ln.get("name") not in children]
    assert len(roots) == 1 and roots[0].find("inertial") is None
    # every other link keeps its inertia, every joint is unchanged
    assert ([ET.tostring(j) for j in full.findall("joint")]
            == [ET.tostring(j) for j in kin.findall("joint")])
    kept = {ln.get("name"): ln.find("inertial") is not None for ln in kin.findall("link")}
    had = {ln.get("name"): ln.find("inertial") is not None for ln in full.findall("link")}
    assert {k: v for k, v in had.items() if k != roots[0].get("name")} == \
        {k: v for k, v in kept.items() if k != roots[0].get("name")}


def test_kinematic_urdf_leaves_a_root_without_inertia_alone():
    xml = ('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>'
           '</inertial></link><joint name="j" type="fixed"><parent link="a"/>'
           '<child link="b"/></joint></robot>')
    assert kinematic_urdf(xml) == xml


def test_the_launch_files_read_scenarios_through_the_library(tmp_path):
    """launch_scenario (sim.launch.py, hil.launch.py) looks a scenario up and reads it as
    vm-sim does, and finds a user's URDF next to the user's scenario file (before: the launch
    files had their own lookup, and a relative URDF was looked up in the package's urdf/
    only)."""
    import shutil

    import yaml

    from vm_dynamics.nodes.launching import launch_scenario
    path, params, node_urdf, _ = launch_scenario("planar_rover")
    assert path == str(REPO / "config" / "planar_rover.yaml") and params["scenario"] == \
        "planar_rover" and "<robot" in node_urdf
    shutil.copy(REPO / "urdf" / "planar_rover.urdf", tmp_path / "my_rover.urdf")
    params["robot_description_file"] = "my_rover.urdf"
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"/**": {"ros__parameters": params}}))
    assert launch_scenario(str(mine))[2] == node_urdf
    with pytest.raises(ValueError, match="unknown scenario 'nope'; available: "):
        launch_scenario("nope")


def _mesh_names(urdf):
    return [m.get("filename") for m in ET.fromstring(urdf).iter("mesh")]


def test_robot_state_publisher_gets_mesh_uris_rviz_can_open(tmp_path, monkeypatch):
    """A robot whose meshes are in a package RViz cannot find (example-robot-data installed by
    pip, under cmeel.prefix) gets file:// URIs of the files the project's resolver finds; a
    package on the ament index keeps its package:// URIs (before: package:// always, and RViz
    drew nothing for a pip-installed package)."""
    from vm_dynamics.model.packages import resolve_resource
    params = read_params_file(REPO / "config" / "panda_on_bus.yaml")
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    if resolve_resource(params["robot_description_file"]) is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    _, rsp = robot_descriptions(params)
    names = _mesh_names(rsp)
    assert names and all(n.startswith("file:///") for n in names), names
    assert all(Path(n[len("file://"):]).is_file() for n in names)
    assert "package://" not in rsp
    # the same package registered on the ament index (as a ROS install of it would be)
    marker = tmp_path / "share" / "ament_index" / "resource_index" / "packages"
    marker.mkdir(parents=True)
    (marker / "example-robot-data").write_text("")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    _, rsp = robot_descriptions(params)
    names = _mesh_names(rsp)
    assert names and all(n.startswith("package://example-robot-data/") for n in names)


def test_relative_mesh_names_become_file_uris_next_to_the_urdf(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "body.stl").write_bytes(b"solid x\nendsolid x\n")
    (tmp_path / "r.urdf").write_text(
        '<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>'
        '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial><visual>'
        '<geometry><mesh filename="meshes/body.stl"/></geometry></visual><collision><geometry>'
        "<mesh filename='meshes/missing.stl'/></geometry></collision></link>"
        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
    _, rsp = robot_descriptions({"robot_description_file": str(tmp_path / "r.urdf")})
    assert _mesh_names(rsp) == [(tmp_path / "meshes" / "body.stl").resolve().as_uri(),
                                "meshes/missing.stl"]


def test_rviz_fixed_frame_is_the_root_of_the_published_tf():
    from vm_dynamics.nodes.launching import rviz_fixed_frame
    assert rviz_fixed_frame({}) == "odom"
    assert rviz_fixed_frame({"odom_frame": "world"}) == "world"
    assert rviz_fixed_frame({"world_frame": "inertial", "odom_frame": "map"}) == "map"
    assert rviz_fixed_frame({"world_frame": "lvlh"}) == "lvlh"      # in orbit: no odom frame


def test_scenario_section_finds_the_scenarios_with_their_own_runner(tmp_path):
    """config.scenario_section: vm-sim's dispatch and sim.launch.py find a capture or
    constraints section with it; no such section, or no readable scenario, is None."""
    from vm_dynamics.config.scenario import scenario_section
    path, section = scenario_section("capture_tumbling", "capture")
    assert path == REPO / "config" / "capture_tumbling.yaml" and "grasp" in section
    assert scenario_section("diff_drive", "constraints")[1]["type"] == "diff_drive"
    assert scenario_section("spacecraft_arm", "capture") is None
    assert scenario_section("no_such_scenario", "capture") is None
    odd = tmp_path / "odd.yaml"
    odd.write_text("constraints: diff_drive\n")          # not a mapping: not a section
    assert scenario_section(str(odd), "constraints") is None


def test_composed_parameter_file_gives_each_node_its_own_section(tmp_path):
    """``composed:=true``: one process, so each node's own parameters go in a section named
    after it (a ``/**`` section or ``-p`` would reach both); read back as each node's
    transport reads its overrides, a URDF string intact."""
    from vm_dynamics.nodes.launching import node_parameters_yaml
    from vm_dynamics.transport import ros_args as rargs
    urdf = '<robot name="r">\n  <link name="a: b"/>\n</robot>\n'
    path = tmp_path / "per_node.yaml"
    path.write_text(node_parameters_yaml({
        "dynamics_node": {"robot_description": urdf, "ee_path_length": 12, "lockstep": True},
        "controller_node": {"robot_description": urdf, "use_sim_time": True,
                            "controller": "pd_gravity"}}))
    ra = rargs.parse_ros_args(["prog", "--ros-args", "--params-file", str(path)])
    dyn = rargs.parameter_overrides_for(ra, "/dynamics_node")
    ctl = rargs.parameter_overrides_for(ra, "/controller_node")
    assert dyn == {"robot_description": urdf, "ee_path_length": 12, "lockstep": True}
    assert ctl == {"robot_description": urdf, "use_sim_time": True, "controller": "pd_gravity"}
