"""A generation from rows held in memory (tests, benches): the store's change rows, not
the store.

`build(previous, rows, scope, matched=..., path=...)` writes the generation `previous` +
`rows`: incremental when it can be (incremental.py), else complete from `previous`'s
records with the rows applied (full_build.py, fed from memory by `MemoryReader`). The
background builder (building.py) feeds the complete build from the store page by page.
"""

from __future__ import annotations

from contextlib import contextmanager

from active_memory.recall import full_build, incremental
from active_memory.recall.generation import next_source, source_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from typing import Any

    from active_memory.recall.generation import Record
    from active_memory.recall.index import SnapshotIndex


class MemoryReader:
    """A complete build's input from records in memory (`full_build.ScopeReader`)."""

    def __init__(self, records: Sequence[Record], version: int, latest: int) -> None:
        self.records = records
        self.version = version
        self.latest = latest

    def page(self, after: str | None, limit: int) -> tuple[int, str | None, list[Record]]:
        """(version, last ID, the next `limit` records after ID `after`, by text as the
        store pages)."""
        chosen = sorted(
            (record for record in self.records if after is None or record[0] > after),
            key=lambda record: record[0],
        )[:limit]
        return self.version, chosen[-1][0] if chosen else None, chosen

    @contextmanager
    def changes_since(
        self, since: int
    ) -> Iterator[tuple[int, int, Iterable[tuple[str, Record | None]]]]:
        """Nothing changed since: the records are one version."""
        yield self.version, self.latest, ()


def build(
    previous: SnapshotIndex | None,
    rows: Sequence[Sequence[Any]],
    scope: dict[str, Any],
    *,
    matched: bool,
    path: str,
    version: int = 0,
    latest: int = 0,
) -> str:
    """Write the generation `previous` + `rows` to `path` (a complete one without a
    previous); incremental when it can be (incremental.py). Returns `path`."""
    meta = {"scope": dict(scope), "version": version, "since": latest}
    if previous is not None and incremental.build(previous, rows, meta, path, matched=matched):
        return path
    base = source_of(previous) if previous is not None else []
    records = next_source(base, rows, matched=matched)
    reader = MemoryReader(records, version, latest)
    full_build.build(full_build.work_folder(path), reader, meta, path, matched=matched)
    return path
