"""Failure signatures (SPEC §4 item 4): a tool failure's family and its normalised error.

Two failures are "the same failure" when their signatures are equal, in one run or
across the runs of one repository (the store keeps signatures; the scanner is given
them). `normalise_error` replaces what changes from one occurrence to the next by
placeholders, in this order:

- the session's branch names (given) → `<branch>`;
- temporary paths (`/tmp/…`, `/var/folders/…`, `/private/var/…`, `…\\Temp\\…`) → `<tmp>`,
  then any other absolute path (POSIX, `~/…`, `C:\\…`) → `<path>`; relative paths stay,
  they name the file;
- UUIDs → `<id>`; hex digests (7+ hex digits with a digit and a letter, `0x…`) →
  `<hex>`; other IDs (16+ letters and digits, both present: `a3f9Kq2Zx81LmN0p`) → `<id>`;
- ISO times and clock times → `<time>`;
- every other run of digits (line numbers, counts, durations, PIDs, seeds) → `<n>`;

then whitespace is collapsed and the text cut to `MAX_SIGNATURE_CHARS`.

`signature(failure)` builds the `FailureSignature` from the error's first line, leaving
aside lines that only name a test (`1) test renders the page (AppWeb.PageTest)`,
`● cart > totals`, `--- FAIL: TestTotal`): the same missing configuration breaking
different tests is one failure. Its `digest` is a short stable key.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import NamedTuple

from active_memory.runlog.record import ToolFailure

MAX_SIGNATURE_CHARS = 300

_TIME = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b"
    r"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"
)
_TEMP = re.compile(
    r"(?:/(?:private/)?(?:tmp|var/folders|var/tmp)(?:/[^\s'\"`:;,()\[\]<>]*)?"
    r"|[A-Za-z]:\\(?:[^\s'\"`]*\\)?Temp\\[^\s'\"`]*)"
)
_ABSOLUTE = re.compile(
    r"(?:(?<![\w.\-/])~?/(?:[\w.@+\-]+/)*[\w.@+\-]+/?|\b[A-Za-z]:\\(?:[^\s'\"`\\]+\\?)+)"
)
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_TOKEN = re.compile(r"\b(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{16,}\b")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SPACE = re.compile(r"\s+")
_TEST_NAME_ONLY = re.compile(
    r"^\s*(?:\d+\) test .+ \([\w.]+\)|● .+|--- FAIL: \S+(?: \([\d.]+s\))?|FAIL\s+\S+)\s*$"
)


class FailureSignature(NamedTuple):
    """What identifies a failure across occurrences: its family and normalised error."""

    family: str
    error: str

    @property
    def digest(self) -> str:
        """A short stable key (16 hex digits of SHA-256 over family and error)."""
        payload = f"{self.family}\n{self.error}".encode()
        return hashlib.sha256(payload).hexdigest()[:16]


def normalise_error(text: str, branches: Iterable[str] = ()) -> str:
    """`text` with what varies between occurrences replaced by placeholders."""
    out = text
    for branch in sorted({b for b in branches if len(b) >= 2}, key=len, reverse=True):
        out = re.sub(rf"(?<![\w./-]){re.escape(branch)}(?![\w/-])", "<branch>", out)
    out = _TIME.sub("<time>", out)
    out = _TEMP.sub("<tmp>", out)
    out = _ABSOLUTE.sub("<path>", out)
    out = _UUID.sub("<id>", out)
    out = _HEX.sub("<hex>", out)
    out = _TOKEN.sub("<id>", out)
    out = _NUMBER.sub("<n>", out)
    out = _SPACE.sub(" ", out).strip()
    return out[:MAX_SIGNATURE_CHARS]


def signature(failure: ToolFailure, branches: Iterable[str] = ()) -> FailureSignature:
    """The signature of one recorded tool failure (see the module docstring)."""
    lines = [line for line in failure.error.splitlines() if line.strip()]
    telling = [line for line in lines if not _TEST_NAME_ONLY.match(line)] or lines
    first = telling[0] if telling else ""
    return FailureSignature(failure.family, normalise_error(first, branches))
