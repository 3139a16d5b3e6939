"""`exclude` path globs (docs/settings.md, "exclude"): which checkout paths Active Memory
must never look at.

Patterns are root-relative, `/`-separated, with the familiar `.gitignore` reading:

- `*` any characters within one path segment, `?` one character, `[abc]` a class;
- `**` as a whole segment: any number of segments (`docs/**/draft.md`, `**/secrets`);
- a pattern with no `/` except a trailing one matches a name at any depth (`*.pem`,
  `.env`, `secrets/`); one with a `/` is anchored at the checkout root (`src/vendor`;
  a leading `/` only says so explicitly);
- a pattern matches a path when it matches the path itself or one of the folders that
  hold it, so `secrets` excludes every file under any folder named `secrets`.

Negation (`!`) is refused rather than half-supported: an exclusion is a privacy control,
and a later pattern must never quietly bring an excluded path back.

This module is on the hook's per-call path: it imports `re` only when there are
patterns, and compiles them once per pattern tuple.
"""

from __future__ import annotations

import functools

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Iterable

MAX_PATTERNS = 256
MAX_PATTERN_CHARS = 256


def pattern_problem(pattern: object) -> str | None:
    """Why `pattern` is not an allowed exclude glob, or None when it is."""
    if not isinstance(pattern, str) or not pattern.strip():
        return "must be a non-empty string"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"longer than {MAX_PATTERN_CHARS} characters"
    if pattern.startswith("!"):
        return "negation (!) is not supported: an exclusion cannot be undone by a pattern"
    if "\\" in pattern:
        return "use / between folders (no backslashes)"
    if any(part == ".." for part in pattern.split("/")):
        return "must stay inside the checkout (no ..)"
    if pattern.strip("/") == "" or pattern.strip("/") == "**":
        return "would exclude the whole checkout; set enabled = false instead"
    return None


@functools.lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    import re

    parts = [_translate(pattern) for pattern in patterns]
    return re.compile("|".join(parts)) if parts else None


def _translate(pattern: str) -> str:
    body = pattern.strip("/")
    anchored = pattern.startswith("/") or "/" in body
    out: list[str] = []
    segments = body.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        out.append(_segment(segment))
        if not last:
            out.append("/")
    prefix = "" if anchored else "(?:.*/)?"
    # The path itself, or a folder holding it.
    return f"(?:{prefix}{''.join(out)})(?:/.*)?"


def _segment(segment: str) -> str:
    import re as regex

    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", index + 2)
            if end < 0:
                out.append(regex.escape(char))
            else:
                inner = segment[index + 1 : end]
                if inner.startswith("!"):
                    inner = "^" + inner[1:]
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                index = end
        else:
            out.append(regex.escape(char))
        index += 1
    return "".join(out)


def is_excluded(path: str, patterns: tuple[str, ...]) -> bool:
    """Whether the root-relative `path` (`/`-separated) is excluded by `patterns`."""
    if not patterns:
        return False
    compiled = _compiled(patterns)
    if compiled is None:
        return False
    cleaned = path.replace("\\", "/").lstrip("/")
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    return compiled.fullmatch(cleaned) is not None


def excluded_of(paths: Iterable[str], patterns: tuple[str, ...]) -> list[str]:
    """The paths of `paths` that `patterns` exclude, in order."""
    return [path for path in paths if is_excluded(path, patterns)] if patterns else []
