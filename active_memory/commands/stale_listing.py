"""`lessons list --stale`: each lesson judged against its own repository's checkout.

The checkouts are `--checkout DIR` (repeatable; each for its own namespace), the
checkout around the current directory, then the ones this machine knows
(`known_checkouts`). A lesson whose repository has none here is not judged: it is not
listed, and a line on stderr (`not_judged` in `--json`) names the repositories and says
how to judge them.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Sequence
from typing import Any

from active_memory.checkout.by_repository import Judgement
from active_memory.known_checkouts import KnownCheckouts


def known_checkouts(args: argparse.Namespace) -> KnownCheckouts:
    """The checkouts `--stale` compares with; a `--checkout` that is not one is a usage
    error (exit 2)."""
    from active_memory.checkout.git import NotACheckout, worktree_root
    from active_memory.errors import UsageError

    given = list(args.checkout or [])
    roots = []
    for folder in given:
        try:
            roots.append(worktree_root(folder))
        except NotACheckout as exc:
            raise UsageError(
                f"--stale compares cited code with a checkout; --checkout {folder} is not one "
                f"({exc.reason}): run it inside the repository or pass --checkout DIR"
            ) from None
    if not given:
        # Outside a checkout, the checkouts this machine knows may still judge them all.
        with contextlib.suppress(NotACheckout):
            roots.append(worktree_root("."))
    return KnownCheckouts(roots)


async def judged(store: Any, query: Any, known: KnownCheckouts) -> Judgement:
    """Every lesson of `query` judged against its repository's checkout (in a thread)."""
    import anyio.to_thread

    from active_memory.checkout.by_repository import judge

    lessons = await store.select(query)
    return await anyio.to_thread.run_sync(judge, lessons, known)


def not_judged(judgement: Judgement) -> list[dict[str, Any]]:
    """Per repository whose lessons were not judged: how many, and why."""
    counts: dict[str, int] = {}
    for why in judgement.unjudged.values():
        counts[why] = counts.get(why, 0) + 1
    return [{"why": why, "lessons": n} for why, n in sorted(counts.items())]


def stale_json(changed: Sequence[Any]) -> list[dict[str, Any]]:
    """A stale lesson's changed citations as `--json` shows them."""
    return [
        {"path": c.citation.path, "lines": c.citation.lines, "why": c.why}
        | ({"path_now": c.path_now} if c.path_now else {})
        for c in changed
    ]


def note(judgement: Judgement) -> str:
    """The stderr line about lessons that were not judged ('' when every one was)."""
    missing = not_judged(judgement)
    if not missing:
        return ""
    parts = "; ".join(f"{m['lessons']} lessons: {m['why']}" for m in missing)
    return (
        f"not judged ({parts}): pass --checkout DIR for each repository, or run a session "
        "in its checkout so that this machine learns where it is"
    )
