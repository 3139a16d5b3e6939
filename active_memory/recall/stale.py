"""A stale card, framed at delivery: its age and which cited code changed.

A generation keeps, per card, the revision's date and the fingerprinted cited ranges
(index.py `cited`). When the session ledger's walk is about to admit a card that has
some (only those cards, a handful per call), `changed` looks for each cited text in the
checkout at the workspace root by its fingerprint (`cited_text.locate`, the rule every
staleness check follows: the same bytes, line endings included): a text still at its
place or moved within its file is not a change; a text changed, gone or now in several
places is. A changed card gets one line right under its heading:

    <active-memory-stale>cited code changed since this lesson was written (2026-11-03,
    28 days ago): src/x.py:10-24</active-memory-stale>

(one line). Its bytes are charged like the rest of the card. Lesson text cannot forge
it: every `<active-memory…` tag inside a card is neutralised when the card is rendered
(frame.py), this one included.

Only what was read is claimed: a file that cannot be read now (missing, not a regular
file, over `MAX_FILE_BYTES`, outside the root through a symlink) or a root that is not
known says nothing. Where each text is is cached per process by `(path, st_mtime_ns,
st_size, range, fingerprint)`, so a resident server reads a file again only after it
changed.
"""

from __future__ import annotations

import os
import time

from active_memory.cited_text import STALE, locate
from active_memory.recall.frame import neutralise

TYPE_CHECKING = False
if TYPE_CHECKING:
    from active_memory.recall.index import Cited

MAX_FILE_BYTES = 4 * 1024 * 1024
"""As checkout/staleness.py: a larger file was not fingerprinted and is not read here."""
MAX_CHECKED = 8
"""Cited ranges checked per card at delivery (the latest ones)."""
MAX_LISTED = 3
"""Changed ranges named in the frame line; more are counted (`+2 more`)."""
MAX_CACHED = 4096

OPEN_TAG = "<active-memory-stale>"
CLOSE_TAG = "</active-memory-stale>"

_places: dict[tuple[str, int, int, int, int, str], str | None] = {}
_roots: dict[str, str] = {}  # a checkout root → its canonical path and a separator


def changed(cited: Cited, root: str) -> list[str]:
    """The cited ranges (`path:first-last`, or `path`) whose code is not what it was.

    Empty when nothing changed, or nothing could be read."""
    if not root or not os.path.isabs(root):
        return []
    found: list[str] = []
    for path, first, last, digest in cited[1][-MAX_CHECKED:]:
        if _place_now(root, path, first, last, digest) in STALE:
            found.append(f"{path}:{first}-{last}" if first else path)
    return found


def note(cited: Cited, ranges: list[str], now: float | None = None) -> str:
    """The frame line of a stale card (ends with a newline)."""
    listed = ", ".join(ranges[:MAX_LISTED])
    if len(ranges) > MAX_LISTED:
        listed += f" +{len(ranges) - MAX_LISTED} more"
    age = _age(cited[0], time.time() if now is None else now)
    since = f" ({age})" if age else ""
    text = f"cited code changed since this lesson was written{since}: {listed}"
    # A path is the stored citation's text: it cannot close this tag or the frame.
    return OPEN_TAG + neutralise(" ".join(text.split())) + CLOSE_TAG + "\n"


def cited_of_citations(date: str, citations: list[dict[str, object]]) -> Cited | None:
    """`Cited` of a lesson's citations (as JSON, in the order recorded) and its revision
    date, for a caller that holds the lesson rather than a generation (the MCP server)."""
    from active_memory.recall.generation import cited_of
    from active_memory.recall.jsonio import dumps

    rows = [
        [c.get("path"), *(c.get("lines") or (0, 0)), c.get("sha256")]  # type: ignore[misc]
        for c in citations
        if c.get("sha256")
    ]
    return cited_of("", date, dumps(rows)) if rows else None


def framed(text: str, line: str) -> str:
    """A rendered card block with the stale `line` under its heading."""
    heading, newline, body = text.partition("\n")
    return heading + newline + line + body


def _age(date: str, now: float) -> str:
    day = _epoch_day(date)
    if day is None:
        return ""
    days = max(0, int(now // 86400) - day)
    ago = "today" if days == 0 else "1 day ago" if days == 1 else f"{days} days ago"
    return f"{date}, {ago}"


def _epoch_day(date: str) -> int | None:
    """Days since 1970-01-01 of `YYYY-MM-DD` (proleptic Gregorian; no datetime import)."""
    try:
        year, month, day = int(date[0:4]), int(date[5:7]), int(date[8:10])
    except ValueError:
        return None
    if len(date) != 10 or not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    year -= month <= 2
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    of_era_days = of_era * 365 + of_era // 4 - of_era // 100 + of_year
    return era * 146097 + of_era_days - 719468


def _place_now(root: str, path: str, first: int, last: int, digest: str) -> str | None:
    """Where the text of lines first..last of `root/path` (the whole file for 0, 0) with
    fingerprint `digest` is now (`cited_text.locate`); None when it cannot be read."""
    if path.startswith("/") or "\0" in path or ".." in path.split("/"):
        return None
    full = os.path.join(root, path)
    try:
        info = os.stat(full)
    except (OSError, ValueError):
        return None
    key = (full, info.st_mtime_ns, info.st_size, first, last, digest)
    if key in _places:
        return _places[key]
    place = _locate(root, full, info.st_size, first, last, digest)
    if len(_places) >= MAX_CACHED:
        _places.clear()
    _places[key] = place
    return place


def _locate(root: str, full: str, size: int, first: int, last: int, digest: str) -> str | None:
    if size > MAX_FILE_BYTES:
        return None
    real = os.path.realpath(full)
    top = _roots.get(root)
    if top is None:
        if len(_roots) >= 64:
            _roots.clear()
        top = _roots[root] = os.path.realpath(root).rstrip(os.sep) + os.sep
    if not real.startswith(top):
        return None  # a symlink out of the checkout: not the checkout's code
    from active_memory.reader import read_file_bytes

    try:
        data = read_file_bytes(real, MAX_FILE_BYTES)
    except OSError:
        return None
    if data is None:
        return None
    return locate(data, first, last, digest)[0]
