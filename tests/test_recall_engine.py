"""answer_hook / answer_tool_call end to end over a real SQLite store (SPEC §8)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from recall_support import (
    GRAPH_HASH,
    REPO_ROOT,
    claude_payload,
    graph_lesson,
    hook_env,
    make_checkout,
    publish,
    repository_lesson,
)

from active_memory.recall.engine import answer_hook, answer_tool_call
from active_memory.recall.environment import resolve_context
from active_memory.recall.frame import FRAME_BYTES, render_card
from active_memory.recall.index import SnapshotIndex
from active_memory.recall.records import read_deliveries, read_receipts
from active_memory.recall.snapshot import SnapshotCache, graph_cards, pinned, repository_scope
from active_memory.recall.types import ToolCall


class World:
    """A checkout, a store and a state dir; `env` is what a hook process would see."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = make_checkout(tmp_path / "api")
        (self.root / "src" / "api").mkdir(parents=True)
        self.store = tmp_path / "store" / "lessons.sqlite3"
        self.state = tmp_path / "state"
        self.env = hook_env(self.state, self.store)

    @property
    def recall_dir(self) -> str:
        return str(self.state / "active-memory" / "recall")

    def read(self, path: str, session: str = "s-1", **env: str) -> dict[str, Any]:
        payload = claude_payload("Read", {"file_path": str(self.root / path)},
                                 session=session, cwd=self.root)  # fmt: skip
        return answer_hook("claude", payload, {**self.env, **env})


