"""The shared helpers of the tests (test/support): the ROS domain set-up of the real-ROS tests
and the source walker of the layout tests, checked where ROS is not needed."""
from __future__ import annotations

import ast
import os

from ros_domain import ROS_DOMAIN_VARIABLES, ros_domain_env
from source_tree import PKG, ROOT, vm_imports


def test_ros_domain_env_is_a_loopback_domain_of_this_process(monkeypatch):
    env = ros_domain_env(monkeypatch, VM_DYNAMICS_TRANSPORT="rclpy")
    assert 150 <= int(env["ROS_DOMAIN_ID"]) < 230
    assert env["CYCLONEDDS_URI"].startswith("file://") and env["CYCLONEDDS_URI"].endswith(
        "test/cyclonedds-loopback.xml")
    assert os.path.isfile(env["CYCLONEDDS_URI"][len("file://"):])
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    for key in ROS_DOMAIN_VARIABLES + ("VM_DYNAMICS_TRANSPORT",):
        assert os.environ[key] == env[key]            # the probe node joins it too


def test_vm_imports_resolves_relative_and_aliased_imports():
    path = PKG / "nodes" / "robot.py"
    text = ("import vm_dynamics.core.lie as lie\nimport numpy as np\n"
            "from ..config.forces import model_forces\nfrom ..sim import engine as eng\n")
    got = {(i.module, i.name, i.local, i.sub and str(i.sub.relative_to(ROOT)))
           for i in vm_imports(path, ast.parse(text))}
    assert got == {("vm_dynamics.core.lie", None, "lie", "vm_dynamics/core/lie.py"),
                   ("vm_dynamics.config.forces", "model_forces", "model_forces", None),
                   ("vm_dynamics.sim", "engine", "eng", "vm_dynamics/sim/engine.py")}
