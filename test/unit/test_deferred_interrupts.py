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
