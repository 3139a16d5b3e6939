"""How a tool call's path texts become signals: root-relative paths inside the workspace,
the other reading kept for folders, globs, `apply_patch` envelopes, and the terms of
what was read.

A relative path is resolved against the tool's working directory; when that names
nothing in the workspace but the same text from the workspace root does, the root's
reading is the file (an agent in `repo/src` reading `src/a.py` means `repo/src/a.py`),
and both readings are tried for folder matches. `file::test`, `file:line` and
`file:line:col` name the file (`split_location`). Paths are kept only inside the
workspace root, root-relative with `/`. The only file-system calls are an existence
check (`lstat`) of the two readings of a relative path, made only when the working
directory is not the root, and a `realpath` when a path seems to lie outside the root.

`PathReader` accumulates one call's `Signals`; signals.py drives it key by key, and
shell_signals.py reads a shell command's words into it.
"""

from __future__ import annotations

import os

from active_memory.recall.terms import identifiers_in, split_terms
from active_memory.recall.types import (
    MAX_IDENTIFIERS,
    MAX_LOOKUPS,
    MAX_PATHS,
    MAX_TERMS,
    MAX_TEXT,
    Signals,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

PATCH_TOOLS = frozenset({"apply_patch", "applypatch", "patch", "apply-patch"})
_PATCH_HEADERS = ("*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:")
_GLOB_CHARS = "*?[{"


class PathReader:
    """Accumulates signals; `base` is the folder relative paths are resolved against."""

    def __init__(self, root: str, cwd: str) -> None:
        self.root = os.path.normpath(root)
        self.real_root: str | None = None  # resolved on the first miss
        self.lookups = MAX_LOOKUPS  # bare shell words checked for existence, at most
        self.base = self.resolve(cwd, self.root)
        self.signals = Signals()

    # --- paths --------------------------------------------------------------------

    def resolve(self, path: str, base: str) -> str:
        """`path` made absolute from `base` (`~` expanded), normalised."""
        if path.startswith("~"):
            path = os.path.expanduser(path)
        return os.path.normpath(os.path.join(base, path))

    def relative(self, absolute: str) -> str | None:
        """`absolute` relative to the workspace root (through symlinks too); None outside."""
        found = _under(absolute, self.root)
        if found is None:
            # Only on a miss: the same folder reached through a symlink (macOS `/tmp` is
            # `/private/tmp`; a workspace given through a link).
            if self.real_root is None:
                self.real_root = os.path.realpath(self.root)
            real = os.path.realpath(absolute)
            if real != absolute or self.real_root != self.root:
                found = _under(real, self.real_root)
        return found

    def path(self, raw: str, base: str) -> None:
        """Record the path `raw` names from `base` (a location after it, a glob), and its
        terms."""
        text = raw.strip()
        if not text or "\x00" in text or "://" in text or text.startswith("-"):
            return
        text, detail = split_location(text)
        if detail:
            self.words(detail)  # `::test_checkout_total` names what the work is about
        if any(ch in text for ch in _GLOB_CHARS):
            self.glob(text, base)
            return
        relative, other = self.readings(text, base)
        if relative is None:
            return
        # Terms come from the root-relative path: the folders above the checkout say
        # nothing about the work.
        self.words(relative)
        if len(self.signals.paths) < MAX_PATHS:
            self.signals.paths[relative] = None
            if other is not None:
                self.signals.folders[other] = None

    def readings(self, text: str, base: str) -> tuple[str | None, str | None]:
        """The root-relative path `text` names from `base`, and the other reading, kept
        for folder matches only (None when there is none).

        The working directory's reading wins when it names something in the workspace;
        else the root's when that does; when neither exists (a file about to be
        written), the working directory's, with the root's kept for folders. Only a
        relative path read outside the root has two readings, so only then is anything
        looked up (one or two `lstat`s).
        """
        absolute = self.resolve(text, base)
        relative = self.relative(absolute)
        if base == self.root or text[0] == "~" or os.path.isabs(text):
            return relative, None
        from_root = self.resolve(text, self.root)
        rooted = self.relative(from_root)
        if rooted is None or rooted == relative:
            return relative, None
        if relative is not None and os.path.lexists(absolute):
            return relative, rooted if os.path.lexists(from_root) else None
        if os.path.lexists(from_root):
            return rooted, None
        return (relative, rooted) if relative is not None else (rooted, None)

    def glob(self, pattern: str, base: str) -> None:
        """A glob's literal leading folders are a folder signal; its words are terms."""
        self.pattern(pattern)
        parts = pattern.replace("\\", "/").split("/")
        literal: list[str] = []
        for part in parts[:-1]:
            if any(ch in part for ch in _GLOB_CHARS):
                break
            literal.append(part)
        if literal and len(self.signals.paths) < MAX_PATHS:
            folder = "/".join(literal) or "/"
            relative, other = self.readings(folder, base)
            if relative is not None:
                self.signals.paths[relative] = None
            if other is not None:
                self.signals.folders[other] = None

    def patch(self, text: str, base: str) -> None:
        """Every file an `apply_patch` envelope adds, updates, deletes or moves to."""
        for line in text.splitlines():
            if line.startswith(_PATCH_HEADERS):
                self.path(line.partition(":")[2].strip(), base)

    # --- identifiers and terms ----------------------------------------------------

    def pattern(self, text: str) -> None:
        """Identifiers in a regular expression, glob or query; their terms too."""
        for identifier in identifiers_in(text[:MAX_TEXT]):
            if len(self.signals.identifiers) < MAX_IDENTIFIERS:
                self.signals.identifiers[identifier] = None
            self.add_terms(split_terms(identifier))

    def words(self, text: str) -> None:
        """Record the terms of a word, name or path."""
        self.add_terms(split_terms(text[:4096]))

    def add_terms(self, terms: Iterable[str]) -> None:
        """Record terms (at most `MAX_TERMS`)."""
        found = self.signals.terms
        for term in terms:
            if len(found) >= MAX_TERMS:
                return
            found.add(term)


def _under(absolute: str, root: str) -> str | None:
    """`absolute` relative to `root` with `/` separators; None outside it or at it."""
    if absolute == root:
        return None
    prefix = root if root.endswith(os.sep) else root + os.sep
    if not absolute.startswith(prefix):
        return None
    relative = absolute[len(prefix) :]
    return relative.replace(os.sep, "/") if os.sep != "/" else relative


def split_location(text: str) -> tuple[str, str]:
    """A path with a location after it, read as the file: `(path, what follows)`.

    `tests/x.py::TestCart::test_total` (a pytest node ID), `src/a.py:12` and
    `src/a.py:12:5` (compiler and grep positions) name `tests/x.py` and `src/a.py`. A
    `::` counts only after something that looks like a file (a `/` or a dot in its last
    name), so `crate::module` stays a word.
    """
    head, separator, tail = text.partition("::")
    if separator and head and ("/" in head or "." in head.rpartition("/")[2]):
        return head, tail
    for _ in range(2):
        stem, colon, number = text.rpartition(":")
        if not colon or not stem or not number.isdigit():
            break
        text = stem
    return text, ""
