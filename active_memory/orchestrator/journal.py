"""A small journal of postmortems: one JSON file per postmortem, written atomically.

`<zeroshot state dir>/active-memory/postmortems/<run>.json` (the run's first
postmortem; a rerun of the same run gets `<run>@2.json`, `@3`, …, so an earlier
postmortem's entry is never replaced: `attempt` says which) says that a postmortem
started (`state: running`, the latched outcome, the process ID) and how it ended
(`finished`, `failed`, `cancelled`, with its report's summary and usage, the run's
deliveries per lesson and every refused proposal, for `lessons stats`). A file left
`running` by a process that is gone is a postmortem interrupted by a crash or restart:
`interrupted_postmortems()` lists those, with their usage marked incomplete. While it
runs, the entry's `usage` is rewritten with the total spent so far (`spent`), so an
interrupted postmortem reports what it had spent up to its last request. Nothing of
an interrupted postmortem was published: the publish is one transaction.

A kill between the publish's COMMIT and the journal's end would leave a published
postmortem `running`. So each entry carries a random `publish_token`, and every publish
of that postmortem records it in the store in its own transaction (`PublishMark`).
`settle(journal, store)` (and `settled_interrupted_postmortems(store)`, what a listing
of interrupted postmortems should call) looks the token up: found, the entry is
rewritten `finished` ("published; the journal's end was lost"); absent, the postmortem
really was interrupted before it published.
"""

from __future__ import annotations

import json
import os
import secrets
import urllib.parse
from collections.abc import Mapping
from datetime import UTC, datetime
from glob import escape as glob_escape
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, ValidationError

from active_memory.atomic_files import write_atomically
from active_memory.credential_gate import mask_value
from active_memory.orchestrator.report import PostmortemReport, UsageReport
from active_memory.processes import pid_alive
from active_memory.quality.reasons import rejection_kinds
from active_memory.store.lesson_store import LessonStore
from active_memory.store.location import JOURNAL_FOLDER, journal_folder, state_dir
from active_memory.store.models import PublishMark

JOURNAL_SCHEMA: Final = "active-memory/postmortem-journal@1"
JournalState: TypeAlias = Literal["running", "finished", "failed", "cancelled"]
FAILED_STATUSES = frozenset({"failed", "timed_out"})
"""A specialist's statuses that mean its part of the postmortem was not done."""


def default_journal_dir(env: Mapping[str, str] | None = None) -> Path:
    """`<zeroshot state dir>/active-memory/postmortems`: the default store's journal."""
    return Path(state_dir(env)) / JOURNAL_FOLDER


def store_journal_dir(location: str, env: Mapping[str, str] | None = None) -> Path:
    """The journal of the store at `location` (`store.location.journal_folder`)."""
    return Path(journal_folder(location, env))


class RefusedProposal(BaseModel):
    """A refused proposal as the journal keeps it: who, why (kinds) and what it repeats."""

    model_config = ConfigDict(frozen=True)

    specialist: str
    title: str
    kinds: list[str]
    duplicate_of: str | None = None


class JournalEntry(BaseModel):
    """What the journal holds for one run's postmortem."""

    model_config = ConfigDict(frozen=True, extra="allow")

    schema_: Literal["active-memory/postmortem-journal@1"] = JOURNAL_SCHEMA
    run_id: str
    outcome: str  # the run's latched outcome, never changed by the postmortem
    state: JournalState
    pid: int
    started_at: str
    ended_at: str | None = None
    reason: str | None = None
    statuses: dict[str, str] = {}
    usage: UsageReport = UsageReport()
    deliveries: dict[str, int] = {}
    """Lesson ID → how many times the run delivered it (its record's `deliveries`)."""
    rejected: list[RefusedProposal] = []
    """Every refused discovery proposal of the report (reasons already masked)."""
    specialist_usage: dict[str, UsageReport] = {}
    """Each specialist's usage (the report's), for the web view's costs."""
    published: dict[str, int] = {}
    """The report's published counts (created, adapted, …, proposed)."""
    publish_token: int | None = None
    """What this postmortem's publish records in the store (`publish_mark`)."""
    attempt: int = 1
    """Which postmortem of the run this is (a rerun of a run gets the next number)."""

    def failed_specialists(self) -> list[str]:
        """The specialists that failed or timed out (their work was not published)."""
        return sorted(n for n, status in self.statuses.items() if status in FAILED_STATUSES)

    def verdict(self) -> str:
        """The state as people read it: a finished postmortem some of whose specialists
        failed is `partial`, not `finished`."""
        if self.state == "finished" and self.failed_specialists():
            return "partial"
        return self.state

    def publish_mark(self) -> PublishMark | None:
        """The mark this postmortem's publishes leave in the store."""
        if self.publish_token is None:
            return None
        return PublishMark(key=mark_key(self.run_id), token=self.publish_token)

    def to_json(self) -> dict[str, Any]:
        """The file's JSON content."""
        data = self.model_dump(mode="json")
        data["schema"] = data.pop("schema_")
        return data


