#!/usr/bin/env python
"""CPU time of each part of a lockstep period in isolation: one part called over and over on
the live state of an in-memory lockstep.

    .venv/bin/python bench/lockstep_isolated.py [--scenario spacecraft_arm] [--calls 1000]

The two nodes run 300 lockstep periods on ``bench/lockstep_parts.py``'s in-memory bus (1 kHz,
``dt`` 1 ms, ``real_time_factor`` 0; every sample serialised and decoded as on DDS), then each
part is called ``--calls`` times in a row, five times; printed: the least and the median CPU
time (``time.process_time``) per call.  Hot caches and no other work between the calls: a
floor for each part, to set against the nodes' CPU per period on the wire
(``bench/lockstep_profile.py``) -- what is not in these parts is the Python around them, the
executor turns and the cost of running on caches the other node and the machine left cold.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lockstep_parts as lp  # noqa: E402

from vm_dynamics.transport.exact_cdr import exact_serializer  # noqa: E402


def timed(label: str, fn, calls: int) -> None:
    for _ in range(50):
        fn()
    per = []
    for _ in range(5):
        c0 = time.process_time()
        for _ in range(calls):
            fn()
        per.append((time.process_time() - c0) / calls * 1e6)
    per.sort()
    print(f"| {label} | {per[0]:.1f} | {per[2]:.1f} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="spacecraft_arm")
    ap.add_argument("--calls", type=int, default=1000)
    args = ap.parse_args(argv)
    bus, dt, ct, dyn, ctrl = lp.build(args.scenario)
    last = {}                                  # topic -> (message, its CDR bytes), the latest
    publish = lp.LoopPublisher.publish

    def keep(self, msg):
        last[self.topic] = (msg, self.serialise(msg))
        publish(self, msg)
    lp.LoopPublisher.publish = keep
    lp.run(bus, dt, ct, dyn, 300)
    core, cc, sim, n = dyn.core, ctrl.core, dyn.core.sim, args.calls
    subs = {topic: sub for topic, pairs in bus.subs.items() for _, sub in pairs}
    print(f"{args.scenario}: CPU µs per call, {n} calls in a row, least and median of 5\n")
    print("| part | least | median |")
    print("|---|---:|---:|")
    held, snap = core.inputs.held, sim.snapshot()
    timed("dynamics: `Simulator.step(inputs=held)` (one RKMK4 step)",
          lambda: sim.step(inputs=held), n)
    sim.restore(snap)
    guard = core.energy_guard

    def check():
        guard.checked_steps = -1              # as after a step: the check runs
        guard.check()
    timed("dynamics: energy check of a state (`EnergyGuard.check`)", check, n)
    timed("dynamics: — its `Simulator.energy()`", sim.energy, n)
    timed("dynamics: — its `Simulator.snapshot()`", sim.snapshot, n)
    timed("dynamics: held inputs rebuilt (`CommandInputs.update`)", core.inputs.update, n)

    def states():
        for _ in core.iter_state_messages():
            pass
    timed("dynamics: state messages built (`iter_state_messages`)", states, n)
    msgs = dict(core.iter_state_messages())
    for key in ("joint_states", "odom"):
        ser = exact_serializer(msgs[key].__msgtype__)
        timed(f"dynamics: {key} serialised (check + CDR)", lambda: ser(msgs[key]), n)
    timed("dynamics: /clock message built", core.clock_message, n)
    for topic in ("joint_commands", "base_wrench", "joint_states", "odom"):
        if topic in last and topic in subs and subs[topic]._fast is not None:
            sub, data = subs[topic], last[topic][1]
            timed(f"decode {topic} (one-pass decoder)", lambda: sub._fast(data), n)
    js, od = last["joint_states"][0], last["odom"][0]

    def state_input():
        cc.on_joint_state(js, None)
        cc.on_odometry(od, None)
    timed("controller: state input (`on_joint_state` + `on_odometry`)", state_input, n)

    def compute():
        cc._answered, cc._new_js, cc._new_od = None, True, True
        cc.compute()
    timed("controller: the law (`ControllerCore.compute`)", compute, n)

    def commands():
        cc._answered, cc._new_js, cc._new_od = None, True, True
        cc.command_messages()
    timed("controller: law + command messages built (`command_messages`)", commands, n)


if __name__ == "__main__":
    main()
