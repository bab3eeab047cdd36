"""ament_python package + pip-installable library (``pip install .`` works without ROS).

``colcon build`` runs ``setup.py install`` (``develop`` with ``--symlink-install``); both then
compile the numba kernels of the copy just installed (:func:`compile_installed`), so that the
first ``ros2 run`` / ``ros2 launch`` loads them instead of compiling them for minutes.
"""
import os
import subprocess
import sys
from glob import glob

from setuptools import find_packages, setup
from setuptools.command.develop import develop
from setuptools.command.install import install

package_name = "vm_dynamics"

#: Skips (``0``), or restricts to some scenarios (``tumbling,uvms``), the compile after an
#: install; ``scripts/setup.sh`` honours it too.
COMPILE_VARIABLE = "VM_DYNAMICS_COMPILE"


def _files(pattern):
    return sorted(f for f in glob(pattern) if os.path.isfile(f))


def compile_installed(lib, share=None):
    """Compile the kernels of ``lib/vm_dynamics`` (``python -m vm_dynamics.app.compile
    --installed lib`` run by this interpreter, the one the installed executables' shebangs name,
    from ``lib``, so it imports that copy, not the sources) into numba's cache where that copy
    looks at run time: ``$NUMBA_CACHE_DIR`` if set, else next to its files.  ``share``: the
    installed data files (``config/`` with the scenarios), given to it as ``VM_DYNAMICS_SHARE``
    because the package is not yet on the ament index.  One line per scenario; never fails the
    install (a first start compiles what is missing, with a notice)."""
    choice = os.environ.get(COMPILE_VARIABLE, "1").strip()
    if choice == "0":
        print(f"vm_dynamics: {COMPILE_VARIABLE}=0: kernels not compiled; the first start "
              "compiles them (with a notice)", flush=True)
        return
    names = [] if choice in ("", "1") else choice.replace(",", " ").split()
    lib = os.path.abspath(lib)
    if not os.path.isdir(os.path.join(lib, package_name)):
        print(f"vm_dynamics: no package in {lib} to compile; the first start compiles the "
              "kernels (with a notice)", flush=True)
        return
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [lib] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    if share and os.path.isdir(os.path.join(share, "config")):
        env["VM_DYNAMICS_SHARE"] = os.path.abspath(share)
    print(f"vm_dynamics: compiling the numba kernels once, at install ({COMPILE_VARIABLE}=0 "
          "skips this) ...", flush=True)
    sys.stdout.flush()
    try:
        rc = subprocess.call([sys.executable, "-m", f"{package_name}.app.compile",
                              "--installed", lib, *names], cwd=lib, env=env)
    except OSError as exc:
        rc = f"{type(exc).__name__}: {exc}"
    if rc == 130:
        raise KeyboardInterrupt
    if rc != 0:
        print(f"vm_dynamics: not every kernel was compiled at install ({rc}); the first start "
              "compiles the rest (with a notice)", flush=True)


class InstallAndCompile(install):
    """``install``, then the compile, when installing for good: not when staging into
    ``--root`` (a wheel, ``pip install .``, or a distribution package being built)."""

    def run(self):
        super().run()
        if self.root is None and not self.dry_run:
            compile_installed(self.install_lib,
                              os.path.join(self.install_data, "share", package_name))


class DevelopAndCompile(develop):
    """``develop`` (``colcon build --symlink-install``), then the compile of the copy it links
    (``egg_path``: the build folder colcon puts on ``PYTHONPATH``).  ``pip install -e`` builds
    an editable wheel instead and does not run this."""

    def run(self):
        super().run()
        if not self.uninstall and not self.dry_run:
            compile_installed(self.egg_path)


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
    package_data={package_name: ["data/*", "py.typed", "ros/interfaces/*/*", "ros/interfaces/*/*/*"]},
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
    cmdclass={"install": InstallAndCompile, "develop": DevelopAndCompile},
    entry_points={
        "console_scripts": [
            "vm-sim = vm_dynamics.app.entry:vm_sim",
            "dynamics_node = vm_dynamics.app.entry:dynamics_node",
            "controller_node = vm_dynamics.app.entry:controller_node",
            "composed_nodes = vm_dynamics.app.entry:composed_nodes",
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
