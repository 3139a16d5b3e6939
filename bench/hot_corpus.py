"""The hard case for recall (issue 28): a store shaped like a big repository's.

- a hot folder, `src/core`, holding 30% of the lessons: half of them on one of its 97
  files, half on the folder itself, each naming one of 3,000 `Core…` identifiers;
- keywords shared as in real repositories: every hot lesson's group holds `core`, a
  tenth of them the group `core` + `py` (which every `Read` of a `.py` file under
  `src/core` satisfies), the rest `checkout` + one of 50 terms;
- card sizes mixed: recommendations of 200 to 640 bytes, and every 997th lesson (in a
  cold folder) a few words only, so the store's smallest card is far smaller than the
  cards a hot call matches: the case where a walk bounded by the global minimum visited
  a whole tier.

`seed(path, count)` writes such a store through the real store (a page of 20,000
lessons per publish); `hot_files()` are the 97 files every bench call reads.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

NAMESPACE = "repo:github.com/acme/api"
HOT = "src/core"
HOT_FILES = 97
BATCH = 20_000


def hot_files() -> list[str]:
    """The hot folder's files, as the bench reads them."""
    return [f"{HOT}/mod{n}.py" for n in range(HOT_FILES)]


def lesson(n: int) -> dict[str, Any]:
    """Title, recommendation and associations of lesson number `n` (0-based)."""
    size = 200 + (n * 7919) % 441
    text = ("Regenerate the client before editing the checked-in copy; " * 12)[:size].strip()
    if n % 997 == 996:
        return {"title": f"Tiny {n}", "recommendation": "Run it.",
                "associations": {"folders": [f"docs/tiny{n % 7}"]}}  # fmt: skip
    if n % 10 < 3:  # the hot folder
        associations: dict[str, Any] = (
            {"files": [f"{HOT}/mod{n % HOT_FILES}.py"]} if n % 2 else {"folders": [HOT]}
        )
        associations["identifiers"] = [f"Core{n % 3000}"]
        associations["keywords"] = [["core", "py"] if n % 10 == 0 else ["core", f"topic{n % 40}"]]
        return {"title": f"Core lesson {n} about mod{n % HOT_FILES}", "recommendation": text,
                "associations": associations}  # fmt: skip
    return {
        "title": f"Lesson {n} about package {n % 3000}",
        "recommendation": text,
        "associations": {
            "files": [f"src/pkg{n % 3000}/m{n}.py"],
            "folders": [f"src/pkg{n % 3000}"],
            "identifiers": [f"Handler{n}"],
            "keywords": [["checkout", f"term{n % 50}"]],
        },
    }


def seed(path: Path, count: int, *, progress: bool = True) -> float:
    """A SQLite store of `count` lessons of this shape at `path`; seconds it took."""
    import anyio

    from active_memory.lessons import Associations, Author, Card, CreateLesson, RepositoryScope
    from active_memory.store.sqlite import SqliteStore

    author = Author(specialist="bench")
    scope = RepositoryScope(repository=NAMESPACE)

    def batch(start: int) -> list[CreateLesson]:
        found = []
        for n in range(start, min(count, start + BATCH)):
            given = lesson(n)
            card = Card(title=given["title"], recommendation=given["recommendation"],
                        associations=Associations(**given["associations"]))  # fmt: skip
            found.append(CreateLesson(scope=scope, author=author, card=card))
        return found

    async def run() -> None:
        store = await SqliteStore.open(path)
        try:
            for start in range(0, count, BATCH):
                await store.publish(batch(start))
                if progress:
                    print(f"  seeded {min(count, start + BATCH):,} lessons", flush=True)
        finally:
            await store.aclose()

    began = time.perf_counter()
    anyio.run(run)
    return time.perf_counter() - began
