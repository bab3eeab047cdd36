#!/usr/bin/env python
"""Run a node module's ``main``, timing a fixed list of functions per call in CPU time.

    python bench/timed.py OUT.json MODULE [ARGS...]

Each function of :data:`TIMED` (``module:Class.method`` or ``module:function``; missing ones
are skipped) is wrapped; once the process received SIGUSR1 (start-up left out), until SIGUSR2 or the exit, every call's
CPU time of the calling thread (``time.thread_time``) and its self time (minus the timed
calls made inside it) are recorded, keyed by the function (and, for a publish, by the
topic).  On exit OUT.json holds, per key, the call count and the sums of the inclusive and
self CPU times, and the main thread's CPU time over the window; and, for the rclpy
transport's executor (``LeanExecutor``, where it counts them), how many waits it made and
samples it took over the window, and how many of those samples a sweep took.

Why CPU time: on a loaded machine a call's wall time includes the time other processes ran
-- in a lockstep the publish that wakes the other node is preempted by it at once -- so wall
time says more about the machine than about the call.  The clock read costs ~2.5 µs here
(a system call in this VM); the cost of the reads of one timed call, measured at the start,
is subtracted from each call's self time.  Used by ``bench/lockstep_profile.py --timed``.
"""
from __future__ import annotations

import atexit
import collections
import importlib
import json
import signal
import statistics
import sys
import time

#: what is timed: the rclpy executor's turns and calls into rclpy, the nodes' callbacks and
#: the parts of a lockstep period
TIMED = [
    "vm_dynamics.transport.rclpy_executor:LeanExecutor.spin_once",
    "vm_dynamics.transport.rclpy_executor:LeanExecutor.rclpy_turn",
    "rclpy.executors:SingleThreadedExecutor.spin_once",
    "rclpy.publisher:Publisher.publish",
    "rclpy.serialization:deserialize_message",
    "rclpy.time_source:TimeSource.clock_callback",
    "vm_dynamics.nodes.dynamics_node:DynamicsNode.tick",
    "vm_dynamics.nodes.dynamics_node:DynamicsNode.on_joint_command",
    "vm_dynamics.nodes.dynamics_node:DynamicsNode.on_effort",
    "vm_dynamics.nodes.dynamics_node:DynamicsNode.on_wrench",
    "vm_dynamics.nodes.dynamics_core:DynamicsCore.advance_lockstep",
    "vm_dynamics.nodes.dynamics_core:DynamicsCore.apply_joint_command",
    "vm_dynamics.nodes.dynamics_core:DynamicsCore.apply_base_wrench",
    "vm_dynamics.ros.messages:joint_state_msg",
    "vm_dynamics.ros.messages:odometry_msg",
    "vm_dynamics.ros.messages:clock_msg",
    "vm_dynamics.ros.messages:tf_msg",
    "vm_dynamics.ros.messages:float64_multi_array_msg",
    "vm_dynamics.ros.messages:wrench_stamped_msg",
    "vm_dynamics.nodes.dynamics_core:DynamicsCore.diagnostics_message",
    "vm_dynamics.nodes.controller_node:ControllerNode.on_joint_state",
    "vm_dynamics.nodes.controller_node:ControllerNode.on_odometry",
    "vm_dynamics.nodes.controller_core:ControllerCore.on_joint_state",
    "vm_dynamics.nodes.controller_core:ControllerCore.on_odometry",
    "vm_dynamics.nodes.controller_core:ControllerCore.command_messages",
    "vm_dynamics.nodes.controller_core:ControllerCore.compute",
    "vm_dynamics.nodes.dynamics_node:DynamicsNode.on_joint_command_cdr",
    "vm_dynamics.nodes.dynamics_node:DynamicsNode.on_wrench_cdr",
    "vm_dynamics.nodes.dynamics_node:DynamicsNode.flush",
    "vm_dynamics.nodes.controller_node:ControllerNode.on_joint_state_cdr",
    "vm_dynamics.nodes.controller_node:ControllerNode.on_odometry_cdr",
    "vm_dynamics.nodes.controller_core:ControllerCore.accept_joint_state",
    "vm_dynamics.nodes.controller_core:ControllerCore.accept_odometry",
    "vm_dynamics.transport.dds:DdsTransport.spin_once",
    "vm_dynamics.transport.dds_entities:DdsSubscription.drain",
    "vm_dynamics.transport.dds_entities:DdsPublisher.publish_cdr",
    "vm_dynamics.transport.dds_entities:DdsPublisher.publish",
]


