"""Effectiveness over time in the web view (both backends): the lesson page's chart per
run, the overview on the costs page, the JSON series, escaping, and the weekly buckets."""

from __future__ import annotations

import html
import re

import anyio
import pytest
from conftest import Backend
from ui_support import login, publish, seed_mutations, web_client

from active_memory.store import open_store
from active_memory.store.effectiveness import (
    EffectivenessHistory,
    EffectivenessPoint,
    RunObservation,
)
from active_memory.ui.charts import effectiveness_charts
from active_memory.ui.effectiveness_view import effectiveness_series

MARKED_RUN = '<img src=x onerror="alert(1)">'


def observe(location: str, run_id: str, *observed: tuple[str, bool, bool]) -> None:
    async def main() -> None:
        async with open_store(location) as store:
            seen = [
                RunObservation(lesson_id=i, run_id=run_id, delivered=d, recurred=r)
                for i, d, r in observed
            ]
            await store.publish([], seen)

    anyio.run(main)


@pytest.fixture
def location(backend: Backend) -> str:
    publish(backend.location, seed_mutations())
    observe(backend.location, "run-1", ("L-1", True, False), ("L-2", False, True))
    observe(backend.location, "run-2", ("L-1", True, True))
    observe(backend.location, MARKED_RUN, ("L-1", False, True))
    return backend.location


def test_the_lesson_page_charts_each_run_and_says_since_when(location: str) -> None:
    with web_client(location) as client:
        login(client)
        page = client.get("/lessons/L-1").text
        chart = page[page.index('id="effectiveness-chart"') :]
        chart = chart[: chart.index('id="effectiveness-since"')]
        assert chart.count('<figure class="chart">') == 2 and "per run" in chart
        # Stacked bars per run, each bar's tooltip naming its part, run and count.
        bars = re.findall(r"<title>([^<]*)</title></rect>", chart)
        assert "delivered, did not recur, run-1: 1 runs" in bars
        assert "delivered, recurred, run-2: 1 runs" in bars
        assert "not delivered, recurred, run-2: 0 runs" in bars
        # The rates beside the counts, over the latest runs of each kind up to each run
        # (no run of a kind yet: no point).
        points = re.findall(r"<title>([^<]*)</title></circle>", chart)
        assert "recurrence when delivered, run-1: 0%" in points
        assert "recurrence when delivered, run-2: 50%" in points
        assert not any(p.startswith("recurrence when not delivered, run-1") for p in points)
        marked = html.escape(MARKED_RUN)
        assert f"recurrence when not delivered, {marked}: 100%" in points
        # A y axis with values.
        assert re.search(
            r'<text class="tick" x="-6" y="[\d.]+" text-anchor="end">1 runs</text>', chart
        )
        # A run ID holding markup is text: no element of it reaches the page.
        assert "<img" not in page and html.escape(MARKED_RUN)[-10:] in page
        assert "not delivered, recurred, " + html.escape(MARKED_RUN) + ": 1 runs" in chart
        since = page[page.index('id="effectiveness-since"') :]
        assert "store schema 7" in since and "not charted" in since
        # A lesson never observed says so, without an empty chart.
        other = client.get("/lessons/L-3").text
        assert "No dated observation of this lesson yet." in other
        assert "<svg" not in other[other.index("Effectiveness over time") :].split("<h2>")[1]


def test_the_json_has_the_points_and_the_buckets(location: str) -> None:
    with web_client(location) as client:
        login(client)
        found = client.get("/api/lessons/L-1").json()["effectiveness_history"]
        assert [p["run_id"] for p in found["points"]] == ["run-1", "run-2", MARKED_RUN]
        series = found["series"]
        assert series["bucket"] == "run" and series["labels"] == ["run-1", "run-2", MARKED_RUN]
        assert series["delivered"] == [1, 1, 0]
        assert series["recurred_when_delivered"] == [0, 1, 0]
        assert series["touched_not_delivered"] == [0, 0, 1]
        assert series["recurred_when_not_delivered"] == [0, 0, 1]
        assert found["since"] is not None
        overview = client.get("/api/costs").json()["effectiveness"]["series"]
        assert overview["bucket"] == "day" and len(overview["labels"]) == 1
        assert (overview["delivered"], overview["recurred_when_not_delivered"]) == ([2], [2])


