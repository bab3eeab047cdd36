#!/usr/bin/env python
"""One lockstep period's Python, part by part, without the wire: dynamics node + controller node
in one process.

    .venv/bin/python bench/lockstep_parts.py [--periods 3000] [--scenario spacecraft_arm]
                                             [--profile]

The two nodes (:class:`~vm_dynamics.nodes.dynamics_node.DynamicsNode`,
:class:`~vm_dynamics.nodes.controller_node.ControllerNode`, lockstep at 1 kHz, ``dt`` 1 ms,
``real_time_factor`` 0) run on an in-memory transport that does what the DDS transport does per
sample except the DDS calls: every publish checks and serialises the message to its CDR bytes
(:class:`~vm_dynamics.transport.dds_entities.DdsPublisher`'s path), every delivery decodes the
bytes with the real :class:`~vm_dynamics.transport.dds_entities.DdsSubscription` (size screen,
sequence-count limits, rosbags decoder) and runs the node's callback; the dynamics node's 1 ms
timer runs when 1 ms of wall time has passed, as on the executor.  So the figures are the CPU
both nodes spend per period outside Cyclone DDS and outside waiting: what bounds the lockstep
rate from the nodes' side.

Printed: µs per period of each node's turn (wall clock, in one thread: CPU time unless
the machine preempts the process), split into exclusive parts (a part timed inside another
is taken out of it): take/decode, the node's callbacks' own Python, the command input, the
engine step, the energy check, the publish schedule, the state messages' build and their
serialisation (dynamics node); the state input, the controller law, the command messages'
build and serialisation (controller node); the timer tick's own Python; and the rest (the
executor loop).  With ``--profile``, the top functions of a cProfile run (cProfile slows
Python calls several fold: use it for where, not how much).
"""
from __future__ import annotations

import argparse
import collections
import cProfile
import os
import pstats
import time
from pathlib import Path

from vm_dynamics.config.params import flatten, read_params_file
from vm_dynamics.nodes.controller_core import ControllerCore
from vm_dynamics.nodes.controller_node import ControllerNode
from vm_dynamics.nodes.dynamics_core import DynamicsCore
from vm_dynamics.nodes.dynamics_node import DynamicsNode, node_parameter_defaults
from vm_dynamics.transport.base import Publisher, Transport
from vm_dynamics.transport.dds_entities import DdsSubscription
from vm_dynamics.transport.exact_cdr import exact_serializer
from vm_dynamics.transport.logger import StreamLogger
from vm_dynamics.transport.types import check_message

REPO = Path(__file__).resolve().parents[1]
#: the parts are timed by wall clock: a CPU-time clock costs ~7 µs per read on this machine (a
#: VM), more than several of the parts; the run's total CPU time is read once and printed
CLOCK = time.perf_counter


class Bus:
    """Topic -> subscriptions of every node on it, and the time spent per (node, part).

    Parts are timed exclusively: a timed part that runs inside another (the engine step in a
    command callback, a publish in the state's build) is taken out of the outer one, so the
    parts add up to the nodes' totals (see :meth:`timing`)."""

    def __init__(self):
        self.subs = collections.defaultdict(list)
        self.spent = collections.Counter()      # (node, part) -> seconds, exclusive
        self._inner = [0.0]                     # time of timed parts inside the running ones

    def timing(self, node, part, fn, *a, **k):
        """``fn(*a, **k)``, its time (less that of the timed parts it ran) noted as ``part``."""
        self._inner.append(0.0)
        t0 = CLOCK()
        try:
            return fn(*a, **k)
        finally:
            took = CLOCK() - t0
            inner = self._inner.pop()
            self.spent[node, part] += took - inner
            self._inner[-1] += took


class LoopPublisher(Publisher):
    """Checks and serialises like the DDS publisher, then queues the bytes to the readers."""

    def __init__(self, bus, node, topic, msgtype):
        self.bus, self.node, self.topic, self.msgtype = bus, node, topic, msgtype
        self._exact = exact_serializer(msgtype)

    def serialise(self, msg):
        check_message(msg, self.msgtype, f"publisher {self.topic}")
        data = self._exact(msg)
        if data is None:
            raise RuntimeError(f"{self.topic}: not in exact wire form")
        return data

    def publish(self, msg):
        data = self.bus.timing(self.node, "serialise (check + CDR)", self.serialise, msg)
        for transport, sub in self.bus.subs.get(self.topic, ()):
            transport.inbox.append((sub, data))

    def has_subscribers(self):
        """As the DDS publisher: whether a reader is matched (the node skips ``tf`` and the
        paths nobody subscribes to, as in the real lockstep run)."""
        return bool(self.bus.subs.get(self.topic))

    @property
    def matched_subscriptions(self):
        return len(self.bus.subs.get(self.topic, ()))


