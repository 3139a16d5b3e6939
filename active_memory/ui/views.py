"""What the web view shows, gathered from the store as plain data (also the JSON API).

Every function returns JSON-ready dicts: the HTML templates and `/api/...` render the
same documents, so a script sees exactly what a person sees.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.lessons import Citation, GraphScope, HistoryEntry, Lesson, Tombstone
from active_memory.recall.frame import frame, render_card
from active_memory.store.effectiveness import Effectiveness, EffectivenessHistory
from active_memory.store.lesson_store import LessonStore
from active_memory.store.models import LessonQuery

CITED_LINES_MAX = 80
"""Cited lines shown per citation; a longer range is cut with a note."""

CITED_FILE_MAX_BYTES = 1024 * 1024
"""A cited file larger than this is not read for display."""

STATUSES = ("active", "deferred", "retired")
EFFECTIVENESS_FILTERS = ("delivered", "recurred", "never-delivered")


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

    def query(self) -> LessonQuery:
        """The store query these filters narrow to (text and counters filter after)."""
        return LessonQuery(
            repository=self.repository or None,
            graph_hash=self.graph or None,
            node=self.node or None,
            kind=self.kind or None,
            include_retired=self.status in ("", "retired"),
        )


def scope_json(lesson: Lesson | Tombstone) -> dict[str, Any]:
    """The scope as shown: kind, repository, graph hash and node."""
    scope = lesson.scope
    if isinstance(scope, GraphScope):
        return {
            "kind": "graph",
            "repository": scope.repository or "",
            "graph_hash": scope.graph_hash,
            "node": scope.node,
        }
    return {"kind": "repository", "repository": scope.repository, "graph_hash": "", "node": ""}


def agent_card(lesson: Lesson, root: Path | None = None, written: str = "") -> str:
    """The card exactly as an agent receives it alone: framed by recall's own code (with
    its stale line when its cited code changed under `root`; `written`: the revision's
    date)."""
    card = render_card(lesson.id, lesson.revision, lesson.title, lesson.recommendation)
    if root is not None:
        from active_memory.recall import stale

        citations = [c.model_dump(mode="json") for c in lesson.evidence.citations]
        cited = stale.cited_of_citations(written, citations)
        ranges = stale.changed(cited, str(root)) if cited is not None else []
        if cited is not None and ranges:
            card = stale.framed(card, stale.note(cited, ranges))
    return frame([card])


def _matches_text(lesson: Lesson | Tombstone, words: list[str]) -> bool:
    if isinstance(lesson, Tombstone):
        haystack = lesson.id.lower()
    else:
        a = lesson.associations
        haystack = " ".join(
            [
                lesson.id,
                lesson.title,
                lesson.recommendation,
                *a.files,
                *a.folders,
                *a.identifiers,
                *(" ".join(group) for group in a.keywords),
                *a.commands,
            ]
        ).lower()
    return all(word in haystack for word in words)


def _matches_effectiveness(counters: Effectiveness, wanted: str) -> bool:
    if wanted == "delivered":
        return counters.runs_delivered > 0
    if wanted == "recurred":
        return counters.recurred_when_delivered + counters.recurred_when_not_delivered > 0
    if wanted == "never-delivered":
        return counters.runs_delivered == 0
    return True


def _stale(
    root: Path | None, lessons: list[Any], *, diffs: bool = False
) -> dict[str, list[dict[str, Any]]] | None:
    """Per stale lesson, its changed citations (`diffs`: with how they changed, the
    checkout's one view of it); None without a checkout (unknown)."""
    found = _code_now(root, lessons, diffs=diffs)
    return None if found is None else found[0]


def _code_now(
    root: Path | None, lessons: list[Any], *, diffs: bool = False
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[tuple[str, Any], Any]]] | None:
    """Per lesson, its changed citations (as `_stale` gives them) and where its moved
    ones are now (by the recorded `(path, lines)`); None without a checkout."""
    if root is None:
        return None
    from active_memory.checkout.citations import Checkout
    from active_memory.checkout.staleness import cited_now, shown

    checkout = Checkout(root)
    cited = {x.id: x.evidence.citations for x in lessons if isinstance(x, Lesson)}
    stale: dict[str, list[dict[str, Any]]] = {}
    moved: dict[str, dict[tuple[str, Any], Any]] = {}
    for lesson_id, now in cited_now(checkout, cited).items():
        if now.moved:
            moved[lesson_id] = {(m.citation.path, m.citation.lines): m.now for m in now.moved}
        if not now.changed:
            continue
        stale[lesson_id] = []
        for c in now.changed:
            entry: dict[str, Any] = {
                "path": c.citation.path,
                "lines": list(c.citation.lines or ()) or None,
                "why": c.why,
            }
            if c.path_now:
                entry["path_now"] = c.path_now
            if diffs:
                view = shown(checkout, c)
                if view.diff:
                    entry["diff"], entry["diff_cut"] = list(view.diff), view.cut
                if view.now:
                    entry["now"] = list(view.now)
                if view.note:
                    entry["note"] = view.note
            stale[lesson_id].append(entry)
    return stale, moved


