"""`lessons show` and `lessons list --sort effectiveness` show the counters."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from conftest import create

from active_memory.cli import main
from active_memory.store.effectiveness import RunObservation
from active_memory.store.sqlite import SqliteStore


def _seen(lesson_id: str, run_id: str, delivered: bool, recurred: bool) -> RunObservation:
    return RunObservation(lesson_id=lesson_id, run_id=run_id, delivered=delivered,
                          recurred=recurred)  # fmt: skip


async def _history(path: Path) -> None:
    """L-1: delivered 2, recurred 1. L-2: delivered 1, recurred 1. L-3: delivered 3,
    recurred 0. L-4: never delivered, touched 2. L-5: never observed."""
    async with await SqliteStore.open(path) as store:
        await store.publish([create(f"Lesson number {n} of the client") for n in range(1, 6)])
        runs = [
            [_seen("L-1", "r1", True, True), _seen("L-2", "r1", True, True),
             _seen("L-3", "r1", True, False), _seen("L-4", "r1", False, True)],
            [_seen("L-1", "r2", True, False), _seen("L-3", "r2", True, False),
             _seen("L-4", "r2", False, False)],
            [_seen("L-3", "r3", True, False)],
        ]  # fmt: skip
        for observations in runs:
            await store.publish([], observations)


@pytest.fixture
def store(tmp_path: Path) -> str:
    path = tmp_path / "lessons.sqlite3"
    anyio.run(_history, path, backend="asyncio")
    return str(path)


def test_list_sorted_by_effectiveness_puts_the_most_recurring_delivered_lesson_first(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lessons", "list", "--sort", "effectiveness", "--json", "--store", store]) == 0
    lessons = json.loads(capsys.readouterr().out)["lessons"]
    assert [lesson["id"] for lesson in lessons] == ["L-2", "L-1", "L-3", "L-4", "L-5"]
    assert lessons[1]["effectiveness"] == {
        "runs_delivered": 2,
        "recurred_when_delivered": 1,
        "runs_touched_not_delivered": 0,
        "recurred_when_not_delivered": 0,
        "last_run_id": "r2",
        "recurrence_when_delivered": 0.5,
        "recurrence_when_not_delivered": None,
    }


def test_list_by_id_keeps_its_order_and_shape(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lessons", "list", "--json", "--store", store]) == 0
    lessons = json.loads(capsys.readouterr().out)["lessons"]
    assert [lesson["id"] for lesson in lessons] == ["L-1", "L-2", "L-3", "L-4", "L-5"]
    assert "effectiveness" not in lessons[0]


def test_show_gives_the_four_counts_and_both_rates(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lessons", "show", "L-4", "--json", "--store", store]) == 0
    shown = json.loads(capsys.readouterr().out)["effectiveness"]
    assert (shown["runs_touched_not_delivered"], shown["recurred_when_not_delivered"]) == (2, 1)
    assert shown["recurrence_when_not_delivered"] == 0.5
    assert main(["lessons", "show", "L-1", "--store", store]) == 0
    out = capsys.readouterr().out
    assert "delivered in 2 run(s), its evidence recurred in 1 (50%)" in out


def test_a_table_sorted_by_effectiveness_shows_the_counts(
    store: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["lessons", "list", "--sort", "effectiveness", "--table", "--store", store]) == 0
    out = capsys.readouterr().out
    assert "delivered" in out and "touched only" in out and "then recurred" in out
    assert out.index("L-2") < out.index("L-1") < out.index("L-5")
    row = next(line for line in out.splitlines() if "L-1 " in line)
    assert "2 runs" in row and "1 (50%)" in row  # delivered twice, back once


def test_a_table_always_labels_the_stale_and_effectiveness_columns(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # not a checkout: each lesson is judged by its own repository
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["lessons", "list", "--table", "--store", store]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "status" in line)
    for label in ("stale", "delivered", "then recurred", "touched only"):
        assert label in header
    assert "stale (n): n cited ranges changed in the checkout of the lesson's repository" in out
    row = next(line for line in out.splitlines() if "L-4 " in line)
    assert "0 runs" in row and "2 runs" in row and "1 (50%)" in row


def test_stats_summarises_effectiveness_and_names_the_lessons_worth_a_look(
    store: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")

    async def more() -> None:
        async with await SqliteStore.open(Path(store)) as opened:
            # L-2 comes back every time it is delivered; L-4 is touched, never delivered.
            await opened.publish(
                [], [_seen("L-2", "r4", True, True), _seen("L-4", "r4", False, False)]
            )
            await opened.publish([], [_seen("L-2", "r5", True, True)])

    anyio.run(more, backend="asyncio")
    journal = tmp_path / "journal"
    journal.mkdir()
    assert main(["lessons", "stats", "--json", "--store", store, "--journal", str(journal)]) == 0
    summary = json.loads(capsys.readouterr().out)["effectiveness"]
    assert summary["lessons"] == {"living": 5, "observed": 4, "delivered": 3}
    # Delivered: L-1 2 runs (1 back), L-2 3 (3), L-3 3 (0) → 8 runs, 4 back.
    assert summary["when_delivered"] == {"runs": 8, "recurred": 4, "rate": 0.5}
    assert summary["when_not_delivered"] == {"runs": 3, "recurred": 1, "rate": pytest.approx(1 / 3)}
    assert [x["id"] for x in summary["recurring"]["lessons"]] == ["L-2"]
    assert [x["id"] for x in summary["never_delivered"]["lessons"]] == ["L-4"]
    assert summary["recurring"]["lessons"][0]["recurrence_when_delivered"] == 1.0
    assert main(["lessons", "stats", "--store", store, "--journal", str(journal)]) == 0
    out = capsys.readouterr().out
    assert "Effectiveness of the 5 living lessons (4 observed in a run, 3 delivered)" in out
    assert "that delivered a lesson" in out and "50%" in out
    assert "Recurring though delivered" in out and "Never delivered" in out
    row = next(line for line in out.splitlines() if "L-2 " in line)
    assert "3 runs" in row and "3 (100%)" in row
