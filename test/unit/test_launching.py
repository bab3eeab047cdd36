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
