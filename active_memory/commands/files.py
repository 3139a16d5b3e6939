"""Reading and writing the files commands take: JSON Lines of lessons, atomic writes.

Reading goes through `active_memory.reader` (bounded, regular files only).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from active_memory.errors import InvalidRecord, UsageError

if TYPE_CHECKING:
    from active_memory.lessons import Lesson, Tombstone

MAX_REPORTED_LINES = 20


def read_lesson_lines(source: str) -> list[Lesson | Tombstone]:
    """Validate every line of a `lessons export` file; any bad line refuses the whole file."""
    from pydantic import ValidationError

    from active_memory.lessons import Lesson, Tombstone
    from active_memory.quality.secrets import mask, secret_reasons
    from active_memory.reader import LineProblem, iter_json_lines
    from active_memory.validation import error_lines

    records: list[Lesson | Tombstone] = []
    problems: list[tuple[int, str]] = []
    # Streamed line by line (JSON Lines: only `\n` ends a line, so a card holding U+2028
    # or U+0085 comes back as it was exported); only validated records are kept.
    for number, document in iter_json_lines(source, "lessons file"):
        if isinstance(document, LineProblem):
            problems.append((number, document))
            continue
        if not isinstance(document, dict):
            problems.append((number, "expected a JSON object (one lesson per line)"))
            continue
        model = Tombstone if document.get("status") == "retired" else Lesson
        try:
            record = model.model_validate(document)
        except ValidationError as exc:
            problems.append((number, mask("; ".join(error_lines(exc)))))
            continue
        # Secrets are never stored, whoever writes: an import is screened like a proposal.
        if isinstance(record, Lesson):
            stored = record.model_dump(
                mode="json", include={"title", "recommendation", "associations", "evidence"}
            )
            problems.extend((number, reason) for reason in secret_reasons(stored, ""))
        records.append(record)
    if problems:
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
    return records


def write_atomically(destination: str, text: str) -> None:
    """Write `text` to a temporary file beside `destination`, then rename it into place."""
    target = Path(destination)
    if target.is_dir():
        raise UsageError(f"{destination}: is a folder; give a file path")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder; create it first")
    from active_memory.atomic_files import write_atomically

    write_atomically(target, text)
