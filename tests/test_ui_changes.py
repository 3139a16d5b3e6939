"""A person's changes in the web view (both backends): an edit keeps the status the lesson
had unless the form changes it; history and review diffs mark the words that changed;
a login brings the person back to the page they asked for."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from conftest import Backend
from ui_support import (
    TOKEN,
    csrf_of,
    history,
    login,
    propose,
    publish,
    read,
    seed_mutations,
    specialist_adapt,
    web_client,
)

from active_memory.lessons import Author, DeferLesson, Lesson
from active_memory.ui.auth import Gate
from active_memory.ui.word_diff import rows, words


@pytest.fixture
def location(backend: Backend) -> str:
    publish(backend.location, seed_mutations())
    maintenance = Author(specialist="repository_maintenance")
    deferred = DeferLesson(id="L-1", base_revision=1, author=maintenance,
                           reason="the wrapper may go away")  # fmt: skip
    publish(backend.location, [deferred])
    return backend.location


def _fields(csrf: str, base: int, **extra: str) -> dict[str, str]:
    return {
        "csrf": csrf, "base_revision": str(base),
        "title": "Regenerate the API client with make api-client",
        "recommendation": "After editing `api/schema.json` run `make api-client` once.",
        "files": "api/schema.json", "identifiers": "ApiClient", "reason": "clearer", **extra,
    }  # fmt: skip


def test_an_edit_keeps_a_deferred_lesson_deferred_unless_the_form_changes_it(
    location: str,
) -> None:
    with web_client(location) as client:
        login(client)
        page = client.get("/lessons/L-1").text
        assert '<option value="deferred" selected>deferred (as now)</option>' in page
        csrf = csrf_of(page)
        assert client.post("/lessons/L-1/edit", data=_fields(csrf, 2)).status_code == 303
        kept = read(location, "L-1")
        assert isinstance(kept, Lesson) and (kept.revision, kept.status) == (3, "deferred")
        # A form without the field (a script, an old page) keeps it too.
        done = client.post("/lessons/L-1/edit", data=_fields(csrf, 3, title="Once more"))
        assert done.status_code == 303
        assert read(location, "L-1").status == "deferred"  # type: ignore[attr-defined]
        chosen = client.post("/lessons/L-1/edit", data=_fields(csrf, 4, status="active"))
        assert chosen.status_code == 303
        assert read(location, "L-1").status == "active"  # type: ignore[attr-defined]
        bad = client.post("/lessons/L-1/edit", data=_fields(csrf, 5, status="retired"))
        assert bad.status_code == 422 and "is not active or deferred" in bad.text
    statuses = [(e.action, e.status) for e in history(location, "L-1")]  # type: ignore[attr-defined]
    assert statuses == [("create", "active"), ("defer", "deferred"), ("adapt", "deferred"),
                        ("adapt", "deferred"), ("adapt", "active")]  # fmt: skip


def test_a_maintenance_adapt_still_reactivates_a_deferred_lesson(location: str) -> None:
    publish(location, [specialist_adapt("L-1", 2, "Regenerate via make api-client twice")])
    assert read(location, "L-1").status == "active"  # type: ignore[attr-defined]


def test_a_changed_recommendation_shows_the_words_that_changed(location: str) -> None:
    with web_client(location) as client:
        login(client)
        csrf = csrf_of(client.get("/lessons/L-1").text)
        client.post("/lessons/L-1/edit", data=_fields(csrf, 2))
        page = client.get("/lessons/L-1").text
        recommendation = "  After editing `api/schema.json` run `make api-client`"
        assert f'<div class="del">{recommendation}.</div>' in page
        assert f'<div class="add">{recommendation}<ins> once</ins>.</div>' in page
        assert "Regenerate the client <del>through</del> make" in page
        assert "Regenerate the <ins>API </ins>client <ins>with</ins> make" in page


def test_word_diffs_pair_alike_lines_and_leave_unlike_ones_whole() -> None:
    old, new = words("Run make lint before review.", "Run make lint after review.") or ([], [])
    assert old == [["=", "Run make lint "], ["-", "before"], ["=", " review."]]
    assert new == [["=", "Run make lint "], ["+", "after"], ["=", " review."]]
    assert words("Run make lint.", "Completely different words here entirely") is None
    shown = rows(["--- r1", "+++ r2", "@@ -1,2 +1,2 @@", " same", "-Run make lint.",
                  "+Completely different words here entirely", "+an added line"])  # fmt: skip
    assert [r["kind"] for r in shown] == ["head", "head", "hunk", "same", "del", "add", "add"]
    assert shown[4]["segments"] == [["-", "Run make lint."]]


def test_the_review_diff_marks_changed_words(location: str) -> None:
    adapt = specialist_adapt("L-3", 1, "Run the linter before every review")
    propose(location, [adapt])
    with web_client(location) as client:
        login(client)
        page = client.get("/review").text
        assert 'id="review-diff-1"' in page and "<ins>" in page and "<del>" in page


def test_a_login_brings_the_person_back_to_the_page_asked_for(location: str) -> None:
    gate = Gate(TOKEN)
    with web_client(location, gate) as client:
        asked = client.get("/lessons/L-2?q=markup")
        assert asked.status_code == 401
        assert 'name="next" value="/lessons/L-2?q=markup"' in asked.text
        back = client.post("/login", data={"token": TOKEN, "next": "/lessons/L-2?q=markup"})
        assert back.status_code == 303 and back.headers["location"] == "/lessons/L-2?q=markup"
    with web_client(location, gate) as client:
        code = gate.new_login_code()
        link = client.get(f"/login?code={code}&next={quote('/costs')}")
        assert link.headers["location"] == "/costs"
    for elsewhere in ("https://evil.example/", "//evil.example/x", "/\\evil", "lessons"):
        with web_client(location, gate) as client:
            answer = client.post("/login", data={"token": TOKEN, "next": elsewhere})
            assert answer.headers["location"] == "/", elsewhere
