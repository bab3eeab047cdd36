"""The executor parts of the DDS transport: the wait set (:class:`DdsWaiter`), and the
composition of several nodes in one process on one executor (:class:`DdsComposition`) with
in-process delivery between them (:class:`IntraProcess`), as rclcpp's component container
and intra-process communication do it.

Why compose: between two processes, every sample of a lockstep period is a DDS write, a
wake-up of the other process and a take (docs/performance.md, "The lockstep loop over DDS").
Composed, a sample from one node to another is handed over as its serialized bytes to the
subscription's queue in the same process, and the one executor delivers it in its next turn
without waiting: no DDS round trip, no wake-up.  The publication to DDS still happens for the
readers outside (RViz, ``ros2 topic echo``, a recorder).

Rules (rclcpp's, for a DDS transport):

* a subscription of a composed node whose durability is volatile takes its in-process samples
  from the queue, and its DDS reader ignores the writers of this process (Cyclone
  ``IGNORELOCAL_PROCESS``, rclcpp's ``ignore_local_publications``): no sample twice;
* a publisher hands a sample to every such subscription of the composition on its topic, of
  its type, whose QoS DDS would match (a reliable subscription takes no best-effort
  publisher), at most the subscription's history depth queued (KEEP_LAST);
* every sample is also written to DDS, whether a reader outside is matched or not: a write
  that no reader takes costs Cyclone ~1.8 us, the check whether one is matched ~1.4 us
  (``get_publication_matched_status``), and leaving the unmatched writes out did not change
  the composed lockstep's CPU per period (median 358 us with the check, 352 us without, 4
  rounds alternating, load ~4); always writing also serves a reader that joins at any moment;
* transient-local subscriptions stay on DDS (they match the writers of this process).
"""
from __future__ import annotations

import ctypes
import time
from collections import deque
from typing import Any

from cyclonedds.core import DDSException, GuardCondition, ReadCondition, WaitSet
from cyclonedds.internal import dds_c_t

from .dds_wire import ANY_SAMPLE

__all__ = ["DdsWaiter", "IntraProcess", "DdsComposition", "FLOOD_PACE_S"]

#: Longest pause of the executor after a turn in which a subscription dropped input (a
#: flood): the next turn comes at the next timer or after this long (see ``spin_once``).
FLOOD_PACE_S = 0.005
#: While in-process samples are queued a composition's executor turns without waiting, and
#: looks at the DDS readers (a wait of 0) at most this often (ns): input from outside waits
#: at most this much longer, and most turns of a loop between two composed nodes (two per
#: lockstep period at 1 kHz) skip the poll (measured ~5-7 us of CPU each, see
#: docs/performance.md).
BUSY_POLL_NS = 1_000_000
#: what a turn that did not poll the readers found ready: none
_NONE_READY: frozenset = frozenset()


class DdsWaiter:
    """A wait set and its shutdown guard, created on ``owner`` (a participant, or a domain
    when the readers of several participants wait in it), with the map from each reader's
    read condition to the reader's handle."""

    def __init__(self, owner: Any) -> None:
        self.waitset = WaitSet(owner)
        self.guard = GuardCondition(owner)
        self.waitset.attach(self.guard)
        # the wait set's attach argument of each reader's condition -> the reader's handle,
        # and the array dds_waitset_wait fills with the attach arguments that triggered
        self._reader_of: dict[int, int] = {}
        self._triggered = (dds_c_t.attach * len(self.waitset.attached))()

    def attach_reader(self, reader: Any) -> ReadCondition:
        """Attach a read condition of ``reader`` (any sample); returns the condition."""
        cond = ReadCondition(reader, ANY_SAMPLE)
        self.waitset.attach(cond)
        # WaitSet.attach passes the address of a c_int of its own as the attach argument
        arg = next(v for e, v in self.waitset.attached if e is cond)
        self._reader_of[ctypes.addressof(arg)] = reader._ref
        self._triggered = (dds_c_t.attach * len(self.waitset.attached))()
        return cond

    def wait(self, wait_ns: int) -> set | None:
        """Wait up to ``wait_ns`` for data (or the shutdown guard); returns the handles of
        the readers whose read condition triggered (they hold samples: the conditions are
        level-triggered, so a reader left with data triggers the next wait again), or None
        if that is not known (more triggered than the array holds: drain all)."""
        xs = self._triggered
        ws = self.waitset
        n = ws._waitset_wait(ws._ref, xs, len(xs), wait_ns)
        if n < 0:
            raise DDSException(n, f"Occurred while waiting in {ws!r}")
        if n > len(xs):
            return None
        readers = self._reader_of
        return {readers.get(xs[i]) for i in range(n)}

    def wake(self) -> None:
        """End the current and every later wait at once (shutdown)."""
        self.guard.set(True)

    @property
    def entities(self) -> list:
        """The guard and the wait set, in the order they are deleted."""
        return [self.guard, self.waitset]


