"""Helpers for tests that start executables: stop them and close their logs."""
from __future__ import annotations

import subprocess


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
