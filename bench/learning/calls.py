"""The tool calls of one session, in the order the harness made them, as the hooks saw them.

Each call becomes the `PreToolUse` payload its harness sends to our command hook
(`session_id`, `cwd`, `hook_event_name`, `tool_name`, `tool_input`, `tool_use_id`, and
Claude Code's `agent_id` for a sub-agent's call), built from the log:

- Claude Code: every `tool_use` block of the model's messages, main transcript and
  sub-agent logs merged in time order (the importer's own reader of the session's files,
  `runlog/importers/claude_files.py`); only the tools `hook install claude` matches
  (`HOOKED_TOOLS["claude"]`: Read, Edit, MultiEdit, Write, NotebookEdit, Grep, Glob,
  Bash), since the harness calls the hook for no other;
- Codex: every `function_call`, `custom_tool_call` and `local_shell_call` of the rollout
  (Codex's hook has no matcher: it sees every tool), with the turn's working folder.

`mark_failures` then ties each entry of the run record's `tool_failures` to the call that
failed, and its `resolved_by` to the call that resolved it.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from active_memory.runlog.importers.claude_files import merged, survey
from active_memory.runlog.importers.harness_session import HOOKED_TOOLS
from active_memory.runlog.importers.session import agent_node


def _first_module(*names: str) -> ModuleType:
    # `command_family` moves from recall/ to the package's first layer (issue 25, item 5);
    # the bench reads it wherever it is.
    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(names[0])


command_family = _first_module(
    "active_memory.command_family", "active_memory.recall.command_family"
)


@dataclass
class Call:
    """One tool call and what became of it."""

    index: int
    at: datetime
    tool: str
    tool_input: dict[str, Any]
    cwd: str
    node: str
    """`worker`, or `worker/agent-<id>` for a sub-agent's call (the importer's names)."""
    agent: str | None
    call_id: str
    family: str
    """Its command family (a shell call) or tool and path (a file tool), as SPEC §3 names it."""
    failed: bool = False
    failure_family: str | None = None
    """The family the importer gave its failure (for a chain: the command that failed)."""
    resolves: list[str] = field(default_factory=list)
    """Families whose failures this call resolved (the record's `resolved_by`)."""

    def payload(self, session_id: str, transcript: Path) -> dict[str, Any]:
        """The `PreToolUse` hook input the harness sends for this call."""
        payload: dict[str, Any] = {
            "session_id": session_id,
            "transcript_path": str(transcript),
            "cwd": self.cwd,
            "hook_event_name": "PreToolUse",
            "tool_name": self.tool,
            "tool_input": self.tool_input,
            "tool_use_id": self.call_id,
        }
        if self.agent:
            payload["agent_id"] = self.agent
        return payload


def when(text: Any) -> datetime | None:
    """The moment an ISO-8601 timestamp of a log names (None: no such timestamp)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _family(tool: str, tool_input: dict[str, Any], cwd: str, root: Path) -> str:
    for key in ("command", "cmd", "script"):
        value = tool_input.get(key)
        if isinstance(value, str) and tool in command_family.SHELL_TOOLS:
            return str(command_family.shell_family(value) or tool)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            if len(value) >= 3 and value[1] in ("-lc", "-c"):
                return str(command_family.shell_family(value[2]) or tool)
            return str(command_family.argv_family(value) or tool)
    for key in ("file_path", "notebook_path", "path", "filePath"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            path = Path(value) if value.startswith("/") else Path(cwd) / value
            try:
                relative = path.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                relative = None
            return str(command_family.file_family(tool, relative))
    return tool


def claude_calls(log: Path, root: Path) -> tuple[str, list[Call]]:
    """The session ID and the hooked tool calls of a Claude Code transcript."""
    files = survey(log)
    hooked = HOOKED_TOOLS["claude"] or frozenset()
    calls: list[Call] = []
    for line in merged(files, []):
        entry = line.entry
        if line.end or entry.get("type") != "assistant" or entry.get("isApiErrorMessage"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        model = message.get("model")
        if isinstance(model, str) and model.startswith("<"):
            continue  # Claude Code's own message, not the model's
        at = when(entry.get("timestamp"))
        content = message.get("content")
        if at is None or not isinstance(content, list):
            continue
        agent = line.agent or (entry.get("agentId") if entry.get("isSidechain") else None)
        cwd = entry.get("cwd") if isinstance(entry.get("cwd"), str) else str(root)
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            name, tool_input = block.get("name"), block.get("input")
            if name not in hooked or not isinstance(tool_input, dict):
                continue
            calls.append(
                Call(len(calls), at, str(name), tool_input, str(cwd),
                     agent_node(str(agent)) if agent else "worker",
                     str(agent) if agent else None, str(block.get("id") or ""),
                     _family(str(name), tool_input, str(cwd), root))
            )  # fmt: skip
    return files.session_id, calls


def codex_calls(log: Path, root: Path) -> tuple[str, list[Call]]:
    """The session ID and the tool calls of a Codex rollout."""
    session_id = ""
    cwd = str(root)
    calls: list[Call] = []
    with log.open(encoding="utf-8") as handle:
        for raw in handle:
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            payload = entry.get("payload")
            if not isinstance(payload, dict):
                continue
            kind = entry.get("type")
            if kind == "session_meta":
                session_id = str(payload.get("id") or session_id)
                cwd = str(payload.get("cwd") or cwd)
                continue
            if kind == "turn_context" and isinstance(payload.get("cwd"), str):
                cwd = payload["cwd"]
                continue
            at = when(entry.get("timestamp"))
            if kind != "response_item" or at is None:
                continue
            call = _codex_call(payload)
            if call is None:
                continue
            name, tool_input, call_id = call
            calls.append(
                Call(len(calls), at, name, tool_input, cwd, "worker", None, call_id,
                     _family(name, tool_input, cwd, root))
            )  # fmt: skip
    if not session_id:
        raise ValueError(f"{log}: no session_meta with the session's ID")
    return session_id, calls


def _codex_call(payload: dict[str, Any]) -> tuple[str, dict[str, Any], str] | None:
    item = payload.get("type")
    call_id = str(payload.get("call_id") or payload.get("id") or "")
    if item == "function_call" and isinstance(payload.get("name"), str):
        raw = payload.get("arguments")
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            arguments = {"input": raw}
        return payload["name"], arguments if isinstance(arguments, dict) else {}, call_id
    if item == "custom_tool_call" and isinstance(payload.get("name"), str):
        return payload["name"], {"input": payload.get("input")}, call_id
    if item == "local_shell_call":
        action = payload.get("action")
        command = action.get("command") if isinstance(action, dict) else None
        return "local_shell", {"command": command}, call_id
    return None


def session_calls(harness: str, log: Path, root: Path) -> tuple[str, list[Call]]:
    """The session ID and tool calls of a log of `harness`."""
    if harness == "claude":
        return claude_calls(log, root)
    return codex_calls(log, root)


def mark_failures(calls: list[Call], failures: list[dict[str, Any]]) -> list[str]:
    """Mark each call the record's `tool_failures` says failed, and each call that resolved
    one; returns the failures (as `family @ time`) no call could be found for."""
    unmatched: list[str] = []
    taken: set[int] = set()
    for failure in failures:
        index = _find(calls, failure, taken)
        if index is None:
            unmatched.append(f"{failure.get('family')} @ {failure.get('at')}")
            continue
        taken.add(index)
        calls[index].failed = True
        calls[index].failure_family = str(failure.get("family") or calls[index].family)
        resolved = failure.get("resolved_by")
        if isinstance(resolved, dict):
            found = _find(calls, {**resolved, "node": failure.get("node")}, set(), after=index)
            if found is not None:
                calls[found].resolves.append(calls[index].failure_family or "")
    return unmatched


def _find(
    calls: list[Call], failure: dict[str, Any], taken: set[int], *, after: int = -1
) -> int | None:
    """The latest call, made at or before the failure's time, of its node (and tool),
    whose command or path the failure names; else of its family."""
    at = when(failure.get("at"))
    node = failure.get("node") or "worker"
    tool = failure.get("tool")
    command = str(failure.get("command") or "")
    family = failure.get("family")
    candidates = [
        call
        for call in calls
        if call.index > after
        and call.index not in taken
        and call.node == node
        and (tool is None or call.tool == tool)
        and (at is None or call.at <= at)
    ]
    for wanted in (
        lambda call: command != "" and _shown(call).startswith(command[:200]),
        lambda call: command != "" and command.split("/")[-1] in _shown(call),
        lambda call: call.family == family,
    ):
        found = [call for call in candidates if wanted(call)]
        if found:
            return max(found, key=lambda call: (call.at, call.index)).index
    return None


def _shown(call: Call) -> str:
    for key in ("command", "cmd", "script"):
        value = call.tool_input.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return " ".join(str(v) for v in value)
    for key in ("file_path", "notebook_path", "path", "filePath"):
        value = call.tool_input.get(key)
        if isinstance(value, str):
            return value
    return json.dumps(call.tool_input, separators=(",", ":"), default=str)
