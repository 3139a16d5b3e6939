"""The web view inside `active-memory serve` (under /ui/): the same pages, API, login,
CSRF and host checks as `active-memory ui`; hook routes unchanged; nothing of the web
view loaded until its first request."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from conftest import Backend
from starlette.testclient import TestClient
from ui_support import TOKEN, csrf_of, publish, read, seed_mutations

from active_memory.hooks.paths import HEALTH_PATH, HOOK_PATH_PREFIX
from active_memory.hooks.server import RecallApp
from active_memory.lessons import Tombstone
from active_memory.ui.auth import Gate
from active_memory.ui.mount import WebMount

CLI = [sys.executable, "-c", "from active_memory.cli import run; run()"]
BASE = "http://127.0.0.1:47683"
PAGES = ["/ui/", "/ui/lessons/L-1", "/ui/review", "/ui/postmortems", "/ui/costs"]
APIS = ["/ui/api/lessons", "/ui/api/lessons/L-1", "/ui/api/scopes", "/ui/api/review"]
HOOK_CALL = {"session_id": "s", "tool_name": "Read", "tool_input": {"file_path": "/x"}}


class Answers:
    """The hook answer function: records each call, answers a fixed card."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(
        self, harness: str, payload: dict[str, Any], env: dict[str, str]
    ) -> Mapping[str, Any]:
        self.calls.append((harness, payload))
        return {"hookSpecificOutput": {"additionalContext": "card"}}


@pytest.fixture
def location(backend: Backend) -> str:
    publish(backend.location, seed_mutations())
    return backend.location


@pytest.fixture
def served(location: str) -> Iterator[tuple[TestClient, WebMount, Gate, Answers]]:
    """The recall server's app with the web view mounted, as `serve` builds it."""
    gate = Gate(TOKEN)
    mount = WebMount(location, gate)
    answers = Answers()
    app = RecallApp(answers, TOKEN, mount)
    with TestClient(app, base_url=BASE, follow_redirects=False) as client:
        yield client, mount, gate, answers


def _login(client: TestClient, gate: Gate) -> None:
    answer = client.get(f"/ui/login?code={gate.new_login_code()}")
    assert answer.status_code == 303 and answer.headers["location"] == "/ui/"
    cookie = answer.headers["set-cookie"]
    assert "am_ui_session_serve=" in cookie and "Path=/ui/" in cookie
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()


def test_hook_routes_answer_as_before_and_the_view_is_not_built_by_them(
    served: tuple[TestClient, WebMount, Gate, Answers],
) -> None:
    client, mount, _, answers = served
    assert client.get(HEALTH_PATH).json() == {"ok": True}
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    answer = client.post(f"{HOOK_PATH_PREFIX}claude", json=HOOK_CALL, headers=bearer)
    assert answer.status_code == 200
    assert answer.json() == {"hookSpecificOutput": {"additionalContext": "card"}}
    assert answers.calls == [("claude", HOOK_CALL)]
    assert client.post(f"{HOOK_PATH_PREFIX}claude", json=HOOK_CALL).status_code == 401
    assert client.get("/elsewhere").status_code == 404
    assert client.get("/uix").status_code == 404  # only /ui and below go to the view
    assert mount._app is None  # no store opened, no templates loaded


def test_pages_and_api_inside_serve_refuse_anyone_without_the_token(
    served: tuple[TestClient, WebMount, Gate, Answers],
) -> None:
    client, _, _, _ = served
    for path in PAGES:
        answer = client.get(path)
        assert answer.status_code == 401, path
        assert "Log in" in answer.text and "Regenerate" not in answer.text
        assert 'action="/ui/login"' in answer.text
    for path in APIS:
        assert client.get(path).status_code == 401, path
        assert client.get(path, headers={"Authorization": "Bearer no"}).status_code == 401
    client.cookies.set("am_ui_session", "forged")  # `ui`'s cookie name means nothing here
    client.cookies.set("am_ui_session_serve", "forged")
    assert client.get("/ui/").status_code == 401
    assert client.post("/ui/lessons/L-1/retire", data={"base_revision": "1"}).status_code == 401
    assert client.get("/ui").headers["location"] == "/ui/"
    assert client.post("/ui/login/code").status_code == 401


def test_pages_api_and_writes_work_inside_serve_after_login(
    served: tuple[TestClient, WebMount, Gate, Answers], location: str
) -> None:
    client, mount, gate, _ = served
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    listing = client.get("/ui/api/lessons", headers=bearer).json()
    assert [x["id"] for x in listing["lessons"]] == ["L-1", "L-2", "L-3"]
    detail = client.get("/ui/api/lessons/L-1", headers=bearer).json()
    assert detail["id"] == "L-1" and "effectiveness_history" in detail
    # A used login code is spent; a fresh one comes from /ui/login/code with the token.
    code = client.post("/ui/login/code", headers=bearer).json()
    assert code["login_path"] == "/ui/login" and code["valid_seconds"] == 600
    assert client.get(f"/ui/login?code={code['code']}").status_code == 303
    assert client.get(f"/ui/login?code={code['code']}").status_code == 403
    _login(client, gate)
    for path in PAGES:
        page = client.get(path)
        assert page.status_code == 200, path
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
        links = re.findall(r'(?:href|action)="(/[^"]*)"', page.text)
        assert links and all(link.startswith("/ui/") for link in links), (path, links)
    page = client.get("/ui/lessons/L-1")
    fields = {"csrf": csrf_of(page.text), "base_revision": "1", "reason": "moved on",
              "confirm": "yes"}  # fmt: skip
    assert client.post("/ui/lessons/L-1/retire", data={**fields, "csrf": "x"}).status_code == 403
    done = client.post("/ui/lessons/L-1/retire", data=fields)
    assert done.status_code == 303 and done.headers["location"] == "/ui/lessons/L-1?saved=r2"
    lesson = read(location, "L-1")
    assert isinstance(lesson, Tombstone) and lesson.revision == 2
    assert mount._app is not None


