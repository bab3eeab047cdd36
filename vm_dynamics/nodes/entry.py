"""The life cycle every node executable shares: create the transport, build the node, spin, and
end cleanly.

Exit codes: 0 after spinning (also on Ctrl-C / SIGTERM, as ``ros2 launch`` expects), 2 for a
configuration error (one line on stderr, or a FATAL log line once the transport exists).
"""
from __future__ import annotations

import sys
from typing import Callable

from ..core.signals import deferred_interrupts, sigterm_as_interrupt
from ..transport import make_transport, shutdown_quietly

__all__ = ["run_node"]


def run_node(name: str, parameter_defaults: Callable[[], dict], argv: list,
             start: Callable) -> int:
    """Run a node: ``transport = make_transport(name, parameter_defaults(), argv)``, then
    ``start(transport)`` (builds the core and wires the node; a ``ValueError`` is a
    configuration error), then ``transport.spin()`` until shutdown."""
    transport = None
    try:
        # start-up (imports of DDS/rclpy, model loading) is never interrupted half-way: a
        # Ctrl-C or SIGTERM in it is recorded and ends the process once start-up is done
        with deferred_interrupts() as stop:
            try:
                transport = make_transport(name, parameter_defaults(), argv)
            except ValueError as exc:
                print(f"{name}: error: {exc}", file=sys.stderr)
                return 2
            try:
                start(transport)
            except ValueError as exc:
                transport.logger.fatal(f"invalid configuration: {exc}")
                return 2
        if stop:
            return 0
        # SIGTERM ends spin like Ctrl-C on both transports (the rclpy transport's start-up
        # leaves SIGTERM at its default action, which would kill the node mid-callback)
        sigterm_as_interrupt()
        transport.spin()
    except KeyboardInterrupt:  # Ctrl-C during start-up or spin: a normal exit
        pass
    finally:
        shutdown_quietly(transport)
    return 0
