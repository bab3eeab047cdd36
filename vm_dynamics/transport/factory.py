"""Choosing and creating a node's transport; quiet shutdown after Ctrl-C."""

from __future__ import annotations

import importlib
import os
import signal
import sys
from typing import Any, Mapping, Sequence

from .base import Transport

__all__ = ["TRANSPORT_ENV", "rclpy_importable", "resolve_kind", "make_transport",
           "make_composition", "ignore_interrupts", "shutdown_quietly"]

TRANSPORT_ENV = "VM_DYNAMICS_TRANSPORT"


def rclpy_importable() -> bool:
    try:
        importlib.import_module("rclpy")
    except ImportError:
        return False
    return True


def resolve_kind(kind: str = "auto", env: Mapping[str, str] | None = None) -> str:
    """Transport kind: explicit ``kind`` > ``$VM_DYNAMICS_TRANSPORT`` > rclpy if importable."""
    env = os.environ if env is None else env
    if kind not in ("auto", "rclpy", "dds"):
        raise ValueError(f"kind must be 'auto', 'rclpy' or 'dds', got {kind!r}")
    if kind == "auto":
        forced = env.get(TRANSPORT_ENV, "").strip().lower()
        if forced:
            if forced not in ("rclpy", "dds"):
                raise ValueError(f"{TRANSPORT_ENV}={env[TRANSPORT_ENV]!r}: expected rclpy or dds")
            kind = forced
        else:
            kind = "rclpy" if rclpy_importable() else "dds"
    if kind == "rclpy" and not rclpy_importable():
        raise ValueError("transport rclpy requested but rclpy cannot be imported (source a ROS 2 "
                         f"setup file, or use {TRANSPORT_ENV}=dds)")
    return kind


def make_composition(kind: str = "auto") -> Any:
    """The executor of several nodes composed in this process (a component container): a
    :class:`~.dds_executor.DdsComposition` on DDS (one wait set, in-process delivery between
    the nodes), a :class:`~.rclpy_adapter.RclpyComposition` on rclpy (one rclpy executor).
    Pass it as ``composition=`` to :func:`make_transport` for each node."""
    kind = resolve_kind(kind)
    if kind == "rclpy":
        from .rclpy_adapter import RclpyComposition
        return RclpyComposition()
    try:
        from .dds_executor import DdsComposition
    except ImportError as exc:
        raise ValueError(f"no ROS 2 transport: the Cyclone DDS transport needs "
                         f"{exc.name or 'a missing module'}") from None
    return DdsComposition()


def make_transport(node_name: str, params_defaults: Mapping[str, Any] | None = None,
                   argv: Sequence[str] | None = None, *, kind: str = "auto",
                   namespace: str = "", composition: Any = None) -> Transport:
    """Create the node's transport (see the module docstring); with ``composition``
    (:func:`make_composition`) the node is one of several in this process on one executor."""
    kind = resolve_kind(kind)
    if composition is not None and getattr(composition, "kind", kind) != kind:
        raise ValueError(f"a {composition.kind} composition cannot hold a {kind} node")
    argv = list(sys.argv if argv is None else argv)
    if kind == "rclpy":
        from .rclpy_adapter import RclpyTransport
        return RclpyTransport(node_name, params_defaults, argv, namespace=namespace,
                              composition=composition)
    try:
        from .dds import DdsTransport
    except ImportError as exc:
        raise ValueError(
            f'no ROS 2 transport: rclpy is not importable and the Cyclone DDS transport needs '
            f'{exc.name or "a missing module"} (install vm_dynamics[dds] to run without ROS, or '
            f'source a ROS 2 setup file to use rclpy)') from None
    return DdsTransport(node_name, params_defaults, argv, namespace=namespace,
                        composition=composition)


def ignore_interrupts() -> None:
    """Ignore SIGINT/SIGTERM from now on (main thread only; elsewhere a no-op)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (ValueError, OSError):  # not the main thread / unsupported
            pass


def shutdown_quietly(transport: 'Transport | None') -> None:
    """Shut a node down after Ctrl-C without a traceback, even if more signals arrive.

    ``ros2 launch`` forwards SIGINT to its children in addition to the terminal's, so a second
    SIGINT often lands while the node is being destroyed.  Signals are ignored from here on
    (the process is exiting anyway), including after ``rclpy.shutdown()`` re-installs the
    previous handlers.
    """
    ignore_interrupts()
    try:
        if transport is not None:
            transport.shutdown()
    except KeyboardInterrupt:  # pragma: no cover - only if a handler was re-installed
        pass
    finally:
        ignore_interrupts()
