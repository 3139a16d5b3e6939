"""Recall generations: incremental builds, pins, crashes, collection, scope keys."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from recall_support import AUTHOR as AUTHOR_
from recall_support import (
    GRAPH_HASH,
    NAMESPACE,
    REPO_ROOT,
    claude_payload,
    hook_env,
    make_checkout,
    publish,
    repository_lesson,
)

from active_memory.lessons import Card, CreateLesson, GraphScope
from active_memory.recall import generations
from active_memory.recall.build_from_rows import build
from active_memory.recall.building import refresh
from active_memory.recall.engine import answer_hook
from active_memory.recall.environment import resolve_context
from active_memory.recall.frame import render_card, select
from active_memory.recall.generation import source_of
from active_memory.recall.generations import (
    GRACE_SECONDS,
    collect,
    read_current,
    scope_dir,
)
from active_memory.recall.index import SnapshotIndex
from active_memory.recall.match import iter_matches, match
from active_memory.recall.signals import Signals
from active_memory.recall.snapshot import SnapshotCache, graph_cards
from active_memory.recall.types import ToolCall
from active_memory.store.changes import ScopeChanges, ScopeKey

REPOSITORY = ScopeKey("repository", repository=NAMESPACE)


def row(n: int, revision: int = 1, status: str = "active", **associations: Any) -> tuple[Any, ...]:
    assoc = json.dumps({key: list(value) for key, value in associations.items()})
    if status != "active":
        return (f"L-{n}", revision, status, None, None, None)
    return (f"L-{n}", revision, status, f"Lesson {n} r{revision}", "Do it.", assoc)


def signals(paths: tuple[str, ...] = (), terms: tuple[str, ...] = ()) -> Signals:
    found = Signals()
    found.paths.update(dict.fromkeys(paths))
    found.terms.update(terms)
    return found


def hits(index: SnapshotIndex, query: Signals) -> list[tuple[str, int, str]]:
    return [(hit.id, hit.revision, hit.match) for hit in match(index, query)]


def reopen(
    previous: SnapshotIndex | None, rows: list[Any], tmp_path: Path, name: str
) -> SnapshotIndex:
    """The generation `previous` + `rows`, written to `tmp_path/name` and opened."""
    return SnapshotIndex.open(build(previous, rows, {}, matched=True, path=str(tmp_path / name)))


def test_incremental_generations_match_like_a_complete_rebuild(tmp_path: Path) -> None:
    rng = random.Random(7)
    folders = ["src", "src/api", "src/web", "docs", "tests"]
    state: dict[int, tuple[Any, ...]] = {}
    rows = []
    for n in range(1, 400):
        state[n] = row(n, folders=[rng.choice(folders)], keywords=[["alpha", f"t{n % 7}"]])
        rows.append(state[n])
    previous = reopen(None, rows, tmp_path, "g0")
    next_id = 400
    for step in range(1, 8):
        changed = []
        for n in rng.sample(sorted(state), 30):
            revision = state[n][1] + 1
            if rng.random() < 0.3:
                changed.append(row(n, revision, "retired"))
                del state[n]
            else:
                state[n] = row(n, revision, folders=[rng.choice(folders)],
                               keywords=[["alpha", f"t{rng.randrange(7)}"]])  # fmt: skip
                changed.append(state[n])
        for _ in range(10):
            state[next_id] = row(next_id, folders=[rng.choice(folders)], files=["src/a.py"])
            changed.append(state[next_id])
            next_id += 1
        current = reopen(previous, changed, tmp_path, f"g{step}")
        complete = reopen(None, list(state.values()), tmp_path, "full")
        for query in (
            signals(paths=("src/api/x.py",)),
            signals(paths=("docs/a.md", "src/a.py")),
            signals(terms=("alpha", "t3")),
        ):
            assert hits(current, query) == hits(complete, query)
        assert [card[0] for card in current.cards()] == [card[0] for card in complete.cards()]
        previous = current


def test_an_unchanged_shard_is_copied_not_rebuilt(tmp_path: Path) -> None:
    rows = [row(n, files=[f"f/{n}.py"]) for n in range(1, 3000)]
    first = reopen(None, rows, tmp_path, "g0")
    second = reopen(first, [row(5, 2, files=["f/5.py"])], tmp_path, "g1")
    for section in ("keys", "cards", "assoc"):
        same = [
            first.raw(section, n) == second.raw(section, n) for n in range(first.count(section))
        ]
        assert second.count(section) == first.count(section)
        assert sum(same) >= len(same) - 3, section  # only the shards the change touched
    assert second.card(4)[1] == 2 and first.card(4)[1] == 1


def test_an_id_that_sorts_in_the_middle_rebuilds_in_order(tmp_path: Path) -> None:
    first = reopen(None, [row(1, files=["a"]), row(30, files=["a"])], tmp_path, "g0")
    second = reopen(first, [row(7, files=["a"])], tmp_path, "g1")
    assert [hit[0] for hit in hits(second, signals(paths=("a",)))] == ["L-1", "L-7", "L-30"]
    assert [record[0] for record in source_of(second)] == ["L-1", "L-7", "L-30"]


def test_matching_stops_once_the_budget_cannot_admit_another_card(tmp_path: Path) -> None:
    rows = [row(n, folders=["src"]) for n in range(1, 5001)]
    index = reopen(None, rows, tmp_path, "g0")
    walked = 0

    def counted() -> Any:
        nonlocal walked
        for hit in iter_matches(index, signals(paths=("src/a.py",))):
            walked += 1
            yield hit

    admitted, _skipped, cost = select(counted(), set(), 2048, floor=index.min_card)
    assert len(admitted) == walked and 2048 - cost < index.min_card + 1
    # Of 5,000 matches only those that fit were walked, and only their card shards read.
    cards_read = [key for key in index._cache._items if key[1] == "cards"]
    assert walked <= 2048 // index.min_card and len(cards_read) <= 2


def test_matching_order_is_tier_then_id_across_posting_lists(tmp_path: Path) -> None:
    rows = [
        row(1, folders=["src"]),
        row(2, folders=["src/api"]),
        row(3, files=["src/api/x.py"]),
        row(4, folders=["src", "src/api"]),
        row(5, keywords=[["api", "x"]]),
    ]
    index = reopen(None, rows, tmp_path, "g0")
    found = hits(index, signals(paths=("src/api/x.py",), terms=("api", "x")))
    assert found == [("L-3", 1, "file"), ("L-1", 1, "folder"), ("L-2", 1, "folder"),
                     ("L-4", 1, "folder"), ("L-5", 1, "keywords")]  # fmt: skip


# --- on disk: refresh, crash, collection -----------------------------------------------


class FakeStore:
    """A store's change feed: `rows` by version."""

    def __init__(self) -> None:
        self.log: list[tuple[int, tuple[Any, ...]]] = []
        self.version = 0

    def publish(self, *rows: tuple[Any, ...]) -> None:
        self.version += 1
        self.log += [(self.version, item) for item in rows]

    def read(self, scope: ScopeKey, since: int | None) -> ScopeChanges:
        latest: dict[str, tuple[Any, ...]] = {}
        for version, item in self.log:
            if since is None or version > since:
                latest[item[0]] = item
        rows = [item for item in latest.values() if since is not None or item[2] == "active"]
        return ScopeChanges(self.version, rows, full=since is None)


