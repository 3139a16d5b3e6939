"""The resident recall server: a minimal ASGI app served by uvicorn on loopback only.

Routes (all answers are JSON):

- `POST /active-memory/v1/hook/{harness}` with `Authorization: Bearer <token>`: the body
  is the hook JSON a harness would give its command hook (Claude Code's `"type": "http"`
  hook POSTs exactly that); the answer is the JSON that command hook would print.
- `GET /active-memory/v1/health`: `{"ok": true}`; no token, no snapshot, no lesson text.

Rules that keep a hook from ever failing a tool call: a missing token is 401 and a wrong
one 403 (Claude Code treats any non-2xx as a non-blocking error, so the tool runs with no
context); a body that is not a JSON object is 400 with a log line; an error inside the
answer is logged and answered `200 {}` (no context).

The answer function blocks (it takes the session ledger's file lock, and a run's first
call pins its generation or reads its version from the store), so it runs in worker
threads, a few at a time: one slow first call never holds up the event loop, other
sessions' calls, or the token checks. An answer function with a `quick` method
(hooks/recall_answer.py) may answer a call on the event loop instead, when it says the
call cannot block for long: that saves the two cross-thread wake-ups of a thread hop.
What such a call must still wait for (a delivered card's flush to the disk) comes back
as a commit, run before the answer is sent: in a worker thread while other calls are in
flight, so that a slow disk holds up only that call.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import ipaddress
import json
import logging
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from active_memory.errors import InvalidRecord, UsageError
from active_memory.hooks.discovery import read_discovery, remove_discovery, write_discovery
from active_memory.hooks.paths import ENV_HEADER_PREFIX, HEALTH_PATH, HOOK_PATH_PREFIX
from active_memory.reader import decode, parse_json

log = logging.getLogger("active_memory.server")

Answer = Callable[[str, dict[str, Any], dict[str, str]], Mapping[str, Any]]
"""(harness, hook JSON, forwarded environment) → the JSON the command hook would print."""

QuickThunk = Callable[[], tuple[Mapping[str, Any], Callable[[], None] | None]]
"""A call answered on the event loop: () → (the JSON, a commit or None). A commit is the
call's remaining blocking work (a delivered card's disk flush): the server runs it in a
worker thread and sends the JSON only once it returned."""

Quick = Callable[[str, dict[str, Any], dict[str, str]], QuickThunk | None]
"""An answer function's optional `quick(harness, payload, env)`: the answer as a thunk
safe to run on the event loop, or None to answer in a worker thread."""

HARNESSES = frozenset({"claude", "codex", "after-tool", "pi", "gemini", "copilot"})
"""The hook names the server answers (the same as `active-memory hook NAME`)."""

MAX_BODY_BYTES = 1024 * 1024
"""Larger hook bodies are refused (413): a tool call's arguments never need more."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


ANSWER_THREADS = 4
"""Hook calls answered at once; more wait for a thread (a harness sends one at a time)."""


class BadHookCall(ValueError):
    """Raised by an answer function for a hook body that is JSON but not a hook call (400)."""


class NotLoopback(UsageError):
    """`serve --host` named an address other machines could reach."""

    def __init__(self, host: str) -> None:
        super().__init__(
            f"--host {host}: the recall server listens on loopback only "
            "(127.0.0.1, ::1 or localhost)"
        )
        self.host = host


class ServerAlreadyRunning(UsageError):
    """Another live recall server is recorded in the discovery file."""

    def __init__(self, pid: int, port: int) -> None:
        super().__init__(
            f"a recall server is already running (pid {pid}, port {port}); "
            f"stop it first (`kill {pid}`)"
        )
        self.pid = pid
        self.port = port


class PortInUse(UsageError):
    """The port cannot be bound."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        super().__init__(f"cannot listen on {host}:{port}: {reason}; choose another --port")
        self.host = host
        self.port = port


def loopback_host(host: str) -> str:
    """The loopback IP literal to bind for `host`; NotLoopback for anything else."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        raise NotLoopback(host) from None
    if not address.is_loopback:
        raise NotLoopback(host)
    return str(address)


