"""A run record from a Codex session log (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Two layouts are read, streamed line by line:

- **current** (the envelope `{timestamp, type, payload}`, 0.2x to 0.171):
  - `session_meta`: `id`, `cwd`, `model_provider`, `git` {`commit_hash`, `branch`,
    `repository_url`}; `turn_context`: `cwd`, `model`;
  - `event_msg`: `task_started`/`turn_started` open a turn, `user_message` (0.171:
    `item_completed` with a `UserMessage` item) is the prompt (opens a turn when none
    is waiting for it), `agent_message` is the agent
    speaking, `task_complete` {`last_agent_message`} is the turn's answer (with an
    `error` {`message`} it is a failed turn, classified as `error` is), `turn_aborted`
    {`reason`} (`interrupted`/`replaced`: the user's decision; others unclassified),
    `error` {`message`} (classified: timeout, crash, refusal, unknown); `stream_error`
    is a retry notice; the rest (reasoning, token counts, exec/MCP begin/end echoes of
    the response items) carry nothing the record needs;
  - `response_item`: `message` (assistant text), `function_call` {`name`, `arguments`
    (a JSON string), `call_id`}: `shell`, `shell_command`, `exec_command`, `write_stdin`,
    `apply_patch`, `read_file`/`list_dir`/`grep_files`/`view_image`, MCP tools
    (`server__tool`); `custom_tool_call` (`apply_patch`), `local_shell_call`,
    `web_search_call`, and the `*_output` items that show failures (codex_output.py);
  - `compacted`: a compaction summary, never a prompt.
- **early** (before the envelope): a first line `{id, timestamp, instructions, git}`,
  then bare response items (`message` with role `user` is the prompt) and
  `{record_type: "state"}` lines.

When the log has turn lifecycle events, a turn is answered only by its `task_complete`:
a turn without one (log cut off, process killed) is interrupted, never `verified`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from active_memory.runlog.importers.codex_output import read_output
from active_memory.runlog.importers.common import ImportResult, Skipped
from active_memory.runlog.importers.jsonl import read_jsonl, repository_of
from active_memory.runlog.importers.report import add_skipped
from active_memory.runlog.importers.session import SessionRun, cd_targets, classify_error

_PATCH_HEADER = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$", re.M)
_CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "# AGENTS.md instructions",
    "<user_shell_command>",
    "<turn_aborted>",
)
_ENV_CWD = re.compile(r"<cwd>([^<\n]+)</cwd>")
_USER_ABORTS = ("interrupted", "replaced")
_ENVELOPE = ("session_meta", "turn_context", "event_msg", "response_item", "compacted")
_PATH_KEYS = ("path", "file_path", "dir_path", "filePath", "directory")
_MAX_REASONS = 40


def import_rollout(path: str | Path) -> ImportResult:
    """One run record for the rollout; malformed lines are reported in `skipped`."""
    source = str(path)
    result = ImportResult()
    lines = read_jsonl(path, result.skipped)
    reader: _Reader | None = None
    for line, entry in lines:
        if reader is None:
            reader = _Reader(_run_for(entry, Path(path)), early=_is_early(entry))
        reader.entry(line, entry, result.skipped)
    if reader is None:
        result.skipped.append(Skipped("no user turn in the session log", run_id=None))
        return result
    run = reader.run
    if run.turns == 0:
        result.skipped.append(Skipped("no user turn in the session log", run_id=run.run_id))
        return result
    imported = run.build(source, [])
    add_skipped(imported, result.skipped)
    result.runs.append(imported)
    return result


def _is_early(first: dict[str, Any]) -> bool:
    return "payload" not in first and first.get("type") not in _ENVELOPE and "id" in first


def _run_for(first: dict[str, Any], path: Path) -> SessionRun:
    meta: dict[str, Any] = {}
    if first.get("type") == "session_meta" and isinstance(first.get("payload"), dict):
        meta = first["payload"]
    elif _is_early(first):
        meta = first
    session_id = meta.get("id") if isinstance(meta.get("id"), str) else path.stem
    run = SessionRun(harness="codex", run_id=f"codex-{session_id}")
    _apply_meta(run, meta)
    return run


def _apply_meta(run: SessionRun, meta: dict[str, Any]) -> None:
    cwd = meta.get("cwd")
    raw_git = meta.get("git")
    git: dict[str, Any] = raw_git if isinstance(raw_git, dict) else {}
    if isinstance(cwd, str) and cwd:
        run.cwd = cwd
        run.root, local_remote = repository_of(cwd)
        run.remote = local_remote
    if isinstance(git.get("repository_url"), str) and git["repository_url"]:
        run.remote = git["repository_url"]  # what the session itself recorded wins
    if isinstance(git.get("branch"), str):
        run.branch = git["branch"] or None
    if isinstance(git.get("commit_hash"), str):
        run.revision = git["commit_hash"] or None
    if isinstance(meta.get("model_provider"), str):
        run.provider = meta["model_provider"]


class _Reader:
    """Turn boundaries and tool calls of one rollout."""

    def __init__(self, run: SessionRun, *, early: bool) -> None:
        self.run = run
        self.early = early
        self.cwd = run.cwd
        self.calls: dict[str, str] = {}
        # Unified exec: a session still running → the call that started it, whose exit
        # code a later `write_stdin` output reports.
        self.sessions: dict[str, tuple[str, dict[str, Any]]] = {}
        self.started: dict[str, tuple[str, dict[str, Any]]] = {}
        self.prompted = True  # whether the open turn already has its user message
        self.meta_seen = False

    def entry(self, line: int, entry: dict[str, Any], skipped: list[Skipped]) -> None:
        if self.early:
            self._early(entry)
            return
        kind = entry.get("type")
        if kind not in _ENVELOPE:
            self._ignore(f"{kind if isinstance(kind, str) else 'untyped'} entry")
            return
        payload = entry.get("payload")
        if not isinstance(payload, dict):
            skipped.append(Skipped(f"{kind} entry without a payload object", line=line))
            return
        at = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        self.run.seen(at)
        if kind == "session_meta":
            if self.meta_seen:
                self._ignore("session_meta of a resumed or forked session")
            self.meta_seen = True
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                self.run.model = payload["model"]
            if isinstance(payload.get("cwd"), str):
                self.cwd = payload["cwd"]
        elif kind == "event_msg":
            self.event(payload, at)
        elif kind == "response_item":
            self.item(payload, at)
        else:
            self._ignore("compaction summary")

    def _early(self, entry: dict[str, Any]) -> None:
        if "record_type" in entry:
            self._ignore("state line")
            return
        if not self.meta_seen and "id" in entry and "type" not in entry:
            self.meta_seen = True
            return
        at = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        self.run.seen(at)
        self.item(entry, at)

    def _ignore(self, reason: str) -> None:
        ignored = self.run.report.ignored
        if reason not in ignored and len(ignored) >= _MAX_REASONS:
            reason = "other entries"
        ignored[reason] += 1

    # --- events ------------------------------------------------------------------

    def event(self, payload: dict[str, Any], at: str | None) -> None:
        kind = payload.get("type")
        if kind in ("task_started", "turn_started"):
            # This version records when a turn completes: only that answers a turn.
            self.run.explicit_answers = True
            self.run.open_turn(at)
            self.prompted = False
        elif kind == "user_message" or _is_user_item(payload):
            # 0.171 records the prompt as `item_completed` {item: UserMessage}; earlier
            # versions as `user_message`. Never both for one prompt.
            message = payload.get("message")
            text = message if isinstance(message, str) else _item_text(payload)
            if text.lstrip().startswith(_CONTEXT_PREFIXES):
                self._ignore("context message")
                return
            if self.prompted or not self.run.in_turn:
                self.run.open_turn(at, text)
            else:
                self.run.prompt_seen(text)
            self.prompted = True
        elif kind == "agent_message" and isinstance(payload.get("message"), str):
            self.run.said(payload["message"], at)
        elif kind in ("task_complete", "turn_complete"):
            failed = payload.get("error")
            if self.run.in_turn and isinstance(failed, dict):
                # 0.171 records a failed turn (HTTP error, idle stream) only here.
                message = str(failed.get("message") or "error")
                self.run.ended(classify_error(message), at, message[:200])
            elif self.run.in_turn:
                last = payload.get("last_agent_message")
                self.run.answered(at, last if isinstance(last, str) else None)
        elif kind == "turn_aborted":
            reason = str(payload.get("reason") or "")
            if reason in _USER_ABORTS:
                self.run.ended("interrupted", at, f"aborted: {reason}")
            else:
                self.run.ended("unknown", at, f"aborted: {reason or 'no reason given'}")
        elif kind == "error":
            message = str(payload.get("message") or "error")
            self.run.ended(classify_error(message), at, message[:200])
        else:
            self._ignore(f"event_msg {kind}" if isinstance(kind, str) else "event_msg")

    # --- response items ----------------------------------------------------------

    def item(self, payload: dict[str, Any], at: str | None) -> None:
        kind = payload.get("type")
        if kind == "message":
            self._message(payload, at)
        elif kind == "function_call" and isinstance(payload.get("name"), str):
            arguments = _arguments(payload.get("arguments"))
            self._call(payload, payload["name"], at, *_function_paths(arguments, self.cwd),
                       arguments)  # fmt: skip
        elif kind == "custom_tool_call" and isinstance(payload.get("name"), str):
            raw = payload.get("input")
            paths = _PATCH_HEADER.findall(raw) if isinstance(raw, str) else []
            self._call(payload, payload["name"], at, paths, self.cwd, {"input": raw})
        elif kind == "local_shell_call":
            raw_action = payload.get("action")
            action: dict[str, Any] = raw_action if isinstance(raw_action, dict) else {}
            args = {"command": action.get("command"), "workdir": action.get("working_directory")}
            self._call(payload, "local_shell", at, *_function_paths(args, self.cwd), args)
        elif kind == "web_search_call":
            self._call(payload, "web_search", at, [], None, {})
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            self._output(payload, at)
        else:
            self._ignore(f"response_item {kind}" if isinstance(kind, str) else "response_item")

    def _message(self, payload: dict[str, Any], at: str | None) -> None:
        content = payload.get("content")
        texts = [
            c.get("text")
            for c in (content if isinstance(content, list) else [])
            if isinstance(c, dict)
        ]
        text = "\n".join(t for t in texts if isinstance(t, str))
        role = payload.get("role")
        if self.run.cwd is None and (found := _ENV_CWD.search(text)):
            self._adopt_cwd(found.group(1).strip())
        if role == "assistant":
            self.run.said(text, at)
        elif role == "user" and self.early:
            # Early logs have no user_message event: the user item is the prompt.
            if text.lstrip().startswith(_CONTEXT_PREFIXES) or not text.strip():
                self._ignore("context message")
            else:
                self.run.open_turn(at, text)
        else:
            self._ignore(f"{role} message item (the prompt is its user_message event)")

    def _call(
        self,
        payload: dict[str, Any],
        name: str,
        at: str | None,
        paths: list[str],
        base: str | None,
        arguments: dict[str, Any],
    ) -> None:
        if self.run.cwd is None and base and base.startswith("/"):
            # Early logs name no working folder: the first absolute workdir stands for it.
            self._adopt_cwd(base)
        self.run.said("", at)
        call_id = str(payload.get("call_id", payload.get("id")))
        self.calls[call_id] = name
        tool, tool_input = name, arguments
        session = arguments.get("session_id")
        if name == "write_stdin" and str(session) in self.sessions:
            # Polling a running command: its result is that command's.
            tool, tool_input = self.sessions[str(session)]
        else:
            self.started[call_id] = (name, arguments)
        self.run.tool_call(name, at, paths, base, call_id=call_id, tool_input=tool_input,
                           reports=tool)  # fmt: skip
        self.calls[call_id] = tool

    def _adopt_cwd(self, cwd: str) -> None:
        self.run.cwd = self.cwd = cwd
        self.run.root, remote = repository_of(cwd)
        self.run.remote = self.run.remote or remote

    def _output(self, payload: dict[str, Any], at: str | None) -> None:
        call_id = str(payload.get("call_id"))
        tool = self.calls.pop(call_id, "tool")
        started = self.started.pop(call_id, None)
        read = read_output(payload.get("output"))
        if read.declined:
            self.run.tool_abandoned(call_id)
        elif read.failed or read.timed_out:
            self.run.tool_failed(
                tool,
                at,
                timed_out=read.timed_out,
                detail=read.detail,
                call_id=call_id,
                output=read.body,
                exit_code=read.exit_code,
            )
        elif read.running is not None:
            # Still running: neither failed nor done; `write_stdin` will say.
            if started is not None:
                self.sessions[read.running] = started
            self.run.tool_abandoned(call_id)
            self.run.tool_succeeded(at)
        else:
            self.run.tool_succeeded(at, call_id=call_id)


def _is_user_item(payload: dict[str, Any]) -> bool:
    item = payload.get("item")
    return (
        payload.get("type") == "item_completed"
        and isinstance(item, dict)
        and item.get("type") == "UserMessage"
    )


def _item_text(payload: dict[str, Any]) -> str:
    item = payload.get("item")
    content = item.get("content") if isinstance(item, dict) else None
    texts = [
        c.get("text") for c in (content if isinstance(content, list) else []) if isinstance(c, dict)
    ]
    return "\n".join(t for t in texts if isinstance(t, str))


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or past Python's digit limit
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _function_paths(arguments: dict[str, Any], cwd: str | None) -> tuple[list[str], str | None]:
    """The workspace paths a function call names, and the folder relative ones start from."""
    workdir = arguments.get("workdir") or arguments.get("working_directory")
    base = workdir if isinstance(workdir, str) and workdir else cwd
    paths: list[str] = [workdir] if isinstance(workdir, str) and workdir else []
    for key in _PATH_KEYS:
        if isinstance(arguments.get(key), str):
            paths.append(arguments[key])
    if isinstance(arguments.get("paths"), list):
        paths += [p for p in arguments["paths"] if isinstance(p, str)]
    if isinstance(arguments.get("input"), str):
        paths += _PATCH_HEADER.findall(arguments["input"])
    command = arguments.get("command", arguments.get("cmd"))
    if isinstance(command, list) and all(isinstance(c, str) for c in command):
        if command and command[0] == "apply_patch" and len(command) > 1:
            paths += _PATCH_HEADER.findall(command[1])
        elif len(command) >= 3 and command[1] in ("-lc", "-c"):
            paths += _script_paths(command[2])
    elif isinstance(command, str):
        paths += _script_paths(command)
    return paths, base


def _script_paths(script: str) -> list[str]:
    if "*** Begin Patch" in script:
        return list(_PATCH_HEADER.findall(script))
    return cd_targets(script)
