"""Both nodes over DDS under hostile input (loopback only, bounded time).

* A flood of invalid effort commands does not stop the simulation: stepping and publishing go
  on, and a valid command is eventually applied.
* A soak: a mixed stream of invalid, extreme and oversized messages to both nodes, the controller
  killed (SIGKILL) and restarted mid-run.  The dynamics node stays alive and keeps publishing
  ``/joint_states`` (also while paused after a divergence), neither node's memory grows, and
  ``~/reset`` brings the simulation back.  ``VM_SOAK_SECONDS`` sets the hostile phase (default 30).

Behaviour, not rates: every wait is a deadline for "eventually" (:data:`EVENTUALLY_S`, long
enough for a loaded 2-core machine), and the flood runs until the test has seen what it waits
for.  The rates under a flood (joint states per second, simulated seconds per wall second) are
measured by ``bench/flood.py``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from processes import dds_env, stop_processes

from vm_dynamics.ros import messages as rm

REPO = Path(__file__).resolve().parents[2]
FLOODER = REPO / "test" / "support" / "flooder.py"
FLOOD_RATE = 20_000
PARAMS = str(REPO / "config" / "planar_rover.yaml")
#: Deadline of every "eventually" (s): a bound on a hang, not a measurement.
EVENTUALLY_S = 300.0
#: The flood's length when it is ended by the test (SIGINT) once its checks are done.
UNTIL_STOPPED_S = 3600


def _env(domain: int) -> dict:
    """dds_env, with the repository importable by test/support/flooder.py."""
    env = dds_env(domain)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise AssertionError(f"no VmRSS for {pid}")


def _node(module: str, env: dict, log, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", module, "--ros-args", "--params-file", PARAMS,
                             *extra], env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)


@pytest.fixture
def probe(monkeypatch):
    domain = 30 + os.getpid() % 60
    env = _env(domain)
    for k in ("CYCLONEDDS_URI", "ROS_DOMAIN_ID", "VM_DYNAMICS_TRANSPORT"):
        monkeypatch.setenv(k, env[k])
    from vm_dynamics.transport.dds import DdsTransport
    t = DdsTransport("probe", {}, ["probe"])
    yield t, env
    t.shutdown()


def _effort_counts(diags):
    for msg in reversed(diags):
        for s in rm.parse_diagnostic_array(msg):
            if "effort_accepted" in s["values"]:
                return int(s["values"]["effort_accepted"]), int(s["values"]["effort_rejected"])
    return None


def test_a_flood_of_invalid_efforts_does_not_stop_the_simulation(probe, tmp_path):
    """20 000 invalid efforts/s (the flood the node's docstring names): while it lasts, the
    flood is seen (rejected or dropped, counted in /diagnostics), simulated time keeps
    advancing in the /joint_states that keep arriving, and a valid command sent meanwhile is
    eventually applied."""
    t, env = probe
    logs = {k: open(tmp_path / f"{k}.log", "w") for k in ("dyn", "flood")}
    procs = {"dyn": _node("vm_dynamics.nodes.dynamics_node", env, logs["dyn"],
                          "-p", "command_timeout:=5.0")}
    diags, states = [], []
    t.subscribe("/diagnostics", rm.DIAGNOSTIC_ARRAY, diags.append, "default")
    t.subscribe("/joint_states", rm.JOINT_STATE,
                lambda m: states.append((time.monotonic(), rm.parse_joint_state(m))), "sensor")
    pub = t.publisher("/effort_controller/commands", rm.FLOAT64_MULTI_ARRAY)
    good = [0.1, 0.2]

    def applied(since: float) -> bool:
        return any(w > since and s.effort is not None and np.allclose(s.effort, good)
                   for w, s in states)
    try:
        assert t.spin_until(lambda: _effort_counts(diags) is not None and states,
                            EVENTUALLY_S), \
            (tmp_path / "dyn.log").read_text()
        before = _effort_counts(diags)
        procs["flood"] = subprocess.Popen([sys.executable, str(FLOODER), "invalid-efforts",
                                           str(UNTIL_STOPPED_S), str(FLOOD_RATE)], env=env,
                                          cwd=REPO,
                                          stdout=subprocess.PIPE, stderr=logs["flood"],
                                          text=True)
        # the flood under way: the node rejects (or drops) it
        assert t.spin_until(lambda: _effort_counts(diags)[1] > before[1] + 1000,
                            EVENTUALLY_S), \
            (_effort_counts(diags), (tmp_path / "dyn.log").read_text()[-2000:])
        # simulated time advances (1 s of it) in joint states that keep coming, under flood
        start = time.monotonic()
        n0 = len(states)
        assert t.spin_until(lambda: len(states) > n0 + 2 and states[-1][1].stamp_ns
                            - states[n0][1].stamp_ns > 1e9, EVENTUALLY_S), states[-3:]
        window = [s.stamp_ns for w, s in states if w >= start]
        assert np.all(np.diff(window) > 0), window
        # a valid command sent during the flood is eventually applied (effort in joint_states)
        sent_at, end = time.monotonic(), time.monotonic() + EVENTUALLY_S
        while not applied(sent_at) and time.monotonic() < end:
            pub.publish(rm.float64_multi_array_msg(good))
            t.spin_until(lambda: False, 0.01)
        assert applied(sent_at), (_effort_counts(diags), states[-1])
        assert procs["flood"].poll() is None            # all of it while the flood went on
        assert procs["dyn"].poll() is None
        dyn_log = (tmp_path / "dyn.log").read_text()
        assert "Traceback" not in dyn_log and "rejected effort command" in dyn_log
    finally:
        stop_processes(procs.values(), logs.values())


def test_soak_both_nodes_under_hostile_input(probe, tmp_path):
    t, env = probe
    seconds = float(os.environ.get("VM_SOAK_SECONDS", "30"))
    logs = {k: open(tmp_path / f"{k}.log", "w") for k in ("dyn", "ctl", "ctl2", "flood")}
    procs = {"dyn": _node("vm_dynamics.nodes.dynamics_node", env, logs["dyn"]),
             "ctl": _node("vm_dynamics.nodes.controller_node", env, logs["ctl"])}
    states, diags = [], []
    t.subscribe("/joint_states", rm.JOINT_STATE,
                lambda m: states.append((time.monotonic(), rm.parse_joint_state(m).stamp_ns)),
                "sensor")
    t.subscribe("/diagnostics", rm.DIAGNOSTIC_ARRAY, diags.append, "default")
    from vm_dynamics.transport.dds import DdsServiceClient
    from vm_dynamics.transport.types import service_typestore
    reset = DdsServiceClient(t, "/dynamics_node/reset", "std_srvs/srv/Trigger")
    try:
        assert t.spin_until(lambda: len(states) > 100, EVENTUALLY_S), \
            (tmp_path / "dyn.log").read_text()
        t.spin_until(lambda: False, 3.0)                          # warm
        rss0 = {k: _rss_mb(p.pid) for k, p in procs.items()}
        start = time.monotonic()
        procs["flood"] = subprocess.Popen([sys.executable, str(FLOODER), "mixed", str(seconds)],
                                          env=env, cwd=REPO, stdout=subprocess.PIPE,
                                          stderr=logs["flood"], text=True)
        n = len(states)
        t.spin_until(lambda: False, seconds / 3)
        assert t.spin_until(lambda: len(states) >= n + 2, EVENTUALLY_S)
        procs["ctl"].send_signal(signal.SIGKILL)                   # the controller dies ...
        procs["ctl"].wait(10)
        killed, n = time.monotonic(), len(states)
        assert t.spin_until(lambda: len(states) >= n + 2, EVENTUALLY_S)
        procs["ctl2"] = _node("vm_dynamics.nodes.controller_node", env, logs["ctl2"])  # ... and returns
        restarted, n = time.monotonic(), len(states)
        assert t.spin_until(lambda: procs["flood"].poll() is not None and len(states) >= n + 2,
                            seconds + EVENTUALLY_S)
        flooded = int(procs["flood"].stdout.read().split()[-1])
        end = time.monotonic()
        rss1 = {k: _rss_mb(procs[k].pid) for k in ("dyn",)}
        # alive, and /joint_states kept coming with advancing stamps through every phase of
        # the hostile run (before the controller's death, while dead, after its restart)
        assert procs["dyn"].poll() is None and procs["ctl2"].poll() is None
        wall = np.array([w for w, _ in states])
        stamps = np.array([s for _, s in states])
        for a, b in ((start, killed), (killed, restarted), (restarted, end)):
            inside = (wall >= a) & (wall < b)
            assert np.count_nonzero(inside) >= 2, (a - start, b - start)
        during = stamps[(wall >= start) & (wall < end)]
        assert during[-1] > during[0], (during[0], during[-1])
        assert flooded > 0, flooded
        assert rss1["dyn"] - rss0["dyn"] < 25.0, (rss0, rss1)
        # the restarted controller's memory is flat too (after its own warm-up)
        rss_c0 = _rss_mb(procs["ctl2"].pid)
        t.spin_until(lambda: False, 5.0)
        assert _rss_mb(procs["ctl2"].pid) - rss_c0 < 10.0
        # ~/reset brings the simulation back: simulated time runs again from 0
        assert reset.wait_for_service(EVENTUALLY_S)
        import threading
        req = service_typestore().types["std_srvs/srv/Trigger_Request"](
            structure_needs_at_least_one_member=0)
        box = {}
        th = threading.Thread(target=lambda: box.setdefault("r", reset.call(req, EVENTUALLY_S)))
        th.start()
        t.spin_until(lambda: not th.is_alive(), EVENTUALLY_S + 5)
        th.join()
        assert box["r"].success, box["r"].message
        n0 = len(states)
        assert t.spin_until(lambda: len(states) > n0 + 100, EVENTUALLY_S)
        stamps = np.array([s for _, s in states[n0 + 5:]])
        assert np.all(np.diff(stamps) > 0) and stamps[0] < 5e9    # running, from t ~ 0
        dyn_log = (tmp_path / "dyn.log").read_text()
        assert "Traceback" not in dyn_log, dyn_log[-3000:]
        assert "rejected effort command" in dyn_log
    finally:
        stop_processes(procs.values(), logs.values())
