#!/usr/bin/env python
"""Cost of hostile and careless input to the controller (issue 28, items 1, 3 and 7).

    .venv/bin/python bench/hostile_input.py                 # in-process rows, ~1 min
    .venv/bin/python bench/hostile_input.py --two-sims 25   # + two simulations on one domain

In-process rows (minimum over 5 repeats, wall time):

* a 1.04 MB ``JointState`` with 130 000 empty names: ``parse_joint_state`` of the decoded
  message (duplicate-name check), full decode, and the rejection from the serialized sample
  by ``check_sequence_counts`` (what the controller's subscription does, limit 1 000);
* a 1 MB ``JointTrajectory`` with 43 000 empty points: full decode and rejection as above;
* the controller's joint reference after 10, 100 and 2 000 partial trajectories: one
  evaluation (constant: the reference stays one level deep) and its pickled size.

``--two-sims S``: ``controller_node`` and two ``dynamics_node`` on one loopback DDS domain for
S seconds of wall time (the second started once the first runs); counts the controller's
re-initialisations and the ERROR lines each node logs about the second publisher.
"""
from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vm_dynamics.config.params import flatten, read_params_file  # noqa: E402
from vm_dynamics.nodes.controller_core import ControllerCore  # noqa: E402
from vm_dynamics.ros import messages as rm  # noqa: E402

T = rm.TYPESTORE.types
TRAJ = "trajectory_msgs/msg/JointTrajectory"


def best(f, repeats=5):
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        try:
            f()
        except ValueError:
            pass
        out.append(time.perf_counter() - t0)
    return min(out)


def messages_rows():
    js = T[rm.JOINT_STATE](header=rm.header_msg(0.0), name=[""] * 130_000,
                          position=np.zeros(0), velocity=np.zeros(0), effort=np.zeros(0))
    data = rm.serialize(js)
    decoded = rm.deserialize(data, rm.JOINT_STATE)
    yield (f"JointState, 130 000 empty names ({len(data) / 1e6:.2f} MB)", [
        ("parse_joint_state (duplicate check)", best(lambda: rm.parse_joint_state(decoded))),
        ("full decode (rosbags)", best(lambda: rm.deserialize(data, rm.JOINT_STATE))),
        ("rejected from the serialized count", best(lambda: rm.check_sequence_counts(
            data, rm.JOINT_STATE, {"name": 1000})))])
    pt = T["trajectory_msgs/msg/JointTrajectoryPoint"](
        positions=np.zeros(0), velocities=np.zeros(0), accelerations=np.zeros(0),
        effort=np.zeros(0), time_from_start=T["builtin_interfaces/msg/Duration"](sec=0,
                                                                               nanosec=0))
    data = rm.serialize(T[TRAJ](header=rm.header_msg(0.0), joint_names=[],
                                points=[pt] * 43_000))
    yield (f"JointTrajectory, 43 000 empty points ({len(data) / 1e6:.2f} MB)", [
        ("full decode (rosbags)", best(lambda: rm.deserialize(data, TRAJ), 3)),
        ("rejected from the serialized count", best(lambda: rm.check_sequence_counts(
            data, TRAJ, {"joint_names": 6, "points": 1000})))])


def reference_rows():
    p = flatten(read_params_file(REPO / "config" / "planar_rover.yaml"))
    p.update(dynamics_backend="lp")
    ctrl = ControllerCore.from_params(p)
    names = ctrl.model.joint_names
    assert ctrl.on_joint_state(rm.joint_state_msg(0.1, names, np.zeros(2), np.zeros(2)))
    assert ctrl.on_odometry(rm.odometry_msg(0.1, np.eye(4), np.zeros(6), "odom",
                                            ctrl.robot.base_frame))
    rows, sent = [], 0
    for count in (10, 100, 2000):
        while sent < count:
            msg = T[TRAJ](header=rm.header_msg(0.0), joint_names=[names[0]], points=[
                T["trajectory_msgs/msg/JointTrajectoryPoint"](
                    positions=np.array([0.1 + 1e-4 * sent]), velocities=np.zeros(0),
                    accelerations=np.zeros(0), effort=np.zeros(0),
                    time_from_start=T["builtin_interfaces/msg/Duration"](sec=1, nanosec=0))])
            assert ctrl.on_joint_trajectory(msg), ctrl.last_error
            sent += 1
        ref = ctrl.reference.joint
        rows.append((f"after {count} partial trajectories: evaluate / pickled size",
                     best(lambda: ref(0.6), 50), len(pickle.dumps(ref))))
    return rows


def two_sims(seconds: float) -> None:
    domain = 200 + os.getpid() % 30
    env = dict(os.environ, CYCLONEDDS_URI=(REPO / "test" / "cyclonedds-loopback.xml").as_uri(),
               ROS_DOMAIN_ID=str(domain), VM_DYNAMICS_TRANSPORT="dds", PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    params = str(REPO / "config" / "planar_rover.yaml")
    tmp = Path(tempfile.mkdtemp(prefix="vm_two_sims_"))
    procs, logs = {}, {}

    def start(key, module, *extra):
        logs[key] = open(tmp / f"{key}.log", "w")
        procs[key] = subprocess.Popen([sys.executable, "-m", module, "--ros-args",
                                       "--params-file", params, *extra], env=env, cwd=REPO,
                                      stdout=logs[key], stderr=subprocess.STDOUT)
    try:
        start("ctl", "vm_dynamics.nodes.controller_node")
        start("dyn1", "vm_dynamics.nodes.dynamics_node")
        deadline = time.monotonic() + 120
        while "backend" not in (tmp / "dyn1.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(3.0)
        start("dyn2", "vm_dynamics.nodes.dynamics_node", "-r", "__node:=second_sim")
        time.sleep(seconds)
    finally:
        for p in procs.values():
            p.terminate()
        for p in procs.values():
            p.wait(20)
        for f in logs.values():
            f.close()
    text = {k: (tmp / f"{k}.log").read_text() for k in procs}
    print(f"\ntwo simulations on one domain, {seconds:g} s (logs in {tmp}):")
    print(f"  controller re-initialisations: {text['ctl'].count('re-initialised')}")
    for k in ("dyn1", "dyn2", "ctl"):
        errors = [x for x in text[k].splitlines() if "publishers of" in x]
        print(f"  {k}: {len(errors)} ERROR line(s) about a second publisher"
              + (f"; first: {errors[0][:160]}" if errors else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--two-sims", type=float, default=0.0, metavar="S")
    args = ap.parse_args()
    for title, rows in messages_rows():
        print(title)
        for name, sec in rows:
            print(f"  {name:42s} {sec * 1e3:10.3f} ms")
    print("controller joint reference (planar_rover, joint1-only trajectories)")
    for name, sec, size in reference_rows():
        print(f"  {name:58s} {sec * 1e6:8.1f} µs {size:8d} B")
    if args.two_sims:
        two_sims(args.two_sims)
    return 0


if __name__ == "__main__":
    sys.exit(main())
