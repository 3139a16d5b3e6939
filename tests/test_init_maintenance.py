"""init's maintenance phase: every lesson of a scope, per repository and per exact graph
scope, never another repository's cards; staged until every card has a decision."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from init_support import History, answer, scripted_answers

from active_memory.init import InitRefused, advance
from active_memory.init import publish as publish_module
from active_memory.lessons import (
    Associations,
    Author,
    Card,
    CreateLesson,
    GraphScope,
    Lesson,
    RepositoryScope,
)
from active_memory.runlog.record import load_run_record
from active_memory.store import open_store

SEEDER = Author(specialist="test")


def _card(title: str) -> Card:
    return Card(
        title=title,
        recommendation="After editing `api/schema.json` run `make api-client`.",
        associations=Associations(files=["api/schema.json"]),
    )


def _seed(history: History) -> dict[str, str]:
    """One lesson per repository (alpha, beta, an unselected one) and one graph lesson."""
    records = sorted(history.runs.glob("run-a1.json"))
    graph_hash = load_run_record(records[0]).graph.hash  # type: ignore[union-attr]
    assert graph_hash is not None
    scopes: dict[str, Any] = {
        "alpha": RepositoryScope(repository="repo:github.com/acme/alpha"),
        "beta": RepositoryScope(repository="repo:github.com/acme/beta"),
        "other": RepositoryScope(repository="repo:github.com/acme/other"),
        "graph": GraphScope(graph_hash=graph_hash, node="worker"),
    }

    async def seed() -> dict[str, str]:
        async with open_store(str(history.tmp / "lessons.sqlite3")) as store:
            receipt = await store.publish(
                [
                    CreateLesson(scope=scope, card=_card(f"Card of {name}"), author=SEEDER)
                    for name, scope in scopes.items()
                ]
            )
        return {name: created[0] for name, created in zip(scopes, receipt.created, strict=True)}

    return anyio.run(seed)


def _call(history: History) -> dict[str, Any]:
    return advance(
        history.tmp / "session",
        store=str(history.tmp / "lessons.sqlite3"),
        runs_dir=history.runs,
        ignore_repos=["delta"],
        ignore_graphs=["legacy"],
        environ=history.environ,
    )


def _lessons(history: History) -> dict[str, Lesson]:
    async def read() -> dict[str, Lesson]:
        async with open_store(str(history.tmp / "lessons.sqlite3")) as store:
            return {x.id: x for x in await store.select() if isinstance(x, Lesson)}

    return anyio.run(read)


def _decide(tasks: list[dict[str, Any]], ids: dict[str, str], skip: str = "") -> None:
    actions = {"alpha": "retire", "beta": "keep", "graph": "defer"}
    for task in tasks:
        text = Path(task["task_file"]).read_text()
        decisions = [
            {"id": ids[name], "revision": 1, "action": action, "reason": "scripted"}
            for name, action in actions.items()
            if f"Card of {name}" in text and name != skip
        ]
        answer(task["task_file"], {"decisions": decisions})


@pytest.fixture
def history(tmp_path: Path) -> History:
    return History(tmp_path)


def test_maintenance_supplies_each_scope_alone_and_publishes_its_decisions(
    history: History,
) -> None:
    ids = _seed(history)
    scripted_answers(history.tmp / "session", _call(history)["tasks"])
    second = _call(history)
    assert second["phase"] == "maintenance"
    assert sorted(t["specialist"] for t in second["tasks"]) == [
        "graph_maintenance",
        "repository_maintenance",
        "repository_maintenance",
    ]
    texts = [Path(t["task_file"]).read_text() for t in second["tasks"]]
    assert sum("Card of alpha" in t for t in texts) == 1
    assert sum("Card of beta" in t for t in texts) == 1
    assert not any("Card of alpha" in t and "Card of beta" in t for t in texts)
    assert not any("Card of other" in t for t in texts)  # no selected run of that repository

    _decide(second["tasks"], ids)
    done = _call(history)
    assert done["phase"] == "complete"
    published = done["receipt"]["published"]
    assert published["retired"] == [[ids["alpha"], 2]]
    assert published["deferred"] == [[ids["graph"], 2]]
    assert len(published["created"]) == 1
    living = _lessons(history)
    assert ids["alpha"] not in living
    assert living[ids["graph"]].status == "deferred"
    assert living[ids["beta"]].revision == 1


def test_a_batch_without_every_decision_gets_a_repair_task_then_stops_the_call(
    history: History,
) -> None:
    ids = _seed(history)
    scripted_answers(history.tmp / "session", _call(history)["tasks"])
    _decide(_call(history)["tasks"], ids, skip="beta")
    # The refused batch gets its repair task, named after the first, listing the failure.
    waiting = _call(history)
    assert waiting["phase"] == "maintenance"
    [repair] = [t for t in waiting["tasks"] if "repair_of" in t]
    assert repair["task_file"].endswith(".repair.task.json")
    assert Path(repair["repair_of"]).name == Path(repair["task_file"]).name.replace(
        ".repair.task.json", ".task.json"
    )
    assert any("has no decision" in failure for failure in repair["failures"])
    assert not (history.tmp / "session" / "publishing.json").exists()
    # A repair that still misses a decision stops the call, naming the repair answer file.
    _decide([repair], ids, skip="beta")
    with pytest.raises(InitRefused, match="has no decision") as refused:
        _call(history)
    assert repair["answer_file"] in str(refused.value)
    assert not (history.tmp / "session" / "publishing.json").exists()
    # Rewritten with every decision, the session completes.
    _decide([repair], ids)
    assert _call(history)["phase"] == "complete"


def test_a_crash_after_publishing_maintenance_recovers_the_same_receipt(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _seed(history)
    scripted_answers(history.tmp / "session", _call(history)["tasks"])
    _decide(_call(history)["tasks"], ids)

    def crash(*_: Any) -> None:
        raise SystemExit("killed between publication and checkpoint")

    with monkeypatch.context() as patched:
        patched.setattr(publish_module, "write_receipt", crash)
        with pytest.raises(SystemExit):
            _call(history)
    before = _lessons(history)
    done = _call(history)
    assert done["phase"] == "complete"
    assert done["receipt"]["published"]["retired"] == [[ids["alpha"], 2]]
    assert done["receipt"]["published"]["deferred"] == [[ids["graph"], 2]]
    assert _lessons(history) == before  # recovered, not published twice


def test_the_newest_run_is_the_one_whose_log_ends_last(tmp_path: Path) -> None:
    from init_support import run_data

    from active_memory.init.maintenance import newest
    from active_memory.runlog.record import parse_run_record

    early = run_data("run-z", tmp_path, namespace="repo:local/x", remote=None)
    late = run_data("run-a", tmp_path, namespace="repo:local/x", remote=None)
    for stored in late["events"]:
        if "at" in stored:
            stored["at"] = "2099" + stored["at"][4:]
    runs = [(parse_run_record(d), tmp_path) for d in (early, late)]
    assert newest(runs)[0].run_id == "run-a"


def test_a_scope_whose_runs_hold_no_delivery_evidence_abstains_like_a_postmortem(
    history: History,
) -> None:
    import json

    from active_memory.specialists.tasks import NO_DELIVERY_EVIDENCE

    ids = _seed(history)
    for name in ("run-b1", "run-b2"):  # beta's runs: `deliveries` absent (not empty)
        path = history.runs / f"{name}.json"
        data = json.loads(path.read_text())
        del data["deliveries"]
        path.write_text(json.dumps(data))
    scripted_answers(history.tmp / "session", _call(history)["tasks"])
    second = _call(history)
    texts = [Path(t["task_file"]).read_text() for t in second["tasks"]]
    assert sum("Card of alpha" in t for t in texts) == 1
    assert not any("Card of beta" in t for t in texts)  # never asked about
    _decide(second["tasks"], ids)
    done = _call(history)
    assert done["phase"] == "complete"
    [beta] = [
        r
        for r in done["receipt"]["results"]
        if r["run_id"] in ("run-b1", "run-b2") and r["specialist"] == "repository_maintenance"
    ]
    assert beta["abstained"] == NO_DELIVERY_EVIDENCE and beta["decisions"] == []
    assert _lessons(history)[ids["beta"]].revision == 1  # untouched
