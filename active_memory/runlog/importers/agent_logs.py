"""What the Pi, Gemini CLI and Copilot CLI session importers share.

Each reads its client's own JSONL session log, streamed (jsonl.py: malformed lines are
reported in `skipped` and the rest is read), into a `SessionRun` (session.py), the
same builder as the Claude Code and Codex importers: one visit of node `worker` per
prompt, tool calls as receipts, failed tool calls as `safe_log` lines, errors
classified. `LogReader` holds the run and the bookkeeping every reader needs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from active_memory.runlog.importers.codex import _function_paths
from active_memory.runlog.importers.common import ImportResult, Skipped
from active_memory.runlog.importers.jsonl import repository_of
from active_memory.runlog.importers.report import add_skipped
from active_memory.runlog.importers.session import SessionRun

MAX_REASONS = 40
EXTRA_PATH_KEYS = ("absolute_path", "notebook_path", "filePath")
_EXIT_CODE = re.compile(
    r"(?:exit(?:ed)?(?: with)? code|exit status|Exit code:?)\s*[:=]?\s*(-?\d+)", re.I
)
_DECLINED = re.compile(
    r"(?i)\b(?:cancel(?:l)?ed by (?:the )?user|(?:rejected|denied|declined) by (?:the )?user|"
    r"user (?:rejected|denied|declined|cancel(?:l)?ed)|operation aborted|request aborted)"
)
"""A person's "no" or an interruption: neither a failure nor a success."""


class LogReader:
    """A session being read: its run (None until the log names the session)."""

    def __init__(self) -> None:
        self.run: SessionRun | None = None
        self.calls: dict[str, str] = {}

    def start(self, harness: str, session_id: str, cwd: str | None) -> SessionRun:
        """The run of session `session_id` (`<harness>-<id>`, as the hooks key it)."""
        run = SessionRun(harness=harness, run_id=f"{harness}-{session_id}")
        if cwd:
            adopt_cwd(run, cwd)
        self.run = run
        return run

    def ignore(self, reason: str) -> None:
        """Count an entry the record has no use for (the import report lists them)."""
        if self.run is None:
            return
        ignored = self.run.report.ignored
        if reason not in ignored and len(ignored) >= MAX_REASONS:
            reason = "other entries"
        ignored[reason] += 1

    def call(
        self, call_id: str, tool: str, arguments: Any, at: str | None, agent: str | None = None
    ) -> None:
        """One tool call with its arguments (an object); `agent`: the sub-agent's ID."""
        assert self.run is not None
        if call_id in self.calls:
            return  # written again when the log rewrites a message
        self.calls[call_id] = tool
        args = arguments if isinstance(arguments, dict) else {}
        paths, base = _function_paths(args, self.run.cwd)
        paths += [args[key] for key in EXTRA_PATH_KEYS if isinstance(args.get(key), str)]
        self.run.said("", at, agent)
        self.run.tool_call(tool, at, paths, base, agent, call_id=call_id, tool_input=args)

    def result(
        self,
        call_id: str,
        at: str | None,
        *,
        failed: bool,
        detail: str,
        declined: bool = False,
        exit_code: int | None = None,
        agent: str | None = None,
    ) -> None:
        """The outcome of a tool call: `detail` is its output (or error message) when it
        failed; `declined` a person's "no" (also read from `detail`); `agent` as for
        `call`."""
        assert self.run is not None
        tool = self.calls.get(call_id, "tool")
        if declined or (failed and _DECLINED.search(detail[:500])):
            self.run.tool_abandoned(call_id)
            self.run.tool_succeeded(at, agent)
        elif failed:
            if exit_code is None and (found := _EXIT_CODE.search(detail[:2000])):
                exit_code = int(found.group(1))
            self.run.tool_failed(
                tool,
                at,
                timed_out="timed out" in detail.lower(),
                detail=" ".join(detail.split())[:200],
                agent=agent,
                call_id=call_id,
                output=detail,
                exit_code=exit_code,
            )
        else:
            self.run.tool_succeeded(at, agent, call_id=call_id)


def adopt_cwd(run: SessionRun, cwd: str) -> None:
    """The session's working folder, and the checkout and remote it lies in."""
    run.cwd = cwd
    run.root, remote = repository_of(cwd)
    run.remote = run.remote or remote


def finish(reader: LogReader, path: str | Path, result: ImportResult) -> ImportResult:
    """Build the run record, or say why there is none."""
    run = reader.run
    if run is None or run.turns == 0:
        run_id = run.run_id if run is not None else None
        result.skipped.append(Skipped("no user turn in the session log", run_id=run_id))
        return result
    imported = run.build(str(path), [])
    add_skipped(imported, result.skipped)
    result.runs.append(imported)
    return result


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or a list of `{"text": …}` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""
