"""Template filters: search words marked in text, rates as percentages.

`highlight` escapes the text itself and wraps each case-insensitive occurrence of a
search word in `<mark>`: the only markup it adds, so its result is safe to insert.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

MAX_WORDS = 12
"""Search words marked at most (the rest of a long query is searched, not marked)."""


def highlight(text: object, q: object) -> Markup:
    """`text` escaped, with every word of the search `q` marked (`<mark>`)."""
    shown = "" if text is None else str(text)
    words = sorted({w for w in str(q or "").lower().split() if w}, key=len, reverse=True)
    if not words:
        return escape(shown)
    pattern = re.compile("|".join(re.escape(w) for w in words[:MAX_WORDS]), re.IGNORECASE)
    out: list[str] = []
    last = 0
    for found in pattern.finditer(shown):
        out.append(str(escape(shown[last : found.start()])))
        out.append(f"<mark>{escape(found.group(0))}</mark>")
        last = found.end()
    out.append(str(escape(shown[last:])))
    return Markup("".join(out))


def breakable(text: object) -> Markup:
    """`text` escaped, with a line-break opportunity (`<wbr>`) after each `/` and `:`, so
    a long repository name or path wraps at its parts in a narrow column."""
    shown = str(escape("" if text is None else str(text)))
    return Markup(shown.replace("/", "/<wbr>").replace(":", ":<wbr>"))


def percent(rate: object) -> str:
    """A rate (0..1) as `42%`; 'n/a' when there is none (no runs to take it of)."""
    if not isinstance(rate, int | float):
        return "n/a"
    return f"{rate:.0%}"
