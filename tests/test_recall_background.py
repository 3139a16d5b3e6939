"""Nobody waits for a build (issue 28 item 2): hooks pin the store's version and read it
from the store until the background builder made the generation; a killed build leaves
nothing half-written and resumes; a pending run keeps exactly one version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from recall_support import (
    NAMESPACE,
    REPO_ROOT,
    claude_payload,
    hook_env,
    make_checkout,
    publish,
    repository_lesson,
    run_hook,
    wait_for_generation,
)

from active_memory.recall import pins
from active_memory.recall.building import settle
from active_memory.recall.engine import answer_hook
from active_memory.recall.environment import resolve_context
from active_memory.recall.generations import read_current, read_pointer, scope_dir
from active_memory.recall.index import SnapshotIndex
from active_memory.recall.types import ToolCall
from active_memory.store.changes import ScopeKey, read_sqlite_changes

REPOSITORY = ScopeKey("repository", repository=NAMESPACE)


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.root = make_checkout(tmp_path / "api")
        self.store = tmp_path / "lessons.sqlite3"
        self.state = tmp_path / "state"
        self.env = hook_env(self.state, self.store)
        self.recall = str(self.state / "active-memory" / "recall")
        self.folder = scope_dir(self.recall, str(self.store), REPOSITORY)

    def ask(self, run: str, session: str, path: str = "src/a.py") -> str:
        payload = claude_payload("Read", {"file_path": path}, session=session, cwd=self.root)
        answer = answer_hook("claude", payload, {**self.env, "ACTIVE_MEMORY_RUN_ID": run})
        return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))

    def pinned(self, run: str) -> str | pins.Pending | None:
        call = ToolCall("claude", "Read", {}, session="x", cwd=str(self.root))
        context = resolve_context(call, {**self.env, "ACTIVE_MEMORY_RUN_ID": run})
        return pins.pinned(context, REPOSITORY)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.setattr(pins, "BUILD_IN_CALL", False)  # as in a hook process and `serve`
    return World(tmp_path)


def no_builder(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Replace the background builder's start by a record of it (the test builds)."""
    from active_memory.recall import background

    started: list[Any] = []

    def record(*args: Any) -> bool:
        started.append(args)
        return True

    monkeypatch.setattr(background, "start_builder", record)
    return started


