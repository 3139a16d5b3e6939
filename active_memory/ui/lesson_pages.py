"""The lessons list, one lesson's page, and a person's changes to a lesson.

Every change is a form POST checked against the session's CSRF token and the revision
the page showed; a conflict shows both versions and writes nothing (edits.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from active_memory.errors import LessonNotFound, RevisionConflict
from active_memory.lessons import Lesson
from active_memory.ui import listing
from active_memory.ui.auth import Session
from active_memory.ui.charts import effectiveness_charts
from active_memory.ui.edits import (
    CardForm,
    EditRefused,
    edit_lesson,
    keep_lesson,
    retire_lesson,
    revert_lesson,
)
from active_memory.ui.lesson_view import lesson_page
from active_memory.ui.web import WebView, base, person, query, revision


async def lessons_page(view: WebView, request: Request, session: Session) -> Response:
    """One page of the lessons, filtered, beside the repositories and graph nodes."""
    params = request.query_params
    filters = listing.filters_of(params)
    page = listing.page_of(params)
    found = await listing.lesson_list(
        view.open_store(), filters, page, view.known(), await ordered(view, filters)
    )
    living = await ordered(view, listing.ListFilters())  # the sidebar: every living lesson

    async def sidebar() -> dict[str, Any]:
        return listing.groups_of(living, most=listing.SIDEBAR_MAX)

    groups = await view.by_version("groups", sidebar)
    paging = listing.paging(found["total"], page)
    kept = filters.to_params()

    def at(offset: int | None) -> str | None:
        if offset is None:
            return None
        limit = page.limit if page.limit != listing.PAGE_SIZE else None
        return f"{base(request)}/" + query(**kept, offset=offset or None, limit=limit)

    links = {name: at(paging[name]) for name in ("first", "previous", "next", "last")}
    return view.render(
        request, session, "lessons.html",
        {"filters": filters, "groups": groups, **found, "paging": paging, "links": links,
         "statuses": listing.STATUSES, "page_sizes": listing.PAGE_SIZES,
         "effectiveness_filters": listing.EFFECTIVENESS_FILTERS,
         "lesson_query": query(q=filters.q),
         "unknown_checkouts": sorted(ns for ns, root in found["checkouts"].items() if not root)},
    )  # fmt: skip


async def ordered(view: WebView, filters: listing.ListFilters) -> list[Any]:
    """The filters' lessons in natural order, kept until a lesson changes (10,000 IDs
    are not sorted again on every page)."""
    query = filters.query()
    found: list[Any] = await view.by_version(
        f"ordered:{query.model_dump_json()}",
        lambda: listing.ordered_summaries(view.open_store(), query),
    )
    return found


def form_of(fields: dict[str, str]) -> CardForm:
    """The edit form's fields as typed."""
    return CardForm(
        title=fields.get("title", ""),
        recommendation=fields.get("recommendation", ""),
        files=fields.get("files", ""),
        folders=fields.get("folders", ""),
        identifiers=fields.get("identifiers", ""),
        keywords=fields.get("keywords", ""),
        commands=fields.get("commands", ""),
    )


async def _document(view: WebView, lesson_id: str) -> dict[str, Any]:
    document = await lesson_page(view.open_store(), lesson_id, view.known())
    series = document["effectiveness_history"]["series"]
    document["effectiveness_chart"] = effectiveness_charts(f"{lesson_id}", series)
    return document


async def lesson_detail(view: WebView, request: Request, session: Session) -> Response:
    """One lesson: the card as delivered, scope, cited code, evidence, history, forms."""
    lesson_id = request.path_params["lesson_id"]
    document = await _document(view, lesson_id)
    form = None
    if document["status"] != "retired":
        found = await view.open_store().get(lesson_id)
        assert isinstance(found, Lesson)
        form = CardForm.of(found)
    return view.render(
        request, session, "lesson.html",
        {"lesson": document, "form": form, "saved": request.query_params.get("saved", ""),
         "q": request.query_params.get("q", "")},
    )  # fmt: skip


