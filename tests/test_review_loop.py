"""Manual review end to end: a postmortem with `activeMemory.review: "manual"` keeps its
creations and adaptations as proposals; recall delivers none of them; a person approves
one in the web view and the next recall delivers it.

Runs the bundled example (examples/run.json, its recorded answers and a fresh copy of its
checkout) through the real `postmortem` and `recall` commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from test_postmortem_cli import RUN, checkout, postmortem, run_cli, state  # noqa: F401
from ui_support import csrf_of, login, web_client

from active_memory.lessons import Author, CreateLesson, Lesson
from active_memory.store import LessonQuery, open_store


def _store_location(state_dir: Path) -> str:
    return str(state_dir / "active-memory" / "lessons.sqlite3")


def _manual_run(tmp_path: Path) -> Path:
    document = json.loads(RUN.read_text(encoding="utf-8"))
    document["runtime"]["activeMemory"]["review"] = "manual"
    path = tmp_path / "run-manual.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _recall(checkout_dir: Path, path: str, session: str) -> list[str]:
    tool = json.dumps({"tool_name": "Read", "tool_input": {"file_path": path}})
    code, out, err = run_cli(
        "recall", "--session", session, "--cwd", str(checkout_dir), tool, "--json"
    )
    assert code == 0, err
    return [card["id"] for card in json.loads(out)["cards"]]


def _lessons(location: str) -> tuple[dict[str, Any], list[Any]]:
    async def main() -> tuple[dict[str, Any], list[Any]]:
        async with open_store(location) as store:
            found = await store.select(LessonQuery(include_retired=True))
            return {x.id: x for x in found}, await store.proposals()

    return anyio.run(main, backend="asyncio")


def test_manual_review_publishes_proposals_only_until_a_person_approves(
    state: Path,  # noqa: F811
    checkout: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    location = _store_location(state)
    before, _ = _lessons(location)
    code, out, err = postmortem(checkout, "--json", run=_manual_run(tmp_path))
    assert code == 0, err
    report = json.loads(out)
    published = report["published"]
    assert published["created"] == 0 and published["adapted"] == 0
    assert published["proposed"] >= 1
    after, proposals = _lessons(location)
    # Nothing a proposal says reached the lessons: no new ID, and only the lessons a
    # retire or defer decision named (published directly: docs/review.md) changed.
    assert set(after) == set(before)
    changed = {i for i, x in after.items() if x.revision != before[i].revision}
    direct = {m["id"] for m in report["mutations"] if m["action"] in ("retire", "defer")}
    assert changed == direct
    waiting = [p for p in proposals if p.state == "proposed"]
    assert len(waiting) == published["proposed"]
    numbers = [m["proposal"] for m in report["mutations"] if m.get("proposal")]
    assert sorted(numbers) == [p.seq for p in waiting]

    created = next(
        p
        for p in waiting
        if isinstance(p.mutation, CreateLesson) and p.mutation.card.associations.files
    )
    files = created.mutation.card.associations.files
    assert files, "the example's new lesson is associated with a file"
    delivered = _recall(checkout, files[0], "session-before")
    assert all(i not in after or after[i].title != created.mutation.card.title for i in delivered)

    with web_client(location) as client:
        login(client)
        page = client.get("/review").text
        assert f'id="proposal-{created.seq}"' in page
        csrf = csrf_of(page)
        answer = client.post(f"/review/{created.seq}/approve", data={"csrf": csrf})
        assert answer.status_code == 303, answer.text
        assert "approved" in client.get(answer.headers["location"]).text

    now, proposals = _lessons(location)
    decided = next(p for p in proposals if p.seq == created.seq)
    assert decided.state == "approved" and decided.result_id is not None
    lesson = now[decided.result_id]
    assert isinstance(lesson, Lesson) and lesson.title == created.mutation.card.title
    assert decided.result_id in _recall(checkout, files[0], "session-after")


def test_rejections_of_a_scope_reach_its_next_discovery_task_only(
    state: Path,  # noqa: F811
    checkout: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    from active_memory.runlog.record import load_run_record
    from active_memory.specialists.tasks import DiscoveryName, build_discovery, with_rejected
    from active_memory.store.review import ReviewDecision

    location = _store_location(state)
    code, _, err = postmortem(checkout, "--json", run=_manual_run(tmp_path))
    assert code == 0, err
    _, waiting = _lessons(location)
    person = Author(specialist="person:ada")

    async def reject_all() -> list[Any]:
        async with open_store(location) as store:
            for p in waiting:
                decision = ReviewDecision(approve=False, author=person, reason=f"no #{p.seq}")
                await store.decide_proposal(p.seq, decision)
            return await store.proposals("rejected")

    rejected = anyio.run(reject_all, backend="asyncio")
    record = load_run_record(RUN)
    names: tuple[tuple[DiscoveryName, str], ...] = (
        ("repository_discovery", "repository"),
        ("graph_discovery", "graph"),
    )
    for name, kind in names:
        task = with_rejected(build_discovery(name, record), rejected)
        mine = [p for p in rejected if p.scope_key[0] == kind]
        assert [x["title"] for x in task.rejected] == [p.mutation.card.title for p in mine]
        assert [x["rejected_because"] for x in task.rejected] == [f"no #{p.seq}" for p in mine]
        assert "rejected" in task.to_json()
    elsewhere = [p.model_copy(update={"scope_key": ("repository", "repo:other/x", "", "")})
                 for p in rejected]  # fmt: skip
    assert with_rejected(build_discovery("repository_discovery", record), elsewhere).rejected == ()


def test_a_manual_review_summary_lists_its_proposals(
    state: Path,  # noqa: F811
    checkout: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    code, out, err = postmortem(checkout, run=_manual_run(tmp_path))
    assert code == 0, err
    location = _store_location(state)
    _, proposals = _lessons(location)
    waiting = [p for p in proposals if p.state == "proposed"]
    assert waiting
    assert "Proposed for review" in out
    section = out[out.index("Proposed for review") :]
    for proposal in waiting:
        row = next(line for line in section.splitlines() if f"#{proposal.seq} " in line)
        # The title's first words (a long one wraps in its column).
        assert " ".join(proposal.mutation.card.title.split()[:2]) in row
    assert f"{len(waiting)} proposed for review" in out and "page Review" in out
    # What was proposed is not listed as published (only the retirement was).
    published = out[out.index("Published") : out.index("Proposed for review")]
    assert "retire" in published and "create" not in published and "adapt" not in published
