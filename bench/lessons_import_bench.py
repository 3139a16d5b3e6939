"""Peak memory of reading a `lessons export` file for `lessons import`.

    python bench/lessons_import_bench.py [--lines 20000]

Writes a JSON Lines file of N lessons (the example lessons, renumbered), then measures
the peak Python allocation (tracemalloc) of:

- `baseline`: the reading before issue 17 (the whole file as text, `str.splitlines`,
  `json.loads` per line, validation, the credential screen of that time from
  `bench/secrets_baseline.py`) — re-implemented here for the measure;
- `streamed`: `commands.files.read_lesson_lines` (the bounded reader's streamed lines).

Both keep the validated records (an import is all or nothing, so they are needed);
the difference is the file text and its list of lines. Prints the peaks (one run under
tracemalloc), the times (another run without it), their ratios, and the file's size.
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

import secrets_baseline

from active_memory.commands.files import read_lesson_lines
from active_memory.lessons import Lesson, Tombstone

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


def baseline(source: str) -> list[Any]:
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


def peak(read: Callable[[str], list[Any]], source: str) -> tuple[int, float, int]:
    gc.collect()
    started = time.perf_counter()
    count = len(read(source))
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
        streamed = peak(read_lesson_lines, str(path))
    mib = 1024 * 1024
    print(f"file: {args.lines} lessons, {size / mib:.1f} MiB")
    print(f"{'reader':<10}{'peak MiB':>10}{'peak/file':>11}{'seconds':>9}")
    for name, (top, seconds, count) in (("baseline", base), ("streamed", streamed)):
        assert count == args.lines
        print(f"{name:<10}{top / mib:>10.1f}{top / size:>11.2f}{seconds:>9.2f}")
    print(
        f"streamed / baseline: peak {streamed[0] / base[0]:.2f}, time {streamed[1] / base[1]:.2f}"
    )


if __name__ == "__main__":
    main()
