"""Is a lesson's cited code still what it was written against?

At publish, each citation of a new or adapted lesson gets the SHA-256 of the cited lines
as the checkout has them (`fingerprint`); the whole file when the citation has no lines.
Later its text is looked for by that fingerprint (`cited_text.locate`, the rule the hook
follows too): still at its place, or *moved* within its file (re-pinned to its new
lines), or *changed*: changed, gone, in several places, or its file gone. A lesson
with a changed citation is *stale* (docs/staleness.md). A file git says was renamed
(`git.renames`) is judged as the file it became. A citation without a fingerprint
(stored before this existed, or its file unreadable at publish) is never called
changed: unknown is not stale.

Only current files of the checkout are read (`Checkout.check_paths`), up to
`MAX_FILE_BYTES` each.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from active_memory.checkout.citations import Checkout
from active_memory.checkout.regions import (
    DIFF_LINES,
    LINES_SHOWN,
    Lines,
    Shown,
    best_region,
    recorded_diff,
    split_lines,
)
from active_memory.cited_text import CHANGED, GONE, MOVED, NO_TEXT, SAME, SEVERAL, locate, places
from active_memory.lessons import Citation

MAX_FILE_BYTES = 4 * 1024 * 1024
"""A larger cited file is not fingerprinted (and never called changed)."""
EXCERPT_BYTES = 4096
"""The recorded text of a citation: at most this many bytes of whole cited lines."""


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
        if c.sha256 == NO_TEXT:
            out.append(c)  # a place let go (`cited_text.NO_TEXT`): it cites no text
            continue
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


@dataclass(frozen=True, slots=True)
class ChangedCitation:
    """A citation whose code changed since the lesson was published, and how.

    `why`: "lines changed" (the text is not in its file as it was: `region` holds the
    lines now that best match it, None when too little of it is left or nothing was
    recorded to compare), "lines gone" (nothing resembles it any more, or its range is
    past the end and nothing was recorded to look for), "found in several places"
    (`places`: their first lines, nearest first) or "file gone". `path_now` is the file
    git says the cited one was renamed to."""

    citation: Citation
    why: str
    path_now: str | None = None
    region: tuple[int, int] | None = None
    places: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class MovedCitation:
    """A citation whose text is intact at another place: `now` is it re-pinned (another
    path when its file was renamed, its lines now; the same fingerprint and text)."""

    citation: Citation
    now: Citation


@dataclass(frozen=True, slots=True)
class CitedNow:
    """Where one lesson's citations that count are now: the changed and the moved ones."""

    changed: tuple[ChangedCitation, ...] = ()
    moved: tuple[MovedCitation, ...] = ()


def counting(citations: Sequence[Citation]) -> list[Citation]:
    """The fingerprinted citations that count (`lessons.counted_citations`)."""
    from active_memory.lessons import counted_citations

    return [c for c in counted_citations(citations) if c.sha256 is not None]


def changed_citations(checkout: Checkout, citations: Sequence[Citation]) -> list[ChangedCitation]:
    """The fingerprinted citations whose cited code is not what it was (`cited_now`)."""
    return changed_by_key(checkout, {"": citations}).get("", [])


def stale_lessons(
    checkout: Checkout, lessons: Iterable[object]
) -> dict[str, list[ChangedCitation]]:
    """The stale lessons among `lessons` (living ones with changed citations), by ID.

    One pass for all of them: one `check_paths` (a bounded number of git calls) for
    every cited path, each distinct file read once, each distinct cited text looked for
    once (docs/staleness.md, "Offered to maintenance")."""
    from active_memory.lessons import Lesson

    cited = {
        lesson.id: lesson.evidence.citations
        for lesson in lessons
        if isinstance(lesson, Lesson) and lesson.evidence.citations
    }
    return changed_by_key(checkout, cited)


def changed_by_key(
    checkout: Checkout, cited: Mapping[str, Sequence[Citation]]
) -> dict[str, list[ChangedCitation]]:
    """Per key (a lesson ID), its changed citations, all in one pass (`cited_now`);
    keys without any are left out."""
    return {
        key: list(now.changed) for key, now in cited_now(checkout, cited).items() if now.changed
    }


def cited_now(checkout: Checkout, cited: Mapping[str, Sequence[Citation]]) -> dict[str, CitedNow]:
    """Per key (a lesson ID), where its citations that count (`counting`) are now: the
    changed and the moved ones; keys with neither are left out. One pass: one
    `check_paths` for every cited path (and one for the files renamed ones became),
    one `git.renames` only when some cited file is gone, each file read once, each
    distinct text looked for once."""
    latest = {key: known for key, citations in cited.items() if (known := counting(citations))}
    if not latest:
        return {}
    every = [c for known in latest.values() for c in known]
    files = _readable(checkout, every)
    renamed = _renamed(checkout, {c.path for c in every if c.path not in files})
    texts = _Texts()
    found: dict[str, CitedNow] = {}
    for key, known in latest.items():
        changed: list[ChangedCitation] = []
        moved: list[MovedCitation] = []
        for c in known:
            path_now, file = renamed.get(c.path, (None, files.get(c.path)))
            if file is None:
                changed.append(ChangedCitation(c, "file gone"))
                continue
            data = texts.read(file)
            if data is None:
                continue  # unreadable now (too large): unknown, not stale
            first, last = c.lines or (0, 0)
            assert c.sha256 is not None
            place, start, end = texts.locate(file, data, first, last, c.sha256)
            if place == SAME and path_now is None:
                continue
            if place in (SAME, MOVED):
                update = {"path": path_now or c.path, "lines": (start, end) if first else None}
                moved.append(MovedCitation(c, c.model_copy(update=update)))
            else:
                changed.append(texts.changed(c, place, file, data, path_now))
        if changed or moved:
            found[key] = CitedNow(tuple(changed), tuple(moved))
    return found


