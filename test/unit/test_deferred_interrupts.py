"""core.signals: interrupts recorded during a block and acted on after it."""
import os
import signal

import pytest

from vm_dynamics.core.signals import deferred_interrupts


def test_a_signal_in_the_block_is_recorded_and_the_block_runs_to_its_end():
    ran = []
    with deferred_interrupts() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        ran.append(True)                    # not interrupted half-way
    assert ran == [True] and stop.received == signal.SIGINT
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # restored


def test_raise_after_turns_the_recorded_signal_into_a_keyboard_interrupt_after_the_block():
    ran = []
    with pytest.raises(KeyboardInterrupt):
        with deferred_interrupts(raise_after=True):
            os.kill(os.getpid(), signal.SIGINT)
            ran.append(True)
    assert ran == [True]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with deferred_interrupts(raise_after=True) as stop:    # nothing arrived: nothing raised
        pass
    assert not stop


def test_raise_after_leaves_the_blocks_own_exception_alone():
    with pytest.raises(ValueError, match="bad"):
        with deferred_interrupts(raise_after=True):
            os.kill(os.getpid(), signal.SIGINT)
            raise ValueError("bad")


def test_noted_interrupts_keep_the_handler_and_note_the_signal():
    from vm_dynamics.core.signals import noted_interrupts
    with noted_interrupts() as stop:
        with pytest.raises(KeyboardInterrupt):     # the installed handler still acts
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                pass
        assert stop.received == signal.SIGINT
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # restored


def test_dds_spin_ends_on_a_ctrl_c_whose_exception_a_callback_swallowed(monkeypatch):
    """A Ctrl-C whose KeyboardInterrupt is lost on its way up (here a timer callback catches
    everything, as a C extension that turns it into another error caught by a guard would)
    still ends spin(); before, the node went on until a second Ctrl-C."""
    pytest.importorskip("cyclonedds")
    import pathlib
    here = pathlib.Path(__file__).resolve().parents[1]
    monkeypatch.setenv("CYCLONEDDS_URI", f"file://{here / 'cyclonedds-loopback.xml'}")
    monkeypatch.setenv("ROS_DOMAIN_ID", str(150 + os.getpid() % 80))
    from vm_dynamics.transport.dds import DdsTransport
    t = DdsTransport("swallow", {}, ["swallow"])
    calls = []

    def swallowing():
        calls.append(len(calls))
        if len(calls) == 1:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(10_000):
                    pass
            except BaseException:               # noqa: BLE001 - what the test is about
                calls.append("swallowed")
        elif len(calls) > 2000:                 # spin kept going: stop the test, fail it
            t.shutdown()

    try:
        t.timer(0.001, swallowing)
        t.spin()
    finally:
        t.shutdown()
    assert "swallowed" in calls and len(calls) < 100, len(calls)
