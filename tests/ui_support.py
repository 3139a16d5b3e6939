"""Shared by the web view's tests: a seeded store, a logged-in client, form fields."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio
from conftest import AUTHOR, GRAPH_HASH, NAMESPACE
from starlette.testclient import TestClient

from active_memory.lessons import (
    AdaptLesson,
    Associations,
    Author,
    Card,
    Citation,
    CreateLesson,
    Evidence,
    GraphScope,
    Mutation,
    PublishReceipt,
    RepositoryScope,
)
from active_memory.store import open_store
from active_memory.ui.app import create_app
from active_memory.ui.auth import Gate

T = TypeVar("T")

TOKEN = "test-token-" + "x" * 30
BASE = "http://127.0.0.1"

MARKUP = '<script>alert("x")</script>'
"""Markup put in every card field a person sees; it must render as text."""


def seed_mutations() -> list[CreateLesson]:
    """L-1 a plain repository lesson; L-2 with markup in every card field; L-3 a graph one."""
    plain = CreateLesson(
        scope=RepositoryScope(repository=NAMESPACE),
        card=Card(
            title="Regenerate the client through make api-client",
            recommendation="After editing `api/schema.json` run `make api-client`.",
            associations=Associations(files=["api/schema.json"], identifiers=["ApiClient"]),
        ),
        evidence=Evidence(
            run_ids=["run-1"],
            evidence_ids=["E1"],
            citations=[Citation(path="api/schema.json", lines=(2, 3))],
        ),
        author=AUTHOR,
        reason="first seen in run-1",
    )
    marked = CreateLesson(
        scope=RepositoryScope(repository=NAMESPACE),
        card=Card(
            title=f"{MARKUP} title",
            recommendation=f"Run `make x` {MARKUP} <b>now</b>",
            associations=Associations(
                files=["src/<b>.py"],
                folders=["src/<i>"],
                identifiers=["<img/src=x>"],
                keywords=[["schema", "markup"]],
            ),
        ),
        author=Author(specialist="repository_discovery", run_id=f"run-{MARKUP}"),
        reason=f"because {MARKUP}",
    )
    graph = CreateLesson(
        scope=GraphScope(graph_hash=GRAPH_HASH, node="worker"),
        card=Card(
            title="Run the linter before review",
            recommendation="Run `ruff check .` before handing over to the reviewer.",
            associations=Associations(keywords=[["ruff", "lint"]]),
        ),
        author=AUTHOR,
    )
    return [plain, marked, graph]


def _run(main: Callable[[], Awaitable[T]]) -> T:
    """`anyio.run(main)` in a thread of its own: callers may sit inside another event
    loop (Playwright's sync API runs one in the test's thread)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, main).result()


def publish(location: str, mutations: Sequence[Mutation]) -> PublishReceipt:
    """Publish as another process would (a postmortem), through its own store handle."""

    async def main() -> PublishReceipt:
        async with open_store(location) as store:
            return await store.publish(mutations)

    return _run(main)


def propose(location: str, mutations: Sequence[CreateLesson | AdaptLesson]) -> list[int]:
    """Keep proposals as a manual-review postmortem would."""

    async def main() -> list[int]:
        async with open_store(location) as store:
            return await store.propose(mutations)

    return _run(main)


def proposals(location: str) -> list[Any]:
    """Every proposal as the store has it now."""

    async def main() -> list[Any]:
        async with open_store(location) as store:
            return list(await store.proposals())

    return _run(main)


def proposed_lesson(title: str, recommendation: str) -> CreateLesson:
    """A discovery's new repository lesson, as a manual-review postmortem keeps it."""
    return CreateLesson(
        scope=RepositoryScope(repository=NAMESPACE),
        card=Card(
            title=title,
            recommendation=recommendation,
            associations=Associations(files=["api/schema.json"]),
        ),
        author=Author(specialist="repository_discovery", run_id="run-7", model="m"),
        reason="seen in run-7",
    )


def read(location: str, lesson_id: str) -> object:
    """The lesson as the store has it now."""

    async def main() -> object:
        async with open_store(location) as store:
            return await store.get(lesson_id)

    return _run(main)


def history(location: str, lesson_id: str) -> list[object]:
    """The lesson's history as the store has it now."""

    async def main() -> list[object]:
        async with open_store(location) as store:
            return list(await store.history(lesson_id))

    return _run(main)


def specialist_adapt(lesson_id: str, base_revision: int, title: str) -> AdaptLesson:
    """What a postmortem's maintenance would publish for `lesson_id`."""
    return AdaptLesson(
        id=lesson_id,
        base_revision=base_revision,
        card=Card(
            title=title,
            recommendation="After editing `api/schema.json` run `make api-client` twice.",
            associations=Associations(files=["api/schema.json"]),
        ),
        author=Author(specialist="repository_maintenance", run_id="run-9", model="m"),
        reason="the evidence recurred",
    )


@contextmanager
def web_client(location: str, gate: Gate | None = None) -> Iterator[TestClient]:
    """A client of the web view over `location` (not logged in)."""
    app = create_app(location, gate or Gate(TOKEN))
    with TestClient(app, base_url=BASE, follow_redirects=False) as client:
        yield client


def login(client: TestClient) -> None:
    """Log in with the server's token (as the login form does)."""
    answer = client.post("/login", data={"token": TOKEN})
    assert answer.status_code == 303, answer.text


def csrf_of(html: str) -> str:
    """The CSRF token a page's forms carry."""
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page has no CSRF field"
    return found.group(1)
