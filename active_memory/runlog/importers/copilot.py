"""A run record from a Copilot CLI session
(`~/.copilot/session-state/<session id>/events.jsonl`, Copilot CLI 1.0.x).

Read, streamed (PATH is the `events.jsonl` or its session folder):

- `session.start` {`sessionId`, `selectedModel`, `context`: {`cwd`, `gitRoot`,
  `branch`}}: the session;
- `user.message` {`content`}: a prompt (opens a turn);
- `assistant.message` {`content`, `model`, `toolRequests`: [{`toolCallId`, `name`,
  `arguments`}]}: what the agent said and the tools it called;
- `tool.execution_complete` {`toolCallId`, `success`, `error`?, `result`,
  `shellExecution` {`exitCode`}}: a tool's outcome (a shell command that exits non-zero
  is a `success` of the tool with a non-zero `exitCode`: a failed call);
- `session.error` {`message`}: ends the turn with a classified error; `abort`: the
  user interrupted it;
- everything else (hook runs, usage records, turn markers, system messages) is counted
  in the report and skipped.

The run's ID is `copilot-<session id>`, the key the preToolUse hook's records use.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from active_memory.runlog.importers.agent_logs import LogReader, finish, text_of
from active_memory.runlog.importers.common import ImportResult, Skipped
from active_memory.runlog.importers.jsonl import read_jsonl
from active_memory.runlog.importers.session import classify_error

EVENTS_FILE = "events.jsonl"
_SHELL_TAIL = re.compile(r"<shellId: \S+ completed with exit code -?\d+>\s*$")


def events_path(path: str | Path) -> Path:
    """`PATH/events.jsonl` when PATH is a session folder, else PATH."""
    candidate = Path(path)
    return candidate / EVENTS_FILE if candidate.is_dir() else candidate


def import_session(path: str | Path) -> ImportResult:
    """One run record for the Copilot CLI session; malformed lines are in `skipped`."""
    source = events_path(path)
    result = ImportResult()
    reader = LogReader()
    for line, entry in read_jsonl(source, result.skipped):
        kind = entry.get("type")
        data = entry.get("data")
        at = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        if not isinstance(data, dict):
            result.skipped.append(Skipped(f"{kind} event without a data object", line=line))
            continue
        if kind == "session.start" and reader.run is None:
            _start(reader, data)
            continue
        if reader.run is None:
            result.skipped.append(Skipped(f"{kind} event before session.start", line=line))
            continue
        reader.run.seen(at)
        _event(reader, str(kind), data, at)
    return finish(reader, source, result)


def _start(reader: LogReader, data: dict[str, Any]) -> None:
    session = data.get("sessionId")
    if not isinstance(session, str) or not session:
        return
    raw = data.get("context")
    context: dict[str, Any] = raw if isinstance(raw, dict) else {}
    cwd = context.get("cwd")
    run = reader.start("copilot", session, cwd if isinstance(cwd, str) else None)
    if isinstance(context.get("branch"), str):
        run.branch = context["branch"] or None
    if isinstance(data.get("selectedModel"), str):
        run.model = data["selectedModel"]


def _event(reader: LogReader, kind: str, data: dict[str, Any], at: str | None) -> None:
    run = reader.run
    assert run is not None
    if kind == "user.message":
        run.open_turn(at, text_of(data.get("content")))
    elif kind == "assistant.message":
        if isinstance(data.get("model"), str):
            run.model = data["model"]
        text = text_of(data.get("content"))
        if text.strip():
            run.said(text, at)
        requests = data.get("toolRequests")
        for request in requests if isinstance(requests, list) else []:
            if isinstance(request, dict) and isinstance(request.get("name"), str):
                reader.call(str(request.get("toolCallId")), request["name"],
                            request.get("arguments"), at)  # fmt: skip
    elif kind == "tool.execution_complete":
        shell = data.get("shellExecution")
        code = shell.get("exitCode") if isinstance(shell, dict) else None
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        # A shell command that exits non-zero is a `success` of the tool (1.0.102): its
        # exit code is in `shellExecution`.
        failed = data.get("success") is False or (exit_code is not None and exit_code != 0)
        detail = ""
        declined = False
        if failed and data.get("success") is not False:
            result = data.get("result")
            output = result.get("content") if isinstance(result, dict) else None
            detail = _SHELL_TAIL.sub("", output) if isinstance(output, str) else ""
        elif failed:
            error = data.get("error")
            detail = text_of(error.get("message") if isinstance(error, dict) else error)
            code = error.get("code") if isinstance(error, dict) else None
            declined = code in ("rejected", "denied", "cancelled", "aborted")
            result = data.get("result")
            output = result.get("content") if isinstance(result, dict) else None
            if isinstance(output, str) and output.strip() and output.strip() not in detail:
                detail = f"{detail}\n{output}" if detail else output
        reader.result(str(data.get("toolCallId")), at, failed=failed, detail=detail,
                      declined=declined, exit_code=exit_code)  # fmt: skip
    elif kind == "session.error":
        detail = str(data.get("message") or data.get("errorType") or "error")
        run.ended(classify_error(detail), at, detail[:200])
    elif kind == "abort":
        run.ended("interrupted", at, str(data.get("reason") or "aborted"))
    else:
        reader.ignore(f"{kind} event")
