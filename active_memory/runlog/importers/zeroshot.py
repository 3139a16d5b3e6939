"""Run records from a zeroshot native run ledger (`runs.sqlite3`: `v2_runs`, `v2_run_events`).

The ledger (zeroshot `v2_run_ledger/sqlite.rs`) stores one row per admitted run in
`v2_runs (run_id, submission_key, submission_digest, cursor, stored_json)`, where
`stored_json` is a `StoredRun` (`submissionKey`, `submissionDigest`, `admitted` {`title`,
`graph` (compiled IR), `initialInput`, `runtime`, `source`}, `snapshot` {`runId`,
`phase`, `cursor` `"v2:N"`, `terminal`, ...}), and one row per event in
`v2_run_events (run_id, sequence, event_json)`, `event_json` a tagged `RunEvent`.

The file is opened read-only (`mode=ro` URI, `query_only`): importing never writes to
zeroshot's ledger. Runs that are not finished are skipped with a reason.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

from active_memory.errors import InvalidRecord, UsageError
from active_memory.runlog.canonical import graph_hash
from active_memory.runlog.importers.common import (
    ImportedRun,
    ImportResult,
    Skipped,
    aliases_for,
    checked,
    trim,
)
from active_memory.runlog.record import RUN_SCHEMA

LEDGER_FILE = "runs.sqlite3"
_OUTCOMES = ("succeeded", "failed", "cancelled")
# Event kinds the run record models; anything newer is dropped with a warning.
_KNOWN_EVENTS = frozenset(
    {
        "run_started",
        "node_started",
        "node_completed",
        "execution_voided",
        "safe_log",
        "token_usage_observed",
        "force_stop_requested",
        "terminal",
    }
)
_REQUIRED_COLUMNS = {
    "v2_runs": {"run_id", "cursor", "stored_json"},
    "v2_run_events": {"run_id", "sequence", "event_json"},
}


def ledger_path(path: str | Path) -> Path:
    """The ledger file named by PATH: the file itself, or `runs.sqlite3` inside a folder."""
    given = Path(path)
    if given.is_dir():
        inside = given / LEDGER_FILE
        if not inside.is_file():
            raise InvalidRecord(str(given), f"no {LEDGER_FILE} in this folder")
        return inside
    if not given.is_file():
        raise InvalidRecord(str(given), "no such file or folder")
    return given


def import_ledger(path: str | Path) -> ImportResult:
    """One run record per finished run of the ledger; unfinished and unreadable runs skipped."""
    file = ledger_path(path)
    source = str(file)
    connection = _open(file)
    try:
        rows = _rows(connection, source, "SELECT run_id, stored_json FROM v2_runs ORDER BY rowid")
        result = ImportResult()
        for run_id, stored_json in rows:
            run_id = str(run_id)
            try:
                imported = _one_run(connection, source, run_id, stored_json)
            except _Skip as skip:
                result.skipped.append(Skipped(skip.reason, run_id=run_id))
                continue
            except InvalidRecord as exc:
                result.skipped.append(Skipped(f"not a valid run record: {exc.detail}", run_id))
                continue
            except UsageError as exc:  # e.g. a graph the canonical form rejects
                result.skipped.append(Skipped(str(exc), run_id=run_id))
                continue
            result.runs.append(imported)
        return result
    finally:
        connection.close()


class _Skip(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _open(file: Path) -> sqlite3.Connection:
    source = str(file)
    uri = f"file:{pathname2url(str(file.resolve()))}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=5.0)
    except sqlite3.Error as exc:
        raise InvalidRecord(source, f"cannot open the ledger read-only: {exc}") from None
    try:
        connection.execute("PRAGMA query_only = ON")
        tables = {
            name: {column[1] for column in connection.execute(f"PRAGMA table_info({name})")}
            for name in _REQUIRED_COLUMNS
        }
    except sqlite3.DatabaseError as exc:
        connection.close()
        raise InvalidRecord(source, f"not a readable SQLite database: {exc}") from None
    for name, needed in _REQUIRED_COLUMNS.items():
        missing = needed - tables[name]
        if missing:
            connection.close()
            what = "table is missing" if not tables[name] else f"lacks {', '.join(sorted(missing))}"
            raise InvalidRecord(
                source,
                f"not a zeroshot native run ledger: {name} {what} "
                f"(expected {LEDGER_FILE} from zeroshot's native state folder)",
            )
    return connection


def _rows(connection: sqlite3.Connection, source: str, sql: str, *args: Any) -> list[Any]:
    try:
        return connection.execute(sql, args).fetchall()
    except sqlite3.DatabaseError as exc:
        raise InvalidRecord(source, f"cannot read the ledger: {exc}") from None


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Skip(f"{what}: expected an object")
    return value


def _strict_json(value: Any, source: str) -> Any:
    """A ledger column decoded by the bounded reader's strict JSON (depth, sizes, text)."""
    from active_memory.reader import decode, parse_json

    if isinstance(value, bytes):
        value = decode(value, source)
    if not isinstance(value, str):
        raise InvalidRecord(source, "expected JSON text")
    return parse_json(value, source)


