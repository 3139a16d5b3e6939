"""How a changed citation is shown: its recorded text against the lines now that best
match it, as a unified diff with context, or "removed" when nothing resembles it.

The lines compared are found by content, never by the recorded line numbers
(docs/staleness.md, "The diff"): `best_region` lets each recorded line that says
something vote for where the text now starts (a line equal once indentation is set
aside; failing half of them, also a close one, half of its words, within
`NEAR` lines of the recorded place, where an edit in place leaves it), takes the place
with the most votes (the nearest to the recorded place on a tie), and widens it to the
recorded lines that moved with it. With fewer than half of the recorded lines placed,
the text is removed.

`staleness.shown(checkout, changed)` is the one view of a changed citation, for maintenance tasks
and the web view alike: `diff` (`--- recorded` / `+++ now`, hunks numbered as the file
numbers its lines, at most `DIFF_LINES` of at most `DIFF_LINE_CHARS` characters), or the
lines now at the recorded place for a citation without recorded text, and a `note`.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

DIFF_LINES = 40
"""Lines of a diff shown (then marked cut)."""
DIFF_LINE_CHARS = 240
"""Characters of one diff line shown (then marked cut)."""
LINES_SHOWN = 20
"""Lines now shown of a citation without recorded text."""
COMMON_LINE = 32
"""A line that occurs more often than this in the file says nothing about where."""
NEAR = 3
"""Lines from the recorded place within which a close (inexact) line counts."""
CLOSE = 0.5
"""Similarity of two lines' words (`difflib` ratio) from which they are close."""

_WORD = re.compile(r"\w+")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$")


def split_lines(text: str) -> list[str]:
    """`text`'s lines without their endings, split as the fingerprint splits bytes
    (`\\n`, `\\r\\n`, `\\r`; not form feeds or other Unicode breaks)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _telling(line: str) -> bool:
    """A line that can say where a text is: three characters or more, one of them a
    letter or digit (not a lone brace, `end`-less blank or punctuation)."""
    return len(line) >= 3 and any(ch.isalnum() for ch in line)


class Lines:
    """A file's lines now, as `best_region` reads them: each stripped, and where each
    telling one occurs (built once per file, for every citation of it in a pass)."""

    __slots__ = ("keys", "text", "where")

    def __init__(self, text: Sequence[str]) -> None:
        self.text = text
        self.keys = [line.strip() for line in text]
        self.where: dict[str, list[int]] = {}
        for j, key in enumerate(self.keys):
            if _telling(key):
                self.where.setdefault(key, []).append(j)

    def __len__(self) -> int:
        return len(self.text)


def best_region(
    old: Sequence[str], now: Lines | Sequence[str], near: int
) -> tuple[int, int] | None:
    """The lines of `now` (1-based, inclusive) that best match the recorded lines `old`,
    whose first line was `near`; None when too little of `old` is found (removed)."""
    if not isinstance(now, Lines):
        now = Lines(now)
    keys = [line.strip() for line in old]
    telling = [i for i, key in enumerate(keys) if _telling(key)]
    if not telling or not len(now):
        return None
    votes: Counter[int] = Counter()
    inexact = []  # the recorded lines found nowhere as they were
    for i in telling:
        found = now.where.get(keys[i], ())
        if len(found) <= COMMON_LINE:
            votes.update(j - i for j in found)
        if not found:
            inexact.append(i)
    start = _winner(votes, near - 1, len(telling))
    if start is None:
        # A close line counts only where an edit in place leaves it: near the old place.
        for i in inexact:
            words = Counter(_WORD.findall(keys[i]))
            at = near - 1 + i  # where an edit in place leaves it; then outwards
            for j in sorted(range(at - NEAR, at + NEAR + 1), key=lambda j: abs(j - at)):
                if 0 <= j < len(now) and _close(words, now.keys[j]):
                    votes[j - i] += 1
                    break  # the nearest close line is the one this line became
        start = _winner(votes, near - 1, len(telling))
    if start is None:
        return None
    return _widened(keys, now.keys, start)


def _close(words: Counter[str], line: str) -> bool:
    """Whether a line now shares at least half of the words of a recorded line
    (`words`): an edited line (`timeout = 30` and `timeout = 5`), not a neighbour
    (`def check(limit)` and `def other(x)`)."""
    other = Counter(_WORD.findall(line))
    total = words.total() + other.total()
    return bool(total) and 2 * (words & other).total() >= CLOSE * total


def _winner(votes: Counter[int], near: int, telling: int) -> int | None:
    """The start (0-based) with the most votes, nearest `near` on a tie; None unless at
    least half of the telling recorded lines voted for it."""
    if not votes:
        return None
    start = min(votes, key=lambda s: (-votes[s], abs(s - near), s))
    return start if votes[start] * 2 >= telling else None


def _widened(old: Sequence[str], now: Sequence[str], start: int) -> tuple[int, int]:
    """The region of `now` that the recorded lines map to around `start` (0-based):
    from the first matched line to the last, widened by the recorded lines before and
    after them that matched nothing (edited lines stay inside the region). Both sides
    stripped."""
    size = len(old)
    lo, hi = max(0, start - size), min(len(now), max(start, 0) + 2 * size)
    matcher = difflib.SequenceMatcher(None, list(old), list(now[lo:hi]), False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    if not blocks:
        first = min(max(start, 0), len(now) - 1)
        return first + 1, min(len(now), first + size)
    head, tail = blocks[0], blocks[-1]
    first = max(lo, lo + head.b - head.a)
    last = min(hi, lo + tail.b + tail.size + (size - tail.a - tail.size))
    return first + 1, max(first + 1, last)


@dataclass(frozen=True, slots=True)
class Shown:
    """What a changed citation shows: a diff, or the lines now, and a note."""

    diff: tuple[str, ...] = ()
    now: tuple[str, ...] = ()
    note: str = ""
    cut: bool = False


def recorded_diff(
    old: Sequence[str], now: Sequence[str], old_first: int, now_first: int
) -> tuple[list[str], bool]:
    """A unified diff from the recorded lines `old` (the file's line `old_first` on) to
    `now` (line `now_first` on), hunks numbered as the file numbers its lines, masked
    alike on both sides (a masked credential is not a change) and bounded; and whether
    it was cut."""
    from active_memory.credentials import mask

    current = [mask(line) for line in now]
    diff = list(difflib.unified_diff(list(old), current, "recorded", "now", lineterm=""))
    diff = [_numbered(line, old_first, now_first) for line in diff]
    cut = False
    if len(diff) > DIFF_LINES:
        diff, cut = diff[:DIFF_LINES], True
    shown = []
    for line in diff:
        if len(line) > DIFF_LINE_CHARS:
            line, cut = line[:DIFF_LINE_CHARS] + " …", True
        shown.append(line)
    return shown, cut


def _numbered(line: str, old_first: int, now_first: int) -> str:
    """A hunk header of a diff between two line lists, renumbered as lines of files."""
    found = _HUNK.match(line)
    if found is None:
        return line
    a, b, c, d = found.groups()

    def side(start: str, count: str | None, first: int) -> str:
        at = int(start) + max(first, 1) - 1  # an empty side (+0,0) stays at 0
        return f"{at},{count}" if count is not None else f"{at}"

    return f"@@ -{side(a, b, old_first)} +{side(c, d, now_first)} @@"
