"""`active-memory serve` end to end: real lessons, a real checkout, HTTP hook calls."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT

CLI = [sys.executable, "-c", "from active_memory.cli import run; run()"]
LESSONS = REPO_ROOT / "examples" / "lessons.jsonl"


@dataclass
class Running:
    process: subprocess.Popen[str]
    port: int
    token: str
    checkout: Path
    env: dict[str, str]
    store: Path

    def post(
        self, body: bytes, headers: dict[str, str] | None = None, harness: str = "claude"
    ) -> tuple[int, Any]:
        """POST a hook body as Claude Code's HTTP hook does; status and decoded answer."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/active-memory/v1/hook/{harness}",
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                **(self.auth() if headers is None else headers),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            with error:
                return error.code, json.loads(error.read() or b"null")

    def auth(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}


def read_call(checkout: Path, session: str, path: str = "api/schema.json") -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": "/tmp/t.jsonl",
            "cwd": str(checkout),
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": str(checkout / path)},
        }
    ).encode()


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    checkout = tmp_path / "repo"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:acme/api.git\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")} | {
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state")
    }
    store = tmp_path / "lessons.sqlite3"
    subprocess.run(
        [*CLI, "lessons", "import", str(LESSONS), "--store", str(store)],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--store", str(store)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+) ", banner)
        assert found, banner
        token = (tmp_path / "state" / "active-memory" / "server.token").read_text().strip()
        yield Running(process, int(found.group(1)), token, checkout, env, store)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


def test_a_matching_pre_tool_use_call_gets_additional_context(running: Running) -> None:
    status, answer = running.post(read_call(running.checkout, "s-1"))

    assert status == 200
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert "(L-1 r2)" in output["additionalContext"]
    assert output["additionalContext"].startswith("<active-memory note=")


def test_a_card_reaches_a_session_once_and_other_sessions_too(running: Running) -> None:
    assert "hookSpecificOutput" in running.post(read_call(running.checkout, "s-1"))[1]

    assert running.post(read_call(running.checkout, "s-1")) == (200, {})
    assert "hookSpecificOutput" in running.post(read_call(running.checkout, "s-2"))[1]


def test_a_call_matching_nothing_gets_an_empty_answer(running: Running) -> None:
    assert running.post(read_call(running.checkout, "s-1", "README.md")) == (200, {})


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_a_wrong_or_missing_token_gets_no_context(running: Running, token: str | None) -> None:
    headers = {} if token is None else running.auth(token)

    status, answer = running.post(read_call(running.checkout, "s-1"), headers=headers)

    assert status == (401 if token is None else 403)
    assert "hookSpecificOutput" not in answer
    # …and nothing was spent: the right token still gets the card in that session.
    assert "hookSpecificOutput" in running.post(read_call(running.checkout, "s-1"))[1]


def test_garbage_bodies_are_400_and_the_server_keeps_answering(running: Running) -> None:
    for body in (b"{not json", b"\xff\xfe\x00", b"[]", b'{"tool_input": {}}'):
        status, answer = running.post(body)
        assert status == 400, body
        assert "error" in answer

    assert running.process.poll() is None
    assert "hookSpecificOutput" in running.post(read_call(running.checkout, "s-1"))[1]


def test_the_after_tool_hook_answers_with_text_to_append(running: Running) -> None:
    body = json.dumps(
        {
            "tool": "read",
            "args": {"filePath": str(running.checkout / "api" / "schema.json")},
            "sessionID": "ses_1",
            "cwd": str(running.checkout),
        }
    ).encode()

    status, answer = running.post(body, harness="after-tool")

    assert status == 200
    assert answer["append"].startswith("\n\n<active-memory")


def run_hook(running: Running, body: bytes, **env: str) -> str:
    hook = subprocess.run(
        [*CLI, "hook", "claude"],
        input=body.decode(),
        env={**running.env, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert hook.returncode == 0
    return hook.stdout.strip()


def test_the_command_hook_asks_the_running_server(running: Running) -> None:
    # The hook's own environment names no store (so alone it would find no lessons); the
    # server was started with --store: a card in the hook's output came from the server.
    output = run_hook(running, read_call(running.checkout, "s-5"))

    assert "(L-1 r2)" in json.loads(output)["hookSpecificOutput"]["additionalContext"]


def test_without_the_server_the_command_hook_answers_from_the_same_ledger(
    running: Running,
) -> None:
    store = str(running.store)
    assert "hookSpecificOutput" in running.post(read_call(running.checkout, "s-9"))[1]
    running.process.send_signal(signal.SIGTERM)
    assert running.process.wait(timeout=10) == 0

    # Same session: the server's delivery is in the shared ledger, nothing twice.
    assert run_hook(running, read_call(running.checkout, "s-9"), ACTIVE_MEMORY_STORE=store) == ""
    # Another session: the hook alone finds the card.
    alone = run_hook(running, read_call(running.checkout, "s-10"), ACTIVE_MEMORY_STORE=store)
    assert "(L-1 r2)" in alone


def test_sigterm_stops_the_server_and_removes_its_discovery_file(running: Running) -> None:
    discovery = Path(running.env["ZEROSHOT_STATE_DIR"]) / "active-memory" / "server.json"
    assert json.loads(discovery.read_text())["port"] == running.port

    running.process.send_signal(signal.SIGTERM)

    assert running.process.wait(timeout=10) == 0
    assert not discovery.exists()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "example.com"])