def _deliverable(writer_spec: Any, reader_spec: Any) -> bool:
    """DDS's match of a writer's and a reader's QoS for in-process delivery: volatile readers
    only (see the module docstring), and a reliable reader only from a reliable writer."""
    return not reader_spec.transient_local and (writer_spec.reliable or
                                                not reader_spec.reliable)


class IntraProcess:
    """The in-process routes of a composition: the volatile subscriptions by topic, and the
    samples queued for them since the last turn."""

    def __init__(self) -> None:
        #: (topic, type) -> [(subscription, its QoS)] of every node of the composition
        self.subscriptions: dict[tuple[str, str], list] = {}
        #: subscription -> deque of CDR samples, in the order the subscriptions got theirs
        self.pending: dict[Any, deque] = {}

    @staticmethod
    def takes(spec: Any) -> bool:
        """Whether a subscription of QoS ``spec`` takes its in-process samples here (and
        ignores this process's writers on DDS)."""
        return not spec.transient_local

    def add_subscription(self, sub: Any, spec: Any) -> None:
        self.subscriptions.setdefault((sub.topic, sub.msgtype), []).append((sub, spec))

    def remove(self, subs: Any) -> None:
        """Forget ``subs`` (a node shut down)."""
        gone = set(map(id, subs))
        for key, routes in self.subscriptions.items():
            self.subscriptions[key] = [r for r in routes if id(r[0]) not in gone]
        for sub in list(self.pending):
            if id(sub) in gone:
                del self.pending[sub]

    def route(self, topic: str, msgtype: str, writer_spec: Any) -> "_Route":
        """The subscriptions a publisher of ``topic``/``msgtype`` with QoS ``writer_spec``
        hands its samples to (:meth:`_Route.send`): a live view of the route, so that
        subscriptions created after the publisher are served too."""
        routes = self.subscriptions.setdefault((topic, msgtype), [])
        return _Route(self, routes, writer_spec)

    def deliver(self) -> bool:
        """One turn: every subscription with samples queued gets them (at most its depth,
        the newest ``max_per_turn`` of them, :meth:`DdsSubscription.deliver_samples`), the
        ``/clock`` subscriptions first, then in the order the samples were queued; samples
        published meanwhile wait for the next turn.  True if one dropped input."""
        if not self.pending:
            return False
        pending, self.pending = self.pending, {}
        flooded = False
        for sub in sorted(pending, key=_rank):
            if sub.deliver_samples(list(pending[sub])):
                flooded = True
        return flooded


def _rank(sub: Any) -> int:
    return sub.rank