class LoopTransport(Transport):
    """A node on the :class:`Bus`: publishers, DdsSubscription decoding, one timer."""

    kind = "loop"

    def __init__(self, bus, name, params):
        super().__init__()
        self.bus, self.node_name, self.params = bus, name, dict(params)
        self.logger = StreamLogger(name)
        self.inbox = collections.deque()
        self.timers = []
        self.closed = False

    def publisher(self, topic, msgtype, qos="default"):
        return LoopPublisher(self.bus, self.node_name, topic.lstrip("/"), msgtype)

    def subscribe(self, topic, msgtype, callback, qos="default", *, max_bytes=None,
                  max_counts=None, max_per_turn=None, screen=None, on_drop=None):
        sub = DdsSubscription(self, topic, msgtype, callback, None, False, max_bytes,
                              max_counts, max_per_turn=max_per_turn, screen=screen,
                              on_drop=on_drop)
        self.bus.subs[topic.lstrip("/")].append((self, sub))
        return sub

    def timer(self, period_s, callback):
        self.timers.append([period_s, time.monotonic() + period_s, callback])
        return None

    def count_publishers(self, topic):
        return 1

    def service(self, *args, **kwargs):
        raise NotImplementedError("no services in this bench")

    def trigger_client(self, name):
        raise NotImplementedError

    def now_ns(self):
        return 0

    def spin_once(self, timeout_s=None):
        """One executor turn: deliver the queued samples, then the due timers."""
        while self.inbox:
            sub, data = self.inbox.popleft()
            self.bus.timing(self.node_name, "take/decode (size screen, CDR -> message)",
                            sub.handle_raw, data)
        now = time.monotonic()
        for tm in self.timers:
            if now >= tm[1]:
                tm[1] = now + tm[0]
                self.bus.timing(self.node_name, "timer tick (its own Python)", tm[2])

    def deliver(self, callback, msg, topic):
        """The callback, timed as the node's own Python (less the timed parts it runs)."""
        return self.bus.timing(self.node_name, "callbacks (node Python around the parts)",
                               super().deliver, callback, msg, topic)

    def spin(self):
        raise NotImplementedError

    def shutdown(self):
        self.closed = True


def build(scenario: str):
    p = flatten(read_params_file(REPO / "config" / f"{scenario}.yaml"))
    p.update(lockstep=True, control_rate=1000.0, dt=0.001, real_time_factor=0.0,
             use_sim_time=True)
    bus = Bus()
    dyn_params = {**node_parameter_defaults(p), **{k: v for k, v in p.items()}}
    dt = LoopTransport(bus, "dynamics_node", dyn_params)
    core = DynamicsCore.from_params({k: v for k, v in p.items()
                                     if k in node_parameter_defaults(p)})
    dyn = DynamicsNode(dt, core)
    ct = LoopTransport(bus, "controller_node", p)
    ctrl = ControllerNode(ct, ControllerCore.from_params(p))
    return bus, dt, ct, dyn, ctrl


def timed(bus, obj, name, node, part):
    """Count the time of ``obj.name(...)`` calls as ``(node, part)`` (exclusive)."""
    fn = getattr(obj, name)
    setattr(obj, name, lambda *a, **k: bus.timing(node, part, fn, *a, **k))


def timed_generator(bus, obj, name, node, part):
    """Count the time of each step of the generator ``obj.name(...)`` as ``(node, part)``."""
    fn = getattr(obj, name)

    def wrapper(*a, **k):
        it = fn(*a, **k)
        while True:
            try:
                item = bus.timing(node, part, next, it)
            except StopIteration:
                return
            yield item
    setattr(obj, name, wrapper)


