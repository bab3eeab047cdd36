"""WebSocket clients for the tests of the Foxglove bridge's limits.

* :func:`raw_client`: a client written with plain sockets that completes the handshake, may
  subscribe to foxglove channels, and then never reads (its receive buffer is kept small, so
  what the server sends queues on the server's side at once);
* :func:`channels`: the topic -> channel id map a foxglove server advertises.
"""
from __future__ import annotations

import base64
import json
import os
import socket
import struct
import time


def text_frame(text: str) -> bytes:
    """A masked (client-to-server) WebSocket text frame."""
    data = text.encode()
    mask = os.urandom(4)
    n = len(data)
    if n < 126:
        head = bytes([0x81, 0x80 | n])
    elif n < 65536:
        head = bytes([0x81, 0x80 | 126]) + struct.pack(">H", n)
    else:
        head = bytes([0x81, 0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def raw_client(port: int, subprotocol: str = "foxglove.sdk.v1", subscribe=(),
               rcvbuf: int = 4096, timeout: float = 10.0) -> tuple[socket.socket, bytes]:
    """Connect, send the handshake, read the server's answer head; subscribe (foxglove) to
    the channel ids ``subscribe`` if it was ``101``.  Returns the socket (never read again)
    and the head of the answer."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {subprotocol}\r\n\r\n"
               ).encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = s.recv(4096)
        if not chunk:
            break
        answer += chunk
    head = answer.split(b"\r\n\r\n")[0]
    if head.startswith(b"HTTP/1.1 101") and subscribe:
        subs = [{"id": k, "channelId": c} for k, c in enumerate(subscribe)]
        s.sendall(text_frame(json.dumps({"op": "subscribe", "subscriptions": subs})))
    return s, answer


def channels(ws, count: int, timeout: float = 20.0) -> dict:
    """Read ``advertise`` messages from a websockets client until ``count`` channels are
    known: topic -> channel id."""
    out, end = {}, time.monotonic() + timeout
    while len(out) < count and time.monotonic() < end:
        msg = ws.recv(timeout=max(0.1, end - time.monotonic()))
        if isinstance(msg, str):
            d = json.loads(msg)
            if d.get("op") == "advertise":
                out.update({c["topic"]: c["id"] for c in d["channels"]})
    return out
