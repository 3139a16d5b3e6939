"""One lesson's page (and `/api/lessons/ID`): the card as delivered, its cited code in
its own repository's checkout, its history and effectiveness, as plain data."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from active_memory.checkout.by_repository import NO_CHECKOUT, Judgement, judge, repository_of
from active_memory.known_checkouts import KnownCheckouts
from active_memory.lessons import Citation, Lesson
from active_memory.recall.frame import frame, render_card
from active_memory.store.effectiveness import Effectiveness
from active_memory.store.lesson_store import LessonStore
from active_memory.ui.effectiveness_view import effectiveness_history
from active_memory.ui.history_view import history_json
from active_memory.ui.listing import scope_json
from active_memory.ui.word_diff import rows

CITED_LINES_MAX = 80
"""Cited lines shown per citation; a longer range is cut with a note."""

CITED_FILE_MAX_BYTES = 1024 * 1024
"""A cited file larger than this is not read for display."""


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


def stale_entries(judgement: Judgement, lesson: Lesson) -> list[dict[str, Any]]:
    """The lesson's changed citations, each with the one view of how it changed."""
    from active_memory.checkout.staleness import shown

    now = judgement.now.get(lesson.id)
    checkout = judgement.checkout_for(lesson)
    out: list[dict[str, Any]] = []
    for c in now.changed if now is not None else ():
        lines = list(c.citation.lines or ()) or None
        entry: dict[str, Any] = {"path": c.citation.path, "lines": lines, "why": c.why}
        if c.path_now:
            entry["path_now"] = c.path_now
        if checkout is not None:
            view = shown(checkout, c)
            if view.diff:
                entry["diff"], entry["diff_cut"] = list(view.diff), view.cut
                entry["diff_rows"] = rows(list(view.diff))
            if view.now:
                entry["now"] = list(view.now)
            if view.note:
                entry["note"] = view.note
        out.append(entry)
    return out


def cited_lines(root: Path | None, path: str, lines: tuple[int, int] | None) -> dict[str, Any]:
    """The cited lines as the checkout has them now, or why they cannot be shown."""
    if root is None:
        return {"shown": False, "why": NO_CHECKOUT}
    from active_memory.checkout.citations import Checkout
    from active_memory.checkout.git import NotACheckout

    try:
        verdict = Checkout(root).check_path(path)
    except NotACheckout as exc:
        return {"shown": False, "why": f"not a checkout now: {exc.reason}"}
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
    return {"shown": True, "start": start, "lines": text[start - 1 : last], "cut": last < end}


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


def _code_now(
    lesson: Lesson, known: KnownCheckouts
) -> tuple[Judgement, Path | None, list[dict[str, Any]]]:
    """The lesson judged, the checkout of its repository, its cited lines read (run in a
    thread: git and file reads)."""
    judgement = judge([lesson], known)
    root = judgement.roots.get(repository_of(lesson) or "", known.root(repository_of(lesson)))
    now = judgement.now.get(lesson.id)
    moved = {(m.citation.path, m.citation.lines): m.now for m in now.moved} if now else {}
    citations = [_citation_now(root, c, moved) for c in lesson.evidence.counted_citations()]
    return judgement, root, citations


async def lesson_page(store: LessonStore, lesson_id: str, known: KnownCheckouts) -> dict[str, Any]:
    """Everything about one lesson: card as delivered, staleness against its own
    repository's checkout, history, counters."""
    import anyio.to_thread

    from active_memory.errors import LessonNotFound

    lesson = await store.get(lesson_id)
    if lesson is None:
        raise LessonNotFound(lesson_id)
    history = await store.history(lesson_id)
    counters = (await store.effectiveness([lesson_id])).get(lesson_id, Effectiveness())
    repository = repository_of(lesson)
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
    if not isinstance(lesson, Lesson):
        document["canonical"] = lesson.canonical
        return document
    judgement, root, citations = await anyio.to_thread.run_sync(
        functools.partial(_code_now, lesson, known)
    )
    document["checkout"] = str(root) if root else None
    document["not_judged"] = judgement.unjudged.get(lesson.id)
    judged = lesson.id not in judgement.unjudged and (root is not None or repository is None)
    document["stale"] = stale_entries(judgement, lesson) if judged else None
    document["card"] = lesson.card().model_dump(mode="json")
    written = [e.at.date().isoformat() for e in history
               if e.revision == lesson.revision and e.action != "keep"]  # fmt: skip
    document["agent_card"] = agent_card(lesson, root, written[0] if written else "")
    document["evidence"] = {
        "run_ids": lesson.evidence.run_ids,
        "evidence_ids": lesson.evidence.evidence_ids,
        # The citations that count, each where its text is now (a moved one at its new
        # lines, `moved_from` saying where it was recorded).
        "citations": citations,
    }
    return document
