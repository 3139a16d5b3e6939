"""Citations that follow the code (SPEC §6, docs/staleness.md "Where a cited text is
now"): a cited rule that moves within its file is not stale anywhere (the hook's stale
line, `lessons list --stale`, maintenance, the web view) and a keep re-pins it to its new
lines; a deleted rule is stale and its diff shows it removed; a text found in several
places, a renamed file and a citation without recorded text as decided. Both backends,
a real git checkout, the fake provider through the real provider interface."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from checkout_support import git_checkout
from conftest import Backend
from orchestrator_support import FakeSessions, config, decisions, keep_all, run_record, supplied
from specialist_builders import NAMESPACE
from test_postmortem_cli import run_cli

from active_memory.checkout import Checkout
from active_memory.checkout.staleness import fingerprint, stale_lessons
from active_memory.cited_text import NO_TEXT
from active_memory.lessons import (
    Associations,
    Author,
    Card,
    Citation,
    CreateLesson,
    Evidence,
    Lesson,
    RepositoryScope,
)
from active_memory.orchestrator import run_postmortem
from active_memory.orchestrator.publish import fingerprinted
from active_memory.recall import stale
from active_memory.specialists.providers.base import Request

RULE = (
    "def allowed(calls: int, limit: int) -> bool:\n"
    "    # A burst over the limit is refused: never retry inside the window.\n"
    "    if calls > limit:\n"
    "        return False\n"
    "    return True\n"
)
RULES_PY = '"""Rate limits."""\n\n' + RULE + "\n\ndef window_seconds() -> int:\n    return 60\n"
CITED = (3, 7)  # the rule's lines in RULES_PY
ABOVE = "import os\nimport sys\n\nBURST = int(os.environ.get('BURST', '5'))\n"
PERSON = Author(specialist="person:test")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return git_checkout(tmp_path / "repo", {"src/rules.py": RULES_PY, "src/other.py": "x = 1\n"})


def _create(*citations: Citation) -> CreateLesson:
    return CreateLesson(
        scope=RepositoryScope(repository=NAMESPACE),
        card=Card(
            title="Never retry inside the rate window",
            recommendation="A call refused by `allowed` in `src/rules.py` must wait for "
            "`window_seconds()`; do not retry it in a loop.",
            associations=Associations(files=["src/rules.py"]),
        ),
        evidence=Evidence(run_ids=["run-0"], citations=list(citations)),
        author=PERSON,
    )


async def _seed(store: Any, root: Path, lines: tuple[int, int] = CITED) -> None:
    await store.publish(
        fingerprinted([_create(Citation(path="src/rules.py", lines=lines))], Checkout(root))
    )


async def _postmortem(
    tmp_path: Path, store: Any, root: Path, delivered: list[str], run_id: str, answer: Any = None
) -> tuple[Any, list[Request]]:
    sessions = FakeSessions({"repository_maintenance": answer} if answer else None)
    record = run_record(tmp_path, delivered, run_id=run_id, name=f"{run_id}.json")
    report = await run_postmortem(
        record, config(), store, checkout=Checkout(root), sessions=sessions, journal_dir=tmp_path
    )
    asked = [r for r in sessions.requests if r.specialist == "repository_maintenance"]
    return report, asked


def _write(root: Path, text: str) -> None:
    (root / "src" / "rules.py").write_text(text)


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
    )


def _hook_says(lesson: Lesson, root: Path) -> list[str]:
    """What the hook's stale line names for `lesson` (recall/stale.py, as a hook runs)."""
    citations = [c.model_dump(mode="json") for c in lesson.evidence.citations]
    cited = stale.cited_of_citations("2026-12-01", citations)
    assert cited is not None
    return stale.changed(cited, str(root))


def _listed_stale(store_location: str, root: Path) -> dict[str, Any]:
    code, out, err = run_cli(
        "lessons", "list", "--stale", "--checkout", str(root), "--store", store_location, "--json"
    )
    assert code == 0, err
    return {x["id"]: x["stale"] for x in json.loads(out)["lessons"]}


def _web(store_location: str, root: Path, path: str) -> Any:
    from starlette.testclient import TestClient
    from ui_support import TOKEN, login

    from active_memory.ui.app import create_app
    from active_memory.ui.auth import Gate

    app = create_app(store_location, Gate(TOKEN), checkout=root)
    with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as client:
        login(client)
        return client.get(path).json()


async def in_thread(function: Any, *args: Any) -> Any:
    """`function(*args)` in a worker thread: the CLI and the web client run their own
    event loops."""
    return await anyio.to_thread.run_sync(function, *args)


async def _lesson(store: Any, lesson_id: str = "L-1") -> Lesson:
    lesson = await store.get(lesson_id)
    assert isinstance(lesson, Lesson)
    return lesson


@pytest.mark.asyncio
async def test_a_moved_rule_is_not_stale_and_a_keep_repins_it_then_deleting_it_is_stale(
    tmp_path: Path, store: Any, root: Path, backend: Backend
) -> None:
    await _seed(store, root)
    recorded = (await _lesson(store)).evidence.citations[0]
    assert recorded.excerpt == RULE and recorded.sha256 is not None

    # Four lines inserted above the rule: its text is intact at lines 7-11.
    _write(root, RULES_PY.replace('"""Rate limits."""\n', '"""Rate limits."""\n' + ABOVE))
    assert (root / "src/rules.py").read_text().splitlines()[6] == RULE.splitlines()[0]
    lesson = await _lesson(store)
    assert stale_lessons(Checkout(root), [lesson]) == {}
    assert _hook_says(lesson, root) == []
    assert await in_thread(_listed_stale, backend.location, root) == {}
    assert (await in_thread(_web, backend.location, root, "/api/lessons?stale=1"))["lessons"] == []
    page = await in_thread(_web, backend.location, root, "/api/lessons/L-1")
    assert page["stale"] == []
    [shown] = page["evidence"]["citations"]
    assert shown["lines"] == [7, 11] and shown["moved_from"] == {"path": "src/rules.py",
                                                                 "lines": [3, 7]}  # fmt: skip
    assert shown["current"]["lines"][0] == RULE.splitlines()[0]

    # Delivered, kept: the real maintenance path re-pins it to the rule's new lines.
    report, [asked] = await _postmortem(tmp_path, store, root, ["L-1"], "run-1", keep_all)
    [task] = supplied(asked)
    assert "cited_code_changed" not in task
    assert task["cited_code_moved"] == [
        {"path": "src/rules.py", "lines": [3, 7], "lines_now": [7, 11]}
    ]
    assert report.specialists["repository_maintenance"].status == "reconciled"
    kept = await _lesson(store)
    assert kept.revision == 2 and kept.title == "Never retry inside the rate window"
    [pinned] = kept.evidence.counted_citations()
    assert (pinned.path, pinned.lines) == ("src/rules.py", (7, 11))
    assert pinned.sha256 == recorded.sha256 and pinned.excerpt == RULE
    assert [c.sha256 for c in kept.evidence.citations if c.lines == CITED][-1] == NO_TEXT
    assert stale_lessons(Checkout(root), [kept]) == {}
    assert _hook_says(kept, root) == []
    shown = (await in_thread(_web, backend.location, root, "/api/lessons/L-1"))["evidence"][
        "citations"
    ]
    assert [(c["lines"], "moved_from" in c) for c in shown] == [([7, 11], False)]

    # The next postmortem, nothing delivered: nothing to offer, the lesson holds.
    report, asked = await _postmortem(tmp_path, store, root, [], "run-2")
    assert asked == [] and report.specialists["repository_maintenance"].manifest == 0

    # The rule deleted: stale everywhere, and the diff shows the rule removed.
    _write(root, '"""Rate limits."""\n' + ABOVE + "\n\ndef window_seconds() -> int:\n"
           "    return 60\n")  # fmt: skip
    kept = await _lesson(store)
    assert _hook_says(kept, root) == ["src/rules.py:7-11"]
    listed = await in_thread(_listed_stale, backend.location, root)
    assert listed == {"L-1": [{"path": "src/rules.py", "lines": [7, 11], "why": "lines gone"}]}
    [web] = (await in_thread(_web, backend.location, root, "/api/lessons/L-1"))["stale"]
    removed = ["@@ -7,5 +0,0 @@", *(f"-{line}" for line in RULE.splitlines())]
    assert web["diff"] == ["--- recorded", "+++ now", *removed] and web["note"] == "removed"
    report, [asked] = await _postmortem(tmp_path, store, root, [], "run-3")
    [task] = supplied(asked)
    assert task["offered"] == "cited code changed"
    assert task["cited_code_changed"] == [
        {"path": "src/rules.py", "lines": [7, 11], "why": "lines gone", "note": "removed",
         "diff": ["--- recorded", "+++ now", *removed]}
    ]  # fmt: skip
