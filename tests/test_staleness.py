"""Staleness: the publish fingerprints each cited range; changing a cited line marks
exactly the lessons citing it (the store, `lessons list --stale`, the web view)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checkout_support import git_checkout
from conftest import AUTHOR, NAMESPACE, Backend
from test_postmortem_cli import run_cli
from ui_support import TOKEN, login, publish, read

from active_memory.checkout import Checkout
from active_memory.checkout.staleness import changed_citations, stale_lessons
from active_memory.lessons import (
    AdaptLesson,
    Associations,
    Card,
    Citation,
    CreateLesson,
    Evidence,
    Lesson,
    RepositoryScope,
)
from active_memory.orchestrator.publish import fingerprinted

A_PY = "".join(f"line {n}\n" for n in range(1, 9))


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    files = {"src/a.py": A_PY, "src/b.py": "print('b')\n"}
    return git_checkout(tmp_path / "repo", files, NAMESPACE)


def _lesson(title: str, *citations: Citation) -> CreateLesson:
    return CreateLesson(
        scope=RepositoryScope(repository=NAMESPACE),
        card=Card(
            title=title,
            recommendation=f"Run `make check` after editing `src/a.py` ({title}).",
            associations=Associations(files=["src/a.py"]),
        ),
        evidence=Evidence(run_ids=["run-1"], citations=list(citations)),
        author=AUTHOR,
    )


def _seed(location: str, root: Path) -> None:
    mutations = [
        _lesson("cites a.py 1-2", Citation(path="src/a.py", lines=(1, 2))),
        _lesson("cites a.py 4-5", Citation(path="src/a.py", lines=(4, 5))),
        _lesson("cites b.py", Citation(path="src/b.py")),
        _lesson("cites all of a.py", Citation(path="src/a.py")),
        _lesson(
            "cites a.py 7 and b.py", Citation(path="src/a.py", lines=7), Citation(path="src/b.py")
        ),
    ]
    publish(location, fingerprinted(mutations, Checkout(root)))
    # An old lesson, stored before fingerprints: unknown is never stale.
    publish(location, [_lesson("no fingerprint", Citation(path="src/a.py", lines=(4, 5)))])


def _stale_ids(location: str, root: Path) -> list[str]:
    code, out, err = run_cli(
        "lessons", "list", "--stale", "--checkout", str(root), "--store", location, "--json"
    )
    assert code == 0, err
    return [x["id"] for x in json.loads(out)["lessons"]]


def test_changing_a_cited_line_marks_exactly_the_lessons_citing_it(
    backend: Backend, checkout: Path
) -> None:
    _seed(backend.location, checkout)
    lesson = read(backend.location, "L-2")
    assert isinstance(lesson, Lesson) and lesson.evidence.citations[0].sha256 is not None
    assert _stale_ids(backend.location, checkout) == []

    (checkout / "src" / "a.py").write_text(A_PY.replace("line 4\n", "line four\n"))
    assert _stale_ids(backend.location, checkout) == ["L-2", "L-4"]
    code, out, err = run_cli("lessons", "list", "--stale", "--checkout", str(checkout),
                             "--store", backend.location, "--json")  # fmt: skip
    assert code == 0, err
    why = {x["id"]: x["stale"] for x in json.loads(out)["lessons"]}
    assert why["L-2"] == [{"path": "src/a.py", "lines": [4, 5], "why": "lines changed"}]

    # A cited file that is gone makes every lesson citing it stale.
    (checkout / "src" / "b.py").unlink()
    assert _stale_ids(backend.location, checkout) == ["L-2", "L-3", "L-4", "L-5"]


def test_an_adaptation_that_cites_again_is_fresh_and_a_gone_range_is_stale(
    backend: Backend, checkout: Path
) -> None:
    _seed(backend.location, checkout)
    (checkout / "src" / "a.py").write_text(A_PY.replace("line 4\n", "line four\n"))
    adapt = AdaptLesson(
        id="L-2", base_revision=1, card=Card(
            title="cites a.py 4-5, again",
            recommendation="Run `make check` after editing `src/a.py` (again).",
            associations=Associations(files=["src/a.py"]),
        ),
        evidence=Evidence(citations=[Citation(path="src/a.py", lines=(4, 5))]), author=AUTHOR,
    )  # fmt: skip
    publish(backend.location, fingerprinted([adapt], Checkout(checkout)))
    assert _stale_ids(backend.location, checkout) == ["L-4"]
    (checkout / "src" / "a.py").write_text("line 1\nline 2\n")
    lesson = read(backend.location, "L-5")
    assert isinstance(lesson, Lesson)
    changed = changed_citations(Checkout(checkout), lesson.evidence.citations)
    assert [(c.citation.path, c.why) for c in changed] == [("src/a.py", "lines gone")]
    stale = stale_lessons(Checkout(checkout), [read(backend.location, f"L-{n}") for n in (1, 6)])
    assert stale == {}  # 1-2 unchanged; L-6 has no fingerprint


def test_lessons_list_stale_outside_a_checkout_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli("lessons", "list", "--stale", "--checkout", str(tmp_path),
                           "--store", str(tmp_path / "x.sqlite3"))  # fmt: skip
    assert code == 2 and "--stale compares cited code with a checkout" in err


def test_the_web_view_marks_and_filters_stale_lessons(backend: Backend, checkout: Path) -> None:
    from starlette.testclient import TestClient

    from active_memory.ui.app import create_app
    from active_memory.ui.auth import Gate

    _seed(backend.location, checkout)
    (checkout / "src" / "a.py").write_text(A_PY.replace("line 4\n", "line four\n"))
    app = create_app(backend.location, Gate(TOKEN), checkouts=[checkout])
    with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as client:
        login(client)
        listing = client.get("/api/lessons?stale=1").json()
        assert [x["id"] for x in listing["lessons"]] == ["L-2", "L-4"]
        assert client.get("/?stale=1").text.count('<span class="stale">stale</span>') == 2
        page = client.get("/lessons/L-2").text
        assert 'id="stale"' in page and "Cited code changed" in page
        assert 'id="stale"' not in client.get("/lessons/L-1").text


def test_maintenance_is_shown_the_changed_code_of_a_stale_lesson_only(
    backend: Backend, checkout: Path
) -> None:
    from test_postmortem_cli import RUN

    from active_memory.runlog.record import load_run_record
    from active_memory.specialists.tasks import build_repository_maintenance, with_changed_code

    _seed(backend.location, checkout)
    (checkout / "src" / "a.py").write_text(A_PY.replace("line 4\n", "line four\n"))
    lessons = [read(backend.location, f"L-{n}") for n in (1, 2)]
    assert all(isinstance(x, Lesson) for x in lessons)
    repo = Checkout(checkout)
    plain = build_repository_maintenance(load_run_record(RUN), lessons, checkout=repo)  # type: ignore[arg-type]
    task = with_changed_code(plain, repo)
    first, second = task.to_json()["lessons"]
    assert "cited_code_changed" not in first
    assert second["cited_code_changed"] == [
        {"path": "src/a.py", "lines": [4, 5], "why": "lines changed",
         "diff": ["--- recorded", "+++ now", "@@ -4,2 +4,2 @@", "-line 4", "+line four",
                  " line 5"]},
    ]  # fmt: skip
    assert "cited_code_changed" not in plain.to_json()["lessons"][1]
    # The recorded text is stored with the citation, never shown to a specialist as is.
    assert lessons[1].evidence.citations[0].excerpt == "line 4\nline 5\n"  # type: ignore[attr-defined]
    assert "excerpt" not in json.dumps(task.to_json())
