"""Install and first run: ``scripts/setup.sh`` shows pip's progress one line per package (no
``-q``, no progress bars) and compiles the kernels after installing (``vm-sim --compile``), so
the first run loads them instead of compiling them; ``vm-sim --compile`` reports per scenario.
(How long the first run takes after setup is measured in bench/first_run.py, not here.)"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Stands in for the venv's python (records its arguments; prints what pip prints).
FAKE_PYTHON = """#!/usr/bin/env bash
echo "python $*" >> "$(dirname "$0")/calls"
echo "Looking in indexes: https://pypi.org/simple"
echo "Collecting numpy>=1.21"
echo "  Downloading numpy-2.0.0-cp311-manylinux.whl (19.5 MB)"
echo "     |################################| 19.5 MB 10 MB/s"
echo "Requirement already satisfied: PyYAML>=5.4 in ./site-packages"
echo "Collecting numba>=0.58"
echo "Installing collected packages: numpy, numba"
echo "Successfully installed numba-0.60.0 numpy-2.0.0"
"""
FAKE_VM_SIM = """#!/usr/bin/env bash
echo "vm-sim $*" >> "$(dirname "$0")/calls"
echo "vm_dynamics: compiling kernels [1/1] spacecraft_arm: 1.0 s"
"""


@pytest.fixture
def checkout(tmp_path):
    """A copy of scripts/setup.sh in a checkout whose .venv is the fakes above."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    bin_ = tmp_path / ".venv" / "bin"
    bin_.mkdir(parents=True)
    for name, text in (("python", FAKE_PYTHON), ("vm-sim", FAKE_VM_SIM)):
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)
    return tmp_path


def test_setup_shows_one_line_per_package_and_compiles_the_kernels(checkout):
    p = subprocess.run(["bash", str(checkout / "scripts" / "setup.sh"), "sim,fast"],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert p.returncode == 0, p.stdout + p.stderr
    calls = (checkout / ".venv" / "bin" / "calls").read_text().splitlines()
    pip = [c for c in calls if c.startswith("python -m pip install")]
    assert pip and all("--progress-bar off" in c and " -q" not in c for c in pip), calls
    assert "vm-sim --compile" in calls
    assert calls.index("vm-sim --compile") > calls.index(pip[-1])     # after installing
    out = p.stdout.splitlines()
    assert "Collecting numpy>=1.21" in out and "Collecting numba>=0.58" in out
    assert not [ln for ln in out if "Downloading" in ln or "|###" in ln or "already" in ln]
    assert "vm_dynamics: compiling kernels [1/1] spacecraft_arm: 1.0 s" in out
    assert "Downloading numpy" in (checkout / ".venv" / "pip.log").read_text()


def test_setup_can_leave_the_compile_to_the_first_run(checkout):
    env = dict(os.environ, VM_DYNAMICS_COMPILE="0")
    p = subprocess.run(["bash", str(checkout / "scripts" / "setup.sh")], capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    assert not [c for c in (checkout / ".venv" / "bin" / "calls").read_text().splitlines()
                if c.startswith("vm-sim")]


def test_vm_sim_compile_reports_each_scenario(tmp_path):
    """With the kernels already cached (the test session's warm-up) this takes seconds; from
    an empty cache it compiles them."""
    p = subprocess.run([sys.executable, "-m", "vm_dynamics.app.compile", "tumbling",
                        "planar_rover", "no_such_scenario"], capture_output=True, text=True,
                       timeout=900, cwd=tmp_path)
    lines = p.stdout.splitlines()
    assert p.returncode == 0, p.stdout + p.stderr
    assert any(ln.startswith("vm_dynamics: compiling kernels [1/3] tumbling: ") for ln in lines)
    assert any(ln.startswith("vm_dynamics: compiling kernels [2/3] planar_rover: ") for ln in lines)
    assert any(ln.startswith("vm_dynamics: compiling kernels [3/3] no_such_scenario: skipped (")
               for ln in lines), lines
    assert lines[-1].startswith("vm_dynamics: kernels ready for 2 of 3 scenarios")
    assert not (tmp_path / "out").exists()
    q = subprocess.run([sys.executable, "-m", "vm_dynamics.app.cli", "--compile",
                        "no_such_scenario"], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert q.returncode == 1 and "skipped" in q.stdout, q.stdout + q.stderr


def test_ctrl_c_stops_the_compile(monkeypatch, capsys):
    from vm_dynamics.app import cli
    from vm_dynamics.app import compile as comp
    from vm_dynamics.dynamics import fast
    if not fast.numba_available():
        pytest.skip("needs numba")
    calls = []

    def interrupted(argv):
        calls.append(argv[0])
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "main", interrupted)
    assert comp.main(["tumbling", "uvms"]) == 130
    assert calls == ["tumbling"]
    assert "interrupted at tumbling" in capsys.readouterr().out
