"""What the hooks leave for the run record (SPEC §3): tool receipts and card deliveries.

Per run key, under `recall/runs/<run key>/`:

- `receipts.jsonl`: one line per tool call, matched or not:
  `{"node", "tool", "at", "paths"}` with at most `RECEIPT_PATHS` root-relative paths;
  never arguments or results;
- `deliveries.jsonl`: one line per delivered card:
  `{"session", "lesson", "revision", "at"}`; a card handed to a call that never ran
  (recall/contexts.py) is then taken back by a refund line, the same fields plus
  `"refunded": true`.

A bare harness session's run key is `session:<provider session>`, so these files are
the session's own record; `runlog/importers/harness_session.py` joins them into the run
record built from the session's transcript, and the run controller reads them back
(`read_receipts`, `read_deliveries`) into a run's `receipts` and `deliveries`. The
record's own bounds (512 receipts, first and latest kept) apply there.

Crash safety: each record is one `write` on an `O_APPEND` descriptor, so a process that
dies never leaves half a line among whole ones; a line cut by a machine crash (no
newline, then the next process's whole line glued on) is recovered by the reader, which
keeps the whole record at the end of a damaged line. Deliveries are appended *before*
the session ledger is replaced (ledger.py): a crash between the two can at worst record
a card the session never saw (maintenance then reviews one lesson too many), never hide
one it did see. The reader drops the duplicate lines such a retry leaves. Delivery lines
are also flushed to the disk (`fdatasync`) before the ledger moves on and before the
cards leave, so they survive a machine crash; receipts, written on every call, are not
(a lost receipt costs little). `append_deliveries` leaves that flush to its caller
(ledger.Commit, which the recall server runs in a worker thread).

Every record is screened for credentials before it is written (`credential_gate`, the
screen's lean form). Appends hold the run folder's `records.lock`, and so does
`rewrite_records`, which
replaces both files atomically once an import has joined them: the import knows the
session's `<private>` passages, the hook never sees a prompt (docs/privacy.md).
"""

from __future__ import annotations

import os
import time

from active_memory.credential_gate import mask_value
from active_memory.file_lock import FileLock
from active_memory.file_names import safe_name
from active_memory.recall import jsonio
from active_memory.recall.files import append_line, append_open, sync_data

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from active_memory.recall.types import CardHit, RecallContext

RECEIPT_PATHS = 8
RECEIPTS_FILE = "receipts.jsonl"
DELIVERIES_FILE = "deliveries.jsonl"
_RECORD_FILES = (RECEIPTS_FILE, DELIVERIES_FILE)
LOCK_FILE = "records.lock"
LOCK_SECONDS = 2.0
"""A hook waits at most this long for a rewrite to finish (a rewrite takes milliseconds)."""


def run_dir(recall_dir: str, run_key: str) -> str:
    """The folder of one run's recall files (snapshot, receipts, deliveries)."""
    return os.path.join(recall_dir, "runs", safe_name(run_key))


