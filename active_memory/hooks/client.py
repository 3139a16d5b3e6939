"""The command hooks' thin client of the recall server.

`ask_server(harness, hook_json, env)` sends one hook call to the resident server and
returns the JSON object the command hook should print (`{}`: print nothing), or None on
*any* failure: no server, a stale discovery file, a refused or slow connection, a wrong
token, an error status, a malformed answer. None means "answer the call yourself from
the snapshot"; the client never raises and never waits longer than its timeouts.

It runs inside a fresh hook process, so it imports almost nothing: the C socket module
(`socket` would load `enum`), `recall.jsonio` instead of `json`, and it speaks
HTTP/1.1 by hand instead of importing `http.client` (~30 ms for the `email` parser,
more than the whole lookup it saves). The exchange is one request with
`Connection: close` and one Content-Length response, written by our own server.
"""

from __future__ import annotations

import os
import time

from active_memory.hooks.paths import ENV_HEADER_PREFIX, HOOK_PATH_PREFIX, TOKEN_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

CONNECT_TIMEOUT = 0.05
"""Seconds to wait for the loopback connection; a live server accepts in microseconds."""

READ_TIMEOUT = 5.0
"""Seconds to wait for the whole answer once connected.

Long on purpose. Once the server has the call it charges the session's ledger, so giving
up early would lose the cards it charged (the fallback then finds them delivered). The
slow call is a run's first, which may build the next generation from the store's
changes (bench/README.md, "Recall"). A dead or stale server costs nothing here: it refuses
the connection at once, or its discovery file names a dead pid; only a live server that
stops answering costs this wait (the installers give the hook 10 s).
"""

_MAX_RESPONSE_BYTES = 4 * 1024 * 1024


def ask_server(
    harness: str,
    hook_json: bytes | Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    *,
    connect_timeout: float = CONNECT_TIMEOUT,
    read_timeout: float = READ_TIMEOUT,
    forward: Iterable[str] | None = None,
) -> dict[str, Any] | None:
    """The server's answer to one hook call (the JSON to print), or None on any failure.

    `harness` is the hook's name (`claude`, `codex`, `after-tool`); `hook_json` is the
    raw stdin of the hook (bytes are forwarded untouched) or an already parsed object.
    `env` (default: this process's environment) locates the server and supplies the
    variables to forward: those named in `forward`, by default every `ACTIVE_MEMORY_*`
    variable but the token. A value that cannot travel in a header (non-ASCII, control
    characters, surrounding blanks) makes the call return None, so the hook answers it
    itself, correctly.
    """
    try:
        return _ask(harness, hook_json, connect_timeout, read_timeout, env, forward)
    except Exception:
        # Whatever went wrong, the caller falls back to the snapshot: never fail a tool call.
        return None


def _ask(
    harness: str,
    hook_json: bytes | Mapping[str, Any],
    connect_timeout: float,
    read_timeout: float,
    env: Mapping[str, str] | None,
    forward: Iterable[str] | None,
) -> dict[str, Any] | None:
    import _socket

    from active_memory.hooks.discovery import read_discovery
    from active_memory.hooks.paths import discovery_path
    from active_memory.recall import jsonio

    env = os.environ if env is None else env
    env_headers = _env_headers(env, forward)
    if env_headers is None:
        return None
    address = read_discovery(discovery_path(env))
    if address is None:
        return None
    token = _token(address.token_file, env)
    if token is None:
        return None
    body = hook_json if isinstance(hook_json, bytes) else jsonio.dumps(hook_json).encode()
    head = (
        f"POST {HOOK_PATH_PREFIX}{harness} HTTP/1.1\r\n"
        f"Host: {address.host}:{address.port}\r\n"
        f"Authorization: Bearer {token}\r\n"
        f"{env_headers}"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1")
    family = _socket.AF_INET6 if ":" in address.host else _socket.AF_INET
    conn = _socket.socket(family, _socket.SOCK_STREAM)
    try:
        conn.settimeout(connect_timeout)
        conn.connect((address.host, address.port))
        deadline = time.monotonic() + read_timeout
        conn.settimeout(read_timeout)
        conn.sendall(head + body)
        raw = _read_all(conn, deadline)
    finally:
        conn.close()
    return _parse_response(raw, jsonio.loads)


def _env_headers(env: Mapping[str, str], forward: Iterable[str] | None) -> str | None:
    if forward is None:
        names = [n for n in env if n.startswith("ACTIVE_MEMORY_") and n != TOKEN_ENV]
    else:
        names = [n for n in forward if n in env]
    lines = []
    for name in sorted(names):
        value = env[name]
        if not value:
            continue
        header_safe = value.isascii() and value.isprintable() and value == value.strip()
        if not (header_safe and name.isascii() and name.isidentifier()):
            return None
        lines.append(f"{ENV_HEADER_PREFIX}{name}: {value}\r\n")
    return "".join(lines)


def _token(token_file: str, env: Mapping[str, str]) -> str | None:
    from active_memory.reader import read_file_bytes

    try:
        data = read_file_bytes(token_file, 4096) or b""
        token = data.decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        token = ""
    return token or env.get(TOKEN_ENV) or None


def _read_all(conn: Any, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("recall server answered too slowly")
        conn.settimeout(remaining)
        chunk: bytes = conn.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > _MAX_RESPONSE_BYTES:
            raise ValueError("recall server answer too large")


def _parse_response(raw: bytes, loads: Any) -> dict[str, Any] | None:
    head, separator, body = raw.partition(b"\r\n\r\n")
    if not separator:
        return None
    lines = head.split(b"\r\n")
    status = lines[0].split(b" ", 2)
    if len(status) < 2 or status[1] != b"200":
        return None
    length = None
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length != len(body):
        return None
    document = loads(body.decode("utf-8"))
    return document if isinstance(document, dict) else None
