"""The review queue page and a person's decisions on proposals (docs/review.md)."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from active_memory.errors import RevisionConflict
from active_memory.ui.auth import Session
from active_memory.ui.edits import EditRefused, decide_proposal
from active_memory.ui.lesson_pages import form_of
from active_memory.ui.review_view import review_page
from active_memory.ui.web import WebView, base, person, revision


async def review_queue(view: WebView, request: Request, session: Session) -> Response:
    """Proposals waiting for a person, and the latest decided."""
    document = await review_page(view.open_store())
    done = request.query_params.get("done", "")
    return view.render(request, session, "review.html", {**document, "done": done})


async def _decide(view: WebView, request: Request, session: Session, *, approve: bool) -> Response:
    from active_memory.checkout.by_repository import checkout_of

    seq = revision(dict(request.path_params), "seq")
    fields = await view.form(request, session)
    if fields is None:
        return view.csrf_refused(request, session)
    store = view.open_store()
    found = next((p for p in await store.proposals() if p.seq == seq), None)
    repository = found.scope_key[1] if found is not None else None
    try:
        async with view.write_lock:
            message = await decide_proposal(
                store, seq, approve=approve, author=person(), reason=fields.get("reason", ""),
                form=form_of(fields) if fields.get("edited") else None,
                checkout=checkout_of(repository or None, view.known()),
            )  # fmt: skip
    except RevisionConflict as exc:
        return view.error(request, session, 409, f"proposal {seq} not approved: {exc}; "
                          "reject it, or let the next postmortem decide again")  # fmt: skip
    except EditRefused as exc:
        document = await review_page(store)
        return view.render(
            request, session, "review.html",
            {**document, "done": "", "problems": exc.problems}, status=422,
        )  # fmt: skip
    await view.after_write()
    return RedirectResponse(f"{base(request)}/review?done={quote(message)}", status_code=303)


async def approve(view: WebView, request: Request, session: Session) -> Response:
    """Approve a proposal (with the edited card, from the edit-and-approve form)."""
    return await _decide(view, request, session, approve=True)


async def reject(view: WebView, request: Request, session: Session) -> Response:
    """Reject a proposal with a reason."""
    return await _decide(view, request, session, approve=False)
