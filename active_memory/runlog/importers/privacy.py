"""What must never reach a run record: `<private>` text and excluded paths (docs/privacy.md).

Applied at import, before a record is written or handed to a postmortem:

- **Private text.** Text between `<private>` and `</private>` in a user's prompt is cut
  out of the prompt (an unclosed `<private>` runs to the end of the prompt). Because an
  agent may repeat what it was told, every occurrence of a private passage anywhere else
  in the record (answers, error lines, tool output, receipts) is replaced by
  `[private]` too. Tags met outside a prompt are cut out the same way.
- **Excluded paths** (the `exclude` setting): receipt paths the globs match are dropped,
  a receipt left with no path is dropped, a tool failure's excluded paths are dropped
  (the failure stays), and every mention of a dropped path in the record's text is
  replaced by `[excluded]`.

Both count what they removed for the import report (counts only, never content).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from active_memory.exclusion import is_excluded
from active_memory.runlog.screening import IDENTITY_KEYS, screen_record_data

PRIVATE_MARK = "[private]"
EXCLUDED_MARK = "[excluded]"

# Case-insensitive, and whitespace is tolerated inside a tag (`<PRIVATE >`, `< private>`,
# `</ Private >`): a tag a person typed loosely still keeps its text out.
_BLOCK = re.compile(r"<\s*private\s*>(.*?)(?:<\s*/\s*private\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_TAG_START = re.compile(r"<\s*private", re.IGNORECASE)
_MIN_ECHO_CHARS = 4
"""A private passage shorter than this is not searched for elsewhere (it would erase
ordinary words); the tagged text itself is always cut."""


def screen_credentials(text: str) -> str:
    """`text` with every credential-shaped span masked as `[REDACTED:<kind>]`.

    The screen every lesson passes (`active_memory/credentials.py`, layer 1), applied to
    the run texts the importers keep beyond what the log itself quotes: tool failures'
    commands and errors, and the prompts kept as `node_started` input. Imported when
    first used, so an importer that meets no failure never loads its rules.
    """
    from active_memory.credentials import mask

    return mask(text)


def private_passages(text: str) -> list[str]:
    """The passages of `text` between `<private>` and `</private>`, stripped."""
    return [match.group(1).strip() for match in _BLOCK.finditer(text) if match.group(1).strip()]


def without_private(text: str) -> str:
    """`text` with every `<private>…</private>` block cut out."""
    return _BLOCK.sub("", text) if "<" in text and _TAG_START.search(text) else text


class Scrubber:
    """Rewrites every string of a record: tags cut, given passages and paths masked."""

    def __init__(self, private: Iterable[str] = (), excluded: Iterable[str] = ()) -> None:
        replacements = {p: PRIVATE_MARK for p in private if len(p) >= _MIN_ECHO_CHARS}
        replacements.update({p: EXCLUDED_MARK for p in excluded if p})
        # Longest first, so a passage holding a shorter one is masked whole. Matched in
        # any case: an agent that repeats `ACME merger` as `Acme Merger` still repeats it.
        ordered = sorted(replacements, key=len, reverse=True)
        self._folded = {k.casefold(): v for k, v in replacements.items()}
        self._pattern = (
            re.compile("|".join(map(re.escape, ordered)), re.IGNORECASE) if ordered else None
        )
        self.masked = 0

    def text(self, value: str) -> str:
        """One string, scrubbed."""
        cut = without_private(value)
        if cut != value:
            self.masked += 1
        if self._pattern is None:
            return cut
        out, count = self._pattern.subn(
            lambda m: self._folded.get(m.group(0).casefold(), PRIVATE_MARK), cut
        )
        self.masked += count
        return out

    def holds(self, value: str) -> bool:
        """Whether `value` holds a tag or a passage (nothing is counted)."""
        if without_private(value) != value:
            return True
        return self._pattern is not None and self._pattern.search(value) is not None

    def value(self, value: Any) -> Any:
        """Any JSON value, scrubbed recursively (keys of objects too)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {self.text(k): self.value(v) for k, v in value.items()}
        return value

    def record(self, data: dict[str, Any]) -> dict[str, Any]:
        """A run record, scrubbed except its identity and graph."""
        return {k: v if k in IDENTITY_KEYS else self.value(v) for k, v in data.items()}