def context_of(answer: dict[str, Any]) -> str:
    if not answer:
        return ""
    text: str = answer["hookSpecificOutput"]["additionalContext"]
    return text


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def test_a_matching_call_gets_the_framed_card_in_claude_shape(world: World) -> None:
    publish(world.store, [repository_lesson("Regenerate the client", files=["api/schema.json"])])
    answer = world.read("api/schema.json")
    assert answer["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    assert "## Regenerate the client  (L-1 r1)" in context_of(answer)


def test_no_match_answers_nothing(world: World) -> None:
    publish(world.store, [repository_lesson("Regenerate the client", files=["api/schema.json"])])
    assert world.read("README.md") == {}


def test_lessons_published_after_the_freeze_do_not_reach_that_run(world: World) -> None:
    publish(world.store, [repository_lesson("First", folders=["src"])])
    assert "First" in context_of(world.read("src/a.py", session="s-1", ACTIVE_MEMORY_RUN_ID="r1"))
    publish(world.store, [repository_lesson("Later", folders=["src"])])
    # Same run, another session: still the frozen snapshot.
    assert "Later" not in context_of(
        world.read("src/a.py", session="s-2", ACTIVE_MEMORY_RUN_ID="r1")
    )
    # A new run freezes anew and sees it.
    assert "Later" in context_of(world.read("src/a.py", session="s-3", ACTIVE_MEMORY_RUN_ID="r2"))


def test_without_a_run_id_the_provider_session_freezes_its_own_snapshot(world: World) -> None:
    publish(world.store, [repository_lesson("First", folders=["src"])])
    world.read("src/a.py", session="s-1")
    publish(world.store, [repository_lesson("Later", folders=["src"])])
    assert "Later" not in context_of(world.read("src/b.py", session="s-1"))
    assert "Later" in context_of(world.read("src/b.py", session="s-2"))


def test_a_card_is_delivered_once_per_session(world: World) -> None:
    publish(world.store, [repository_lesson("Once", folders=["src"])])
    assert "Once" in context_of(world.read("src/a.py", session="s-1"))
    assert world.read("src/b.py", session="s-1") == {}
    assert "Once" in context_of(world.read("src/b.py", session="s-2"))


def test_the_budget_is_cumulative_across_calls(world: World) -> None:
    recommendation = "r" * 300
    publish(world.store, [repository_lesson(f"Card {n}", recommendation, folders=[f"m{n}"])
                          for n in range(5)])  # fmt: skip
    one = FRAME_BYTES + len(render_card("L-1", 1, "Card 0", recommendation).encode())
    budget = 2 * one + one // 2  # room for two separate deliveries, not three
    spent = 0
    for n in range(5):
        text = context_of(world.read(f"m{n}/x.py", ACTIVE_MEMORY_BUDGET_BYTES=str(budget)))
        spent += len(text.encode("utf-8"))
    assert spent == 2 * one
    deliveries = read_deliveries(world.recall_dir, "session:s-1")
    assert [d["lesson"] for d in deliveries] == ["L-1", "L-2"]


def test_every_call_records_a_receipt_without_arguments(world: World) -> None:
    publish(world.store, [repository_lesson("Src", folders=["src"])])
    secret = "rm -rf ./build && echo TOKEN=abc123"
    payloads = [
        claude_payload("Read", {"file_path": str(world.root / "src/a.py")}, session="s",
                       cwd=world.root),
        claude_payload("Bash", {"command": secret}, session="s", cwd=world.root),
        claude_payload("WebSearch", {"query": "stripe retries"}, session="s", cwd=world.root),
    ]  # fmt: skip
    for payload in payloads:
        answer_hook("claude", payload, {**world.env, "ACTIVE_MEMORY_NODE": "worker"})
    receipts = read_receipts(world.recall_dir, "session:s")
    assert [r["tool"] for r in receipts] == ["Read", "Bash", "WebSearch"]
    assert receipts[0]["paths"] == ["src/a.py"] and receipts[0]["node"] == "worker"
    assert all(set(r) == {"node", "tool", "at", "paths"} for r in receipts)
    assert "TOKEN" not in json.dumps(receipts) and "stripe" not in json.dumps(receipts)
    deliveries = read_deliveries(world.recall_dir, "session:s")
    assert [(d["lesson"], d["revision"], d["session"]) for d in deliveries] == [("L-1", 1, "s")]


def test_a_dry_run_writes_nothing(world: World) -> None:
    publish(world.store, [repository_lesson("Src", folders=["src"])])
    call = ToolCall("claude", "Read", {"file_path": "src/a.py"}, session="s", cwd=str(world.root))
    answer = answer_tool_call(call, resolve_context(call, world.env, dry_run=True))
    assert [hit.id for hit in answer.cards] == ["L-1"]
    assert not world.state.exists()
    again = answer_tool_call(call, resolve_context(call, world.env, dry_run=True))
    assert [hit.id for hit in again.cards] == ["L-1"]  # nothing was charged


def test_without_the_repository_scope_nothing_is_recalled_or_recorded(world: World) -> None:
    publish(world.store, [repository_lesson("Src", folders=["src"])])
    assert world.read("src/a.py", ACTIVE_MEMORY_SCOPES="graph") == {}
    assert read_receipts(world.recall_dir, "session:s-1") == []


def test_without_a_namespace_nothing_is_recalled_but_the_receipt_is_kept(
    world: World, tmp_path: Path
) -> None:
    publish(world.store, [repository_lesson("Src", folders=["src"])])
    bare = tmp_path / "bare"
    (bare / "src").mkdir(parents=True)
    payload = claude_payload("Read", {"file_path": str(bare / "src/a.py")}, session="s", cwd=bare)
    assert answer_hook("claude", payload, world.env) == {}
    assert read_receipts(world.recall_dir, "session:s")[0]["paths"] == ["src/a.py"]


def test_the_first_call_freezes_the_nodes_graph_lessons_too(world: World) -> None:
    publish(world.store, [graph_lesson("Run checks", node="worker"),
                          graph_lesson("Other node", node="reviewer")])  # fmt: skip
    env = {"ACTIVE_MEMORY_GRAPH_HASH": GRAPH_HASH, "ACTIVE_MEMORY_NODE": "worker",
           "ACTIVE_MEMORY_RUN_ID": "r1"}  # fmt: skip
    world.read("src/a.py", **env)
    publish(world.store, [graph_lesson("Too late", node="worker")])
    call = ToolCall("claude", "Read", {}, session="s-1", cwd=str(world.root))
    frozen = graph_cards(resolve_context(call, {**world.env, **env}))
    assert [card[0] for card in frozen] == ["L-1"]
    assert "Run checks" in frozen[0][2]


def test_a_resident_cache_answers_like_the_disk(world: World) -> None:
    publish(world.store, [repository_lesson("Src", folders=["src"]),
                          repository_lesson("Api", identifiers=["ApiClient"])])  # fmt: skip
    cache = SnapshotCache()
    payload = claude_payload("Grep", {"pattern": "ApiClient", "path": "src"}, session="a",
                             cwd=world.root)  # fmt: skip
    with_cache = answer_hook("claude", payload, world.env, cache=cache)
    payload["session_id"] = "b"
    from_disk = answer_hook("claude", payload, world.env)
    assert context_of(with_cache) == context_of(from_disk)
    assert "(L-1 r1)" in context_of(from_disk) and "(L-2 r1)" in context_of(from_disk)


def test_a_missing_store_pins_an_empty_generation(world: World) -> None:
    assert world.read("src/a.py") == {}
    call = ToolCall("claude", "Read", {}, session="s-1", cwd=str(world.root))
    context = resolve_context(call, world.env)
    scope = repository_scope(context)
    assert scope is not None
    path = pinned(context, scope)
    assert isinstance(path, str) and SnapshotIndex.open(path).card_count == 0


_RACER = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, {tests!r})
    from active_memory.recall import snapshot, sources
    from active_memory.recall.environment import resolve_context
    from active_memory.recall.types import ToolCall
    from active_memory.store.changes import ScopeChanges

    me = sys.argv[1]
    def fake_source(location, scope):
        # Every racer sees a different store at one version: only one of them may win.
        def read(scope, since):
            row = ("L-" + me, 1, "active", "From racer " + me, "x", '{{"folders": ["src"]}}')
            return ScopeChanges(1, [row], full=since is None)
        return sources.ReadSource(scope, True, read)
    sources.source_for = fake_source
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.001)
    call = ToolCall("claude", "Read", {{}}, session="s", cwd={root!r})
    index = snapshot.repository_index(resolve_context(call))
    print(index.card(0)[0])
    """
)


@pytest.mark.slow
def test_concurrent_first_calls_agree_on_one_snapshot(world: World, tmp_path: Path) -> None:
    go = tmp_path / "go"
    code = _RACER.format(tests=str(REPO_ROOT / "tests"), root=str(world.root))
    racers = [
        subprocess.Popen([sys.executable, "-c", code, str(n), str(go)], env=world.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for n in range(8)
    ]  # fmt: skip
    go.touch()
    seen = set()
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err
        seen.add(out.strip())
    assert len(seen) == 1
    leftovers = [p for p in Path(world.recall_dir).rglob("*.tmp")]
    assert leftovers == []


@pytest.mark.asyncio
async def test_a_first_call_made_on_an_event_loop_still_freezes(world: World) -> None:
    await anyio.to_thread.run_sync(
        publish, world.store, [repository_lesson("Src", folders=["src"])]
    )
    payload = claude_payload("Read", {"file_path": "src/a.py"}, session="s", cwd=world.root)
    answer = answer_hook("claude", payload, world.env, cache=SnapshotCache())
    assert "(L-1 r1)" in context_of(answer)


def test_threads_of_one_server_freezing_one_run_agree(world: World) -> None:
    from concurrent.futures import ThreadPoolExecutor

    publish(world.store, [repository_lesson("Src", folders=["src"])])
    cache = SnapshotCache()
    env = {**world.env, "ACTIVE_MEMORY_RUN_ID": "threads"}

    def call(n: int) -> str:
        payload = claude_payload("Read", {"file_path": "src/a.py"}, session=f"s{n}",
                                 cwd=world.root)  # fmt: skip
        return context_of(answer_hook("claude", payload, env, cache=cache))

    with ThreadPoolExecutor(max_workers=8) as pool:
        contexts = list(pool.map(call, range(8)))
    assert all("(L-1 r1)" in text for text in contexts)
    assert list(Path(world.recall_dir).rglob("*.tmp")) == []


def test_a_receipt_keeps_a_few_paths_only(world: World) -> None:
    files = " ".join(f"f{n}.py" for n in range(20))
    payload = claude_payload("Bash", {"command": f"cat {files}"}, session="s", cwd=world.root)
    answer_hook("claude", payload, world.env)
    (receipt,) = read_receipts(world.recall_dir, "session:s")
    assert receipt["paths"] == [f"f{n}.py" for n in range(8)]


def test_runs_pinned_to_one_generation_share_it_in_a_resident_cache(world: World) -> None:
    publish(world.store, [repository_lesson("Src", folders=["src"])])
    cache = SnapshotCache(max_runs=2)
    for turn, run in enumerate(("r1", "r2", "r3", "r2")):
        env = {**world.env, "ACTIVE_MEMORY_RUN_ID": run}
        payload = claude_payload(
            "Read", {"file_path": "src/a.py"}, session=f"s{turn}", cwd=world.root
        )
        assert "(L-1 r1)" in context_of(answer_hook("claude", payload, env, cache=cache))
    # Every run pinned the same generation: the cache opened it once.
    assert len(cache._indexes) == 1
