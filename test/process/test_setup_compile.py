"""Install and first run: ``scripts/setup.sh`` shows pip's progress one line per package (no
``-q``, no progress bars) and compiles the kernels after installing (``vm-sim --compile``), so
the first run loads them instead of compiling them; ``vm-sim --compile`` reports per scenario.
``colcon build`` runs ``setup.py install`` (``develop`` with ``--symlink-install``) with the
arguments below; setup.py's command classes then compile the kernels of the installed copy, so
that its first start loads them too.  (How long the first run takes after setup is measured in
bench/first_run.py, not here.)"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Stands in for the venv's python (records its arguments; prints what pip prints).
FAKE_PYTHON = """#!/usr/bin/env bash
echo "python $* [VM_DYNAMICS_COMPILE=${VM_DYNAMICS_COMPILE-unset}]" >> "$(dirname "$0")/calls"
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
    # pip's build of the package does not compile too (setup.sh compiles once, afterwards)
    assert all(c.endswith("[VM_DYNAMICS_COMPILE=0]") for c in pip), pip


def test_setup_compiles_the_scenarios_named_in_the_variable(checkout):
    env = dict(os.environ, VM_DYNAMICS_COMPILE="tumbling,uvms")
    p = subprocess.run(["bash", str(checkout / "scripts" / "setup.sh")], capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    calls = (checkout / ".venv" / "bin" / "calls").read_text().splitlines()
    assert "vm-sim --compile tumbling uvms" in calls, calls


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


COMPILE_NOTICE = "compiling dynamics kernels, first run only"
#: The package's files colcon links into its build folder for ``--symlink-install``.
SYMLINKED = ("setup.py", "setup.cfg", "package.xml", "resource", "vm_dynamics", "config", "urdf",
             "launch", "rviz")


def _env(**values):
    """This environment without PYTHONPATH (the tests' own copy of the package must not be the
    one the install compiles) and without NUMBA_CACHE_DIR (the cache then lies next to the
    installed files, where it can be looked at), plus ``values``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR")}
    env.update(values)
    return env


def _colcon_install(tmp_path, env, *extra):
    """``setup.py install`` with the arguments colcon's ament_python build passes (its build
    folder and the prefix in ``tmp_path``); returns the completed process and the installed
    package's lib folder."""
    build, prefix = tmp_path / "build", tmp_path / "install"
    build.mkdir()
    cmd = [sys.executable, "-W", "ignore", "setup.py", "egg_info", "--egg-base", str(build),
           "build", "--build-base", str(build / "build"), "install", "--prefix", str(prefix),
           "--record", str(build / "install.log"), "--single-version-externally-managed",
           *extra, "install_data"]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1500, env=env)
    v = sys.version_info
    return p, prefix / "lib" / f"python{v.major}.{v.minor}" / "site-packages"


def _cache_files(folder):
    return sorted(folder.rglob("*.nbi"))


def test_colcon_install_compiles_the_installed_copy_for_its_first_start(tmp_path):
    """The one full compile this file makes (one scenario, from an empty cache: a minute or
    more): then the installed vm-sim starts without compiling."""
    pytest.importorskip("numba")
    p, lib = _colcon_install(tmp_path, _env(VM_DYNAMICS_COMPILE="tumbling"))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    out = p.stdout.splitlines()
    package = lib / "vm_dynamics"
    assert f"vm_dynamics: kernels of {package} (numba's cache: __pycache__ next to {package})" \
        in out, out[-20:]
    assert any(ln.startswith("vm_dynamics: compiling kernels [1/1] tumbling: ") for ln in out), \
        out[-20:]
    assert any(ln.startswith("vm_dynamics: kernels ready for 1 of 1 scenarios") for ln in out)
    assert _cache_files(package)
    # the installed executable (its shebang is this interpreter) loads them: no compile notice
    script = tmp_path / "install" / "lib" / "vm_dynamics" / "vm-sim"
    assert script.read_text().startswith(f"#!{sys.executable}")
    run = subprocess.run([str(script), "tumbling", "--duration", "0.02", "--no-plots", "--quiet",
                          "--out", str(tmp_path / "out")], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path, env=_env(PYTHONPATH=str(lib)))
    assert run.returncode == 0, run.stdout + run.stderr
    assert COMPILE_NOTICE not in run.stdout + run.stderr


