"""Information sufficiency of the specialists' tasks over the scenarios of
`tests/fixtures/scenarios/` (goal: 100%).

    .venv/bin/python bench/information_bench.py

For each scenario, the real postmortem runs dry with capture sessions (no model) on a
fresh git checkout of the scenario's files, and the bench counts how many of the paths,
identifiers and commands of each expected lesson are in the task its specialist received
(`tests/scenario_support.py: coverage`). The baseline, measured in the same run, is the
same tasks with their views of the code (`files`, `listing`) left out. It also prints the
size of every prompt the scenarios produced.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from scenario_support import asked, coverage, load, names

BASELINE_DROP = ("files", "listing")


async def measure() -> int:
    total = found = baseline = 0
    print(f"{'scenario':32} {'specialist':24} {'found':>7} {'no code':>8} {'prompt B':>9}")
    for name in names():
        scenario = load(name)
        with tempfile.TemporaryDirectory() as temporary:
            prompts = await asked(scenario, Path(temporary))
        for lesson in scenario.spec["expected"]:
            specialist = lesson["specialist"]
            prompt = prompts.get(specialist, "")
            hits, misses = coverage(lesson, prompt)
            without, _ = coverage(lesson, prompt, BASELINE_DROP)
            count = len(hits) + len(misses)
            total += count
            found += len(hits)
            baseline += len(without)
            size = len(prompt.encode("utf-8"))
            print(
                f"{name:32} {specialist:24} {len(hits):>3}/{count:<3} {len(without):>4}/{count:<3}"
                f" {size:>9,}" + (f"  missing: {', '.join(misses)}" if misses else "")
            )
    share = found / total if total else 1.0
    base = baseline / total if total else 1.0
    print(
        f"\n{len(names())} scenarios, {total} paths/identifiers/commands: "
        f"{found}/{total} in the tasks ({share:.0%}); without the code views {baseline}/{total} "
        f"({base:.0%})"
    )
    return 0 if found == total else 1


if __name__ == "__main__":
    sys.exit(anyio.run(measure))
