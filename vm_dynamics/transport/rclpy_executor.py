"""The executor of the rclpy transport: one reused wait set for a node's hot entities.

Why: rclpy's ``SingleThreadedExecutor`` rebuilds its wait set in Python on every wait -- it
walks every entity of the node, enters each handle, asks each waitable (two QoS event
handlers per publisher and subscription: ~20 on a dynamics node) to add itself, creates a new
``WaitSet`` and, for each callback, wraps it in a ``Task`` whose completion triggers the
executor's guard condition, so the next wait returns at once with nothing to do and the
whole construction runs again.  On the dynamics node that is ~370 µs of CPU per wait and
about two waits per callback: in a lockstep at 1 kHz (a timer tick and two commands per
period on the dynamics node, two states and ``/clock`` on the controller) that alone is
more than the period.

:class:`LeanExecutor` keeps one ``WaitSet`` and the node's entities, with their handles
held, between waits, and rebuilds them only when the node's entities change.  Per wait it
re-adds the handles (rcl clears the entries that were not ready), waits, and runs what is
ready in rclpy's order -- timers, subscriptions, clients, services -- calling the callbacks
directly: one sample per ready subscription per wait (as rclpy: a flooded subscription
cannot starve a timer), the timer called only if ``is_timer_ready()`` (rclpy's check for a
cancelled timer), a service's response sent with ``send_response``, a client's response
set on its pending future.

The critical path of a lockstep: each node waits for the other's messages, which come in
bursts (the state as JointState, Odometry and Clock; the answer as WrenchStamped and the
efforts).  A wait that returns for the first message of a burst finds the next ones arriving
while its callback runs; going round the executor again for each (wait set rebuilt, ``rcl_wait``,
readiness lists: ~30 µs of CPU and one more wake-up) is what the burst costs.  So after the
callbacks of a wait, each subscription is tried once more with a plain take (~1 µs when
empty) -- at most :attr:`LeanExecutor.SWEEPS` rounds, while a round took something -- before
the next wait: a sample that arrived meanwhile is handled in the same turn.  Each
subscription still gives at most ``1 + SWEEPS`` samples per wait, in its own order (one
given a smaller bound in ``max_per_wait`` is not swept: one sample per wait), and the timers
are checked at every wait.

The node's entities are looked at again (the wait set rebuilt if they changed) only when the
node says they may have: rclpy's ``Node`` calls ``wake()`` on its executor whenever it
creates or destroys a subscription, timer, client, service, guard condition or waitable, and
the inner executor's ``wake`` is wrapped to note it (if the node is given to another
executor, the entities are compared at every wait, as before).

A subscription rclpy made with ``raw=False`` (e.g. the ``/clock`` subscription of rclpy's
``TimeSource``) whose type has a decoder in :mod:`~vm_dynamics.transport.rclpy_cdr` is taken
as bytes and decoded there (the same rosidl message as rclpy's conversion; a sample the
decoder declines goes through ``rclpy.serialization.deserialize_message``).

What it leaves to rclpy's own executor (an inner ``SingleThreadedExecutor`` the node is
added to, so ``node.executor`` is a full rclpy executor for whoever needs one, e.g. an
``ActionServer``'s goal tasks): waitables (QoS event handlers, action servers and clients),
guard conditions, tasks and coroutine callbacks.  Their readiness is not watched by the lean
wait set (a waitable adds itself in Python); an rclpy turn -- everything rclpy finds ready,
tasks included, until it finds nothing -- runs at most :attr:`LeanExecutor.RCLPY_TURN_S`
after the previous one, so an action goal or a QoS incompatibility warning waits up to
that long.  A node with a guard condition or a coroutine callback among its subscriptions,
timers, services or clients is run by rclpy's executor entirely.

rclpy API used (public): ``rclpy.executors.SingleThreadedExecutor`` (``add_node``,
``remove_node``, ``wait_for_ready_callbacks(timeout_sec=)``, ``shutdown``),
``TimeoutException``, ``ShutdownException``, ``ConditionReachedException``;
``rclpy.impl.implementation_singleton.rclpy_implementation.WaitSet`` (``clear_entities``,
``add_subscription/timer/client/service``, ``wait``, ``get_ready_entities``) as rclpy's
executor uses it; ``Node.subscriptions/timers/clients/services/waitables/guards``,
``Node.context.handle``, ``Node.executor``, ``Executor.wake`` (called by ``Node`` on every
change of its entities), ``rclpy.serialization.deserialize_message``; each entity's
``handle`` (a context manager; ``pointer``), ``callback``; ``Subscription.msg_type``, ``raw``, ``handle.take_message``;
``Timer.handle.is_timer_ready/call_timer``; ``Service.srv_type``,
``handle.service_take_request``, ``send_response``; ``Client.srv_type``,
``handle.take_response``, ``get_pending_request``; ``Future.set_result``.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from typing import Any, Callable

from .rclpy_cdr import cdr_decoder

__all__ = ["LeanExecutor", "lean_executor_available"]


def lean_executor_available() -> bool:
    """True if this rclpy exposes the wait set :class:`LeanExecutor` needs (an rclpy without
    it -- or a stand-in -- is spun by its own executor)."""
    try:
        from rclpy.impl.implementation_singleton import rclpy_implementation
    except ImportError:
        return False
    return hasattr(rclpy_implementation, "WaitSet")


def _takes_info(callback: Callable) -> bool:
    """Whether a subscription callback takes ``(msg, info)`` (rclpy's own test: one
    positional argument binds, else two)."""
    try:
        inspect.signature(callback).bind(object())
        return False
    except (TypeError, ValueError):
        return True


class _Entities:
    """The node's entities of one wait-set build, their handles held (entered) until
    :meth:`release`, so none is destroyed while it is in the wait set."""

    def __init__(self, node: Any, wait_set_class: Any, max_per_wait: Any) -> None:
        self.key = _entity_key(node)
        self.stack = contextlib.ExitStack()
        subs, timers, clients, services, _waitables, guards = self.key
        coroutine = any(inspect.iscoroutinefunction(e.callback)
                        for e in (*subs, *timers, *services))
        self.rclpy_only = bool(guards) or coroutine
        #: (handle, its pointer, entity) per kind; a subscription's also whether its
        #: callback takes the message info
        self.subs, self.timers, self.clients, self.services = [], [], [], []
        for group, out in ((subs, self.subs), (timers, self.timers), (clients, self.clients),
                           (services, self.services)):
            for entity in group:
                handle = entity.handle
                try:
                    self.stack.enter_context(handle)
                except Exception:  # noqa: BLE001 - rclpy's InvalidHandle: being destroyed
                    continue
                out.append((handle, handle.pointer, entity))
        self.subs = [(h, p, s, _takes_info(s.callback), _raw_decoder(s))
                     for h, p, s in self.subs]
        #: the subscriptions a sweep takes from: those allowed more than 1 + SWEEPS per wait
        self.swept = [e for e in self.subs
                      if max_per_wait.get(e[2], LeanExecutor.SWEEPS + 1) > LeanExecutor.SWEEPS]
        self.stack.enter_context(node.context.handle)
        self.wait_set = wait_set_class(len(self.subs), 0, len(self.timers), len(self.clients),
                                       len(self.services), 0, node.context.handle)

    def release(self) -> None:
        self.wait_set = None
        self.stack.close()


def _raw_decoder(sub: Any) -> Callable[[bytes], Any] | None:
    """For a subscription rclpy takes as messages (``raw`` false) whose type has a
    :func:`~.rclpy_cdr.cdr_decoder`: ``decode(cdr) -> message`` (that decoder, else rclpy's
    ``deserialize_message``); None otherwise (taken as rclpy would)."""
    if sub.raw:
        return None
    cls = sub.msg_type
    pkg = getattr(cls, "__module__", "").split(".")[0]
    fast = cdr_decoder(f"{pkg}/msg/{cls.__name__}")
    if fast is None:
        return None
    from rclpy.serialization import deserialize_message

    def decode(data: bytes) -> Any:
        msg = fast(data)
        return deserialize_message(data, cls) if msg is None else msg
    return decode


def _entity_key(node: Any) -> tuple:
    return (tuple(node.subscriptions), tuple(node.timers), tuple(node.clients),
            tuple(node.services), tuple(node.waitables), tuple(node.guards))


class LeanExecutor:
    """Spins one rclpy ``node`` (see the module docstring).  ``spin_once(timeout_sec)`` waits
    up to ``timeout_sec`` (None: until work arrives) and runs what is ready; ``shutdown()``
    releases the entities' handles and removes the node (call it before destroying the
    node).  ``max_per_wait``: a mapping of subscriptions to the most samples each may give
    per wait (looked up when the wait set is built; a subscription not in it: 1 + SWEEPS)."""

    #: Wall time between two turns of rclpy's own executor (waitables, tasks), s.
    RCLPY_TURN_S = 0.05
    #: Rounds of plain takes after the callbacks of a wait (see the module docstring).
    SWEEPS = 2

    def __init__(self, node: Any, max_per_wait: Any = None) -> None:
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.impl.implementation_singleton import rclpy_implementation

        self._node = node
        self._max_per_wait = {} if max_per_wait is None else max_per_wait
        self._wait_set_class = rclpy_implementation.WaitSet
        self._rclpy = SingleThreadedExecutor(context=node.context)
        self._rclpy.add_node(node)
        self._entities: _Entities | None = None
        self._next_rclpy_turn = 0.0
        #: the node's entities may have changed since they were last looked at
        self._changed = True
        wake = self._rclpy.wake

        def noted_wake() -> None:
            self._changed = True
            wake()
        self._rclpy.wake = noted_wake
        #: wait sets built so far (one per change of the node's entities)
        self.builds = 0
        #: waits and samples taken so far, and of those the samples taken by a sweep
        self.waits = self.taken = self.swept = 0

    def _current(self) -> _Entities:
        ents = self._entities
        if ents is not None and not self._changed and self._node.executor is self._rclpy:
            return ents
        self._changed = False
        if ents is None or ents.key != _entity_key(self._node):
            if ents is not None:
                ents.release()
            self._entities = ents = None
            ents = _Entities(self._node, self._wait_set_class, self._max_per_wait)
            self._entities = ents
            self.builds += 1
        return ents

    def spin_once(self, timeout_sec: float | None = None) -> None:
        ents = self._current()
        if ents.rclpy_only:
            self._rclpy.spin_once(timeout_sec=timeout_sec)
            return
        now = time.monotonic()
        if now >= self._next_rclpy_turn:
            self._next_rclpy_turn = now + self.RCLPY_TURN_S
            self.rclpy_turn()
            ents = self._current()          # rclpy's callbacks may have added entities
        left = int((self._next_rclpy_turn - now) * 1e9)
        timeout_ns = left if timeout_sec is None or timeout_sec < 0 \
            else min(int(timeout_sec * 1e9), left)
        self._wait_and_run(ents, max(0, timeout_ns))

    def _wait_and_run(self, ents: _Entities, timeout_ns: int) -> None:
        ws = ents.wait_set
        ws.clear_entities()
        for entry in ents.subs:
            ws.add_subscription(entry[0])
        for handle, _, _ in ents.clients:
            ws.add_client(handle)
        for handle, _, _ in ents.services:
            ws.add_service(handle)
        for handle, _, _ in ents.timers:
            ws.add_timer(handle)
        ws.wait(timeout_ns)
        self.waits += 1
        ready = ws.get_ready_entities("timer")
        if ready:
            for handle, pointer, tmr in ents.timers:
                if pointer in ready and handle.is_timer_ready():
                    handle.call_timer()
                    tmr.callback()
        ready = ws.get_ready_entities("subscription")
        if ready:
            for entry in ents.subs:
                if entry[1] in ready:
                    self._take(entry)
            self._sweep(ents)
        ready = ws.get_ready_entities("client")
        if ready:
            for handle, pointer, cli in ents.clients:
                if pointer in ready:
                    self._take_response(handle, cli)
        ready = ws.get_ready_entities("service")
        if ready:
            for handle, pointer, srv in ents.services:
                if pointer in ready:
                    request, header = handle.service_take_request(srv.srv_type.Request)
                    if header is not None:
                        srv.send_response(srv.callback(request, srv.srv_type.Response()),
                                          header)

    def _sweep(self, ents: _Entities) -> None:
        """Up to :attr:`SWEEPS` rounds of one take per subscription, while a round took
        something and no callback changed the node's entities."""
        for _ in range(self.SWEEPS):
            if self._changed:
                return
            before = self.taken
            for entry in ents.swept:
                self._take(entry)
            if self.taken == before:
                return
            self.swept += self.taken - before

    def _take(self, entry: tuple) -> None:
        """Take one sample of a subscription (if it has one) and run its callback."""
        handle, _, sub, info, decode = entry
        if decode is None:
            taken = handle.take_message(sub.msg_type, sub.raw)
            if taken is None:
                return
            msg = taken[0]
        else:
            taken = handle.take_message(sub.msg_type, True)
            if taken is None:
                return
            msg = decode(taken[0])
        self.taken += 1
        if info:
            sub.callback(msg, taken[1])
        else:
            sub.callback(msg)

    @staticmethod
    def _take_response(handle: Any, client: Any) -> None:
        header, response = handle.take_response(client.srv_type.Response)
        if header is None:
            return
        try:
            future = client.get_pending_request(header.request_id.sequence_number)
        except KeyError:
            return                                     # the request was cancelled
        future.set_result(response)

    def rclpy_turn(self) -> int:
        """Run what rclpy's own executor finds ready (waitables, guard conditions, tasks,
        anything else ready), without waiting, until it finds nothing or it ran as many
        callbacks as the node has entities and waitables; returns how many ran."""
        from rclpy.executors import (
            ConditionReachedException,
            ShutdownException,
            TimeoutException,
        )
        bound = 8 + sum(len(group) for group in _entity_key(self._node))
        for done in range(bound):
            try:
                handler, _, _ = self._rclpy.wait_for_ready_callbacks(timeout_sec=0)
            except (TimeoutException, ShutdownException, ConditionReachedException):
                return done
            handler()
            if handler.exception() is not None:
                raise handler.exception()
        return bound

    def shutdown(self) -> None:
        """Release the handles and hand the node back (idempotent)."""
        if self._entities is not None:
            self._entities.release()
            self._entities = None
        if self._rclpy is not None:
            self._rclpy.remove_node(self._node)
            self._rclpy.shutdown(timeout_sec=0)
            self._rclpy = None