def test_colcon_install_skips_the_compile_when_asked(tmp_path):
    p, lib = _colcon_install(tmp_path, _env(VM_DYNAMICS_COMPILE="0"))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "vm_dynamics: VM_DYNAMICS_COMPILE=0: kernels not compiled; the first start " \
        "compiles them (with a notice)" in p.stdout.splitlines()
    assert "kernels of" not in p.stdout
    assert (lib / "vm_dynamics" / "app" / "compile.py").is_file()
    assert not _cache_files(lib)


def test_colcon_install_without_numba_succeeds_and_says_so(tmp_path):
    """A numba that cannot be imported (as where it is not installed): the install succeeds
    with one line saying so."""
    blocked = tmp_path / "blocked" / "numba"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('numba is blocked in this test')\n")
    p, lib = _colcon_install(tmp_path, _env(PYTHONPATH=str(blocked.parent)))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    lines = [ln for ln in p.stdout.splitlines() if "numba is not installed" in ln]
    assert len(lines) == 1 and "the first start compiles the kernels" in lines[0], lines
    assert "compiling kernels [" not in p.stdout


def test_staged_install_for_a_wheel_or_package_does_not_compile(tmp_path):
    """``install --root`` (what ``bdist_wheel`` -- so ``pip install .`` -- and distribution
    packaging run) stages files that move elsewhere afterwards: nothing is compiled there."""
    p, _ = _colcon_install(tmp_path, _env(VM_DYNAMICS_COMPILE="tumbling"), "--root",
                           str(tmp_path / "stage"))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "compiling" not in p.stdout
    assert list((tmp_path / "stage").rglob("compile.py"))
    assert not _cache_files(tmp_path / "stage")


def test_symlink_install_compiles_the_copy_in_the_build_folder(tmp_path):
    """``colcon build --symlink-install``: ``setup.py develop --editable`` run in a build folder
    holding links to the sources (that folder is on PYTHONPATH at run time); the compile runs
    there, on that folder's package (an unknown scenario: no kernel is compiled, quick), and not
    when colcon undoes the develop (``--uninstall``)."""
    build, lib, scripts = tmp_path / "build", tmp_path / "lib", tmp_path / "scripts"
    for d in (build, lib, scripts):
        d.mkdir()
    for name in SYMLINKED:
        (build / name).symlink_to(REPO / name)
    env = _env(VM_DYNAMICS_COMPILE="no_such_scenario", PYTHONPATH=str(lib))
    common = [sys.executable, "-W", "ignore", "setup.py", "develop", "--editable",
              "--build-directory", str(build / "build"), "--no-deps", "--install-dir", str(lib),
              "--script-dir", str(scripts)]
    p = subprocess.run(common, cwd=build, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    out = p.stdout.splitlines()
    package = build / "vm_dynamics"
    assert any(ln.startswith(f"vm_dynamics: kernels of {package} (") for ln in out), out[-20:]
    assert any(ln.startswith("vm_dynamics: compiling kernels [1/1] no_such_scenario: skipped (")
               for ln in out), out[-20:]
    assert any(ln.startswith("vm_dynamics: not every kernel was compiled at install") for ln in out)
    q = subprocess.run(common + ["--uninstall"], cwd=build, capture_output=True, text=True,
                       timeout=600, env=env)
    assert q.returncode == 0, q.stdout[-3000:] + q.stderr[-3000:]
    assert "compiling" not in q.stdout


def test_compile_refuses_a_copy_other_than_the_installed_one(tmp_path):
    p = subprocess.run([sys.executable, "-m", "vm_dynamics.app.compile", "--installed",
                        str(tmp_path), "tumbling"], capture_output=True, text=True, timeout=300,
                       cwd=REPO)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stdout.splitlines() == [
        f"vm_dynamics: nothing compiled: this process imported vm_dynamics from "
        f"{REPO / 'vm_dynamics'}, not the installed {tmp_path / 'vm_dynamics'}"]
