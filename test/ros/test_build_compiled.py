"""After ``colcon build`` the installed package's kernels are already compiled (setup.py's
install / develop command compiles them into numba's cache where the installed copy looks), so
its first start prints no compile notice and loads them.  Runs on the installed package of the
sourced workspace (``colcon test`` after ``colcon build``, with the build's ``NUMBA_CACHE_DIR``);
skipped where ROS 2 or the installed vm_dynamics is missing, or where the build was told not to
compile (``VM_DYNAMICS_COMPILE=0``).  Named to run before the other files here, which start
the installed nodes too."""
import os
import shutil
import subprocess

import pytest
from ros_domain import installed_share

COMPILE_NOTICE = "compiling dynamics kernels, first run only"


@pytest.fixture()
def ros2():
    if shutil.which("ros2") is None:
        pytest.skip("the ros2 command is not on PATH (source a ROS 2 installation)")
    if installed_share("vm_dynamics") is None:
        pytest.skip("vm_dynamics is not installed in the sourced workspace (colcon build, then "
                    "source install/setup.bash)")
    if os.environ.get("VM_DYNAMICS_COMPILE") == "0":
        pytest.skip("VM_DYNAMICS_COMPILE=0: the build did not compile the kernels")
    pytest.importorskip("numba", reason="numba is not installed: nothing is compiled")
    return shutil.which("ros2")


def test_first_start_after_the_build_loads_the_kernels(ros2, tmp_path):
    p = subprocess.run([ros2, "run", "vm_dynamics", "vm-sim", "spacecraft_arm", "--duration",
                        "0.02", "--no-plots", "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert COMPILE_NOTICE not in p.stdout + p.stderr, p.stderr[-3000:]
    assert "vm-sim: done" in p.stdout + p.stderr
