"""vm_dynamics.nodes.entry.run_node: what a node built at start-up leaves to the garbage
collector while it spins and when it exits, without ROS or DDS (a stand-in transport)."""
from __future__ import annotations

import gc
import signal
import weakref

import pytest

from vm_dynamics.nodes import entry


class _Cycle:
    """An object in a reference cycle: only the cyclic collector can free it."""

    def __init__(self):
        self.me = self


class _Transport:
    """What run_node needs of a transport; ``spin`` records what the collector sees."""

    node_name = "probe"

    def __init__(self, built):
        self.built, self.seen = built, {}

    def shutdown_requested(self):
        return False

    def spin(self):
        tracked = {id(o) for o in gc.get_objects()}        # generations 0-2, not the frozen
        self.seen["tracked"] = [id(o) in tracked for o in self.built["kept"]]
        self.seen["garbage_alive"] = self.built["garbage"]() is not None

    def shutdown(self):
        pass


@pytest.fixture()
def run(monkeypatch):
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    built: dict = {}
    transport = _Transport(built)
    monkeypatch.setattr(entry, "make_transport", lambda name, defaults, argv: transport)

    def start(t):
        built["kept"] = [_Cycle() for _ in range(1000)]     # e.g. the model, the dispatchers
        built["garbage"] = weakref.ref(_Cycle())            # start-up garbage
    try:
        yield lambda: (entry.run_node("probe", dict, ["probe"], start), transport.seen)
    finally:
        gc.unfreeze()
        for s, h in handlers.items():
            signal.signal(s, h)


def test_objects_built_at_start_up_are_frozen_before_the_node_spins(run):
    """The collector's full collections while spinning and at exit (several seconds of CPU on
    a loaded machine after a Ctrl-C, past ``ros2 launch``'s 5 s escalation) do not traverse
    what start-up built; the start-up garbage was collected first, not frozen with it."""
    code, seen = run()
    assert code == 0
    assert not any(seen["tracked"]), "start-up objects still in the collector's generations"
    assert not seen["garbage_alive"], "start-up garbage frozen instead of collected"
