"""Hardware in the loop at driver rates: does ``dynamics_node`` (``joint_source: measured``) keep
up with ``fake_arm_driver``?  The pass/fail HIL tests (test/process/test_hil.py) check what holds
at any speed at 100 Hz; this measures the pace.

    .venv/bin/python bench/hil.py                       # 1000 and 250 Hz, 10 s of the wheel loop
    .venv/bin/python bench/hil.py --rates 1000 --seconds 5

For each rate: samples the driver sent, samples the node took (its diagnostics), samples lost
(queue overflow or transport), the node's simulated seconds at the driver's end and the wall
seconds until it reached the path's end (real-time factor = path seconds / those wall seconds),
and the gaps it restarted from.  Loopback DDS, ROS_DOMAIN_ID from the environment (default 91).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PARAMS = str(REPO / "config" / "satellite_wheels.yaml")


def run(rate: float, seconds: float, tmp: Path) -> dict:
    from vm_dynamics.ros import messages as rm
    from vm_dynamics.transport.dds import DdsTransport
    env = dict(os.environ, VM_DYNAMICS_TRANSPORT="dds", PYTHONUNBUFFERED="1")
    env.setdefault("CYCLONEDDS_URI", (REPO / "test" / "cyclonedds-loopback.xml").as_uri())
    env.setdefault("ROS_DOMAIN_ID", "91")
    os.environ.update({k: env[k] for k in ("CYCLONEDDS_URI", "ROS_DOMAIN_ID",
                                           "VM_DYNAMICS_TRANSPORT")})
    probe = DdsTransport("hil_bench", {}, ["hil_bench"])
    odom, diags = [], []
    probe.subscribe("/odom", rm.ODOMETRY,
                    lambda m: odom.append(rm.parse_odometry(m).stamp_ns * 1e-9), "sensor")
    probe.subscribe("/diagnostics", rm.DIAGNOSTIC_ARRAY, diags.append, "default")
    common = ["--ros-args", "--params-file", PARAMS]
    logs = {k: open(tmp / f"{k}-{rate:g}.log", "w") for k in ("node", "driver")}
    node = subprocess.Popen([sys.executable, "-m", "vm_dynamics.nodes.dynamics_node", *common,
                             "-p", "joint_source:=measured", "-p", "publish_rate:=50.0"],
                            env=env, stdout=logs["node"], stderr=subprocess.STDOUT)
    driver = None
    try:
        if not probe.spin_until(lambda: bool(odom), 600.0):
            raise RuntimeError("the node never published /odom")
        driver = subprocess.Popen([sys.executable, "-m", "vm_dynamics.nodes.fake_arm_driver",
                                   *common, "-p", f"rate:={rate}", "-p", f"duration:={seconds}",
                                   "-p", "start_delay:=3.0"],
                                  env=env, stdout=logs["driver"], stderr=subprocess.STDOUT)
        while driver.poll() is None:
            probe.spin_once(0.05)
        t_driver_end = time.monotonic()
        at_driver_end = max(odom)
        quiet = time.monotonic()
        last = max(odom)
        while max(odom) < seconds - 0.05 and time.monotonic() - quiet < 10.0:
            probe.spin_once(0.05)
            if max(odom) > last:
                last, quiet = max(odom), time.monotonic()
        t_reached = time.monotonic()

        def accepted():
            for msg in reversed(diags):
                for s in rm.parse_diagnostic_array(msg):
                    if s["name"].endswith("joint source"):
                        return s["values"]["samples_accepted"]
            return None
        last, quiet = accepted(), time.monotonic()      # the periodic diagnostics settle
        while time.monotonic() - quiet < 3.0:
            probe.spin_once(0.05)
            if accepted() != last:
                last, quiet = accepted(), time.monotonic()
    finally:
        for p in (driver, node):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(10)
        for f in logs.values():
            f.close()
        probe.shutdown()
    text = (tmp / f"driver-{rate:g}.log").read_text()
    m = re.search(r"path done after [\d.]+ s: (\d+) samples sent", text)
    sent = int(m.group(1)) if m else -1
    status = None
    for msg in diags:
        for s in rm.parse_diagnostic_array(msg):
            if s["name"].endswith("joint source"):
                status = s["values"]
    accepted = int(float(status["samples_accepted"])) if status else -1
    wall = seconds + (t_reached - t_driver_end)
    return dict(rate=rate, sent=sent, accepted=accepted, lost=sent - accepted,
                sim_at_driver_end=at_driver_end, sim_end=max(odom), wall_to_end=wall,
                rtf=max(odom) / wall if wall > 0 else float("nan"),
                gaps_restarted=int(float(status["gaps_restarted"])) if status else -1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", type=float, nargs="+", default=[1000.0, 250.0])
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
          f"{args.seconds:g} s of the satellite_wheels loop")
    print("| driver rate | sent | taken | lost | node t at driver end | node t at end | "
          "real-time factor | gaps restarted |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for rate in args.rates:
            r = run(rate, args.seconds, Path(d))
            print(f"| {r['rate']:g} Hz | {r['sent']} | {r['accepted']} | {r['lost']} | "
                  f"{r['sim_at_driver_end']:.2f} s | {r['sim_end']:.2f} s | {r['rtf']:.2f} | "
                  f"{r['gaps_restarted']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
