"""Cursor rules: one `.cursor/rules/active-memory-<area>.mdc` per folder group.

Each rule holds the lessons of one area (exports/areas.py): front matter `description`
(the area and its first titles), `globs` (every file and folder glob of its lessons,
comma-separated), `alwaysApply: false` and `lessons` (the IDs and revisions it holds);
then the lessons as in AGENTS.md. The lessons with no path association form the
`general` rule, which has no globs: Cursor's agent reads it when its description fits
the task ("apply intelligently"). A rule is kept under `MAX_RULE_LINES` lines (Cursor
advises under 500) by splitting its area further. The budget counts every rule we write.

Ours are the files named `active-memory-*.mdc` whose front matter has a `lessons:` (or,
from older exports, `lesson:`) key: a rule no longer wanted is removed, every other
rule is left alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from active_memory.exports.areas import Group, area_of, group
from active_memory.exports.entries import BEGIN, END, Candidate, entry, globs_of, left_out_line
from active_memory.exports.files import Written, read, remove, write
from active_memory.exports.selection import fill

RULE_PREFIX = "active-memory-"
MAX_RULE_LINES = 500
DESCRIPTION_CHARS = 300


def rule_file(item: Group, left_line: str | None = None) -> str:
    """One group's `.mdc` text."""
    globs = item.globs
    titles = "; ".join(c.lesson.title for c in item.members[:3])
    description = f"Lessons learned (Active Memory) for {item.label}: {titles}"
    if len(description) > DESCRIPTION_CHARS:
        description = description[: DESCRIPTION_CHARS - 1] + "…"
    held = ", ".join(f"{c.lesson.id} r{c.lesson.revision}" for c in item.members)
    header = [
        "---",
        f"description: {json.dumps(description, ensure_ascii=False)}",
        f"globs: {json.dumps(', '.join(globs), ensure_ascii=False)}" if globs else "globs:",
        "alwaysApply: false",
        f"lessons: {json.dumps(held)}",
        "---",
        "",
        BEGIN,
        f"# Lessons learned for {item.label} (Active Memory)",
    ]
    body = [f"\n{entry(c)}" for c in item.members]
    if left_line is not None:
        body.append(f"\n{left_line}")
    return "\n".join([*header, *body, END]) + "\n"


HEADER_LINES = 12
"""The front matter, heading, markers and a left-out line of a rule, in lines."""


def _lines(candidate: Candidate) -> int:
    return entry(candidate).count("\n") + 2


def rule_files(
    kept: Sequence[Candidate], left: Mapping[str, tuple[int, int]], namespace: str, budget: int
) -> dict[str, tuple[str, Group]]:
    """File name → (text, group) for `kept`; `left` maps a top-level area to (left out,
    of them stale omitted), said in the first rule of that area."""
    files: dict[str, tuple[str, Group]] = {}
    told: set[str] = set()
    for item in group(kept, _lines, MAX_RULE_LINES - HEADER_LINES):
        top = item.area.split("/")[0]
        line = None
        if top in left and top not in told:
            told.add(top)
            count, stale = left[top]
            line = left_out_line(count, stale, namespace, "the Cursor rules", budget)
        files[f"{RULE_PREFIX}{item.slug()}.mdc"] = (rule_file(item, line), item)
    return files


def export_rules(
    ranked: Sequence[Candidate],
    stale_omitted: Sequence[Candidate],
    namespace: str,
    root: Path,
    budget: int,
) -> tuple[list[Written], list[Candidate]]:
    """Write the rules that fit `budget` under `root/.cursor/rules`, remove ours that are
    no longer wanted; the files and the lessons kept."""

    def files_of(kept: Sequence[Candidate]) -> dict[str, tuple[str, Group]]:
        chosen = {c.lesson.id for c in kept}
        left: dict[str, tuple[int, int]] = {}
        for candidate, omitted in [(c, 0) for c in ranked] + [(c, 1) for c in stale_omitted]:
            if candidate.lesson.id not in chosen:
                count, stale = left.get(area_of(candidate), (0, 0))
                left[area_of(candidate)] = (count + 1, stale + omitted)
        return rule_files(kept, left, namespace, budget)

    def size_of(kept: Sequence[Candidate]) -> int:
        return sum(len(text.encode("utf-8")) for text, _ in files_of(kept).values())

    def cost(candidate: Candidate) -> int:
        globs = ", ".join(globs_of(candidate.lesson))
        return len(entry(candidate).encode("utf-8")) + len(globs.encode("utf-8")) + 16

    kept = fill(ranked, budget, cost, size_of)
    folder = root / ".cursor" / "rules"
    done: list[Written] = []
    wanted = files_of(kept)
    for name, (text, _) in wanted.items():
        path = folder / name
        done.append(write(path, read(path), text))
    if folder.is_dir():
        for old in sorted(folder.glob(f"{RULE_PREFIX}*.mdc")):
            if old.name not in wanted and _is_ours(read(old) or ""):
                done.append(remove(old))
    return done, [c for _, item in wanted.values() for c in item.members]


def _is_ours(text: str) -> bool:
    header = text.split("\n---\n", 1)[0] if text.startswith("---\n") else ""
    return "\nlessons: " in header or "\nlesson: " in header
