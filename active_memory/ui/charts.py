"""Charts as inline SVG, rendered on the server (no script, no network).

Each chart is a `<figure>`: an HTML caption and legend (they wrap on a narrow screen)
around an SVG as wide as its panel. Horizontal positions are percentages of the
SVG's width and vertical ones pixels, so the chart fills any panel from a 360 px phone
to a wide screen without stretching its text. A y axis with round values and grid
lines; bars or lines; every bar and point has a tooltip (`<title>`) with its exact
value. X labels are rotated and thinned: each label has a tier (`t1` about 10 per
chart, `t2` about 25, `t3` about 50, the rest none) and the page's CSS shows more
tiers on wider screens (base.html), so labels never overlap into a smear.

Every label goes through `html.escape`; numbers are formatted here. This module is the
only place that writes markup by hand, and it writes only fixed elements around
escaped text.
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HEIGHT = 190
"""Pixels of the plot area."""
LABEL_SPACE = 64
"""Pixels under the plot for the rotated x labels."""
TOP = 8
LABEL_CHARS = 16
"""An x label longer than this is cut (its whole text stays in the tooltip)."""
TIERS = ((8, "t1"), (20, "t2"), (40, "t3"))
"""(labels at most, class): `t1` on every screen, `t2` from 760 px, `t3` from 1200 px
(base.html): at least about 28 px between two labels' ends, rotated 45 degrees."""


@dataclass(frozen=True)
class Series:
    """One named row of values (None: no value, a gap in a line)."""

    name: str
    values: Sequence[float | None]


def number(value: float) -> str:
    """A value as a label: thousands separated, two decimals below 10 when fractional."""
    if value == int(value) or abs(value) >= 10:
        return f"{value:,.0f}"
    return f"{value:.2f}"


def _pct(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") + "%"


def nice_ticks(top: float, count: int = 4, *, whole: bool = True) -> list[float]:
    """Round tick values from 0 to at least `top` (about `count` steps); `whole`: the
    values are counts, so a step is never a fraction."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    if whole:
        step = max(1.0, float(math.ceil(step)))
    ticks = [0.0]
    while ticks[-1] < top:
        ticks.append(ticks[-1] + step)
    return ticks


def _steps(count: int) -> list[tuple[int, str]]:
    """(step, class) per tier, widest first: each tier's step a multiple of the next
    one's, so the labels of every tier are evenly spaced and include the coarser ones."""
    steps: list[tuple[int, str]] = []
    finer = 1
    for most, name in reversed(TIERS):
        step = max(1, math.ceil(count / most))
        step = finer * math.ceil(step / finer)
        steps.append((step, name))
        finer = step
    return steps[::-1]


def _tier(index: int, steps: list[tuple[int, str]]) -> str | None:
    for step, name in steps:
        if index % step == 0:
            return name
    return None


def _frame(title: str, body: list[str], legend: Sequence[tuple[str, str]], note: str) -> str:
    """The figure: caption, the SVG of `body`, the legend ((swatch class, name) each)."""
    height = TOP + HEIGHT + LABEL_SPACE
    caption = html.escape(title)
    if note:
        caption += f' <span class="muted">({html.escape(note)})</span>'
    keys = "".join(
        f'<span class="key"><span class="swatch {swatch}"></span>{html.escape(name)}</span>'
        for swatch, name in legend
    )
    return (
        f'<figure class="chart"><figcaption>{caption}</figcaption>'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" height="{height}" role="img" '
        f'aria-label="{html.escape(title)}"><title>{html.escape(title)}</title>'
        + "".join(body)
        + f'</svg><div class="legend">{keys}</div></figure>'
    )


def _grid(ticks: list[float], top: float) -> list[str]:
    """The grid lines of the y axis (drawn first: under the bars)."""
    return [
        f'<line class="grid" x1="0" x2="100%" y1="{y:.1f}" y2="{y:.1f}"/>'
        for y in (TOP + HEIGHT - HEIGHT * tick / top for tick in ticks)
    ]


def _ticks(ticks: list[float], top: float, fmt: str) -> list[str]:
    """The y axis's values, in the gutter left of the plot (base.html gives the SVG a
    left margin for them), right-aligned at their grid lines."""
    parts = []
    for tick in ticks:
        y = TOP + HEIGHT - HEIGHT * tick / top
        text = f"{tick:.0f}%" if fmt == "%" else number(tick) + fmt
        at = f'x="-6" y="{y + 4:.1f}" text-anchor="end"'
        parts.append(f'<text class="tick" {at}>{html.escape(text)}</text>')
    return parts


def _labels(labels: Sequence[str]) -> list[str]:
    """The x labels under each group's centre: rotated, cut, thinned by tier."""
    count = len(labels)
    width = 100 / count
    steps = _steps(count)
    parts = []
    for index, label in enumerate(labels):
        tier = _tier(index, steps)
        if tier is None:
            continue
        shown = label if len(label) <= LABEL_CHARS else "…" + label[-(LABEL_CHARS - 1) :]
        x = _pct((index + 0.5) * width)
        parts.append(
            f'<svg class="{tier}" x="{x}" y="{TOP + HEIGHT + 6}" overflow="visible">'
            f'<text class="xl" transform="rotate(-45)" text-anchor="end" dy="0.7em">'
            f"<title>{html.escape(label)}</title>{html.escape(shown)}</text></svg>"
        )
    return parts


def bar_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    unit: str = "",
    stacked: bool = False,
    note: str = "",
) -> str:
    """Bars per label: side by side, or `stacked`; '' when there is nothing to show."""
    count = len(labels)
    if not count or not series:
        return ""
    values = [[float(v or 0) for v in s.values] + [0.0] * count for s in series]
    if stacked:
        top = max(sum(row[g] for row in values) for g in range(count))
    else:
        top = max(max(row[:count]) for row in values)
    ticks = nice_ticks(top)
    scale = ticks[-1]
    body = _grid(ticks, scale)
    group = 100 / count
    gap = group * (0.12 if count < 60 else 0.04)
    lanes = 1 if stacked else len(series)
    lane = (group - 2 * gap) / lanes
    for g, label in enumerate(labels):
        base = float(TOP + HEIGHT)
        total = 0.0
        for s, row in enumerate(values):
            value = row[g]
            height = HEIGHT * value / scale
            x = g * group + gap + (0 if stacked else s * lane)
            y = base - height if stacked else TOP + HEIGHT - height
            if stacked:
                base = y
            total += value
            tip = f"{series[s].name}, {label}: {number(value)}{unit}"
            body.append(
                f'<rect class="s{s}" x="{_pct(x)}" y="{y:.1f}" width="{_pct(max(lane, 0.05))}" '
                f'height="{height:.1f}"><title>{html.escape(tip)}</title></rect>'
            )
        if count <= 16:  # few bars: their value written above them
            peak = total if stacked else max(r[g] for r in values)
            y = TOP + HEIGHT - HEIGHT * peak / scale - 3
            body.append(
                f'<text class="value" x="{_pct((g + 0.5) * group)}" y="{y:.1f}" '
                f'text-anchor="middle">{html.escape(number(peak))}</text>'
            )
    body += _ticks(ticks, scale, unit) + _labels(labels)
    return _frame(title, body, [(f"s{i}", s.name) for i, s in enumerate(series)], note)


