"""Where a citation's text is now: the one rule of staleness that follows the code.

At publish a citation records the SHA-256 of the lines it cites (checkout/staleness.py:
`fingerprint`). Later its text is looked for by that fingerprint, so the rule needs only
`(first, last, sha256)` and the file's bytes, which is all a hook has (SPEC §6):

- the lines at the recorded place hash the same: `SAME`;
- else every run of as many lines is hashed: exactly one other place hashes the same:
  `MOVED` there (the citation is re-pinned to it); several: `SEVERAL` (not re-pinned:
  which one the lesson means is unknown; the old place is not one of them, or it would
  be `SAME`, the nearest of all); none: `CHANGED`, or `GONE` when the recorded range is
  past the end of the file;
- a whole-file citation (lines 0, 0) is `SAME` or `CHANGED`.

Only text that is `CHANGED`, `GONE` or in `SEVERAL` places makes a lesson stale. The
search hashes at most `SEARCH_BYTES` (the range's line count times the file's size);
past that only the recorded place is checked, as before this rule.

A lesson's citations count by `latest`: a range cited again counts by its latest
fingerprint, and a citation whose fingerprint is `NO_TEXT` (the hash of no text: no
range of one line or more has it, only an empty file) counts for nothing: a keep or an
adapt records one at a place its lesson no longer stands on (its text moved on, or was
let go), and an empty file cited whole stands for no text either.

Standard library only: the hook's per-tool-call path imports this (recall/stale.py).
"""

from __future__ import annotations

import hashlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

SAME = "same"
MOVED = "moved"
SEVERAL = "several"
CHANGED = "changed"
GONE = "gone"

STALE = frozenset({CHANGED, GONE, SEVERAL})
"""The places that make a lesson stale."""

SEARCH_BYTES = 32 * 1024 * 1024
"""Bytes hashed at most when looking for a moved text (about 40 ms): a 20-line range is
searched in files up to 1.6 MB, a one-line range in every file a fingerprint is taken of."""

NO_TEXT = hashlib.sha256(b"").hexdigest()
"""The fingerprint of no text: a citation that carries it stands for nothing."""

Place = tuple[str, int, int]
"""(`SAME`/`MOVED`/…, first line, last line): where the text is; the recorded range
unless `MOVED` (`places` lists where a `SEVERAL` text is)."""


def locate(
    data: bytes, first: int, last: int, sha256: str, lines: list[bytes] | None = None
) -> Place:
    """Where the text cited as lines `first..last` (0, 0: the whole file) with
    fingerprint `sha256` is in `data` now (line endings included, as at publish);
    `lines`: `data.splitlines(keepends=True)`, when the caller has it already."""
    if not first:
        return (SAME if hashlib.sha256(data).hexdigest() == sha256 else CHANGED, 0, 0)
    if lines is None:
        lines = data.splitlines(keepends=True)
    if last <= len(lines) and _digest(lines[first - 1 : last]) == sha256:
        return (SAME, first, last)
    count = last - first + 1
    missing = GONE if last > len(lines) else CHANGED
    if count > len(lines) or count * len(data) > SEARCH_BYTES:
        return (missing, first, last)
    found = _occurrences(data, lines, count, bytes.fromhex(sha256))
    if not found:
        return (missing, first, last)
    if len(found) > 1:
        return (SEVERAL, first, last)
    return (MOVED, found[0], found[0] + count - 1)


def places(data: bytes, first: int, last: int, sha256: str, limit: int = 8) -> list[int]:
    """The first lines of every place (up to `limit`) the cited text occurs in `data`,
    nearest to `first` first: what a `SEVERAL` citation could mean."""
    lines = data.splitlines(keepends=True)
    count = last - first + 1
    if not first or count > len(lines) or count * len(data) > SEARCH_BYTES:
        return []
    found = _occurrences(data, lines, count, bytes.fromhex(sha256), limit=None)
    return sorted(found, key=lambda at: (abs(at - first), at))[:limit]


def latest(cited: Iterable[tuple[str, int, int, str]]) -> list[tuple[str, int, int, str]]:
    """The fingerprinted citations that count, in the order of their latest: per
    `(path, first, last)` its latest fingerprint, except those whose latest is
    `NO_TEXT` (they stand for no text any more). `Evidence.counted_citations` is this
    rule for a lesson's citations."""
    found: dict[tuple[str, int, int], str] = {}
    for path, first, last, digest in cited:
        key = (path, first, last)
        found.pop(key, None)  # re-inserted last: the latest fingerprint is kept
        found[key] = digest
    return [(*key, digest) for key, digest in found.items() if digest != NO_TEXT]


def _digest(lines: list[bytes]) -> str:
    return hashlib.sha256(b"".join(lines)).hexdigest()


def _occurrences(
    data: bytes, lines: list[bytes], count: int, digest: bytes, limit: int | None = 2
) -> list[int]:
    """The 1-based first lines of the runs of `count` lines hashing to `digest` (stops at
    `limit` found: two already say "several")."""
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    view = memoryview(data)
    found: list[int] = []
    sha = hashlib.sha256
    for start in range(len(lines) - count + 1):
        if sha(view[offsets[start] : offsets[start + count]]).digest() == digest:
            found.append(start + 1)
            if limit is not None and len(found) >= limit:
                break
    return found
