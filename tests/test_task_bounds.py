"""The batch bound is a bound on what the model receives: the whole rendered prompt (the
template, the lessons, the evidence, the numbered file contents and the listing) stays
within `batch_bytes` at 0, 1 and 5,000 lessons; an oversize file is cut with the cut
marked, never dropped silently; ignored files are never shown."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import FakeSessions, config, run_record, seed, supplied
from specialist_builders import NAMESPACE, git

from active_memory.checkout import Checkout
from active_memory.lessons import Associations, Lesson, RepositoryScope
from active_memory.orchestrator import PostmortemLimits, run_postmortem
from active_memory.runlog.record import RunRecord, parse_run_record
from active_memory.specialists.providers.base import Request
from active_memory.store.sqlite import SqliteStore

SQLITE_ONLY = True  # the bound is the orchestrator's; the store backends are tested apart
BOUND = 40_000
SIZES = (0, 40, 900, 7_000, 15_000, 60_000, 250_000)  # bytes: empty to far past file_bytes


def make_checkout(root: Path) -> list[str]:
    """A checkout with files of varied sizes (numbered lines), an ignored file; the paths."""
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q")
    (root / ".gitignore").write_text("secret.env\n")
    (root / "secret.env").write_text("TOKEN=do-not-show\n")
    paths = []
    for index, size in enumerate(SIZES):
        path = f"src/module_{index}.py"
        line = f"value_{index} = compute('{index}')  # a line of module {index}\n"
        body = (line * (size // len(line) + 1))[:size]
        (root / path).write_text(body)
        paths.append(path)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return paths


def lessons_for(count: int, paths: list[str]) -> list[Lesson]:
    rng = random.Random(13)
    return [
        Lesson(
            id=f"L-{n}",
            revision=1,
            scope=RepositoryScope(repository=NAMESPACE),
            title=f"Lesson {n} about module files",
            recommendation=f"Run `make check` after editing. {'z' * rng.randint(0, 500)}",
            associations=Associations(files=[paths[n % len(paths)], "secret.env"]),
        )
        for n in range(1, count + 1)
    ]


def prompt_of(request: Request) -> str:
    return "\n\n".join(m.content for m in request.messages)


async def _run(
    tmp_path: Path, store: SqliteStore, count: int, *, only: int | None = None
) -> tuple[FakeSessions, Any]:
    """The postmortem over `count` lessons (or only lesson `only` of them), dry."""
    root = tmp_path / "repo"
    paths = make_checkout(root)
    lessons = lessons_for(count, paths)
    if only is not None:
        lessons = [x for x in lessons if x.id == f"L-{only}"]
    await seed(store, lessons)
    record = run_record(tmp_path, [x.id for x in lessons], checkout=root)
    sessions = FakeSessions()
    report = await run_postmortem(
        record,
        config(timeout_ms=120_000),
        store,
        checkout=Checkout(root),
        sessions=sessions,
        limits=PostmortemLimits(batch_bytes=BOUND),
        journal_dir=tmp_path,
        dry_run=True,
    )
    return sessions, report


@pytest.mark.asyncio
@pytest.mark.parametrize("count", [0, 1, 5_000])
async def test_every_prompt_the_model_receives_is_within_the_batch_bound(
    tmp_path: Path, store: SqliteStore, count: int
) -> None:
    sessions, report = await _run(tmp_path, store, count)
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "reconciled", entry.reason
    asked = [r for r in sessions.requests if r.specialist == "repository_maintenance"]
    assert len(asked) == (entry.batches or 0)
    for request in asked:
        assert len(prompt_of(request).encode("utf-8")) <= BOUND
    supplied_ids = [x["id"] for r in asked for x in supplied(r)]
    assert sorted(supplied_ids) == sorted(f"L-{n}" for n in range(1, count + 1))
    if count == 5_000:
        assert len(asked) > 50


@pytest.mark.asyncio
async def test_a_single_oversize_file_is_cut_with_the_cut_marked(
    tmp_path: Path, store: SqliteStore
) -> None:
    sessions, _ = await _run(tmp_path, store, 6, only=6)  # the 250,000-byte file alone
    requests = [r for r in sessions.requests if r.specialist == "repository_maintenance"]
    files = {f["path"]: f for r in requests for f in _task(r)["files"]}
    big = files["src/module_6.py"]
    assert big["current"] and big["truncated"] and not big["omitted"]
    assert big["content"][0].startswith("1: value_6 = ")
    assert big["content"][-1].startswith("[cut: ") and "250000-byte file" in big["content"][-1]
    assert len(big["content"]) > 100  # a real excerpt, not a stub
    assert all(len(prompt_of(r).encode("utf-8")) <= BOUND for r in requests)


@pytest.mark.asyncio
async def test_every_file_is_shown_cut_or_marked_omitted_and_ignored_files_never_shown(
    tmp_path: Path, store: SqliteStore
) -> None:
    sessions, _ = await _run(tmp_path, store, 7)  # one lesson per file size
    [request] = [r for r in sessions.requests if r.specialist == "repository_maintenance"]
    task = _task(request)
    files = {f["path"]: f for f in task["files"]}
    assert set(files) == {f"src/module_{n}.py" for n in range(7)} | {"secret.env"}
    for f in files.values():
        if not f["current"]:
            assert f["content"] is None
        elif f["omitted"]:  # never dropped silently: listed, and the reason says why
            assert f["content"] is None and "size bound" in f["reason"]
        else:
            assert f["content"] is not None
            # An empty file is shown whole, with no line (small files now come first).
            cut_line = bool(f["content"]) and f["content"][-1].startswith("[cut: ")
            assert f["truncated"] == cut_line
    assert files["src/module_2.py"]["content"] and not files["src/module_2.py"]["truncated"]
    secret = files["secret.env"]
    assert not secret["current"] and secret["status"] == "ignored"
    assert "do-not-show" not in prompt_of(request)
    listing = {x["folder"]: x["entries"] for x in task["listing"]}
    assert "module_0.py" in listing["src"]
    assert not any("secret" in e for entries in listing.values() for e in entries)


def _task(request: Request) -> dict[str, Any]:
    assert isinstance(request.input, dict)
    return request.input


def with_256_failures(record: RunRecord, paths: list[str]) -> RunRecord:
    """`record` with 256 failed calls: 64 families, each failing the same way four times
    on one of the checkout's files (long commands and errors), some resolved."""
    failures = []
    for n in range(256):
        family = f"make target-{n % 64}"
        path = paths[n % len(paths)]
        failures.append(
            {
                "node": "worker",
                "tool": "Bash",
                "at": f"2026-11-28T15:{n % 60:02d}:{n % 59:02d}Z",
                "family": family,
                "command": f"{family} FILE={path} V={n % 8} " + "x" * 300,
                "cwd": "src",
                "exit_code": 2,
                "error": f"make: *** [target-{n % 64}] Error 2 " + "y" * 500,
                "paths": [path],
            }
        )
    data = record.model_dump(mode="json", by_alias=True)
    data["tool_failures"] = failures
    return parse_run_record(data)