class InterruptedPostmortem(BaseModel):
    """A postmortem that started and never recorded an end (crash, kill, restart)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    outcome: str
    started_at: str
    pid: int
    usage: UsageReport  # what was recorded; `complete` is always False
    path: Path


def _failures(report: PostmortemReport) -> str | None:
    failed = [
        f"{name}: {s.status}" + (f" ({s.reason})" if s.reason else "")
        for name, s in report.specialists.items()
        if s.status in ("failed", "timed_out")
    ]
    return "; ".join(failed) or None


def mark_key(run_id: str) -> str:
    """The store key of a run's postmortem publish mark."""
    return f"postmortem:{run_id}"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _file_name(run_id: str, attempt: int = 1) -> str:
    # Run IDs are opaque strings: quote everything but a safe alphabet so any ID is one
    # file name, and two IDs never share one; `@` is always quoted in an ID, so the
    # attempt's `@N` never makes one run's name another's.
    quoted = urllib.parse.quote(run_id, safe="-_.")
    return f"{quoted}.json" if attempt == 1 else f"{quoted}@{attempt}.json"


class Journal:
    """The journal folder; every write replaces one run's file atomically."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else default_journal_dir()

    @classmethod
    def of(cls, store_location: str, directory: Path | None = None) -> Journal:
        """The journal in `directory`, else the one of the store at `store_location`."""
        return cls(directory if directory is not None else store_journal_dir(store_location))

    def path(self, run_id: str, attempt: int = 1) -> Path:
        """The file of `run_id`'s postmortem number `attempt` (1: its first)."""
        return self.directory / _file_name(run_id, attempt)

    def write(self, entry: JournalEntry, *, create: bool = False) -> None:
        """Replace the postmortem's file with `entry` (write to a temporary file, fsync,
        rename); `create`: only if there is none yet (`FileExistsError` otherwise)."""
        # Credentials masked: a reason or a problem may quote what a model answered.
        document = mask_value(entry.to_json())
        data = json.dumps(document, indent=1, sort_keys=True).encode("utf-8")
        write_atomically(
            self.path(entry.run_id, entry.attempt), data, mode=0o600, replace=not create
        )

    def attempts(self, run_id: str) -> list[int]:
        """The numbers of `run_id`'s postmortems in the journal, in order."""
        found = [1] if self.path(run_id).exists() else []
        prefix = _file_name(run_id)[: -len(".json")] + "@"
        if self.directory.is_dir():
            for path in self.directory.glob(f"{glob_escape(prefix)}*.json"):
                number = path.name[len(prefix) : -len(".json")]
                if number.isdigit() and int(number) > 1:
                    found.append(int(number))
        return sorted(found)

    def started(self, run_id: str, outcome: str) -> JournalEntry:
        """Record that a postmortem of `run_id` started, in a file of its own (a rerun
        of the run never replaces an earlier postmortem's entry); the entry written."""
        attempt = (self.attempts(run_id) or [0])[-1] + 1
        while True:
            entry = JournalEntry(
                run_id=run_id,
                outcome=outcome,
                state="running",
                pid=os.getpid(),
                started_at=_now(),
                publish_token=secrets.randbits(62),
                attempt=attempt,
            )
            try:
                self.write(entry, create=True)
            except FileExistsError:  # another process started one at the same moment
                attempt += 1
                continue
            return entry

    def ended(
        self,
        started: JournalEntry,
        state: JournalState,
        *,
        report: PostmortemReport | None = None,
        reason: str | None = None,
        deliveries: Mapping[str, int] | None = None,
        usage: UsageReport | None = None,
    ) -> None:
        """Record how it ended, with the report's statuses, usage and refused proposals
        when there is one (else `usage`, what was spent until the end), and the run's
        `deliveries` per lesson."""
        update: dict[str, Any] = {"state": state, "ended_at": _now(), "reason": reason}
        if deliveries is not None:
            update["deliveries"] = dict(deliveries)
        if usage is not None:
            update["usage"] = usage
        if report is not None:
            update["statuses"] = {n: s.status for n, s in report.specialists.items()}
            # A finished postmortem whose specialists failed says why (issue 29).
            update["reason"] = reason or _failures(report)
            update["usage"] = report.usage
            update["specialist_usage"] = {n: s.usage for n, s in report.specialists.items()}
            update["published"] = report.published.model_dump()
            update["rejected"] = [
                RefusedProposal(
                    specialist=name,
                    title=r.title,
                    kinds=rejection_kinds(r.reasons),
                    duplicate_of=r.duplicate_of,
                )
                for name, specialist in report.specialists.items()
                for r in specialist.rejected or []
            ]
        self.write(started.model_copy(update=update))

    def spent(self, started: JournalEntry, usage: UsageReport) -> None:
        """Record what the running postmortem has spent so far (its entry stays
        `running`); a crash leaves this figure for `interrupted()` to report."""
        self.write(started.model_copy(update={"usage": usage}))

    def read(self, run_id: str) -> JournalEntry | None:
        """The run's latest postmortem's entry, or None if there is none or it is
        unreadable."""
        attempts = self.attempts(run_id)
        return _read(self.path(run_id, attempts[-1])) if attempts else None

    def entries(self) -> list[JournalEntry]:
        """Every readable entry, oldest start first (unreadable files are skipped)."""
        if not self.directory.is_dir():
            return []
        found = [_read(path) for path in self.directory.glob("*.json")]
        return sorted((e for e in found if e is not None), key=lambda e: (e.started_at, e.run_id))

    def interrupted(self) -> list[InterruptedPostmortem]:
        """Postmortems left `running` by a process that no longer exists, by run ID."""
        if not self.directory.is_dir():
            return []
        found: list[InterruptedPostmortem] = []
        for path in sorted(self.directory.glob("*.json")):
            entry = _read(path)
            if entry is None or entry.state != "running" or pid_alive(entry.pid):
                continue
            found.append(
                InterruptedPostmortem(
                    run_id=entry.run_id,
                    outcome=entry.outcome,
                    started_at=entry.started_at,
                    pid=entry.pid,
                    usage=entry.usage.model_copy(update={"complete": False}),
                    path=path,
                )
            )
        return sorted(found, key=lambda x: x.run_id)


