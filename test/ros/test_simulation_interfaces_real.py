"""simulation_interfaces on real ROS 2: ``scripts/simulation_interfaces_check.py`` with an rclpy
client (rosidl types of the installed simulation_interfaces package, rclpy's ActionClient)
against the dynamics node on rclpy and on vm_dynamics' DDS transport (the wire compatibility
of the project's copies, services and action).  Skipped where rclpy or simulation_interfaces
is not installed; CI runs the same checks with the DDS client
(test/process/test_simulation_interfaces_dds.py)."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from processes import stop_processes
from ros_domain import ros_domain_env

pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed")
pytest.importorskip("simulation_interfaces", reason="simulation_interfaces is not installed")

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("transport", ["rclpy", "dds"])
def test_check_script_passes_every_listed_feature(monkeypatch, tmp_path, transport):
    if transport == "dds" and importlib.util.find_spec("cyclonedds") is None:
        pytest.skip("cyclonedds (Python) is not installed: no DDS transport")
    env = ros_domain_env(monkeypatch, VM_DYNAMICS_TRANSPORT=transport)
    log_path = tmp_path / "dyn.log"
    log = open(log_path, "w")
    node = subprocess.Popen(
        [sys.executable, "-m", "vm_dynamics.nodes.dynamics_node", "--ros-args",
         "--params-file", str(REPO / "config" / "planar_rover.yaml"),
         "-p", "dynamics_backend:=lp"],
        env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        # the first start in an install tree compiles kernels: a generous wait for the
        # services, not a speed
        out = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "simulation_interfaces_check.py"),
             "--transport", "rclpy", "--timeout", "300"],
            env=env, cwd=REPO, capture_output=True, text=True, timeout=1200)
        text = out.stdout + out.stderr + log_path.read_text()
        assert out.returncode == 0, text
        lines = out.stdout.splitlines()
        assert "STEP_SIMULATION_ACTION" in lines[0] and "ENTITY_STATE_SETTING" in lines[0], text
        assert not [ln for ln in lines[1:-1] if not ln.startswith("OK ")], text
        assert node.poll() is None, text
    finally:
        stop_processes([node], [log])


def test_the_project_copies_are_the_installed_definitions():
    """The copies the DDS transport speaks are the installed package's files, byte for byte
    (when the installed package is the copied version)."""
    from ament_index_python.packages import get_package_share_directory

    from vm_dynamics.ros import simulation_interfaces_defs as defs
    share = Path(get_package_share_directory("simulation_interfaces"))
    version = (share / "package.xml").read_text().split("<version>")[1].split("<")[0]
    if version != defs.VERSION:
        pytest.skip(f"installed simulation_interfaces {version}, copies {defs.VERSION}")
    copies = {**defs.messages(), **defs.services(), **defs.actions()}
    assert len(copies) == 18
    for rostype, text in copies.items():
        _, kind, name = rostype.split("/")
        assert (share / kind / f"{name}.{kind}").read_text() == text, rostype
