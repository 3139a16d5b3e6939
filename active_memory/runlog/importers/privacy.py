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

PRIVATE_MARK = "[private]"
EXCLUDED_MARK = "[excluded]"

_BLOCK = re.compile(r"<private>(.*?)(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
_MIN_ECHO_CHARS = 4
"""A private passage shorter than this is not searched for elsewhere (it would erase
ordinary words); the tagged text itself is always cut."""
_UNTOUCHED = frozenset({"schema", "run_id", "graph"})
"""Top-level keys never rewritten: identity and the graph IR kept byte-for-byte."""


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
    return _BLOCK.sub("", text) if "<" in text else text


class Scrubber:
    """Rewrites every string of a record: tags cut, given passages and paths masked."""

    def __init__(self, private: Iterable[str] = (), excluded: Iterable[str] = ()) -> None:
        replacements = {p: PRIVATE_MARK for p in private if len(p) >= _MIN_ECHO_CHARS}
        replacements.update({p: EXCLUDED_MARK for p in excluded if p})
        # Longest first, so a passage holding a shorter one is masked whole.
        ordered = sorted(replacements, key=len, reverse=True)
        self._replacements = replacements
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self.masked = 0

    def text(self, value: str) -> str:
        """One string, scrubbed."""
        cut = without_private(value)
        if cut != value:
            self.masked += 1
        if self._pattern is None:
            return cut
        out, count = self._pattern.subn(lambda m: self._replacements[m.group(0)], cut)
        self.masked += count
        return out

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
        return {k: v if k in _UNTOUCHED else self.value(v) for k, v in data.items()}


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