async def settle(journal: Journal, store: LessonStore) -> list[InterruptedPostmortem]:
    """Record as finished every dead `running` entry whose publish the store holds;
    return the postmortems that were really interrupted (nothing published)."""
    import anyio.to_thread

    remaining: list[InterruptedPostmortem] = []
    for found in await anyio.to_thread.run_sync(journal.interrupted):
        entry = await anyio.to_thread.run_sync(_read, found.path)
        mark = entry.publish_mark() if entry is not None else None
        if entry is None or mark is None or await store.publish_mark(mark.key) != mark.token:
            remaining.append(found)
            continue
        settled = entry.model_copy(
            update={
                "state": "finished",
                "ended_at": _now(),
                "reason": "published; the process ended before the journal recorded it",
                "usage": entry.usage.model_copy(update={"complete": False}),
            }
        )
        await anyio.to_thread.run_sync(journal.write, settled)
    return remaining


async def settled_interrupted_postmortems(
    store: LessonStore, directory: Path | None = None
) -> list[InterruptedPostmortem]:
    """`interrupted_postmortems`, after `settle`: those whose publish committed are
    recorded as finished and not listed."""
    return await settle(Journal.of(store.location, directory), store)


def _read(path: Path) -> JournalEntry | None:
    from active_memory.errors import UsageError
    from active_memory.reader import load_json

    try:
        data = load_json(path, "postmortem journal")
    except (OSError, UsageError):
        return None
    if not isinstance(data, dict):
        return None
    data["schema_"] = data.pop("schema", JOURNAL_SCHEMA)
    try:
        return JournalEntry.model_validate(data)
    except ValidationError:
        return None


def interrupted_postmortems(directory: Path | None = None) -> list[InterruptedPostmortem]:
    """Postmortems that started and never ended (their process is gone): each reported as
    interrupted, usage incomplete, the run's latched outcome kept."""
    return Journal(directory).interrupted()
