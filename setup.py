"""ament_python package + pip-installable library (``pip install .`` works without ROS)."""
import os
from glob import glob

from setuptools import find_packages, setup

package_name = "vm_dynamics"


def _files(pattern):
    return sorted(f for f in glob(pattern) if os.path.isfile(f))


setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", _files("launch/*.launch.py")),
        ("share/" + package_name + "/config", _files("config/*.yaml") + _files("config/*.xml")),
        ("share/" + package_name + "/config/dispersions", _files("config/dispersions/*.yaml")),
        ("share/" + package_name + "/config/ros2_control", _files("config/ros2_control/*.yaml")),
        ("share/" + package_name + "/urdf", _files("urdf/*")),
        ("share/" + package_name + "/rviz", _files("rviz/*.rviz")),
    ],
    package_data={package_name: ["data/*", "py.typed"]},
    include_package_data=True,
    python_requires=">=3.10",
    install_requires=["numpy>=1.21", "scipy>=1.8", "PyYAML>=5.4", "xacro>=2.0"],
    extras_require={
        "sim": ["matplotlib>=3.5", "tqdm>=4.60", "rosbags>=0.10"],
        "dds": ["cyclonedds>=11,<12", "rosbags>=0.10"],
        # the browser viewer (vm-view, vm-sim --view/--video) and the Foxglove bridge
        "viz": ["foxglove-sdk>=0.10", "viser>=1.0", "mcap>=1.1", "matplotlib>=3.5",
                "imageio-ffmpeg>=0.5", "rosbags>=0.10", "pycollada>=0.8"],
        "fast": ["numba>=0.58"],
        # Monte Carlo campaigns on a Dask cluster (vm-campaign --cluster / --backend dask)
        "campaign": ["dask[distributed]>=2023.1", "tqdm>=4.60", "matplotlib>=3.5"],
        "test": ["pytest>=7", "hypothesis>=6.80", "import-linter>=2.0", "ruff>=0.6", "pin>=3",
                 "example-robot-data>=4", "sympy>=1.10", "mcap>=1.1", "mujoco>=3",
                 "colcon-common-extensions>=0.3", "mcap-ros2-support>=0.5", "selenium>=4.10"],
    },
    zip_safe=True,
    maintainer="vm_dynamics maintainers",
    maintainer_email="maintainers@users.noreply.a-seed-092a831c.example",
    description="Singularity-free Lagrange-Poincare dynamics of vehicle-manipulator systems",
    license="BSD-3-Clause",
    entry_points={
        "console_scripts": [
            "vm-sim = vm_dynamics.app.entry:vm_sim",
            "dynamics_node = vm_dynamics.app.entry:dynamics_node",
            "controller_node = vm_dynamics.app.entry:controller_node",
            "fake_arm_driver = vm_dynamics.app.entry:fake_arm_driver",
            "diff_drive_node = vm_dynamics.app.entry:diff_drive_node",
            "vm-foxglove = vm_dynamics.app.entry:vm_foxglove",
            "vm-view = vm_dynamics.app.entry:vm_view",
            "vm-send = vm_dynamics.app.entry:vm_send",
            "vm-campaign = vm_dynamics.app.entry:vm_campaign",
        ],
        "vm_dynamics.controllers": [
            "computed_torque = vm_dynamics.control.computed_torque:ComputedTorqueController",
            "pd_gravity = vm_dynamics.control.pd_gravity:PDGravityController",
            "task_space = vm_dynamics.control.task_space:TaskSpaceController",
        ],
    },
)
