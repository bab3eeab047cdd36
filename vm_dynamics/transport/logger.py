"""Node loggers: rcutils-style console output and per-key throttled warnings."""

from __future__ import annotations

import abc
import numbers
import sys
import time
from typing import Any

__all__ = ["BaseLogger", "StreamLogger", "LOG_LEVELS"]

LOG_LEVELS = {"DEBUG": 10, "INFO": 20, "WARN": 30, "ERROR": 40, "FATAL": 50, "UNSET": 0}


class BaseLogger(abc.ABC):
    """info/warn/error + ``warn_throttled``/``error_throttled(key, period_s, msg)`` (steady
    clock, per key)."""

    def __init__(self) -> None:
        self._throttle: dict[Any, float] = {}

    @abc.abstractmethod
    def _emit(self, level: str, msg: str) -> None:
        """Write one message of severity ``level`` (DEBUG/INFO/WARN/ERROR/FATAL)."""

    def debug(self, msg: str) -> None:
        self._emit("DEBUG", str(msg))

    def info(self, msg: str) -> None:
        self._emit("INFO", str(msg))

    def warn(self, msg: str) -> None:
        self._emit("WARN", str(msg))

    warning = warn

    def error(self, msg: str) -> None:
        self._emit("ERROR", str(msg))

    def fatal(self, msg: str) -> None:
        self._emit("FATAL", str(msg))

    def warn_throttled(self, key: Any, period_s: float, msg: str) -> bool:
        """Warn at most once per ``period_s`` seconds for ``key``; True if it was logged."""
        return self.log_throttled("WARN", key, period_s, msg)

    def error_throttled(self, key: Any, period_s: float, msg: str) -> bool:
        """:meth:`warn_throttled` at severity ERROR (its own throttle windows)."""
        return self.log_throttled("ERROR", key, period_s, msg)

    def log_throttled(self, level: str, key: Any, period_s: float, msg: str) -> bool:
        """Log ``msg`` at ``level`` at most once per ``period_s`` seconds for ``(level, key)``;
        True if it was logged."""
        if level not in LOG_LEVELS or level == "UNSET":
            raise ValueError(f"log level must be one of DEBUG/INFO/WARN/ERROR/FATAL, got "
                             f"{level!r}")
        if not (isinstance(period_s, numbers.Real) and period_s >= 0):
            raise ValueError(f"throttle period must be a number >= 0, got {period_s!r}")
        now = time.monotonic()
        slot = key if level == "WARN" else (level, key)
        last = self._throttle.get(slot)
        if last is not None and now - last < period_s:
            return False
        self._throttle[slot] = now
        self._emit(level, str(msg))
        return True


class StreamLogger(BaseLogger):
    """rcutils-style console logger: ``[WARN] [1712345678.123456789] [node]: message``."""

    def __init__(self, name: str, level: str = "INFO", stream: Any = None) -> None:
        super().__init__()
        if level not in LOG_LEVELS:
            raise ValueError(f"log level must be one of {sorted(LOG_LEVELS)}, got {level!r}")
        self.name = name
        self.level = level
        self._stream = stream
        self.records: list[tuple[str, str]] = []

    def _emit(self, level: str, msg: str) -> None:
        if LOG_LEVELS[level] < LOG_LEVELS[self.level]:
            return
        self.records.append((level, msg))
        del self.records[:-200]
        ns = time.time_ns()
        stream = self._stream or sys.stderr
        stream.write(f"[{level}] [{ns // 10**9}.{ns % 10**9:09d}] [{self.name}]: {msg}\n")
        stream.flush()