def test_refresh_reads_changes_and_keeps_the_previous_generation(tmp_path: Path) -> None:
    store = FakeStore()
    store.publish(row(1, files=["a.py"]))
    first = refresh(str(tmp_path), "s", REPOSITORY, store.read)
    assert refresh(str(tmp_path), "s", REPOSITORY, store.read) == first  # no change
    store.publish(row(2, files=["a.py"]))
    second = refresh(str(tmp_path), "s", REPOSITORY, store.read)
    assert second != first and os.path.exists(first)
    assert [c[0] for c in SnapshotIndex.open(second).cards()] == ["L-1", "L-2"]
    assert [c[0] for c in SnapshotIndex.open(first).cards()] == ["L-1"]


def test_a_crash_while_writing_a_generation_leaves_the_previous_in_use(tmp_path: Path) -> None:
    store = FakeStore()
    store.publish(row(1, files=["a.py"]))
    first = refresh(str(tmp_path), "s", REPOSITORY, store.read)
    store.publish(row(2, files=["a.py"]))
    folder = scope_dir(str(tmp_path), "s", REPOSITORY)
    code = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(REPO_ROOT / "tests")!r})
        from active_memory.recall import building, writer
        from test_recall_generations import REPOSITORY, FakeStore, row

        real = writer.GenerationWriter.add
        def dying(self, section, data):
            real(self, section, data)
            self._file.flush()
            os._exit(9)  # killed mid-write: no cleanup runs
        writer.GenerationWriter.add = dying
        store = FakeStore()
        store.publish(row(1, files=["a.py"]))
        store.publish(row(2, files=["a.py"]))
        building.refresh({str(tmp_path)!r}, "s", REPOSITORY, store.read)
        """
    )
    crashed = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert crashed.returncode == 9, crashed.stderr
    assert read_current(folder) == (os.path.basename(first), 1)
    assert any(name.endswith(".tmp") for name in os.listdir(folder))  # the torn file
    # The next refresh builds the generation whole; the torn file is never read.
    second = refresh(str(tmp_path), "s", REPOSITORY, store.read)
    assert [c[0] for c in SnapshotIndex.open(second).cards()] == ["L-1", "L-2"]
    later = time.time() + GRACE_SECONDS + 1
    os.utime(second, (later - GRACE_SECONDS - 1, later - GRACE_SECONDS - 1))
    collect(str(tmp_path), folder, now=later)
    assert not any(name.endswith(".tmp") for name in os.listdir(folder))


def test_collection_keeps_current_pinned_and_recent_generations(tmp_path: Path) -> None:
    recall = tmp_path / "recall"
    store = FakeStore()
    paths = []
    for n in range(1, 5):
        store.publish(row(n, files=["a.py"]))
        paths.append(refresh(str(recall), "s", REPOSITORY, store.read))
    folder = scope_dir(str(recall), "s", REPOSITORY)
    pin = recall / "runs" / "run%3Ar1" / "pin-x"
    pin.parent.mkdir(parents=True)
    pin.write_text(os.path.relpath(paths[1], recall))
    now = time.time()
    assert collect(str(recall), folder, now=now) == []  # every successor is recent
    removed = collect(str(recall), folder, now=now + GRACE_SECONDS + 5)
    assert removed == [os.path.basename(paths[0]), os.path.basename(paths[2])]
    assert os.path.exists(paths[1]) and os.path.exists(paths[3])


def test_a_store_that_went_back_in_time_is_rebuilt_from_scratch(tmp_path: Path) -> None:
    old = FakeStore()
    for n in range(1, 4):
        old.publish(row(n, files=["a.py"]))
    refresh(str(tmp_path), "s", REPOSITORY, old.read)
    new = FakeStore()
    new.publish(row(9, files=["a.py"]))
    path = refresh(str(tmp_path), "s", REPOSITORY, new.read)
    assert [c[0] for c in SnapshotIndex.open(path).cards()] == ["L-9"]


# --- end to end: pins, concurrency, scope keys -----------------------------------------


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.root = make_checkout(tmp_path / "api")
        (self.root / "src").mkdir()
        self.store = tmp_path / "lessons.sqlite3"
        self.state = tmp_path / "state"
        self.env = hook_env(self.state, self.store)


def context_of(answer: dict[str, Any]) -> str:
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


@pytest.mark.slow
def test_publishing_while_16_hook_processes_of_a_pinned_run_answer(tmp_path: Path) -> None:
    world = World(tmp_path)
    publish(world.store, [repository_lesson("Before", folders=["src"])])
    env = {**world.env, "ACTIVE_MEMORY_RUN_ID": "pinned"}
    first = claude_payload("Read", {"file_path": "src/a.py"}, session="s-0", cwd=world.root)
    assert "Before" in context_of(answer_hook("claude", first, env))  # pins
    outputs: list[bytes] = []

    def hook(n: int) -> None:
        payload = claude_payload("Read", {"file_path": f"src/f{n}.py"}, session=f"s-{n + 1}",
                                 cwd=world.root)  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "active_memory.hooks.command", "claude"],
            input=json.dumps(payload).encode(), capture_output=True, env=env,
            cwd=str(REPO_ROOT), timeout=120, check=True,
        )  # fmt: skip
        outputs.append(done.stdout)

    threads = [threading.Thread(target=hook, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for n in range(3):  # publishes while the hooks answer
        publish(world.store, [repository_lesson(f"Later {n}", folders=["src"])])
    for thread in threads:
        thread.join()
    assert len(outputs) == 16
    assert all(b"Before" in out and b"Later" not in out for out in outputs), outputs
    fresh = claude_payload("Read", {"file_path": "src/a.py"}, session="new", cwd=world.root)
    assert "Later 2" in context_of(
        answer_hook("claude", fresh, {**world.env, "ACTIVE_MEMORY_RUN_ID": "next"})
    )
    assert not (world.state / "active-memory" / "recall" / "hook.log").exists()


def test_graph_parts_of_two_repositories_sharing_a_run_id_never_leak(tmp_path: Path) -> None:
    world = World(tmp_path)
    other = "repo:github.com/acme/web"
    publish(world.store, [
        CreateLesson(scope=GraphScope(graph_hash=GRAPH_HASH, node="worker", repository=NAMESPACE),
                     card=Card(title="Api only", recommendation="x"), author=AUTHOR_),
        CreateLesson(scope=GraphScope(graph_hash=GRAPH_HASH, node="worker", repository=other),
                     card=Card(title="Web only", recommendation="y"), author=AUTHOR_),
    ])  # fmt: skip
    env = {**world.env, "ACTIVE_MEMORY_RUN_ID": "two-repos", "ACTIVE_MEMORY_GRAPH_HASH": GRAPH_HASH,
           "ACTIVE_MEMORY_NODE": "worker"}  # fmt: skip
    call = ToolCall("claude", "Read", {}, session="s", cwd=str(world.root))
    api = graph_cards(resolve_context(call, env, repository=NAMESPACE))
    web = graph_cards(resolve_context(call, env, repository=other))
    assert [card[2].split("\n")[0] for card in api] == ["## Api only  (L-1 r1)"]
    assert [card[2].split("\n")[0] for card in web] == ["## Web only  (L-2 r1)"]
    cache = SnapshotCache()
    assert cache.graph_cards(resolve_context(call, env, repository=other)) == web


def test_a_resident_cache_maps_one_generation_for_many_runs(tmp_path: Path) -> None:
    world = World(tmp_path)
    publish(world.store, [repository_lesson("Src", folders=["src"])])
    cache = SnapshotCache()
    for n in range(20):
        env = {**world.env, "ACTIVE_MEMORY_RUN_ID": f"r{n}"}
        payload = claude_payload("Read", {"file_path": "src/a.py"}, session=f"s{n}",
                                 cwd=world.root)  # fmt: skip
        assert "(L-1 r1)" in context_of(answer_hook("claude", payload, env, cache=cache))
    assert len(cache._indexes) == 1


def test_card_text_is_rendered_like_the_store_card(tmp_path: Path) -> None:
    store = FakeStore()
    store.publish(row(3, files=["a.py"]))
    path = refresh(str(tmp_path), "s", REPOSITORY, store.read)
    assert SnapshotIndex.open(path).card(0)[2] == render_card("L-3", 1, "Lesson 3 r1", "Do it.")
    assert generations.scope_key(REPOSITORY) != generations.scope_key(
        ScopeKey("repository", repository="repo:github.com/acme/apis")
    )


def test_a_write_through_the_store_brings_known_generations_up_to_date(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio

    from active_memory.commands.common import refresh_recall
    from active_memory.store import on_store_change, open_store

    world = World(tmp_path)
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(world.state))
    publish(world.store, [repository_lesson("First", folders=["src"])])
    env = {**world.env, "ACTIVE_MEMORY_RUN_ID": "r1"}
    payload = claude_payload("Read", {"file_path": "src/a.py"}, session="s", cwd=world.root)
    answer_hook("claude", payload, env)  # the scope now has a generation on this machine
    folder = scope_dir(str(world.state / "active-memory" / "recall"), str(world.store),
                       REPOSITORY)  # fmt: skip
    assert read_current(folder) == ("g0000000000000001.gen", 1)

    async def write() -> None:
        async with open_store(str(world.store)) as store:
            await store.publish([repository_lesson("Second", folders=["src"])])

    unsubscribe = on_store_change(refresh_recall)  # as every command subscribes it
    try:
        anyio.run(write)
    finally:
        unsubscribe()
    # Built by the writer, before any hook asked: a run's first call only pins it.
    assert read_current(folder) == ("g0000000000000002.gen", 2)
    path = os.path.join(folder, "g0000000000000002.gen")
    assert [card[0] for card in SnapshotIndex.open(path).cards()] == ["L-1", "L-2"]


def test_a_hook_never_builds_it_reads_the_pinned_version_until_the_generation_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.recall import pins

    world = World(tmp_path)
    publish(world.store, [repository_lesson(f"Card {n}", folders=["src"]) for n in range(3)])
    monkeypatch.setattr(pins, "BUILD_IN_CALL", False)
    env = {**world.env, "ACTIVE_MEMORY_RUN_ID": "big"}
    payload = claude_payload("Read", {"file_path": "src/a.py"}, session="s0", cwd=world.root)
    # No generation yet: the call answers from the store at the version it pinned...
    assert "Card 0" in context_of(answer_hook("claude", payload, env))
    call = ToolCall("claude", "Read", {"file_path": "src/a.py"}, session="s",
                    cwd=str(world.root))  # fmt: skip
    context = resolve_context(call, env)
    scope = pins.repository_scope(context)
    assert scope is not None
    found = pins.pinned(context, scope)
    assert isinstance(found, pins.Pending) and found.version == 1
    # ... while the background builder (a process of its own) makes the generation.
    folder = scope_dir(context.recall_dir, str(world.store), scope)
    deadline = time.monotonic() + 120
    while read_current(folder) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert read_current(folder) == ("g0000000000000001.gen", 1)
    payload["session_id"] = "s1"
    assert "Card 0" in context_of(answer_hook("claude", payload, env))
    settled = pins.pinned(context, scope)
    assert isinstance(settled, str) and settled.endswith("g0000000000000001.gen")
    assert len(SnapshotIndex.open(settled).cards()) == 3


@pytest.mark.postgres
def test_a_postgresql_store_is_recalled_through_its_local_generations(
    tmp_path: Path, postgres_url: str
) -> None:
    import anyio

    from active_memory.store.postgres import PostgresStore

    async def add(title: str) -> None:
        store = await PostgresStore.open(postgres_url)
        try:
            await store.publish([repository_lesson(title, folders=["src"])])
        finally:
            await store.aclose()

    world = World(tmp_path)
    env = {**world.env, "ACTIVE_MEMORY_STORE": postgres_url}
    anyio.run(add, "From the organization")
    payload = claude_payload("Read", {"file_path": "src/a.py"}, session="s1", cwd=world.root)
    first = {**env, "ACTIVE_MEMORY_RUN_ID": "pg-1"}
    assert "From the organization" in context_of(answer_hook("claude", payload, first))
    anyio.run(add, "Published later")
    payload["session_id"] = "s2"
    assert "Published later" not in context_of(answer_hook("claude", payload, first))
    payload["session_id"] = "s3"
    later = context_of(answer_hook("claude", payload, {**env, "ACTIVE_MEMORY_RUN_ID": "pg-2"}))
    assert "Published later" in later
    cached = list((world.state / "active-memory" / "recall" / "generations").rglob("*.gen"))
    assert len(cached) == 2  # the local cache, one generation per store version seen
    assert postgres_url.split("@")[0] not in "".join(str(path) for path in cached)


@pytest.mark.parametrize("torn", [b"", b"\x00\x00\x00\x00", b"../../etc", b"/abs/path"])
def test_a_pin_torn_by_a_machine_crash_is_pinned_again(tmp_path: Path, torn: bytes) -> None:
    # Pins are written without a sync (a run's first call must stay cheap), so after a
    # power cut one may be empty or hold garbage. The run must keep its recall: the
    # damaged pin is dropped and the run pins the current generation again.
    world = World(tmp_path)
    publish(world.store, [repository_lesson("Before", folders=["src"])])
    env = {**world.env, "ACTIVE_MEMORY_RUN_ID": "resumed"}
    first = claude_payload("Read", {"file_path": "src/a.py"}, session="s-0", cwd=world.root)
    assert "Before" in context_of(answer_hook("claude", first, env))
    pins = list((world.state / "active-memory" / "recall" / "runs").glob("*/pin-*"))
    assert len(pins) == 1
    pins[0].write_bytes(torn)
    again = claude_payload("Read", {"file_path": "src/a.py"}, session="s-1", cwd=world.root)
    assert "Before" in context_of(answer_hook("claude", again, env))
    assert pins[0].read_bytes() not in (b"", torn)