async def lesson_list(
    store: LessonStore, filters: ListFilters, root: Path | None = None
) -> dict[str, Any]:
    """The lessons matching `filters`, with their scope and effectiveness counters, and
    (with a checkout) whether their cited code changed since they were published."""
    import anyio.to_thread

    found = await store.select(filters.query())
    if filters.status:
        found = [x for x in found if x.status == filters.status]
    words = filters.q.lower().split()
    if words:
        found = [x for x in found if _matches_text(x, words)]
    stale = await anyio.to_thread.run_sync(_stale, root, found)
    if filters.stale:
        found = [x for x in found if stale is not None and x.id in stale]
    counters = await store.effectiveness([x.id for x in found])
    blank = Effectiveness()
    if filters.effectiveness:
        found = [
            x
            for x in found
            if _matches_effectiveness(counters.get(x.id, blank), filters.effectiveness)
        ]
    rows = []
    for lesson in found:
        rows.append(
            {
                "id": lesson.id,
                "revision": lesson.revision,
                "status": lesson.status,
                "title": lesson.title if isinstance(lesson, Lesson) else None,
                "scope": scope_json(lesson),
                "effectiveness": counters.get(lesson.id, blank).to_json(),
                "stale": None if stale is None else stale.get(lesson.id, []),
            }
        )
    return {"lessons": rows, "count": len(rows), "checkout": str(root) if root else None}


async def scope_groups(store: LessonStore) -> dict[str, Any]:
    """Counts of living lessons per repository and per graph node (the overview)."""
    repositories: dict[str, int] = {}
    nodes: dict[tuple[str, str], int] = {}
    for summary in await store.summaries(LessonQuery()):
        if summary.scope_kind == "graph":
            key = (summary.graph_hash, summary.node)
            nodes[key] = nodes.get(key, 0) + 1
        else:
            repositories[summary.repository] = repositories.get(summary.repository, 0) + 1
    return {
        "repositories": [
            {"repository": name, "count": count} for name, count in sorted(repositories.items())
        ],
        "nodes": [
            {"graph_hash": graph, "node": node, "count": count}
            for (graph, node), count in sorted(nodes.items())
        ],
    }


def _card_text(entry: HistoryEntry) -> list[str]:
    if entry.card is None:
        return []
    a = entry.card.associations
    lines = [f"title: {entry.card.title}", "recommendation:"]
    lines += ["  " + line for line in entry.card.recommendation.splitlines()]
    for name, values in (
        ("files", a.files),
        ("folders", a.folders),
        ("identifiers", a.identifiers),
        ("keywords", [" ".join(group) for group in a.keywords]),
        ("commands", a.commands),
    ):
        lines += [f"{name}: {value}" for value in values]
    return lines


