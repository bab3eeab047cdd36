"""diff_drive_node as a process over loopback DDS: simulated seconds per wall second.

    python bench/diff_drive_node.py [scenario] [--rtf 1.0 2.0 3.0] [--seconds 8]

For each requested ``real_time_factor`` the node is started on its own domain and an
independent reader (:class:`nodes.JointStateProbe`) compares the ``joint_states`` header stamps
(simulated time) with the wall time at which the node wrote them.  A node that keeps up reports
the requested factor; one that cannot reports less (the most it manages).  ``cmd_vel`` is not
sent: the scenario's own command (``cmd_vel`` section) drives the base.
"""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from dds_probe import dds_env
from nodes import JointStateProbe, _start, _stop


def measure(scenario: str, rtf: float, seconds: float, domain: int, work: Path) -> dict:
    env = dds_env(domain)
    probe = JointStateProbe(env)
    proc = _start("vm_dynamics.nodes.diff_drive_node",
                  ["--ros-args", "-p", f"scenario:={scenario}",
                   "-p", f"real_time_factor:={rtf}"], env, work / "node.log")
    try:
        if not probe.wait_first(180.0):
            raise RuntimeError("no joint_states: " + (work / "node.log").read_text()[-2000:])
        probe.collect(2.0)                       # settle (discovery, first ticks)
        s = probe.collect(seconds)
    finally:
        _stop([proc])
        probe.close()
    wall, stamp = s[:, 0], s[:, 1]
    return {"rtf": (stamp[-1] - stamp[0]) / (wall[-1] - wall[0]), "samples": len(s)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="?", default="diff_drive_arm")
    ap.add_argument("--rtf", type=float, nargs="+", default=[1.0, 2.0, 4.0])
    ap.add_argument("--seconds", type=float, default=8.0)
    args = ap.parse_args()
    domain = int(os.environ.get("ROS_DOMAIN_ID") or 150 + os.getpid() % 50)
    with tempfile.TemporaryDirectory() as tmp:
        for rtf in args.rtf:
            r = measure(args.scenario, rtf, args.seconds, domain, Path(tmp))
            print(f"diff_drive_node {args.scenario}: real_time_factor {rtf:g} requested, "
                  f"{r['rtf']:.2f} achieved ({r['samples']} joint_states in {args.seconds:g} s)",
                  flush=True)


if __name__ == "__main__":
    main()
