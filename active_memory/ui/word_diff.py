"""A unified diff as rows a page can show with the changed words marked.

`rows(unified)` reads the lines of a unified diff (history, review, a stale lesson's
cited code) and pairs each run of removed lines with the run of added lines after it:
a pair that is mostly alike is shown as its two lines with only the words that differ
marked, so a changed recommendation reads as the words changed, not as a whole
paragraph out and another in. Lines too unlike stay whole-line changes. Pure: text in,
plain data out (the template escapes it).
"""

from __future__ import annotations

import difflib
import re
from typing import Any

_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")
ALIKE = 0.4
"""Below this similarity a removed and an added line are shown whole, not word by word."""
MAX_WORD_DIFF_CHARS = 4000
"""Longer line pairs are not diffed word by word (quadratic in the worst case)."""


def rows(unified: list[str]) -> list[dict[str, Any]]:
    """Each line of `unified` as `{"kind", "segments": [[op, text], ...]}`: kind `head`
    (the `---`/`+++` lines), `hunk`, `same`, `del`, `add`; op `=` (unchanged words),
    `-` (removed) or `+` (added); a whole-line change is one segment."""
    out: list[dict[str, Any]] = []
    in_hunk = False
    i = 0
    while i < len(unified):
        line = unified[i]
        if not in_hunk and line.startswith(("---", "+++")):
            out.append(_row("head", "=", line))
            i += 1
            continue
        if line.startswith("@@"):
            in_hunk = True
            out.append(_row("hunk", "=", line))
            i += 1
            continue
        if line.startswith("-"):
            removed, i = _run(unified, i, "-")
            added, i = _run(unified, i, "+")
            out.extend(_paired(removed, added))
            continue
        if line.startswith("+"):
            added, i = _run(unified, i, "+")
            out.extend(_row("add", "+", text) for text in added)
            continue
        out.append(_row("same", "=", line[1:] if line.startswith(" ") else line))
        i += 1
    return out


def _row(kind: str, op: str, text: str) -> dict[str, Any]:
    return {"kind": kind, "segments": [[op, text]]}


def _run(lines: list[str], start: int, sign: str) -> tuple[list[str], int]:
    end = start
    while end < len(lines) and lines[end].startswith(sign) and not lines[end].startswith("@@"):
        end += 1
    return [line[1:] for line in lines[start:end]], end


def _paired(removed: list[str], added: list[str]) -> list[dict[str, Any]]:
    """Removed lines, then added ones; the n-th of each marked word by word when alike."""
    dels: list[dict[str, Any]] = []
    adds: list[dict[str, Any]] = []
    for n in range(max(len(removed), len(added))):
        old = removed[n] if n < len(removed) else None
        new = added[n] if n < len(added) else None
        if old is not None and new is not None:
            pair = words(old, new)
            if pair is not None:
                dels.append({"kind": "del", "segments": pair[0]})
                adds.append({"kind": "add", "segments": pair[1]})
                continue
        if old is not None:
            dels.append(_row("del", "-", old))
        if new is not None:
            adds.append(_row("add", "+", new))
    return dels + adds


def words(old: str, new: str) -> tuple[list[list[str]], list[list[str]]] | None:
    """The segments of `old` and `new` with the differing words marked, or None when
    the two are too unlike (or too long) to be read as one line changed."""
    if len(old) + len(new) > MAX_WORD_DIFF_CHARS:
        return None
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.ratio() < ALIKE:
        return None
    left: list[list[str]] = []
    right: list[list[str]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            _add(left, "=", "".join(a[i1:i2]))
            _add(right, "=", "".join(b[j1:j2]))
            continue
        _add(left, "-", "".join(a[i1:i2]))
        _add(right, "+", "".join(b[j1:j2]))
    return left, right


def _add(segments: list[list[str]], op: str, text: str) -> None:
    if not text:
        return
    if segments and segments[-1][0] == op:
        segments[-1][1] += text
    else:
        segments.append([op, text])
