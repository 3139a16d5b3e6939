"""Whole-word identifier search in one file, streaming, bounded, binary-safe."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

BINARY_SNIFF_BYTES = 8 * 1024
"""A NUL byte in the first 8 KiB marks a file as binary (git's own heuristic)."""

MAX_SCAN_BYTES = 64 * 1024 * 1024
"""Files larger than this are not scanned: an identifier match there is not verified."""

_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class IdentifierScan:
    """Which identifiers occur in a file as whole words; `unreadable` says why none could."""

    found: frozenset[str] = field(default_factory=frozenset)
    unreadable: str | None = None


def _pattern(identifier: str) -> re.Pattern[str]:
    # Whole word: no word character right before or after. Unicode `\w`, so `naïve_x`
    # is one word; an identifier with inner punctuation (`a.b`) is matched literally.
    return re.compile(r"(?<!\w)" + re.escape(identifier) + r"(?!\w)")


def scan_identifiers(path: Path, identifiers: Iterable[str]) -> IdentifierScan:
    """Stream `path` once and report which `identifiers` occur in it as whole words.

    Binary files (a NUL byte near the start) and files over `MAX_SCAN_BYTES` are not
    scanned. Undecodable bytes become U+FFFD, which is not a word character, so they
    act as separators instead of failing the scan.
    """
    wanted = {i: _pattern(i) for i in {i.strip() for i in identifiers} if i}
    if not wanted:
        return IdentifierScan()
    try:
        size = path.stat().st_size
        if size > MAX_SCAN_BYTES:
            return IdentifierScan(
                unreadable=f"file is {size} bytes, over the {MAX_SCAN_BYTES}-byte scan limit"
            )
        with path.open("rb") as handle:
            return _scan(handle, wanted)
    except OSError as exc:
        return IdentifierScan(unreadable=f"cannot read the file: {exc.strerror or exc}")


def _scan(handle: BinaryIO, wanted: dict[str, re.Pattern[str]]) -> IdentifierScan:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    longest = max(len(i) for i in wanted)
    found: set[str] = set()
    carry = ""
    first = True
    while True:
        chunk = handle.read(_CHUNK_BYTES)
        if first:
            first = False
            if b"\0" in chunk[:BINARY_SNIFF_BYTES]:
                return IdentifierScan(unreadable="binary file")
            if chunk.startswith(codecs.BOM_UTF8):
                chunk = chunk[len(codecs.BOM_UTF8) :]
        at_end = not chunk
        buffer = carry + decoder.decode(chunk, final=at_end)
        for identifier, pattern in list(wanted.items()):
            for match in pattern.finditer(buffer):
                # A match touching the end of the buffer is undecided until the next
                # chunk shows the character after it; the carry re-examines it.
                if at_end or match.end() < len(buffer):
                    found.add(identifier)
                    del wanted[identifier]
                    break
        if at_end or not wanted:
            return IdentifierScan(found=frozenset(found))
        # Keep the longest identifier plus the one character before it.
        carry = buffer[-(longest + 1) :]
