"""Grouping lessons by where they apply: the Cursor rules and the skill's reference files
each hold the lessons of one folder (docs/export.md, "Grouped by folder").

A lesson's area is the top folder of its first path association (`src/api/x.py` →
`src`); a lesson whose first path is a file at the root is in `root`; one with no path
association (identifiers, keywords, commands only) is in `general`. A group whose
lessons weigh more than the cap (lines of a rule, bytes of a reference file) is split
by the next folder level (`src/api`, `src/web`, …, down to `MAX_DEPTH` levels), and the
pieces, in folder order, are packed again into as few groups as fit (`src`, `src-2`,
each saying which folders it covers); what still weighs too much is cut into parts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from active_memory.exports.entries import Candidate, globs_of

GENERAL = "general"
ROOT = "root"
MAX_DEPTH = 3
_COVERS_SHOWN = 4


@dataclass(frozen=True, slots=True)
class Group:
    """Lessons of one area; `part` > 1 for its further groups when it was split, and
    `covers` the folders below the area it holds then."""

    area: str
    members: tuple[Candidate, ...]
    part: int = 1
    covers: tuple[str, ...] = ()

    @property
    def globs(self) -> list[str]:
        """Every glob of its lessons, in order, once each."""
        return list(dict.fromkeys(g for c in self.members for g in globs_of(c.lesson)))

    @property
    def label(self) -> str:
        """For people: `src/`, `src/api/, src/web/`, `files at the repository root`."""
        if self.covers:
            shown = ", ".join(f"{c}/" for c in self.covers[:_COVERS_SHOWN])
            more = len(self.covers) - _COVERS_SHOWN
            return shown + (f" and {more} more folders" if more > 0 else "")
        if self.area == GENERAL:
            return "no particular path (identifiers, keywords, commands)"
        if self.area == ROOT:
            return "files at the repository root"
        return f"{self.area}/" + (f" (part {self.part})" if self.part > 1 else "")

    def slug(self) -> str:
        """A file-name stem: `src`, `root`, `general`, `src-2`."""
        stem = re.sub(r"[^a-z0-9]+", "-", self.area.lower()).strip("-") or "area"
        return stem if self.part == 1 else f"{stem}-{self.part}"


def area_of(candidate: Candidate, depth: int = 1) -> str:
    """The lesson's area at `depth` folder levels (see the module)."""
    lesson = candidate.lesson
    paths = [*lesson.associations.files, *lesson.associations.folders]
    if not paths:
        return GENERAL
    first = paths[0].strip("/")
    is_folder = first in (f.strip("/") for f in lesson.associations.folders)
    parts = first.split("/")
    folders = parts if is_folder else parts[:-1]
    if not folders:
        return ROOT
    return "/".join(folders[:depth])


def group(kept: Sequence[Candidate], weight: Callable[[Candidate], int], cap: int) -> list[Group]:
    """`kept` grouped by area, in the order each area first appears (members in their
    order), every group heavier than `cap` split (see the module)."""
    weights = {c.lesson.id: weight(c) for c in kept}
    splitter = _Splitter(lambda members: sum(weights[c.lesson.id] for c in members), cap)
    out = [piece for first in _by_area(kept, 1) for piece in splitter.split(first, 1)]
    return _unique_slugs(out)


def _by_area(members: Sequence[Candidate], depth: int) -> list[Group]:
    areas: dict[str, list[Candidate]] = {}
    for candidate in members:
        areas.setdefault(area_of(candidate, depth), []).append(candidate)
    return [Group(area, tuple(found)) for area, found in areas.items()]


@dataclass(frozen=True, slots=True)
class _Splitter:
    weigh: Callable[[Sequence[Candidate]], int]
    cap: int

    def split(self, item: Group, depth: int) -> list[Group]:
        if self.weigh(item.members) <= self.cap or len(item.members) == 1:
            return [item]
        if item.area not in (GENERAL, ROOT) and depth < MAX_DEPTH:
            deeper = sorted(_by_area(item.members, depth + 1), key=lambda g: _natural(g.area))
            if len(deeper) > 1:
                pieces = [p for sub in deeper for p in self.split(sub, depth + 1)]
                return self._pack(item.area, pieces)
        return self._parts(item)

    def _pack(self, area: str, pieces: list[Group]) -> list[Group]:
        """Consecutive `pieces` merged while they fit, as parts of `area`."""
        bins: list[list[Group]] = []
        for piece in pieces:
            if bins and self.weigh([c for g in (*bins[-1], piece) for c in g.members]) <= self.cap:
                bins[-1].append(piece)
            else:
                bins.append([piece])
        return [
            Group(
                area,
                tuple(c for g in held for c in g.members),
                number,
                tuple(dict.fromkeys(c for g in held for c in (g.covers or (g.area,)))),
            )
            for number, held in enumerate(bins, start=1)
        ]

    def _parts(self, item: Group) -> list[Group]:
        """`item` cut into consecutive parts as heavy as fit (a lesson is never cut)."""
        chunks: list[list[Candidate]] = [[]]
        for candidate in item.members:
            if chunks[-1] and self.weigh([*chunks[-1], candidate]) > self.cap:
                chunks.append([])
            chunks[-1].append(candidate)
        first = item.part
        return [
            Group(item.area, tuple(chunk), first + n, item.covers) for n, chunk in enumerate(chunks)
        ]


def _natural(path: str) -> list[tuple[int, int | str]]:
    """Sort key that puts `mod2` before `mod10`."""
    return [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", path) if p]


def _unique_slugs(groups: list[Group]) -> list[Group]:
    """A group whose slug another group took (`src_a` and `src-a`, or `src-2` and the
    second part of `src`) gets the next free part number."""
    used: set[str] = set()
    out = []
    for item in groups:
        while item.slug() in used:
            item = Group(item.area, item.members, item.part + 1, item.covers)
        used.add(item.slug())
        out.append(item)
    return out
