"""What the OpenCode and Hermes importers share: both clients keep their sessions in a
SQLite database of their own, not in a log file.

- `open_database` opens it read-only (the client may be writing it: SQLite's WAL lets
  a reader see the last commit), and names what is wrong with a file that is not such a
  database (missing, not SQLite, not the client's tables) as an `InvalidRecord`;
- `iso_time` turns the clients' epoch times (OpenCode: milliseconds, Hermes: seconds)
  into the record's ISO times;
- `without_cards` takes our own delivered cards back out of a stored tool result: both
  clients store the result the model saw, cards appended (docs/harnesses.md), and a
  failure's error text is the tool's output, not the lesson it was given;
- `json_value` reads a JSON column strictly (reader.py), a bad value is None;
  `leading_object` the JSON object a tool result starts with.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from active_memory.errors import InvalidRecord
from active_memory.recall.frame import CLOSE, OPEN

MAX_JSON_CHARS = 8 * 1024 * 1024
"""A JSON column longer than this (a tool result of many megabytes) is not parsed."""


def database_path(path: str | Path, file_name: str) -> Path:
    """`PATH` itself, or `PATH/<file_name>` when PATH is the client's data folder."""
    candidate = Path(path).expanduser()
    return candidate / file_name if candidate.is_dir() else candidate


def open_database(path: Path, what: str, tables: Iterable[str]) -> sqlite3.Connection:
    """A read-only connection to the client's database; `InvalidRecord` when `path` is
    missing, not SQLite, or lacks one of `tables`."""
    if not path.is_file():
        raise InvalidRecord(str(path), f"no {what} here (not a file)")
    uri = f"file:{_quoted(os.path.abspath(path))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=5.0)
        found = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as exc:
        raise InvalidRecord(str(path), f"not a {what}: {exc}") from None
    missing = sorted(set(tables) - found)
    if missing:
        conn.close()
        raise InvalidRecord(
            str(path), f"not a {what}: no table {', '.join(missing)} (another client's file?)"
        )
    return conn


def _quoted(path: str) -> str:
    # A URI filename: `?` and `#` would end the path, `%` starts an escape.
    return path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def iso_time(value: Any, *, milliseconds: bool) -> str | None:
    """An epoch time (ms or s) as `2026-12-07T12:16:26.140Z`; None when not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = value / 1000 if milliseconds else float(value)
    try:
        moment = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def without_cards(text: str) -> str:
    """`text` without the framed cards our hooks appended to it (the blank line before
    each frame included)."""
    start = text.find(OPEN)
    while start != -1:
        end = text.find(CLOSE, start)
        stop = len(text) if end == -1 else end + len(CLOSE)
        head = text[:start]
        head = head[:-2] if head.endswith("\n\n") else head
        text = head + text[stop:]
        start = text.find(OPEN)
    return text


def json_value(text: Any, source: str) -> Any:
    """A JSON column's value, or None when it is not a string of valid JSON."""
    from active_memory.reader import parse_json

    if not isinstance(text, str) or not text or len(text) > MAX_JSON_CHARS:
        return None
    try:
        return parse_json(text, source)
    except InvalidRecord:
        return None


def leading_object(text: str) -> dict[str, Any] | None:
    """The JSON object `text` starts with, even when other text follows it (a hook of
    another tool may append to a result as ours does); None when it starts with none."""
    import json

    stripped = text.lstrip()
    if not stripped.startswith("{") or len(stripped) > MAX_JSON_CHARS:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(stripped)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
