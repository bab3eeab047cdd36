"""A TCP front for a local WebSocket server: a cap on connections, a bounded queue per client.

foxglove-sdk's server (a Rust library) has no hook to refuse a connection or to see what a
client has not read yet.  :class:`WebSocketGate` listens on the public address instead and
relays each accepted connection to the server on a loopback port:

* at most ``max_clients`` connections are relayed at a time; one more is answered with
  ``HTTP 503`` and a one-line reason naming the limit, then closed;
* what the server sends a client is split into WebSocket frames and queued per client; when a
  client reads slower than the server sends, the queue keeps at most ``max_frames`` frames and
  ``max_bytes`` bytes by dropping its **oldest droppable** frames (``droppable(opcode,
  payload_head)``, e.g. data that a newer frame supersedes), counted in :attr:`dropped`; a
  client with more than ``max_bytes`` bytes or more than ``max(max_frames, 1024)`` frames
  queued that may not be dropped is disconnected (counted in :attr:`disconnected`).  The
  server's socket is always read, so the server never buffers for a slow client either;
* what a client sends is relayed unchanged, at most ``max_bytes`` ahead of what the server
  has read.

Frames are parsed only from the server's side, after its ``101 Switching Protocols`` answer;
a connection on which the server negotiated an extension (``permessage-deflate`` would make
frames depend on earlier ones) is relayed without dropping.  One thread runs all connections
(:mod:`selectors`); :meth:`stop` ends it.  Warnings go to the ``vm_dynamics.ws_gate`` logger.
"""
from __future__ import annotations

import errno
import logging
import selectors
import socket
import struct
import threading
import time
from collections import deque
from typing import Callable

__all__ = ["WebSocketGate", "refusal_response"]

LOG = logging.getLogger("vm_dynamics.ws_gate")

#: Refused connections kept open (draining their request) so the client reads the 503
#: instead of a reset; beyond this many they are closed at once.
_MAX_LINGERING = 256
_LINGER_S = 2.0
#: Frames that may not be dropped (protocol messages) queued for one client before it is
#: disconnected as too slow, when ``max_frames`` is smaller.
_MAX_KEPT = 1024
_CHUNK = 65536


def refusal_response(text: str) -> bytes:
    """The ``HTTP 503`` a refused connection gets: ``text`` as a plain-text body."""
    body = (text.rstrip("\n") + "\n").encode()
    return (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
            + body)


class _SlowClient(Exception):
    """A client's queue is over its bounds with nothing left that may be dropped."""


class _Connection:
    """One relayed client: its socket, the server's, and the queues between them."""

    def __init__(self, client: socket.socket, upstream: socket.socket, peer: str) -> None:
        self.client, self.upstream, self.peer = client, upstream, peer
        self.to_server = bytearray()            # client bytes the server has not read yet
        self.raw = bytearray()                  # server bytes not yet split into frames
        self.frames: deque = deque()            # [bytes, droppable] to send the client
        self.queued = 0                         # bytes in self.frames
        self.sent = 0                           # bytes of frames[0] already sent
        self.framing = False                    # after the server's 101 answer
        self.may_drop = False                   # no extension negotiated
        self.connected = False                  # upstream connect finished
        self.dropped = 0                        # frames dropped, in all
        self.unlogged = 0                       # frames dropped since the last warning
        self.logged_at = -1e9


