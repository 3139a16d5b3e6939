"""JSON in and out for the hook path, without importing the `json` package.

`import json` pulls in `re` and `enum` and costs a fresh process several milliseconds,
as much as the rest of the hook together. The C scanner and string encoder behind
`json` (`_json`) do the real work and load in microseconds, so the hook uses them
directly. Errors are still `ValueError`s; where `_json` is missing (not CPython) this
falls back to the `json` package.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_WHITESPACE = " \t\n\r"


def _constant(name: str) -> Any:
    raise ValueError(f"JSON constant {name} is not allowed")


class _ScanContext:
    # The attributes `_json.make_scanner` reads; the same defaults as `json.loads`.
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_constant)


try:
    from _json import encode_basestring as _encode_string
    from _json import make_scanner as _make_scanner

    _scan: Callable[[str, int], tuple[Any, int]] = _make_scanner(_ScanContext())  # type: ignore[arg-type]
except ImportError:  # pragma: no cover - not CPython
    import json.encoder
    import json.scanner

    _encode_string = json.encoder.encode_basestring
    _scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def loads(text: str) -> Any:
    """Decode one JSON document (surrounding whitespace allowed); `ValueError` if it is not."""
    start = 0
    end = len(text)
    while start < end and text[start] in _WHITESPACE:
        start += 1
    try:
        value, index = _scan(text, start)
    except StopIteration:
        raise ValueError(f"no JSON value at character {start}") from None
    except SystemError:
        # `_json` builds its error from `json.decoder`, and fails oddly when that module
        # was never imported; only then (bad input) is the full package worth loading.
        import json

        json.loads(text)
        raise ValueError("not a JSON document") from None
    while index < end and text[index] in _WHITESPACE:
        index += 1
    if index != end:
        raise ValueError(f"extra data after the JSON value at character {index}")
    return value


def dumps(value: Any) -> str:
    """Encode dicts (string keys), lists, tuples, strings, ints, bools and None compactly.

    Non-ASCII text is written as UTF-8 (not `\\u` escapes), like `json.dumps(...,
    ensure_ascii=False)`.
    """
    parts: list[str] = []
    _write(value, parts)
    return "".join(parts)


def _write(value: Any, parts: list[str]) -> None:
    if isinstance(value, str):
        parts.append(_encode_string(value))
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int):
        parts.append(str(int(value)))
    elif isinstance(value, dict):
        parts.append("{")
        first = True
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
            if not first:
                parts.append(",")
            first = False
            parts.append(_encode_string(key))
            parts.append(":")
            _write(item, parts)
        parts.append("}")
    elif isinstance(value, list | tuple):
        parts.append("[")
        for position, item in enumerate(value):
            if position:
                parts.append(",")
            _write(item, parts)
        parts.append("]")
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON here")
