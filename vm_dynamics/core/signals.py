"""Signals during start-up: a Ctrl-C must end a process cleanly at every moment.

A ``KeyboardInterrupt`` raised in the middle of an import can leave a module half-initialised,
and Python wraps it into a ``RuntimeError`` when it lands in a class body's ``__set_name__``
(seen with cyclonedds), which then prints a traceback.  :func:`deferred_interrupts` records
SIGINT/SIGTERM instead of raising while it is active, so imports and transport creation are
never interrupted half-way; the caller checks :attr:`Deferred.received` at a safe point and
exits.
"""
from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["Deferred", "deferred_interrupts", "is_default_or_deferred", "noted_interrupts",
           "sigterm_as_interrupt"]


class Deferred:
    """What arrived while interrupts were deferred: ``received`` is the first signal number."""

    def __init__(self):
        self.received: int | None = None

    def __bool__(self) -> bool:
        return self.received is not None


@contextlib.contextmanager
def deferred_interrupts(raise_after: bool = False):
    """Record SIGINT and SIGTERM instead of raising, for the duration of the block (main
    thread only; elsewhere the block runs unchanged).  The previous handlers come back after
    the block; with ``raise_after`` a signal recorded in it then raises ``KeyboardInterrupt``
    (when the block itself ended normally)."""
    state = Deferred()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def record(signum, frame):
        if state.received is None:
            state.received = signum
    record.deferred = True     # marks the stand-in: code that installs handlers may replace it
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, record)
        except (ValueError, OSError):      # unsupported here
            pass
    try:
        yield state
    finally:
        for sig, handler in previous.items():
            try:
                if signal.getsignal(sig) is record:    # not replaced in the block (rclpy does)
                    signal.signal(sig, handler)
            except (ValueError, OSError):
                pass
    if raise_after and state:
        raise KeyboardInterrupt


def is_default_or_deferred(handler) -> bool:
    """True if ``handler`` is the default action or the stand-in of :func:`deferred_interrupts`
    (what the previous handler was then is the block's business)."""
    return handler is signal.SIG_DFL or getattr(handler, "deferred", False)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def sigterm_as_interrupt() -> None:
    """From now on SIGTERM raises ``KeyboardInterrupt`` in the main thread, like Ctrl-C, so a
    node's spin ends cleanly with exit code 0 (what rclpy's own handlers do for rclpy nodes,
    and what ``ros2 launch`` and process supervisors expect); only if nobody else handles
    SIGTERM (the default action, or the stand-in of :func:`deferred_interrupts`).  Outside
    the main thread: nothing."""
    try:
        if is_default_or_deferred(signal.getsignal(signal.SIGTERM)):
            signal.signal(signal.SIGTERM, _raise_interrupt)
    except ValueError:  # not the main thread
        pass


@contextlib.contextmanager
def noted_interrupts():
    """Note every SIGINT/SIGTERM in a flag (``Deferred.received``), then let the handler that
    was installed act as before (``KeyboardInterrupt`` for Ctrl-C), for the duration of the
    block.  A loop that checks the flag ends even when the ``KeyboardInterrupt`` was lost on
    its way up — raised inside a C extension's call that turns it into another exception,
    which code that must survive any ``Exception`` (a graph query, a callback) then catches.
    Main thread only, and only signals with a Python handler; elsewhere the block runs
    unchanged (the flag stays empty)."""
    state = Deferred()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return
    previous = {}

    def note(signum, frame):
        if state.received is None:
            state.received = signum
        previous[signum](signum, frame)

    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if callable(handler):
            previous[sig] = handler
            signal.signal(sig, note)
    try:
        yield state
    finally:
        for sig, handler in previous.items():
            if signal.getsignal(sig) is note:
                signal.signal(sig, handler)
