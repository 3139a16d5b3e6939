"""A run record from a Gemini CLI session log
(`~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`, Gemini CLI 0.6x).

Read, streamed:

- the first line {`sessionId`, `projectHash`, `startTime`, `kind`}: the session;
- `{"$set": {…}}` lines update the session's metadata; a `messages` list there carries
  the session context, where the working folder is named (`Workspace Directories`);
- `user` messages: `content` parts with `text` are a prompt (opens a turn); parts with
  `functionResponse` are tool results sent back (their outcome is on the tool call);
- `gemini` messages: `content` text, `model`, and `toolCalls` [{`id`, `name`, `args`,
  `status`, `result`}]; the same message is written again once its calls finish, so a
  call is counted once by its `id`; a `status` other than `success` is a failed call,
  and so is a shell command whose output says `Exit Code: N` (not 0), which Gemini
  CLI records as a `success` of the tool (0.61);
- `error` / `warning` / `info` messages: an `error` ends the turn with a classified error.

The run's ID is `gemini-<session id>`, the key the AfterTool hook's records use.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from active_memory.runlog.importers.agent_logs import LogReader, adopt_cwd, finish, text_of
from active_memory.runlog.importers.common import ImportResult, Skipped
from active_memory.runlog.importers.jsonl import read_jsonl
from active_memory.runlog.importers.session import classify_error

_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)\s*$", re.M)
_WRAPPER = re.compile(r"</?untrusted_context>")
_WORKSPACE = re.compile(r"Workspace Directories:\**\s*\n\s*-\s*(/[^\n]+)")
_CONTEXT = "<session_context>"


def import_session(path: str | Path) -> ImportResult:
    """One run record for the Gemini CLI session log; malformed lines are in `skipped`."""
    result = ImportResult()
    reader = LogReader()
    for line, entry in read_jsonl(path, result.skipped):
        if reader.run is None:
            session = entry.get("sessionId")
            if not isinstance(session, str) or not session:
                result.skipped.append(Skipped("not a Gemini CLI session header", line=line))
                continue
            reader.start("gemini", session, None)
            continue
        if isinstance(entry.get("$set"), dict):
            messages = entry["$set"].get("messages")
            for message in messages if isinstance(messages, list) else []:
                if isinstance(message, dict):
                    _context(reader, message)
            continue
        _message(reader, entry)
    return finish(reader, path, result)


def _context(reader: LogReader, message: dict[str, Any]) -> None:
    run = reader.run
    assert run is not None
    text = text_of(message.get("content"))
    if run.cwd is None and (found := _WORKSPACE.search(text)):
        adopt_cwd(run, found.group(1).strip())


def _message(reader: LogReader, entry: dict[str, Any]) -> None:
    run = reader.run
    assert run is not None
    kind = entry.get("type")
    at = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
    run.seen(at)
    if kind == "user":
        content = entry.get("content")
        parts = content if isinstance(content, list) else []
        if any(isinstance(p, dict) and "functionResponse" in p for p in parts):
            reader.ignore("tool results sent back")
            return
        text = text_of(content)
        if text.lstrip().startswith(_CONTEXT):
            _context(reader, entry)
            reader.ignore("session context")
        elif text.strip():
            run.open_turn(at, text)
    elif kind == "gemini":
        if isinstance(entry.get("model"), str):
            run.model = entry["model"]
        text = text_of(entry.get("content"))
        if text.strip():
            run.said(text, at)
        calls = entry.get("toolCalls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                _call(reader, call, at)
    elif kind == "error":
        detail = text_of(entry.get("content")) or "error"
        run.ended(classify_error(detail), at, detail[:200])
    else:
        reader.ignore(f"{kind} message" if isinstance(kind, str) else "untyped entry")


def _call(reader: LogReader, call: dict[str, Any], at: str | None) -> None:
    call_id = str(call.get("id"))
    fresh = call_id not in reader.calls
    reader.call(call_id, call["name"], call.get("args"), at)
    status = call.get("status")
    if not fresh or status is None:
        return
    done = call.get("timestamp") if isinstance(call.get("timestamp"), str) else at
    output = _result_text(call)
    # A shell command that exits non-zero is still a `success` of the tool: its exit code
    # is only in the output the model was sent (`Exit Code: 1`).
    found = _EXIT_CODE.search(output)
    exit_code = int(found.group(1)) if found else None
    failed = status != "success" or (exit_code is not None and exit_code != 0)
    detail = ""
    if failed:
        detail = output if status == "success" else f"{status}: {output}"
    reader.result(call_id, done, failed=failed, detail=detail, declined=status == "cancelled",
                  exit_code=exit_code)  # fmt: skip


def _result_text(call: dict[str, Any]) -> str:
    """A call's output as the model was sent it (`functionResponse.response.output` or
    `error`, without the `<untrusted_context>` wrapper and the `Output:` label), else
    what the CLI displayed."""
    result = call.get("result")
    for part in result if isinstance(result, list) else []:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        answer = response.get("response") if isinstance(response, dict) else None
        if isinstance(answer, dict):
            for key in ("error", "output"):
                if isinstance(answer.get(key), str) and answer[key].strip():
                    text = _WRAPPER.sub("", str(answer[key])).strip()
                    return text.removeprefix("Output:").strip()
    return str(call.get("resultDisplay") or "")
