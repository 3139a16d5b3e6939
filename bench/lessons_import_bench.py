"""Peak memory and time of `lessons import` (reading the file and writing the store).

    python bench/lessons_import_bench.py [--lines 20000]

Writes a JSON Lines file of N lessons (the example lessons, renumbered), then measures
the peak Python allocation (tracemalloc) of importing it into a new SQLite store:

- `baseline`: the import before issue 17 (the whole file as text, `str.splitlines`,
  `json.loads` per line, validation, the credential screen of that time from
  `bench/secrets_baseline.py`, every record held, one `import_lessons(list)`) —
  re-implemented here for the measure;
- `streamed`: what `lessons import` does now: `check_lesson_lines` (pass 1, no record
  kept), then `import_lessons(stream_lesson_lines(...))` (pass 2, written in chunks
  inside the one transaction).

Prints the peaks (one run under tracemalloc), the times (another run without it), their
ratios, and the file's size.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import secrets_baseline

from active_memory.commands.files import check_lesson_lines, stream_lesson_lines
from active_memory.lessons import Author, Lesson, Tombstone
from active_memory.store.sqlite import SqliteStore

EXAMPLE = Path(__file__).parents[1] / "examples" / "lessons.jsonl"
sys.path.insert(0, str(Path(__file__).parent))


def write_corpus(path: Path, lines: int) -> None:
    seeds = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]
    living = [s for s in seeds if s.get("status") != "retired"]
    with path.open("w", encoding="utf-8") as out:
        for n in range(lines):
            lesson = dict(living[n % len(living)])
            lesson["id"] = f"L-{n + 1}"
            out.write(json.dumps(lesson, ensure_ascii=False) + "\n")


PERSON = Author(specialist="person:bench")


def _import(records: Any) -> int:
    async def job() -> int:
        with tempfile.TemporaryDirectory() as folder:
            async with await SqliteStore.open(Path(folder) / "lessons.sqlite3") as store:
                report = await store.import_lessons(records, PERSON)
            return len(report.added)

    return anyio.run(job)


def streamed(source: str) -> int:
    check_lesson_lines(source)
    return _import(stream_lesson_lines(source))


def baseline(source: str) -> int:
    return _import(_baseline_records(source))


def _baseline_records(source: str) -> list[Any]:
    records: list[Any] = []
    text = Path(source).read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.strip():
            document = json.loads(line)
            model = Tombstone if document.get("status") == "retired" else Lesson
            record = model.model_validate(document)
            if isinstance(record, Lesson):
                fields = {"title", "recommendation", "associations", "evidence"}
                secrets_baseline.secret_reasons(record.model_dump(mode="json", include=fields), "")
            records.append(record)
    return records


def peak(read: Callable[[str], int], source: str) -> tuple[int, float, int]:
    gc.collect()
    started = time.perf_counter()
    count = read(source)
    elapsed = time.perf_counter() - started
    gc.collect()
    tracemalloc.start()
    read(source)
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top, elapsed, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=20000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "lessons.jsonl"
        write_corpus(path, args.lines)
        size = path.stat().st_size
        base = peak(baseline, str(path))
        new = peak(streamed, str(path))
    mib = 1024 * 1024
    print(f"file: {args.lines} lessons, {size / mib:.1f} MiB")
    print(f"{'reader':<10}{'peak MiB':>10}{'peak/file':>11}{'seconds':>9}")
    for name, (top, seconds, count) in (("baseline", base), ("streamed", new)):
        assert count == args.lines
        print(f"{name:<10}{top / mib:>10.1f}{top / size:>11.2f}{seconds:>9.2f}")
    print(f"streamed / baseline: peak {new[0] / base[0]:.2f}, time {new[1] / base[1]:.2f}")


if __name__ == "__main__":
    main()
