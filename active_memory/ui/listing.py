"""The lessons page and `/api/lessons`: filters, natural ID order, one page at a time.

The page is cut on the server: a store of 10,000 lessons sends one page of rows (50
by default), never all of them, and only the page's lessons are read whole. Filters
read no more than they need, never a model per lesson (store/listing.py): the order
and the count from summaries (ID, status, scope, title); a text search from the cards'
text; a run or an evidence item from the evidence rows holding it; the stale filter
from the citations, judged against each repository's checkout (one pass per
repository, checkout/by_repository.py). Without the stale filter only the page's rows
are judged.

Order: natural ID order (`L-2` before `L-10`, natural_order.py). Status: `""` means
living (active and deferred), `all` every status, else exactly that status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from active_memory.errors import UsageError
from active_memory.known_checkouts import KnownCheckouts
from active_memory.lessons import GraphScope, Lesson, Tombstone
from active_memory.natural_order import natural_key
from active_memory.store.effectiveness import Effectiveness
from active_memory.store.lesson_store import LessonStore
from active_memory.store.models import LessonQuery, LessonSummary

STATUSES = ("active", "deferred", "retired", "all")
"""The status filter's values beside `""` (living: active and deferred)."""
EFFECTIVENESS_FILTERS = ("delivered", "recurred", "never-delivered")
PAGE_SIZES = (25, 50, 100, 200)
"""Page sizes the page offers; `/api/lessons` takes any `limit` up to `LIMIT_MAX`."""
PAGE_SIZE = 50
LIMIT_MAX = 1000
SIDEBAR_MAX = 100
"""Repositories and graph nodes listed beside the lessons (most lessons first)."""


@dataclass(frozen=True)
class ListFilters:
    """The lessons page's filters; empty strings mean any."""

    q: str = ""
    status: str = ""
    kind: str = ""
    repository: str = ""
    graph: str = ""
    node: str = ""
    effectiveness: str = ""
    stale: bool = False
    run: str = ""
    evidence: str = ""

    def query(self) -> LessonQuery:
        """The store query these filters narrow to (the rest filter after)."""
        return LessonQuery(
            repository=self.repository or None,
            graph_hash=self.graph or None,
            node=self.node or None,
            kind=self.kind or None,
            include_deferred=self.status in ("", "deferred", "all"),
            include_retired=self.status in ("retired", "all"),
        )

    def words(self) -> list[str]:
        """The search words, lower case."""
        return self.q.lower().split()

    def to_params(self) -> dict[str, str]:
        """The filters as query parameters (the ones set), for paging links."""
        found = {
            "q": self.q, "status": self.status, "kind": self.kind,
            "repository": self.repository, "graph": self.graph, "node": self.node,
            "effectiveness": self.effectiveness, "stale": "1" if self.stale else "",
            "run": self.run, "evidence": self.evidence,
        }  # fmt: skip
        return {key: value for key, value in found.items() if value}


def filters_of(params: Mapping[str, str]) -> ListFilters:
    """The filters a request names; an unknown status, kind or effectiveness is ignored."""
    return ListFilters(
        q=params.get("q", "")[:200],
        status=_one_of(params.get("status", ""), STATUSES),
        kind=_one_of(params.get("kind", ""), ("repository", "graph")),
        repository=params.get("repository", ""),
        graph=params.get("graph", ""),
        node=params.get("node", ""),
        effectiveness=_one_of(params.get("effectiveness", ""), EFFECTIVENESS_FILTERS),
        stale=params.get("stale", "") == "1",
        run=params.get("run", ""),
        evidence=params.get("evidence", ""),
    )


def _one_of(value: str, allowed: tuple[str, ...]) -> str:
    return value if value in allowed else ""


@dataclass(frozen=True)
class Page:
    """Which rows: `offset` rows skipped, at most `limit` shown."""

    offset: int = 0
    limit: int = PAGE_SIZE


def page_of(params: Mapping[str, str], *, default: int = PAGE_SIZE) -> Page:
    """`offset` and `limit` from a request; `UsageError` (400) naming a bad one."""
    return Page(
        offset=_whole(params, "offset", 0, None),
        limit=_whole(params, "limit", default, LIMIT_MAX),
    )


def _whole(params: Mapping[str, str], name: str, default: int, top: int | None) -> int:
    text = params.get(name, "")
    if text == "":
        return default
    low = 1 if name == "limit" else 0
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low or (top is not None and value > top):
        bound = f"{low}..{top}" if top is not None else f"at least {low}"
        raise UsageError(f"{name}: expected a whole number {bound}, got {text!r}")
    return value


def _matches_effectiveness(counters: Effectiveness, wanted: str) -> bool:
    if wanted == "delivered":
        return counters.runs_delivered > 0
    if wanted == "recurred":
        return counters.recurred_when_delivered + counters.recurred_when_not_delivered > 0
    if wanted == "never-delivered":
        return counters.runs_delivered == 0
    return True


def scope_json(lesson: Lesson | Tombstone) -> dict[str, Any]:
    """The scope as shown: kind, repository, graph hash and node."""
    scope = lesson.scope
    if isinstance(scope, GraphScope):
        return {"kind": "graph", "repository": scope.repository or "",
                "graph_hash": scope.graph_hash, "node": scope.node}  # fmt: skip
    return {"kind": "repository", "repository": scope.repository, "graph_hash": "", "node": ""}


async def ordered_summaries(store: LessonStore, query: LessonQuery) -> list[LessonSummary]:
    """The summaries of `query`'s lessons in natural ID order (what the view keeps until
    the store's change version moves: web.py, `by_version`)."""
    return sorted(await store.summaries(query), key=lambda s: natural_key(s.id))


