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
    files = {"src/rules.py": RULES_PY, "src/other.py": "x = 1\n"}
    return git_checkout(tmp_path / "repo", files, NAMESPACE)


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

    app = create_app(store_location, Gate(TOKEN), checkouts=[root])
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
    code, out, err = await in_thread(run_cli, "lessons", "show", "L-1", "--store", backend.location)
    assert code == 0, err
    assert "│ citations: src/rules.py:7-11 " in out  # only the citation that counts
    shown = (await in_thread(_web, backend.location, root, "/api/lessons/L-1"))["evidence"][
        "citations"
    ]
    assert [(c["lines"], "moved_from" in c) for c in shown] == [([7, 11], False)]

    # The next postmortem, nothing delivered: nothing to offer, the lesson holds.
    report, none = await _postmortem(tmp_path, store, root, [], "run-2")
    assert none == [] and report.specialists["repository_maintenance"].manifest == 0

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


@pytest.mark.asyncio
async def test_a_rule_moved_and_edited_is_diffed_against_its_new_lines_and_a_keep_pins_them(
    tmp_path: Path, store: Any, root: Path
) -> None:
    await _seed(store, root)
    edited = RULE.replace("if calls > limit:", "if calls >= limit:")
    header = '"""Rate limits."""\n'
    _write(root, RULES_PY.replace(RULE, edited).replace(header, header + ABOVE))
    _, [asked] = await _postmortem(tmp_path, store, root, [], "run-1", keep_all)
    [task] = supplied(asked)
    [view] = task["cited_code_changed"]
    assert view["why"] == "lines changed" and view["lines_now"] == [7, 11]
    # Content with context, numbered as the file: the edit, not the inserted lines.
    assert view["diff"] == [
        "--- recorded", "+++ now", "@@ -3,5 +7,5 @@",
        " def allowed(calls: int, limit: int) -> bool:",
        "     # A burst over the limit is refused: never retry inside the window.",
        "-    if calls > limit:", "+    if calls >= limit:",
        "         return False", "     return True",
    ]  # fmt: skip
    kept = await _lesson(store)
    [pinned] = kept.evidence.counted_citations()
    assert (pinned.lines, pinned.excerpt) == ((7, 11), edited)
    assert stale_lessons(Checkout(root), [kept]) == {}


@pytest.mark.asyncio
async def test_a_text_found_in_several_places_is_stale_until_a_keep_pins_the_nearest(
    tmp_path: Path, store: Any, root: Path
) -> None:
    await _seed(store, root)
    # The rule's old place now holds something else; the rule itself is in two places.
    text = '"""Rate limits."""\n\nLIMIT = 5\n' + RULE + "\n\n" + ABOVE + "\n" + RULE
    _write(root, text)
    lesson = await _lesson(store)
    [changed] = stale_lessons(Checkout(root), [lesson])["L-1"]
    assert changed.why == "found in several places" and changed.places == (4, 16)
    assert _hook_says(lesson, root) == ["src/rules.py:3-7"]
    _, [asked] = await _postmortem(tmp_path, store, root, [], "run-1", keep_all)
    [view] = supplied(asked)[0]["cited_code_changed"]
    assert view["note"] == "the recorded text is now at lines 4-8, 16-20"
    assert view["lines_now"] == [4, 8] and "diff" not in view
    kept = await _lesson(store)
    assert [c.lines for c in kept.evidence.counted_citations()] == [(4, 8)]
    assert stale_lessons(Checkout(root), [kept]) == {}


@pytest.mark.asyncio
async def test_a_keep_that_cites_one_of_several_places_pins_that_one(
    tmp_path: Path, store: Any, root: Path
) -> None:
    await _seed(store, root)
    _write(root, '"""Rate limits."""\n\nLIMIT = 5\n' + RULE + "\n\n" + ABOVE + "\n" + RULE)

    async def keep_the_second(request: Request) -> Any:
        return decisions(request, "keep", citations=[{"path": "src/rules.py", "lines": "16-20"}])

    report, _ = await _postmortem(tmp_path, store, root, [], "run-1", keep_the_second)
    assert report.specialists["repository_maintenance"].status == "reconciled"
    kept = await _lesson(store)
    [pinned] = kept.evidence.counted_citations()
    assert pinned.lines == (16, 20) and pinned.excerpt == RULE


@pytest.mark.asyncio
async def test_a_file_renamed_in_git_is_followed_and_an_unrecorded_move_is_a_gone_file(
    tmp_path: Path, store: Any, root: Path
) -> None:
    _git(root, "commit", "-qm", "start")
    await _seed(store, root)
    _git(root, "mv", "src/rules.py", "src/limits.py")
    _git(root, "commit", "-qm", "rename")
    lesson = await _lesson(store)
    assert stale_lessons(Checkout(root), [lesson]) == {}
    _, [asked] = await _postmortem(tmp_path, store, root, ["L-1"], "run-1", keep_all)
    assert supplied(asked)[0]["cited_code_moved"] == [
        {"path": "src/rules.py", "lines": [3, 7], "path_now": "src/limits.py", "lines_now": [3, 7]}
    ]  # fmt: skip
    kept = await _lesson(store)
    [pinned] = kept.evidence.counted_citations()
    assert (pinned.path, pinned.lines, pinned.excerpt) == ("src/limits.py", (3, 7), RULE)

    # Moved without git knowing (no `git mv`, nothing staged): the cited file is gone.
    (root / "src" / "limits.py").rename(root / "src" / "quotas.py")
    [changed] = stale_lessons(Checkout(root), [kept])["L-1"]
    assert changed.why == "file gone" and changed.path_now is None
    # The hook claims nothing about a file it cannot read (docs/staleness.md).
    assert _hook_says(kept, root) == []


