"""A run record from one interactive session log (Claude Code, Codex, Pi, Gemini CLI,
Copilot CLI): one worker node. `SessionRun` is fed what a log shows, then builds it.

Mapping (see docs/importers.md):

- each prompt typed is one visit (execution) of node `worker` (session_record.py):
  `node_started` at it, its text (bounded, screened) the event's `input`;
- how a turn ended and what that records (session_endings.py): a turn without its
  answer is interrupted, never `verified`; an API error is `timeout`, `crash`, `refusal`
  or no outcome; the run's outcome is its last turn's;
- a turn interrupted by the user has no outcome either, unless the tool call it ended on
  had timed out (then `timeout`): an interruption is the user's decision, not a failure;
- tool calls become receipts (session_receipts.py); failed and timed-out tool calls
  become `tool_failures` (failure_log.py) and `safe_log` lines quoting the error;
- a sub-agent's run is a visit of a node of its own, `worker/agent-<id>`, with its own
  outcome, receipts and lines;
- event times never go backwards (session_timeline.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from active_memory.runlog.canonical import graph_hash
from active_memory.runlog.importers.common import ImportedRun, checked, trim
from active_memory.runlog.importers.failure_log import FailureLog
from active_memory.runlog.importers.privacy import (
    Scrubber,
    private_passages,
    screen_credentials,
    without_private,
)
from active_memory.runlog.importers.report import ImportReport
from active_memory.runlog.importers.session_endings import Ending as Ending
from active_memory.runlog.importers.session_endings import classify_error as classify_error
from active_memory.runlog.importers.session_endings import error_line as error_line
from active_memory.runlog.importers.session_endings import outcome_of, run_outcome
from active_memory.runlog.importers.session_receipts import (
    MAX_PATHS_PER_TOOL as MAX_PATHS_PER_TOOL,
)
from active_memory.runlog.importers.session_receipts import Receipts, workspace_path
from active_memory.runlog.importers.session_receipts import cd_targets as cd_targets
from active_memory.runlog.importers.session_receipts import glob_prefix as glob_prefix
from active_memory.runlog.importers.session_record import WORKER as WORKER
from active_memory.runlog.importers.session_record import (
    Visit,
    node_started,
    owner_name,
    reference,
    repository_section,
    runtime_section,
    session_graph,
)
from active_memory.runlog.importers.session_record import agent_node as agent_node
from active_memory.runlog.importers.session_timeline import MAX_LOG_LINES as MAX_LOG_LINES
from active_memory.runlog.importers.session_timeline import Timeline, earliest, stamp_only
from active_memory.runlog.record import RUN_SCHEMA

MAX_PROMPT_CHARS = 4000
"""A prompt kept as `node_started` input is trimmed to this many characters."""


@dataclass(slots=True)
class SessionRun:
    """Accumulates one session's turns, tool calls and notes, then builds the record.

    Memory stays bounded while a log streams through: receipts keep the first
    `KEPT_FIRST` and a window of the latest (SPEC §3, session_receipts.py), `safe_log`
    lines stop at `MAX_LOG_LINES` (session_timeline.py); what is dropped is counted in
    `report`.
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
    _completions: dict[str, str] = field(default_factory=dict)
    _turn: Visit | None = None
    _agents: dict[str, Visit] = field(default_factory=dict)
    _agent_runs: Counter[str] = field(default_factory=Counter)
    _turns: int = 0
    _last_ending: Ending | None = None
    _private: list[str] = field(default_factory=list)
    _turn_started: dict[str, Any] | None = None
    failures: FailureLog | None = None
    _timeline: Timeline = field(init=False)
    _receipts: Receipts = field(init=False)

    def __post_init__(self) -> None:
        if self.failures is None:
            self.failures = FailureLog(self.harness)
        self._timeline = Timeline(self.report)
        self._receipts = Receipts(self.report)

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
        self._turn = Visit(WORKER, str(self._turns), at, last_at=at)
        self._timeline.event("node_started", at, node_started(self.run_id, self._turn))
        self._turn_started = self._timeline.pending[-1]["event"]
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

    def _current(self, at: str | None, agent: str | None = None) -> Visit:
        if agent is not None:
            return self.agent(agent, at)
        # Tool calls before any prompt (a resumed session) belong to an implicit turn.
        if self._turn is None:
            self.open_turn(at)
        assert self._turn is not None
        # The turn settles at the time of the last thing that happened in it.
        self._turn.last_at = at or self._turn.last_at
        return self._turn

    def agent(self, agent_id: str, at: str | None) -> Visit:
        """The open run of sub-agent `agent_id` (node `worker/agent-<id>`), started if new."""
        visit = self._agents.get(agent_id)
        if visit is None:
            self._agent_runs[agent_id] += 1
            runs = self._agent_runs[agent_id]
            execution = f"agent-{agent_id}" + (f"-{runs}" if runs > 1 else "")
            visit = Visit(agent_node(agent_id), execution, at, last_at=at)
            self._agents[agent_id] = visit
            self._timeline.event("node_started", at, node_started(self.run_id, visit))
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
        stamped = self._timeline.stamp(at)
        if stamped:
            receipt["at"] = stamped
        self.report.tool_calls[visit.node] += 1
        self._receipts.add(receipt)

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
        self._timeline.log(visit.execution, at, "error", line[:500])
        if call_id is not None:
            self._failure_log().failed(
                call_id,
                stamp_only(at),
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
            self._failure_log().succeeded(call_id, stamp_only(at))

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
        self._timeline.log(
            visit.execution, at, "system", f"turn {ending}" + (f": {detail}" if detail else "")
        )

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

    def _settle(self, visit: Visit, unanswered: str) -> Ending:
        if visit.ending is None and not visit.answered:
            # No answer in the log (cut off, interrupted without a marker, no
            # `task_complete`): never `verified`; recorded as interrupted.
            visit.ending, visit.detail = "interrupted", unanswered
            self._timeline.log(
                visit.execution, visit.last_at, "system", f"turn interrupted: {unanswered}"
            )
        ending: Ending = visit.ending or "verified"
        if visit.final_text and ending != "interrupted":
            self._completions[visit.execution] = trim(visit.final_text)
        outcome = outcome_of(ending)
        if outcome is not None:
            completion = {"reference": reference(self.run_id, visit), "outcome": outcome}
            self._timeline.event("node_completed", visit.last_at, {"completion": completion})
        return ending

    def workspace_path(self, raw: str, base: str | None) -> str | None:
        """A tool's path argument, root-relative; None (and counted) when outside the
        workspace (session_receipts.py, `workspace_path`)."""
        return workspace_path(raw, base or self.cwd, self.root or self.cwd, self.report)

    # --- building ----------------------------------------------------------------

    @property
    def turns(self) -> int:
        """How many turns (visits of `worker`) were read."""
        return self._turns

    def build(self, source: str, notes: list[str]) -> ImportedRun:
        """The validated run record of the session."""
        self.close_turn()
        outcome = run_outcome(self._last_ending)
        events: list[dict[str, Any]] = [{"sequence": 1, "event": {"kind": "run_started"}}]
        pending = self._timeline.pending
        began = earliest(self.first_at, next((e["at"] for e in pending if "at" in e), None))
        if began:
            events[0]["at"] = began
        for item in pending:
            events.append({"sequence": len(events) + 1, **item})
        terminal: dict[str, Any] = {
            "sequence": len(events) + 1,
            "event": {"kind": "terminal", "result": {"status": outcome, "output": None}},
        }
        events.append(terminal)
        graph = session_graph()
        data: dict[str, Any] = {
            "schema": RUN_SCHEMA,
            "run_id": self.run_id,
            "title": self.title or f"{self.harness} session {self.run_id}",
            "outcome": outcome,
            "seeded": False,
            "source": {
                k: v
                for k, v in {
                    "repository": owner_name(self.remote),
                    "branch": self.branch,
                    "revision": self.revision,
                }.items()
                if v
            },
            "repository": repository_section(self.remote, self.root or self.cwd, self.run_id),
            "graph": {"name": f"{self.harness}-session", "hash": graph_hash(graph), "ir": graph},
            "runtime": runtime_section(self.harness, self.model, self.provider),
            "events": events,
            "completions": self._completions,
            "receipts": self._receipts.kept(),
        }
        if self.report.receipts_dropped:
            data["receipts_dropped"] = self.report.receipts_dropped
        log = self._failure_log()
        data["tool_failures"] = log.entries()
        data["tool_failures_dropped"] = log.dropped
        self.report.tool_failures = len(data["tool_failures"]) + log.dropped
        if self.last_at:
            terminal["at"] = self._timeline.stamp(self.last_at)
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
