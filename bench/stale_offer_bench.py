"""What offering stale lessons to maintenance costs a postmortem (docs/staleness.md,
"Offered to maintenance").

    .venv/bin/python bench/stale_offer_bench.py                  # 10,000 lessons
    .venv/bin/python bench/stale_offer_bench.py --lessons 2000 --repeat 5

A real git checkout of 200 files of 300 lines (all tracked); N repository lessons, each
citing a 12-line range of one of them, fingerprinted with its recorded text as the
publish does. Rows (median of `--repeat`, wall and CPU):

- `find, per lesson (baseline)`: one `changed_citations` per lesson (one `check_paths`,
  so git calls, and one read per lesson), measured on 200 lessons and scaled to N: what
  a per-lesson check would cost;
- `find, one pass`: `stale_lessons` over the N lessons (one `check_paths` for every
  cited path, each file read and hashed once), nothing changed, then with 5 files changed;
- `postmortem, no checkout`: the run delivered nothing, maintenance has nothing to judge
  (the 10k bench's situation: no checkout, nothing offered);
- `postmortem, checkout, nothing changed`: the same with the checkout: the one pass runs,
  nothing is offered;
- `postmortem, checkout, 5 files changed`: about N/40 lessons stale, `STALE_OFFERED_MAX`
  offered with their diffs, kept, and published as adaptations to their own cards with
  fresh fingerprints (one transaction).

Never a timed test: nothing here fails a build.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from orchestrator_bench import NAMESPACE, PERSON, Fake, config, keep, record  # noqa: E402

from active_memory.checkout import Checkout  # noqa: E402
from active_memory.checkout.staleness import changed_citations, stale_lessons  # noqa: E402
from active_memory.lessons import Associations, Citation, Evidence, Lesson, RepositoryScope  # noqa: E402
from active_memory.orchestrator import run_postmortem  # noqa: E402
from active_memory.specialists.tasks import STALE_OFFERED_MAX  # noqa: E402
from active_memory.store.sqlite import SqliteStore  # noqa: E402

FILES = 200
LINES = 300
RANGE = 12
CHANGED_FILES = 5


def path_of(n: int) -> str:
    return f"src/mod{n % 20}/file{n}.py"


def text_of(n: int, changed: bool = False) -> str:
    mark = " changed" if changed else ""
    lines = range(1, LINES + 1)
    return "".join(f"def handler_{n}_{line}(x):  # line {line}{mark}\n" for line in lines)


def make_checkout(root: Path) -> None:
    for n in range(FILES):
        file = root / path_of(n)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text_of(n))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)


def lessons(count: int) -> list[Lesson]:
    """Lesson n cites 12 lines of file n % 200, fingerprinted with its recorded text."""
    texts = [text_of(n).encode().splitlines(keepends=True) for n in range(FILES)]
    found = []
    for n in range(1, count + 1):
        file = n % FILES
        start = 1 + (n * 7) % (LINES - RANGE)
        cited = b"".join(texts[file][start - 1 : start - 1 + RANGE])
        citation = Citation(
            path=path_of(file),
            lines=(start, start + RANGE - 1),
            sha256=hashlib.sha256(cited).hexdigest(),
            excerpt=cited.decode(),
        )
        found.append(
            Lesson(
                id=f"L-{n}",
                revision=1,
                scope=RepositoryScope(repository=NAMESPACE),
                title=f"Lesson {n} about handler {file}",
                recommendation=f"Run `make gen` after editing `{path_of(file)}` ({n}).",
                associations=Associations(folders=[f"src/mod{file % 20}"]),
                evidence=Evidence(run_ids=["run-0"], citations=[citation]),
            )
        )
    return found


def change(root: Path, on: bool) -> None:
    for n in range(CHANGED_FILES):
        (root / path_of(n)).write_text(text_of(n, changed=on))


def timed(function: Callable[[], Any]) -> tuple[float, float, Any]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = function()
    return time.perf_counter() - wall, time.process_time() - cpu, result


async def timed_async(function: Callable[[], Awaitable[Any]]) -> tuple[float, float, Any]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = await function()
    return time.perf_counter() - wall, time.process_time() - cpu, result


ROWS: dict[str, list[tuple[float, float]]] = {}


def add(row: str, wall: float, cpu: float) -> None:
    ROWS.setdefault(row, []).append((wall, cpu))


async def main(options: argparse.Namespace) -> None:
    count = options.lessons
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        root = folder / "repo"
        make_checkout(root)
        checkout = Checkout(root)
        corpus = lessons(count)
        sample = corpus[:200]
        for _ in range(options.repeat):
            change(root, False)
            wall, cpu, _ = timed(
                lambda: [changed_citations(checkout, x.evidence.citations) for x in sample]
            )
            scale = count / len(sample)
            add("find, per lesson (baseline)", wall * scale, cpu * scale)
            wall, cpu, found = timed(lambda: stale_lessons(checkout, corpus))
            assert found == {}
            add("find, one pass, nothing changed", wall, cpu)
            change(root, True)
            wall, cpu, found = timed(lambda: stale_lessons(checkout, corpus))
            stale = len(found)
            add("find, one pass, 5 files changed", wall, cpu)
            change(root, False)

            for row, given, changed in (
                ("postmortem, no checkout", None, False),
                ("postmortem, checkout, nothing changed", checkout, False),
                ("postmortem, checkout, 5 files changed", checkout, True),
            ):
                store = await SqliteStore.open(folder / f"s-{time.monotonic_ns()}.sqlite3")
                await store.import_lessons(corpus, PERSON)
                change(root, changed)

                async def postmortem(given: Checkout | None = given, store: Any = store) -> Any:
                    return await run_postmortem(
                        record([]), config(), store, checkout=given,
                        sessions=Fake({}, keep), journal_dir=folder / "j",
                    )  # fmt: skip

                wall, cpu, report = await timed_async(postmortem)
                await store.aclose()
                entry = report.specialists["repository_maintenance"]
                assert entry.status == "reconciled", entry.reason
                assert entry.manifest == (STALE_OFFERED_MAX if changed else 0)
                assert report.published.adapted == (STALE_OFFERED_MAX if changed else 0)
                add(row, wall, cpu)
            change(root, False)
    print(
        f"stale lessons offered to maintenance: {count:,} lessons citing 12 lines of "
        f"{FILES} files ({stale} stale when {CHANGED_FILES} files change); "
        f"median of {options.repeat}"
    )
    base = statistics.median(c for _, c in ROWS["postmortem, no checkout"])
    print(f"  {'':<42}{'wall':>10}{'CPU':>10}")
    for row, samples in ROWS.items():
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        tail = f"  {cpu / base:.2f}x (CPU)" if row.startswith("postmortem") else ""
        print(f"  {row:<42}{wall * 1000:8.1f} ms{cpu * 1000:8.1f} ms{tail}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    anyio.run(main, parser.parse_args())
