"""Stamps: a run's first call pins an unchanged SQLite store's generation unread (issue 14).

A stamp may only let a pin skip reading the store when nothing was written since the
version `CURRENT` was checked at; every other case reads the store as before.
"""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from recall_support import (
    REPO_ROOT,
    claude_payload,
    hook_env,
    make_checkout,
    publish,
    repository_lesson,
    run_hook,
)
from test_recall_generations import REPOSITORY, FakeStore, row

from active_memory.recall import generations
from active_memory.recall.building import refresh
from active_memory.recall.generations import (
    STAMP_TRUST_SECONDS,
    read_current,
    scope_dir,
    sqlite_stamp,
)
from active_memory.recall.index import SnapshotIndex
from active_memory.store.changes import ScopeChanges, ScopeKey

OLD = time.time_ns() - 3_600 * 10**9  # files last written an hour ago: quiet


class Files:
    """The store's files as `sqlite_stamp` sees them; `touch` is a write."""

    def __init__(self) -> None:
        self.stamp: tuple[int, ...] = (1, 2, 4096, OLD, OLD, 1, 3, 0, OLD, OLD)

    def __call__(self) -> tuple[int, ...]:
        return self.stamp

    def touch(self, at: int | None = None) -> None:
        now = time.time_ns() if at is None else at
        self.stamp = (*self.stamp[:2], self.stamp[2] + 1, now, now, *self.stamp[5:])


class CountingStore(FakeStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def read(self, scope: ScopeKey, since: int | None) -> ScopeChanges:
        self.reads += 1
        return super().read(scope, since)


def cards(path: str) -> list[str]:
    return [card[0] for card in SnapshotIndex.open(path).cards()]


def pointer(folder: str) -> dict[str, Any]:
    value: dict[str, Any] = marshal.loads((Path(folder) / "CURRENT").read_bytes())
    return value


def test_an_unchanged_store_is_pinned_without_reading_it(tmp_path: Path) -> None:
    store, files = CountingStore(), Files()
    store.publish(row(1, files=["a.py"]))
    first = refresh(str(tmp_path), "s", REPOSITORY, store.read, stamp=files)
    assert store.reads == 1 and pointer(scope_dir(str(tmp_path), "s", REPOSITORY))["stamp"]
    again = refresh(str(tmp_path), "s", REPOSITORY, store.read, stamp=files)
    assert (again, store.reads) == (first, 1)


def test_a_write_since_the_stamp_is_read_and_reaches_the_next_pin(tmp_path: Path) -> None:
    store, files = CountingStore(), Files()
    store.publish(row(1, files=["a.py"]))
    first = refresh(str(tmp_path), "s", REPOSITORY, store.read, stamp=files)
    store.publish(row(2, files=["a.py"]))
    files.touch()  # the commit wrote the store's files
    second = refresh(str(tmp_path), "s", REPOSITORY, store.read, stamp=files)
    assert second != first and cards(second) == ["L-1", "L-2"]


def test_a_stamp_taken_just_after_a_write_is_not_recorded(tmp_path: Path) -> None:
    """Racy-git rule: a write in the same clock tick as the stamp could leave equal times,
    so files written within STAMP_QUIET_SECONDS certify nothing."""
    store, files = CountingStore(), Files()
    store.publish(row(1, files=["a.py"]))
    files.touch()  # written a moment ago
    refresh(str(tmp_path), "s", REPOSITORY, store.read, stamp=files)
    folder = scope_dir(str(tmp_path), "s", REPOSITORY)
    assert "stamp" not in pointer(folder)
    store.publish(row(2, files=["a.py"]))  # same tick: the files look the same
    path = refresh(str(tmp_path), "s", REPOSITORY, store.read, stamp=files)
    assert cards(path) == ["L-1", "L-2"] and store.reads == 2


def test_an_expired_stamp_reads_the_store_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, files = CountingStore(), Files()
    store.publish(row(1, files=["a.py"]))
    refresh(str(tmp_path), "s", REPOSITORY, store.read, stamp=files)
    # A commit that changed nothing `sqlite_stamp` sees (it cannot happen after the quiet
    # rule, but a stamp is never trusted for ever): found once the stamp has expired.
    store.publish(row(2, files=["a.py"]))
    later = time.time() + STAMP_TRUST_SECONDS + 1
    monkeypatch.setattr(time, "time", lambda: later)  # generations.py reads time.time()
    path = refresh(str(tmp_path), "s", REPOSITORY, store.read, stamp=files)
    assert cards(path) == ["L-1", "L-2"]


def test_a_pointer_without_a_stamp_falls_back_to_reading_then_stamps(tmp_path: Path) -> None:
    store, files = CountingStore(), Files()
    store.publish(row(1, files=["a.py"]))
    first = refresh(str(tmp_path), "s", REPOSITORY, store.read)  # no stamp: an old writer
    folder = scope_dir(str(tmp_path), "s", REPOSITORY)
    assert "stamp" not in pointer(folder)
    assert refresh(str(tmp_path), "s", REPOSITORY, store.read, stamp=files) == first
    assert store.reads == 2 and pointer(folder)["stamp"] == files.stamp
    assert read_current(folder) == (os.path.basename(first), 1)
    refresh(str(tmp_path), "s", REPOSITORY, store.read, stamp=files)
    assert store.reads == 2


@pytest.mark.parametrize("stamp", [[1, 2], "x", (1, 2), None])
def test_a_damaged_or_foreign_stamp_falls_back_to_reading(tmp_path: Path, stamp: Any) -> None:
    store, files = CountingStore(), Files()
    store.publish(row(1, files=["a.py"]))
    first = refresh(str(tmp_path), "s", REPOSITORY, store.read, stamp=files)
    folder = Path(scope_dir(str(tmp_path), "s", REPOSITORY))
    value = pointer(str(folder))
    value["stamp"] = stamp
    (folder / "CURRENT").write_bytes(marshal.dumps(value))
    store.publish(row(2, files=["a.py"]))
    path = refresh(str(tmp_path), "s", REPOSITORY, store.read, stamp=files)
    assert path != first and cards(path) == ["L-1", "L-2"]


def test_the_stamp_of_a_real_store_changes_with_every_write(tmp_path: Path) -> None:
    path = tmp_path / "lessons.sqlite3"
    publish(path, [repository_lesson("One", folders=["src"])])
    before = sqlite_stamp(str(path))
    time.sleep(0.01)
    publish(path, [repository_lesson("Two", folders=["src"])])
    assert sqlite_stamp(str(path)) != before
    assert sqlite_stamp(str(tmp_path / "none.sqlite3")) == (0,) * 10


def test_hook_processes_pin_a_quiet_store_unread_and_a_written_one_read(
    tmp_path: Path,
) -> None:
    """End to end with real hook processes: a store quiet for STAMP_QUIET_SECONDS is
    stamped by one first call; the next run's first call never imports sqlite3; a publish
    after that reaches the run that pins next."""
    root = make_checkout(tmp_path / "api")
    store, state = tmp_path / "lessons.sqlite3", tmp_path / "state"
    env = hook_env(state, store)
    publish(store, [repository_lesson("Before", folders=["src"])])

    def first_call(run: str) -> tuple[str, set[str]]:
        payload = claude_payload("Read", {"file_path": "src/a.py"}, session=run, cwd=root)
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, json.dumps(payload)], capture_output=True,
            text=True, env={**env, "ACTIVE_MEMORY_RUN_ID": run}, cwd=str(REPO_ROOT),
            check=True,
        )  # fmt: skip
        modules, _, out = done.stderr.partition("\n")
        return out, set(modules.split())

    assert "Before" in first_call("r1")[0]  # builds; the store was written a moment ago
    time.sleep(generations.STAMP_QUIET_SECONDS + 0.2)
    out, modules = first_call("r2")  # reads the store once more and stamps CURRENT
    assert "Before" in out and "sqlite3" in modules
    out, modules = first_call("r3")
    assert "Before" in out and "sqlite3" not in modules
    publish(store, [repository_lesson("Later", folders=["src"])])
    out, modules = first_call("r4")
    assert "Later" in out and "sqlite3" in modules
    payload = claude_payload("Read", {"file_path": "src/b.py"}, session="x", cwd=root)
    assert b"Later" not in run_hook("claude", json.dumps(payload),
                                    {**env, "ACTIVE_MEMORY_RUN_ID": "r3"}).stdout  # fmt: skip
    assert not (state / "active-memory" / "recall" / "hook.log").exists()


