"""Stale lessons offered to maintenance (docs/staleness.md, "Offered to maintenance"):
a lesson whose cited lines changed in the run's checkout is offered to the next
repository maintenance with its diff even when the run did not deliver it (at most
`STALE_OFFERED_MAX`); a keep or an adapt cites the changed lines again, fingerprinted, so
the next postmortem does not offer it until the code changes again. Both backends,
a real git checkout, fake providers through the real provider interface."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from checkout_support import git_checkout
from orchestrator_support import FakeSessions, config, decisions, run_record, supplied
from specialist_builders import NAMESPACE

from active_memory.checkout import Checkout
from active_memory.lessons import (
    AdaptLesson,
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
from active_memory.specialists.providers.base import Request
from active_memory.specialists.tasks import STALE_OFFERED_MAX
from active_memory.store.effectiveness import Effectiveness

A_PY = "".join(f"line {n}\n" for n in range(1, 9))
PERSON = Author(specialist="person:test")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return git_checkout(tmp_path / "repo", {"src/a.py": A_PY, "src/b.py": "print('b')\n"})


def _create(title: str, *citations: Citation) -> CreateLesson:
    return CreateLesson(
        scope=RepositoryScope(repository=NAMESPACE),
        card=Card(
            title=title,
            recommendation=f"Run `make check` after editing `src/a.py` ({title}).",
            associations=Associations(folders=["src"]),
        ),
        evidence=Evidence(run_ids=["run-0"], citations=list(citations)),
        author=PERSON,
    )


async def _seed(store: Any, root: Path) -> None:
    """L-1 cites a.py 1-2, L-2 a.py 4-5, L-3 b.py, L-4 a.py 4-5 (the one delivered)."""
    await store.publish(
        fingerprinted(
            [
                _create("cites a.py 1-2", Citation(path="src/a.py", lines=(1, 2))),
                _create("cites a.py 4-5", Citation(path="src/a.py", lines=(4, 5))),
                _create("cites b.py", Citation(path="src/b.py")),
                _create("cites a.py 4-5 too", Citation(path="src/a.py", lines=(4, 5))),
            ],
            Checkout(root),
        )
    )


def _maintenance(sessions: FakeSessions) -> list[Request]:
    return [r for r in sessions.requests if r.specialist == "repository_maintenance"]


async def _postmortem(
    tmp_path: Path,
    store: Any,
    root: Path | None,
    delivered: list[str],
    run_id: str,
    answer: Any = None,
) -> tuple[Any, FakeSessions]:
    sessions = FakeSessions({"repository_maintenance": answer} if answer else None)
    record = run_record(tmp_path, delivered, run_id=run_id, name=f"{run_id}.json")
    report = await run_postmortem(
        record,
        config(),
        store,
        checkout=Checkout(root) if root is not None else None,
        sessions=sessions,
        journal_dir=tmp_path,
    )
    return report, sessions


def _change(root: Path, old: str, new: str) -> None:
    path = root / "src" / "a.py"
    path.write_text(path.read_text().replace(old, new))


@pytest.mark.asyncio
async def test_a_changed_cited_line_offers_that_lesson_with_its_diff_and_a_keep_refreshes_it(
    tmp_path: Path, store: Any, root: Path
) -> None:
    await _seed(store, root)
    _change(root, "line 4\n", "line four\n")
    report, sessions = await _postmortem(tmp_path, store, root, ["L-4"], "run-1")
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "reconciled" and entry.manifest == 2 and entry.stale_offered == 1
    [request] = _maintenance(sessions)
    lessons = {x["id"]: x for x in supplied(request)}
    assert sorted(lessons) == ["L-2", "L-4"]  # L-1 and L-3 cite unchanged code
    offered, delivered = lessons["L-2"], lessons["L-4"]
    assert offered["offered"] == "cited code changed" and offered["deliveries"] == []
    assert "offered" not in delivered and delivered["deliveries"] != []
    assert offered["cited_code_changed"] == [
        {"path": "src/a.py", "lines": [4, 5], "why": "lines changed",
         "diff": ["--- recorded", "+++ now", "@@ -4,2 +4,2 @@", "-line 4", "+line four",
                  " line 5"]},
    ]  # fmt: skip
    prompt = " ".join(request.messages[0].content.split())
    assert "`offered`" in prompt

    # Offered, not delivered: no effectiveness observation of L-2; L-4's counts once.
    counters = await store.effectiveness(["L-2", "L-4"])
    assert counters.get("L-2", Effectiveness()) == Effectiveness()
    assert counters["L-4"].runs_delivered == 1
    assert counters["L-4"].recurred_when_delivered == 0

    # The keeps cited the changed lines again, fingerprinted: new revisions, same cards.
    for lesson_id in ("L-2", "L-4"):
        kept = await store.get(lesson_id)
        assert isinstance(kept, Lesson) and kept.revision == 2 and kept.status == "active"
        assert kept.title.startswith("cites a.py 4-5")
        latest = kept.evidence.citations[-1]
        assert latest.lines == (4, 5) and latest.excerpt == "line four\nline 5\n"
        history = await store.history(lesson_id)
        assert [h.action for h in history] == ["create", "adapt"]
        assert history[-1].author.run_id == "run-1"
    assert report.published.kept == 2 and report.published.adapted == 2
    assert (await store.effectiveness(["L-4"]))["L-4"].runs_delivered == 1  # kept

    # The next postmortem offers nothing: the kept lessons hold for the code as it is.
    report, sessions = await _postmortem(tmp_path, store, root, [], "run-2")
    assert report.specialists["repository_maintenance"].manifest == 0
    assert _maintenance(sessions) == []

    # A later change of the same lines offers the lesson again, against its new text.
    _change(root, "line 5\n", "line five\n")
    report, sessions = await _postmortem(tmp_path, store, root, [], "run-3")
    [request] = _maintenance(sessions)
    lessons = {x["id"]: x for x in supplied(request)}
    assert sorted(lessons) == ["L-2", "L-4"]
    assert lessons["L-2"]["revision"] == 2
    assert lessons["L-2"]["cited_code_changed"][0]["diff"][3:] == [
        " line four", "-line 5", "+line five"
    ]  # fmt: skip
    assert (await store.effectiveness(["L-4"]))["L-4"].runs_delivered == 1


@pytest.mark.asyncio
async def test_an_adapt_of_an_offered_lesson_cites_the_changed_lines_again(
    tmp_path: Path, store: Any, root: Path
) -> None:
    await _seed(store, root)
    _change(root, "line 1\n", "line one\n")

    async def adapt(request: Request) -> Any:
        answer = decisions(request, "adapt")
        for decision in answer["decisions"]:
            decision["lesson"] = {
                "title": "Run the check after editing a.py",
                "recommendation": "After editing `src/a.py` run `make check` (line one moved).",
                "associations": {"folders": ["src"]},
            }
        return answer

    report, sessions = await _postmortem(tmp_path, store, root, [], "run-1", adapt)
    [request] = _maintenance(sessions)
    assert [x["id"] for x in supplied(request)] == ["L-1"]
    assert report.published.adapted == 1
    adapted = await store.get("L-1")
    assert isinstance(adapted, Lesson) and adapted.title == "Run the check after editing a.py"
    assert adapted.evidence.citations[-1].excerpt == "line one\nline 2\n"
    report, sessions = await _postmortem(tmp_path, store, root, [], "run-2")
    assert _maintenance(sessions) == []


@pytest.mark.asyncio
async def test_the_offer_is_capped_lowest_revision_first_then_id(
    tmp_path: Path, store: Any, root: Path
) -> None:
    count = STALE_OFFERED_MAX + 4
    cited = Citation(path="src/a.py", lines=(3, 3))
    await store.publish(
        fingerprinted([_create(f"lesson {n}", cited) for n in range(count)], Checkout(root))
    )
    # L-1 adapted once (not citing again): revision 2, so it comes after every revision 1.
    first = await store.get("L-1")
    assert isinstance(first, Lesson)
    card = first.card().model_copy(update={"title": "lesson 0, adapted"})
    await store.publish([AdaptLesson(id="L-1", base_revision=1, card=card, author=PERSON)])
    _change(root, "line 3\n", "line three\n")
    report, sessions = await _postmortem(tmp_path, store, root, [], "run-1")
    entry = report.specialists["repository_maintenance"]
    assert entry.manifest == STALE_OFFERED_MAX and entry.stale_offered == STALE_OFFERED_MAX
    offered = sorted(x["id"] for r in _maintenance(sessions) for x in supplied(r))
    expected = sorted(f"L-{n}" for n in range(2, count + 1))[:STALE_OFFERED_MAX]
    assert offered == sorted(expected) and "L-1" not in offered

    # The kept ones are refreshed; the next postmortem offers the rest, L-1 among them.
    report, sessions = await _postmortem(tmp_path, store, root, [], "run-2")
    rest = sorted(x["id"] for r in _maintenance(sessions) for x in supplied(r))
    assert rest == sorted({f"L-{n}" for n in range(1, count + 1)} - set(offered))


@pytest.mark.asyncio
async def test_without_a_checkout_nothing_is_offered(
    tmp_path: Path, store: Any, root: Path
) -> None:
    await _seed(store, root)
    _change(root, "line 4\n", "line four\n")
    report, sessions = await _postmortem(tmp_path, store, None, [], "run-1")
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "reconciled" and entry.manifest == 0
    assert "stale_offered" not in entry.to_json()
    assert _maintenance(sessions) == []
    lesson = await store.get("L-2")
    assert isinstance(lesson, Lesson) and lesson.revision == 1
    assert (await store.effectiveness(["L-2"])).get("L-2", Effectiveness()) == Effectiveness()


@pytest.mark.asyncio
async def test_with_manual_review_a_kept_stale_lesson_is_refreshed_and_an_adapt_proposed(
    tmp_path: Path, store: Any, root: Path
) -> None:
    from run_builder import software_change

    from active_memory.config import parse_runtime_settings, resolve_config
    from active_memory.runlog.graph import Graph

    settings = parse_runtime_settings(
        {
            "harness": "claude",
            "provider": "anthropic",
            "size": "standard",
            "nodes": {"worker": {"kind": "agent", "model": "claude-sonnet-5"}},
            "activeMemory": {"repository": True, "graph": True, "review": "manual"},
            "globalAgents": {"postmortem": {"enabled": True, "timeoutMs": 5_000}},
        }
    )
    manual = resolve_config(settings, Graph.from_json(software_change()))
    await _seed(store, root)
    _change(root, "line 4\n", "line four\n")

    async def keep_l2_adapt_l4(request: Request) -> Any:
        answer = decisions(request, "keep")
        for decision in answer["decisions"]:
            if decision["id"] == "L-4":
                decision.update(action="adapt", lesson={
                    "title": "Check a.py line four",
                    "recommendation": "After editing `src/a.py` run `make check` (line four).",
                    "associations": {"folders": ["src"]},
                })  # fmt: skip
        return answer

    sessions = FakeSessions({"repository_maintenance": keep_l2_adapt_l4})
    record = run_record(tmp_path, ["L-4"], run_id="run-1")
    report = await run_postmortem(
        record, manual, store, checkout=Checkout(root), sessions=sessions, journal_dir=tmp_path
    )
    assert report.published.adapted == 1 and report.published.proposed == 1
    kept = await store.get("L-2")  # its card is unchanged: nothing for a person to approve
    assert isinstance(kept, Lesson) and kept.revision == 2
    assert kept.evidence.citations[-1].excerpt == "line four\nline 5\n"
    [proposal] = await store.proposals("proposed")
    assert proposal.mutation.id == "L-4"
    assert proposal.mutation.evidence.citations[-1].excerpt == "line four\nline 5\n"
    waiting = await store.get("L-4")
    assert isinstance(waiting, Lesson) and waiting.revision == 1


@pytest.mark.asyncio
async def test_without_delivery_evidence_stale_lessons_are_still_offered(
    tmp_path: Path, store: Any, root: Path
) -> None:
    await _seed(store, root)
    _change(root, "line 4\n", "line four\n")
    sessions = FakeSessions()
    record = run_record(tmp_path, None, run_id="run-1")
    report = await run_postmortem(
        record, config(), store, checkout=Checkout(root), sessions=sessions, dry_run=True
    )
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "reconciled" and entry.manifest == 2  # not abstained
    [request] = _maintenance(sessions)
    assert [(x["id"], x["offered"]) for x in supplied(request)] == [
        ("L-2", "cited code changed"), ("L-4", "cited code changed")
    ]  # fmt: skip


@pytest.mark.asyncio
async def test_a_kept_stale_lesson_another_writer_changed_meanwhile_is_decided_again(
    tmp_path: Path, store: Any, root: Path
) -> None:
    await _seed(store, root)
    _change(root, "line 4\n", "line four\n")
    asked: list[list[tuple[str, int]]] = []

    async def keep_while_a_person_edits(request: Request) -> Any:
        asked.append([(x["id"], x["revision"]) for x in supplied(request)])
        if len(asked) == 1:  # a person edits L-2 while the postmortem decides
            lesson = await store.get("L-2")
            card = lesson.card().model_copy(update={"title": "cites a.py 4-5, edited"})
            await store.publish([AdaptLesson(id="L-2", base_revision=1, card=card, author=PERSON)])
        return decisions(request, "keep")

    report, _ = await _postmortem(tmp_path, store, root, [], "run-1", keep_while_a_person_edits)
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "reconciled", entry.reason
    assert sorted(entry.rereconciled) == ["L-2"] and report.conflicts == []
    assert asked == [[("L-2", 1), ("L-4", 1)], [("L-2", 2)]]
    kept = await store.get("L-2")
    assert isinstance(kept, Lesson) and kept.revision == 3
    assert kept.title == "cites a.py 4-5, edited"  # the person's card, never overwritten
    assert kept.evidence.citations[-1].excerpt == "line four\nline 5\n"


@pytest.mark.asyncio
async def test_code_that_changes_back_to_a_text_kept_before_is_not_stale_after_a_keep(
    tmp_path: Path, store: Any, root: Path
) -> None:
    # A (published), B (offered, kept: B fingerprinted), back to A (offered, kept): the
    # second keep re-cites A's very citation; it must become the latest again, or the
    # lesson would stay stale and be offered at every postmortem.
    await _seed(store, root)
    _change(root, "line 4\n", "line four\n")
    await _postmortem(tmp_path, store, root, [], "run-1")  # keeps L-2, L-4 at B
    _change(root, "line four\n", "line 4\n")
    report, sessions = await _postmortem(tmp_path, store, root, [], "run-2")
    assert report.specialists["repository_maintenance"].stale_offered == 2
    kept = await store.get("L-2")
    assert isinstance(kept, Lesson) and kept.revision == 3
    assert kept.evidence.citations[-1].excerpt == "line 4\nline 5\n"
    report, sessions = await _postmortem(tmp_path, store, root, [], "run-3")
    assert report.specialists["repository_maintenance"].manifest == 0
    assert _maintenance(sessions) == []
