"""Lessons written as the rules files teams already keep (docs/export.md).

`lessons export --format agents-md|claude-md|cursor-rules|skill` turns the active
repository lessons of one namespace into files their readers load, each within a byte
budget filled by the most effective, non-stale lessons first (`selection.py`), with a
line saying how many were left out and how to see them:

- `agents-md` / `claude-md`: a marked section of `AGENTS.md` / `CLAUDE.md`
  (`markdown.py`); the budget counts the whole file;
- `cursor-rules`: one `.cursor/rules/active-memory-<area>.mdc` per folder group
  (`cursor.py`, `areas.py`);
- `skill`: an Agent Skill folder with a short `SKILL.md` and reference files by folder
  (`skill.py`), in the folder its client loads skills from.

Stale lessons (their cited code changed) are marked, after every non-stale one, or left
out (`stale="omit"`). Every lesson carries its ID and revision, so an export can be read
back and compared with the store (`read_section`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from active_memory.exports.entries import BEGIN as BEGIN
from active_memory.exports.entries import END as END
from active_memory.exports.entries import Candidate as Candidate
from active_memory.exports.entries import globs_of as globs_of
from active_memory.exports.entries import read_section as read_section
from active_memory.exports.files import Written as Written
from active_memory.exports.markdown import markdown_section as markdown_section
from active_memory.exports.markdown import replace_section as replace_section
from active_memory.exports.selection import STALE_MODES as STALE_MODES
from active_memory.exports.selection import StaleMode as StaleMode
from active_memory.exports.skill import SKILL_FOLDER as SKILL_FOLDER
from active_memory.lessons import Lesson
from active_memory.store.effectiveness import Effectiveness

Format = Literal["agents-md", "claude-md", "cursor-rules", "skill"]
FORMATS: tuple[Format, ...] = ("agents-md", "claude-md", "cursor-rules", "skill")
DEFAULT_BUDGETS: dict[Format, int] = {
    # Codex reads project_doc_max_bytes = 32768 of the project's AGENTS.md files.
    "agents-md": 32 * 1024,
    # Claude Code warns past 40,000 characters of CLAUDE.md and rules together.
    "claude-md": 32 * 1024,
    "cursor-rules": 32 * 1024,
    # Loaded a reference file at a time; the whole folder is bounded for the repository.
    "skill": 256 * 1024,
}
MIN_BUDGET = 1024


@dataclass(slots=True)
class ExportResult:
    """What an export wrote and chose: the lessons in the files (most effective first,
    as the files hold them), those left out, the stale ones marked or omitted, and the
    size of what counts toward the budget."""

    files: list[Written]
    exported: list[Candidate]
    left_out: list[Lesson]
    stale_omitted: list[Lesson] = field(default_factory=list)
    budget: int = 0
    size: int = 0

    @property
    def stale_marked(self) -> list[str]:
        """IDs of the exported lessons marked as possibly outdated."""
        return [c.lesson.id for c in self.exported if c.stale is not None]


def export(
    fmt: Format,
    lessons: Sequence[Lesson],
    namespace: str,
    root: Path,
    *,
    effectiveness: Mapping[str, Effectiveness] | None = None,
    stale: Mapping[str, str] | None = None,
    stale_mode: StaleMode = "mark",
    budget: int | None = None,
) -> ExportResult:
    """Write `lessons` (active, of `namespace`) in format `fmt` under `root`: the
    checkout root for the Markdown formats and Cursor rules, the skills folder for a
    skill. `stale` maps a stale lesson's ID to what changed; `budget` (bytes) defaults
    to the format's (`DEFAULT_BUDGETS`)."""
    from active_memory.exports.cursor import export_rules
    from active_memory.exports.markdown import filled_file
    from active_memory.exports.selection import export_order
    from active_memory.exports.skill import export_skill

    limit = DEFAULT_BUDGETS[fmt] if budget is None else budget
    offer = export_order(lessons, effectiveness or {}, stale or {}, stale_mode)
    omitted = [Candidate(lesson, (stale or {}).get(lesson.id)) for lesson in offer.stale_omitted]
    if fmt in ("agents-md", "claude-md"):
        from active_memory.exports.files import read, write

        path = root / ("AGENTS.md" if fmt == "agents-md" else "CLAUDE.md")
        before = read(path)
        done = filled_file(before, offer.ranked, len(omitted), namespace, path, limit)
        files = [write(path, before, done.text)]
        kept, size = done.kept, len(done.text.encode("utf-8"))
    else:
        if fmt == "cursor-rules":
            files, kept = export_rules(offer.ranked, omitted, namespace, root, limit)
        else:
            files, kept = export_skill(offer.ranked, len(omitted), namespace, root, limit)
        size = sum(w.path.stat().st_size for w in files if w.action != "removed")
    chosen = {c.lesson.id for c in kept}
    left = [c.lesson for c in offer.ranked if c.lesson.id not in chosen] + offer.stale_omitted
    return ExportResult(files, kept, left, offer.stale_omitted, limit, size)
