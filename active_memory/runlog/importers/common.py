"""What every importer returns, and the pieces they share (repository identity, checks)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from active_memory.runlog.record import parse_run_record

MAX_COMPLETION_CHARS = 4000
"""A completion (an execution's final text) is trimmed to this many characters."""


@dataclass(slots=True)
class ImportedRun:
    """One run record built by an importer, validated, ready to write."""

    run_id: str
    record: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    report: dict[str, Any] | None = None
    """Session importers: what the log held (docs/importers.md, `import --json`)."""
    summary: str | None = None
    """Session importers: the report in one line for a person."""
    private: tuple[str, ...] = ()
    """Session importers: the `<private>` passages the prompts held, kept in memory only
    (never written), so that what is joined later (hook receipts) is masked too."""
    linked: dict[str, str] = field(default_factory=dict)
    """Session importers: other provider sessions of the same run (OpenCode's sub-agent
    sessions, Hermes' continuations and sub-agents), each with the node its hook records
    are filed under; their hooks' receipts and deliveries are joined too."""

    @property
    def events(self) -> int:
        """How many events the record holds."""
        return len(self.record.get("events", ()))

    @property
    def receipts(self) -> int:
        """How many receipts the record holds."""
        return len(self.record.get("receipts", ()))


@dataclass(frozen=True, slots=True)
class Skipped:
    """Something not imported: a whole run (`run_id`) or one line of a log (`line`)."""

    reason: str
    run_id: str | None = None
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The `skipped` entry of `import --json`."""
        where: dict[str, Any] = {"run_id": self.run_id} if self.run_id is not None else {}
        if self.line is not None:
            where["line"] = self.line
        return {**where, "reason": self.reason}


@dataclass(slots=True)
class ImportResult:
    """Everything one `import` produced: run records and what was skipped and why."""

    runs: list[ImportedRun] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def checked(data: dict[str, Any], source: str) -> dict[str, Any]:
    """Validate a built record against `active-memory/run@1`; return it with bounded receipts
    and tool failures.

    The record is written as built (the graph IR byte-for-byte as zeroshot stored it);
    only the receipts and tool failures are replaced by the model's normalised, capped lists.
    """
    record = parse_run_record(data, source)
    out = dict(data)
    if "receipts" in out:
        out["receipts"] = [
            r.model_dump(mode="json", exclude_none=True, by_alias=True) for r in record.receipts
        ]
        if record.receipts_dropped:
            out["receipts_dropped"] = record.receipts_dropped
    if "tool_failures" in out:
        out["tool_failures"] = [
            f.model_dump(mode="json", exclude_none=True, by_alias=True)
            for f in record.tool_failures
        ]
        out["tool_failures_dropped"] = record.tool_failures_dropped
    return out


def trim(text: str, limit: int = MAX_COMPLETION_CHARS) -> str:
    """An execution's final text (or a prompt), whitespace-trimmed and bounded."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


_SCP_REMOTE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>[^/].*)$")


def namespace_from_remote(remote: str) -> str | None:
    """`repo:HOST/OWNER/NAME` from a git remote URL (`git@github.com:acme/api.git`, https, ssh)."""
    text = remote.strip()
    if not text:
        return None
    if "://" in text:
        rest = text.split("://", 1)[1]
        host_part, _, path = rest.partition("/")
        host = host_part.rsplit("@", 1)[-1].split(":", 1)[0]
    elif match := _SCP_REMOTE.match(text):
        host, path = match["host"], match["path"]
    else:
        return None
    path = path.strip("/")
    path = path[:-4] if path.endswith(".git") else path
    if not host or not path:
        return None
    return f"repo:{host.lower()}/{path}"


def local_namespace(root: str) -> str:
    """The namespace of a checkout without a known remote: recall's one rule where the
    checkout is on this machine (`repo:local/<main worktree path>`, shared by its
    worktrees), else the recorded folder (`import --repository` can name it)."""
    from active_memory.recall.environment import repository_namespace

    return repository_namespace(root) or "repo:local/" + Path(root).as_posix().lstrip("/")


def aliases_for(namespace: str) -> list[str]:
    """Short names a person may type for the repository: `OWNER/NAME` and `NAME`."""
    path = namespace.removeprefix("repo:").split("/", 1)[-1]
    parts = [p for p in path.split("/") if p]
    if namespace.startswith("repo:local/") or not parts:
        return [parts[-1]] if parts else []
    return list(dict.fromkeys(["/".join(parts[-2:]), parts[-1]]))
