"""An MCAP file that is a complete, readable file at every moment it is being written.

:class:`McapStreamWriter` writes messages into chunks and appends each finished chunk with a
short closing *tail* (``DataEnd``, a ``Footer`` without summary, the magic) in **one**
``pwrite`` at the end of the data written so far; the next chunk overwrites that tail with
itself and a new tail.  So the file on disk always ends with a valid footer: a process killed
at any point outside that one system call (``kill -9``, a crash, a power-off of the process's
container) leaves an MCAP that the standard readers open as it is (the ``mcap`` package's
``make_reader(...).iter_messages()``: no summary, so it reads the chunks in order) with every
message of every finished chunk.  :meth:`McapStreamWriter.close` replaces the tail by the full
summary (schemas, channels, statistics, chunk and metadata indexes, summary offsets), as any
MCAP writer's.

A chunk is finished when it holds ``chunk_bytes`` (default 1 MiB) or when ``flush_interval``
seconds (default 1 s, wall clock) have passed since the last one, so a killed run loses at most
about a second of recording.

A failed write (a full disk: ``ENOSPC``; a file size limit: ``EFBIG``; an I/O error) raises the
``OSError`` after putting the tail back behind the last finished chunk (and cutting the file
there), so the file keeps what was written before, readable; the writer then refuses further
writes.  Records: MCAP specification v0 (https://mcap.dev/spec), little-endian, chunks
uncompressed with their CRC-32.
"""
from __future__ import annotations

import os
import struct
import sys
import time
import zlib
from array import array
from pathlib import Path

__all__ = ["MAGIC", "McapStreamWriter"]

MAGIC = b"\x89MCAP0\r\n"
# record opcodes
_HEADER, _FOOTER, _SCHEMA, _CHANNEL, _MESSAGE, _CHUNK, _MESSAGE_INDEX, _CHUNK_INDEX = \
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08
_STATISTICS, _METADATA, _METADATA_INDEX, _SUMMARY_OFFSET, _DATA_END = 0x0B, 0x0C, 0x0D, 0x0E, 0x0F

_MESSAGE_HEAD = struct.Struct("<BQHIQQ")       # opcode, length, channel, sequence, times
_U16, _U32, _U64 = struct.Struct("<H"), struct.Struct("<I"), struct.Struct("<Q")


def _record(opcode: int, content: bytes) -> bytes:
    return bytes((opcode,)) + _U64.pack(len(content)) + content


def _string(s: str) -> bytes:
    b = s.encode()
    return _U32.pack(len(b)) + b


def _string_map(m: dict) -> bytes:
    body = b"".join(_string(k) + _string(v) for k, v in m.items())
    return _U32.pack(len(body)) + body


#: what follows the data while the file is being written: no summary (summary_start = 0)
_TAIL = (_record(_DATA_END, _U32.pack(0)) + _record(_FOOTER, _U64.pack(0) + _U64.pack(0)
                                                    + _U32.pack(0)) + MAGIC)


