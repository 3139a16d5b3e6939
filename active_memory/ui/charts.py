"""Small bar charts as inline SVG, rendered on the server (no script, no network).

Every label goes through `html.escape`; numbers are formatted here. A chart is a string
the templates insert with `|safe`, so this module is the only place that writes markup
by hand, and it writes only fixed elements around escaped text.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

WIDTH = 640
BAR_GAP = 4
HEIGHT = 160
LABEL_SPACE = 34
COLOURS = ("#1c5d99", "#cf8a00", "#1a7f37", "#8250df")


def bar_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    unit: str = "",
) -> str:
    """Grouped bars: one group per label, one bar per series (name, values)."""
    groups = len(labels)
    if not groups or not series:
        return ""
    top = max((v for _, values in series for v in values), default=0.0) or 1.0
    group_width = (WIDTH - 40) / groups
    bar_width = max(1.0, (group_width - BAR_GAP) / len(series))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{WIDTH}" '
        f'height="{HEIGHT + LABEL_SPACE + 20}" viewBox="0 0 {WIDTH} {HEIGHT + LABEL_SPACE + 20}">',
        f"<title>{html.escape(title)}</title>",
        f'<text x="4" y="12" font-size="11" fill="#444">{html.escape(title)} '
        f"(max {html.escape(_number(top))}{html.escape(unit)})</text>",
        f'<line x1="36" y1="{HEIGHT + 16}" x2="{WIDTH}" y2="{HEIGHT + 16}" stroke="#999"/>',
    ]
    for g, label in enumerate(labels):
        x0 = 40 + g * group_width
        for s, (name, values) in enumerate(series):
            value = values[g] if g < len(values) else 0.0
            height = HEIGHT * value / top
            x = x0 + s * bar_width
            y = HEIGHT + 16 - height
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(bar_width - 1, 1):.1f}" '
                f'height="{height:.1f}" fill="{COLOURS[s % len(COLOURS)]}">'
                f"<title>{html.escape(name)} {html.escape(label)}: "
                f"{html.escape(_number(value))}{html.escape(unit)}</title></rect>"
            )
        if groups <= 16 or g % max(1, groups // 16) == 0:
            parts.append(
                f'<text x="{x0:.1f}" y="{HEIGHT + 30}" font-size="9" fill="#444">'
                f"{html.escape(label[-10:])}</text>"
            )
    for s, (name, _) in enumerate(series):
        parts.append(
            f'<rect x="{40 + s * 120}" y="{HEIGHT + LABEL_SPACE + 6}" width="10" height="10" '
            f'fill="{COLOURS[s % len(COLOURS)]}"/><text x="{54 + s * 120}" '
            f'y="{HEIGHT + LABEL_SPACE + 15}" font-size="10">{html.escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:.2f}"


EFFECTIVENESS_SERIES = (
    ("delivered", "delivered"),
    ("recurred_when_delivered", "recurred, delivered"),
    ("touched_not_delivered", "not delivered"),
    ("recurred_when_not_delivered", "recurred, not del."),
)
"""The four counts of an effectiveness series (ui/views.py) and their legend names."""


def effectiveness_chart(title: str, series: dict[str, Any]) -> str:
    """Runs that delivered the lesson(s), or touched without delivering, and in how
    many of each the costly evidence recurred, per run, day or week ('' when empty)."""
    labels = [str(label) for label in series["labels"]]
    per = {"run": "per run", "day": "per day (UTC)", "week": "per ISO week"}[series["bucket"]]
    return bar_chart(
        f"{title}, {per}",
        labels,
        [(name, [float(v) for v in series[key]]) for key, name in EFFECTIVENESS_SERIES],
        unit=" runs",
    )
