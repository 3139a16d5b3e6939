"""What Active Memory itself costs, read from its own records (no store writes).

- Postmortems: the journal (`orchestrator/journal.py`): state, reason, statuses,
  published counts, and model usage (tokens, requests, cost when the provider reports
  it) per postmortem, per specialist and per day (of the postmortem's start, UTC).
- Cards: recall's session ledgers (`recall/sessions/*.ledger`: bytes each provider
  session received, framing included) and the runs' delivery records
  (`recall/runs/*/deliveries.jsonl`): bytes per lesson = deliveries times the size of the
  card delivered (its revision's card, from the lesson's history; the frame is counted
  per session, not per lesson).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from active_memory.orchestrator.journal import Journal, JournalEntry, store_journal_dir
from active_memory.orchestrator.report import UsageReport
from active_memory.store.lesson_store import LessonStore
from active_memory.store.location import state_dir

RECENT_POSTMORTEMS = 100


def _usage(usage: UsageReport) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "tokens": usage.input_tokens + usage.output_tokens,
        "requests": usage.requests,
        "cost_usd": usage.cost_usd,
        "complete": usage.complete,
    }


def _add(total: dict[str, Any], usage: UsageReport) -> None:
    for key, value in _usage(usage).items():
        if key == "complete":
            total[key] = total.get(key, True) and value
        elif key == "cost_usd":
            if value is not None:
                total[key] = (total.get(key) or 0.0) + value
            else:
                total.setdefault(key, None)
        else:
            total[key] = total.get(key, 0) + value


def journal_entries(location: str, env: Mapping[str, str] | None = None) -> list[JournalEntry]:
    """Every readable entry of the journal of the store at `location`, newest start first."""
    journal = Journal(store_journal_dir(location, env))
    return sorted(journal.entries(), key=lambda e: e.started_at, reverse=True)


def postmortems_page(
    location: str, env: Mapping[str, str] | None = None, run_id: str = ""
) -> dict[str, Any]:
    """Running, failed and recent postmortems of the store at `location` (or every one of
    `run_id`), with their decisions and usage. A rerun of a run is an entry of its own;
    a finished postmortem whose specialists partly failed is `partial`."""
    entries = journal_entries(location, env)
    if run_id:
        entries = [e for e in entries if e.run_id == run_id]
    rows = []
    for entry in entries[:RECENT_POSTMORTEMS]:
        failed = entry.failed_specialists()
        rows.append(
            {
                "run_id": entry.run_id,
                "attempt": entry.attempt,
                "outcome": entry.outcome,
                "state": entry.verdict(),
                "recorded_state": entry.state,
                "failed_specialists": failed,
                "specialists": len(entry.statuses),
                "started_at": entry.started_at,
                "ended_at": entry.ended_at,
                "reason": entry.reason,
                "statuses": entry.statuses,
                "published": entry.published,
                "usage": _usage(entry.usage),
                "refused": len(entry.rejected),
            }
        )
    counts = {state: sum(1 for e in entries if e.verdict() == state) for state in
              ("running", "finished", "partial", "failed", "cancelled")}  # fmt: skip
    return {"postmortems": rows, "counts": counts, "total": len(entries), "run": run_id or None}


QUEUE_SHOWN = 100
"""Queue entries shown per state (pending, running, failed), oldest first."""


async def queue_page(store: LessonStore) -> dict[str, Any]:
    """The postmortem queue (docs/queue.md): pending, running and failed entries."""
    entries = await store.queue.entries(("pending", "running", "failed"))
    shown: dict[str, list[dict[str, Any]]] = {"pending": [], "running": [], "failed": []}
    for entry in entries:
        rows = shown[entry.state]
        if len(rows) < QUEUE_SHOWN:
            rows.append(entry.to_json())
    return {"queue": shown, "queue_counts": {k: sum(1 for e in entries if e.state == k)
                                             for k in shown}}  # fmt: skip


def _ledger_bytes(recall_dir: str) -> list[dict[str, Any]]:
    from active_memory.recall.ledger import LedgerCorrupt, read_state

    folder = os.path.join(recall_dir, "sessions")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    sessions = []
    for name in names:
        if not name.endswith(".ledger"):
            continue
        try:
            state = read_state(os.path.join(folder, name))
        except LedgerCorrupt:
            continue
        sessions.append(
            {"session": name[: -len(".ledger")], "bytes": state.spent,
             "cards": len(state.delivered)}
        )  # fmt: skip
    return sorted(sessions, key=lambda s: -int(s["bytes"]))


def _deliveries(recall_dir: str) -> list[dict[str, Any]]:
    """Every run folder's deliveries. The folders are read as they are: their names are
    run keys made file names (a hook session's `session:<id>` is `session%3A<id>`), so
    they are never turned into a file name again."""
    from active_memory.recall.records import read_deliveries_in

    runs = Path(recall_dir) / "runs"
    try:
        folders = sorted(p for p in runs.iterdir() if p.is_dir())
    except OSError:
        return []
    found: list[dict[str, Any]] = []
    for folder in folders:
        found.extend(read_deliveries_in(str(folder)))
    return found


async def costs_page(store: LessonStore, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Model usage per postmortem, per specialist and per day; card bytes per session and
    per lesson."""
    import anyio.to_thread

    from active_memory.recall.frame import render_card, utf8_size

    entries = await anyio.to_thread.run_sync(journal_entries, store.location, env)
    per_specialist: dict[str, dict[str, Any]] = {}
    per_day: dict[str, dict[str, Any]] = {}
    per_postmortem = []
    for entry in entries:
        per_postmortem.append({"run_id": entry.run_id, "attempt": entry.attempt,
                               "started_at": entry.started_at, "state": entry.verdict(),
                               **_usage(entry.usage)})  # fmt: skip
        day = per_day.setdefault(entry.started_at[:10], {})
        _add(day, entry.usage)
        day["postmortems"] = day.get("postmortems", 0) + 1
        for name, usage in entry.specialist_usage.items():
            _add(per_specialist.setdefault(name, {}), usage)
    recall_dir = os.path.join(state_dir(env), "recall")
    sessions = await anyio.to_thread.run_sync(_ledger_bytes, recall_dir)
    deliveries = await anyio.to_thread.run_sync(_deliveries, recall_dir)
    sizes: dict[tuple[str, int], int] = {}
    per_lesson: dict[str, dict[str, int]] = {}
    for delivery in deliveries:
        lesson_id, revision = str(delivery.get("lesson")), int(delivery.get("revision") or 0)
        if (lesson_id, revision) not in sizes:
            sizes[(lesson_id, revision)] = 0
            for item in await store.history(lesson_id):
                if item.revision == revision and item.card is not None:
                    card = render_card(lesson_id, revision, item.card.title,
                                       item.card.recommendation)  # fmt: skip
                    sizes[(lesson_id, revision)] = utf8_size(card)
        row = per_lesson.setdefault(lesson_id, {"deliveries": 0, "bytes": 0})
        row["deliveries"] += 1
        row["bytes"] += sizes[(lesson_id, revision)]
    return {
        "per_postmortem": per_postmortem,
        "per_specialist": [{"specialist": k, **v} for k, v in sorted(per_specialist.items())],
        "per_day": [{"day": k, **v} for k, v in sorted(per_day.items())],
        "per_session": sessions,
        "per_lesson": [
            {"lesson": k, **v} for k, v in sorted(per_lesson.items(), key=lambda i: -i[1]["bytes"])
        ],
    }