class McapStreamWriter:
    """Writes ``path`` as an MCAP file that is complete after every finished chunk (see the
    module docstring).  An existing file or symbolic link at ``path`` is replaced (never
    written through).

    ``add_schema``/``add_channel`` declare what ``write(channel, log_time, data)`` writes;
    :meth:`maybe_flush` finishes the chunk when it is due, :meth:`flush` now; :meth:`close`
    writes the summary and closes the file.  ``messages_on_disk`` counts the messages of
    every finished chunk (what a reader of the file sees), per channel."""

    def __init__(self, path, *, profile: str = "", library: str = "vm_dynamics",
                 chunk_bytes: int = 1 << 20, flush_interval: float = 1.0):
        self.path = Path(path)
        self.chunk_bytes = int(chunk_bytes)
        self.flush_interval = float(flush_interval)
        try:
            os.unlink(self.path)                # a link is removed, never followed
        except FileNotFoundError:
            pass
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
                           | getattr(os, "O_NOFOLLOW", 0), 0o644)
        self._end = 0               # end of the data section written so far (the tail follows)
        self._failed: OSError | None = None
        self._schemas: list[bytes] = []
        self._channels: list[bytes] = []
        self._chunk_indexes: list[bytes] = []
        self._metadata: list[tuple[str, int, int]] = []
        self.messages_on_disk: dict[int, int] = {}
        self._start = self._stop = None        # log times of the messages on disk
        self._new_chunk()
        self._last_flush = time.monotonic()
        self._append(MAGIC, _record(_HEADER, _string(profile) + _string(library)))

    # ------------------------------------------------------------------ declarations
    def add_schema(self, name: str, encoding: str, data: bytes) -> int:
        """Declare a schema (written at once); returns its id."""
        sid = len(self._schemas) + 1
        rec = _record(_SCHEMA, _U16.pack(sid) + _string(name) + _string(encoding)
                      + _U32.pack(len(data)) + data)
        self._append(rec)
        self._schemas.append(rec)
        return sid

    def add_channel(self, schema_id: int, topic: str, message_encoding: str,
                    metadata: dict) -> int:
        """Declare a channel (written at once); returns its id."""
        cid = len(self._channels) + 1
        rec = _record(_CHANNEL, _U16.pack(cid) + _U16.pack(schema_id) + _string(topic)
                      + _string(message_encoding) + _string_map(metadata))
        self._append(rec)
        self._channels.append(rec)
        self.messages_on_disk[cid] = 0
        return cid

    # ------------------------------------------------------------------ messages
    def _new_chunk(self):
        self._buf = bytearray()
        self._index: dict[int, array] = {}     # channel -> [log_time, offset, ...]
        self._counts: dict[int, int] = {}
        self._chunk_start = self._chunk_stop = None

    def write(self, channel: int, log_time: int, data: bytes) -> None:
        """Add one message (``log_time`` = publish time, ns) to the open chunk."""
        if self._failed is not None:
            raise self._failed
        buf = self._buf
        idx = self._index.get(channel)
        if idx is None:
            idx = self._index[channel] = array("Q")
        idx.append(log_time)
        idx.append(len(buf))
        self._counts[channel] = self._counts.get(channel, 0) + 1
        buf += _MESSAGE_HEAD.pack(_MESSAGE, 22 + len(data), channel, 0, log_time, log_time)
        buf += data
        if self._chunk_start is None or log_time < self._chunk_start:
            self._chunk_start = log_time
        if self._chunk_stop is None or log_time > self._chunk_stop:
            self._chunk_stop = log_time

    def maybe_flush(self) -> bool:
        """Finish the open chunk if it is full or ``flush_interval`` has passed; True if a
        chunk went to disk."""
        if self._buf and (len(self._buf) >= self.chunk_bytes
                          or time.monotonic() - self._last_flush >= self.flush_interval):
            self.flush()
            return True
        return False

    def flush(self) -> None:
        """Write the open chunk (if any) and its message indexes, followed by the tail, in one
        system call."""
        if self._failed is not None:
            raise self._failed
        self._last_flush = time.monotonic()
        if not self._buf:
            return
        records = self._buf           # written as it is (no copy of up to a chunk's bytes)
        size = len(records)
        content = (_U64.pack(self._chunk_start) + _U64.pack(self._chunk_stop) + _U64.pack(size)
                   + _U32.pack(zlib.crc32(records)) + _string("") + _U64.pack(size))
        chunk_head = bytes((_CHUNK,)) + _U64.pack(len(content) + size) + content
        chunk_len = len(chunk_head) + size
        offsets, indexes = {}, []
        pos = self._end + chunk_len
        for channel, entries in self._index.items():
            if sys.byteorder != "little":       # MCAP is little-endian
                entries = array("Q", entries)
                entries.byteswap()
            body = entries.tobytes()
            rec = _record(_MESSAGE_INDEX, _U16.pack(channel) + _U32.pack(len(body)) + body)
            offsets[channel] = pos
            pos += len(rec)
            indexes.append(rec)
        index_bytes = b"".join(indexes)
        entry = (_U64.pack(self._chunk_start) + _U64.pack(self._chunk_stop)
                 + _U64.pack(self._end) + _U64.pack(chunk_len)
                 + _U32.pack(10 * len(offsets))
                 + b"".join(_U16.pack(c) + _U64.pack(o) for c, o in offsets.items())
                 + _U64.pack(len(index_bytes)) + _string("") + _U64.pack(size)
                 + _U64.pack(size))
        self._append(chunk_head, records, index_bytes)
        self._chunk_indexes.append(_record(_CHUNK_INDEX, entry))
        for channel, n in self._counts.items():
            self.messages_on_disk[channel] = self.messages_on_disk.get(channel, 0) + n
        self._start = self._chunk_start if self._start is None else min(self._start,
                                                                         self._chunk_start)
        self._stop = self._chunk_stop if self._stop is None else max(self._stop, self._chunk_stop)
        self._new_chunk()

    def add_metadata(self, name: str, metadata: dict) -> None:
        """A Metadata record (e.g. rosbag2's ``serialized_metadata``), indexed in the summary."""
        if self._failed is not None:
            raise self._failed
        rec = _record(_METADATA, _string(name) + _string_map(metadata))
        self._metadata.append((name, self._end, len(rec)))
        self._append(rec)

    # ------------------------------------------------------------------ file
    def _append(self, *parts) -> None:
        """Write ``parts`` and the tail at the end of the data section, in one system call;
        on failure put the tail back behind the data written before and raise."""
        self._write_at(self._end, [*parts, _TAIL])
        self._end += sum(len(p) for p in parts)

    def _write_at(self, offset: int, parts: list, tail_at: int | None = None) -> None:
        views = [memoryview(p).cast("B") for p in parts if len(p)]
        try:
            while views:
                if hasattr(os, "pwritev"):
                    done = os.pwritev(self._fd, views, offset)
                else:
                    done = os.pwrite(self._fd, b"".join(views), offset)
                offset += done
                while views and done >= len(views[0]):
                    done -= len(views[0])
                    views.pop(0)
                if views and done:
                    views[0] = views[0][done:]
        except OSError as exc:
            self._failed = exc
            self._new_chunk()
            self._restore_tail(self._end if tail_at is None else tail_at)
            raise

    def _restore_tail(self, at: int) -> None:
        """After a failed write: the tail at ``at`` and the file cut behind it (the blocks of
        the failed write are freed; the tail's own bytes were there before)."""
        try:
            os.ftruncate(self._fd, at + len(_TAIL))
            os.pwrite(self._fd, _TAIL, at)
        except OSError:
            pass

    @property
    def failed(self) -> OSError | None:
        """The error of the write that failed, or None."""
        return self._failed

    def close(self) -> None:
        """Finish the open chunk and write the summary (after a failed write: only the summary
        of what is on disk, if there is room).  The file is closed also when this raises."""
        if self._fd is None:
            return
        try:
            if self._failed is None:
                self.flush()
            self._write_summary()
        finally:
            os.close(self._fd)
            self._fd = None

    def _write_summary(self) -> None:
        data_end = _record(_DATA_END, _U32.pack(0))
        summary_start = self._end + len(data_end)
        parts, offsets, pos = [], [], summary_start
        stats = (_U64.pack(sum(self.messages_on_disk.values())) + _U16.pack(len(self._schemas))
                 + _U32.pack(len(self._channels)) + _U32.pack(0)
                 + _U32.pack(len(self._metadata)) + _U32.pack(len(self._chunk_indexes))
                 + _U64.pack(self._start or 0) + _U64.pack(self._stop or 0)
                 + _U32.pack(10 * len(self.messages_on_disk))
                 + b"".join(_U16.pack(c) + _U64.pack(n)
                            for c, n in sorted(self.messages_on_disk.items())))
        meta_index = [_record(_METADATA_INDEX, _U64.pack(off) + _U64.pack(length)
                              + _string(name)) for name, off, length in self._metadata]
        for opcode, group in ((_SCHEMA, self._schemas), (_CHANNEL, self._channels),
                              (_STATISTICS, [_record(_STATISTICS, stats)]),
                              (_CHUNK_INDEX, self._chunk_indexes),
                              (_METADATA_INDEX, meta_index)):
            if group:
                blob = b"".join(group)
                parts.append(blob)
                offsets.append(_record(_SUMMARY_OFFSET, bytes((opcode,)) + _U64.pack(pos)
                                       + _U64.pack(len(blob))))
                pos += len(blob)
        offset_start = pos
        footer = _record(_FOOTER, _U64.pack(summary_start) + _U64.pack(offset_start)
                         + _U32.pack(0))
        tail = data_end + b"".join(parts) + b"".join(offsets) + footer + MAGIC
        failed = self._failed
        self._write_at(self._end, [tail], tail_at=self._end)
        os.ftruncate(self._fd, self._end + len(tail))
        if failed is not None:
            self._failed = failed
