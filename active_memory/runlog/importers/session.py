"""A run record from one interactive session log (Claude Code, Codex): one worker node.

Mapping (see docs/importers.md):

- each prompt typed is one visit (execution) of node `worker`: `node_started` at it;
- a turn that ends with an answer settles `verified`; one that never got its answer
  (the log stops, a new prompt comes first, Codex wrote no `task_complete`) is
  interrupted: no outcome, never `verified`;
- a turn that ends on an API error settles `error` with code `timeout` when the error
  says it timed out, `crash` for a provider failure (5xx, overloaded, connection lost),
  `refusal`/`authentication_required` for a login failure; other errors (rate or usage
  limits, bad requests) leave the visit without an outcome, which is never evidence;
- a turn interrupted by the user has no outcome either, unless the tool call it ended on
  had timed out (then `timeout`): an interruption is the user's decision, not a failure;
- each prompt typed (bounded, screened) is its visit's `node_started` `input`;
- tool calls become receipts; failed and timed-out tool calls become `tool_failures`
  (failure_log.py) and `safe_log` lines quoting the error;
- a sub-agent's run is a visit of a node of its own, `worker/agent-<id>`, with its own
  outcome, receipts and lines;
- event times never go backwards (an earlier time keeps the previous event's time).

The run's outcome is that of its last turn: verified → `succeeded`, interrupted →
`cancelled`, anything else → `failed`.
"""

from __future__ import annotations

import posixpath
import shlex
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
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
from active_memory.runlog.importers.error_lines import informative_error
from active_memory.runlog.importers.failure_log import FailureLog
from active_memory.runlog.importers.privacy import (
    Scrubber,
    private_passages,
    screen_credentials,
    without_private,
)
from active_memory.runlog.importers.report import ImportReport
from active_memory.runlog.receipts import KEPT_FIRST, MAX_RECEIPTS, relative_path
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


def error_line(body: str) -> str:
    """The first informative line of a tool's output (error_lines.py), for `safe_log`."""
    lines = informative_error(body).splitlines()
    return lines[0] if lines else ""


def agent_node(agent_id: str) -> str:
    """The node a sub-agent's calls are attributed to: `worker/agent-<id>`."""
    return f"{WORKER}/agent-{agent_id}"


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
            # `cd ~/x` is kept: the receipt then drops (and counts) the home path.
            if target not in ("&&", "||", ";", "|", "-"):
                targets.append(target)
        at_start = token in ("&&", "||", ";", "|", "(")
    return targets


MAX_PROMPT_CHARS = 4000
"""A prompt kept as `node_started` input is trimmed to this many characters."""

MAX_LOG_LINES = 2000
"""`safe_log` lines kept per run (failed tools, abnormal endings); the rest are counted."""

_HOME_PREFIXES = ("~", "$HOME", "${HOME}", "%USERPROFILE%", "$env:USERPROFILE")


@dataclass(slots=True)
class _Visit:
    """One execution: a user turn of `worker`, or one run of a sub-agent."""

    node: str
    execution: str
    at: str | None
    ending: Ending | None = None
    detail: str = ""
    last_tool_timed_out: bool = False
    final_text: str | None = None
    last_at: str | None = None
    answered: bool = False


