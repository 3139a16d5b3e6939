"""Lesson IDs in the order people count them: `L-2` before `L-10` (not `L-10`, `L-2`).

The store orders IDs as text; listings for people sort by `natural_key`: the ID cut
into runs of digits and the rest, each run of digits compared as a number. Standard
library only, so any layer may use it.
"""

from __future__ import annotations

import re

_PARTS = re.compile(r"(\d+)")
_NUMBERED = re.compile(r"(\D*)(\d+)")

Key = tuple[tuple[int, int, str], ...]


def natural_key(text: str) -> Key:
    """`text`'s sort key: its runs of digits by value (then by spelling, so `L-02` and
    `L-2` stay distinct), the rest as text."""
    simple = _NUMBERED.fullmatch(text)  # `L-12`, the common case, without a split
    if simple is not None:
        prefix, digits = simple.groups()
        number = (0, int(digits), digits)
        return ((1, 0, prefix), number) if prefix else (number,)
    key: list[tuple[int, int, str]] = []
    for index, part in enumerate(_PARTS.split(text)):
        if index % 2:
            key.append((0, int(part), part))  # a number sorts before text, as `1` < `A`
        elif part:
            key.append((1, 0, part))
    return tuple(key)