@pytest.mark.asyncio
async def test_every_prompt_is_within_the_bound_with_256_failed_calls(
    tmp_path: Path, store: SqliteStore
) -> None:
    root = tmp_path / "repo"
    paths = make_checkout(root)
    lessons = lessons_for(40, paths)
    await seed(store, lessons)
    record = with_256_failures(run_record(tmp_path, [x.id for x in lessons], checkout=root), paths)
    assert len(record.tool_failures) == 256
    sessions = FakeSessions()
    report = await run_postmortem(
        record,
        config(timeout_ms=120_000),
        store,
        checkout=Checkout(root),
        sessions=sessions,
        limits=PostmortemLimits(batch_bytes=BOUND),
        journal_dir=tmp_path,
        dry_run=True,
    )
    assert report.specialists["repository_maintenance"].status == "reconciled"
    asked = {r.specialist: r for r in sessions.requests}
    for request in sessions.requests:
        assert len(prompt_of(request).encode("utf-8")) <= BOUND
    discovery = _task(asked["repository_discovery"])
    shown = [i for i in discovery["evidence"] if i["kind"] == "tool_failures"]
    assert shown and len(shown) + discovery.get("evidence_omitted", 0) == 64
    maintenance = [_task(r) for r in sessions.requests if r.specialist == "repository_maintenance"]
    assert any(task.get("failures") for task in maintenance)
