"""Helpers for tests that start executables: their DDS environment; signal them once they are
under way; stop them and close their logs."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def dds_env(domain: int) -> dict:
    """This environment for a process on the DDS transport: loopback-only Cyclone DDS, its own
    ``ROS_DOMAIN_ID``, unbuffered output."""
    env = dict(os.environ)
    env.update(CYCLONEDDS_URI=(REPO / "test" / "cyclonedds-loopback.xml").as_uri(),
               ROS_DOMAIN_ID=str(domain), VM_DYNAMICS_TRANSPORT="dds", PYTHONUNBUFFERED="1")
    return env


def join_dds_domain(monkeypatch) -> dict:
    """:func:`dds_env` of this test's loopback domain (``ROS_DOMAIN_ID`` as set, else one of
    this process), its DDS variables also set here (``monkeypatch``): a transport the test
    opens joins the domain of the processes it starts."""
    env = dds_env(int(os.environ.get("ROS_DOMAIN_ID") or 20 + os.getpid() % 60))
    for key in ("CYCLONEDDS_URI", "ROS_DOMAIN_ID"):
        monkeypatch.setenv(key, env[key])
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


def signal_when_logged(argv, env, log_path, marker: str, sig, *, after: float = 0.5,
                       again_after: float | None = None, cwd=None,
                       timeout: float = 60.0) -> tuple[int, str]:
    """Start ``argv`` (stdout and stderr to ``log_path``), wait until ``marker`` is in its log,
    then ``after`` s, send ``sig`` (and, with ``again_after``, a second one that much later
    if it still runs, as ``ros2 launch`` and a terminal do).  Returns ``(exit code, log)``;
    the process is killed if it outlives this call."""
    with open(log_path, "w") as fh:
        p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while marker not in Path(log_path).read_text() and time.monotonic() < deadline:
                time.sleep(0.01)
            text = Path(log_path).read_text()
            assert marker in text, f"{marker!r} never logged:\n{text}"
            time.sleep(after)
            p.send_signal(sig)
            if again_after is not None:
                time.sleep(again_after)
                if p.poll() is None:
                    p.send_signal(sig)
            rc = p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
    return rc, Path(log_path).read_text()
