"""A run record from one interactive session log (Claude Code, Codex): one worker node.

Mapping (see docs/importers.md):

- each user turn is one visit (execution) of node `worker`: `node_started` at the prompt;
- a turn that ends normally settles `verified`;
- a turn that ends on an API error settles `error` with code `timeout` when the error
  says it timed out, `crash` for a provider failure (5xx, overloaded, connection lost),
  `refusal`/`authentication_required` for a login failure; other errors (rate or usage
  limits, bad requests) leave the visit without an outcome, which is never evidence;
- a turn interrupted by the user has no outcome either, unless the tool call it ended on
  had timed out (then `timeout`): an interruption is the user's decision, not a failure;
- tool calls become receipts; failed and timed-out tool calls become `safe_log` lines.

The run's outcome is that of its last turn: verified → `succeeded`, interrupted →
`cancelled`, anything else → `failed`.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

from active_memory.runlog.canonical import graph_hash
from active_memory.runlog.importers.common import (
    ImportedRun,
    aliases_for,
    checked,
    local_namespace,
    namespace_from_remote,
    trim,
)
from active_memory.runlog.receipts import relative_path
from active_memory.runlog.record import RUN_SCHEMA

WORKER = "worker"
MAX_PATHS_PER_TOOL = 8

Ending = Literal["verified", "timeout", "crash", "refusal", "interrupted", "unknown"]

_RATE = (
    "rate limit",
    "rate_limit",
    "429",
    "usage limit",
    "session limit",
    "hit your limit",
    "limit reached",
    "quota",
)
_TIMEOUT = ("timed out", "timeout", "etimedout", "deadline exceeded")
_AUTH = ("401", "403", "unauthorized", "authentication", "invalid api key", "not logged in")
_CRASH = (
    "overloaded",
    "internal server error",
    "server_error",
    "bad gateway",
    "service unavailable",
    "connection",
    "disconnected",
    "econnreset",
    "socket hang up",
    "network",
    "stream",
    "500",
    "502",
    "503",
    "504",
    "529",
)


def classify_error(text: str, flag: str | None = None) -> Ending:
    """What an API error ending a turn shows: timeout, crash, refusal, or unknown.

    Order matters: a retry limit hit on 429s is a rate limit (not evidence), even if the
    text also says "connection"; only an explicit time-out is a `timeout`.
    """
    lowered = f"{flag or ''} {text}".lower()
    if any(word in lowered for word in _RATE) and "timed out" not in lowered:
        return "unknown"
    if any(word in lowered for word in _TIMEOUT):
        return "timeout"
    if any(word in lowered for word in _AUTH):
        return "refusal"
    if any(word in lowered for word in _CRASH):
        return "crash"
    return "unknown"


def glob_prefix(pattern: str) -> str | None:
    """The literal path a glob pattern starts from (`src/**/*.ts` → `src`), if any."""
    parts: list[str] = []
    for part in pattern.split("/"):
        if any(ch in part for ch in "*?[{"):
            break
        parts.append(part)
    else:
        return pattern or None  # no wildcard: the pattern names a path
    return "/".join(parts) or None


def cd_targets(command: str) -> list[str]:
    """Folders a shell command changes into (`cd web && npm test` → `web`)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        tokens = list(lexer)
    except ValueError:
        return []
    targets: list[str] = []
    at_start = True
    for index, token in enumerate(tokens):
        if at_start and token == "cd" and index + 1 < len(tokens):
            target = tokens[index + 1]
            if target not in ("&&", "||", ";", "|", "-") and not target.startswith("~"):
                targets.append(target)
        at_start = token in ("&&", "||", ";", "|", "(")
    return targets


@dataclass(slots=True)
class _Turn:
    number: int
    at: str | None
    ending: Ending | None = None
    detail: str = ""
    last_tool_timed_out: bool = False
    final_text: str | None = None
    last_at: str | None = None