@pytest.mark.asyncio
async def test_a_citation_without_recorded_text_follows_its_fingerprint_and_shows_lines_now(
    tmp_path: Path, store: Any, root: Path
) -> None:
    [cited] = fingerprint(Checkout(root), [Citation(path="src/rules.py", lines=CITED)])
    older = cited.model_copy(update={"excerpt": None})  # as stored before excerpts
    await store.publish([_create(older)])
    _write(root, RULES_PY.replace('"""Rate limits."""\n', '"""Rate limits."""\n' + ABOVE))
    lesson = await _lesson(store)
    assert stale_lessons(Checkout(root), [lesson]) == {}  # found by its fingerprint
    assert _hook_says(lesson, root) == []
    _write(root, RULES_PY.replace("return False", "return None"))
    [changed] = stale_lessons(Checkout(root), [lesson])["L-1"]
    assert changed.why == "lines changed" and changed.region is None
    _, [asked] = await _postmortem(tmp_path, store, root, [], "run-1")
    [view] = supplied(asked)[0]["cited_code_changed"]
    assert view["note"] == "recorded text unknown" and "diff" not in view
    assert view["now"][3] == "        return None"  # the lines at the recorded place


@pytest.mark.asyncio
async def test_keep_and_adapt_citations_are_checked_like_a_discoverys(
    tmp_path: Path, store: Any, root: Path
) -> None:
    await _seed(store, root)

    async def bad(request: Request) -> Any:
        return decisions(request, "keep", citations=[
            {"path": "src/gone.py"}, {"path": "src/rules.py", "lines": "9-40"},
            {"path": "src/other.py"},
        ])  # fmt: skip

    report, asked = await _postmortem(tmp_path, store, root, ["L-1"], "run-1", bad)
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "failed" and len(asked) == 2  # one repair turn, then failed
    reasons = " ".join(entry.reasons)
    assert "decisions[0].citations[0]: not a current file: src/gone.py does not exist" in reasons
    assert "decisions[0].citations[1]: citation-lines: lines 9-40 are not inside " \
        "src/rules.py, which has 11 lines now" in reasons  # fmt: skip
    assert (await _lesson(store)).revision == 1  # nothing published

    async def unmatched(request: Request) -> Any:
        return decisions(request, "keep", citations=[{"path": "src/other.py"}])

    report, _ = await _postmortem(tmp_path, store, root, ["L-1"], "run-2", unmatched)
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "failed"
    assert "decisions[0].associations: none matches a cited file" in " ".join(entry.reasons)

    async def retire_citing(request: Request) -> Any:
        return decisions(request, "retire", citations=[{"path": "src/rules.py"}])

    report, _ = await _postmortem(tmp_path, store, root, ["L-1"], "run-3", retire_citing)
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "failed"
    assert "only 'keep' and 'adapt' carry 'citations'" in " ".join(entry.reasons)

    async def keep_citing(request: Request) -> Any:
        return decisions(request, "keep", citations=[{"path": "src/rules.py", "lines": "10-11"}])

    report, _ = await _postmortem(tmp_path, store, root, ["L-1"], "run-4", keep_citing)
    assert report.specialists["repository_maintenance"].status == "reconciled"
    kept = await _lesson(store)
    assert kept.revision == 2 and kept.title == "Never retry inside the rate window"
    assert [c.lines for c in kept.evidence.counted_citations()] == [CITED, (10, 11)]
    assert kept.evidence.citations[-1].excerpt == "def window_seconds() -> int:\n    return 60\n"

    async def adapt_citing(request: Request) -> Any:
        answer = decisions(request, "adapt", citations=[{"path": "src/rules.py", "lines": 1}])
        for decision in answer["decisions"]:
            decision["lesson"] = {
                "title": "Wait for the rate window after a refusal",
                "recommendation": "When `allowed` in `src/rules.py` refuses a call, wait "
                "`window_seconds()` before the next one.",
                "associations": {"files": ["src/rules.py"]},
            }
        return answer

    report, _ = await _postmortem(tmp_path, store, root, ["L-1"], "run-5", adapt_citing)
    adapted = await _lesson(store)
    assert adapted.title == "Wait for the rate window after a refusal"
    assert adapted.evidence.citations[-1].lines == (1, 1)
    assert adapted.evidence.citations[-1].sha256 is not None  # fingerprinted at publish


@pytest.mark.asyncio
async def test_moved_views_are_shortened_last_to_fit_the_tasks_byte_bound(
    tmp_path: Path, store: Any, root: Path
) -> None:
    from test_postmortem_cli import RUN

    from active_memory.runlog.record import load_run_record
    from active_memory.specialists.tasks import (
        build_repository_maintenance,
        rendered_size,
        with_changed_code,
    )

    body = "".join(f"rule_{n} = {n}\n" for n in range(1, 17))
    _write(root, body)
    cited = [Citation(path="src/rules.py", lines=(n, n)) for n in range(1, 17)]
    await store.publish(fingerprinted([_create(*cited)], Checkout(root)))
    _write(root, ABOVE + body)
    repo = Checkout(root)
    plain = build_repository_maintenance(
        load_run_record(RUN), [await _lesson(store)], checkout=repo
    )
    full = with_changed_code(plain, repo)
    assert len(full.lessons[0].cited_code_moved) == 16
    bound = rendered_size(plain) + (rendered_size(full) - rendered_size(plain)) // 3
    small = with_changed_code(plain, repo, bound)
    assert rendered_size(small) <= bound
    moved = small.lessons[0].cited_code_moved
    assert 0 < len(moved) < 16 and moved[0].lines_now == (5, 5)
