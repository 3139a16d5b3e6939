"""Is a lesson's cited code still what it was written against?

At publish, each citation of a new or adapted lesson gets the SHA-256 of the cited lines
as the checkout has them (`fingerprint`); the whole file when the citation has no lines.
Later, a citation whose lines hash differently (or whose file is gone, or shorter than
the range) is *changed*, and a lesson with a changed citation is *stale*
(docs/staleness.md). A citation without a fingerprint (stored before this existed, or
its file unreadable at publish) is never called changed: unknown is not stale.

Only current files of the checkout are read (`Checkout.check_paths`), up to
`MAX_FILE_BYTES` each.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from active_memory.checkout.citations import Checkout
from active_memory.lessons import Citation

MAX_FILE_BYTES = 4 * 1024 * 1024
"""A larger cited file is not fingerprinted (and never called changed)."""
EXCERPT_BYTES = 4096
"""The recorded text of a citation: at most this many bytes of whole cited lines."""
DIFF_LINES = 40
"""Lines of a diff shown to maintenance (then marked cut)."""
DIFF_LINE_CHARS = 240
"""Characters of one diff line shown (then marked cut)."""


def _lines_of(path: Path, lines: tuple[int, int] | None) -> bytes | None:
    from active_memory.reader import read_file_bytes

    try:
        # Regular files only, never blocking (a FIFO is refused), at most MAX_FILE_BYTES.
        data = read_file_bytes(path, MAX_FILE_BYTES)
    except OSError:
        return None
    if data is None or lines is None:
        return data
    start, end = lines
    split = data.splitlines(keepends=True)
    if end > len(split):
        return None  # the range is not there (any more)
    # Line endings are part of the text: a CRLF conversion is a change of those lines.
    return b"".join(split[start - 1 : end])


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _readable(checkout: Checkout, citations: Iterable[Citation]) -> dict[str, Path]:
    verdicts = checkout.check_paths({c.path for c in citations})
    return {
        cited: checkout.root / verdict.file
        for cited, verdict in verdicts.items()
        if verdict.current and verdict.file is not None
    }


def fingerprint(checkout: Checkout, citations: Sequence[Citation]) -> list[Citation]:
    """`citations` with the hash of what each cites now (None where unreadable) and its
    recorded text (`excerpt_of`)."""
    files = _readable(checkout, citations)
    out: list[Citation] = []
    for c in citations:
        data = _lines_of(files[c.path], c.lines) if c.path in files else None
        update = {
            "sha256": _digest(data) if data is not None else None,
            "excerpt": excerpt_of(data, whole_file=c.lines is None) if data is not None else None,
        }
        out.append(c.model_copy(update=update))
    return out


def excerpt_of(data: bytes, *, whole_file: bool) -> str | None:
    """The recorded text of cited bytes: the first whole lines within `EXCERPT_BYTES`,
    credentials masked (credentials.py: a lesson never stores a secret).

    None when nothing can be kept honestly: a whole-file citation over the bound (its
    first lines would read as the whole file), a first line over the bound, or text
    whose masking spans lines (the diff would then misalign)."""
    from active_memory.credentials import mask

    if whole_file and len(data) > EXCERPT_BYTES:
        return None
    kept: list[bytes] = []
    size = 0
    for line in data.splitlines(keepends=True):
        if size + len(line) > EXCERPT_BYTES:
            break
        kept.append(line)
        size += len(line)
    if not kept:
        return None
    text = b"".join(kept).decode("utf-8", errors="replace")
    masked = mask(text)
    if len(masked.splitlines()) != len(text.splitlines()):
        return None
    return masked


def lines_now(checkout: Checkout, path: str, lines: tuple[int, int] | None) -> list[str]:
    """The cited lines as the checkout has them now (the whole file without `lines`);
    [] when the file cannot be read (bounded reader, `MAX_FILE_BYTES`)."""
    from active_memory.reader import read_file_bytes

    try:
        data = read_file_bytes(checkout.root / path, MAX_FILE_BYTES)  # never a FIFO
    except OSError:
        return []
    if data is None:
        return []
    split = data.decode("utf-8", errors="replace").splitlines()
    start, end = lines if lines is not None else (1, len(split))
    return split[start - 1 : end]


def recorded_diff(citation: Citation, now: list[str]) -> tuple[list[str], bool]:
    """A unified diff from the citation's recorded text to `now` (the cited lines as they
    are now, `now[0]` being its first cited line), and whether it was cut.

    A recorded text shorter than the range (cut at `EXCERPT_BYTES`) is compared with as
    many lines now. Both sides are masked alike, so a masked credential is not a change.
    Bounded: `DIFF_LINES` lines of at most `DIFF_LINE_CHARS` characters."""
    import difflib

    from active_memory.credentials import mask

    old = (citation.excerpt or "").splitlines()
    short = citation.lines is not None and len(old) < citation.lines[1] - citation.lines[0] + 1
    cut = short
    if short:
        now = now[: len(old)]
    elif len(now) > len(old) + DIFF_LINES:  # a whole file that grew: its start is enough
        now, cut = now[: len(old) + DIFF_LINES], True
    current = [mask(line) for line in now]
    diff = list(difflib.unified_diff(old, current, "recorded", "now", lineterm=""))
    if len(diff) > DIFF_LINES:
        diff, cut = diff[:DIFF_LINES], True
    shown = []
    for line in diff:
        if len(line) > DIFF_LINE_CHARS:
            line, cut = line[:DIFF_LINE_CHARS] + " …", True
        shown.append(line)
    return shown, cut


@dataclass(frozen=True, slots=True)
class ChangedCitation:
    """A citation whose code changed since the lesson was published, and how."""

    citation: Citation
    why: str  # "lines changed", "file gone", "lines gone"


def changed_citations(checkout: Checkout, citations: Sequence[Citation]) -> list[ChangedCitation]:
    """The fingerprinted citations whose cited code is not what it was. For one
    (path, lines) cited more than once (an adaptation cites it again), the latest
    fingerprint counts."""
    return changed_by_key(checkout, {"": citations}).get("", [])


def stale_lessons(
    checkout: Checkout, lessons: Iterable[object]
) -> dict[str, list[ChangedCitation]]:
    """The stale lessons among `lessons` (living ones with changed citations), by ID.

    One pass for all of them: one `check_paths` (a bounded number of git calls) for
    every cited path, each distinct file read and hashed once, each distinct range
    hashed once from that read (docs/staleness.md, "Offered to maintenance")."""
    from active_memory.lessons import Lesson

    cited = {
        lesson.id: lesson.evidence.citations
        for lesson in lessons
        if isinstance(lesson, Lesson) and lesson.evidence.citations
    }
    return changed_by_key(checkout, cited)


_GONE = "gone"  # the range is past the end of a readable file


def changed_by_key(
    checkout: Checkout, cited: Mapping[str, Sequence[Citation]]
) -> dict[str, list[ChangedCitation]]:
    """Per key (a lesson ID), its changed citations (`changed_citations`), all in one
    pass; keys without any are left out."""
    latest: dict[str, list[Citation]] = {}
    for key, citations in cited.items():
        by_range = {(c.path, c.lines): c for c in citations if c.sha256 is not None}
        if by_range:
            latest[key] = list(by_range.values())
    if not latest:
        return {}
    files = _readable(checkout, (c for known in latest.values() for c in known))
    ranges: dict[str, set[tuple[int, int] | None]] = {}
    for known in latest.values():
        for c in known:
            if c.path in files:
                ranges.setdefault(c.path, set()).add(c.lines)
    digests = {
        (path, lines): digest
        for path, wanted in ranges.items()
        for lines, digest in _range_digests(files[path], wanted).items()
    }
    found: dict[str, list[ChangedCitation]] = {}
    for key, known in latest.items():
        changed: list[ChangedCitation] = []
        for c in known:
            if c.path not in files:
                changed.append(ChangedCitation(c, "file gone"))
                continue
            now = digests.get((c.path, c.lines))
            if now is None:
                continue  # unreadable now: unknown, not stale
            if now == _GONE:
                changed.append(ChangedCitation(c, "lines gone"))
            elif now != c.sha256:
                changed.append(ChangedCitation(c, "lines changed"))
        if changed:
            found[key] = changed
    return found


def _range_digests(
    path: Path, wanted: Iterable[tuple[int, int] | None]
) -> dict[tuple[int, int] | None, str]:
    """The digest of each wanted range of one file from a single read (`_GONE` for a
    range past its end); {} when the file cannot be read (too large, not a file)."""
    from active_memory.reader import read_file_bytes

    try:
        data = read_file_bytes(path, MAX_FILE_BYTES)  # never a FIFO, never past the bound
    except OSError:
        return {}
    if data is None:
        return {}
    split: list[bytes] | None = None
    out: dict[tuple[int, int] | None, str] = {}
    for lines in wanted:
        if lines is None:
            out[lines] = _digest(data)
            continue
        if split is None:
            split = data.splitlines(keepends=True)
        start, end = lines
        # Line endings are part of the text: a CRLF conversion is a change of those lines.
        out[lines] = _digest(b"".join(split[start - 1 : end])) if end <= len(split) else _GONE
    return out
