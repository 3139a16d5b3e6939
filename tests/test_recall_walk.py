"""The bounded walk (issue 28 item 1): over any store, budget and mix of card sizes it
admits exactly what the exhaustive walk admits, and its work follows what it delivers
(cards admitted, cards already delivered), never the number of cards that match."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from active_memory.recall.build_from_rows import build
from active_memory.recall.frame import FRAME_BYTES, select
from active_memory.recall.index import SnapshotIndex
from active_memory.recall.match import iter_matches, match
from active_memory.recall.postings import INLINE_MAX, PAGE
from active_memory.recall.signals import Signals

FOLDERS = ["src", "src/core", "src/core/deep", "docs", "tests"]
FILES = ["src/core/a.py", "src/core/b.py", "src/core/deep/c.py", "docs/x.md"]
IDENTIFIERS = ["Cart", "Checkout", "Refund"]
TERMS = ["core", "cart", "tax", "checkout"]


def row(n: int, recommendation: str, assoc: dict[str, Any]) -> tuple[Any, ...]:
    return (f"L-{n}", 1, "active", f"Lesson {n}", recommendation, json.dumps(assoc))


lesson = st.fixed_dictionaries(
    {
        "size": st.integers(0, 600),
        "files": st.lists(st.sampled_from(FILES), max_size=2, unique=True),
        "folders": st.lists(st.sampled_from(FOLDERS), max_size=2, unique=True),
        "identifiers": st.lists(st.sampled_from(IDENTIFIERS), max_size=1),
        "keywords": st.lists(
            st.lists(st.sampled_from(TERMS), min_size=2, max_size=3, unique=True), max_size=1
        ),
    }
)
call = st.fixed_dictionaries(
    {
        "paths": st.lists(
            st.sampled_from([*FILES, "src/core/new.py", "README.md"]),
            min_size=1,
            max_size=2,
            unique=True,
        ),
        "identifiers": st.lists(st.sampled_from(IDENTIFIERS), max_size=2, unique=True),
        "terms": st.lists(st.sampled_from(TERMS), max_size=3, unique=True),
    }
)


def store_rows(lessons: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        row(n + 1, "r" * lesson["size"],
            {kind: lesson[kind] for kind in ("files", "folders", "identifiers", "keywords")})
        for n, lesson in enumerate(lessons)
    ]  # fmt: skip


def signals_of(given_call: dict[str, Any]) -> Signals:
    found = Signals()
    found.paths.update(dict.fromkeys(given_call["paths"]))
    found.identifiers.update(dict.fromkeys(given_call["identifiers"]))
    found.terms.update(given_call["terms"])
    return found


def both_walks(
    index: SnapshotIndex, query: Signals, delivered: set[tuple[str, int]], remaining: int
) -> tuple[Any, Any, Any]:
    exhaustive = select(match(index, query), delivered, remaining)
    walk = iter_matches(index, query)
    bounded = select(walk, delivered, remaining, floor=index.min_card)
    return exhaustive, bounded, walk


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    lessons=st.lists(lesson, min_size=1, max_size=120),
    calls=st.lists(call, min_size=1, max_size=4),
    budget=st.integers(0, 4096),
    exact=st.tuples(st.integers(0, 6), st.integers(-1, 1)),
    delivered_share=st.integers(0, 4),
)
def test_the_bounded_walk_admits_what_the_exhaustive_walk_admits(
    tmp_path: Path,
    lessons: list[dict[str, Any]],
    calls: list[dict[str, Any]],
    budget: int,
    exact: tuple[int, int],
    delivered_share: int,
) -> None:
    rows = store_rows(lessons)
    path = build(None, rows, {}, matched=True, path=str(tmp_path / "g.gen"))
    index = SnapshotIndex.open(path)
    delivered = {
        (r[0], 1) for n, r in enumerate(rows) if delivered_share and n % 5 < delivered_share
    }
    for given_call in calls:
        query = signals_of(given_call)
        if exact[0]:
            # A budget that fits the first few matches exactly (give or take a byte):
            # where "fits" and "does not fit" meet.
            first = [hit.size for hit in match(index, query)[: exact[0]]]
            budget = FRAME_BYTES + sum(first) + max(0, len(first) - 1) + exact[1]
        exhaustive, bounded, walk = both_walks(index, query, delivered, budget)
        assert [hit.id for hit in bounded[0]] == [hit.id for hit in exhaustive[0]]
        assert bounded[2] == exhaustive[2]
        met = sum(1 for hit, reason in exhaustive[1] if reason == "delivered_before")
        admitted = len(bounded[0])
        assert walk.visits <= (2 * walk.lists + 1) * (admitted + met) + walk.lists


def test_a_hot_folder_costs_the_cards_delivered_not_its_size(tmp_path: Path) -> None:
    # 5,000 cards under one folder, all just too large for what is left once three small
    # ones are admitted, the store's smallest card elsewhere: the case that made the old
    # walk visit the whole tier on every call.
    rows = [row(n, "r" * 300, {"folders": ["src/core"]}) for n in range(1, 5001)]
    rows[10] = row(11, "small", {"folders": ["src/core"]})
    rows[20] = row(21, "small", {"folders": ["src/core"]})
    rows.append(row(9000, "", {"folders": ["elsewhere"]}))
    path = build(None, rows, {}, matched=True, path=str(tmp_path / "g.gen"))
    index = SnapshotIndex.open(path)
    query = signals_of({"paths": ["src/core/x.py"], "identifiers": [], "terms": []})
    assert index.postings("d\0src/core")[0] == 5000  # paged: over INLINE_MAX entries
    assert max(INLINE_MAX, PAGE) < 5000
    for budget in (FRAME_BYTES + 60, 700, 1100, 2048):
        exhaustive, bounded, walk = both_walks(index, query, set(), budget)
        assert [hit.id for hit in bounded[0]] == [hit.id for hit in exhaustive[0]]
        assert walk.visits <= 2 * len(bounded[0]) + 2
    delivered = {(f"L-{n}", 1) for n in range(1, 40)}
    exhaustive, bounded, walk = both_walks(index, query, delivered, 2048)
    assert [hit.id for hit in bounded[0]] == [hit.id for hit in exhaustive[0]]
    assert walk.visits <= 3 * (len(bounded[0]) + 39) + 1


def test_only_the_pages_holding_a_card_that_fits_are_read(tmp_path: Path) -> None:
    rows = [row(n, "r" * 500, {"folders": ["src/core"]}) for n in range(1, 20_001)]
    rows[15_000] = row(15_001, "tiny", {"folders": ["src/core"]})
    path = build(None, rows, {}, matched=True, path=str(tmp_path / "g.gen"))
    index = SnapshotIndex.open(path)
    query = signals_of({"paths": ["src/core/x.py"], "identifiers": [], "terms": []})
    walk = iter_matches(index, query)
    admitted, _, _ = select(walk, set(), FRAME_BYTES + 100, floor=index.min_card)
    assert [hit.id for hit in admitted] == ["L-15001"]
    pages = {key for key in index._cache._items if key[1] == "page"}
    assert len(pages) == 1  # of 20 pages, the one holding the card that fits


def test_incremental_generations_keep_long_paged_lists_exact(tmp_path: Path) -> None:
    # Lists longer than a page, edited over several generations (removals, revisions
    # that change a card's size, new cards): each walks like a complete rebuild.
    import random

    rng = random.Random(28)
    state: dict[int, tuple[Any, ...]] = {}

    def lesson_row(n: int, revision: int) -> tuple[Any, ...]:
        assoc = {"folders": [rng.choice(["src/core", "src/core", "docs"])],
                 "keywords": [["core", rng.choice(["py", "tax"])]]}  # fmt: skip
        found = row(n, "r" * rng.randrange(0, 500), assoc)
        return (found[0], revision, *found[2:])

    for n in range(1, 2601):
        state[n] = lesson_row(n, 1)
    previous = SnapshotIndex.open(
        build(None, list(state.values()), {}, matched=True, path=str(tmp_path / "g0.gen"))
    )
    assert previous.postings("d\0src/core")[0] > PAGE  # paged
    next_id = 2601
    query = signals_of({"paths": ["src/core/x.py"], "identifiers": [], "terms": ["core", "py"]})
    for step in range(1, 6):
        changed = []
        for n in rng.sample(sorted(state), 80):
            if rng.random() < 0.4:
                changed.append((f"L-{n}", state[n][1] + 1, "retired", None, None, None))
                del state[n]
            else:
                state[n] = lesson_row(n, state[n][1] + 1)
                changed.append(state[n])
        for _ in range(20):
            state[next_id] = lesson_row(next_id, 1)
            changed.append(state[next_id])
            next_id += 1
        current = SnapshotIndex.open(
            build(previous, changed, {}, matched=True, path=str(tmp_path / f"g{step}.gen"))
        )
        complete = SnapshotIndex.open(
            build(None, list(state.values()), {}, matched=True, path=str(tmp_path / "full.gen"))
        )
        assert current.meta["cards"] == next_id - 1  # built incrementally: holes kept
        assert [(h.id, h.revision, h.match) for h in match(current, query)] == [
            (h.id, h.revision, h.match) for h in match(complete, query)
        ]
        for budget in (300, 700, 2048, 4096):
            ours = select(iter_matches(current, query), set(), budget, floor=current.min_card)
            theirs = select(match(complete, query), set(), budget)
            assert [h.id for h in ours[0]] == [h.id for h in theirs[0]]
        previous = current
