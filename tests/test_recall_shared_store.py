"""A PostgreSQL store shared by several machines (issue 28 item 4): the hook never touches
the network; the builder (started by the hooks at most every POLL_SECONDS, or by
`serve`'s watch) brings another machine's publish to this machine's generations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from recall_support import (
    NAMESPACE,
    REPO_ROOT,
    claude_payload,
    hook_env,
    make_checkout,
    repository_lesson,
)

from active_memory.lessons import CreateLesson
from active_memory.recall.background import POLLED
from active_memory.recall.generations import read_current, scope_dir
from active_memory.store.changes import ScopeKey

REPOSITORY = ScopeKey("repository", repository=NAMESPACE)

# The hook as a harness runs it, reporting what it imported: a hook that opened a
# PostgreSQL connection would have imported the driver and the async store.
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
NETWORK = ("asyncpg", "anyio", "socket", "ssl", "active_memory.store.postgres")


def publish_to(url: str, *mutations: CreateLesson) -> None:
    """Another machine publishes (nothing of this machine's recall listens)."""
    from active_memory.store.postgres import PostgresStore

    async def run() -> None:
        store = await PostgresStore.open(url)
        try:
            await store.publish(list(mutations))
        finally:
            await store.aclose()

    anyio.run(run)


class Machine:
    def __init__(self, tmp_path: Path, url: str) -> None:
        self.root = make_checkout(tmp_path / "api")
        self.state = tmp_path / "state"
        self.env = {**hook_env(self.state, tmp_path / "unused.sqlite3"), "ACTIVE_MEMORY_STORE": url}
        self.recall = str(self.state / "active-memory" / "recall")
        self.folder = scope_dir(self.recall, url, REPOSITORY)

    def hook(self, run: str) -> tuple[str, set[str]]:
        payload = claude_payload("Read", {"file_path": "src/a.py"}, session=run, cwd=self.root)
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, json.dumps(payload)], capture_output=True, text=True,
            env={**self.env, "ACTIVE_MEMORY_RUN_ID": run}, cwd=str(REPO_ROOT), check=True,
        )  # fmt: skip
        modules, _, out = done.stderr.partition("\n")
        return out, set(modules.split())

    def wait_for(self, version: int) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            current = read_current(self.folder)
            if current is not None and current[1] >= version:
                return
            time.sleep(0.05)
        raise AssertionError(f"no generation checked at version {version}")


@pytest.mark.postgres
def test_a_hook_never_reads_a_postgresql_store_and_another_machines_publish_arrives(
    tmp_path: Path, postgres_url: str
) -> None:
    machine = Machine(tmp_path, postgres_url)
    publish_to(postgres_url, repository_lesson("From the organization", folders=["src"]))
    out, modules = machine.hook("r1")
    assert out == "" and not [name for name in NETWORK if name in modules]  # nothing local yet
    machine.wait_for(1)  # the builder the hook started read the store
    out, modules = machine.hook("r2")
    assert "From the organization" in out and not [n for n in NETWORK if n in modules]
    publish_to(postgres_url, repository_lesson("Published elsewhere", folders=["src"]))
    out, _ = machine.hook("r3")
    assert "Published elsewhere" not in out  # the store is asked at most every POLL_SECONDS
    polled = Path(machine.folder) / POLLED
    old = time.time() - 3600
    os.utime(polled, (old, old))  # the period is over
    out, modules = machine.hook("r4")
    assert "Published elsewhere" not in out and not [n for n in NETWORK if n in modules]
    machine.wait_for(2)  # the builder that call started found the new version
    out, _ = machine.hook("r5")
    assert "Published elsewhere" in out
    out, _ = machine.hook("r2")  # a run keeps its version
    assert "Published elsewhere" not in out


@pytest.mark.postgres
def test_serves_watch_starts_the_builder_when_the_store_moved(
    tmp_path: Path, postgres_url: str
) -> None:
    from active_memory.hooks.store_watch import StoreWatch

    machine = Machine(tmp_path, postgres_url)
    publish_to(postgres_url, repository_lesson("First", folders=["src"]))
    machine.hook("r1")
    machine.wait_for(1)
    watch = StoreWatch(machine.recall, postgres_url)
    deadline = time.monotonic() + 30
    while os.path.exists(os.path.join(machine.folder, "starting")):
        assert time.monotonic() < deadline
        time.sleep(0.05)  # the first builder is done
    assert watch.check() == 0  # nothing moved: nothing started
    publish_to(postgres_url, repository_lesson("Second", folders=["src"]))
    assert watch.check() == 1
    machine.wait_for(2)
    out, _ = machine.hook("r9")
    assert "Second" in out