def test_a_pending_run_keeps_its_version_while_lessons_are_published(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = no_builder(monkeypatch)
    publish(world.store, [repository_lesson("Before", folders=["src"])])
    assert "Before" in world.ask("r1", "s1")  # no generation: read from the store
    pending = world.pinned("r1")
    assert isinstance(pending, pins.Pending) and pending.version == 1 and started
    publish(world.store, [repository_lesson("After", folders=["src"])])
    later = world.ask("r1", "s2")
    assert "Before" in later and "After" not in later  # still version 1
    assert "After" in world.ask("r2", "s3")  # a run that starts now pins version 2
    # The builder makes the generation of version 2: it does not hold version 1 (the
    # scope changed since), so run r1 keeps reading version 1 from the store...
    settle(world.recall, str(world.store), REPOSITORY)
    assert read_current(world.folder) == ("g0000000000000002.gen", 2)
    again = world.ask("r1", "s4")
    assert "Before" in again and "After" not in again
    assert isinstance(world.pinned("r1"), pins.Pending)
    # ... while r2, pinned at version 2, now reads the generation.
    world.ask("r2", "s5")
    assert str(world.pinned("r2")).endswith("g0000000000000002.gen")


def test_a_pending_run_moves_to_the_generation_that_holds_its_version(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_builder(monkeypatch)
    publish(world.store, [repository_lesson("Before", folders=["src"])])
    world.ask("r1", "s1")
    publish(world.store, [repository_lesson("Elsewhere", folders=["docs"],
                                            namespace="repo:github.com/acme/web")])  # fmt: skip
    settle(world.recall, str(world.store), REPOSITORY)  # at version 2; the scope unchanged
    pointer = read_pointer(world.folder)
    assert pointer is not None and pointer.since == 1 and pointer.checked == 2
    assert "Before" in world.ask("r1", "s2")
    assert str(world.pinned("r1")).endswith(pointer.generation)


def test_a_store_changed_since_its_generation_is_read_directly_not_built(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = no_builder(monkeypatch)
    publish(world.store, [repository_lesson("First", folders=["src"])])
    settle(world.recall, str(world.store), REPOSITORY)
    before = read_current(world.folder)
    publish(world.store, [repository_lesson("Second", files=["src/a.py"])])
    answer = world.ask("r1", "s1")
    assert answer.index("Second") < answer.index("First")  # file (1000) before folder (800)
    assert read_current(world.folder) == before  # nothing was built in the call
    assert started and isinstance(world.pinned("r1"), pins.Pending)


def test_the_direct_read_offers_only_cards_that_could_fit(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_builder(monkeypatch)
    big = "x" * 640
    publish(world.store, [repository_lesson(f"Big {n}", big, folders=["src"]) for n in range(3)]
            + [repository_lesson("Small", "Tiny.", folders=["src"])])  # fmt: skip
    answer = world.ask("r1", "s1")
    # 2048 bytes: three cards of 660 do not all fit; the small one still does.
    assert answer.count("## Big") == 2 and "Small" in answer


def test_a_scopes_first_call_after_a_bulk_import_delivers_the_right_card(
    tmp_path: Path,
) -> None:
    """100,000 lessons imported with IDs that sort among the existing ones (a complete
    build); the next run's first call, a real hook process, delivers the imported lesson
    on the file it reads, before any generation of the new version exists."""
    import anyio

    from active_memory.lessons import Associations, Author, Lesson, RepositoryScope
    from active_memory.store.sqlite import SqliteStore

    root = make_checkout(tmp_path / "api")
    store, state = tmp_path / "lessons.sqlite3", tmp_path / "state"
    env = hook_env(state, store)
    publish(store, [repository_lesson(f"Old {n}", folders=["lib"]) for n in range(3)])
    payload = claude_payload("Read", {"file_path": "lib/x.py"}, session="s0", cwd=root)
    run_hook("claude", json.dumps(payload), {**env, "ACTIVE_MEMORY_RUN_ID": "before"})
    wait_for_generation(state)
    scope = RepositoryScope(repository=NAMESPACE)

    def lessons() -> Any:
        for n in range(100_000):
            target = n == 73_210
            yield Lesson(
                id=f"L-2x{n}", revision=1, scope=scope,
                title="Regenerate the schema client" if target else f"Imported {n}",
                recommendation="Run make api-client after editing it." if target else "x.",
                associations=Associations(files=["src/target.py"] if target else
                                          [f"src/gen/m{n % 5000}.py"]),
            )  # fmt: skip

    async def bulk() -> None:
        async with await SqliteStore.open(store) as opened:
            report = await opened.import_lessons(lessons(), Author(specialist="person:test"))
            assert len(report.added) == 100_000

    anyio.run(bulk)
    version = read_sqlite_changes(str(store), REPOSITORY, None, limit=0).version
    payload = claude_payload("Read", {"file_path": "src/target.py"}, session="s1", cwd=root)
    done = run_hook("claude", json.dumps(payload), {**env, "ACTIVE_MEMORY_RUN_ID": "after"})
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Regenerate the schema client  (L-2x73210 r1)" in context
    # Answered from the store at the version after the import (a hook never builds: a
    # generation it had built would be what its pin names).
    pin_files = list((state / "active-memory" / "recall" / "runs").glob("*after/pin-*"))
    assert [p.read_text() for p in pin_files] == [f"at:{version}"]
    assert not (state / "active-memory" / "recall" / "hook.log").exists()


# --- the builder: one at a time, killed and resumed -----------------------------------

_KILLED_BUILDER = textwrap.dedent(
    """
    import os, sys
    from active_memory.recall import full_build
    full_build.PAGE_ROWS = 40
    real = full_build._save
    runs = 0
    def save(work, manifest):
        global runs
        real(work, manifest)
        runs = len(manifest["runs"])
        if runs == 3:
            os._exit(9)  # killed: no cleanup of any kind
    full_build._save = save
    from active_memory.recall.builder import main
    sys.exit(main(sys.argv[1:]))
    """
)

_RESUMED_BUILDER = textwrap.dedent(
    """
    import sys
    from active_memory.recall import full_build, sources
    full_build.PAGE_ROWS = 40
    pages = []
    real = sources._SqliteReader.page
    def page(self, after, limit):
        pages.append(after)
        return real(self, after, limit)
    sources._SqliteReader.page = page
    from active_memory.recall.builder import main
    code = main(sys.argv[1:])
    print(len(pages))
    sys.exit(code)
    """
)


def test_a_killed_build_keeps_what_it_read_and_the_next_builder_resumes(tmp_path: Path) -> None:
    world = World(tmp_path)
    publish(world.store, [repository_lesson(f"Card {n}", folders=["src"]) for n in range(200)])
    arguments = [world.recall, str(world.store), "repository", NAMESPACE, "", ""]
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_BUILDER, *arguments],
        capture_output=True, text=True, cwd=str(REPO_ROOT), timeout=120,
    )  # fmt: skip
    assert killed.returncode == 9, killed.stderr
    assert read_current(world.folder) is None  # nothing made current, nothing half-read
    assert not list(Path(world.folder).glob("*.gen"))
    work = Path(world.folder) / "build"
    assert sorted(p.name for p in work.glob("run-*")) == ["run-00000", "run-00001", "run-00002"]
    resumed = subprocess.run(
        [sys.executable, "-c", _RESUMED_BUILDER, *arguments],
        capture_output=True, text=True, cwd=str(REPO_ROOT), timeout=120,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert int(resumed.stdout.split()[-1]) == 3  # pages 4 and 5, then the empty one
    current = read_current(world.folder)
    assert current is not None and not work.exists()
    cards = SnapshotIndex.open(os.path.join(world.folder, current[0])).cards()
    assert [c[0] for c in cards] == [f"L-{n}" for n in range(1, 201)]


def test_a_build_killed_while_writing_leaves_the_previous_generation_current(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    publish(world.store, [repository_lesson("One", folders=["src"])])
    settle(world.recall, str(world.store), REPOSITORY)
    before = read_current(world.folder)
    publish(world.store, [repository_lesson(f"More {n}", folders=["src"]) for n in range(30)])
    code = textwrap.dedent(
        """
        import os, sys
        from active_memory.recall import incremental, writer
        incremental.MAX_ROWS = 5  # a complete build
        real = writer.GenerationWriter.add
        def dying(self, section, data):
            real(self, section, data)
            if section == "keys":
                self._file.flush()
                os._exit(9)
        writer.GenerationWriter.add = dying
        from active_memory.recall.builder import main
        sys.exit(main(sys.argv[1:]))
        """
    )
    arguments = [world.recall, str(world.store), "repository", NAMESPACE, "", ""]
    died = subprocess.run([sys.executable, "-c", code, *arguments], capture_output=True,
                          text=True, cwd=str(REPO_ROOT), timeout=120)  # fmt: skip
    assert died.returncode == 9, died.stderr
    assert read_current(world.folder) == before
    assert any(name.endswith(".tmp") for name in os.listdir(world.folder))
    settle(world.recall, str(world.store), REPOSITORY)
    current = read_current(world.folder)
    assert current is not None and current[1] == 2
    assert len(SnapshotIndex.open(os.path.join(world.folder, current[0])).cards()) == 31


def test_only_one_builder_builds_a_scope_and_a_busy_one_is_not_started_again(
    tmp_path: Path,
) -> None:
    from active_memory.file_lock import FileLock
    from active_memory.recall.background import start_builder

    world = World(tmp_path)
    publish(world.store, [repository_lesson("One", folders=["src"])])
    with FileLock(os.path.join(world.folder, "builder.lock")):
        assert settle(world.recall, str(world.store), REPOSITORY) is None  # another has it
        assert start_builder(world.recall, str(world.store), REPOSITORY) is False
    assert start_builder(world.recall, str(world.store), REPOSITORY) is True
    assert start_builder(world.recall, str(world.store), REPOSITORY) is False  # just started
    starting = os.path.join(world.folder, "starting")
    deadline = time.monotonic() + 120
    while os.path.exists(starting) and time.monotonic() < deadline:
        time.sleep(0.05)  # the builder removes its marker as it exits
    assert read_current(world.folder) is not None and not os.path.exists(starting)


def test_the_direct_read_is_index_ranges_never_a_scan(tmp_path: Path) -> None:
    """SQLite's plan of the direct read: each key an index range of `recall_keys` (the
    bounded `EXAMINE` entries), each lesson fetched by its key; no table is scanned."""
    import sqlite3

    from active_memory.store.direct import direct_query

    store = tmp_path / "lessons.sqlite3"
    publish(store, [repository_lesson(f"Card {n}", folders=["src"], keywords=[["core", "py"]])
                    for n in range(50)])  # fmt: skip
    lookups = [(0, "f", "src/a.py"), (1, "d", "src"), (4, "k", "core")]
    sql, values = direct_query([1], lookups, 1, 2048)
    with sqlite3.connect(store) as conn:
        conn.execute("ANALYZE")  # whatever the statistics say, the plan stays bounded
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", values)]
        rows = conn.execute(sql, values).fetchall()
    # What is scanned: the bounded range `k` (at most EXAMINE entries) and the
    # co-routine holding one lesson's citations (searched by its ID); never a table.
    scans = [step for step in plan if step.startswith("SCAN")]
    assert scans and all(step.startswith(("SCAN k", "SCAN (subquery-")) for step in scans), plan
    assert any("lesson_evidence USING COVERING INDEX" in step for step in plan), plan
    assert any("SEARCH recall_keys USING PRIMARY KEY" in step for step in plan), plan
    assert any(step.startswith("SEARCH l USING INDEX") for step in plan), plan
    assert len(rows) == 100  # 50 by the folder, 50 by the group


def test_the_builder_migrates_a_store_an_earlier_version_wrote(tmp_path: Path) -> None:
    """A store from before recall keys (an upgrade): the builder migrates it, so a run
    with no generation yet reads its version from the store again."""
    import sqlite3

    from active_memory.recall.sources import migrate
    from active_memory.store.sqlite_schema import RECALL_KEYS_SCHEMA_VERSION, SCHEMA_VERSION

    world = World(tmp_path)
    publish(world.store, [repository_lesson("Before the upgrade", folders=["src"])])
    with sqlite3.connect(world.store) as conn:
        conn.executescript(
            "DROP TRIGGER recall_keys_insert; DROP TRIGGER recall_keys_update; "
            "DROP TABLE recall_keys; DROP TABLE recall_scopes; "
            f"PRAGMA user_version = {RECALL_KEYS_SCHEMA_VERSION - 1};"
        )
    assert migrate(str(world.store)) is True
    assert migrate(str(world.store)) is False  # nothing left to do
    with sqlite3.connect(world.store) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM recall_keys").fetchone()[0] == 1