def _one_run(
    connection: sqlite3.Connection, source: str, run_id: str, stored_json: Any
) -> ImportedRun:
    try:
        stored = _object(_strict_json(stored_json, source), "stored_json")
    except InvalidRecord as exc:
        raise _Skip(f"stored_json is not JSON: {exc.detail}") from None
    admitted = _object(stored.get("admitted"), "stored_json.admitted")
    snapshot = _object(stored.get("snapshot"), "stored_json.snapshot")
    phase = snapshot.get("phase")
    terminal = snapshot.get("terminal")
    if phase != "finished" or not isinstance(terminal, dict):
        raise _Skip(f"run is {phase or 'in an unknown phase'}, not finished")
    outcome = terminal.get("status")
    if outcome not in _OUTCOMES:
        raise _Skip(f"terminal status {outcome!r} is not one of {', '.join(_OUTCOMES)}")

    warnings: list[str] = []
    events, completions = _events(connection, source, run_id, warnings)
    graph = _object(admitted.get("graph"), "stored_json.admitted.graph")
    raw_source = admitted.get("source")
    source_info: dict[str, Any] = raw_source if isinstance(raw_source, dict) else {}
    data: dict[str, Any] = {
        "schema": RUN_SCHEMA,
        "run_id": run_id,
        "title": admitted.get("title") or snapshot.get("title"),
        "outcome": outcome,
        "seeded": _seeded(admitted, snapshot),
        "source": source_info,
        "graph": {"hash": graph_hash(graph), "ir": graph},
        "runtime": admitted.get("runtime"),
        "events": events,
        "completions": completions,
        "receipts": [],
    }
    repository = source_info.get("repository")
    if isinstance(repository, str) and repository:
        # Zeroshot names a source repository `OWNER/NAME` on GitHub (its delivery target).
        namespace = f"repo:github.com/{repository}"
        data["repository"] = {"namespace": namespace, "aliases": aliases_for(namespace)}
    else:
        warnings.append("no source repository: the record has no repository namespace")
    return ImportedRun(run_id, checked(data, f"{source} run {run_id}"), warnings)


def _seeded(admitted: dict[str, Any], snapshot: dict[str, Any]) -> bool:
    # This ledger version stores no seed marker; a successor admitted from an entry
    # checkpoint (`resumeFrom: {kind: checkpoint}`) replays seeds, a restart does not.
    for holder in (admitted, snapshot):
        resume = holder.get("resumeFrom")
        if isinstance(resume, dict) and resume.get("kind") == "checkpoint":
            return True
    return False


def _events(
    connection: sqlite3.Connection, source: str, run_id: str, warnings: list[str]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    rows = _rows(
        connection,
        source,
        "SELECT sequence, event_json FROM v2_run_events WHERE run_id = ? ORDER BY sequence",
        run_id,
    )
    events: list[dict[str, Any]] = []
    completions: dict[str, str] = {}
    unknown: dict[str, int] = {}
    for sequence, event_json in rows:
        try:
            event = _strict_json(event_json, "event")
        except InvalidRecord:
            raise _Skip(f"event {sequence} is not JSON") from None
        kind = event.get("kind") if isinstance(event, dict) else None
        if kind not in _KNOWN_EVENTS:
            unknown[str(kind)] = unknown.get(str(kind), 0) + 1
            continue
        events.append({"sequence": sequence, "event": event})
        if kind == "node_completed":
            _completion(event, completions)
    for kind, count in sorted(unknown.items()):
        warnings.append(f"dropped {count} event(s) of unknown kind {kind}")
    if not events:
        raise _Skip("the ledger holds no events for this run")
    return events, completions


def _completion(event: dict[str, Any], completions: dict[str, str]) -> None:
    completion = event.get("completion")
    if not isinstance(completion, dict):
        return
    reference = completion.get("reference")
    outcome = completion.get("outcome")
    if not isinstance(reference, dict) or not isinstance(outcome, dict):
        return
    output = outcome.get("output")
    execution = reference.get("execution")
    # Only a text output is "the agent's final text"; structured outputs stay in the event.
    if isinstance(output, str) and output.strip() and execution is not None:
        completions[str(execution)] = trim(output)
