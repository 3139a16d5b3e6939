"""Reading the files commands take: JSON Lines of lessons.

Reading goes through `active_memory.reader` (bounded, regular files only).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from active_memory.errors import InvalidRecord

if TYPE_CHECKING:
    from active_memory.lessons import Lesson, Tombstone

MAX_REPORTED_LINES = 20


def read_lesson_lines(source: str) -> list[Lesson | Tombstone]:
    """Validate every line of a `lessons export` file; any bad line refuses the whole file.

    Holds every record; `lessons import` uses `check_lesson_lines` and
    `stream_lesson_lines` instead, which hold none.
    """
    records: list[Lesson | Tombstone] = []
    _refuse(source, _validated(source, records.append))
    return records


def check_lesson_lines(
    source: str, label: str | None = None, tick: Callable[[], None] | None = None
) -> int:
    """Pass 1 of an import: validate and screen every line, keeping no record; any bad
    line refuses the whole file (`InvalidRecord`, naming `label` or `source`). Returns
    how many records it holds; `tick` is called after each valid one (progress)."""
    count = 0

    def counted(_record: Lesson | Tombstone) -> None:
        nonlocal count
        count += 1
        if tick is not None:
            tick()

    _refuse(label or source, _validated(source, counted))
    return count


def stream_lesson_lines(source: str, label: str | None = None) -> Iterator[Lesson | Tombstone]:
    """Pass 2 of an import: the records again, one at a time, for the store to write in
    chunks inside its one transaction. A line that fails now (the file changed since
    pass 1) raises `InvalidRecord`, and the transaction rolls back."""
    pending: list[Lesson | Tombstone] = []
    problems = _validated(source, pending.append, lazily=True)
    for found in problems:
        if found is not None:
            why = f"changed while it was imported ({found[1]}); nothing was imported"
            raise InvalidRecord(label or source, why, found[0])
        yield from pending
        pending.clear()


def spool_stdin() -> tempfile._TemporaryFileWrapper[bytes]:
    """Stdin copied to a private temporary file, so an import can read it twice."""
    import shutil
    import sys

    spool = tempfile.NamedTemporaryFile(prefix="active-memory-import-", suffix=".jsonl")  # noqa: SIM115
    shutil.copyfileobj(sys.stdin.buffer, spool, 1024 * 1024)
    spool.flush()
    return spool


def _validated(
    source: str, keep: Callable[[Lesson | Tombstone], None], *, lazily: bool = False
) -> Iterator[tuple[int, str] | None]:
    """Each bad line's (number, reason); valid records go to `keep`. With `lazily`, a
    None follows each kept record, so a caller can take it before the next is read."""
    from pydantic import ValidationError

    from active_memory.credentials import mask, secret_reasons
    from active_memory.lessons import Lesson, Tombstone
    from active_memory.reader import LineProblem, iter_json_lines
    from active_memory.validation import error_lines

    # Streamed line by line (JSON Lines: only `\n` ends a line, so a card holding U+2028
    # or U+0085 comes back as it was exported).
    for number, document in iter_json_lines(source, "lessons file"):
        if isinstance(document, LineProblem):
            yield number, document
            continue
        if not isinstance(document, dict):
            yield number, "expected a JSON object (one lesson per line)"
            continue
        model = Tombstone if document.get("status") == "retired" else Lesson
        try:
            record = model.model_validate(document)
        except ValidationError as exc:
            yield number, mask("; ".join(error_lines(exc)))
            continue
        # Secrets are never stored, whoever writes: an import is screened like a proposal.
        if isinstance(record, Lesson):
            stored = record.model_dump(
                mode="json", include={"title", "recommendation", "associations", "evidence"}
            )
            reasons = secret_reasons(stored, "")
            if reasons:
                for reason in reasons:
                    yield number, reason
                continue
        keep(record)
        if lazily:
            yield None


def _refuse(source: str, found: Iterator[tuple[int, str] | None]) -> None:
    problems = [problem for problem in found if problem is not None]
    if not problems:
        return
    shown = [f"line {n}: {why}" for n, why in problems[:MAX_REPORTED_LINES]]
    more = len(problems) - len(shown)
    if more:
        shown.append(f"… and {more} more bad lines")
    raise InvalidRecord(
        source,
        f"{len(problems)} bad line(s); nothing was imported. Fix them and import again:\n  "
        + "\n  ".join(shown),
        line=problems[0][0],
    )
