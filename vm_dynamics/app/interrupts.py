"""Ctrl-C during a ``vm-sim`` run: deferred while the run writes what it computed
(:class:`DeferredInterrupt`), and the announcement of long phases (:func:`phase`)."""
from __future__ import annotations

import contextlib
import signal
import time

__all__ = ["phase", "DeferredInterrupt"]


@contextlib.contextmanager
def phase(log, what: str):
    """Announce a phase that may take more than a second and report its duration."""
    t0 = time.perf_counter()
    log(f"vm-sim: {what} ...")
    yield
    dt = time.perf_counter() - t0
    if dt >= 1.0:
        log(f"vm-sim: {what}: {dt:.1f} s")


class DeferredInterrupt:
    """While active, SIGINT sets :attr:`requested` (the work continues: the summary is always
    written).  On exit the previous handler comes back, except after an interrupted run
    (``exiting``, or a Ctrl-C inside): the process is then on its way out with 130, and a
    further Ctrl-C is ignored so that it cannot turn that exit into a death by SIGINT."""

    def __init__(self, log, exiting: bool = False,
                 message: str = "skipping the remaining plots; writing the summary"):
        self.requested = False
        self._exiting = exiting
        self._log = log
        self._message = message
        self._previous = None

    def _handler(self, signum, frame):
        if not self.requested:
            self._log(f"vm-sim: Ctrl-C: {self._message}")
        self.requested = True

    @contextlib.contextmanager
    def interruptible(self):
        """Inside, SIGINT raises ``KeyboardInterrupt`` again; it is caught here, recorded in
        :attr:`requested`, and ends only the block (for optional, long phases)."""
        if self._previous is None:
            yield
            return
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            yield
        except KeyboardInterrupt:
            self.requested = True
            self._log("vm-sim: Ctrl-C: skipped; writing the outputs")
        finally:
            signal.signal(signal.SIGINT, self._handler)

    def __enter__(self):
        try:
            self._previous = signal.signal(signal.SIGINT, self._handler)
        except ValueError:          # not the main thread: nothing to defer
            self._previous = None
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, signal.SIG_IGN if self._exiting or self.requested
                          else self._previous)
        return False
