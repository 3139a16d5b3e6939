"""What one session import saw: the `report` of `import claude|codex --json`.

Counts only, never content: turns by how they ended, tool calls per node, the sub-agents
joined, lines read but not turned into anything (by reason), paths dropped from receipts
because they lie outside the workspace, and the bounds that applied.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from active_memory.runlog.importers.common import ImportedRun, Skipped


@dataclass(slots=True)
class ImportReport:
    """Accumulated while a session log is read; `to_json` is the `--json` report."""

    turns: Counter[str] = field(default_factory=Counter)
    """Turns (user prompts) by how they ended: verified, interrupted, timeout, …"""
    tool_calls: Counter[str] = field(default_factory=Counter)
    """Tool calls per node (`worker`, `worker/agent-<id>`)."""
    subagents: list[dict[str, Any]] = field(default_factory=list)
    """Each sub-agent joined: its node, where it was read from, its tool calls."""
    ignored: Counter[str] = field(default_factory=Counter)
    """Lines read on purpose without opening a turn or a call, by reason."""
    paths_dropped: Counter[str] = field(default_factory=Counter)
    """Paths left out of receipts: `home` (`~`, `$HOME`), `outside` the workspace."""
    times_clamped: int = 0
    """Event times raised to the previous event's time (a log's clock went backwards)."""
    receipts_dropped: int = 0
    tool_failures: int = 0
    """Failed tool calls read (the record keeps at most 256 of them)."""
    log_lines_dropped: int = 0
    private_prompts: int = 0
    """Prompts that held `<private>` text (cut out, privacy.py)."""
    private_masked: int = 0
    """Strings of the record where private text was cut or masked."""

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON object (stable keys, zero counts included)."""
        return {
            "turns": sum(self.turns.values()),
            "turns_by_ending": dict(sorted(self.turns.items())),
            "tool_calls": sum(self.tool_calls.values()),
            "tool_calls_per_node": dict(sorted(self.tool_calls.items())),
            "subagents_joined": len(self.subagents),
            "subagents": self.subagents,
            "lines_ignored": dict(sorted(self.ignored.items())),
            "paths_dropped": {
                "home": self.paths_dropped["home"],
                "outside": self.paths_dropped["outside"],
            },
            "times_clamped": self.times_clamped,
            "receipts_dropped": self.receipts_dropped,
            "tool_failures": self.tool_failures,
            "log_lines_dropped": self.log_lines_dropped,
            "private": {"prompts": self.private_prompts, "masked": self.private_masked},
            "excluded": {"receipts": 0, "paths": 0, "mentions": 0},
        }

    def summary(self) -> str:
        """One line for a person: turns, calls per node, sub-agents, dropped paths."""
        nodes = ", ".join(f"{node} {n}" for node, n in sorted(self.tool_calls.items()))
        endings = ", ".join(f"{ending} {n}" for ending, n in sorted(self.turns.items()))
        parts = [
            f"{sum(self.turns.values())} turns" + (f" ({endings})" if endings else ""),
            f"{sum(self.tool_calls.values())} tool calls" + (f" ({nodes})" if nodes else ""),
        ]
        if self.tool_failures:
            parts.append(_count(self.tool_failures, "failed call"))
        if self.subagents:
            parts.append(_count(len(self.subagents), "sub-agent") + " joined")
        dropped = self.paths_dropped["home"] + self.paths_dropped["outside"]
        if dropped:
            parts.append(_count(dropped, "path") + " outside the workspace dropped")
        if self.private_prompts:
            parts.append(_count(self.private_prompts, "prompt") + " with <private> text cut")
        if self.ignored:
            parts.append(f"{sum(self.ignored.values())} lines ignored (see --json)")
        return ", ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def add_skipped(run: ImportedRun, skipped: list[Skipped]) -> None:
    """Put the log's skipped (malformed) lines, counted by reason, into the run's report."""
    if run.report is None:
        return
    counts: Counter[str] = Counter(item.reason for item in skipped if item.run_id is None)
    run.report["lines_skipped"] = dict(sorted(counts.items()))
