"""The lessons list one page at a time (both backends): server-side pages on the page and
`/api/lessons` (`limit`, `offset`, `total`), natural ID order, the status filter doing
what it says, search words marked, run and evidence filters behind the links."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from conftest import AUTHOR, NAMESPACE, Backend
from starlette.testclient import TestClient
from ui_support import TOKEN, login, publish, web_client

from active_memory.lessons import (
    Associations,
    Author,
    Card,
    CreateLesson,
    DeferLesson,
    Evidence,
    RepositoryScope,
    RetireLesson,
)

BEARER = {"Authorization": f"Bearer {TOKEN}"}


def _create(n: int) -> CreateLesson:
    return CreateLesson(
        scope=RepositoryScope(repository=NAMESPACE),
        card=Card(
            title=f"Regenerate client module {n} through the wrapper",
            recommendation=f"After editing `src/m{n}.py` run `make api-client`.",
            associations=Associations(files=[f"src/m{n}.py"]),
        ),
        evidence=Evidence(run_ids=[f"run-{n % 3}"], evidence_ids=[f"ev-tf-{n:012d}"]),
        author=AUTHOR,
    )


@pytest.fixture
def client(backend: Backend) -> Iterator[TestClient]:
    """120 lessons: L-1..L-120; L-5 deferred, L-7 retired."""
    publish(backend.location, [_create(n) for n in range(1, 121)])
    by = Author(specialist="person:test")
    publish(backend.location, [DeferLesson(id="L-5", base_revision=1, author=by),
                               RetireLesson(id="L-7", base_revision=1, author=by)])  # fmt: skip
    with web_client(backend.location) as opened:
        yield opened


def _ids(answer: dict[str, object]) -> list[str]:
    return [row["id"] for row in answer["lessons"]]  # type: ignore[attr-defined]


def test_the_api_pages_in_natural_id_order_with_the_total(client: TestClient) -> None:
    first = client.get("/api/lessons", headers=BEARER).json()
    assert first["total"] == 119 and first["count"] == 100  # living: L-7 is retired
    assert _ids(first)[:11] == ["L-1", "L-2", "L-3", "L-4", "L-5", "L-6", "L-8", "L-9",
                                "L-10", "L-11", "L-12"]  # fmt: skip
    rest = client.get("/api/lessons?offset=100&limit=50", headers=BEARER).json()
    assert (rest["offset"], rest["limit"], rest["count"]) == (100, 50, 19)
    assert _ids(rest)[-1] == "L-120" and not set(_ids(first)) & set(_ids(rest))
    past = client.get("/api/lessons?offset=500", headers=BEARER).json()
    assert past["lessons"] == [] and past["total"] == 119
    for bad in ("limit=0", "limit=1001", "limit=x", "offset=-1"):
        answer = client.get(f"/api/lessons?{bad}", headers=BEARER)
        assert answer.status_code == 400, bad
        assert answer.json()["error"].startswith(bad.split("=")[0] + ":")


def test_the_status_filter_does_what_it_says(client: TestClient) -> None:
    def statuses(query: str) -> set[str]:
        found = client.get(f"/api/lessons?limit=1000&{query}", headers=BEARER).json()
        return {row["status"] for row in found["lessons"]}

    assert statuses("") == {"active", "deferred"}
    assert statuses("status=active") == {"active"}
    assert statuses("status=deferred") == {"deferred"}
    assert statuses("status=retired") == {"retired"}
    assert statuses("status=all") == {"active", "deferred", "retired"}
    assert statuses("status=retired&q=L-7") == {"retired"}
    assert statuses("q=module+5+through") >= {"deferred"}  # the text filter keeps the status
    assert "retired" not in statuses("q=module")


def test_the_page_shows_one_page_with_links_to_the_others(client: TestClient) -> None:
    login(client)
    page = client.get("/").text
    assert page.count("<tr>\n  <td><a href=") == 50
    assert '<span id="count">119 lessons</span>' in page
    assert "showing 1\u201350, page 1 of 3" in page
    assert 'id="page-first"' not in page and 'id="page-previous"' not in page
    assert 'href="/?offset=50" id="page-next"' in page
    assert 'href="/?offset=100" id="page-last"' in page
    last = client.get("/?offset=100").text
    assert "showing 101\u2013119, page 3 of 3" in last and 'id="page-next"' not in last
    assert 'href="/" id="page-first"' in last and 'href="/?offset=50" id="page-previous"' in last
    sized = client.get("/?status=all&limit=25&offset=25").text
    assert "showing 26\u201350, page 2 of 5" in sized
    assert 'href="/?status=all&amp;offset=50&amp;limit=25" id="page-next"' in sized


def test_search_words_are_marked_and_ids_and_evidence_link_to_their_lessons(
    client: TestClient,
) -> None:
    login(client)
    page = client.get("/?q=module+12+WRAPPER").text
    assert (
        "Regenerate client <mark>module</mark> <mark>12</mark> through the <mark>wrapper</mark>"
        in page
    )
    assert 'href="/lessons/L-12?q=module+12+WRAPPER"' in page
    lesson = client.get("/lessons/L-12?q=wrapper").text
    assert "through the <mark>wrapper</mark>" in lesson
    assert 'href="/postmortems?run=run-0"' in lesson
    assert 'href="/?evidence=ev-tf-000000000012&amp;status=all"' in lesson
    by_run = client.get("/api/lessons?run=run-0&limit=1000", headers=BEARER).json()
    assert by_run["total"] == 40 and all(int(i[2:]) % 3 == 0 for i in _ids(by_run))
    by_evidence = client.get("/api/lessons?evidence=ev-tf-000000000012", headers=BEARER).json()
    assert _ids(by_evidence) == ["L-12"]
    assert not re.search(r"<mark>[^<]*<mark>", page)


def test_a_lesson_written_by_another_process_shows_at_the_next_page(
    client: TestClient, backend: Backend
) -> None:
    before = client.get("/api/lessons", headers=BEARER).json()
    assert before["total"] == 119
    publish(backend.location, [_create(121)])  # as a postmortem would, meanwhile
    after = client.get("/api/lessons?offset=100", headers=BEARER).json()
    assert after["total"] == 120 and _ids(after)[-1] == "L-121"
    login(client)
    assert '<span id="count">120 lessons</span>' in client.get("/").text
