"""The web view over a real store: access, CSRF, escaping, edits and their conflicts."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from conftest import NAMESPACE, Backend
from ui_support import (
    MARKUP,
    TOKEN,
    csrf_of,
    history,
    login,
    proposals,
    propose,
    proposed_lesson,
    publish,
    read,
    seed_mutations,
    specialist_adapt,
    web_client,
)

from active_memory.cli import main
from active_memory.errors import RevisionConflict
from active_memory.lessons import Lesson, Tombstone
from active_memory.ui.auth import Gate

PAGES = ["/", "/lessons/L-1", "/?q=client&status=active"]
APIS = ["/api/lessons", "/api/lessons/L-1", "/api/scopes"]
WRITES = ["/lessons/L-1/edit", "/lessons/L-1/retire", "/lessons/L-1/revert"]


@pytest.fixture
def location(backend: Backend) -> str:
    """A store with the three seed lessons (L-1, L-2, L-3)."""
    publish(backend.location, seed_mutations())
    return backend.location


def _edit_fields(csrf: str, base: int, **extra: str) -> dict[str, str]:
    fields = {
        "csrf": csrf,
        "base_revision": str(base),
        "title": "Regenerate the API client with make api-client",
        "recommendation": "After editing `api/schema.json` run `make api-client` once.",
        "files": "api/schema.json",
        "folders": "",
        "identifiers": "ApiClient",
        "keywords": "",
        "reason": "clearer title",
    }
    fields.update(extra)
    return fields


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", "::"])
def test_ui_refuses_a_non_loopback_bind(host: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ui", "--host", host, "--store", "/nonexistent/x.sqlite3"]) == 2
    assert "loopback only" in capsys.readouterr().err


def test_every_page_api_and_write_without_the_token_is_refused(location: str) -> None:
    with web_client(location) as client:
        for path in PAGES:
            answer = client.get(path)
            assert answer.status_code == 401, path
            assert "Log in" in answer.text and "Regenerate" not in answer.text
        for path in APIS:
            assert client.get(path).status_code == 401, path
            wrong = client.get(path, headers={"Authorization": "Bearer wrong"})
            assert wrong.status_code == 401, path
        for path in WRITES:
            answer = client.post(path, data={"base_revision": "1", "to_revision": "1"})
            assert answer.status_code == 401, path
        client.cookies.set("am_ui_session", "forged")
        assert client.get("/").status_code == 401
    assert isinstance(read(location, "L-1"), Lesson)
    assert len(history(location, "L-1")) == 1


def test_api_answers_with_the_bearer_token_and_the_same_data_as_the_page(location: str) -> None:
    with web_client(location) as client:
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        listing = client.get("/api/lessons", headers=bearer).json()
        assert [row["id"] for row in listing["lessons"]] == ["L-1", "L-2", "L-3"]
        only_graph = client.get("/api/lessons?kind=graph", headers=bearer).json()
        assert [row["id"] for row in only_graph["lessons"]] == ["L-3"]
        found = client.get("/api/lessons?q=linter+reviewer", headers=bearer).json()
        assert [row["id"] for row in found["lessons"]] == ["L-3"]
        lesson = client.get("/api/lessons/L-1", headers=bearer).json()
        assert lesson["agent_card"].startswith("<active-memory note=")
        assert "## Regenerate the client through make api-client  (L-1 r1)" in lesson["agent_card"]
        assert lesson["history"][0]["author"]["specialist"] == "repository_discovery"
        assert client.get("/api/lessons/L-404", headers=bearer).status_code == 404
        scopes = client.get("/api/scopes", headers=bearer).json()
        assert scopes["repositories"] == [{"repository": NAMESPACE, "count": 2}]
        login(client)
        page = client.get("/lessons/L-1").text
        shown = re.search(r'<div class="card" id="agent-card">(.*?)</div>', page, re.S)
        assert shown is not None and html.unescape(shown.group(1)) == lesson["agent_card"]


def test_a_page_under_another_host_name_is_refused(location: str) -> None:
    with web_client(location) as client:
        login(client)
        assert client.get("/", headers={"Host": "attacker.example:47684"}).status_code == 400


def test_the_one_time_login_link_works_once(location: str) -> None:
    gate = Gate(TOKEN)
    code = gate.new_login_code()
    with web_client(location, gate) as client:
        first = client.get(f"/login?code={code}")
        assert first.status_code == 303
        cookie = first.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert client.get("/").status_code == 200
        client.cookies.clear()
        assert client.get(f"/login?code={code}").status_code == 403
        assert client.get("/").status_code == 401
        assert client.post("/login", data={"token": "wrong"}).status_code == 403


def test_a_write_without_the_csrf_token_is_refused_and_writes_nothing(location: str) -> None:
    with web_client(location) as client:
        login(client)
        csrf = csrf_of(client.get("/lessons/L-1").text)
        for fields in ({}, {"csrf": "forged"}):
            answer = client.post("/lessons/L-1/edit", data=_edit_fields(csrf, 1) | fields
                                 if fields else {k: v for k, v in _edit_fields(csrf, 1).items()
                                                 if k != "csrf"})  # fmt: skip
            assert answer.status_code == 403
            assert "CSRF" in answer.text
            retire = client.post("/lessons/L-1/retire", data={"base_revision": "1", **fields})
            assert retire.status_code == 403
    lesson = read(location, "L-1")
    assert isinstance(lesson, Lesson) and lesson.revision == 1


def test_every_card_field_with_markup_renders_as_text(location: str) -> None:
    with web_client(location) as client:
        login(client)
        for path in ("/", "/lessons/L-2", "/?q=markup"):
            page = client.get(path).text
            assert MARKUP not in page and "<b>" not in page and "<img" not in page
            assert "&lt;script&gt;" in page
        detail = client.get("/lessons/L-2").text
        for shown in ("src/&lt;b&gt;.py", "src/&lt;i&gt;", "&lt;img/src=x&gt;", "because &lt;"):
            assert shown in detail, shown


def test_an_edit_is_checked_published_and_authored_by_the_person(location: str) -> None:
    with web_client(location) as client:
        login(client)
        csrf = csrf_of(client.get("/lessons/L-1").text)
        generic = client.post(
            "/lessons/L-1/edit", data=_edit_fields(csrf, 1, recommendation="Be careful.")
        )
        assert generic.status_code == 422 and "generic advice" in generic.text
        assert 'value="Regenerate the API client with make api-client"' in generic.text
        bare = client.post("/lessons/L-1/edit", data=_edit_fields(csrf, 1, files="",
                                                                  identifiers=""))  # fmt: skip
        assert bare.status_code == 422 and "needs one at least" in bare.text
        secret = client.post("/lessons/L-1/edit", data=_edit_fields(
            csrf, 1, recommendation="Run `make api-client` with AKIAIOSFODNN7EXAMPLE"))  # fmt: skip
        assert secret.status_code == 422
        assert len(history(location, "L-1")) == 1
        saved = client.post("/lessons/L-1/edit", data=_edit_fields(csrf, 1))
        assert saved.status_code == 303 and saved.headers["location"].endswith("saved=r2")
        assert "is now r2" in client.get(saved.headers["location"]).text
    lesson = read(location, "L-1")
    assert isinstance(lesson, Lesson)
    assert lesson.revision == 2 and lesson.title.startswith("Regenerate the API client")
    assert lesson.evidence.run_ids == ["run-1"]  # an edit keeps the evidence
    last = history(location, "L-1")[-1]
    assert last.action == "adapt" and last.author.specialist.startswith("person:")  # type: ignore[attr-defined]
    assert last.reason == "clearer title"  # type: ignore[attr-defined]


def test_an_edit_sets_shows_and_keeps_a_lessons_commands(location: str) -> None:
    with web_client(location) as client:
        login(client)
        csrf = csrf_of(client.get("/lessons/L-1").text)
        bare = client.post("/lessons/L-1/edit", data=_edit_fields(csrf, 1, commands="git"))
        assert bare.status_code == 422 and "command &#39;git&#39; is a bare program" in bare.text
        given = "make api-client\ncd api && timeout 60 make api-client\ngit push -u origin main"
        saved = client.post("/lessons/L-1/edit", data=_edit_fields(csrf, 1, commands=given))
        assert saved.status_code == 303
        page = client.get("/lessons/L-1").text
        assert "<code>make api-client</code> <code>git push</code>" in page
        assert ">make api-client\ngit push</textarea>" in page  # the edit form keeps them
        entry = client.get("/api/lessons/L-1", headers={"Authorization": f"Bearer {TOKEN}"})
        assert entry.json()["card"]["associations"]["commands"] == ["make api-client", "git push"]
        assert "+commands: git push" in entry.json()["history"][-1]["diff"]
    lesson = read(location, "L-1")
    assert isinstance(lesson, Lesson) and lesson.associations.commands == [
        "make api-client",
        "git push",
    ]


def test_an_edit_after_a_postmortem_adapted_the_lesson_is_a_conflict(location: str) -> None:
    with web_client(location) as client:
        login(client)
        csrf = csrf_of(client.get("/lessons/L-1").text)  # the person reads r1
        publish(location, [specialist_adapt("L-1", 1, "Regenerate via make api-client twice")])
        answer = client.post("/lessons/L-1/edit", data=_edit_fields(csrf, 1))
        assert answer.status_code == 409
        assert "nothing published" in answer.text and "is at r2" in answer.text
        assert "Regenerate via make api-client twice" in answer.text  # now
        assert "Regenerate the API client with make api-client" in answer.text  # yours
    lesson = read(location, "L-1")
    assert isinstance(lesson, Lesson) and lesson.title == "Regenerate via make api-client twice"


def test_a_postmortem_adapting_after_a_ui_edit_gets_the_conflict(location: str) -> None:
    with web_client(location) as client:
        login(client)
        csrf = csrf_of(client.get("/lessons/L-1").text)
        assert client.post("/lessons/L-1/edit", data=_edit_fields(csrf, 1)).status_code == 303
    with pytest.raises(RevisionConflict) as conflict:
        publish(location, [specialist_adapt("L-1", 1, "Regenerate via make api-client twice")])
    assert conflict.value.conflicts[0].current_revision == 2
    lesson = read(location, "L-1")
    assert isinstance(lesson, Lesson) and lesson.title.startswith("Regenerate the API client")


def test_retire_and_revert_are_revision_checked_and_written_to_history(location: str) -> None:
    with web_client(location) as client:
        login(client)
        csrf = csrf_of(client.get("/lessons/L-1").text)
        assert client.post("/lessons/L-1/edit", data=_edit_fields(csrf, 1)).status_code == 303
        retire = {"csrf": csrf, "reason": "obsolete", "confirm": "yes"}
        stale = client.post("/lessons/L-1/retire", data={**retire, "base_revision": "1"})
        assert stale.status_code == 409
        # A retire needs a reason, then a confirmation; neither writes anything.
        unsaid = client.post("/lessons/L-1/retire", data={**retire, "base_revision": "2",
                                                           "reason": " "})  # fmt: skip
        assert unsaid.status_code == 422 and "say why" in unsaid.text
        asked = client.post("/lessons/L-1/retire", data={**retire, "base_revision": "2",
                                                          "confirm": ""})  # fmt: skip
        assert asked.status_code == 200 and 'id="retire-confirm"' in asked.text
        assert 'name="confirm" value="yes"' in asked.text and "obsolete" in asked.text
        assert isinstance(read(location, "L-1"), Lesson)
        retired = client.post("/lessons/L-1/retire", data={**retire, "base_revision": "2"})
        assert retired.status_code == 303
        assert isinstance(read(location, "L-1"), Tombstone)
        page = client.get("/lessons/L-1").text
        assert "retired" in page and 'id="edit-form"' not in page
        stale_revert = client.post(
            "/lessons/L-1/revert", data={"csrf": csrf, "base_revision": "2", "to_revision": "1"}
        )
        assert stale_revert.status_code == 409
        reverted = client.post(
            "/lessons/L-1/revert", data={"csrf": csrf, "base_revision": "3", "to_revision": "1"}
        )
        assert reverted.status_code == 303
        missing = client.post(
            "/lessons/L-1/revert", data={"csrf": csrf, "base_revision": "4", "to_revision": "9"}
        )
        assert missing.status_code == 400 and "no revision 9" in missing.text
    lesson = read(location, "L-1")
    assert isinstance(lesson, Lesson)
    assert lesson.revision == 4 and lesson.title == "Regenerate the client through make api-client"
    actions = [(e.action, e.author.specialist.split(":")[0]) for e in history(location, "L-1")]  # type: ignore[attr-defined]
    assert actions == [
        ("create", "repository_discovery"),
        ("adapt", "person"),
        ("retire", "person"),
        ("revert", "person"),
    ]


def test_the_lesson_page_shows_cited_lines_from_the_checkout(location: str, tmp_path: Path) -> None:
    import subprocess

    root = tmp_path / "checkout"
    (root / "api").mkdir(parents=True)
    (root / "api" / "schema.json").write_text('{\n  "openapi": "3.1",\n  "paths": {}\n}\n')
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    from checkout_support import with_remote
    from starlette.testclient import TestClient

    from active_memory.ui.app import create_app

    with_remote(root, NAMESPACE)
    app = create_app(location, Gate(TOKEN), checkouts=[root])
    with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as client:
        login(client)
        data = client.get("/api/lessons/L-1").json()
        page = html.unescape(client.get("/lessons/L-1").text)
        assert '    2    "openapi": "3.1",\n    3    "paths": {}\n' in page
        current = data["evidence"]["citations"][0]["current"]
        assert current["start"] == 2 and current["lines"] == [
            '  "openapi": "3.1",',
            '  "paths": {}',
        ]


def test_the_review_queue_approves_edits_and_rejects_with_a_reason(location: str) -> None:
    first, second, third = propose(
        location,
        [
            proposed_lesson(f"{MARKUP} proposed", "Run `make api-client` after schema edits."),
            proposed_lesson("Second proposal", "Run `make api-client` twice."),
            proposed_lesson("Third proposal", "Run `make lint` before `make api-client`."),
        ],
    )
    with web_client(location) as client:
        assert client.get("/review").status_code == 401
        assert client.get("/api/review").status_code == 401
        login(client)
        page = client.get("/review").text
        assert "3 proposals waiting" in page and MARKUP not in page
        csrf = csrf_of(page)
        assert client.post(f"/review/{first}/approve", data={}).status_code == 403
        assert client.post(f"/review/{first}/reject", data={"csrf": csrf}).status_code == 400
        approved = client.post(f"/review/{first}/approve", data={"csrf": csrf})
        assert approved.status_code == 303
        assert "L-4 r1" in client.get(approved.headers["location"]).text
        again = client.post(f"/review/{first}/approve", data={"csrf": csrf})
        assert again.status_code == 400 and "already approved" in again.text
        edited = {"csrf": csrf, "edited": "1", "title": "Second, sharper",
                  "recommendation": "Be careful.", "files": "api/schema.json"}  # fmt: skip
        refused = client.post(f"/review/{second}/approve", data=edited)
        assert refused.status_code == 422 and "generic advice" in refused.text
        edited["recommendation"] = "Run `make api-client` once after `api/schema.json` edits."
        assert client.post(f"/review/{second}/approve", data=edited).status_code == 303
        rejected = client.post(
            f"/review/{third}/reject", data={"csrf": csrf, "reason": "lint is unrelated"}
        )
        assert rejected.status_code == 303
        queue = client.get("/api/review", headers={"Authorization": f"Bearer {TOKEN}"}).json()
        assert queue["count"] == 0
        assert [(p["seq"], p["state"]) for p in queue["decided"]] == [
            (third, "rejected"), (second, "approved"), (first, "approved"),
        ]  # fmt: skip
    states = {p.seq: (p.state, p.decision_reason) for p in proposals(location)}
    assert states[third] == ("rejected", "lint is unrelated")
    sharper = read(location, "L-5")
    assert isinstance(sharper, Lesson) and sharper.title == "Second, sharper"
    assert history(location, "L-5")[0].author.specialist.startswith("person:")  # type: ignore[attr-defined]
    assert history(location, "L-4")[0].author.specialist == "repository_discovery"  # type: ignore[attr-defined]