def history_json(entries: list[HistoryEntry]) -> list[dict[str, Any]]:
    """Each revision with a unified diff of its card against the revision before it."""
    out: list[dict[str, Any]] = []
    previous: list[str] = []
    for entry in entries:
        text = _card_text(entry)
        diff = list(
            difflib.unified_diff(
                previous,
                text,
                fromfile=f"r{entry.previous_revision}" if entry.previous_revision else "(none)",
                tofile=f"r{entry.revision}",
                lineterm="",
                n=1,
            )
        )
        document = entry.model_dump(mode="json")
        document["diff"] = diff
        out.append(document)
        if entry.card is not None:
            previous = text
    return out


def cited_lines(root: Path | None, path: str, lines: tuple[int, int] | None) -> dict[str, Any]:
    """The cited lines as the current checkout has them, or why they cannot be shown."""
    if root is None:
        return {"shown": False, "why": "no checkout known (start the view with --checkout)"}
    from active_memory.checkout.citations import Checkout

    verdict = Checkout(root).check_path(path)
    if not verdict.current or verdict.file is None:
        return {"shown": False, "why": f"not a current file: {verdict.reason}"}
    target = Path(verdict.file)
    if not target.is_absolute():
        target = root / target
    from active_memory.reader import NotReadable, read_file_bytes

    try:
        data = read_file_bytes(target, CITED_FILE_MAX_BYTES)  # regular files only
    except NotReadable as exc:
        return {"shown": False, "why": f"unreadable: {exc.reason}"}
    if data is None:
        return {"shown": False, "why": "file larger than 1 MiB"}
    text = data.decode("utf-8", errors="replace").splitlines()
    start, end = lines if lines is not None else (1, min(len(text), CITED_LINES_MAX))
    if start > len(text):
        return {"shown": False, "why": f"the file has {len(text)} lines now"}
    last = min(end, len(text), start + CITED_LINES_MAX - 1)
    return {
        "shown": True,
        "start": start,
        "lines": text[start - 1 : last],
        "cut": last < end,
    }


def _citation_now(
    root: Path | None, c: Citation, moved: dict[tuple[str, Any], Any]
) -> dict[str, Any]:
    now = moved.get((c.path, c.lines), c)
    entry: dict[str, Any] = {
        "path": now.path,
        "lines": list(now.lines) if now.lines else None,
        "current": cited_lines(root, now.path, now.lines),
    }
    if now is not c:
        entry["moved_from"] = {"path": c.path, "lines": list(c.lines) if c.lines else None}
    return entry


async def lesson_page(store: LessonStore, lesson_id: str, root: Path | None) -> dict[str, Any]:
    """Everything about one lesson (None-free): card as delivered, history, counters."""
    from active_memory.errors import LessonNotFound

    lesson = await store.get(lesson_id)
    if lesson is None:
        raise LessonNotFound(lesson_id)
    history = await store.history(lesson_id)
    counters = (await store.effectiveness([lesson_id])).get(lesson_id, Effectiveness())
    document: dict[str, Any] = {
        "id": lesson.id,
        "revision": lesson.revision,
        "status": lesson.status,
        "scope": scope_json(lesson),
        "effectiveness": counters.to_json(),
        "effectiveness_text": counters.describe(),
        "effectiveness_history": await effectiveness_history(store, lesson_id),
        "history": history_json(history),
    }
    if isinstance(lesson, Lesson):
        import anyio.to_thread

        code = await anyio.to_thread.run_sync(
            functools.partial(_code_now, root, [lesson], diffs=True)
        )
        document["stale"] = None if code is None else code[0].get(lesson.id, [])
        moved = {} if code is None else code[1].get(lesson.id, {})
        document["card"] = lesson.card().model_dump(mode="json")
        written = [e.at.date().isoformat() for e in history if e.revision == lesson.revision]
        document["agent_card"] = agent_card(lesson, root, written[-1] if written else "")
        document["evidence"] = {
            "run_ids": lesson.evidence.run_ids,
            "evidence_ids": lesson.evidence.evidence_ids,
            # The citations that count, each where its text is now (a moved one at its
            # new lines, `moved_from` saying where it was recorded).
            "citations": [
                _citation_now(root, c, moved) for c in lesson.evidence.counted_citations()
            ],
        }
    else:
        document["canonical"] = lesson.canonical
    return document