def seal(data: dict[str, Any], private: Iterable[str] = ()) -> tuple[dict[str, Any], int]:
    """A record as it may be written, once everything is joined into it (hook receipts,
    deliveries, tool failures, prompts, node inputs and outputs); and how many private
    mentions were masked.

    Every `<private>` block anywhere is cut and every repetition of a `private` passage
    (in any case) becomes `[private]`; a receipt's or tool failure's path that held
    private text is dropped (a receipt left with no path is dropped), since a path
    `[private]` would only mislead. Then every credential-shaped span becomes
    `[REDACTED:<kind>]`. Identity and the graph IR are kept as they are.
    """
    scrubber = Scrubber(private=private)
    out = dict(data)
    if data.get("receipts"):
        out["receipts"] = _without_private_paths(data["receipts"], scrubber, drop_empty=True)
    if data.get("tool_failures"):
        out["tool_failures"] = _without_private_paths(
            data["tool_failures"], scrubber, drop_empty=False
        )
    scrubbed = scrubber.record(out)
    # Credentials last of all: no record we write keeps one (docs/security.md).
    return screen_record_data(scrubbed), scrubber.masked


def clean_paths(paths: Iterable[Any], scrubber: Scrubber) -> tuple[list[str], int]:
    """`paths` without those holding private text, and how many were dropped."""
    kept: list[str] = []
    dropped = 0
    for path in paths:
        if isinstance(path, str) and not scrubber.holds(path):
            kept.append(path)
        else:
            dropped += 1
    return kept, dropped


def _without_private_paths(
    items: list[dict[str, Any]], scrubber: Scrubber, *, drop_empty: bool
) -> list[dict[str, Any]]:
    kept: list[dict[str, Any]] = []
    for item in items:
        paths = item.get("paths")
        if not isinstance(paths, list) or not paths:
            kept.append(item)
            continue
        left, dropped = clean_paths(paths, scrubber)
        if not dropped:
            kept.append(item)
        elif left or not drop_empty:
            kept.append({**item, "paths": left})
        scrubber.masked += dropped  # each dropped path was one private mention
    return kept


def drop_excluded_receipts(
    data: dict[str, Any], patterns: tuple[str, ...]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The record's receipts without excluded paths (and without receipts left empty),
    and the distinct paths dropped."""
    kept: list[dict[str, Any]] = []
    dropped: dict[str, None] = {}
    for receipt in data.get("receipts") or ():
        paths = [p for p in receipt.get("paths") or () if isinstance(p, str)]
        left = [p for p in paths if not is_excluded(p, patterns)]
        dropped.update((p, None) for p in paths if p not in left)
        if paths and not left:
            continue
        kept.append({**receipt, "paths": left})
    return kept, list(dropped)


def drop_excluded_failure_paths(
    data: dict[str, Any], patterns: tuple[str, ...]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The record's tool failures without excluded paths (the failure itself stays: what
    was run and how it failed, its mentions of the paths masked), and the paths dropped."""
    kept: list[dict[str, Any]] = []
    dropped: dict[str, None] = {}
    for failure in data.get("tool_failures") or ():
        paths = [p for p in failure.get("paths") or () if isinstance(p, str)]
        left = [p for p in paths if not is_excluded(p, patterns)]
        dropped.update((p, None) for p in paths if p not in left)
        kept.append({**failure, "paths": left} if len(left) != len(paths) else failure)
    return kept, list(dropped)


def apply_exclusion(
    data: dict[str, Any], patterns: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, int]]:
    """`data` with excluded paths gone, and the counts for the import report."""
    if not patterns or not (data.get("receipts") or data.get("tool_failures")):
        return data, {"receipts": 0, "paths": 0, "mentions": 0}
    before = len(data.get("receipts") or ())
    receipts, dropped = drop_excluded_receipts(data, patterns)
    failures, also = drop_excluded_failure_paths(data, patterns)
    dropped = list(dict.fromkeys([*dropped, *also]))
    scrubber = Scrubber(excluded=dropped)
    changed = {**data, "receipts": receipts}
    if "tool_failures" in data:
        changed["tool_failures"] = failures
    out = scrubber.record(changed) if dropped else data
    return out, {
        "receipts": before - len(receipts),
        "paths": len(dropped),
        "mentions": scrubber.masked,
    }