def time_parts(bus, dyn, ctrl):
    """The parts of a period that are timed (the rest is the nodes' Python around them)."""
    d, c = "dynamics_node", "controller_node"
    core = dyn.core
    timed(bus, core.sim, "step", d, "engine step (Simulator.step)")
    timed(bus, core.energy_guard, "check", d, "energy check (energy + snapshot)")
    timed_generator(bus, core, "iter_state_messages", d, "state messages (build)")
    for name in ("apply_joint_command", "apply_base_wrench", "apply_effort_command"):
        timed(bus, core, name, d, "command input (parse, check, hold)")
    timed(bus, core.schedule, "plan", d, "publish schedule (plan)")
    timed(bus, ctrl.core, "compute", c, "controller law (compute)")
    timed(bus, ctrl.core, "on_joint_state", c, "state input (parse, check)")
    timed(bus, ctrl.core, "on_odometry", c, "state input (parse, check)")
    timed(bus, ctrl.core, "command_messages", c, "command messages (build)")


def run(bus, dt, ct, dyn, periods: int) -> dict:
    """``periods`` lockstep periods; CPU per node turn (process time), split by part."""
    core = dyn.core
    spent = collections.Counter()
    step0 = core.steps
    while core.steps - step0 < periods * core.steps_per_period:
        t0 = CLOCK()
        s0 = core.steps
        dt.spin_once()
        t1 = CLOCK()
        ct.spin_once()
        t2 = CLOCK()
        spent["dynamics_node"] += t1 - t0
        spent["controller_node"] += t2 - t1
        if not dt.inbox and not ct.inbox and core.steps == s0 and not dt.timers:
            raise RuntimeError("lockstep stalled")
    done = (core.steps - step0) / core.steps_per_period
    return {"periods": done, "spent": spent}


def best_of(bus, dt, ct, dyn, args) -> None:
    """The least CPU time (process time: both nodes, the whole loop) per period over
    ``--best-of`` batches of ``--periods`` periods, and the Python function calls per period
    (cProfile's count over one batch: independent of the machine's load)."""
    run(bus, dt, ct, dyn, 300)                       # warm-up: compiled kernels, caches
    per = []
    for _ in range(args.best_of):
        c0 = time.process_time()
        r = run(bus, dt, ct, dyn, args.periods)
        per.append((time.process_time() - c0) / r["periods"])
    prof = cProfile.Profile()
    prof.enable()
    r = run(bus, dt, ct, dyn, args.periods)
    prof.disable()
    calls = pstats.Stats(prof).total_calls / r["periods"]
    per.sort()
    print(f"{args.scenario}: CPU µs per lockstep period (both nodes, no wire), best of "
          f"{args.best_of} batches of {args.periods}: {per[0] * 1e6:.0f} (median "
          f"{per[len(per) // 2] * 1e6:.0f}); Python calls per period {calls:.0f}; load "
          f"average {os.getloadavg()[0]:.1f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--periods", type=int, default=3000)
    ap.add_argument("--scenario", default="spacecraft_arm")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--best-of", type=int, default=0, metavar="K",
                    help="only the least CPU time per period of K batches of --periods (no "
                         "parts timed), and the Python calls per period: figures a busy "
                         "machine disturbs least")
    args = ap.parse_args(argv)
    bus, dt, ct, dyn, ctrl = build(args.scenario)
    if args.best_of:
        return best_of(bus, dt, ct, dyn, args)
    time_parts(bus, dyn, ctrl)
    run(bus, dt, ct, dyn, 300)                       # warm-up: compiled kernels, caches
    bus.spent.clear()
    w0, c0 = time.perf_counter(), time.process_time()
    r = run(bus, dt, ct, dyn, args.periods)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    n = r["periods"]
    us = 1e6 / n
    print(f"{args.scenario}: {n:.0f} lockstep periods, {wall * us:.0f} µs of wall time per "
          f"period in one process (real-time factor {1e-3 * n / wall:.2f} without the wire), "
          f"{cpu * us:.0f} µs of CPU time; load average {os.getloadavg()[0]:.1f}\n")
    print("| node | part | CPU µs per period |")
    print("|---|---|---:|")
    for node in ("dynamics_node", "controller_node"):
        total = r["spent"][node]
        parts = {part: v for (nd, part), v in bus.spent.items() if nd == node}
        for part, v in sorted(parts.items(), key=lambda kv: -kv[1]):
            print(f"| {node} | {part} | {v * us:.1f} |")
        rest = total - sum(parts.values())
        print(f"| {node} | executor turn and loop (the rest) | {rest * us:.1f} |")
        print(f"| {node} | **total** | **{total * us:.1f}** |")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        run(bus, dt, ct, dyn, min(args.periods, 1000))
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(35)


if __name__ == "__main__":
    main()
