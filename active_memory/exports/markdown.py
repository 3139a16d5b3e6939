"""Our marked section of `AGENTS.md` / `CLAUDE.md`, within the file's byte budget.

Only the text between our two markers is ours: a re-export replaces it and leaves every
other byte of the file as it was; a file without the markers gets the section appended.
The budget counts the whole file (the user's text too), because that is what the
reader loads: Codex reads `project_doc_max_bytes` (32 KiB by default) of the project's
AGENTS.md files and drops the rest without a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from active_memory.errors import UsageError
from active_memory.exports.entries import BEGIN, END, Candidate, entry, left_out_line
from active_memory.exports.selection import fill


def markdown_section(
    kept: Sequence[Candidate], namespace: str, left_line: str | None = None
) -> str:
    """Our section, markers included: the heading, each kept lesson, and the line that
    says what was left out (when something was)."""
    body = [
        BEGIN,
        "## Lessons learned (Active Memory)",
        "",
        f"Costly mistakes of past runs in `{namespace}`, each with what to do instead.",
    ]
    for candidate in kept:
        body += ["", entry(candidate)]
    if not kept and left_line is None:
        body += ["", "No active lessons yet."]
    if left_line is not None:
        body += ["", left_line]
    body.append(END)
    return "\n".join(body) + "\n"


def replace_section(existing: str | None, section: str, path: Path) -> str:
    """`existing` with our marked section replaced (or appended); nothing else changes."""
    if not existing:
        return section
    start = existing.find(BEGIN)
    end = existing.find(END)
    if start < 0 and end < 0:
        separator = (
            "" if existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
        )
        return existing + separator + section
    if start < 0 or end < start or existing.count(BEGIN) > 1 or existing.count(END) > 1:
        raise UsageError(
            f"{path}: the active-memory markers are damaged (one missing, repeated or out "
            "of order); fix or remove them by hand, nothing was written"
        )
    stop = end + len(END)
    if existing[stop : stop + 1] == "\n":
        stop += 1
    return existing[:start] + section + existing[stop:]


@dataclass(frozen=True, slots=True)
class Filled:
    """The file's new text and the lessons it holds, in file order."""

    text: str
    kept: list[Candidate]


def filled_file(
    existing: str | None,
    ranked: Sequence[Candidate],
    stale_omitted: int,
    namespace: str,
    path: Path,
    budget: int,
) -> Filled:
    """The whole file with our section holding what fits `budget` (see the module)."""
    total = len(ranked) + stale_omitted

    def text_of(kept: Sequence[Candidate]) -> str:
        left = total - len(kept)
        line = left_out_line(left, stale_omitted, namespace, path.name, budget) if left else None
        return replace_section(existing, markdown_section(kept, namespace, line), path)

    def size_of(kept: Sequence[Candidate]) -> int:
        return len(text_of(kept).encode("utf-8"))

    def cost(candidate: Candidate) -> int:
        return len(entry(candidate).encode("utf-8")) + 2  # and the blank line before it

    kept = fill(ranked, budget, cost, size_of)
    return Filled(text_of(kept), kept)
