"""A run record from a Pi session log (`~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`).

Read, streamed (Pi 0.7x, session format version 3; the package's docs/session-format.md):

- `session` {`id`, `cwd`}: the session; `model_change` {`provider`, `modelId`};
- `message` {`message`: {`role`, `content`, …}}: `user` is a prompt (opens a turn);
  `assistant` content holds `text` and `toolCall` {`id`, `name`, `arguments`} parts, and
  its `stopReason` `error` (with `errorMessage`) ends the turn with a classified error,
  `aborted` as interrupted; `toolResult` {`toolCallId`, `toolName`, `isError`, `content`}
  is a tool's outcome;
- anything else (thinking level, compaction, labels, custom entries) is counted in the
  report and skipped.

The run's ID is `pi-<session id>`, the key our Pi extension's records use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from active_memory.runlog.importers.agent_logs import LogReader, finish, text_of
from active_memory.runlog.importers.common import ImportResult, Skipped
from active_memory.runlog.importers.jsonl import read_jsonl
from active_memory.runlog.importers.session import classify_error


def import_session(path: str | Path) -> ImportResult:
    """One run record for the Pi session log; malformed lines are reported in `skipped`."""
    result = ImportResult()
    reader = LogReader()
    for line, entry in read_jsonl(path, result.skipped):
        kind = entry.get("type")
        at = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        if kind == "session":
            if reader.run is None and isinstance(entry.get("id"), str):
                cwd = entry.get("cwd")
                reader.start("pi", entry["id"], cwd if isinstance(cwd, str) else None)
            else:
                reader.ignore("session header of a forked or resumed session")
            continue
        if reader.run is None:
            result.skipped.append(Skipped(f"{kind} entry before the session header", line=line))
            continue
        reader.run.seen(at)
        if kind == "model_change":
            if isinstance(entry.get("modelId"), str):
                reader.run.model = entry["modelId"]
            if isinstance(entry.get("provider"), str):
                reader.run.provider = entry["provider"]
        elif kind == "message" and isinstance(entry.get("message"), dict):
            _message(reader, entry["message"], at)
        else:
            reader.ignore(f"{kind} entry" if isinstance(kind, str) else "untyped entry")
    return finish(reader, path, result)


def _message(reader: LogReader, message: dict[str, Any], at: str | None) -> None:
    run = reader.run
    assert run is not None
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        run.open_turn(at, text_of(content))
    elif role == "assistant":
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                run.said(part["text"], at)
            elif part.get("type") == "toolCall" and isinstance(part.get("name"), str):
                reader.call(str(part.get("id")), part["name"], part.get("arguments"), at)
        stop = message.get("stopReason")
        if stop == "error":
            detail = str(message.get("errorMessage") or "error")
            run.ended(classify_error(detail), at, detail[:200])
        elif stop == "aborted":
            run.ended("interrupted", at, "aborted")
    elif role == "toolResult":
        failed = message.get("isError") is True
        details = message.get("details")
        code = details.get("exitCode") if isinstance(details, dict) else None
        reader.result(str(message.get("toolCallId")), at, failed=failed,
                      detail=text_of(content) if failed else "",
                      exit_code=code if isinstance(code, int) else None)  # fmt: skip
    else:
        reader.ignore(f"{role} message" if isinstance(role, str) else "message")