def utc_timestamp(seconds: float | None = None) -> str:
    """`2026-11-29T10:00:00.123Z` for `seconds` since the epoch (default: now)."""
    now = time.time() if seconds is None else seconds
    whole = int(now)
    millis = int((now - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def record_receipt(
    context: RecallContext, tool: str, paths: Iterable[str], agent: str | None = None
) -> None:
    """Append the receipt of one tool call to its run's receipts (`agent`: the sub-agent
    that made the call, kept so an import attributes it to `worker/agent-<id>`)."""
    receipt: dict[str, Any] = {
        "node": context.node,
        "tool": tool,
        "at": utc_timestamp(),
        "paths": list(paths)[:RECEIPT_PATHS],
    }
    if agent:
        receipt["agent"] = agent
    receipt = _screened(receipt)
    folder = run_dir(context.recall_dir, context.run_key)
    _append(folder, RECEIPTS_FILE, jsonio.dumps(receipt))


def _screened(record: dict[str, Any]) -> dict[str, Any]:
    # The lean screen: a path or name holding a credential (`cat keys/AKIA….txt`) is
    # masked before it is at rest; a clean record costs a few substring tests.
    screened: dict[str, Any] = mask_value(record)
    return screened


def record_deliveries(context: RecallContext, cards: Iterable[CardHit]) -> None:
    """Append one delivery line per card the session received, flushed to the disk."""
    descriptor = append_deliveries(context, cards)
    if descriptor is not None:
        # Synced: a delivery is the evidence maintenance needs and happens a few times per
        # session, so it is worth a flush to disk; receipts (every call) are not synced.
        try:
            sync_data(descriptor)
        finally:
            os.close(descriptor)


def append_deliveries(context: RecallContext, cards: Iterable[CardHit]) -> int | None:
    """Append one delivery line per card, not yet flushed: the deliveries file's open
    descriptor, which the caller flushes (`files.sync_data`) and closes before the
    session's ledger moves on and before the cards leave (None: no card, nothing
    written). The recall server flushes it in a worker thread (ledger.Commit)."""
    at = utc_timestamp()
    folder = run_dir(context.recall_dir, context.run_key)
    lines = [
        jsonio.dumps(
            _screened(
                {"session": context.session, "lesson": hit.id, "revision": hit.revision, "at": at}
            )
        )
        for hit in cards
    ]
    if not lines:
        return None
    os.makedirs(folder, exist_ok=True)
    with FileLock(os.path.join(folder, LOCK_FILE), timeout=LOCK_SECONDS):
        # The records lock only orders appends against `rewrite_records`; the flush may
        # come after it is released: a rewrite in between copied this line into a file
        # it wrote synced, so either way the line is on the disk once the flush returns.
        return append_open(os.path.join(folder, DELIVERIES_FILE), "\n".join(lines))


def _append(folder: str, name: str, text: str) -> None:
    os.makedirs(folder, exist_ok=True)
    with FileLock(os.path.join(folder, LOCK_FILE), timeout=LOCK_SECONDS):
        append_line(os.path.join(folder, name), text)


def rewrite_records(
    recall_dir: str, run_key: str, clean: Callable[[str, dict[str, Any]], dict[str, Any] | None]
) -> int:
    """Pass every receipt and delivery of `run_key` through `clean(file name, record)`
    (None drops it) and replace a file whose records changed, atomically, under the
    records' lock; returns how many records changed or were dropped."""
    from active_memory.atomic_files import write_atomically

    folder = run_dir(recall_dir, run_key)
    if not has_records(recall_dir, run_key):
        return 0
    changed = 0
    with FileLock(os.path.join(folder, LOCK_FILE), timeout=LOCK_SECONDS):
        for name in _RECORD_FILES:
            path = os.path.join(folder, name)
            if not os.path.exists(path):
                continue
            records = _read_jsonl(path)
            kept: list[dict[str, Any]] = []
            for record in records:
                cleaned = clean(name, record)
                if cleaned != record:
                    changed += 1
                if cleaned is not None:
                    kept.append(cleaned)
            if kept != records:
                text = "".join(jsonio.dumps(record) + "\n" for record in kept)
                write_atomically(path, text, mode=0o600)
    return changed


def record_refunds(
    recall_dir: str, run_key: str, session: str, cards: Iterable[tuple[str, int]]
) -> None:
    """Append one refund line per card a call was given but never ran with."""
    at = utc_timestamp()
    path = os.path.join(run_dir(recall_dir, run_key), DELIVERIES_FILE)
    base = {"session": session, "at": at, "refunded": True}
    lines = [
        jsonio.dumps(_screened({**base, "lesson": lesson, "revision": revision}))
        for lesson, revision in cards
    ]
    if lines:
        append_line(path, "\n".join(lines), sync=True)


def _read_jsonl(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except FileNotFoundError:
        return []
    records: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        value = _parse_line(line)
        if isinstance(value, dict):
            records.append(value)
    return records


def _parse_line(line: str) -> Any:
    try:
        return jsonio.loads(line)
    except ValueError:
        pass
    # A record cut by a crash, with the next whole record glued to it: keep the last
    # `{` from which the rest of the line parses (records hold no nested objects).
    start = line.rfind("{")
    while start > 0:
        try:
            return jsonio.loads(line[start:])
        except ValueError:
            start = line.rfind("{", 0, start)
    return None


def has_records(recall_dir: str, run_key: str) -> bool:
    """True when a hook recorded anything (a receipt or a delivery) for `run_key`."""
    folder = run_dir(recall_dir, run_key)
    return any(os.path.exists(os.path.join(folder, name)) for name in _RECORD_FILES)


def read_receipts(recall_dir: str, run_key: str) -> list[dict[str, Any]]:
    """Every receipt recorded for `run_key`, in the order written."""
    return _read_jsonl(os.path.join(run_dir(recall_dir, run_key), RECEIPTS_FILE))


def read_deliveries(recall_dir: str, run_key: str) -> list[dict[str, Any]]:
    """Every card delivery recorded for `run_key`, in the order written, once each.

    A `(session, lesson, revision)` is delivered at most once per session (SPEC §8), so
    a repeated line (a hook that died after recording, then delivered on a retry, or a
    context that received it again after a compaction) is kept only at its first
    appearance. A refund line takes back the latest delivery of its card in its session
    (a call that never ran); a card refunded and never delivered again is not listed.
    """
    return read_deliveries_in(run_dir(recall_dir, run_key))


def read_deliveries_in(folder: str) -> list[dict[str, Any]]:
    """`read_deliveries` of the run folder `folder` itself (a listing of `runs/` has the
    folders' names, which are the run keys already made file names: `session%3A…`)."""
    kept: list[dict[str, Any] | None] = []
    open_at: dict[tuple[Any, Any, Any], list[int]] = {}
    for record in _read_jsonl(os.path.join(folder, DELIVERIES_FILE)):
        key = (record.get("session"), record.get("lesson"), record.get("revision"))
        if record.get("refunded") is True:
            places = open_at.get(key)
            if places:
                kept[places.pop()] = None
            continue
        open_at.setdefault(key, []).append(len(kept))
        kept.append(record)
    seen: set[tuple[Any, Any, Any]] = set()
    unique: list[dict[str, Any]] = []
    for item in kept:
        if item is None:
            continue
        key = (item.get("session"), item.get("lesson"), item.get("revision"))
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique
