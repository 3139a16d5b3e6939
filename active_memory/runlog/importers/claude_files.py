"""The files of one Claude Code session: the main transcript and its sub-agents' logs.

Layouts in use (all read by `claude.py`):

- 1.0.x: sub-agent (`Task`) entries are inline in the main file, `isSidechain: true`,
  one chain of `parentUuid` links per sub-agent run;
- 2.0.x: each sub-agent writes `agent-<agentId>.jsonl` beside the main file (same
  `sessionId`, every entry `isSidechain: true` with `agentId`);
- 2.1.x: `<sessionId>/subagents/agent-<agentId>.jsonl` (plus `agent-acompact-*.jsonl`,
  the compaction helper's own log, which is not a sub-agent of the user's work); the main
  file echoes each sub-agent's messages as `progress` entries (`data.type:
  agent_progress`, `data.agentId`).

A pre-pass reads the main file once as raw lines (no JSON decoding past its head) to
learn the session ID, the working folder, the sub-agent IDs it mentions, and whether the
file is itself a sub-agent's log. The sub-agent files found are then merged with the main
file in time order (`merged`), one line of each in memory at a time.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from active_memory.errors import InvalidRecord
from active_memory.reader import NotReadable, open_regular
from active_memory.runlog.importers.common import Skipped
from active_memory.runlog.importers.jsonl import MAX_LINE_BYTES, read_jsonl

_AGENT_FIELD = re.compile(rb'"agentId"\s*:\s*"([A-Za-z0-9_-]{1,64})"')
_AGENT_TEXT = re.compile(rb"agentId: ([A-Za-z0-9_-]{1,64})")
_HEAD_LINES = 200
_EPOCH = datetime.min.replace(tzinfo=UTC)


@dataclass(slots=True)
class SessionFiles:
    """What the pre-pass learned about a main transcript and the sub-agent logs beside it."""

    path: Path
    session_id: str
    cwd: str | None = None
    mentioned: set[str] = field(default_factory=set)
    agent_files: dict[str, Path] = field(default_factory=dict)
    """Sub-agent ID → its own log (2.0.x sibling or 2.1.x `subagents/` file)."""


@dataclass(frozen=True, slots=True)
class Line:
    """One entry of the merged stream; `agent` is set for a sub-agent file's entries."""

    number: int
    entry: dict[str, Any]
    agent: str | None = None
    source: str | None = None
    end: bool = False
    """True for the marker that follows a sub-agent file's last entry."""


def survey(path: Path) -> SessionFiles:
    """The pre-pass over the main file (see the module docstring); refuses a sub-agent's log."""
    session_id: str | None = None
    cwd: str | None = None
    mentioned: set[str] = set()
    first: dict[str, Any] | None = None
    try:
        # The bounded reader's open: a regular file only, never blocking on a FIFO.
        with open_regular(path) as handle:
            for index, raw in enumerate(_raw_lines(handle)):
                if index < _HEAD_LINES and (session_id is None or cwd is None or first is None):
                    entry = _decode(raw)
                    if entry is not None:
                        if first is None and isinstance(entry.get("sessionId"), str):
                            first = entry
                        if session_id is None and isinstance(entry.get("sessionId"), str):
                            session_id = entry["sessionId"]
                        if cwd is None and isinstance(entry.get("cwd"), str) and entry["cwd"]:
                            cwd = entry["cwd"]
                if b"agentId" in raw:
                    mentioned.update(m.decode() for m in _AGENT_FIELD.findall(raw))
                    mentioned.update(m.decode() for m in _AGENT_TEXT.findall(raw))
    except NotReadable as exc:
        raise InvalidRecord(str(path), exc.reason) from None
    except OSError as exc:
        raise InvalidRecord(
            str(path), f"cannot read the session log: {exc.strerror or exc}"
        ) from None
    if first is not None and first.get("isSidechain") is True and first.get("agentId"):
        _refuse_subagent_file(path, str(first.get("sessionId")), str(first["agentId"]))
    files = SessionFiles(path, session_id or path.stem, cwd, mentioned)
    files.agent_files = _agent_files(files)
    return files


