"""Lesson IDs in the order people count them: `L-2` before `L-10` (not `L-10`, `L-2`).

The store orders IDs as text; listings for people sort by `natural_key`: the ID cut
into runs of digits and the rest, each run of digits compared as a number. Standard
library only, so any layer may use it.
"""

from __future__ import annotations

import re

_PARTS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """`text`'s sort key: its runs of digits by value (then by spelling, so `L-02` and
    `L-2` stay distinct), the rest as text."""
    key: list[tuple[int, int, str]] = []
    for index, part in enumerate(_PARTS.split(text)):
        if index % 2:
            key.append((1, int(part), part))
        elif part:
            key.append((0, 0, part))
    return tuple(key)
