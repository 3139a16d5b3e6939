"""What the specialists' tasks cost, and how their file budget is spent.

    .venv/bin/python bench/task_size_bench.py

Runs the real postmortem dry with capture sessions (no model) on the bundled example
(`examples/`) and on every scenario of `tests/fixtures/scenarios/`, and prints, per task
a specialist received: the task data as the prompt shows it (compact JSON) and, as the
baseline measured in the same run, the same data as indented JSON (what prompts showed
before issue 25); the whole prompt; and its files: shown whole, cut, omitted, not
current. Then the file budget on a session-like layout (four 20-60 KB files read most
often, ten small files read once, the root's build files): the files shown whole, cut and
omitted with the fair budget, and, as the baseline, with the budget spent in order of
relevance (each file in a group of its own: what tasks did before issue 25).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from scenario_support import load, names  # noqa: E402
from scenario_support import make_checkout as scenario_checkout  # noqa: E402

Json = dict[str, Any]


async def captured(record_path: Path, checkout: Path, stored: list[Json]) -> list[Any]:
    from active_memory.checkout import Checkout
    from active_memory.commands.files import read_lesson_lines
    from active_memory.lessons import Author
    from active_memory.orchestrator import config_from_record, run_postmortem
    from active_memory.orchestrator.preview import CaptureSessions
    from active_memory.runlog.record import load_run_record
    from active_memory.store import open_store

    record = load_run_record(record_path)
    capture = CaptureSessions()
    async with open_store(str(record_path.parent / "lessons.sqlite3"), create=True) as store:
        if stored:
            lines = record_path.parent / "stored.jsonl"
            lines.write_text("".join(json.dumps(x) + "\n" for x in stored))
            lessons = list(read_lesson_lines(str(lines)))
            await store.import_lessons(lessons, Author(specialist="bench"))
        await run_postmortem(
            record,
            config_from_record(record),
            store,
            checkout=Checkout(checkout),
            sessions=capture,
            dry_run=True,
        )
    return capture.captured


def example(work: Path) -> tuple[Path, Path, list[Json]]:
    spec = importlib.util.spec_from_file_location(
        "make_checkout", ROOT / "examples" / "make_checkout.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    checkout = work / "acme-api"
    module.make_checkout(checkout)
    data = json.loads((ROOT / "examples" / "run.json").read_text())
    data["repository"]["checkout"] = str(checkout)
    path = work / "run.json"
    path.write_text(json.dumps(data))
    lines = (ROOT / "examples" / "lessons.jsonl").read_text().splitlines()
    return path, checkout, [json.loads(line) for line in lines if line.strip()]


def scenario(name: str, work: Path) -> tuple[Path, Path, list[Json]]:
    loaded = load(name)
    checkout = scenario_checkout(loaded, work / "checkout")
    data = dict(loaded.run)
    data["repository"] = {**data["repository"], "checkout": str(checkout)}
    path = work / "run.json"
    path.write_text(json.dumps(data))
    graph_hash = (data.get("graph") or {}).get("hash") or ""
    stored = [
        json.loads(json.dumps(x).replace("__GRAPH_HASH__", graph_hash))
        for x in loaded.spec.get("stored", [])
    ]
    return path, checkout, stored


def files_summary(task: Json) -> str:
    whole = cut = omitted = gone = 0
    for f in task.get("files", []):
        if not f.get("current"):
            gone += 1
        elif f.get("omitted"):
            omitted += 1
        elif f.get("truncated"):
            cut += 1
        elif f.get("content") is not None:
            whole += 1
    return f"{whole:>5} {cut:>4} {omitted:>4} {gone:>4}"


def budget_layout(work: Path) -> None:
    """Whole / cut / omitted files of one discovery task, fair and in order."""
    import subprocess
    from dataclasses import replace

    from active_memory.checkout import Checkout
    from active_memory.evidence import scan
    from active_memory.prompts import load_prompts
    from active_memory.runlog.record import load_run_record
    from active_memory.specialists.tasks import DEFAULT_BATCH_BYTES, DEFAULT_LIMITS, build_discovery
    from active_memory.specialists.tasks.choose import file_views
    from active_memory.specialists.tasks.gather_files import (
        CodeCache,
        failure_files,
        manifests,
        read_files,
        receipt_paths,
    )
    from active_memory.specialists.tasks.gather_run import citable_evidence

    root = work / "app"
    (root / "lib").mkdir(parents=True)
    line = '  def handle(conn, params), do: render(conn, :show, id: params["id"])\n'
    large = {f"lib/large_{n}.ex": size for n, size in enumerate((20_000, 35_000, 48_000, 60_000))}
    small = [f"lib/small_{n}.ex" for n in range(10)]
    for path, size in large.items():
        (root / path).write_text(line * (size // len(line)))
    for n, path in enumerate(small):
        (root / path).write_text(line * (4 + 2 * n))
    (root / "mix.exs").write_text("defmodule App.MixProject do\n  use Mix.Project\nend\n")
    (root / ".credo.exs").write_text("%{configs: []}\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=b@x", "-c", "user.name=b",
                 "commit", "-qm", "init"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    receipts = []
    minute = 0
    for _ in range(5):
        for path in large:
            receipts.append({"node": "worker", "tool": "Read", "paths": [path],
                             "at": f"2026-11-29T10:{minute:02d}:00Z"})  # fmt: skip
            minute += 1
    for path in small:
        receipts.append({"node": "worker", "tool": "Read", "paths": [path],
                         "at": f"2026-11-29T10:{minute:02d}:00Z"})  # fmt: skip
        minute += 1
    record_path = work / "layout.json"
    record_path.write_text(json.dumps({
        "schema": "active-memory/run@1", "run_id": "layout", "outcome": "succeeded",
        "repository": {"namespace": "repo:example/app", "checkout": str(root)},
        "receipts": receipts, "deliveries": [],
    }))  # fmt: skip
    record = load_run_record(record_path)
    checkout = Checkout(root)
    bound = DEFAULT_BATCH_BYTES - load_prompts().fixed_bytes("repository_discovery")
    task = build_discovery("repository_discovery", record, checkout=checkout, max_bytes=bound)
    cache = CodeCache(checkout)
    items = citable_evidence("repository_discovery", scan(record))
    touched = receipt_paths(items)
    failed = failure_files(record, cache)
    groups = (failed, manifests(cache, failed), touched)
    gathered = read_files(checkout, groups, DEFAULT_LIMITS, cache)
    in_order = [replace(f, group=index) for index, f in enumerate(gathered.files)]
    shown = {f.path for f in task.files}
    budget = sum(
        len(json.dumps(x, ensure_ascii=False).encode()) + 1
        for f in task.files
        for x in f.content or ()
    )
    before = file_views(in_order, DEFAULT_LIMITS, budget)

    def counts(files: Any, paths: list[str]) -> str:
        chosen = [f for f in files if f.path in paths]
        whole = sum(1 for f in chosen if f.content is not None and not f.truncated)
        cut = sum(1 for f in chosen if f.truncated)
        omitted = sum(1 for f in chosen if f.omitted)
        return f"{whole:>2} whole {cut:>2} cut {omitted:>2} omitted"

    print(f"\nfile budget, {len(shown)} files, {budget:,} rendered bytes of content:")
    for label, files in (("fair (now)", task.files), ("in order (before)", before)):
        print(
            f"  {label:18} large: {counts(files, list(large))}   small: {counts(files, small)}"
            f"   build files: {counts(files, ['mix.exs', '.credo.exs'])}"
        )


async def main() -> int:
    print(
        f"{'run':28} {'specialist':24} {'task B':>8} {'indented':>9} {'ratio':>6} "
        f"{'prompt B':>9}  whole  cut omit gone"
    )
    compact_total = indented_total = 0
    for label in ["example", *names()]:
        with tempfile.TemporaryDirectory() as temporary:
            work = Path(temporary)
            path, checkout, stored = example(work) if label == "example" else scenario(label, work)
            questions = await captured(path, checkout, stored)
        for question in questions:
            task = question.input
            assert isinstance(task, dict)
            compact = len(json.dumps(task, ensure_ascii=False, separators=(",", ":")).encode())
            indented = len(json.dumps(task, ensure_ascii=False, indent=2).encode())
            compact_total += compact
            indented_total += indented
            print(
                f"{label:28} {question.specialist:24} {compact:>8,} {indented:>9,} "
                f"{indented / compact:>6.2f} {len(question.prompt.encode()):>9,}  "
                + files_summary(task)
            )
    print(
        f"\nall tasks: {compact_total:,} bytes compact, {indented_total:,} indented: "
        f"indented costs {indented_total / compact_total - 1:.0%} more"
    )
    with tempfile.TemporaryDirectory() as temporary:
        budget_layout(Path(temporary))
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
