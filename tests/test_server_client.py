"""The thin client, the discovery file and the token against a real uvicorn server process."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from active_memory.hooks.client import ask_server
from active_memory.hooks.discovery import read_discovery, write_discovery
from active_memory.hooks.paths import discovery_path, server_state_dir
from active_memory.hooks.token import TokenFileError, load_or_create_token
from active_memory.store.location import zeroshot_state_dir

# A server whose recall function echoes what it was given, so a test can see that the
# hook JSON and the forwarded environment made it through uvicorn and back.
_SERVER = """
import sys
from pathlib import Path
from active_memory.hooks.server import serve
from active_memory.hooks.token import load_or_create_token

def answer(harness, payload, env):
    if payload.get("boom"):
        raise RuntimeError("boom")
    text = f"{harness}|{payload.get('tool_name')}|{env.get('ACTIVE_MEMORY_RUN_ID', '-')}"
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": text}}

token_file, discovery = Path(sys.argv[1]), Path(sys.argv[2])
serve(
    answer,
    token=load_or_create_token(token_file),
    token_file=token_file,
    discovery=discovery,
    port=0,
    on_listen=lambda host, port: print(port, flush=True),
)
"""


@dataclass
class Server:
    process: subprocess.Popen[str]
    port: int
    env: dict[str, str]
    token_file: Path
    discovery: Path


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    env = {**os.environ, "ZEROSHOT_STATE_DIR": str(tmp_path / "state")}
    env.pop("ACTIVE_MEMORY_TOKEN", None)
    token_file = Path(server_state_dir(env)) / "server.token"
    discovery = Path(discovery_path(env))
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(token_file), str(discovery)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield Server(process, port, env, token_file, discovery)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=10)
        process.stdout and process.stdout.close()
        process.stderr and process.stderr.close()


HOOK = {"session_id": "s-1", "tool_name": "Read", "tool_input": {"file_path": "a.py"}}


def test_the_client_gets_the_servers_answer_with_the_forwarded_environment(
    server: Server,
) -> None:
    env = {**server.env, "ACTIVE_MEMORY_RUN_ID": "run-42"}

    answer = ask_server("claude", json.dumps(HOOK).encode(), env=env, read_timeout=2)

    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "additionalContext": "claude|Read|run-42",
        }
    }


def test_an_internal_error_reaches_the_client_as_no_context(server: Server) -> None:
    assert ask_server("codex", {"boom": True}, env=server.env, read_timeout=2) == {}
    assert server.process.poll() is None


def test_the_token_file_is_private_and_the_discovery_file_names_the_server(
    server: Server,
) -> None:
    assert stat.S_IMODE(server.token_file.stat().st_mode) == 0o600
    address = read_discovery(server.discovery)
    assert address is not None
    assert (address.host, address.port, address.pid) == (
        "127.0.0.1",
        server.port,
        server.process.pid,
    )
    assert stat.S_IMODE(server.discovery.stat().st_mode) == 0o600


def test_a_wrong_token_gets_nothing(server: Server) -> None:
    server.token_file.write_text("not-the-token\n")  # the client reads it; the server kept its own

    assert ask_server("claude", HOOK, env=server.env, read_timeout=2) is None


def test_garbage_does_not_take_the_server_down(server: Server) -> None:
    token = load_or_create_token(server.token_file)
    hook_path = b"POST /active-memory/v1/hook/claude HTTP/1.1\r\nConnection: close\r\n"
    auth = f"Authorization: Bearer {token}\r\n".encode()
    for raw, status in (
        (b"\x00\x01garbage\r\n\r\n", None),  # not HTTP: uvicorn may just hang up
        (b"GET / HTTP/1.1\r\nContent-Length: banana\r\n\r\n", None),
        (hook_path + b"Content-Length: 4\r\n" + auth + b"\r\n{nop", b"400"),
        (hook_path + b"Content-Length: 2\r\n" + auth + b"\r\n[]", b"400"),
        (hook_path + b"Content-Length: 2\r\n\r\n{}", b"401"),
        (b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", b"404"),
    ):
        with socket.create_connection(("127.0.0.1", server.port), timeout=2) as conn:
            conn.sendall(raw)
            if status is None:
                conn.shutdown(socket.SHUT_WR)
            reply = b""
            while chunk := conn.recv(65536):
                reply += chunk
        if status is None:
            assert reply == b"" or reply.startswith(b"HTTP/1.1 4"), reply
        else:
            assert reply.startswith(b"HTTP/1.1 " + status), reply

    assert ask_server("claude", HOOK, env=server.env, read_timeout=2) is not None
    assert server.process.poll() is None


def test_sigterm_shuts_down_cleanly_and_removes_the_discovery_file(server: Server) -> None:
    server.process.send_signal(signal.SIGTERM)

    assert server.process.wait(timeout=10) == 0
    assert not server.discovery.exists()
    assert ask_server("claude", HOOK, env=server.env) is None


def test_sigint_shuts_down_cleanly_too(server: Server) -> None:
    server.process.send_signal(signal.SIGINT)

    assert server.process.wait(timeout=10) == 0
    assert not server.discovery.exists()


def test_no_server_means_none_quickly(tmp_path: Path) -> None:
    env = {"ZEROSHOT_STATE_DIR": str(tmp_path)}
    started = time.perf_counter()

    assert ask_server("claude", HOOK, env=env) is None
    assert time.perf_counter() - started < 0.5


def test_a_stale_discovery_file_is_ignored(tmp_path: Path) -> None:
    env = {"ZEROSHOT_STATE_DIR": str(tmp_path)}
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path = Path(discovery_path(env))
    write_discovery(path, "127.0.0.1", 9, tmp_path / "token")
    raw = json.loads(path.read_text())
    path.write_text(json.dumps({**raw, "pid": dead.pid}))

    assert read_discovery(path) is None
    assert ask_server("claude", HOOK, env=env) is None


def test_a_silent_listener_times_out_into_none(tmp_path: Path) -> None:
    # Something accepts connections but never answers (a hung server): the client
    # gives up within its read timeout.
    env = {"ZEROSHOT_STATE_DIR": str(tmp_path)}
    token = tmp_path / "token"
    token.write_text("t\n")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        write_discovery(discovery_path(env), "127.0.0.1", listener.getsockname()[1], token)
        started = time.perf_counter()
        assert ask_server("claude", HOOK, env=env, read_timeout=0.05) is None
        assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("value", ["caf\u00e9", "two\nlines", " padded"])
def test_an_environment_value_that_cannot_be_a_header_means_none(
    server: Server, value: str
) -> None:
    env = {**server.env, "ACTIVE_MEMORY_WORKSPACE": value}

    assert ask_server("claude", HOOK, env=env, read_timeout=2) is None


def test_a_second_server_is_refused_while_one_runs(server: Server) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _SERVER, str(server.token_file), str(server.discovery)],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert result.returncode != 0
    assert "already running" in result.stderr
    assert read_discovery(server.discovery) is not None  # the live one's file is kept


def test_token_is_created_once_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "server.token"

    first = load_or_create_token(path)

    assert len(first) >= 40
    assert load_or_create_token(path) == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["server.token"]


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "server.token"
    path.write_text("abc\n")
    path.chmod(0o644)

    with pytest.raises(TokenFileError, match="chmod 600"):
        load_or_create_token(path)


@pytest.mark.parametrize(
    "env",
    [
        {"ZEROSHOT_STATE_DIR": "/z", "HOME": "/h"},
        {"XDG_STATE_HOME": "/x", "HOME": "/h"},
        {"HOME": "/h"},
    ],
)
def test_server_paths_agree_with_store_location(env: dict[str, str]) -> None:
    assert Path(server_state_dir(env)) == zeroshot_state_dir(env) / "active-memory"