@dataclass(slots=True)
class SessionRun:
    """Accumulates one session's turns, tool calls and notes, then builds the record."""

    harness: str
    run_id: str
    cwd: str | None = None
    root: str | None = None
    remote: str | None = None
    branch: str | None = None
    revision: str | None = None
    model: str | None = None
    provider: str | None = None
    title: str | None = None
    first_at: str | None = None
    last_at: str | None = None
    _pending: list[dict[str, Any]] = field(default_factory=list)
    _receipts: list[dict[str, Any]] = field(default_factory=list)
    _completions: dict[str, str] = field(default_factory=dict)
    _turn: _Turn | None = None
    _turns: int = 0
    _last_ending: Ending | None = None

    # --- reading -----------------------------------------------------------------

    def seen(self, at: str | None) -> None:
        """Note the time of an entry (the first and latest times bound the run)."""
        if at:
            self.first_at = self.first_at or at
            self.last_at = at

    def open_turn(self, at: str | None, prompt: str | None = None) -> None:
        """A user prompt: close the open turn and start the next visit of `worker`."""
        self.close_turn()
        self._turns += 1
        self._turn = _Turn(self._turns, at, last_at=at)
        if prompt and not self.title:
            first_line = prompt.strip().splitlines()[0] if prompt.strip() else ""
            self.title = first_line[:120] or None
        self._event("node_started", at, self._started(self._turns))

    def _current(self, at: str | None) -> _Turn:
        # Tool calls before any prompt (a resumed session) belong to an implicit turn.
        if self._turn is None:
            self.open_turn(at)
        assert self._turn is not None
        # The turn settles at the time of the last thing that happened in it.
        self._turn.last_at = at or self._turn.last_at
        return self._turn

    def said(self, text: str, at: str | None) -> None:
        """The agent produced text or a tool call: the turn goes on (an error did not end it)."""
        turn = self._current(at)
        if turn.ending in ("timeout", "crash", "refusal", "unknown"):
            turn.ending, turn.detail = None, ""
        turn.last_tool_timed_out = False
        if text.strip():
            turn.final_text = text

    def tool_call(self, tool: str, at: str | None, paths: list[str], base: str | None) -> None:
        """One tool call: a receipt with its workspace paths (root-relative, outside dropped)."""
        self._current(at)
        kept: list[str] = []
        for raw in paths:
            relative = self.workspace_path(raw, base)
            if relative and relative not in kept:
                kept.append(relative)
        receipt: dict[str, Any] = {"node": WORKER, "tool": tool, "paths": kept[:MAX_PATHS_PER_TOOL]}
        if at:
            receipt["at"] = at
        self._receipts.append(receipt)

    def tool_failed(self, tool: str, at: str | None, *, timed_out: bool, detail: str) -> None:
        """A tool call that failed or timed out: a `safe_log` line on the turn."""
        turn = self._current(at)
        turn.last_tool_timed_out = timed_out
        what = "timed out" if timed_out else "failed"
        line = f"tool {tool} {what}" + (f": {detail}" if detail else "")
        self._log(turn.number, at, "error", line[:500])

    def tool_succeeded(self, at: str | None) -> None:
        """A tool call that succeeded: the turn did not end on a timed-out tool."""
        self._current(at).last_tool_timed_out = False

    def ended(self, ending: Ending, at: str | None, detail: str = "") -> None:
        """The turn ended abnormally (API error, interruption), as the log shows it."""
        turn = self._current(at)
        if ending == "interrupted" and turn.last_tool_timed_out:
            ending, detail = "timeout", "interrupted after a tool call timed out"
        turn.ending, turn.detail = ending, detail
        self._log(turn.number, at, "system", f"turn {ending}" + (f": {detail}" if detail else ""))

    def close_turn(self) -> None:
        """Settle the open turn, if any (see the module docstring for the mapping)."""
        turn, self._turn = self._turn, None
        if turn is None:
            return
        ending: Ending = turn.ending or "verified"
        self._last_ending = ending
        if turn.final_text and ending != "interrupted":
            self._completions[str(turn.number)] = trim(turn.final_text)
        outcome: dict[str, Any] | None
        if ending == "verified":
            outcome = {"status": "verified", "output": None}
        elif ending in ("timeout", "crash"):
            outcome = {"status": "error", "code": ending, "reason": "declared_failure"}
        elif ending == "refusal":
            outcome = {"status": "error", "code": "refusal", "reason": "authentication_required"}
        else:
            outcome = None  # interrupted or unclassified: no outcome, never evidence
        if outcome is not None:
            completion = {"reference": self._reference(turn.number), "outcome": outcome}
            self._event("node_completed", turn.last_at, {"completion": completion})

    def workspace_path(self, raw: str, base: str | None) -> str | None:
        """A tool's path argument, root-relative; None when outside the workspace."""
        if not isinstance(raw, str) or not raw.strip():
            return None
        path = raw.strip()
        if not path.startswith("/") and (base or self.cwd):
            path = posixpath.join(base or self.cwd or "", path)
        if not path.startswith("/"):
            return relative_path(path, None)
        return relative_path(path, self.root or self.cwd)

    # --- building ----------------------------------------------------------------

    @property
    def turns(self) -> int:
        """How many turns (visits of `worker`) were read."""
        return self._turns

    def build(self, source: str, notes: list[str]) -> ImportedRun:
        """The validated run record of the session."""
        self.close_turn()
        outcome = {"verified": "succeeded", "interrupted": "cancelled"}.get(
            self._last_ending or "verified", "failed"
        )
        events = [{"sequence": 1, "event": {"kind": "run_started"}}]
        if self.first_at:
            events[0]["at"] = self.first_at
        for item in self._pending:
            events.append({"sequence": len(events) + 1, **item})
        terminal: dict[str, Any] = {
            "sequence": len(events) + 1,
            "event": {"kind": "terminal", "result": {"status": outcome, "output": None}},
        }
        if self.last_at:
            terminal["at"] = self.last_at
        events.append(terminal)
        graph = _session_graph()
        data: dict[str, Any] = {
            "schema": RUN_SCHEMA,
            "run_id": self.run_id,
            "title": self.title or f"{self.harness} session {self.run_id}",
            "outcome": outcome,
            "seeded": False,
            "source": {
                k: v
                for k, v in {
                    "repository": _owner_name(self.remote),
                    "branch": self.branch,
                    "revision": self.revision,
                }.items()
                if v
            },
            "repository": self._repository(),
            "graph": {"name": f"{self.harness}-session", "hash": graph_hash(graph), "ir": graph},
            "runtime": self._runtime(),
            "events": events,
            "completions": self._completions,
            "receipts": self._receipts,
        }
        return ImportedRun(self.run_id, checked(data, source), notes)

    def _repository(self) -> dict[str, Any]:
        root = self.root or self.cwd
        namespace = (namespace_from_remote(self.remote) if self.remote else None) or (
            local_namespace(root) if root else f"repo:local/{self.run_id}"
        )
        repository: dict[str, Any] = {"namespace": namespace, "aliases": aliases_for(namespace)}
        if root:
            repository["checkout"] = root
        if self.remote:
            repository["remote"] = self.remote
        return repository

    def _runtime(self) -> dict[str, Any]:
        node: dict[str, Any] = {"kind": "agent"}
        if self.model:
            node["model"] = self.model
        runtime: dict[str, Any] = {"harness": self.harness, "nodes": {WORKER: node}}
        if self.provider:
            runtime["provider"] = self.provider
        return runtime

    def _reference(self, number: int) -> dict[str, Any]:
        return {"runId": self.run_id, "node": WORKER, "nodeInstance": "1", "execution": str(number)}

    def _started(self, number: int) -> dict[str, Any]:
        return {
            "reference": self._reference(number),
            "occurrence": {"node": WORKER, "mapIndices": []},
            "attempt": 1,
            "input": None,
        }

    def _log(self, number: int, at: str | None, stream: str, line: str) -> None:
        self._event("safe_log", at, {"execution": str(number), "stream": stream, "line": line})

    def _event(self, kind: str, at: str | None, body: dict[str, Any]) -> None:
        item: dict[str, Any] = {"event": {"kind": kind, **body}}
        if at:
            item["at"] = at
        self._pending.append(item)


def _owner_name(remote: str | None) -> str | None:
    namespace = namespace_from_remote(remote) if remote else None
    if not namespace:
        return None
    parts = namespace.removeprefix("repo:").split("/")[1:]
    return "/".join(parts) if parts else None


def _session_graph() -> dict[str, Any]:
    # An interactive session is one worker step. The IR is the same for every session of
    # every harness, so graph lessons learned from sessions share one graph-hash scope.
    return {
        "profile": "openengine.graph.full/v1",
        "initialInput": {"kind": "null"},
        "policy": {"policy": "policy.default@1", "default": "deny"},
        "root": {
            "kind": "step",
            "name": WORKER,
            "worker": "agent.worker@1",
            "input": {"kind": "null"},
            "output": {"kind": "null"},
            "inputBindings": [],
            "writeBindings": [],
            "attempts": 1,
        },
    }
