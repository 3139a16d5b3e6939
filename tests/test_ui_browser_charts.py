"""The charts in Chromium at 5, 50 and 500 data points (issue 30): each chart fills its
panel, has a y axis with values, and its visible x labels never overlap, on a wide
screen and on a 360 px phone; the page never overflows the phone's width.

Screenshots of the costs and lesson pages are saved in the test's folder; with
`ACTIVE_MEMORY_SCREENSHOTS_DIR` set, the ones at 5 and 500 points are also written there
(docs/screenshots/ holds them: docs/ui.md shows them).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest
from browser_support import chromium_page, ui_process
from charts_support import journal_env, seed_charts

WIDE, PHONE = 1280, 360


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    return {**env, **journal_env(tmp_path)}


def _check_charts(page: Any, width: int) -> int:
    """Every chart on the page: as wide as its panel, values on its y axis, visible x
    labels apart. The number of charts."""
    figures = page.locator("figure.chart")
    for n in range(figures.count()):
        figure = figures.nth(n)
        outer = figure.bounding_box()
        svg = figure.locator(":scope > svg").bounding_box()
        assert outer and svg
        # As wide as its panel but for the padding and the y axis's values on the left.
        assert svg["width"] >= outer["width"] - 90, (width, n, svg, outer)
        assert svg["x"] + svg["width"] >= outer["x"] + outer["width"] - 15
        assert outer["x"] + outer["width"] <= width + 1
        assert figure.locator("text.tick").count() >= 2  # 0 and a round top at least
        labels = [box for box in (label.bounding_box() for label in
                  figure.locator("text.xl").all()) if box and box["width"] > 0]  # fmt: skip
        assert labels, f"chart {n} shows no x label at {width} px"
        labels.sort(key=lambda box: box["x"])
        for left, right in itertools.pairwise(labels):
            # Labels rotated 45 degrees, anchored at their ends: 16 px between two ends
            # leaves 11 px (the font size) between the two lines of text.
            assert right["x"] + right["width"] - (left["x"] + left["width"]) >= 16, (
                width, n, left, right,
            )  # fmt: skip
    return int(figures.count())


@pytest.mark.parametrize("points", [5, 50, 500])
def test_charts_fill_their_panel_with_axes_and_readable_labels_in_chromium(
    tmp_path: Path, points: int
) -> None:
    store = str(tmp_path / "lessons.sqlite3")
    env = _env(tmp_path)
    seed_charts(store, env, points)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    keep = os.environ.get("ACTIVE_MEMORY_SCREENSHOTS_DIR")
    with ui_process(tmp_path, store, env) as link, chromium_page(tmp_path) as page:
        base = link.split("/login")[0]
        page.goto(link)
        for width in (WIDE, PHONE):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(base + "/costs")
            assert _check_charts(page, width) == 4  # tokens, requests, runs, rates
            assert page.locator("main").bounding_box()["width"] <= width
            rates = page.locator("#chart-effectiveness figure").nth(1)
            assert "recurrence rate" in rates.locator("figcaption").inner_text()
            assert rates.locator("circle").count() >= min(points, 5)
            _shoot(page, shots / f"costs-{points}-{width}.png", "#chart-effectiveness")
            page.goto(base + "/lessons/L-1")
            assert _check_charts(page, width) == 2
            _shoot(page, shots / f"lesson-{points}-{width}.png", "#effectiveness-since")
        if keep and points in (5, 500):
            page.set_viewport_size({"width": 1000, "height": 800})
            page.goto(base + "/costs")
            _shoot(page, Path(keep) / f"costs-{points}.png", "#chart-effectiveness")
            page.goto(base + "/lessons/L-1")
            _shoot(page, Path(keep) / f"lesson-{points}.png", "#effectiveness-since",
                   top="#effectiveness-title")  # fmt: skip
    assert len(list(shots.iterdir())) == 4
    print(f"screenshots: {shots}")


def _shoot(page: Any, path: Path, last: str, top: str | None = None) -> None:
    """A screenshot from the top of the page (or of `top`) to the bottom of `last`."""
    bottom = page.locator(last).bounding_box()
    start = page.locator(top).bounding_box()["y"] - 8 if top else 0
    assert bottom is not None
    page.screenshot(path=str(path), full_page=True, clip={
        "x": 0, "y": start, "width": page.viewport_size["width"],
        "height": bottom["y"] + bottom["height"] + 8 - start,
    })  # fmt: skip
