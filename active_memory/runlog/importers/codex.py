"""A run record from a Codex session log (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Each line is `{timestamp, type, payload}`. Read (others are skipped silently):

- `session_meta`: `id`, `cwd`, `model_provider`, `git` {`commit_hash`, `branch`,
  `repository_url`};
- `turn_context`: `cwd`, `model`;
- `event_msg`: `task_started`/`turn_started` and `user_message` open a turn,
  `agent_message` is the agent speaking, `task_complete` {`last_agent_message`},
  `turn_aborted` {`reason`} (`interrupted`/`replaced`: the user's decision; others
  unclassified), `error` {`message`} (classified: timeout, crash, refusal, unknown);
  `stream_error` is a retry notice and ignored;
- `response_item`: `message` (assistant text), `function_call` {`name`, `arguments` (a
  JSON string), `call_id`}, `custom_tool_call` {`name`, `input`} (e.g. `apply_patch`),
  `local_shell_call` {`action` {`command`, `working_directory`}}, and the
  `*_output` items {`call_id`, `output`} that show failures and time-outs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from active_memory.runlog.importers.common import ImportResult, Skipped
from active_memory.runlog.importers.jsonl import read_jsonl, repository_of
from active_memory.runlog.importers.session import SessionRun, cd_targets, classify_error

_PATCH_HEADER = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$", re.M)
_EXIT_CODE = re.compile(r"(?:Exit code:|exited with code)\s*(-?\d+)", re.I)
_TIMED_OUT = re.compile(r"\btimed out\b", re.I)
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "<INSTRUCTIONS>")
_USER_ABORTS = ("interrupted", "replaced")


def import_rollout(path: str | Path) -> ImportResult:
    """One run record for the rollout; malformed lines are reported in `skipped`."""
    source = str(path)
    result = ImportResult()
    entries = list(read_jsonl(path, result.skipped))
    meta: dict[str, Any] = next(
        (e["payload"] for _, e in entries if e.get("type") == "session_meta" and _obj(e)),
        {},
    )
    session_id = meta.get("id") if isinstance(meta.get("id"), str) else Path(path).stem
    run = SessionRun(harness="codex", run_id=f"codex-{session_id}")
    _apply_meta(run, meta)
    reader = _Reader(run)
    for line, entry in entries:
        kind = entry.get("type")
        if kind not in ("session_meta", "turn_context", "event_msg", "response_item"):
            continue
        payload = entry.get("payload")
        if not isinstance(payload, dict):
            result.skipped.append(Skipped(f"{kind} entry without a payload object", line=line))
            continue
        at = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        run.seen(at)
        if kind == "turn_context":
            if isinstance(payload.get("model"), str):
                run.model = payload["model"]
            if isinstance(payload.get("cwd"), str):
                reader.cwd = payload["cwd"]
        elif kind == "event_msg":
            reader.event(payload, at)
        elif kind == "response_item":
            reader.item(payload, at)
    if run.turns == 0:
        result.skipped.append(Skipped("no user turn in the session log", run_id=run.run_id))
        return result
    result.runs.append(run.build(source, []))
    return result


def _obj(entry: dict[str, Any]) -> bool:
    return isinstance(entry.get("payload"), dict)


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

    def __init__(self, run: SessionRun) -> None:
        self.run = run
        self.cwd = run.cwd
        self.calls: dict[str, str] = {}
        self.prompted = True  # whether the open turn already has its user message

    def event(self, payload: dict[str, Any], at: str | None) -> None:
        kind = payload.get("type")
        if kind in ("task_started", "turn_started"):
            self.run.open_turn(at)
            self.prompted = False
        elif kind == "user_message":
            message = payload.get("message")
            text = message if isinstance(message, str) else ""
            if text.lstrip().startswith(_CONTEXT_PREFIXES):
                return
            if self.prompted or self.run.turns == 0:
                self.run.open_turn(at, text)
            elif not self.run.title and text.strip():
                self.run.title = text.strip().splitlines()[0][:120]
            self.prompted = True
        elif kind == "agent_message" and isinstance(payload.get("message"), str):
            self.run.said(payload["message"], at)
        elif kind == "turn_aborted":
            reason = str(payload.get("reason") or "")
            if reason in _USER_ABORTS:
                self.run.ended("interrupted", at, f"aborted: {reason}")
            else:
                self.run.ended("unknown", at, f"aborted: {reason or 'no reason given'}")
        elif kind == "error":
            message = str(payload.get("message") or "error")
            self.run.ended(classify_error(message), at, message[:200])

    def item(self, payload: dict[str, Any], at: str | None) -> None:
        kind = payload.get("type")
        if kind == "message" and payload.get("role") == "assistant":
            content = payload.get("content")
            texts = [
                c.get("text")
                for c in (content if isinstance(content, list) else [])
                if isinstance(c, dict)
            ]
            self.run.said("\n".join(t for t in texts if isinstance(t, str)), at)
        elif kind == "function_call" and isinstance(payload.get("name"), str):
            arguments = _arguments(payload.get("arguments"))
            self._call(payload, payload["name"], at, *_function_paths(arguments, self.cwd))
        elif kind == "custom_tool_call" and isinstance(payload.get("name"), str):
            raw = payload.get("input")
            paths = _PATCH_HEADER.findall(raw) if isinstance(raw, str) else []
            self._call(payload, payload["name"], at, paths, self.cwd)
        elif kind == "local_shell_call":
            raw_action = payload.get("action")
            action: dict[str, Any] = raw_action if isinstance(raw_action, dict) else {}
            args = {"command": action.get("command"), "workdir": action.get("working_directory")}
            self._call(payload, "local_shell", at, *_function_paths(args, self.cwd))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._output(payload, at)

    def _call(
        self, payload: dict[str, Any], name: str, at: str | None, paths: list[str], base: str | None
    ) -> None:
        self.run.said("", at)
        self.calls[str(payload.get("call_id"))] = name
        self.run.tool_call(name, at, paths, base)

    def _output(self, payload: dict[str, Any], at: str | None) -> None:
        tool = self.calls.pop(str(payload.get("call_id")), "tool")
        failed, timed_out, detail = _output_status(payload.get("output"))
        if failed or timed_out:
            self.run.tool_failed(tool, at, timed_out=timed_out, detail=detail)
        else:
            self.run.tool_succeeded(at)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _function_paths(arguments: dict[str, Any], cwd: str | None) -> tuple[list[str], str | None]:
    """The workspace paths a function call names, and the folder relative ones start from."""
    workdir = arguments.get("workdir") or arguments.get("working_directory")
    base = workdir if isinstance(workdir, str) and workdir else cwd
    paths: list[str] = [workdir] if isinstance(workdir, str) and workdir else []
    for key in ("path", "file_path", "dir_path"):
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


def _output_status(output: Any) -> tuple[bool, bool, str]:
    """(failed, timed out, first line of detail) of a tool output, as far as it shows."""
    text = ""
    exit_code: int | None = None
    success: bool | None = None
    if isinstance(output, str):
        text = output
        try:
            decoded = json.loads(output)
        except json.JSONDecodeError:
            decoded = None
        if isinstance(decoded, dict):
            output = decoded
    if isinstance(output, dict):
        inner = output.get("output", output.get("content"))
        text = inner if isinstance(inner, str) else text
        metadata = output.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("exit_code"), int):
            exit_code = metadata["exit_code"]
        if isinstance(output.get("success"), bool):
            success = output["success"]
    if exit_code is None and (match := _EXIT_CODE.search(text[:200])):
        exit_code = int(match.group(1))
    timed_out = exit_code == 124 or bool(_TIMED_OUT.search(text[:500]) and exit_code != 0)
    failed = success is False or (exit_code is not None and exit_code != 0)
    detail = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if exit_code not in (None, 0):
        detail = f"exit code {exit_code}" + (
            f": {detail}" if detail and "xit code" not in detail else ""
        )
    return failed, timed_out, detail[:200]