REVIEW_DECIDED_SHOWN = 50
"""Decided proposals shown under the queue: the latest."""


def _card_lines(card: dict[str, Any]) -> list[str]:
    a = card.get("associations", {})
    lines = [f"title: {card['title']}", "recommendation:"]
    lines += ["  " + line for line in str(card["recommendation"]).splitlines()]
    for name in ("files", "folders", "identifiers"):
        lines += [f"{name}: {value}" for value in a.get(name, [])]
    lines += [f"keywords: {' '.join(group)}" for group in a.get("keywords", [])]
    lines += [f"commands: {value}" for value in a.get("commands", [])]
    return lines


async def review_page(store: LessonStore) -> dict[str, Any]:
    """The review queue: proposals waiting (oldest first), each with the card as it would
    be delivered and, for an adaptation, the diff against the lesson now; then the latest
    decided ones."""
    everything = await store.proposals()
    waiting: list[dict[str, Any]] = []
    for proposal in (p for p in everything if p.state == "proposed"):
        document = proposal.to_json()
        m = proposal.mutation
        card = m.card
        if m.action == "adapt":
            current = await store.get(m.id)
            document["agent_card"] = frame(
                [render_card(m.id, m.base_revision + 1, card.title, card.recommendation)]
            )
            now = current.card().model_dump(mode="json") if isinstance(current, Lesson) else None
            document["current_revision"] = current.revision if current else None
            document["diff"] = list(
                difflib.unified_diff(
                    _card_lines(now) if now else [],
                    _card_lines(card.model_dump(mode="json")),
                    fromfile=f"{m.id} r{current.revision if current else '?'} (now)",
                    tofile="proposed",
                    lineterm="",
                    n=1,
                )
            )
        else:
            document["agent_card"] = frame([render_card("NEW", 1, card.title, card.recommendation)])
            document["current_revision"] = None
            document["diff"] = []
        waiting.append(document)
    decided = [p.to_json() for p in everything if p.state != "proposed"]
    return {
        "proposed": waiting,
        "decided": decided[-REVIEW_DECIDED_SHOWN:][::-1],
        "count": len(waiting),
    }


EFFECTIVENESS_PER_RUN_MAX = 12
"""A lesson with at most this many dated observations is charted per run, else per week."""

EFFECTIVENESS_PER_DAY_MAX = 14
"""The overview with at most this many days of events is charted per day, else per week."""

_TERMS = (
    "delivered",
    "recurred_when_delivered",
    "touched_not_delivered",
    "recurred_when_not_delivered",
)


def _week(at: str) -> str:
    from datetime import date

    year, week, _ = date.fromisoformat(at[:10]).isocalendar()
    return f"{year}-W{week:02d}"


def effectiveness_series(history: EffectivenessHistory, *, per_run: bool) -> dict[str, Any]:
    """The chart's buckets of `history`: per run (a lesson with few observations), per
    day (an overview of few days), else per ISO week; each with the four counts."""
    points = history.points
    if per_run and len(points) <= EFFECTIVENESS_PER_RUN_MAX:
        bucket, keys = "run", [p.run_id or p.at for p in points]
    elif not per_run and len(points) <= EFFECTIVENESS_PER_DAY_MAX:
        bucket, keys = "day", [p.at[:10] for p in points]
    else:
        bucket, keys = "week", [_week(p.at) for p in points]
    labels: list[str] = []
    sums: dict[str, list[int]] = {term: [] for term in _TERMS}
    for key, point in zip(keys, points, strict=True):
        if not labels or labels[-1] != key:
            labels.append(key)
            for term in _TERMS:
                sums[term].append(0)
        for term in _TERMS:
            sums[term][-1] += getattr(point, term)
    return {"since": history.since, "bucket": bucket, "labels": labels, **sums}


async def effectiveness_history(store: LessonStore, lesson_id: str | None) -> dict[str, Any]:
    """`/api/...`'s effectiveness over time: the dated points and the chart's buckets."""
    history = await store.effectiveness_history(lesson_id)
    return {
        **history.to_json(),
        "series": effectiveness_series(history, per_run=lesson_id is not None),
    }