def test_a_non_loopback_host_is_refused(tmp_path: Path, host: str) -> None:
    result = subprocess.run(
        [*CLI, "serve", "--host", host, "--port", "0"],
        env={**os.environ, "ZEROSHOT_STATE_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 2
    assert "loopback only" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "active-memory").exists()  # no token, no discovery file


def test_print_token_prints_the_token_the_server_checks(tmp_path: Path) -> None:
    env = {**os.environ, "ZEROSHOT_STATE_DIR": str(tmp_path)}

    result = subprocess.run(
        [*CLI, "serve", "--print-token"], env=env, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0
    token_file = tmp_path / "active-memory" / "server.token"
    assert result.stdout.strip() == token_file.read_text().strip()
    assert oct(token_file.stat().st_mode & 0o777) == "0o600"


def test_a_second_serve_exits_2_while_one_runs(running: Running) -> None:
    result = subprocess.run(
        [*CLI, "serve", "--port", "0"],
        env=running.env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 2
    assert f"already running (pid {running.process.pid}, port {running.port})" in result.stderr
    assert running.post(read_call(running.checkout, "s-1"))[0] == 200


def test_a_busy_port_exits_2(running: Running, tmp_path: Path) -> None:
    result = subprocess.run(
        [*CLI, "serve", "--port", str(running.port)],
        env={**running.env, "ZEROSHOT_STATE_DIR": str(tmp_path / "other-state")},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{running.port}" in result.stderr


def test_a_discovery_file_naming_a_live_non_server_is_replaced(tmp_path: Path) -> None:
    # The pid in a leftover discovery file was reused by an unrelated process: that is
    # not a running server, so a new one starts and takes the file over.
    env = {**os.environ, "ZEROSHOT_STATE_DIR": str(tmp_path)}
    discovery = tmp_path / "active-memory" / "server.json"
    discovery.parent.mkdir(parents=True)
    discovery.write_text(
        json.dumps(
            {"host": "127.0.0.1", "port": 9, "pid": os.getpid(), "token_file": "x", "started_at": 0}
        )
    )
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0"], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        assert "listening on" in process.stderr.readline()
        assert json.loads(discovery.read_text())["pid"] == process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


def test_forwarded_identity_headers_reach_recall(running: Running, tmp_path: Path) -> None:
    # A checkout without a remote has no namespace of its own; the HTTP hook forwards
    # ACTIVE_MEMORY_REPOSITORY as Claude Code would (headers + allowedEnvVars).
    bare = tmp_path / "bare"
    (bare / ".git").mkdir(parents=True)
    body = read_call(bare, "s-fwd")

    assert running.post(body) == (200, {})
    headers = {
        **running.auth(),
        "X-Active-Memory-Env-ACTIVE_MEMORY_REPOSITORY": "repo:github.com/acme/api",
        "X-Active-Memory-Env-ACTIVE_MEMORY_RUN_ID": "",  # unset in Claude Code's eyes
    }
    status, answer = running.post(read_call(bare, "s-fwd-2"), headers=headers)
    assert status == 200
    assert "(L-1 r2)" in answer["hookSpecificOutput"]["additionalContext"]


def test_a_killed_server_leaves_a_stale_file_and_the_hook_answers_alone(
    running: Running,
) -> None:
    discovery = Path(running.env["ZEROSHOT_STATE_DIR"]) / "active-memory" / "server.json"
    running.process.send_signal(signal.SIGKILL)
    running.process.wait(timeout=10)
    assert discovery.exists()  # no chance to clean up

    output = run_hook(
        running, read_call(running.checkout, "s-stale"), ACTIVE_MEMORY_STORE=str(running.store)
    )

    assert "(L-1 r2)" in json.loads(output)["hookSpecificOutput"]["additionalContext"]


def claude_code_http_request(handler: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    """The headers Claude Code would send for an installed HTTP hook handler: `$VAR` and
    `${VAR}` filled from `env` for variables in `allowedEnvVars`, others left empty."""
    allowed = set(handler.get("allowedEnvVars", []))

    def fill(found: re.Match[str]) -> str:
        name = found.group(1) or found.group(2)
        return env.get(name, "") if name in allowed else ""

    pattern = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
    return {key: pattern.sub(fill, value) for key, value in handler["headers"].items()}


@pytest.mark.parametrize("with_token", [True, False])
def test_the_installed_http_hook_reaches_the_server_with_the_token(
    running: Running, with_token: bool
) -> None:
    subprocess.run(
        [*CLI, "hook", "install", "claude", "--http", "--port", str(running.port)],
        cwd=running.checkout,
        env=running.env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    settings = json.loads((running.checkout / ".claude" / "settings.local.json").read_text())
    group = settings["hooks"]["PreToolUse"][0]
    assert re.fullmatch(group["matcher"], "Read")
    handler = group["hooks"][0]
    assert handler["url"] == f"http://127.0.0.1:{running.port}/active-memory/v1/hook/claude"
    claude_env = {"ACTIVE_MEMORY_RUN_ID": "run-http"}
    if with_token:
        claude_env["ACTIVE_MEMORY_TOKEN"] = running.token

    headers = claude_code_http_request(handler, claude_env)
    status, answer = running.post(read_call(running.checkout, "s-http"), headers=headers)

    if with_token:
        assert status == 200
        assert "(L-1 r2)" in answer["hookSpecificOutput"]["additionalContext"]
        runs = Path(running.env["ZEROSHOT_STATE_DIR"]) / "active-memory" / "recall" / "runs"
        assert any("run-http" in p.name for p in runs.iterdir())  # forwarded run identity
    else:
        assert status == 403
        assert "hookSpecificOutput" not in answer


def test_concurrent_calls_of_one_session_deliver_a_card_once(running: Running) -> None:
    from concurrent.futures import ThreadPoolExecutor

    body = read_call(running.checkout, "s-race")
    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(lambda _: running.post(body), range(24)))

    assert all(status == 200 for status, _ in answers)
    delivered = [a for _, a in answers if "hookSpecificOutput" in a]
    assert len(delivered) == 1
    assert running.process.poll() is None
