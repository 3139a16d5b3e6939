"""Tool receipts (SPEC §3): the `Receipt` model, bounds and paths; pure, no file access.

- Paths are stored root-relative (POSIX separators) to the repository checkout. A path
  that leaves the checkout (absolute elsewhere, or `..` escaping it) is dropped, as is an
  absolute path when the checkout is unknown. At most `MAX_PATHS_PER_RECEIPT` distinct
  paths are kept per receipt, in recorded order.
- Receipts are ordered by time when every one has a time (ties broken by content, so the
  order in the file does not matter); otherwise the recorded order is kept.
- At most `MAX_RECEIPTS` survive: the first `KEPT_FIRST` and the latest
  `MAX_RECEIPTS - KEPT_FIRST`.
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict

MAX_RECEIPTS = 512
KEPT_FIRST = 256
MAX_PATHS_PER_RECEIPT = 16

_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


def _utc(value: datetime) -> datetime:
    # A naive time is read as UTC so that times from different sources always compare.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


Timestamp = Annotated[datetime, AfterValidator(_utc)]
"""A time that is always timezone-aware (naive input is taken as UTC)."""


class Receipt(BaseModel):
    """One tool call seen by the hook: node, tool name, time and workspace paths only.

    Unlike every other model, a receipt drops fields it does not know: SPEC §3 says a
    receipt never carries a tool's arguments or results, so nothing else is stored.
    """

    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True, frozen=True)

    node: str | None = None
    tool: str
    at: Timestamp | None = None
    paths: tuple[str, ...] = ()


def relative_path(path: str, checkout: str | None) -> str | None:
    """`path` relative to `checkout` (POSIX form), or None when it lies outside."""
    if not path or "\x00" in path:
        return None
    windows = bool(_WINDOWS_ABSOLUTE.match(checkout or "")) or bool(_WINDOWS_ABSOLUTE.match(path))
    flavour: Any = ntpath if windows else posixpath
    if windows:
        path = path.replace("/", "\\")
    if flavour.isabs(path) or (windows and _WINDOWS_ABSOLUTE.match(path)):
        # Only an absolute checkout can anchor an absolute path (relpath against a
        # relative root would depend on the current directory).
        if not checkout or not flavour.isabs(checkout.replace("/", "\\") if windows else checkout):
            return None
        root = flavour.normpath(checkout.replace("/", "\\") if windows else checkout)
        absolute = flavour.normpath(path)
        try:
            relative: str = flavour.relpath(absolute, root)
        except ValueError:  # different Windows drives
            return None
    else:
        relative = str(flavour.normpath(path))
    relative = relative.replace("\\", "/") if windows else relative
    if relative in (".", "") or relative == ".." or relative.startswith("../"):
        return None
    return relative


def _clean(receipt: Receipt, checkout: str | None) -> Receipt:
    paths: list[str] = []
    for path in receipt.paths:
        relative = relative_path(path, checkout)
        if relative is not None and relative not in paths:
            paths.append(relative)
        if len(paths) == MAX_PATHS_PER_RECEIPT:
            break
    if tuple(paths) == receipt.paths:
        return receipt
    return receipt.model_copy(update={"paths": tuple(paths)})


def _order_key(receipt: Receipt) -> tuple[datetime, str, str, tuple[str, ...]]:
    assert receipt.at is not None
    return (receipt.at, receipt.node or "", receipt.tool, receipt.paths)


def normalize(receipts: Sequence[Receipt], checkout: str | None) -> tuple[tuple[Receipt, ...], int]:
    """Clean paths, order, and cap; return the kept receipts and how many were dropped."""
    cleaned = [_clean(receipt, checkout) for receipt in receipts]
    if all(receipt.at is not None for receipt in cleaned):
        cleaned.sort(key=_order_key)
    if len(cleaned) <= MAX_RECEIPTS:
        return tuple(cleaned), 0
    latest = MAX_RECEIPTS - KEPT_FIRST
    kept = cleaned[:KEPT_FIRST] + cleaned[-latest:]
    return tuple(kept), len(cleaned) - MAX_RECEIPTS