_PROBE = """
import io, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))
out = io.StringIO()
real, sys.stdout = sys.stdout, out
from active_memory.hooks.command import main
main(["claude"])
sys.stdout = real
sys.stderr.write(" ".join(sorted(sys.modules)) + "\\n" + out.getvalue())
"""


_RACER = """
import os, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.001)
from active_memory.hooks.command import main
main(["claude"])
"""


@pytest.mark.slow
def test_16_first_calls_of_one_run_racing_a_publish_agree_on_one_generation(
    tmp_path: Path,
) -> None:
    """A stamped CURRENT, 16 hook processes making the run's first call at once, and a
    publish landing among them: each answers from the one generation the run pinned."""
    from concurrent.futures import ThreadPoolExecutor

    root = make_checkout(tmp_path / "api")
    store, state = tmp_path / "lessons.sqlite3", tmp_path / "state"
    env = hook_env(state, store)
    publish(store, [repository_lesson("Before", folders=["src"])])
    payload = claude_payload("Read", {"file_path": "src/a.py"}, session="w", cwd=root)
    run_hook("claude", json.dumps(payload), {**env, "ACTIVE_MEMORY_RUN_ID": "warm-up"})
    time.sleep(generations.STAMP_QUIET_SECONDS + 0.2)
    payload["session_id"] = "stamper"
    run_hook("claude", json.dumps(payload), {**env, "ACTIVE_MEMORY_RUN_ID": "stamper"})
    folder = scope_dir(str(state / "active-memory" / "recall"), str(store), REPOSITORY)
    assert "stamp" in pointer(folder)
    go = tmp_path / "go"

    def call(n: int) -> bytes:
        mine = claude_payload("Read", {"file_path": f"src/f{n}.py"}, session=f"s-{n}", cwd=root)
        return subprocess.run(
            [sys.executable, "-c", _RACER, str(go)], input=json.dumps(mine).encode(),
            capture_output=True, env={**env, "ACTIVE_MEMORY_RUN_ID": "race"},
            cwd=str(REPO_ROOT), timeout=120, check=True,
        ).stdout  # fmt: skip

    with ThreadPoolExecutor(max_workers=16) as pool:
        pending = [pool.submit(call, n) for n in range(16)]
        time.sleep(0.3)  # let the interpreters start
        go.touch()
        publish(store, [repository_lesson("Later", folders=["src"])])
        outputs = [future.result() for future in pending]
    assert all(b"Before" in out for out in outputs), outputs
    assert len({b"Later" in out for out in outputs}) == 1, outputs  # one generation
    pins = list((state / "active-memory" / "recall" / "runs").glob("*race/pin-*"))
    assert len(pins) == 1
    assert not (state / "active-memory" / "recall" / "hook.log").exists()
