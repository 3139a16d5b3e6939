"""The one bounded reader for every file and stdin input (docs/security.md).

Every command that reads a file a person or a harness hands it goes through here:

- Only regular files are opened. The open itself never blocks (`O_NONBLOCK`: a FIFO
  with no writer would otherwise hang the process), and a FIFO, device, socket or
  folder is refused with a message naming the path.
- Reads are capped (`MAX_DOCUMENT_BYTES` for a whole document, `MAX_LINE_BYTES` per JSON
  Lines line, `MAX_STDIN_BYTES` for the hook's stdin): an input past the cap is refused,
  never held whole in memory.
- JSON is parsed strictly: nesting deeper than `MAX_DEPTH`, an integer that does not fit
  64 bits, a non-finite number, `NaN`/`Infinity`, a lone surrogate (`"\\ud800"`) or bytes
  that are not UTF-8 become an `InvalidRecord` (exit 2) naming the file and line.
- JSON Lines are split on `\\n` only (the JSON Lines definition of a line): U+2028,
  U+2029 and U+0085 are characters inside a line, never line breaks. Lines are streamed.

Module level imports only `os` and `stat`: the per-tool-call hook uses `open_regular`
and `read_stream` and must stay lean; errors and `json` load when they are needed.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import IO, Any

MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
"""A whole JSON document (run record, config, graph, evidence input)."""

MAX_LINE_BYTES = 64 * 1024 * 1024
"""One JSON Lines line (an exported lesson, one transcript entry)."""

MAX_STDIN_BYTES = 16 * 1024 * 1024
"""The hook's stdin: one tool call's JSON, far below this in practice."""

MAX_DEPTH = 128
"""Nesting depth of any JSON document; real inputs stay under 20."""

MAX_INT = 2**63
"""Integers must fit SQLite's 64-bit INTEGER (and nothing we read needs more)."""

_CHUNK = 1024 * 1024


