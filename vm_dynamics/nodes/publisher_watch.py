"""Watch the ROS graph for a second publisher of topics a node must be the only source of.

Two simulations on one ``ROS_DOMAIN_ID`` (a ROS user does this by accident: two terminals, a
launch file and a forgotten ``vm-sim``) both publish ``/clock`` and ``/joint_states``; every
subscriber then sees two interleaved time lines, controllers re-initialise and both
simulations diverge, and nothing else says why.  :class:`PublisherWatch` counts the
publishers of such topics (``Transport.count_publishers``, from discovery) every ``period``
seconds of wall time and logs an ERROR naming the topic, the count and what to do, repeated
every ``repeat`` seconds while it lasts, and an INFO when it is over.
"""
from __future__ import annotations

import os
import time
from typing import Callable

__all__ = ["PublisherWatch", "domain_advice"]


def domain_advice() -> str:
    """What to do about a second publisher on this node's domain."""
    domain = os.environ.get("ROS_DOMAIN_ID", "") or "0"
    return (f"is another simulation (or a bag, or a driver) running on ROS_DOMAIN_ID={domain}? "
            f"Stop it, or give each simulation its own ROS_DOMAIN_ID (export "
            f"ROS_DOMAIN_ID=<0..101>) or namespace")


class PublisherWatch:
    """Counts publishers of ``topics`` (``{topic: publishers expected}``: 1 for a topic this
    node publishes, its own publisher being counted, or one it expects a single source of)
    on a transport.

    :meth:`poll` (cheap; call it from any callback) checks once every ``period`` s of
    ``wall`` time; :attr:`competing` is the set of topics with more publishers than expected
    after the latest check.  ``on_change(competing)`` is called when that set changes.
    """

    def __init__(self, transport, topics: dict[str, int], *, period: float = 2.0,
                 repeat: float = 10.0, wall: Callable[[], float] = time.monotonic,
                 on_change: Callable[[set], None] | None = None):
        self.t = transport
        self.topics = dict(topics)
        self.period, self.repeat, self.wall = float(period), float(repeat), wall
        self.on_change = on_change
        self.competing: set[str] = set()
        self.counts: dict[str, int] = {}
        self.checks = 0
        self._next = wall()          # first check at the first poll
        self._failed = False

    def poll(self) -> None:
        now = self.wall()
        if now < self._next:
            return
        self._next = now + self.period
        self.check()

    def check(self) -> set[str]:
        """Count now; log as described in the module docstring; returns :attr:`competing`."""
        self.checks += 1
        competing = set()
        for topic, expected in self.topics.items():
            try:
                n = int(self.t.count_publishers(topic))
            except Exception as exc:  # noqa: BLE001 - a graph query never ends the node
                if not self._failed:
                    self._failed = True
                    self.t.logger.warn(f"cannot count the publishers of {topic}: "
                                       f"{type(exc).__name__}: {exc}; not watching for a "
                                       f"second publisher")
                continue
            self.counts[topic] = n
            if n > expected:
                competing.add(topic)
                self.t.logger.error_throttled(
                    ("competing-publishers", topic), self.repeat,
                    f"{n} publishers of {topic} (expected {expected}): their messages mix "
                    f"and every subscriber misbehaves; {domain_advice()}")
        for topic in sorted(self.competing - competing):
            self.t.logger.info(f"{topic} has a single publisher again")
        if competing != self.competing:
            self.competing = competing
            if self.on_change is not None:
                self.on_change(set(competing))
        return self.competing
