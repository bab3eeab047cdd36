"""The life cycle every node executable shares: create the transport, build the node, spin, and
end cleanly -- also for several nodes composed in one process (:func:`run_nodes`).

Exit codes: 0 after spinning (also on Ctrl-C / SIGTERM at any moment, start-up included, as
``ros2 launch`` expects), 2 for a configuration error (one line on stderr, or a FATAL log line
once the transport exists).
"""
from __future__ import annotations

import gc
import os
import sys
import threading
from typing import Callable

from ..core.signals import deferred_interrupts, sigterm_as_interrupt
from ..transport import make_composition, make_transport, shutdown_quietly

__all__ = ["freeze_start_up_objects", "run_node", "run_nodes"]


#: How often the main thread looks for a stop signal while the node is being built (s).
START_POLL_S = 0.05


def _start_in_worker(start: Callable, transport, stopped: Callable[[], bool]):
    """Run ``start(transport)`` in a worker thread while this (main) thread waits for it or
    for a stop signal.  Returns ``("done", None)``, ``("error", exc)`` or ``("stopped", None)``
    — the last as soon as ``stopped()`` is true or a handler raised ``KeyboardInterrupt``,
    with the worker still running.  (The wait is on an event of our own: an interrupted
    ``Thread.join`` marks a running thread as stopped in CPython 3.11.)"""
    outcome: dict = {}
    finished = threading.Event()

    def work():
        try:
            start(transport)
            outcome["done"] = None
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            outcome["error"] = exc
        finally:
            finished.set()
    threading.Thread(target=work, name=f"{transport.node_name or 'node'}-start",
                     daemon=True).start()
    try:
        while not finished.wait(START_POLL_S):
            if stopped():
                return "stopped", None
    except KeyboardInterrupt:    # a handler that raises (the DDS transport's for SIGTERM)
        if not finished.is_set():
            return "stopped", None
        raise
    return next(iter(outcome.items()))


def _exit_now(transport, name: str) -> None:
    """End the process at once, exit code 0, from the main thread while the node's set-up
    (e.g. the first compilation of the kernels, minutes) still runs in its worker thread: it
    holds nothing worth saving, and waiting for it is what makes ``ros2 launch`` escalate to
    SIGTERM and SIGKILL.  numba writes its disk cache atomically, so a half-compiled kernel
    leaves no broken cache entry."""
    try:
        transport.logger.info("stopped during start-up; exiting")
    except Exception:  # noqa: BLE001 - the middleware may already be shut down
        print(f"[{name}] stopped during start-up; exiting", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def freeze_start_up_objects() -> None:
    """Collect the start-up garbage, then move every object alive now (modules, the model,
    the compiled kernels' dispatchers, all living as long as the process) out of the cyclic
    garbage collector's generations (:func:`gc.freeze`).

    Why: otherwise the collector traverses them again in every full collection while the
    node spins and in the interpreter's final collections at exit, which on a loaded machine
    takes seconds of CPU — longer than the 5 s after which ``ros2 launch`` escalates a
    Ctrl-C to SIGTERM with an ERROR."""
    gc.collect()
    gc.freeze()


def run_node(name: str, parameter_defaults: Callable[[], dict], argv: list,
             start: Callable) -> int:
    """Run a node: ``transport = make_transport(name, parameter_defaults(), argv)``, then
    ``start(transport)`` (builds the core and wires the node; a ``ValueError`` is a
    configuration error), then ``transport.spin()`` until shutdown.

    A Ctrl-C or SIGTERM at any moment of start-up ends the node with exit code 0 within
    about :data:`START_POLL_S`: the transport's creation is never interrupted half-way (the
    signal is recorded and acted on after it), and ``start`` — model loading and, on a fresh
    install, minutes of kernel compilation — runs in a worker thread that the main thread
    abandons when a signal arrives.  Once the node is built, the objects alive are frozen
    (:func:`freeze_start_up_objects`), so that stopping it takes no long collection."""
    return run_nodes([(name, parameter_defaults, argv, start)], composed=False)


def run_nodes(nodes: list, composed: bool = True) -> int:
    """Run the nodes ``[(name, parameter_defaults, argv, start), ...]`` as :func:`run_node`
    runs one; ``composed``: all in this process on one executor
    (:func:`~vm_dynamics.transport.make_composition`, a component container), each with its
    own name, arguments and parameters, built in order, then spun together.

    A configuration error of any node ends the process with exit code 2 (its line on stderr,
    or a FATAL log line of that node): the container does not run half of a closed loop.
    The nodes are shut down in the reverse order."""
    transports: list = []
    name = nodes[0][0]
    try:
        # imports of DDS/rclpy and the transport's creation are never interrupted half-way: a
        # Ctrl-C or SIGTERM in them is recorded and ends the process after them
        with deferred_interrupts() as stop:
            composition = make_composition() if composed else None
            for name, parameter_defaults, argv, _ in nodes:
                extra = {} if composition is None else {"composition": composition}
                try:
                    transports.append(make_transport(name, parameter_defaults(), argv,
                                                     **extra))
                except ValueError as exc:
                    print(f"{name}: error: {exc}", file=sys.stderr)
                    return 2
                if stop:
                    return 0

            def start_all(_):
                for transport, (_, _, _, start) in zip(transports, nodes):
                    try:
                        start(transport)
                    except ValueError as exc:
                        raise _NodeConfigurationError(transport, exc) from exc
            state, exc = _start_in_worker(
                start_all, transports[0],
                lambda: bool(stop) or any(t.shutdown_requested() for t in transports))
            if state == "done":
                freeze_start_up_objects()
        if state == "stopped":
            _exit_now(transports[0], name)
        if state == "error":
            if isinstance(exc, _NodeConfigurationError):
                exc.transport.logger.fatal(f"invalid configuration: {exc.error}")
                return 2
            raise exc
        if stop or any(t.shutdown_requested() for t in transports):
            return 0
        # SIGTERM ends spin like Ctrl-C on both transports (the rclpy transport's start-up
        # leaves SIGTERM at its default action, which would kill the node mid-callback)
        sigterm_as_interrupt()
        transports[0].spin()          # composed: the one executor of every node
    except KeyboardInterrupt:  # Ctrl-C during start-up or spin: a normal exit
        pass
    finally:
        for transport in reversed(transports):
            shutdown_quietly(transport)
        if composed and transports:
            close = getattr(transports[0].composition, "close", None)
            if close is not None:
                close()
    return 0


class _NodeConfigurationError(Exception):
    """A node's ``start`` rejected its configuration (its ``ValueError``)."""

    def __init__(self, transport, error: ValueError) -> None:
        super().__init__(str(error))
        self.transport, self.error = transport, error
