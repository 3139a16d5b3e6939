"""A scripted HTTP server on 127.0.0.1 (ephemeral port), in a thread, for the real SDKs.

Each request takes the next scripted `Scripted` reply: status, JSON body, headers, and
optionally a delay or a hang (the handler waits until the server stops, as a stuck
upstream would) or a connection reset. Requests are recorded with path, headers and JSON body.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Scripted:
    """One reply of the fake server."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hang: bool = False
    reset: bool = False  # drop the connection with a TCP reset instead of answering


@dataclass(frozen=True)
class Received:
    """One request the fake server got."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (deadline, cancellation) leaves a broken pipe; not news.
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        fake.received.append(
            Received(
                "POST",
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                body,
                time.monotonic(),
            )
        )
        reply = fake.next_reply()
        if reply.reset:
            # SO_LINGER 0: close() sends RST, as a crashing proxy or load balancer does.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if reply.hang:
            fake.stopping.wait(30)
            return
        if reply.delay:
            fake.stopping.wait(reply.delay)
        payload = reply.body if isinstance(reply.body, bytes | str) else json.dumps(reply.body)
        data = payload.encode() if isinstance(payload, str) else payload
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class FakeServer:
    """`with FakeServer([...]) as server: server.url` — replies in order, then 500s."""

    def __init__(self, replies: list[Scripted] | None = None) -> None:
        self.replies: deque[Scripted] = deque(replies or [])
        self.received: list[Received] = []
        self.stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        # A short poll interval keeps `shutdown()` (every test's teardown) quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The server's base URL."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *replies: Scripted) -> None:
        """Queue more replies."""
        self.replies.extend(replies)

    def next_reply(self) -> Scripted:
        if self.replies:
            return self.replies.popleft()
        return Scripted(500, {"error": {"message": "the fake server has no scripted reply"}})

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