class RecallApp:
    """The ASGI application: token check, body limits, JSON in and out, never a crash."""

    def __init__(self, answer: Answer, token: str, web: Any = None) -> None:
        self._answer = answer
        self._expected = f"Bearer {token}".encode()
        self._limiter: anyio.CapacityLimiter | None = None
        self._commits: anyio.CapacityLimiter | None = None
        self._web = web  # the web view under /ui/ (ui/mount.py), built at its first use

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one HTTP request (other ASGI scopes are ignored); never a traceback."""
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self._lifespan(receive, send)
            return
        try:
            await self._serve(scope, receive, send)
        except Exception as exc:
            # Whatever slipped through is one log line and a JSON 500, never a traceback
            # in the answer (nor a half-sent one: a started answer is left as it is).
            log.error("request failed: %s: %s", type(exc).__name__, " ".join(str(exc).split()))
            with contextlib.suppress(Exception):
                await _respond(send, 500, {"error": "internal error; see the server log"})

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        method: str = scope["method"]
        if path == HEALTH_PATH:
            if method not in ("GET", "HEAD"):
                await _respond(send, 405, {"error": "use GET"})
            else:
                await _respond(send, 200, {"ok": True})
            return
        harness = path.removeprefix(HOOK_PATH_PREFIX)
        if harness == path or harness not in HARNESSES:
            # Not a hook call: the web view's prefix goes to it (checked only here, so
            # hook calls never pay for it), anything else is 404.
            if self._web is not None and (path == "/ui" or path.startswith("/ui/")):
                await self._web(scope, receive, send)
                return
            await _respond(send, 404, {"error": "no such hook"})
            return
        if method != "POST":
            await _respond(send, 405, {"error": "use POST"})
            return
        status = self._authorize(scope)
        if status != 200:
            log.warning("refused %s hook call: %s token", harness, _TOKEN_REASON[status])
            await _respond(send, status, {"error": f"{_TOKEN_REASON[status]} token"})
            return
        body = await _read_body(receive)
        if body is None:
            log.warning("refused %s hook call: body over %d bytes", harness, MAX_BODY_BYTES)
            await _respond(send, 413, {"error": "body too large"})
            return
        try:
            # The bounded reader's strict JSON: depth, integer size, surrogates.
            payload = parse_json(decode(body, "body"), "body")
        except InvalidRecord as exc:
            log.warning("bad %s hook call: %s", harness, exc)
            await _respond(send, 400, {"error": f"body is not usable JSON: {exc.detail}"})
            return
        if not isinstance(payload, dict):
            log.warning("bad %s hook call: body is JSON but not an object", harness)
            await _respond(send, 400, {"error": "body must be a JSON object"})
            return
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(ANSWER_THREADS)
            self._commits = anyio.CapacityLimiter(ANSWER_THREADS)
        env = forwarded_env(scope)
        quick: Quick | None = getattr(self._answer, "quick", None)
        try:
            thunk = quick(harness, payload, env) if quick is not None else None
            if thunk is not None:
                document, commit = thunk()
                if commit is not None:
                    await self._commit(commit)
                encoded = _encode(document)
            else:
                work = functools.partial(self._answer_json, harness, payload, env)
                encoded = await anyio.to_thread.run_sync(work, limiter=self._limiter)
        except BadHookCall as exc:
            log.warning("bad %s hook call: %s", harness, exc)
            await _respond(send, 400, {"error": str(exc)})
            return
        except Exception:
            # A hook must never fail the tool call: log, and answer "no context".
            log.exception("recall failed on a %s hook call; answered with no context", harness)
            encoded = b"{}"
        await _send(send, 200, encoded)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        # Only with the web view mounted: its store, opened at its first use, is closed
        # when the server stops.
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._web is not None:
                    with contextlib.suppress(Exception):
                        await self._web.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _commit(self, commit: Callable[[], None]) -> None:
        # The answer may leave only once its delivery is on the disk. With other calls in
        # flight, the flush waits in a thread so that the loop keeps answering them; with
        # none, on the loop: nobody is held up, and the thread hop would add two
        # cross-thread wake-ups to the call (0.8-1.2 ms p50 at load 6-7, bench/README.md).
        # Commits have threads of their own, so one never waits for a thread held by a
        # call that waits for the session lock the commit releases; shielded, so the lock
        # is released even while the server stops.
        assert self._limiter is not None and self._commits is not None
        if not (self._limiter.borrowed_tokens or self._commits.borrowed_tokens):
            commit()
            return
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(commit, limiter=self._commits)

    def _answer_json(self, harness: str, payload: dict[str, Any], env: dict[str, str]) -> bytes:
        return _encode(self._answer(harness, payload, env))

    def _authorize(self, scope: Scope) -> int:
        values = [value for name, value in scope["headers"] if name == b"authorization"]
        if not values:
            return 401
        if len(values) == 1 and hmac.compare_digest(values[0], self._expected):
            return 200
        return 403


_TOKEN_REASON = {401: "missing", 403: "wrong"}


def _encode(answer: Mapping[str, Any]) -> bytes:
    return json.dumps(dict(answer), ensure_ascii=False).encode()


_PREFIX = ENV_HEADER_PREFIX.encode()


def forwarded_env(scope: Scope) -> dict[str, str]:
    """The hook's environment variables sent as `X-Active-Memory-Env-<NAME>` headers.

    Names come back upper-case (HTTP lower-cases header names; every variable recall
    reads is upper-case); empty and undecodable values are left out.
    """
    env: dict[str, str] = {}
    for name, value in scope["headers"]:
        if not name.startswith(_PREFIX) or not value:
            continue
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            continue
        env[name[len(_PREFIX) :].decode("latin-1").upper()] = text
    return env


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)  # client went away; the answer goes nowhere anyway
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _respond(send: Send, status: int, document: Mapping[str, Any]) -> None:
    await _send(send, status, json.dumps(document).encode())


async def _send(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _answers_health(host: str, port: int) -> bool:
    """True if a recall server answers GET health at host:port within a second."""
    request = f"GET {HEALTH_PATH} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    try:
        with socket.create_connection((host, port), timeout=1.0) as conn:
            conn.sendall(request.encode())
            reply = b""
            while len(reply) < 4096 and (chunk := conn.recv(4096)):
                reply += chunk
    except OSError:
        return False
    return reply.startswith(b"HTTP/1.1 200") and b'"ok": true' in reply


def bind_loopback(host: str, port: int) -> socket.socket:
    """A listening socket on `host:port` (loopback only; port 0: the system picks one)."""
    ip = loopback_host(host)
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say they are TCP;
    # without it every keep-alive answer waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((ip, port))
        sock.listen(512)
    except OSError as exc:
        sock.close()
        raise PortInUse(ip, port, exc.strerror or str(exc)) from None
    sock.set_inheritable(True)
    return sock


@contextlib.contextmanager
def stop_on_signals(server: Any) -> Iterator[None]:
    """SIGINT and SIGTERM stop the uvicorn `server` cleanly (its `run` returns: exit 0),
    for `serve` and `active-memory ui` alike."""
    # uvicorn installs its own SIGINT/SIGTERM handlers only while it runs, then restores
    # the ones it found and raises the signal again. Ours, around the whole lifetime,
    # turn a signal before uvicorn's handlers exist into a clean stop (instead of a
    # KeyboardInterrupt or death by SIGTERM), and absorb the re-raise afterwards, so
    # the discovery file is always removed and `serve` exits 0.
    if threading.current_thread() is not threading.main_thread():
        yield  # signals can only be handled on the main thread; uvicorn skips them too
        return

    def stop(signum: int, frame: object) -> None:
        server.should_exit = True

    previous = {sig: signal.signal(sig, stop) for sig in _SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def serve(
    answer: Answer,
    *,
    token: str,
    token_file: Path,
    discovery: Path,
    host: str = "127.0.0.1",
    port: int,
    on_listen: Callable[[str, int], None] | None = None,
    web: Any = None,
) -> None:
    """Listen on loopback and answer hook calls until SIGINT or SIGTERM; with `web`
    (ui/mount.py's `WebMount`), serve the web view under `/ui/` too.

    Refuses a non-loopback host (NotLoopback) and a second live server (ServerAlreadyRunning);
    writes the discovery file once listening and removes it on the way out.
    """
    try:
        import uvicorn
    except ImportError:
        from active_memory.install_source import extra_command

        raise UsageError(f"the recall server needs uvicorn: {extra_command('server')}") from None

    ip = loopback_host(host)
    running = read_discovery(discovery)
    if running is not None and _answers_health(running.host, running.port):
        raise ServerAlreadyRunning(running.pid, running.port)
    # Otherwise the file is stale (its pid now names some other process): replaced below.
    sock = bind_loopback(ip, port)
    bound_port: int = sock.getsockname()[1]
    config = uvicorn.Config(
        RecallApp(answer, token, web),
        lifespan="off" if web is None else "on",
        access_log=False,
        log_level="warning",
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    with stop_on_signals(server):
        write_discovery(discovery, ip, bound_port, token_file)
        try:
            if on_listen is not None:
                on_listen(ip, bound_port)
            server.run(sockets=[sock])
        finally:
            remove_discovery(discovery)
            sock.close()
