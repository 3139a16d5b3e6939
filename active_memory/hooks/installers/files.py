"""What an installer changes: a file's text before and after, as a diff, written atomically."""

from __future__ import annotations

import contextlib
import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.atomic_files import write_atomically
from active_memory.errors import InvalidRecord


@dataclass(frozen=True, slots=True)
class FileChange:
    """`path` goes from `before` to `after` (None: the file does not exist / is removed)."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        """False when applying would leave the file exactly as it is."""
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff of the change ("" when nothing changes)."""
        if not self.changed:
            return ""
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def apply(self) -> None:
        """Write the change: temp file + rename (keeping the old file's mode), or delete."""
        if not self.changed:
            return
        if self.after is None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        write_atomic(self.path, self.after)


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text`, keeping its permissions (see `write_atomically`)."""
    write_atomically(path, text)


def read_text(path: Path) -> str | None:
    """The file's text, or None if it does not exist; a clear error if it cannot be read."""
    from active_memory.reader import MAX_DOCUMENT_BYTES, NotReadable, read_file_bytes

    try:
        data = read_file_bytes(path, MAX_DOCUMENT_BYTES)
    except NotReadable as exc:
        if exc.reason == "no such file":
            return None
        raise InvalidRecord(str(path), f"cannot read: {exc.reason}; nothing was changed") from None
    if data is None:
        raise InvalidRecord(str(path), "too large to be a settings file; nothing was changed")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRecord(
            str(path), f"not UTF-8 text ({exc.reason}); nothing was changed"
        ) from None


def parse_json_object(path: Path, text: str | None) -> dict[str, Any]:
    """The settings object in `text` ({} for a missing or blank file); InvalidRecord otherwise."""
    if text is None or not text.strip():
        return {}
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidRecord(
            str(path),
            f"not valid JSON (column {exc.colno}: {exc.msg}); fix it or move it away, "
            "nothing was changed",
            line=exc.lineno,
        ) from None
    except (ValueError, RecursionError) as exc:  # an integer past the limit, deep nesting
        what = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:80]
        raise InvalidRecord(
            str(path), f"not usable JSON ({what}); fix it or move it away, nothing was changed"
        ) from None
    if not isinstance(document, dict):
        raise InvalidRecord(str(path), "the top level must be a JSON object; nothing was changed")
    return document


def json_indent(text: str | None) -> int | str:
    """The indentation the file already uses (spaces or a tab), else 2."""
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            prefix = line[: len(line) - len(stripped)]
            return "\t" if prefix.startswith("\t") else len(prefix)
    return 2


def dump_json(document: dict[str, Any], indent: int | str) -> str:
    """`document` as the file's text: the given indentation, key order kept, final newline."""
    return json.dumps(document, indent=indent, ensure_ascii=False) + "\n"
