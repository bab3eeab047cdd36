"""A plain install (no extras): ``vm-sim`` says in one line what to install instead of crashing
with ``ModuleNotFoundError: No module named 'rosbags'``, and leaves no empty ``out/`` behind;
what needs no recording (``--list``, ``--help``) still works."""
import subprocess
import sys

import pytest

#: The console script pip writes for vm-sim, run with rosbags made unimportable (as if the
#: package were installed without its extras).
SCRIPT = """import sys
sys.modules["rosbags"] = None
from vm_dynamics.app.entry import vm_sim
if __name__ == "__main__":
    sys.exit(vm_sim())
"""


@pytest.fixture
def vm_sim_without_rosbags(tmp_path):
    script = tmp_path / "bin" / "vm-sim"
    script.parent.mkdir()
    script.write_text(SCRIPT)

    def run(*argv):
        return subprocess.run([sys.executable, str(script), *argv], capture_output=True,
                              text=True, timeout=300, cwd=tmp_path)
    return run


def test_a_run_without_rosbags_is_a_one_line_install_hint(vm_sim_without_rosbags, tmp_path):
    p = vm_sim_without_rosbags("tumbling", "--duration", "0.01", "--no-plots")
    assert p.returncode == 2, p.stderr
    assert p.stderr.splitlines() == [
        "vm-sim: error: rosbags is not installed; vm-sim records its runs with it "
        "(trajectory.mcap). Install it with: pip install 'vm_dynamics[sim]'"]
    assert not (tmp_path / "out").exists()


def test_list_needs_no_rosbags(vm_sim_without_rosbags):
    p = vm_sim_without_rosbags("--list")
    assert p.returncode == 0, p.stderr
    assert "tumbling" in p.stdout
