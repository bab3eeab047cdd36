"""Helpers for tests that start executables: their DDS environment; stop them and close their
logs."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def dds_env(domain: int) -> dict:
    """This environment for a process on the DDS transport: loopback-only Cyclone DDS, its own
    ``ROS_DOMAIN_ID``, unbuffered output."""
    env = dict(os.environ)
    env.update(CYCLONEDDS_URI=(REPO / "test" / "cyclonedds-loopback.xml").as_uri(),
               ROS_DOMAIN_ID=str(domain), VM_DYNAMICS_TRANSPORT="dds", PYTHONUNBUFFERED="1")
    return env


def stop_processes(procs, logs=()) -> None:
    """Terminate every still-running process (kill after 10 s), then close the log files."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    for f in logs:
        f.close()
