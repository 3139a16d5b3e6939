"""Maintenance manifests cut into complete batches bounded by serialized size (SPEC §6):
every supplied (id, revision) in exactly one batch, none cut, an oversize lesson alone."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from orchestrator_support import FakeSessions, config, repo_lessons, run_record, seed, supplied

from active_memory.lessons import Lesson
from active_memory.orchestrator import PostmortemLimits, cut_by_serialized_size, run_postmortem
from active_memory.specialists.tasks import cut_batches, lesson_bytes, serialized_size
from active_memory.store.sqlite import SqliteStore


def varied(count: int, seed_value: int = 7) -> list[Lesson]:
    """`count` lessons whose recommendations vary from a few bytes to the 640-byte limit."""
    rng = random.Random(seed_value)
    lessons = []
    for lesson in repo_lessons(count):
        filler = "y" * rng.randint(0, 560)
        text = f"Run `make api-client` after `api/schema.json` edits. {filler}"
        lessons.append(lesson.model_copy(update={"recommendation": text}))
    return lessons


def check_partition(lessons: list[Lesson], batches: list[list[Lesson]], batch_bytes: int) -> None:
    bound = lesson_bytes(batch_bytes)
    keys = [(x.id, x.revision) for batch in batches for x in batch]
    assert keys == [(x.id, x.revision) for x in lessons]  # each exactly once, in order
    for batch in batches:
        assert batch, "no empty batch"
        size = sum(serialized_size(x) for x in batch)
        assert size <= bound or len(batch) == 1


def test_an_empty_manifest_has_no_batch() -> None:
    assert cut_by_serialized_size([], 1_000) == []


def test_one_lesson_is_one_batch() -> None:
    (lesson,) = repo_lessons(1)
    assert cut_by_serialized_size([lesson], 10_000) == [[lesson]]


def test_five_thousand_varied_lessons_each_in_exactly_one_batch() -> None:
    lessons = varied(5_000)
    batch_bytes = 16_000
    batches = cut_by_serialized_size(lessons, batch_bytes)
    check_partition(lessons, batches, batch_bytes)
    assert len(batches) > 100
    # Batches are full: adding the next lesson would have crossed the lessons' share.
    for batch, following in itertools.pairwise(batches):
        used = sum(serialized_size(x) for x in batch)
        assert used + serialized_size(following[0]) > lesson_bytes(batch_bytes)


def test_an_oversize_lesson_is_a_batch_of_its_own_never_cut_or_dropped() -> None:
    small = repo_lessons(4)
    big = small[2].model_copy(update={"recommendation": "Run `make all`. " + "z" * 600})
    lessons = [small[0], small[1], big, small[3]]
    batch_bytes = 2 * serialized_size(big) - 2  # the lessons' half is one byte short of it
    batches = cut_by_serialized_size(lessons, batch_bytes)
    check_partition(lessons, batches, batch_bytes)
    assert [big] in batches
    assert batches[batches.index([big])][0].recommendation == big.recommendation


def test_a_bound_below_one_byte_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 byte"):
        cut_by_serialized_size(repo_lessons(1), 0)


@given(
    sizes=st.lists(st.integers(min_value=1, max_value=5_000), max_size=200),
    bound=st.integers(min_value=1, max_value=4_000),
)
def test_any_sizes_are_partitioned_in_order_within_the_bound(sizes: list[int], bound: int) -> None:
    items = list(enumerate(sizes))
    batches = cut_batches(items, bound, lambda item: item[1])
    assert [item for batch in batches for item in batch] == items
    for batch in batches:
        assert batch and (sum(size for _, size in batch) <= bound or len(batch) == 1)


@pytest.mark.asyncio
async def test_the_postmortem_asks_every_supplied_lesson_exactly_once(
    tmp_path: Path, store: SqliteStore
) -> None:
    lessons = varied(600)
    await seed(store, lessons)
    delivered = [x.id for x in lessons[::2]]
    record = run_record(tmp_path, delivered)
    sessions = FakeSessions()
    report = await run_postmortem(
        record,
        config(),
        store,
        sessions=sessions,
        limits=PostmortemLimits(batch_bytes=4_000, batch_concurrency=3),
        journal_dir=tmp_path,
    )
    entry = report.specialists["repository_maintenance"]
    asked = [(x["id"], x["revision"]) for r in sessions.requests for x in supplied(r)]
    assert sorted(asked) == sorted((i, 1) for i in delivered)
    assert entry.status == "reconciled" and entry.batches == len(sessions.requests) > 1
    assert entry.kept == len(delivered)


def test_the_postmortem_and_init_cut_by_the_function_named_after_the_rule() -> None:
    # SPEC §6's batches have one definition: the orchestrator and init import it and
    # nothing else cuts a manifest (a second cutter would be a second rule).
    import inspect

    from active_memory.init import maintenance as init_maintenance
    from active_memory.orchestrator import runners

    for module in (runners, init_maintenance):
        source = inspect.getsource(module)
        assert "cut_by_serialized_size(" in source, module.__name__
        assert "cut_batches(" not in source
