"""The web view's lessons list at scale: server time of each page, in process.

    .venv/bin/python bench/ui_list_bench.py                      # 10,000 lessons, median of 7
    .venv/bin/python bench/ui_list_bench.py --lessons 2000 --runs 9
    .venv/bin/python bench/ui_list_bench.py --postgres postgresql://…   # on PostgreSQL: a
                                            # database of its own on that server, dropped after

A store of N lessons over 12 repositories, three of them with a real git checkout here
(known to this machine, known_checkouts.py) whose lessons cite lines of their files,
fingerprinted at publish as a postmortem does; 5 % of those files then change. The app
is `active-memory ui`'s own (`create_app`), called through Starlette's test client:
the figure is what the server spends on a request (store reads, staleness, rendering),
without a network or a browser.

Baselines from the same run: a bare `python -c pass` (the figures are ratios to it)
and the login page (the same app, template and headers, no store read). Figures: the
first list page after a change to a lesson (the view orders its lessons again; the
goal: 300 ms) and again (kept in order), the last page, a search, the stale filter
(every lesson judged against its repository's checkout), pages of 200 and the API's
largest, and a lesson's page. Never a timed test.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from active_memory.checkout import Checkout
from active_memory.known_checkouts import remember
from active_memory.lessons import (
    Associations,
    Author,
    Card,
    Citation,
    CreateLesson,
    Evidence,
    RepositoryScope,
    Tombstone,
)
from active_memory.orchestrator.publish import fingerprinted
from active_memory.store import open_store

TOKEN = "bench-token-" + "x" * 30
REPOSITORIES = 12
CHECKOUTS = 3
FILES = 100


def _checkout(root: Path, namespace: str) -> Path:
    for n in range(FILES):
        path = root / "src" / f"m{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"value_{n}_{line} = {line}\n" for line in range(1, 41)))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    url = "https://" + namespace.removeprefix("repo:") + ".git"
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", url], check=True)
    return root


def seed(location: str, folder: Path, count: int, env: dict[str, str]) -> list[Path]:
    """N lessons; the first `CHECKOUTS` repositories have checkouts here (known to this
    machine), whose cited files then change for 5 % of their lessons."""
    names = [f"repo:github.com/acme/service-{n}" for n in range(REPOSITORIES)]
    roots = [_checkout(folder / f"service-{n}", names[n]) for n in range(CHECKOUTS)]
    for n, root in enumerate(roots):
        remember(names[n], root, "session", env)
    by_repository: dict[int, list[CreateLesson]] = {}
    for n in range(count):
        repo = n % REPOSITORIES
        path = f"src/m{n % FILES}.py"
        line = 1 + (n // FILES) % 38
        by_repository.setdefault(repo, []).append(CreateLesson(
            scope=RepositoryScope(repository=names[repo]), author=Author(specialist="bench"),
            card=Card(title=f"Regenerate client module {n} through the wrapper",
                      recommendation=f"After editing `{path}` run `make api-client` and commit.",
                      associations=Associations(files=[path])),
            evidence=Evidence(run_ids=[f"run-{n % 40}"], evidence_ids=[f"ev-tf-{n:012d}"],
                              citations=[Citation(path=path, lines=(line, line + 1))]),
        ))  # fmt: skip

    async def publish() -> None:
        async with open_store(location) as store:
            for repo, lessons in sorted(by_repository.items()):
                if repo < CHECKOUTS:
                    lessons = fingerprinted(lessons, Checkout(roots[repo]))
                await store.publish(lessons)

    anyio.run(publish, backend="asyncio")
    for root in roots:  # 5 of the 100 files change: their lessons are stale
        for n in range(0, FILES, 20):
            changed = root / "src" / f"m{n}.py"
            changed.write_text(changed.read_text().replace(f"value_{n}_1 ", f"value_{n}_one "))
    return roots


def _python_pass() -> float:
    """Milliseconds of a bare `python -c pass` (the baseline: it moves with the load)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return (time.perf_counter() - start) * 1000