class NotReadable(OSError):
    """A path that is not a readable regular file; `str()` is a one-line reason.

    `reason` is the reason alone (`no such file`, `is a FIFO (named pipe)`, …).
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    @property
    def missing(self) -> bool:
        """Nothing was at the path when it was opened (it may exist by now)."""
        return self.reason == "no such file"


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open `path` for binary reading if it is a regular file; never blocks.

    Raises `NotReadable` (an `OSError`) with a short reason for a missing path, a folder,
    a FIFO, a device or a socket, and for any error the system reports.
    """
    name = os.fspath(path)
    try:
        descriptor = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise NotReadable(name, "no such file") from None
    except IsADirectoryError:
        raise NotReadable(name, "is a folder") from None
    except OSError as exc:
        raise NotReadable(name, f"cannot open it: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise NotReadable(name, _kind(mode))
        # Regular files ignore O_NONBLOCK; clear it anyway so reads behave as usual.
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def refusal(exc: NotReadable, what: str) -> str:
    """A one-line message for a command: what was refused, and what to give instead."""
    if exc.reason == "no such file":
        return f"{exc.path}: no such {what}; check the path"
    if exc.reason.startswith("is a "):
        return f"{exc.path}: {exc.reason}, not a {what}; give the path of a regular file"
    return f"{exc.path}: cannot read the {what}: {exc.reason.removeprefix('cannot open it: ')}"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a folder"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is a special file"


def read_stream(stream: IO[bytes], limit: int) -> bytes | None:
    """Up to `limit` bytes of `stream`; None when it holds more (nothing more is read)."""
    data = stream.read(limit + 1)
    return None if len(data) > limit else data


def read_file_bytes(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """A regular file's bytes, or None when it is larger than `limit`; `NotReadable` else."""
    with open_regular(path) as handle:
        try:
            return read_stream(handle, limit)
        except OSError as exc:
            raise NotReadable(os.fspath(path), f"cannot read it: {exc.strerror}") from None


# --- for commands: usage errors -----------------------------------------------------


def _stdin() -> IO[bytes]:
    import sys

    return sys.stdin.buffer


def read_input(source: str | os.PathLike[str], what: str, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of a file (or stdin for `-`); a `UsageError` naming the path if not readable."""
    from active_memory.errors import UsageError

    name = os.fspath(source)
    try:
        data = read_stream(_stdin(), limit) if name == "-" else read_file_bytes(name, limit)
    except NotReadable as exc:
        raise UsageError(refusal(exc, what)) from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot read the {what}: {exc.strerror or exc}") from None
    if data is None:
        raise UsageError(
            f"{'stdin' if name == '-' else name}: the {what} is larger than "
            f"{limit // (1024 * 1024)} MiB; refused"
        )
    return data


def read_text(source: str | os.PathLike[str], what: str, limit: int = MAX_DOCUMENT_BYTES) -> str:
    """`read_input` decoded as UTF-8; bad bytes are an `InvalidRecord` naming the line."""
    data = read_input(source, what, limit)
    return decode(data, _label(source))


def decode(data: bytes, source: str) -> str:
    """UTF-8 text of `data` (a leading BOM dropped); `InvalidRecord` with the line if not."""
    from active_memory.errors import InvalidRecord

    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidRecord(source, f"not UTF-8 text (byte {exc.start})", line) from None


def _label(source: str | os.PathLike[str]) -> str:
    name = os.fspath(source)
    return "stdin" if name == "-" else name


def load_json(source: str | os.PathLike[str], what: str, limit: int = MAX_DOCUMENT_BYTES) -> Any:
    """Read and strictly parse one JSON document (see `parse_json`)."""
    return parse_json(read_text(source, what, limit), _label(source))


def parse_json(text: str, source: str, line: int | None = None) -> Any:
    """Strictly parse one JSON document; every problem is an `InvalidRecord` with a line.

    `line` is the document's own line in a JSON Lines file (errors then name it).
    """
    import json

    from active_memory.errors import InvalidRecord, RecordTooLarge

    def where(position: int) -> int:
        return line if line is not None else text.count("\n", 0, position) + 1

    try:
        value = json.loads(
            text, parse_int=_strict_int, parse_float=_strict_float, parse_constant=_no_constant
        )
    except json.JSONDecodeError as exc:
        if line is None:
            message = f"column {exc.colno}: not valid JSON: {exc.msg}"
        else:
            message = f"not JSON: {exc.msg} at column {exc.colno}"
        raise InvalidRecord(source, message, where(exc.pos)) from None
    except RecursionError:
        raise RecordTooLarge(
            source, f"JSON nested deeper than {MAX_DEPTH} levels", where(_deep_point(text))
        ) from None
    except _Refused as exc:
        refused = RecordTooLarge if exc.too_large else InvalidRecord
        raise refused(source, str(exc), where(_find(text, exc.token))) from None
    problem = _check(value)
    if problem is not None:
        message, token = problem
        # A value past the limits is refused as too large; a lone surrogate is bad text.
        refused = InvalidRecord if token == "\\u" else RecordTooLarge
        raise refused(source, message, where(_find(text, token))) from None
    return value


class _Refused(ValueError):
    def __init__(self, message: str, token: str, *, too_large: bool = True) -> None:
        super().__init__(message)
        self.token = token
        self.too_large = too_large


def _strict_int(token: str) -> int:
    digits = token.lstrip("-")
    if len(digits) > 19 or not -MAX_INT <= int(token) < MAX_INT:
        raise _Refused(f"integer {token[:24]}… ({len(digits)} digits) does not fit 64 bits", token)
    return int(token)


def _strict_float(token: str) -> float:
    value = float(token)
    if value in (float("inf"), float("-inf")):
        raise _Refused(f"number {token[:24]} is out of range", token)
    return value


def _no_constant(token: str) -> Any:
    raise _Refused(f"{token} is not JSON", token, too_large=False)


def check_value(value: Any) -> str | None:
    """Why decoded JSON breaks the reader's limits (depth, 64-bit integers, lone
    surrogates), or None; for JSON that was parsed elsewhere (a model's answer)."""
    problem = _check(value)
    return problem[0] if problem is not None else None


def _check(value: Any) -> tuple[str, str] | None:
    """Depth, integer size and lone surrogates, walked without recursion: (message,
    token to find in the text)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_DEPTH:
                return f"JSON nested deeper than {MAX_DEPTH} levels", ""
            for key, child in item.items():
                if not key.isascii() and _has_surrogate(key):
                    return "a lone surrogate (\\ud800-\\udfff) is not text", "\\u"
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            if depth > MAX_DEPTH:
                return f"JSON nested deeper than {MAX_DEPTH} levels", ""
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str) and not item.isascii() and _has_surrogate(item):
            return "a lone surrogate (\\ud800-\\udfff) is not text", "\\u"
        elif type(item) is int and not -MAX_INT <= item < MAX_INT:
            return "an integer does not fit 64 bits", str(item)[:19]
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _find(text: str, token: str) -> int:
    if not token:
        return _deep_point(text)
    if token == "\\u":
        import re

        hit = re.search(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", text)
        return hit.start() if hit else 0
    position = text.find(token)
    return max(position, 0)


_DEEP_SCAN_CHARS = 8 * 1024 * 1024
"""How far `_deep_point` looks (a Python loop, on the error path only)."""


def _deep_point(text: str) -> int:
    """Where nesting first passes `MAX_DEPTH` (strings skipped); only on the error path,
    within the first `_DEEP_SCAN_CHARS` (else 0: the message then names line 1)."""
    depth, in_string, escaped = 0, False, False
    for position, char in enumerate(text[:_DEEP_SCAN_CHARS]):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return position
        elif char in "]}":
            depth -= 1
    return 0


# --- JSON Lines ------------------------------------------------------------------------


class LineProblem(str):
    """Why one JSON Lines line is not a usable value (a one-line message)."""


def iter_lines(
    source: str | os.PathLike[str], what: str, limit: int = MAX_LINE_BYTES
) -> Iterator[tuple[int, bytes | LineProblem]]:
    """(line number, raw line without its `\\n` / `\\r\\n`) for each line, streamed.

    Only `\\n` ends a line. A line longer than `limit` yields a `LineProblem` instead
    (its bytes are skipped, never held). Opening problems are `UsageError`s.
    """
    from active_memory.errors import UsageError

    name = os.fspath(source)
    if name == "-":
        yield from _lines(_stdin(), limit)
        return
    try:
        handle = open_regular(name)
    except NotReadable as exc:
        raise UsageError(refusal(exc, what)) from None
    with handle:
        yield from _lines(handle, limit)


def _lines(handle: IO[bytes], limit: int) -> Iterator[tuple[int, bytes | LineProblem]]:
    number = 0
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):  # skip the rest of the long line
                raw = handle.readline(_CHUNK)
            yield number, LineProblem(f"line longer than {limit // (1024 * 1024)} MiB")
            continue
        yield number, raw.removesuffix(b"\n").removesuffix(b"\r")


def iter_json_lines(
    source: str | os.PathLike[str], what: str, limit: int = MAX_LINE_BYTES
) -> Iterator[tuple[int, Any | LineProblem]]:
    """(line number, parsed value or `LineProblem`) for every non-blank line, streamed."""
    from active_memory.errors import InvalidRecord

    label = _label(source)
    for number, raw in iter_lines(source, what, limit):
        if isinstance(raw, LineProblem):
            yield number, raw
            continue
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
            if number == 1:
                text = text.removeprefix("\ufeff")
        except UnicodeDecodeError as exc:
            yield number, LineProblem(f"not UTF-8 text (byte {exc.start})")
            continue
        try:
            yield number, parse_json(text, label, number)
        except InvalidRecord as exc:
            yield number, LineProblem(exc.detail)
