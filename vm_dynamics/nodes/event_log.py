"""Throttled event log of the node cores: the nodes drain it into their transport's logger."""
from __future__ import annotations

import functools
import re
import time
from collections import deque
from typing import Callable

__all__ = ["EventLog", "reason_key"]


@functools.lru_cache(maxsize=1024)
def reason_key(text: str) -> str:
    """The kind of a message, for throttling: its text without numbers and quoted values
    (``"must have length 7, got 3"`` and ``"... got 5"`` share a key; a NaN does not).

    Cached: a flood repeats the same few texts, and the two substitutions were most of the
    cost of rejecting a sample."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]|\([^)]*\)", "…", text)
    return re.sub(r"[-+]?\d[\d.e+-]*", "#", text)[:80]


class EventLog:
    """Warnings/errors of a core, throttled per key (at most one per ``period`` s of ``clock``).

    ``records`` keeps everything emitted (bounded); :meth:`pop` hands new records to the node.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, period: float = 2.0):
        self.clock = clock
        self.period = float(period)
        self.records: deque = deque(maxlen=500)
        self._pending: list = []
        self._last: dict = {}
        self._suppressed: dict = {}

    def emit(self, level: str, key: str, text: str, throttle: bool = True) -> bool:
        now = self.clock()
        if throttle:
            last = self._last.get(key)
            if last is not None and now - last < self.period:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return False
            n = self._suppressed.pop(key, 0)
            if n:
                text += f" ({n} similar message(s) suppressed)"
            self._last[key] = now
        self.records.append((level, key, text))
        self._pending.append((level, text))
        return True

    def pop(self) -> list:
        out, self._pending = self._pending, []
        return out

    def drain_into(self, logger) -> None:
        """Send the pending records to a transport logger (``info``/``warn``/``error``)."""
        for level, text in self.pop():
            {"INFO": logger.info, "WARN": logger.warn, "ERROR": logger.error}.get(
                level, logger.info)(text)