def _changed(
    c: Citation, place: str, data: bytes, now: Lines, path_now: str | None
) -> ChangedCitation:
    """A citation whose text is not intact in `data` (its file now, `now` its lines as
    text), classified."""
    if place == SEVERAL:
        first, last = c.lines or (0, 0)
        assert c.sha256 is not None
        at = tuple(places(data, first, last, c.sha256))
        return ChangedCitation(c, "found in several places", path_now, places=at)
    why = "lines gone" if place == GONE else "lines changed"
    if c.excerpt is None:
        return ChangedCitation(c, why, path_now)
    old = split_lines(c.excerpt)
    if c.lines is None:
        return ChangedCitation(c, "lines changed", path_now, region=(1, len(now)))
    region = best_region(old, now, c.lines[0])
    why = "lines gone" if region is None else "lines changed"
    assert place in (CHANGED, GONE)
    return ChangedCitation(c, why, path_now, region=region)


def shown(checkout: Checkout, changed: ChangedCitation) -> Shown:
    """The one view of a changed citation (regions.py): a unified diff from its
    recorded text to the lines now that best match it, all removed when nothing does;
    without recorded text, the lines now at the recorded place and "recorded text
    unknown"; for a text in several places, where."""
    c = changed.citation
    renamed = f"renamed to {changed.path_now}" if changed.path_now else ""
    if changed.why == "found in several places":
        where = ", ".join(_span(at, c.lines) for at in changed.places)
        return Shown(note=_joined(renamed, f"the recorded text is now at lines {where}"))
    if changed.why == "file gone":
        now: list[str] = []
    else:
        data = _read(checkout.root / (changed.path_now or c.path))
        now = _text_lines(data) if data is not None else []
    if c.excerpt is None:
        start, end = c.lines or (1, len(now))
        lines = tuple(now[start - 1 : end][:LINES_SHOWN])
        return Shown(now=lines, note=_joined(renamed, "recorded text unknown"))
    old = split_lines(c.excerpt)
    recorded_first = c.lines[0] if c.lines else 1
    short = c.lines is not None and len(old) < c.lines[1] - c.lines[0] + 1
    if changed.region is None:
        diff, cut = recorded_diff(old, [], recorded_first, 0)
        cut = cut or short
        note = _joined("removed", "diff cut" if cut else "")
    else:
        first, last = changed.region
        region = now[first - 1 : last]
        grew = len(region) > len(old) + DIFF_LINES  # a whole file that grew: its start
        if grew:
            region = region[: len(old) + DIFF_LINES]
        diff, cut = recorded_diff(old, region, recorded_first, first)
        cut = cut or short or grew
        note = "diff cut" if cut else ""
    return Shown(diff=tuple(diff), note=_joined(renamed, note), cut=cut)


def _span(first: int, lines: tuple[int, int] | None) -> str:
    size = lines[1] - lines[0] if lines else 0
    return f"{first}-{first + size}" if size else str(first)


def _joined(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _text_lines(data: bytes) -> list[str]:
    """The lines of a file's bytes as text, numbered as the fingerprint numbers them."""
    return [line.decode("utf-8", errors="replace") for line in data.splitlines()]


def _read(path: Path) -> bytes | None:
    from active_memory.reader import read_file_bytes

    try:
        return read_file_bytes(path, MAX_FILE_BYTES)  # never a FIFO, never past the bound
    except OSError:
        return None


class _Texts:
    """In one pass: each file read and split once, each (file, range, fingerprint)
    looked for once, each changed citation's text classified once."""

    def __init__(self) -> None:
        self._data: dict[Path, bytes | None] = {}
        self._lines: dict[Path, list[bytes]] = {}
        self._text: dict[Path, Lines] = {}
        self._places: dict[tuple[Path, int, int, str], tuple[str, int, int]] = {}
        self._changed: dict[tuple[Path, Citation, str | None], ChangedCitation] = {}

    def read(self, path: Path) -> bytes | None:
        if path not in self._data:
            self._data[path] = _read(path)
        return self._data[path]

    def locate(
        self, path: Path, data: bytes, first: int, last: int, sha256: str
    ) -> tuple[str, int, int]:
        key = (path, first, last, sha256)
        if key not in self._places:
            if first and path not in self._lines:
                self._lines[path] = data.splitlines(keepends=True)
            self._places[key] = locate(data, first, last, sha256, self._lines.get(path))
        return self._places[key]

    def changed(
        self, c: Citation, place: str, path: Path, data: bytes, path_now: str | None
    ) -> ChangedCitation:
        key = (path, c, path_now)
        if key not in self._changed:
            if path not in self._text:
                self._text[path] = Lines(_text_lines(data))
            self._changed[key] = _changed(c, place, data, self._text[path], path_now)
        return self._changed[key]


def _renamed(checkout: Checkout, gone: set[str]) -> dict[str, tuple[str, Path]]:
    """Per cited path that is not a current file, the current file git says it became
    and where that is; {} when git cannot tell (a failing git: the files stay gone)."""
    if not gone:
        return {}
    from active_memory.checkout.git import GitFailed, renames

    try:
        became = renames(checkout.root, gone)
    except GitFailed:
        return {}
    verdicts = checkout.check_paths(set(became.values())) if became else {}
    found: dict[str, tuple[str, Path]] = {}
    for old, new in became.items():
        verdict = verdicts[new]
        if verdict.current and verdict.file is not None:
            found[old] = (new, checkout.root / verdict.file)
    return found
