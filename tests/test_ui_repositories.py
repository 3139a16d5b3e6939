"""Many repositories in one store (issue 30): each lesson is judged against its own
repository's checkout (the web view, its API, `lessons list --stale`), a repository
without a checkout here says so, and "still valid" re-pins without a new revision."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Backend
from repositories_support import API, ELSEWHERE, INFRA, WEB, Team, change_api_schema, team_store
from starlette.testclient import TestClient
from test_postmortem_cli import run_cli
from ui_support import TOKEN, csrf_of, history, login, read

from active_memory.lessons import Lesson
from active_memory.ui.app import create_app
from active_memory.ui.auth import Gate


@pytest.fixture
def team(backend: Backend, tmp_path: Path) -> tuple[str, Team, dict[str, str]]:
    env = {"ZEROSHOT_STATE_DIR": str(tmp_path / "state")}
    return backend.location, team_store(backend.location, tmp_path / "work", env), env


@pytest.fixture
def client(team: tuple[str, Team, dict[str, str]]) -> Iterator[TestClient]:
    location, checkouts, env = team
    app = create_app(location, Gate(TOKEN), checkouts=[checkouts.api], env=env)
    with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as opened:
        login(opened)
        yield opened


def test_no_lesson_of_another_repository_is_stale_and_one_without_a_checkout_says_so(
    team: tuple[str, Team, dict[str, str]], client: TestClient
) -> None:
    _, checkouts, _ = team
    listing = client.get("/api/lessons").json()
    assert [row["id"] for row in listing["lessons"]] == [f"L-{n}" for n in range(1, 8)]
    assert [row["id"] for row in listing["lessons"] if row["stale"]] == []
    assert listing["checkouts"] == {
        API: str(checkouts.api), WEB: str(checkouts.web), INFRA: str(checkouts.infra),
        ELSEWHERE: None,
    }  # fmt: skip
    not_judged = {row["id"]: row["not_judged"] for row in listing["lessons"]}
    assert not_judged["L-7"] == f"no checkout known for {ELSEWHERE}"
    assert {not_judged[f"L-{n}"] for n in range(1, 7)} == {None}

    change_api_schema(checkouts)
    assert [row["id"] for row in client.get("/api/lessons?stale=1").json()["lessons"]] == ["L-1"]
    page = client.get("/").text
    assert page.count('<span class="stale">stale</span>') == 1
    assert 'id="no-checkout"' in page and ELSEWHERE in page
    mobile = client.get("/lessons/L-7")
    assert 'id="stale"' not in mobile.text and 'id="not-judged"' in mobile.text
    assert "file gone" not in mobile.text
    assert client.get("/api/lessons/L-7").json()["stale"] is None
    web = client.get("/api/lessons/L-3").json()
    assert web["stale"] == [] and web["checkout"] == str(checkouts.web)
    assert web["evidence"]["citations"][0]["current"]["lines"][0] == "export const route1 = '/r1';"


def test_lessons_list_stale_judges_each_repository_against_its_own_checkout(
    team: tuple[str, Team, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    location, checkouts, env = team
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", env["ZEROSHOT_STATE_DIR"])
    change_api_schema(checkouts)
    (checkouts.web / "src" / "app.ts").write_text("// rewritten\n")
    # From inside the api checkout: api by the current folder, web by the registry.
    monkeypatch.chdir(checkouts.api)
    code, out, err = run_cli("lessons", "list", "--stale", "--store", location, "--json")
    assert code == 0, err
    document = json.loads(out)
    assert [x["id"] for x in document["lessons"]] == ["L-1", "L-3", "L-4"]
    assert document["not_judged"] == [{"why": f"no checkout known for {ELSEWHERE}", "lessons": 1}]
    code, out, err = run_cli("lessons", "list", "--stale", "--store", location)
    assert code == 0 and "not judged (1 lessons: no checkout known for" in err
    assert "--checkout DIR" in err


def test_still_valid_re_pins_without_a_new_revision_and_is_in_the_history(
    team: tuple[str, Team, dict[str, str]], client: TestClient
) -> None:
    location, checkouts, _ = team
    change_api_schema(checkouts)
    page = client.get("/lessons/L-1").text
    assert 'id="stale"' in page and 'id="still-valid"' in page
    fields = {"csrf": csrf_of(page), "base_revision": "1", "reason": "only the number moved"}
    done = client.post("/lessons/L-1/keep", data=fields)
    assert done.status_code == 303 and done.headers["location"] == "/lessons/L-1?saved=kept-1"
    after = client.get("/lessons/L-1?saved=kept-1").text
    assert 'id="stale"' not in after and "Confirmed still valid" in after
    lesson = read(location, "L-1")
    assert isinstance(lesson, Lesson) and lesson.revision == 1  # no new revision
    [entry] = [e for e in history(location, "L-1") if e.action == "keep"]  # type: ignore[attr-defined]
    assert entry.revision == 1 and entry.reason == "only the number moved"  # type: ignore[attr-defined]
    assert entry.author.specialist.startswith("person:")  # type: ignore[attr-defined]
    assert 'class="action-keep"' in after and "cited code re-pinned" in after
    assert [row["id"] for row in client.get("/api/lessons?stale=1").json()["lessons"]] == []
    # Nothing left to confirm; a stale revision is a conflict, as for every change.
    again = client.post("/lessons/L-1/keep", data=fields)
    assert again.status_code == 422 and "nothing to confirm" in again.text
    change_api_schema(checkouts)
    (checkouts.api / "schema" / "fields.py").write_text("field_1 = 1\nfield_2 = 2\n")
    stale = client.post("/lessons/L-1/keep", data={**fields, "base_revision": "2"})
    assert stale.status_code == 409


def test_still_valid_without_a_checkout_writes_nothing(
    team: tuple[str, Team, dict[str, str]], client: TestClient
) -> None:
    location, _, _ = team
    csrf = csrf_of(client.get("/lessons/L-7").text)
    answer = client.post("/lessons/L-7/keep", data={"csrf": csrf, "base_revision": "1"})
    assert answer.status_code == 422 and "no checkout known" in answer.text
    assert [e.action for e in history(location, "L-7")] == ["create"]  # type: ignore[attr-defined]


def test_a_kept_lesson_is_not_delivered_again_and_reaches_new_sessions_unframed(
    tmp_path: Path,
) -> None:
    from recall_support import claude_payload, hook_env, run_hook

    store = tmp_path / "lessons.sqlite3"
    env = hook_env(tmp_path / "state", store, ACTIVE_MEMORY_BUDGET_BYTES="16384")
    checkouts = team_store(str(store), tmp_path / "work", env)

    def cards(session: str) -> str:
        target = checkouts.api / "schema" / "fields.py"
        payload = claude_payload("Read", {"file_path": str(target)}, session=session,
                                 cwd=checkouts.api)  # fmt: skip
        answer = run_hook("claude", json.dumps(payload), env)
        assert answer.returncode == 0, answer.stderr
        return answer.stdout.decode()

    assert "(L-1 r1)" in cards("s-1")
    change_api_schema(checkouts)
    assert "cited code changed" in cards("s-2")
    app = create_app(str(store), Gate(TOKEN), checkouts=[checkouts.api], env=env)
    with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as client:
        login(client)
        csrf = csrf_of(client.get("/lessons/L-1").text)
        done = client.post("/lessons/L-1/keep", data={"csrf": csrf, "base_revision": "1"})
        assert done.status_code == 303
    assert "(L-1 r1)" not in cards("s-1")  # had r1: not again
    fresh = cards("s-3")
    assert "(L-1 r1)" in fresh and "cited code changed" not in fresh