def test_the_costs_page_shows_the_overview_chart(location: str) -> None:
    with web_client(location) as client:
        login(client)
        page = client.get("/costs").text
        chart = page[page.index('id="chart-effectiveness"') :]
        assert "every lesson: runs, per day (UTC)" in chart[: chart.index("</figure>")]


def _point(at: str, run: str, delivered: int, recurred: int) -> EffectivenessPoint:
    return EffectivenessPoint(
        at=at, run_id=run, delivered=delivered, recurred_when_delivered=delivered * recurred,
        touched_not_delivered=1 - delivered, recurred_when_not_delivered=(1 - delivered) * recurred,
    )  # fmt: skip


def test_many_observations_are_summed_per_day_then_per_iso_week() -> None:
    # 70 runs over three ISO weeks (2026-W48 starts Monday 23 November).
    days = sorted(["2026-11-23", "2026-11-24", "2026-11-29"] * 10 + ["2026-11-30"] * 25
                  + ["2026-12-07"] * 15)  # fmt: skip
    points = [_point(f"{day}T10:00:00+00:00", f"r{i}", i % 2, i % 3 == 0)
              for i, day in enumerate(days)]  # fmt: skip
    history = EffectivenessHistory(since="2026-11-01T00:00:00+00:00", points=points)
    series = effectiveness_series(history, per_run=True)
    assert series["bucket"] == "day"  # over 60 runs, within 90 days
    assert series["labels"] == ["2026-11-23", "2026-11-24", "2026-11-29", "2026-11-30",
                                "2026-12-07"]  # fmt: skip
    assert [a + b for a, b in zip(series["delivered"], series["touched_not_delivered"],
                                  strict=True)] == [10, 10, 10, 25, 15]  # fmt: skip
    assert sum(series["delivered"]) == 35
    # Rates beside the counts: recurred / delivered per bucket.
    for n in range(5):
        delivered, recurred = series["delivered"][n], series["recurred_when_delivered"][n]
        assert series["rate_when_delivered"][n] == recurred / delivered
        assert series["clean_when_delivered"][n] == delivered - recurred
    spread = [p.model_copy(update={"at": f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}T10:00:00+00:00"})
              for i, p in enumerate(points * 2)][:140]  # fmt: skip
    weekly = effectiveness_series(EffectivenessHistory(since=None, points=spread), per_run=True)
    assert weekly["bucket"] == "week" and weekly["labels"][:2] == ["2026-W01", "2026-W02"]
    few = effectiveness_series(EffectivenessHistory(since=None, points=points[:3]), per_run=True)
    assert few["bucket"] == "run" and few["labels"] == ["r0", "r1", "r2"]
    assert few["rate_when_not_delivered"] == [1.0, None, 0.0]
    assert few["recent_rate_when_not_delivered"] == [1.0, 1.0, 0.5]
    assert few["recent_rate_when_delivered"] == [None, 0.0, 0.0]


def test_the_chart_escapes_every_label_and_is_empty_without_data() -> None:
    history = EffectivenessHistory(
        since=None, points=[_point("2026-11-23T10:00:00+00:00", "</svg><script>x</script>", 1, 0)]
    )
    series = effectiveness_series(history, per_run=True)
    svg = effectiveness_charts('L-1 "<b>"', series)
    assert "<script>" not in svg and "</svg><script>" not in svg
    assert svg.count("<svg") == svg.count("</svg>")
    assert "&lt;/svg&gt;&lt;script&gt;" in svg and "&lt;b&gt;" in svg
    assert effectiveness_charts("x", {**series, "labels": []}) == ""
