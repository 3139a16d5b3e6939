"""Stale-card check at delivery: what checking cited code costs the bounded walk.

    .venv/bin/python bench/stale_bench.py                # 10,000 lessons, 2 KB budget
    .venv/bin/python bench/stale_bench.py --lessons 100000 --repeat 400

Every lesson cites a 12-line range of one of 200 real files in a temporary checkout,
fingerprinted as the publish does. One tool call (a `Read` under a folder that many
lessons name) is answered in process, as `serve` and a hook do after matching:

- `no check`: the bounded walk without the stale check (what delivery did before);
- `no citations`: the same walk with the check, over cards that cite nothing;
- `unchanged, cache warm`: the check over cards whose cited code is unchanged, the
  per-process digest cache already filled (a resident server's steady state);
- `unchanged, cache cold`: the same with the cache emptied before each call (a hook
  process: every admitted card's range hashed once);
- `moved, cache cold` / `warm`: every cited range two lines further down: found by
  its fingerprint (a search of its file) and not framed;
- `changed, cache cold` / `warm`: every admitted card stale (its file searched in
  vain), framed with its line.

Each figure is p50/p99 µs and its ratio to `no check` from the same run. Never a
timed test: nothing here fails a build.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from active_memory.recall import stale  # noqa: E402
from active_memory.recall.build_from_rows import build  # noqa: E402
from active_memory.recall.frame import select  # noqa: E402
from active_memory.recall.harness import parse_payload  # noqa: E402
from active_memory.recall.index import SnapshotIndex  # noqa: E402
from active_memory.recall.ledger import stale_marker  # noqa: E402
from active_memory.recall.match import iter_matches  # noqa: E402
from active_memory.recall.signals import extract_signals  # noqa: E402

BUDGET = 2048
FILES = 200
RECOMMENDATION = "Run the generator before editing; the checked-in copy is derived."


def checkout(root: Path) -> None:
    """200 files of 300 lines each under src/modN/."""
    for n in range(FILES):
        folder = root / "src" / f"mod{n % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file{n}.py").write_text(
            "".join(f"def handler_{n}_{line}(x):  # line {line}\n" for line in range(1, 301))
        )


def rows(root: Path, count: int, *, cited: bool) -> list[tuple[Any, ...]]:
    """Change rows (store/changes.py shape) of `count` lessons, each citing 12 lines."""
    digests: dict[tuple[int, int], str] = {}
    out = []
    for n in range(count):
        file, first = n % FILES, 1 + (n % 24) * 12
        path = f"src/mod{file % 20}/file{file}.py"
        if (file, first) not in digests:
            lines = (root / path).read_bytes().splitlines(keepends=True)[first - 1 : first + 11]
            digests[file, first] = hashlib.sha256(b"".join(lines)).hexdigest()
        citations = [[path, first, first + 11, digests[file, first]]]  # as the store reads them
        assoc = {"folders": ["src"], "files": [path]}
        listed = json.dumps(citations) if cited else None
        out.append((f"L-{n + 1}", 1, "active", f"Lesson {n}", RECOMMENDATION, json.dumps(assoc),
                    "2026-11-03T10:00:00+00:00", listed))  # fmt: skip
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(
    index: SnapshotIndex, signals: Any, mark: Any, repeat: int, before: Callable[[], None]
) -> tuple[float, float, int]:
    samples = []
    admitted = 0
    for _ in range(repeat):
        before()
        start = time.perf_counter()
        cards, _, _ = select(
            iter_matches(index, signals), set(), BUDGET, floor=index.min_card, mark=mark
        )
        samples.append(time.perf_counter() - start)
        admitted = len(cards)
    return pct(samples, 0.5) * 1e6, pct(samples, 0.99) * 1e6, admitted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=400)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="stale-bench-"))
    try:
        root = work / "checkout"
        checkout(root)
        read = {"file_path": f"{root}/src/mod3/x.py"}
        payload = {"session_id": "b", "cwd": str(root), "hook_event_name": "PreToolUse",
                   "tool_name": "Read", "tool_input": read}  # fmt: skip
        signals = extract_signals(parse_payload("claude", payload), str(root))
        indexes = {}
        for name, cited in (("plain", False), ("cited", True)):
            path = work / f"{name}.gen"
            build(None, rows(root, args.lessons, cited=cited), {}, matched=True, path=str(path))
            indexes[name] = SnapshotIndex.open(str(path))
        mark = stale_marker(str(root))

        def nothing() -> None:
            pass

        cases: list[tuple[str, SnapshotIndex, Any, Callable[[], None]]] = [
            ("no check", indexes["cited"], None, nothing),
            ("no citations", indexes["plain"], mark, nothing),
            ("unchanged, cache warm", indexes["cited"], mark, nothing),
            ("unchanged, cache cold", indexes["cited"], mark, stale._places.clear),
        ]
        print(f"stale check at delivery, {args.lessons:,} lessons, {BUDGET} B budget, "
              f"{args.repeat} calls each (µs)")  # fmt: skip
        figures = []
        for label, index, marker, before in cases:
            timed(index, signals, marker, 20, before)  # warm up
            figures.append((label, *timed(index, signals, marker, args.repeat, before)))
        with_cited = indexes["cited"]
        for file in root.rglob("*.py"):  # every cited range moves down two lines
            file.write_text("import os\nimport sys\n" + file.read_text())
        for label, before in (("moved, cache cold", stale._places.clear),
                              ("moved, cache warm", nothing)):  # fmt: skip
            timed(with_cited, signals, mark, 20, before)
            figures.append((label, *timed(with_cited, signals, mark, args.repeat, before)))
        for file in root.rglob("*.py"):  # every cited range changes
            file.write_text(file.read_text().replace("(x)", "(y)"))
        for label, before in (("changed, cache cold", stale._places.clear),
                              ("changed, cache warm", nothing)):  # fmt: skip
            timed(with_cited, signals, mark, 20, before)
            figures.append((label, *timed(with_cited, signals, mark, args.repeat, before)))
        base50, base99 = figures[0][1], figures[0][2]
        print(f"  {'case':<24} {'cards':>5} {'p50':>8} {'p99':>8} {'p50 x':>7} {'p99 x':>7}")
        for label, p50, p99, cards in figures:
            print(f"  {label:<24} {cards:>5} {p50:>8.1f} {p99:>8.1f} "
                  f"{p50 / base50:>7.2f} {p99 / base99:>7.2f}")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
