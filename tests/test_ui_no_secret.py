"""No secret on any page (issue 30 item 8): over a real PostgreSQL store, every page the
web view serves (`active-memory ui`, and `serve`'s `/ui/`), every API answer and every
error, form and confirmation page is searched for the store URL's password; the header
shows the masked location."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from starlette.testclient import TestClient
from test_ui_costs import _state
from ui_support import TOKEN, csrf_of, propose, proposed_lesson, publish, seed_mutations

from active_memory.hooks.server import RecallApp
from active_memory.store.location import mask_url
from active_memory.ui.app import create_app
from active_memory.ui.auth import Gate
from active_memory.ui.mount import WebMount

MAX_PAGES = 300


def _crawl(client: TestClient, start: str, prefix: str) -> dict[str, str]:
    """Every page reachable by a link from `start` (GET, this view only): path → body."""
    seen: dict[str, str] = {}
    queue = [start]
    while queue and len(seen) < MAX_PAGES:
        path = queue.pop(0)
        if path in seen:
            continue
        answer = client.get(path)
        seen[path] = answer.text + "\n" + "\n".join(f"{k}: {v}" for k, v in answer.headers.items())
        for link in re.findall(r'href="([^"#]*)', answer.text):
            link = link.replace("&amp;", "&")
            if link.startswith(prefix + "/") and link not in seen and "/logout" not in link:
                queue.append(link)
    return seen


def _forms(client: TestClient, prefix: str) -> dict[str, str]:
    """The pages only a form or an error shows."""
    page = client.get(f"{prefix}/lessons/L-1").text
    csrf = csrf_of(page)
    posts = {
        "retire-confirm": (f"{prefix}/lessons/L-1/retire",
                           {"csrf": csrf, "base_revision": "1", "reason": "gone"}),
        "edit-refused": (f"{prefix}/lessons/L-1/edit",
                         {"csrf": csrf, "base_revision": "1", "title": "x",
                          "recommendation": "Be careful."}),
        "conflict": (f"{prefix}/lessons/L-1/edit",
                     {"csrf": csrf, "base_revision": "9", "title": "Regenerate it",
                      "recommendation": "Run `make api-client` after `api/schema.json`.",
                      "files": "api/schema.json"}),
        "keep-refused": (f"{prefix}/lessons/L-1/keep", {"csrf": csrf, "base_revision": "1"}),
        "csrf-refused": (f"{prefix}/lessons/L-1/edit", {"base_revision": "1"}),
        "review-refused": (f"{prefix}/review/1/approve",
                           {"csrf": csrf, "edited": "1", "title": "x",
                            "recommendation": "Be careful."}),
    }  # fmt: skip
    found = {name: client.post(path, data=data).text for name, (path, data) in posts.items()}
    for path in (f"{prefix}/lessons/L-404", f"{prefix}/?limit=0", f"{prefix}/api/lessons/L-404",
                 f"{prefix}/api/lessons?offset=x", f"{prefix}/review/x/approve"):  # fmt: skip
        found[path] = client.get(path).text
    return found


def _apis(client: TestClient, prefix: str) -> dict[str, str]:
    paths = ["/api/lessons", "/api/lessons?status=all&stale=1", "/api/lessons/L-1",
             "/api/lessons/L-2", "/api/scopes", "/api/review", "/api/postmortems",
             "/api/costs"]  # fmt: skip
    return {p: client.get(prefix + p).text for p in paths}


@pytest.fixture
def store(postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    password = urlsplit(postgres_url).password
    assert password, "the test store's URL must carry a password"
    publish(postgres_url, seed_mutations())
    propose(postgres_url, [proposed_lesson("Regenerate the SDK", "Run `make sdk` first.")])
    env = _state(tmp_path, postgres_url)
    for name, value in env.items():  # `serve`'s mount reads the process environment
        monkeypatch.setenv(name, value)
    yield postgres_url


def _served(url: str, kind: str) -> tuple[TestClient, str, Callable[[TestClient], None]]:
    gate = Gate(TOKEN)
    if kind == "ui":
        return TestClient(create_app(url, gate), base_url="http://127.0.0.1"), "", _login("")
    mount = WebMount(url, gate)
    app = RecallApp(lambda h, p, e: {}, TOKEN, mount)
    return TestClient(app, base_url="http://127.0.0.1:47683"), "/ui", _login("/ui")


def _login(prefix: str) -> Callable[[TestClient], None]:
    def login(client: TestClient) -> None:
        assert client.post(f"{prefix}/login", data={"token": TOKEN}).status_code == 200

    return login


@pytest.mark.parametrize("kind", ["ui", "serve"])
def test_no_page_of_the_view_shows_the_store_password(store: str, kind: str) -> None:
    password = urlsplit(store).password
    assert password
    client, prefix, login = _served(store, kind)
    with client:
        logged_out = {p: client.get(prefix + p).text for p in ("/", "/lessons/L-1", "/costs")}
        logged_out["bad-login"] = client.post(f"{prefix}/login", data={"token": "no"}).text
        login(client)
        pages = _crawl(client, f"{prefix}/", prefix)
        assert len(pages) >= 10, sorted(pages)
        assert {f"{prefix}/review", f"{prefix}/postmortems", f"{prefix}/costs",
                f"{prefix}/lessons/L-1"} <= set(pages)  # fmt: skip
        answers = {**logged_out, **pages, **_forms(client, prefix), **_apis(client, prefix)}
    leaking = [path for path, body in answers.items() if password in body]
    assert leaking == []
    assert mask_url(store) in pages[f"{prefix}/"] and "***" in mask_url(store)