def read_cost(clock=time.thread_time, n: int = 20000) -> float:
    """CPU seconds one read of ``clock`` costs (the smallest of 5 estimates)."""
    best = float("inf")
    for _ in range(5):
        t = clock()
        for _ in range(n):
            clock()
        best = min(best, (clock() - t) / (n + 1))
    return best


class Timings:
    """Per-key call CPU times; a stack of the timed calls in progress gives self times."""

    def __init__(self) -> None:
        self.on = False
        self.incl: dict = collections.defaultdict(list)
        self.self_: dict = collections.defaultdict(list)
        self.stack: list = []           # children time of each call in progress
        self.t0 = self.t1 = 0.0
        self.cpu0 = self.cpu1 = 0.0
        self.overhead = 0.0             # clock reads per timed call, CPU s
        self.executors: list = []       # the LeanExecutor instances made
        self.counts0: dict = {}
        self.counts1: dict = {}

    COUNTERS = ("waits", "taken", "swept")

    def counts(self) -> dict:
        """The executors' counters now (summed; those an executor lacks left out)."""
        out: dict = {}
        for ex in self.executors:
            for name in self.COUNTERS:
                if hasattr(ex, name):
                    out[name] = out.get(name, 0) + getattr(ex, name)
        return out

    def wrap(self, name: str, fn):
        clock = time.thread_time
        publish = name.endswith("Publisher.publish")

        def timed(*args, **kwargs):
            if not self.on:
                return fn(*args, **kwargs)
            key = f"{name} {args[0].topic_name}" if publish else name
            self.stack.append(0.0)
            t = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = clock() - t
                inner = self.stack.pop()
                if self.stack:
                    self.stack[-1] += dt
                self.incl[key].append(dt)
                self.self_[key].append(dt - inner - self.overhead)
        timed.__wrapped__ = fn
        return timed

    def install(self) -> None:
        for spec in TIMED:
            mod, _, path = spec.partition(":")
            try:
                owner = importlib.import_module(mod)
                parts = path.split(".")
                for p in parts[:-1]:
                    owner = getattr(owner, p)
                fn = getattr(owner, parts[-1])
            except (ImportError, AttributeError):
                continue
            setattr(owner, parts[-1], self.wrap(spec, fn))
        try:
            from vm_dynamics.transport.rclpy_executor import LeanExecutor
        except ImportError:
            return
        init = LeanExecutor.__init__

        def noted_init(ex, *args, **kwargs):
            init(ex, *args, **kwargs)
            self.executors.append(ex)
        LeanExecutor.__init__ = noted_init

    def summary(self) -> dict:
        out = {}
        for key, xs in self.incl.items():
            ys = self.self_[key]
            out[key] = {"calls": len(xs), "median_self_us": 1e6 * statistics.median(ys),
                        "sum_s": sum(xs), "sum_self_s": sum(ys)}
        return {"functions": out, "seconds": max(0.0, self.t1 - self.t0),
                "main_thread_cpu_s": max(0.0, self.cpu1 - self.cpu0),
                "clock_read_us": 1e6 * self.overhead / 2,
                "executor": {k: v - self.counts0.get(k, 0) for k, v in self.counts1.items()}}


def main():
    out, module, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    timings = Timings()

    def on_usr1(signum, frame):
        timings.overhead = 2 * read_cost()
        timings.t0, timings.cpu0 = time.perf_counter(), time.thread_time()
        timings.counts0 = timings.counts()
        timings.on = True

    def stop(*_):
        if timings.on:
            timings.t1, timings.cpu1 = time.perf_counter(), time.thread_time()
            timings.counts1 = timings.counts()
        timings.on = False

    def write():
        stop()
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(timings.summary(), fh)

    signal.signal(signal.SIGUSR1, on_usr1)
    signal.signal(signal.SIGUSR2, stop)
    atexit.register(write)
    timings.install()
    sys.argv = [module, *args]
    sys.exit(importlib.import_module(module).main(sys.argv))


if __name__ == "__main__":
    main()
