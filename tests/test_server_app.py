"""The recall server's ASGI app, driven directly: tokens, bad bodies, errors, forwarding."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Mapping
from typing import Any

import pytest

from active_memory.hooks.server import NotLoopback, RecallApp, bind_loopback, loopback_host

TOKEN = "s3cret-token"
CONTEXT = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "card"}}


class Recorder:
    """An answer function that records its calls and answers with CONTEXT."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.fail = fail

    def __call__(
        self, harness: str, payload: dict[str, Any], env: dict[str, str]
    ) -> Mapping[str, Any]:
        self.calls.append((harness, payload, env))
        if self.fail:
            raise RuntimeError("snapshot unreadable")
        return CONTEXT


async def call(
    app: RecallApp,
    path: str,
    body: bytes = b"",
    *,
    method: str = "POST",
    headers: list[tuple[bytes, bytes]] | None = None,
    chunks: int = 1,
) -> tuple[int, Any]:
    """One request through the ASGI interface; the status and the decoded JSON answer."""
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": headers if headers is not None else auth(),
    }
    size = max(1, len(body) // chunks + 1)
    parts = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
    messages = [
        {"type": "http.request", "body": part, "more_body": i < len(parts) - 1}
        for i, part in enumerate(parts)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    await app(scope, receive, send)
    assert sent[0]["type"] == "http.response.start"
    answer = sent[1]["body"]
    declared = dict(sent[0]["headers"])[b"content-length"]
    assert int(declared) == len(answer)
    return sent[0]["status"], json.loads(answer)


def auth(token: str = TOKEN) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", f"Bearer {token}".encode())]


HOOK = json.dumps(
    {
        "session_id": "s-1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "/repo/api/schema.json"},
        "cwd": "/repo",
    }
).encode()


@pytest.mark.asyncio
async def test_a_hook_call_gets_the_answer_of_the_recall_function() -> None:
    answer = Recorder()
    app = RecallApp(answer, TOKEN)

    status, document = await call(app, "/active-memory/v1/hook/claude", HOOK, chunks=3)

    assert status == 200
    assert document == CONTEXT
    assert answer.calls == [("claude", json.loads(HOOK), {})]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ([], 401),
        (auth("wrong"), 403),
        (auth(TOKEN + "x"), 403),
        ([(b"authorization", TOKEN.encode())], 403),
        (auth() + auth("wrong"), 403),
    ],
)
async def test_without_the_right_token_there_is_no_context(
    headers: list[tuple[bytes, bytes]], status: int, caplog: pytest.LogCaptureFixture
) -> None:
    answer = Recorder()
    app = RecallApp(answer, TOKEN)

    got, document = await call(app, "/active-memory/v1/hook/claude", HOOK, headers=headers)

    assert got == status
    assert "hookSpecificOutput" not in document
    assert answer.calls == []
    assert "token" in caplog.text


@pytest.mark.asyncio
@pytest.mark.parametrize("body", [b"{not json", b"", b"\xff\xfe", b"[1, 2]", b'"text"'])
async def test_a_garbage_body_is_400_and_a_log_line(
    body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    answer = Recorder()
    app = RecallApp(answer, TOKEN)

    with caplog.at_level(logging.WARNING, logger="active_memory.server"):
        status, document = await call(app, "/active-memory/v1/hook/codex", body)

    assert status == 400
    assert "error" in document
    assert answer.calls == []
    assert "bad codex hook call" in caplog.text


@pytest.mark.asyncio
async def test_an_internal_error_is_200_with_no_context_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = RecallApp(Recorder(fail=True), TOKEN)

    status, document = await call(app, "/active-memory/v1/hook/claude", HOOK)

    assert (status, document) == (200, {})
    assert "snapshot unreadable" in caplog.text


@pytest.mark.asyncio
async def test_an_unserialisable_answer_is_200_with_no_context() -> None:
    app = RecallApp(lambda harness, payload, env: {"x": object()}, TOKEN)

    assert await call(app, "/active-memory/v1/hook/claude", HOOK) == (200, {})


@pytest.mark.asyncio
async def test_an_oversized_body_is_refused_without_calling_recall() -> None:
    answer = Recorder()
    app = RecallApp(answer, TOKEN)
    body = b'{"x": "' + b"a" * (2 * 1024 * 1024) + b'"}'

    status, _ = await call(app, "/active-memory/v1/hook/claude", body, chunks=8)

    assert status == 413
    assert answer.calls == []


@pytest.mark.asyncio
async def test_unknown_paths_and_methods_are_refused() -> None:
    answer = Recorder()
    app = RecallApp(answer, TOKEN)

    assert (await call(app, "/active-memory/v1/hook/vim", HOOK))[0] == 404
    assert (await call(app, "/", HOOK))[0] == 404
    assert (await call(app, "/active-memory/v1/hook/claude", method="GET"))[0] == 405
    assert answer.calls == []


@pytest.mark.asyncio
async def test_health_needs_no_token_and_reveals_nothing() -> None:
    app = RecallApp(Recorder(), TOKEN)

    assert await call(app, "/active-memory/v1/health", method="GET", headers=[]) == (
        200,
        {"ok": True},
    )


@pytest.mark.asyncio
async def test_forwarded_environment_headers_reach_recall() -> None:
    answer = Recorder()
    app = RecallApp(answer, TOKEN)
    headers = [
        *auth(),
        (b"x-active-memory-env-active_memory_run_id", b"run-7"),
        (b"x-active-memory-env-active_memory_node", b""),  # unset in Claude Code's eyes
        (b"x-other", b"ignored"),
    ]

    await call(app, "/active-memory/v1/hook/after-tool", HOOK, headers=headers)

    assert answer.calls[0][2] == {"ACTIVE_MEMORY_RUN_ID": "run-7"}


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.com", "10.0.0.1"])
def test_non_loopback_hosts_are_refused(host: str) -> None:
    with pytest.raises(NotLoopback) as raised:
        loopback_host(host)
    assert raised.value.exit_code == 2


@pytest.mark.parametrize(
    ("host", "bound"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("localhost", "127.0.0.1"),
        ("::1", "::1"),
        ("127.8.0.1", "127.8.0.1"),
    ],
)
def test_loopback_hosts_are_accepted(host: str, bound: str) -> None:
    assert loopback_host(host) == bound


def test_the_listening_socket_says_tcp_so_answers_are_not_held_back_by_nagle() -> None:
    # asyncio turns on TCP_NODELAY only for sockets whose proto is IPPROTO_TCP; with
    # proto 0, every keep-alive answer waited ~40 ms for the client's delayed ACK.
    sock = bind_loopback("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockname()[0] == "127.0.0.1"
    finally:
        sock.close()