async def lesson_list(
    store: LessonStore,
    filters: ListFilters,
    page: Page,
    known: KnownCheckouts,
    ordered: list[LessonSummary] | None = None,
) -> dict[str, Any]:
    """One page of the lessons matching `filters`, in natural ID order, with their
    scope, effectiveness counters and staleness (each judged against its repository's
    checkout); `total` counts every match. `ordered`: `ordered_summaries` of the
    filters' query, when the caller keeps them."""
    import anyio.to_thread

    from active_memory.checkout.by_repository import judge, judge_cited

    query = filters.query()
    if ordered is None:
        ordered = await ordered_summaries(store, query)
    summaries = [s for s in ordered if _status_ok(s.status, filters)]
    ids = [s.id for s in summaries]
    words = filters.words()
    if words:  # the card's text and associations, read without building lessons
        found = {t.id for t in await store.texts(query) if all(w in t.text for w in words)}
        ids = [i for i in ids if i in found]
    for kind, value in (("run", filters.run), ("evidence", filters.evidence)):
        if value:
            held = await store.holding(kind, value)
            ids = [i for i in ids if i in held]
    judgement = None
    if filters.stale:
        repository = {s.id: s.repository or None for s in summaries}
        by_repository: dict[str | None, dict[str, Any]] = {}
        for lesson_id, cited in (await store.citations(ids)).items():
            by_repository.setdefault(repository[lesson_id], {})[lesson_id] = cited
        judgement = await anyio.to_thread.run_sync(judge_cited, by_repository, known)
        stale_ids = judgement.stale()
        ids = [i for i in ids if i in stale_ids]
    counters: dict[str, Effectiveness] = {}
    blank = Effectiveness()
    if filters.effectiveness:
        counters = await store.effectiveness(ids)
        wanted = filters.effectiveness
        ids = [i for i in ids if _matches_effectiveness(counters.get(i, blank), wanted)]
    shown = ids[page.offset : page.offset + page.limit]
    wide = LessonQuery(ids=tuple(shown), include_retired=True)
    by_id = {x.id: x for x in await store.select(wide)} if shown else {}
    lessons = [by_id[i] for i in shown if i in by_id]
    if judgement is None:
        judgement = await anyio.to_thread.run_sync(judge, lessons, known)
    if not filters.effectiveness:
        counters = await store.effectiveness(shown) if shown else {}
    stale = judgement.stale()
    rows = [
        {
            "id": lesson.id,
            "revision": lesson.revision,
            "status": lesson.status,
            "title": lesson.title if isinstance(lesson, Lesson) else None,
            "scope": scope_json(lesson),
            "effectiveness": counters.get(lesson.id, blank).to_json(),
            "stale": _stale_rows(stale.get(lesson.id, [])),
            "not_judged": judgement.unjudged.get(lesson.id),
        }
        for lesson in lessons
    ]
    return {
        "lessons": rows, "count": len(rows), "total": len(ids),
        "offset": page.offset, "limit": page.limit,
        "checkouts": {ns: str(root) if root else None for ns, root in judgement.roots.items()},
    }  # fmt: skip


def _status_ok(status: str, filters: ListFilters) -> bool:
    """The status filter, exactly: living is active and deferred, `all` is every one."""
    if filters.status in ("", "all"):
        return filters.status == "all" or status != "retired"
    return status == filters.status


def _stale_rows(changed: list[Any]) -> list[dict[str, Any]]:
    out = []
    for c in changed:
        lines = list(c.citation.lines or ()) or None
        entry: dict[str, Any] = {"path": c.citation.path, "lines": lines, "why": c.why}
        if c.path_now:
            entry["path_now"] = c.path_now
        out.append(entry)
    return out


def paging(total: int, page: Page) -> dict[str, Any]:
    """The page's place among all rows, for the template's links: first and last row
    shown, the offsets of the first, previous, next and last pages (None: none)."""
    last = max(0, (total - 1) // page.limit * page.limit)
    return {
        "first_row": page.offset + 1 if total else 0,
        "last_row": min(total, page.offset + page.limit),
        "number": page.offset // page.limit + 1,
        "pages": max(1, -(-total // page.limit)),
        "first": 0 if page.offset > 0 else None,
        "previous": max(0, page.offset - page.limit) if page.offset > 0 else None,
        "next": page.offset + page.limit if page.offset + page.limit < total else None,
        "last": last if page.offset < last else None,
    }


async def scope_groups(store: LessonStore, most: int | None = None) -> dict[str, Any]:
    """Counts of living lessons per repository and per graph node (the overview); with
    `most`, only that many of each (those with most lessons), and how many more."""
    return groups_of(await store.summaries(LessonQuery()), most)


def groups_of(living: list[LessonSummary], most: int | None = None) -> dict[str, Any]:
    """`scope_groups` of the living lessons' summaries already read."""
    repositories: dict[str, int] = {}
    nodes: dict[tuple[str, str], int] = {}
    for summary in living:
        if summary.scope_kind == "graph":
            key = (summary.graph_hash, summary.node)
            nodes[key] = nodes.get(key, 0) + 1
        else:
            repositories[summary.repository] = repositories.get(summary.repository, 0) + 1
    repos = sorted(repositories.items())
    graph = sorted(nodes.items())
    more = {"repositories": 0, "nodes": 0}
    if most is not None:
        if len(repos) > most:
            more["repositories"] = len(repos) - most
            repos = sorted(sorted(repos, key=lambda r: -r[1])[:most])
        if len(graph) > most:
            more["nodes"] = len(graph) - most
            graph = sorted(sorted(graph, key=lambda n: -n[1])[:most])
    return {
        "repositories": [{"repository": name, "count": count} for name, count in repos],
        "nodes": [{"graph_hash": g, "node": n, "count": count} for (g, n), count in graph],
        **({"more": more} if most is not None else {}),
    }