class WebSocketGate:
    """Relay ``host:port`` to the WebSocket server at ``upstream`` (see the module docstring).

    ``port`` 0 picks a free port (read :attr:`port`).  Counters: :attr:`accepted`,
    :attr:`refused`, :attr:`dropped` (frames), :attr:`disconnected` (slow clients),
    :attr:`max_queued` / :attr:`max_queued_frames` (the largest per-client queue seen, in
    bytes / frames).  Warnings (refused
    connections, dropped frames) are logged at most once per ``log_period`` s each, with the
    count since the previous one.
    """

    def __init__(self, upstream: tuple[str, int], host: str = "127.0.0.1", port: int = 0, *,
                 max_clients: int = 16, max_frames: int = 256, max_bytes: int = 8 << 20,
                 droppable: Callable[[int, bytes], bool] | None = None,
                 refusal: str = "", log_period: float = 5.0) -> None:
        for name, value in (("max_clients", max_clients), ("max_frames", max_frames),
                            ("max_bytes", max_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        self.upstream = upstream
        self.max_clients, self.max_frames, self.max_bytes = max_clients, max_frames, max_bytes
        self.droppable = droppable
        self.log_period = float(log_period)
        self._refusal = refusal_response(
            refusal or f"too many clients: this server accepts at most {max_clients} "
                       f"connections at a time; close one and retry")
        self.accepted = self.refused = self.dropped = self.disconnected = 0
        self.max_queued = self.max_queued_frames = 0
        self._refused_unlogged, self._refused_logged_at = 0, -1e9
        self._conns: dict[socket.socket, _Connection] = {}
        self._masks: dict[socket.socket, int] = {}
        self._lingering: dict[socket.socket, list] = {}   # [deadline, request or None]
        self._sel = selectors.DefaultSelector()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family, backlog=128)
        self._listener.setblocking(False)
        self._sel.register(self._listener, selectors.EVENT_READ)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- control
    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    @property
    def clients(self) -> int:
        """Connections relayed now."""
        return len(self._conns) // 2

    def start(self) -> "WebSocketGate":
        self._thread = threading.Thread(target=self._run, name="ws-gate", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop relaying and close every socket (idempotent)."""
        if self._stop.is_set():
            return
        self._stop.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        for sock in {*self._conns, *self._lingering, self._listener, self._wake_r,
                     self._wake_w}:
            sock.close()
        self._conns.clear()
        self._lingering.clear()
        self._sel.close()

    # ---------------------------------------------------------------- loop
    def _run(self) -> None:
        while not self._stop.is_set():
            for key, events in self._sel.select(timeout=0.5):
                sock = key.fileobj
                if sock is self._listener:
                    self._accept()
                elif sock is self._wake_r:
                    self._wake_r.recv(64)
                elif sock in self._lingering:
                    self._drain_refused(sock)
                elif sock in self._conns:
                    self._service(self._conns[sock], sock, events)
            now = time.monotonic()
            for sock in [s for s, (end, _) in self._lingering.items() if end < now]:
                self._close_refused(sock)

    def _accept(self) -> None:
        for _ in range(64):
            try:
                client, addr = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:               # EMFILE and the like: try again later
                LOG.warning("cannot accept a connection: %s", exc)
                return
            client.setblocking(False)
            peer = f"{addr[0]}:{addr[1]}"
            if self.clients >= self.max_clients:
                self._refuse(client, peer)
                continue
            upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            upstream.setblocking(False)
            err = upstream.connect_ex(self.upstream)
            if err not in (0, errno.EINPROGRESS):
                LOG.warning("cannot reach the server at %s:%d for %s: %s", *self.upstream,
                            peer, errno.errorcode.get(err, err))
                upstream.close()
                client.close()
                continue
            conn = _Connection(client, upstream, peer)
            self._conns[client] = self._conns[upstream] = conn
            self.accepted += 1
            self._watch(client, selectors.EVENT_READ)
            self._watch(upstream, selectors.EVENT_WRITE)      # until connected

    def _refuse(self, client: socket.socket, peer: str) -> None:
        """Answer ``HTTP 503`` once the client's request is in (an answer before it makes
        clients fail on sending their request instead of reading the reason), then read
        and discard until the client closes, for at most ``_LINGER_S``."""
        self.refused += 1
        self._refused_unlogged += 1
        now = time.monotonic()
        if now - self._refused_logged_at >= self.log_period:
            LOG.warning("refused %d connection(s) (latest from %s): %d clients connected, "
                        "the limit", self._refused_unlogged, peer, self.max_clients)
            self._refused_unlogged, self._refused_logged_at = 0, now
        if len(self._lingering) >= _MAX_LINGERING:
            client.close()
            return
        self._lingering[client] = [now + _LINGER_S, bytearray()]
        self._sel.register(client, selectors.EVENT_READ)
        self._drain_refused(client)

    def _drain_refused(self, sock: socket.socket) -> None:
        state = self._lingering[sock]
        try:
            data = sock.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        request = state[1]
        if data and request is not None:
            request += data[:_CHUNK]
            if b"\r\n\r\n" in request or len(request) >= _CHUNK:
                self._answer_refused(sock)
            return
        if data:
            return
        self._close_refused(sock)

    def _answer_refused(self, sock: socket.socket) -> None:
        state = self._lingering[sock]
        state[1] = None
        try:
            sock.send(self._refusal)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._close_refused(sock)

    def _close_refused(self, sock: socket.socket) -> None:
        state = self._lingering.pop(sock, None)
        if state is not None and state[1] is not None:   # no request came: answer anyway
            try:
                sock.send(self._refusal)
            except OSError:
                pass
        self._sel.unregister(sock)
        sock.close()

    # ---------------------------------------------------------------- relaying
    def _service(self, conn: _Connection, sock: socket.socket, events: int) -> None:
        try:
            if sock is conn.upstream:
                if not conn.connected:
                    err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        raise ConnectionRefusedError(err, "server unreachable")
                    conn.connected = True
                elif events & selectors.EVENT_READ and not self._from_server(conn):
                    self._flush_client(conn)      # the server's last words, then close
                    return self._close(conn)
                self._send(sock, conn.to_server)
            else:
                if events & selectors.EVENT_READ and not self._from_client(conn):
                    return self._close(conn)
                self._flush_client(conn)
        except _SlowClient:
            self.disconnected += 1
            LOG.warning("disconnected client %s: more than %d messages / %d bytes queued "
                        "that cannot be dropped", conn.peer, self.max_frames, self.max_bytes)
            return self._close(conn)
        except OSError:
            return self._close(conn)
        self._interest(conn)

    def _from_client(self, conn: _Connection) -> bool:
        try:
            data = conn.client.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return True
        if not data:
            return False
        conn.to_server += data
        if conn.connected:
            self._send(conn.upstream, conn.to_server)
        return True

    def _from_server(self, conn: _Connection) -> bool:
        try:
            data = conn.upstream.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return True
        if not data:
            return False
        conn.raw += data
        if not conn.framing:
            end = conn.raw.find(b"\r\n\r\n")
            if end < 0:
                if len(conn.raw) > _CHUNK:
                    raise ConnectionAbortedError("no end of the server's HTTP answer")
                return True
            head = bytes(conn.raw[:end + 4])
            del conn.raw[:end + 4]
            self._enqueue(conn, head, False)
            lines = head.split(b"\r\n")
            if lines[0].split(b" ")[1:2] != [b"101"]:
                return True                      # refused by the server: relay its answer
            conn.framing = True
            conn.may_drop = self.droppable is not None and not any(
                ln.lower().startswith(b"sec-websocket-extensions:") for ln in lines[1:])
        self._split_frames(conn)
        self._flush_client(conn)
        return True

    def _split_frames(self, conn: _Connection) -> None:
        raw, pos, n = conn.raw, 0, len(conn.raw)
        while n - pos >= 2:
            b0, b1 = raw[pos], raw[pos + 1]
            length, head = b1 & 0x7F, 2
            if length == 126:
                if n - pos < 4:
                    break
                length, head = struct.unpack_from(">H", raw, pos + 2)[0], 4
            elif length == 127:
                if n - pos < 10:
                    break
                length, head = struct.unpack_from(">Q", raw, pos + 2)[0], 10
            masked = bool(b1 & 0x80)
            body = pos + head + (4 if masked else 0)
            if n < body + length:
                break
            opcode = b0 & 0x0F
            droppable = False
            if conn.may_drop and b0 & 0x80 and opcode in (0x1, 0x2):   # whole text/binary
                first = bytes(raw[body:body + min(length, 16)])
                if masked:
                    key = raw[pos + head:pos + head + 4]
                    first = bytes(c ^ key[i % 4] for i, c in enumerate(first))
                droppable = bool(self.droppable(opcode, first))
            self._enqueue(conn, bytes(raw[pos:body + length]), droppable)
            pos = body + length
        del raw[:pos]

    def _enqueue(self, conn: _Connection, frame: bytes, droppable: bool) -> None:
        conn.frames.append([frame, droppable])
        conn.queued += len(frame)
        if self._over(conn, len(conn.frames)):
            self._drop_oldest(conn)
        self.max_queued = max(self.max_queued, conn.queued)
        self.max_queued_frames = max(self.max_queued_frames, len(conn.frames))

    def _over(self, conn: _Connection, frames: int, max_frames: int | None = None) -> bool:
        """True if ``frames`` frames and ``conn``'s queued bytes exceed the bounds."""
        return (frames > (self.max_frames if max_frames is None else max_frames)
                or conn.queued > self.max_bytes)

    def _drop_oldest(self, conn: _Connection) -> None:
        """Drop the oldest droppable frames (never one partly sent, never the newest) until
        the queue is within its bounds; :class:`_SlowClient` if that is not possible.

        One pass from the oldest frame, stopping as soon as the queue is within bounds: the
        frames it keeps on the way (undroppable ones) go back in front, so the usual case --
        droppable frames right at the head -- costs O(1) per frame dropped."""
        frames = conn.frames
        kept = deque(frames.popleft() for _ in range(1 if conn.sent else 0))
        dropped = 0
        while len(frames) > 1 and self._over(conn, len(kept) + len(frames)):
            item = frames.popleft()
            if item[1]:
                conn.queued -= len(item[0])
                dropped += 1
            else:
                kept.append(item)
        frames.extendleft(reversed(kept))
        if dropped:
            self._count_dropped(conn, dropped)
        if len(frames) > 1 and self._over(conn, len(frames), max(self.max_frames, _MAX_KEPT)):
            raise _SlowClient(conn.peer)

    def _count_dropped(self, conn: _Connection, dropped: int) -> None:
        """Count ``dropped`` frames of a slow client; a warning at most every ``log_period``."""
        conn.dropped += dropped
        conn.unlogged += dropped
        self.dropped += dropped
        now = time.monotonic()
        if now - conn.logged_at >= self.log_period:
            LOG.warning("client %s reads slower than the server sends: dropped its %d "
                        "oldest data messages (queue bound %d messages / %d bytes)",
                        conn.peer, conn.unlogged, self.max_frames, self.max_bytes)
            conn.unlogged, conn.logged_at = 0, now

    def _flush_client(self, conn: _Connection) -> None:
        while conn.frames:
            frame = conn.frames[0][0]
            try:
                n = conn.client.send(memoryview(frame)[conn.sent:])
            except (BlockingIOError, InterruptedError):
                return
            conn.sent += n
            if conn.sent < len(frame):
                return
            conn.frames.popleft()
            conn.queued -= len(frame)
            conn.sent = 0

    @staticmethod
    def _send(sock: socket.socket, buf: bytearray) -> None:
        if buf:
            try:
                del buf[:sock.send(buf)]
            except (BlockingIOError, InterruptedError):
                pass

    def _watch(self, sock: socket.socket, mask: int) -> None:
        """Wait for ``mask`` events on ``sock`` (0: none, the socket is left out)."""
        old = self._masks.get(sock, 0)
        if mask == old:
            return
        if not old:
            self._sel.register(sock, mask)
        elif not mask:
            self._sel.unregister(sock)
        else:
            self._sel.modify(sock, mask)
        self._masks[sock] = mask

    def _interest(self, conn: _Connection) -> None:
        # the server is always read (its queue is ours, bounded); the client is read while
        # the server keeps up with what it sends
        up = selectors.EVENT_READ if conn.connected else selectors.EVENT_WRITE
        if conn.connected and conn.to_server:
            up |= selectors.EVENT_WRITE
        client = selectors.EVENT_READ if len(conn.to_server) < self.max_bytes else 0
        if conn.frames:
            client |= selectors.EVENT_WRITE
        self._watch(conn.upstream, up)
        self._watch(conn.client, client)

    def _close(self, conn: _Connection) -> None:
        for sock in (conn.client, conn.upstream):
            self._conns.pop(sock, None)
            self._watch(sock, 0)
            self._masks.pop(sock, None)
            sock.close()