def touch(location: str) -> None:
    """A change to one lesson (a defer, then its reactivation on the next call): the
    store's change version moves, so the view orders its lessons again."""
    from active_memory.lessons import AdaptLesson, DeferLesson

    async def change() -> None:
        async with open_store(location) as store:
            found = await store.get("L-2")
            assert found is not None and not isinstance(found, Tombstone)
            by, base = Author(specialist="bench"), found.revision
            if found.status == "active":
                await store.publish([DeferLesson(id="L-2", base_revision=base, author=by)])
            else:
                await store.publish(
                    [AdaptLesson(id="L-2", base_revision=base, card=found.card(), author=by)]
                )

    anyio.run(change, backend="asyncio")


def median_ms(
    client: object, path: str, runs: int, status: int = 200, before: Any = None
) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(runs):
        if before is not None:
            before()
        start = time.perf_counter()
        answer = client.get(path)  # type: ignore[attr-defined]
        times.append(time.perf_counter() - start)
        assert answer.status_code == status, (path, answer.status_code, answer.text[:300])
        size = len(answer.content)
    return statistics.median(times) * 1000, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--postgres", metavar="URL",
        help="a PostgreSQL server (any database of it): the bench makes a database of its "
        "own there and drops it after",
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {"ZEROSHOT_STATE_DIR": str(folder / "state")}
        location = str(folder / "lessons.sqlite3")
        if args.postgres:
            location = _database(args.postgres, create=True)
        try:
            _run(args, folder, env, location)
        finally:
            if args.postgres:
                _database(location, create=False)


def _database(url: str, *, create: bool) -> str:
    """A new database `am_bench_<random>` on `url`'s server (its URL), or drop the one
    `url` names."""
    import secrets
    from urllib.parse import urlsplit, urlunsplit

    import asyncpg

    parts = urlsplit(url)
    name = f"am_bench_{secrets.token_hex(6)}" if create else parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))

    async def run() -> None:
        conn = await asyncpg.connect(admin)
        try:
            if create:
                await conn.execute(f'CREATE DATABASE "{name}"')
            else:
                await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()

    anyio.run(run, backend="asyncio")
    return urlunsplit(parts._replace(path=f"/{name}"))


def _run(args: argparse.Namespace, folder: Path, env: dict[str, str], location: str) -> None:
    from starlette.testclient import TestClient

    from active_memory.ui.app import create_app
    from active_memory.ui.auth import Gate

    started = time.perf_counter()
    seed(location, folder, args.lessons, env)
    seeded = time.perf_counter() - started
    app = create_app(location, Gate(TOKEN), env=env)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        login, _ = median_ms(client, "/login", args.runs, 403)  # the form, no code
        bare = statistics.median(_python_pass() for _ in range(args.runs))
        client.post("/login", data={"token": TOKEN})
        last = -(-args.lessons // 50) * 50 - 50
        kind = "PostgreSQL" if args.postgres else "SQLite"
        print(f"{args.lessons:,} lessons over {REPOSITORIES} repositories ({kind}, seeded "
              f"in {seeded:.1f} s), median of {args.runs} requests")  # fmt: skip
        print(f"  {'python -c pass (baseline)':<40} {bare:8.1f} ms")
        print(f"  {'login page (baseline)':<40} {login:8.1f} ms")
        ms, size = median_ms(client, "/", args.runs, before=lambda: touch(location))
        print(f"  {'lessons, first page after a change':<40} {ms:8.1f} ms  "
              f"{ms / bare:5.2f} x python  ({size / 1024:,.1f} KB)")  # fmt: skip
        for name, path in (
            ("lessons, first page", "/"),
            ("lessons, last page", f"/?offset={last}"),
            ("lessons, search 'module 12'", "/?q=module+12"),
            ("lessons, stale filter (every lesson)", "/?stale=1"),
            ("lessons, 200 a page", "/?limit=200"),
            ("/api/lessons?limit=1000", "/api/lessons?limit=1000"),
            ("a lesson's page (stale)", "/lessons/L-1"),
        ):
            ms, size = median_ms(client, path, args.runs)
            print(f"  {name:<40} {ms:8.1f} ms  {ms / bare:5.2f} x python  "
                  f"({size / 1024:,.1f} KB)")  # fmt: skip


if __name__ == "__main__":
    main()