def line_chart(
    title: str, labels: Sequence[str], series: Sequence[Series], *, note: str = ""
) -> str:
    """Rates (0..1) as lines over the labels, on a 0-100 % axis; a None value is a gap
    (no run to take a rate of). '' when no value is known."""
    count = len(labels)
    if not count or not any(v is not None for s in series for v in s.values):
        return ""
    percents = [0.0, 25.0, 50.0, 75.0, 100.0]
    body = _grid(percents, 100)
    group = 100 / count
    for s, row in enumerate(series):
        points = [
            (_pct((g + 0.5) * group), TOP + HEIGHT - HEIGHT * float(v), float(v), g)
            for g, v in enumerate(row.values[:count])
            if v is not None
        ]
        for (x1, y1, _, g1), (x2, y2, _, g2) in itertools.pairwise(points):
            if g2 == g1 + 1:  # a gap (no runs that bucket) is not bridged
                body.append(f'<line class="l{s}" x1="{x1}" y1="{y1:.1f}" x2="{x2}" y2="{y2:.1f}"/>')
        radius = 3 if count <= 100 else 1.5
        for x, y, value, g in points:
            tip = f"{row.name}, {labels[g]}: {value:.0%}"
            body.append(
                f'<circle class="p{s}" cx="{x}" cy="{y:.1f}" r="{radius}">'
                f"<title>{html.escape(tip)}</title></circle>"
            )
    body += _ticks(percents, 100, "%") + _labels(labels)
    return _frame(title, body, [(f"p{s}", row.name) for s, row in enumerate(series)], note)


EFFECTIVENESS_COUNTS = (
    ("recurred_when_delivered", "delivered, recurred"),
    ("clean_when_delivered", "delivered, did not recur"),
    ("recurred_when_not_delivered", "not delivered, recurred"),
    ("clean_when_not_delivered", "not delivered, did not recur"),
)
"""The stacked parts of the runs chart (effectiveness_view's series) and their names."""


def effectiveness_charts(title: str, series: Mapping[str, Any]) -> str:
    """Two charts over the same buckets: the runs that delivered the lesson(s) or touched
    their scope without, split by whether the costly evidence recurred (counts); and the
    recurrence rate with and without delivery (rates). '' when there is no bucket."""
    labels = [str(label) for label in series["labels"]]
    if not labels:
        return ""
    per = {"run": "per run", "day": "per day (UTC)", "week": "per ISO week",
           "month": "per month"}[str(series["bucket"])]  # fmt: skip
    counts = [Series(name, series[key]) for key, name in EFFECTIVENESS_COUNTS]
    rates = [
        Series("recurrence when delivered", series["recent_rate_when_delivered"]),
        Series("recurrence when not delivered", series["recent_rate_when_not_delivered"]),
    ]
    runs = bar_chart(f"{title}: runs, {per}", labels, counts, unit=" runs", stacked=True)
    note = (f"share of runs in which the costly evidence came back, over the latest "
            f"{series['rate_runs']} runs of each kind up to each point")  # fmt: skip
    return runs + line_chart(f"{title}: recurrence rate", labels, rates, note=note)