class _Route:
    """The subscriptions of one topic a publisher's samples go to (see
    :meth:`IntraProcess.route`): those whose QoS matches the publisher's, looked up again
    when the topic's subscriptions changed."""

    def __init__(self, intra: IntraProcess, routes: list, writer_spec: Any) -> None:
        self._intra = intra
        self._routes = routes
        self._spec = writer_spec
        self._seen = -1
        self._targets: list = []

    def targets(self) -> list:
        if len(self._routes) != self._seen:
            self._seen = len(self._routes)
            self._targets = [sub for sub, spec in self._routes
                             if _deliverable(self._spec, spec)]
        return self._targets

    def send(self, data: bytes) -> None:
        """Queue ``data`` for each subscription of the route (the newest ``depth`` of each
        subscription's samples kept, as KEEP_LAST)."""
        targets = self.targets()
        if not targets:
            return
        pending = self._intra.pending
        for sub in targets:
            queue = pending.get(sub)
            if queue is None:
                queue = pending[sub] = deque(maxlen=max(1, sub.depth))
            queue.append(data)


class DdsComposition:
    """Several :class:`~vm_dynamics.transport.dds.DdsTransport` nodes in one process on one
    executor (rclcpp's component container): one wait set for the readers of all of them,
    created on their domain, and the in-process routes between them (:class:`IntraProcess`).

    Create the transports with ``composition=`` this object (``make_transport``), then
    :meth:`spin` (or any member's ``spin``/``spin_once``, which turn this executor)."""

    kind = "dds"

    def __init__(self) -> None:
        self.members: list = []
        self.intra = IntraProcess()
        self.waiter: DdsWaiter | None = None
        #: True once a member shut down (the container's process is ending)
        self.closed = False
        self._domain_id: int | None = None
        self._flooded = False
        self._polled_ns = 0

    def join(self, transport: Any, domain_id: int, domain: Any) -> DdsWaiter:
        """Add ``transport`` (on ``domain_id``, whose Cyclone domain entity is ``domain``);
        returns the executor's wait set."""
        if self._domain_id is None:
            self._domain_id = domain_id
            self.waiter = DdsWaiter(domain)
        elif domain_id != self._domain_id:
            raise ValueError(f"composed nodes must share one DDS domain (ROS_DOMAIN_ID): "
                             f"{domain_id} != {self._domain_id}")
        self.members.append(transport)
        return self.waiter

    def leave(self, transport: Any, subscriptions: Any) -> None:
        """``transport`` shuts down: its subscriptions leave the routes; the executor stops."""
        self.closed = True
        self.intra.remove(subscriptions)
        if self.waiter is not None:
            self.waiter.wake()

    def spin(self) -> None:
        """Turns until a member shuts down or a SIGINT/SIGTERM (a member's ``spin``)."""
        if self.members:
            self.members[0].spin()

    def spin_once(self, timeout_s: float | None = None) -> None:
        """One turn of every member: wait for DDS data or a due timer -- not at all while
        in-process samples are queued (they need no wake-up; the readers are then polled at
        most every :data:`BUSY_POLL_NS`) --, then deliver the in-process samples, drain the
        DDS readers that hold data, and run the due timers."""
        if self.closed or self.waiter is None:
            return
        if self._flooded:       # as DdsTransport.spin_once: a flood waits for the timers
            self._flooded = False
            time.sleep(min(min(t.wait_ns(timeout_s) for t in self.members) * 1e-9,
                           FLOOD_PACE_S))
            ready = self.waiter.wait(0)
            self._polled_ns = time.monotonic_ns()
        elif self.intra.pending:
            now = time.monotonic_ns()
            if now - self._polled_ns < BUSY_POLL_NS:
                ready = _NONE_READY
            else:
                ready = self.waiter.wait(0)
                self._polled_ns = now
        else:
            ready = self.waiter.wait(min(t.wait_ns(timeout_s) for t in self.members))
            self._polled_ns = time.monotonic_ns()
        if self.closed:
            return
        flooded = self.intra.deliver()
        for t in self.members:
            if t.run_turn(ready):
                flooded = True
            if self.closed:
                return
        self._flooded = flooded

    def close(self) -> None:
        """Delete the wait set (after every member shut down)."""
        if self.waiter is not None:
            for ent in self.waiter.entities:
                ent.__del__()
            self.waiter = None
