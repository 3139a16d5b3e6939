"""Writing one generation file (index.py's layout), blob by blob, then renaming it in.

Blobs are appended to a temporary file beside the target as the builder produces them,
in any order of sections (a section's blobs are numbered in the order added); a blob
of the previous generation that did not change is copied as bytes (`copy`), runs of
them with one read each. `finish` writes the offset tables, the meta and the trailer,
flushes the file to the disk and renames it into place, so a reader sees a complete
generation or none. A writer left unfinished (an error, a killed process) leaves only
its temporary file, which `generations.collect` deletes once it is old.
"""

from __future__ import annotations

import marshal
import os
import sys
from array import array

from active_memory.recall.index import FORMAT, MAGIC, SECTIONS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any

    from active_memory.recall.index import SnapshotIndex

COPY_CHUNK = 1 << 22
SYNC_EVERY = 32 << 20
"""Bytes written between two flushes to the disk: a generation of hundreds of MB synced
once at its end would hold the disk (and every tool call's delivery sync) for seconds."""


def temporary_name(path: str) -> str:
    """The temporary file a generation at `path` is written to (`….tmp`, collected)."""
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")


class GenerationWriter:
    """One generation file being written; use as a context manager, end with `finish`."""

    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._temporary = temporary_name(path)
        descriptor = os.open(self._temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._file = os.fdopen(descriptor, "wb", buffering=1 << 20)
        self._file.write(MAGIC)
        self._at = len(MAGIC)
        self._spans: dict[str, array[int]] = {name: array("Q") for name in SECTIONS}
        self._pending: list[tuple[str, int, int]] = []  # copies not yet written
        self._source: SnapshotIndex | None = None
        self._done = False
        self._synced_at = 0

    def __enter__(self) -> GenerationWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self._done:
            self.abort()

    def count(self, section: str) -> int:
        """Blobs added to `section` so far."""
        return len(self._spans[section]) // 2

    def add(self, section: str, data: bytes) -> int:
        """Append `data` as the next blob of `section`; its number."""
        self._flush_copies()
        self._write(data)
        spans = self._spans[section]
        spans.append(self._at)
        self._at += len(data)
        spans.append(self._at)
        return len(spans) // 2 - 1

    def add_value(self, section: str, value: Any) -> int:
        """Append `value`, marshalled, as the next blob of `section`; its number."""
        return self.add(section, marshal.dumps(value))

    def copy(self, section: str, previous: SnapshotIndex, number: int) -> int:
        """Append blob `number` of `section` of `previous`, unchanged; its new number."""
        if self._source is not previous:
            self._flush_copies()
            self._source = previous
        start, end = previous.span(section, number)
        spans = self._spans[section]
        spans.append(self._at)
        self._at += end - start
        spans.append(self._at)
        if self._pending and self._pending[-1][2] == start:
            self._pending[-1] = (section, self._pending[-1][1], end)  # one read for a run
        else:
            self._pending.append((section, start, end))
        if sum(stop - begin for _, begin, stop in self._pending) >= COPY_CHUNK:
            self._flush_copies()
        return len(spans) // 2 - 1

    def _flush_copies(self) -> None:
        source, pending = self._source, self._pending
        self._pending = []
        for _section, start, end in pending:
            assert source is not None
            for at in range(start, end, COPY_CHUNK):
                self._write(source.raw_range(at, min(end, at + COPY_CHUNK)))

    def _write(self, data: bytes) -> None:
        self._file.write(data)
        if self._file.tell() - self._synced_at >= SYNC_EVERY:
            self._file.flush()
            os.fdatasync(self._file.fileno())
            self._synced_at = self._file.tell()

    def finish(self, meta: dict[str, Any]) -> str:
        """Write the tables, the meta and the trailer; sync; rename into place."""
        self._flush_copies()
        sections: dict[str, tuple[int, int]] = {}
        for name in SECTIONS:
            spans = self._spans[name]
            sections[name] = (self._at, len(spans) // 2)
            data = spans.tobytes()
            self._file.write(data)
            self._at += len(data)
        encoded = marshal.dumps(
            {**meta, "format": FORMAT, "byteorder": sys.byteorder, "sections": sections}
        )
        self._file.write(encoded)
        trailer = self._at.to_bytes(8, "little") + len(encoded).to_bytes(8, "little") + MAGIC
        self._file.write(trailer)
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self._temporary, self.path)
        self._done = True
        return self.path

    def abort(self) -> None:
        """Drop the temporary file (nothing was renamed in)."""
        self._done = True
        try:
            self._file.close()
        finally:
            try:  # noqa: SIM105 - gone already is fine
                os.unlink(self._temporary)
            except OSError:
                pass