async def _write(
    view: WebView,
    request: Request,
    session: Session,
    act: Callable[[dict[str, str]], Awaitable[str | Response]],
) -> Response:
    lesson_id = request.path_params["lesson_id"]
    fields = await view.form(request, session)
    if fields is None:
        return view.csrf_refused(request, session)
    try:
        async with view.write_lock:
            outcome = await act(fields)
    except RevisionConflict as exc:
        document = await _document(view, lesson_id)
        return view.render(
            request, session, "conflict.html",
            {"message": str(exc), "lesson": document, "yours": fields}, status=409,
        )  # fmt: skip
    except EditRefused as exc:
        document = await _document(view, lesson_id)
        form = form_of(fields) if "title" in fields else _current_form(document)
        return view.render(
            request, session, "lesson.html",
            {"lesson": document, "form": form, "saved": "", "q": "",
             "problems": exc.problems}, status=422,
        )  # fmt: skip
    if isinstance(outcome, Response):
        return outcome
    await view.after_write()
    return RedirectResponse(
        f"{base(request)}/lessons/{quote(lesson_id, safe='')}?saved={quote(outcome)}",
        status_code=303,
    )


def _current_form(document: dict[str, Any]) -> CardForm | None:
    card = document.get("card")
    if card is None:
        return None
    a = card["associations"]
    return CardForm(
        title=card["title"], recommendation=card["recommendation"],
        files="\n".join(a["files"]), folders="\n".join(a["folders"]),
        identifiers="\n".join(a["identifiers"]),
        keywords="\n".join(" ".join(g) for g in a["keywords"]),
        commands="\n".join(a.get("commands", [])),
    )  # fmt: skip


async def _checkout(view: WebView, lesson_id: str) -> object | None:
    """The checkout of the lesson's own repository (None: none known here)."""
    from active_memory.checkout.by_repository import checkout_of, repository_of

    found = await view.open_store().get(lesson_id)
    if found is None:
        raise LessonNotFound(lesson_id)
    return checkout_of(repository_of(found), view.known())


async def edit(view: WebView, request: Request, session: Session) -> Response:
    """Publish the edit form as an adaptation (revision-checked), keeping the lesson's
    status unless the form chose another."""
    lesson_id = request.path_params["lesson_id"]

    async def act(fields: dict[str, str]) -> str:
        number = await edit_lesson(
            view.open_store(), lesson_id, revision(fields, "base_revision"), form_of(fields),
            author=person(), reason=fields.get("reason", ""),
            checkout=await _checkout(view, lesson_id), status=fields.get("status", ""),
        )  # fmt: skip
        return f"r{number}"

    return await _write(view, request, session, act)


async def retire(view: WebView, request: Request, session: Session) -> Response:
    """Retire the lesson (revision-checked) after a reason and a confirmation: the first
    POST shows what will happen, the confirmed one retires."""
    lesson_id = request.path_params["lesson_id"]

    async def act(fields: dict[str, str]) -> str | Response:
        base_revision = revision(fields, "base_revision")
        if not fields.get("reason", "").strip():
            raise EditRefused(["retire: say why the lesson is retired (the history keeps it)"])
        if fields.get("confirm") != "yes":
            document = await _document(view, lesson_id)
            return view.render(
                request, session, "retire.html",
                {"lesson": document, "reason": fields["reason"].strip(),
                 "base_revision": base_revision},
            )  # fmt: skip
        number = await retire_lesson(
            view.open_store(), lesson_id, base_revision, author=person(), reason=fields["reason"]
        )
        return f"r{number}"

    return await _write(view, request, session, act)


async def revert(view: WebView, request: Request, session: Session) -> Response:
    """Make an earlier revision current again (revision-checked)."""
    lesson_id = request.path_params["lesson_id"]

    async def act(fields: dict[str, str]) -> str:
        lesson = await revert_lesson(
            view.open_store(), lesson_id, revision(fields, "base_revision"),
            revision(fields, "to_revision"), author=person(),
        )  # fmt: skip
        return f"r{lesson.revision}"

    return await _write(view, request, session, act)


async def still_valid(view: WebView, request: Request, session: Session) -> Response:
    """Still valid: re-pin the stale lesson's cited code where it is now in its own
    repository's checkout, as a maintenance keep does, without a new revision."""
    from active_memory.checkout.citations import Checkout

    lesson_id = request.path_params["lesson_id"]

    async def act(fields: dict[str, str]) -> str:
        checkout = await _checkout(view, lesson_id)
        if not isinstance(checkout, Checkout):
            raise EditRefused([f"no checkout known for {lesson_id}'s repository on this "
                               "machine: start the view with --checkout DIR"])  # fmt: skip
        count = await keep_lesson(
            view.open_store(), lesson_id, revision(fields, "base_revision"), checkout,
            author=person(), reason=fields.get("reason", ""),
        )  # fmt: skip
        return f"kept-{count}"

    return await _write(view, request, session, act)