@dataclass(slots=True)
class SessionRun:
    """Accumulates one session's turns, tool calls and notes, then builds the record.

    Memory stays bounded while a log streams through: receipts keep the first
    `KEPT_FIRST` and a window of the latest (SPEC §3), `safe_log` lines stop at
    `MAX_LOG_LINES`; what is dropped is counted in `report`.
    """

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
    explicit_answers: bool = False
    """True when the log says when a turn is complete (Codex `task_complete`): only
    `answered()` then marks a turn answered, agent text alone does not."""
    report: ImportReport = field(default_factory=ImportReport)
    _pending: list[dict[str, Any]] = field(default_factory=list)
    _receipts_first: list[dict[str, Any]] = field(default_factory=list)
    _receipts_latest: deque[dict[str, Any]] = field(
        default_factory=lambda: deque(maxlen=MAX_RECEIPTS - KEPT_FIRST)
    )
    _completions: dict[str, str] = field(default_factory=dict)
    _turn: _Visit | None = None
    _agents: dict[str, _Visit] = field(default_factory=dict)
    _agent_runs: Counter[str] = field(default_factory=Counter)
    _turns: int = 0
    _last_ending: Ending | None = None
    _clock: datetime | None = None
    _logged: int = 0
    _private: list[str] = field(default_factory=list)
    _turn_started: dict[str, Any] | None = None
    failures: FailureLog | None = None

    def __post_init__(self) -> None:
        if self.failures is None:
            self.failures = FailureLog(self.harness)

    # --- reading -----------------------------------------------------------------

    def seen(self, at: str | None) -> None:
        """Note the time of an entry (the first and latest times bound the run)."""
        if at:
            self.first_at = self.first_at or at
            self.last_at = at

    def open_turn(self, at: str | None, prompt: str | None = None) -> None:
        """A user prompt: close the open turn and start the next visit of `worker`."""
        self.close_turn("a new prompt came before the answer")
        self._turns += 1
        self._turn = _Visit(WORKER, str(self._turns), at, last_at=at)
        self._event("node_started", at, self._started(self._turn))
        self._turn_started = self._pending[-1]["event"]
        if prompt:
            self.prompt_seen(prompt)

    def prompt_seen(self, prompt: str) -> None:
        """A user's prompt: its `<private>` text is kept out of the record (privacy.py:
        cut here, masked wherever the agent repeated it when the record is built); the
        first prompt's first line titles the session."""
        cut = without_private(prompt)
        if cut != prompt:
            self.report.private_prompts += 1
            self._private.extend(private_passages(prompt))
        if not self.title and cut.strip():
            self.title = cut.strip().splitlines()[0][:120] or None
        started = self._turn_started
        if started is not None and started.get("input") is None and cut.strip():
            started["input"] = screen_credentials(trim(cut, MAX_PROMPT_CHARS))

    @property
    def in_turn(self) -> bool:
        """Whether a turn is open."""
        return self._turn is not None

    def _current(self, at: str | None, agent: str | None = None) -> _Visit:
        if agent is not None:
            return self.agent(agent, at)
        # Tool calls before any prompt (a resumed session) belong to an implicit turn.
        if self._turn is None:
            self.open_turn(at)
        assert self._turn is not None
        # The turn settles at the time of the last thing that happened in it.
        self._turn.last_at = at or self._turn.last_at
        return self._turn

    def agent(self, agent_id: str, at: str | None) -> _Visit:
        """The open run of sub-agent `agent_id` (node `worker/agent-<id>`), started if new."""
        visit = self._agents.get(agent_id)
        if visit is None:
            self._agent_runs[agent_id] += 1
            runs = self._agent_runs[agent_id]
            execution = f"agent-{agent_id}" + (f"-{runs}" if runs > 1 else "")
            visit = _Visit(agent_node(agent_id), execution, at, last_at=at)
            self._agents[agent_id] = visit
            self._event("node_started", at, self._started(visit))
        visit.last_at = at or visit.last_at
        return visit

    def said(self, text: str, at: str | None, agent: str | None = None) -> None:
        """The agent produced text or a tool call: the turn goes on (an error did not end it)."""
        visit = self._current(at, agent)
        if visit.ending in ("timeout", "crash", "refusal", "unknown"):
            visit.ending, visit.detail = None, ""
        visit.last_tool_timed_out = False
        if text.strip():
            visit.final_text = text
            if not self.explicit_answers or agent is not None:
                visit.answered = True

    def answered(self, at: str | None, text: str | None = None) -> None:
        """The log declares the open turn complete (Codex `task_complete`)."""
        visit = self._current(at)
        visit.answered = True
        if text and text.strip():
            visit.final_text = text

    def tool_call(
        self,
        tool: str,
        at: str | None,
        paths: list[str],
        base: str | None,
        agent: str | None = None,
        *,
        call_id: str | None = None,
        tool_input: Any = None,
        reports: str | None = None,
    ) -> None:
        """One tool call: a receipt with its workspace paths (root-relative, outside dropped).

        With `call_id`, the call's arguments are kept until its result says whether it
        failed (`tool_failed`, `tool_succeeded`, `tool_abandoned` under the same ID);
        `reports` names the tool whose result this call reports (Codex's `write_stdin`
        polling an `exec_command`), with `tool_input` that tool's arguments."""
        visit = self._current(at, agent)
        if call_id is not None:
            log = self._failure_log()
            log.called(call_id, reports or tool, tool_input, at=at, node=visit.node,
                       execution=visit.execution, base=base or self.cwd)  # fmt: skip
        visit.answered = False  # the agent went on working: the answer is still to come
        kept: list[str] = []
        for raw in paths:
            relative = self.workspace_path(raw, base)
            if relative and relative not in kept:
                kept.append(relative)
        receipt: dict[str, Any] = {
            "node": visit.node,
            "tool": tool,
            "paths": kept[:MAX_PATHS_PER_TOOL],
        }
        stamped = self._stamp(at)
        if stamped:
            receipt["at"] = stamped
        self.report.tool_calls[visit.node] += 1
        if len(self._receipts_first) < KEPT_FIRST:
            self._receipts_first.append(receipt)
        else:
            if len(self._receipts_latest) == self._receipts_latest.maxlen:
                self.report.receipts_dropped += 1
            self._receipts_latest.append(receipt)

    def tool_failed(
        self,
        tool: str,
        at: str | None,
        *,
        timed_out: bool,
        detail: str,
        agent: str | None = None,
        call_id: str | None = None,
        output: str | None = None,
        exit_code: int | None = None,
    ) -> None:
        """A tool call that failed or timed out: a `safe_log` line on the turn and, with
        `call_id`, a tool failure (`output` is what the call printed, `detail` the line
        quoted in the log)."""
        visit = self._current(at, agent)
        visit.last_tool_timed_out = timed_out
        what = "timed out" if timed_out else "failed"
        line = f"tool {tool} {what}" + (f": {detail}" if detail else "")
        self._log(visit, at, "error", line[:500])
        if call_id is not None:
            self._failure_log().failed(
                call_id,
                self._stamp_only(at),
                output=output if output is not None else detail,
                exit_code=exit_code,
                timed_out=timed_out,
                tool=tool,
            )

    def tool_succeeded(
        self, at: str | None, agent: str | None = None, call_id: str | None = None
    ) -> None:
        """A tool call that succeeded: the turn did not end on a timed-out tool, and the
        call may resolve earlier failures."""
        self._current(at, agent).last_tool_timed_out = False
        if call_id is not None:
            self._failure_log().succeeded(call_id, self._stamp_only(at))

    def tool_abandoned(self, call_id: str) -> None:
        """A call with no outcome of its own (a person's "no", an interruption)."""
        self._failure_log().abandoned(call_id)

    def _failure_log(self) -> FailureLog:
        assert self.failures is not None
        self.failures.root = self.root or self.cwd
        return self.failures

    def ended(
        self, ending: Ending, at: str | None, detail: str = "", agent: str | None = None
    ) -> None:
        """The turn ended abnormally (API error, interruption), as the log shows it."""
        visit = self._current(at, agent)
        if ending == "interrupted" and visit.last_tool_timed_out:
            ending, detail = "timeout", "interrupted after a tool call timed out"
        visit.ending, visit.detail = ending, detail
        self._log(visit, at, "system", f"turn {ending}" + (f": {detail}" if detail else ""))

    def close_agent(self, agent_id: str) -> None:
        """Settle the open run of one sub-agent (its log ended, or its parent went on)."""
        visit = self._agents.pop(agent_id, None)
        if visit is not None:
            self._settle(visit, "the sub-agent's log ends before its answer")

    def close_agents(self) -> None:
        """Settle every open sub-agent run."""
        for agent_id in list(self._agents):
            self.close_agent(agent_id)

    def close_turn(self, unanswered: str = "the log ends before the turn's answer") -> None:
        """Settle the open turn, if any (see the module docstring for the mapping)."""
        self.close_agents()
        turn, self._turn = self._turn, None
        if turn is None:
            return
        self._last_ending = self._settle(turn, unanswered)
        self.report.turns[self._last_ending] += 1

    def _settle(self, visit: _Visit, unanswered: str) -> Ending:
        if visit.ending is None and not visit.answered:
            # No answer in the log (cut off, interrupted without a marker, no
            # `task_complete`): never `verified`; recorded as interrupted.
            visit.ending, visit.detail = "interrupted", unanswered
            self._log(visit, visit.last_at, "system", f"turn interrupted: {unanswered}")
        ending: Ending = visit.ending or "verified"
        if visit.final_text and ending != "interrupted":
            self._completions[visit.execution] = trim(visit.final_text)
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
            completion = {"reference": self._reference(visit), "outcome": outcome}
            self._event("node_completed", visit.last_at, {"completion": completion})
        return ending

    def workspace_path(self, raw: str, base: str | None) -> str | None:
        """A tool's path argument, root-relative; None (and counted) when outside the workspace.

        `~`, `$HOME` and the like name the user's home, never the workspace: such paths
        are dropped, as are absolute paths outside the root and `..` escapes.
        """
        if not isinstance(raw, str) or not raw.strip():
            return None
        path = raw.strip()
        folder = base or self.cwd
        if path.startswith(_HOME_PREFIXES) or (
            not path.startswith("/") and folder and folder.startswith(_HOME_PREFIXES)
        ):
            self.report.paths_dropped["home"] += 1
            return None
        if not path.startswith("/") and folder:
            path = posixpath.join(folder, path)
        root = self.root or self.cwd
        if not path.startswith("/"):
            relative = relative_path(path, None)
        else:
            relative = relative_path(path, root)
        if relative is None and not (root and posixpath.normpath(path) == posixpath.normpath(root)):
            self.report.paths_dropped["outside"] += 1  # the root itself names no file: not counted
        return relative

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
        events: list[dict[str, Any]] = [{"sequence": 1, "event": {"kind": "run_started"}}]
        started = _earliest(
            self.first_at, next((e["at"] for e in self._pending if "at" in e), None)
        )
        if started:
            events[0]["at"] = started
        for item in self._pending:
            events.append({"sequence": len(events) + 1, **item})
        terminal: dict[str, Any] = {
            "sequence": len(events) + 1,
            "event": {"kind": "terminal", "result": {"status": outcome, "output": None}},
        }
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
            "receipts": [*self._receipts_first, *self._receipts_latest],
        }
        if self.report.receipts_dropped:
            data["receipts_dropped"] = self.report.receipts_dropped
        log = self._failure_log()
        data["tool_failures"] = log.entries()
        data["tool_failures_dropped"] = log.dropped
        self.report.tool_failures = len(data["tool_failures"]) + log.dropped
        if self.last_at:
            terminal["at"] = self._stamp(self.last_at)
        scrubber = Scrubber(private=self._private)
        data = scrubber.record(data)
        self.report.private_masked = scrubber.masked
        report = self.report.to_json()
        return ImportedRun(
            self.run_id,
            checked(data, source),
            notes,
            report=report,
            summary=self.report.summary(),
            private=tuple(dict.fromkeys(self._private)),
        )

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

    def _reference(self, visit: _Visit) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "node": visit.node,
            "nodeInstance": "1",
            "execution": visit.execution,
        }

    def _started(self, visit: _Visit) -> dict[str, Any]:
        return {
            "reference": self._reference(visit),
            "occurrence": {"node": visit.node, "mapIndices": []},
            "attempt": 1,
            "input": None,
        }

    def _log(self, visit: _Visit, at: str | None, stream: str, line: str) -> None:
        if self._logged >= MAX_LOG_LINES:
            self.report.log_lines_dropped += 1
            return
        self._logged += 1
        body = {"execution": visit.execution, "stream": stream, "line": line}
        self._event("safe_log", at, body)

    def _stamp(self, at: str | None) -> str | None:
        """`at`, or the latest time already used when `at` is earlier: times never go back."""
        if not at:
            return None
        try:
            moment = datetime.fromisoformat(at)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        if self._clock is not None and moment < self._clock:
            self.report.times_clamped += 1
            return self._clock.isoformat().replace("+00:00", "Z")
        self._clock = moment
        return at

    def _stamp_only(self, at: str | None) -> str | None:
        """`at` when it reads as a time (unlike `_stamp`, the clock is not moved)."""
        if not at:
            return None
        try:
            datetime.fromisoformat(at)
        except ValueError:
            return None
        return at

    def _event(self, kind: str, at: str | None, body: dict[str, Any]) -> None:
        item: dict[str, Any] = {"event": {"kind": kind, **body}}
        stamped = self._stamp(at)
        if stamped:
            item["at"] = stamped
        self._pending.append(item)


def _earliest(a: str | None, b: str | None) -> str | None:
    """The earlier of two ISO times (either may be missing or unreadable)."""
    if not a or not b:
        return a or b
    try:
        first, second = datetime.fromisoformat(a), datetime.fromisoformat(b)
        if first.tzinfo is None:
            first = first.replace(tzinfo=UTC)
        if second.tzinfo is None:
            second = second.replace(tzinfo=UTC)
    except ValueError:
        return b
    return a if first <= second else b


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
