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
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err, (out, err)
    if p.returncode == -signal.SIGINT and not out + err:
        # the interpreter itself was still starting (site-packages, before any code of ours
        # ran): Python's default action; nothing was printed and nothing was written
        return
    assert p.returncode == code, (p.returncode, out, err)