def _refuse_subagent_file(path: Path, session_id: str, agent_id: str) -> None:
    if path.parent.name == "subagents":
        parent = path.parent.parent.parent / f"{session_id}.jsonl"
    else:
        parent = path.parent / f"{session_id}.jsonl"
    where = str(parent) if parent.is_file() else f"{parent} (not found beside it)"
    raise InvalidRecord(
        str(path),
        f"this is the log of sub-agent {agent_id} of Claude Code session {session_id}, not a "
        f"session: import the parent transcript instead, which joins its sub-agents: {where}",
    )


def _agent_files(files: SessionFiles) -> dict[str, Path]:
    found: dict[str, Path] = {}
    folder = files.path.parent / files.path.stem / "subagents"
    if folder.is_dir():
        for candidate in sorted(folder.glob("agent-*.jsonl")):
            agent_id = candidate.stem.removeprefix("agent-")
            # The compaction helper's log repeats the conversation; it is not a sub-agent.
            if not agent_id.startswith("acompact"):
                found[agent_id] = candidate
    for agent_id in sorted(files.mentioned):
        sibling = files.path.parent / f"agent-{agent_id}.jsonl"
        if agent_id not in found and sibling.is_file():
            found[agent_id] = sibling
    return found


def merged(files: SessionFiles, skipped: list[Skipped]) -> Iterator[Line]:
    """The main file and every sub-agent file, merged by time (stable within a file)."""
    streams = [_timed(_main(files.path, skipped), 0)]
    for index, (agent_id, agent_path) in enumerate(sorted(files.agent_files.items()), start=1):
        streams.append(_timed(_agent(agent_id, agent_path, files, skipped), index))
    for _, _, _, line in heapq.merge(*streams, key=lambda item: item[:3]):
        yield line


def _main(path: Path, skipped: list[Skipped]) -> Iterator[Line]:
    for number, entry in read_jsonl(path, skipped):
        yield Line(number, entry)


def _agent(
    agent_id: str, path: Path, files: SessionFiles, skipped: list[Skipped]
) -> Iterator[Line]:
    source = _relative_source(path, files.path)
    own: list[Skipped] = []
    last: dict[str, Any] = {}
    for number, entry in read_jsonl(path, own):
        if entry.get("sessionId") not in (None, files.session_id):
            own.append(Skipped("belongs to another session", line=number))
            break
        last = entry
        yield Line(number, entry, agent_id, source)
    skipped.extend(Skipped(f"{source}: {item.reason}", line=item.line) for item in own)
    yield Line(0, {"timestamp": last.get("timestamp")}, agent_id, source, end=True)


def _relative_source(path: Path, main: Path) -> str:
    try:
        return str(path.relative_to(main.parent))
    except ValueError:
        return str(path)


def _timed(lines: Iterator[Line], stream: int) -> Iterator[tuple[datetime, int, int, Line]]:
    # The merge key never goes back within one file: an entry without a time, or with an
    # earlier one, keeps the file's latest time, so each file's own order is kept.
    clock = _EPOCH
    for order, line in enumerate(lines):
        moment = parse_time(line.entry.get("timestamp"))
        if moment is not None and moment > clock:
            clock = moment
        yield clock, stream, order, line


def parse_time(value: Any) -> datetime | None:
    """An ISO time as an aware datetime (naive is UTC), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _raw_lines(handle: Any) -> Iterator[bytes]:
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while (rest := handle.readline(1024 * 1024)) and not rest.endswith(b"\n"):
                pass
            continue
        yield raw


def _decode(raw: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # not UTF-8, not JSON, an integer past the limit
        return None
    return entry if isinstance(entry, dict) else None