def test_another_host_name_is_refused_before_the_view_is_built(
    served: tuple[TestClient, WebMount, Gate, Answers],
) -> None:
    client, mount, _, _ = served
    answer = client.get("/ui/", headers={"Host": "attacker.example:47683"})
    assert answer.status_code == 400 and "Regenerate" not in answer.text
    assert mount._app is None


def test_a_store_that_cannot_open_is_503_and_hooks_keep_working(tmp_path: Path) -> None:
    mount = WebMount(str(tmp_path / "missing.sqlite3"), Gate(TOKEN))
    app = RecallApp(Answers(), TOKEN, mount)
    with TestClient(app, base_url=BASE, follow_redirects=False) as client:
        answer = client.get("/ui/")
        assert answer.status_code == 503 and "web view unavailable" in answer.text
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        hook = client.post(f"{HOOK_PATH_PREFIX}codex", json=HOOK_CALL, headers=bearer)
        assert hook.status_code == 200


def test_a_hook_only_server_never_imports_the_web_views_libraries() -> None:
    # A fresh interpreter: serve's app with the mount answers hook calls and health
    # checks without importing Starlette, Jinja2 or the store.
    script = """
import sys, anyio
from active_memory.hooks.server import RecallApp
from active_memory.ui.auth import Gate
from active_memory.ui.mount import WebMount

app = RecallApp(lambda h, p, e: {}, "t", WebMount("/nowhere.sqlite3", Gate("t")))
sent = []

async def call(path, body):
    messages = [{"type": "http.request", "body": body}]
    async def receive():
        return messages.pop(0)
    async def send(message):
        sent.append(message)
    scope = {"type": "http", "method": "POST" if body else "GET", "path": path,
             "headers": [(b"authorization", b"Bearer t"), (b"host", b"127.0.0.1")]}
    await app(scope, receive, send)

async def main():
    await call("/active-memory/v1/hook/claude", b'{"tool_name": "Read"}')
    await call("/active-memory/v1/health", b"")

anyio.run(main)
loaded = [m for m in ("starlette", "jinja2", "active_memory.ui.app", "aiosqlite")
          if m in sys.modules]
print([m["status"] for m in sent if m["type"] == "http.response.start"], loaded)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[200, 200] []", result.stderr


def _get(port: int, path: str, cookie: str | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers={"Cookie": cookie} if cookie else {})
    answer = conn.getresponse()
    answer.read()
    conn.close()
    return answer


def test_serve_prints_a_login_link_and_ui_link_asks_the_running_server(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")} | {
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state")
    }
    store = tmp_path / "lessons.sqlite3"
    publish(str(store), seed_mutations())
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--store", str(store)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert process.stderr is not None
        assert "listening on" in process.stderr.readline()
        banner = process.stderr.readline()
        found = re.search(r"web view at http://127\.0\.0\.1:(\d+)(/ui/login\?code=\S+) ", banner)
        assert found, banner
        port, path = int(found.group(1)), found.group(2)
        first = _get(port, path)
        assert first.status == 303
        cookie = first.headers["set-cookie"].split(";")[0]
        assert _get(port, "/ui/lessons/L-1", cookie).status == 200
        assert _get(port, path).status == 403  # the printed link works once
        linked = subprocess.run(
            [*CLI, "ui", "--link", "--json"], env=env, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        assert linked.returncode == 0, linked.stderr
        link = json.loads(linked.stdout)["link"]
        assert link.startswith(f"http://127.0.0.1:{port}/ui/login?code=")
        assert _get(port, link.removeprefix(f"http://127.0.0.1:{port}")).status == 303
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
        if process.stderr is not None:
            process.stderr.close()
    assert not (tmp_path / "state" / "active-memory" / "server.json").exists()


def test_ui_link_without_a_running_server_is_a_usage_error(tmp_path: Path) -> None:
    env = {**os.environ, "ZEROSHOT_STATE_DIR": str(tmp_path)}
    result = subprocess.run(
        [*CLI, "ui", "--link"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "no recall server is running" in result.stderr and result.stdout == ""


def test_serve_without_the_ui_answers_404_under_ui(tmp_path: Path) -> None:
    app = RecallApp(Answers(), TOKEN, None)
    with TestClient(app, base_url=BASE, follow_redirects=False) as client:
        assert client.get("/ui/").status_code == 404


def test_ui_link_to_a_server_started_without_the_view_says_so(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")} | {
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state")
    }
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--no-ui", "--store", str(tmp_path / "x.sqlite3")],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        assert "listening on" in process.stderr.readline()
        result = subprocess.run(
            [*CLI, "ui", "--link"], env=env, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 2 and result.stdout == ""
        assert "serves no web view" in result.stderr and "--no-ui" in result.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
        if process.stderr is not None:
            process.stderr.close()
