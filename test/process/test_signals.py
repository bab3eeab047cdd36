"""Ctrl-C at any moment of an executable's start-up ends it cleanly: no traceback, the
documented exit code (0 for the ROS nodes, as ``ros2 launch`` expects; 130 for ``vm-sim``).

The signal is sent at several delays after the process starts, so that it lands while Python
imports the package, numpy, DDS or numba, while the transport is created and while the model
loads — including twice, 20 ms apart, as ``ros2 launch`` and the terminal do."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PARAMS = str(REPO / "config" / "planar_rover.yaml")

PROGRAMS = {
    "dynamics_node": ([str(BIN / "dynamics_node"), "--ros-args", "--params-file", PARAMS], 0),
    "controller_node": ([str(BIN / "controller_node"), "--ros-args", "--params-file", PARAMS], 0),
    "vm-sim": ([str(BIN / "vm-sim"), "tumbling", "--duration", "30", "--no-plots"], 130),
}


@pytest.mark.parametrize("delay", [0.15, 0.4, 0.8, 1.5])
@pytest.mark.parametrize("program", list(PROGRAMS))
def test_ctrl_c_during_start_up_ends_cleanly(program, delay, tmp_path):
    argv, code = PROGRAMS[program]
    if not Path(argv[0]).exists():
        pytest.fail(f"{argv[0]} is not installed (pip install -e . installs the executables)")
    if program == "vm-sim":
        argv = argv + ["--out", str(tmp_path / "out")]
    env = dict(os.environ, VM_DYNAMICS_TRANSPORT="dds", PYTHONUNBUFFERED="1")
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=tmp_path)
    try:
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        time.sleep(0.02)
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    if _before_our_code(p.returncode, out + err):
        return
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err, (out, err)
    assert p.returncode == code, (p.returncode, out, err)


#: Modules imported before the entry point records Ctrl-C (the first statement of
#: vm_dynamics/app/entry.py): the console script's first line imports these two package
#: files, which import nothing, with Python's default SIGINT action.
_PRE_DEFERRAL = ("vm_dynamics/__init__.py", "vm_dynamics/app/__init__.py")


def _before_our_code(returncode: int, text: str) -> bool:
    """True if the signal landed while the interpreter was still starting (site-packages,
    the console script's first import), before any code of ours could defer it — a window a
    busy machine stretches to a fraction of a second.  There Python's default action is all
    there is: killed by SIGINT with nothing printed, or a KeyboardInterrupt whose traceback
    has no frame of vm_dynamics beyond the modules imported before the deferral."""
    if returncode == -signal.SIGINT and not text:
        return True
    if "KeyboardInterrupt" not in text:
        return False
    ours = [line for line in text.splitlines() if "vm_dynamics/" in line and "File " in line]
    return all(any(m in line for m in _PRE_DEFERRAL) for line in ours)


#: A console script (what pip writes) whose imports after the entry module's first statement
#: are slow: the finder announces the import of ``vm_dynamics.core.signals`` and sleeps, so a
#: Ctrl-C lands there for certain (on a busy machine, imports take that long).
SLOW_SCRIPT = """
import sys
import time


class _Slow:
    def find_spec(self, name, path=None, target=None):
        if name == "vm_dynamics.core.signals":
            print("importing " + name, file=sys.stderr, flush=True)
            time.sleep(2.0)
        return None


sys.meta_path.insert(0, _Slow())
from vm_dynamics.app.entry import {func}
if __name__ == "__main__":
    sys.exit({func}())
"""


@pytest.mark.parametrize("script, func, code", [
    ("vm-sim", "vm_sim", 130), ("vm-view", "vm_view", 130), ("vm-send", "vm_send", 130),
    ("dynamics_node", "dynamics_node", 0), ("controller_node", "controller_node", 0)])
def test_ctrl_c_while_the_entry_module_imports_is_quiet(script, func, code, tmp_path):
    """The earliest Ctrl-C our code can see: while the entry module imports its helpers.
    Exit code as documented, nothing printed, whatever the machine's speed."""
    path = tmp_path / script
    path.write_text(SLOW_SCRIPT.format(func=func))
    p = subprocess.Popen([sys.executable, str(path), "tumbling"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        first = p.stderr.readline()
        assert first.startswith("importing vm_dynamics.core.signals"), first
        p.send_signal(signal.SIGINT)
        time.sleep(0.02)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert (out, err) == ("", ""), (out, err)
    assert p.returncode == code


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_during_the_first_compilation_ends_the_node_at_once(sig, tmp_path):
    """A fresh install compiles the kernels at the dynamics node's first start (minutes).  A
    Ctrl-C or SIGTERM then ends the node with exit code 0, no traceback, long before the
    compilation would have finished (``ros2 launch`` escalates to SIGTERM after 5 s and to
    SIGKILL after 10 s).  An empty ``NUMBA_CACHE_DIR`` makes the cache cold.  (The controller
    node compiles nothing before it spins.)"""
    argv, code = PROGRAMS["dynamics_node"]
    env = dict(os.environ, VM_DYNAMICS_TRANSPORT="dds", PYTHONUNBUFFERED="1",
               NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, cwd=tmp_path)
    lines = []
    try:
        for line in p.stdout:                    # until the compilation is announced
            lines.append(line)
            if "compiling dynamics kernels" in line:
                break
        assert p.poll() is None, "".join(lines)
        time.sleep(1.0)                          # well inside the compilation
        p.send_signal(sig)
        out, _ = p.communicate(timeout=30)       # compiling takes minutes; stopping, not
    finally:
        if p.poll() is None:
            p.kill()
    text = "".join(lines) + out
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert p.returncode == code, (p.returncode, text)
    assert "stopped during start-up" in text, text
