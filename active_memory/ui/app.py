"""The web view as a Starlette app: pages (plain HTML, no JavaScript needed) and `/api/...`.

The store is opened once for the app's lifetime (lifespan). Writes go through one lock
(one store connection, one transaction at a time) and, once committed, bring this
machine's recall generations up to date, as a CLI write does when it closes the store.
"""

from __future__ import annotations

import getpass
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import anyio.to_thread
import jinja2
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from active_memory.errors import ActiveMemoryError, LessonNotFound, RevisionConflict, UsageError
from active_memory.lessons import Author, Lesson
from active_memory.store.lesson_store import LessonStore
from active_memory.ui import charts, costs, views
from active_memory.ui.auth import (
    COOKIE,
    LOGIN_CODE_SECONDS,
    LOOPBACK_NAMES,
    Gate,
    Session,
    csrf_ok,
)
from active_memory.ui.edits import (
    CardForm,
    EditRefused,
    decide_proposal,
    edit_lesson,
    retire_lesson,
    revert_lesson,
)

Handler = Callable[[Request], Awaitable[Response]]


def person() -> Author:
    """The author of a change made in the web view: the person running it."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return Author(specialist=f"person:{user}")


class WebView:
    """Routes and state of one web view over one store."""

    def __init__(
        self,
        location: str,
        gate: Gate,
        checkout: Path | None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.env = env  # where the journal and recall's records are (None: os.environ)
        self.location = location
        self.gate = gate
        self.checkout = checkout
        self.store: LessonStore | None = None
        self.write_lock = anyio.Lock()
        environment = jinja2.Environment(
            loader=jinja2.PackageLoader("active_memory.ui", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        self.templates = Jinja2Templates(env=environment)

    # --- plumbing -------------------------------------------------------------------

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Open the store for the app's lifetime."""
        from active_memory.store import open_store

        async with open_store(self.location, create=False) as store:
            self.store = store
            try:
                yield
            finally:
                self.store = None

    def _store(self) -> LessonStore:
        assert self.store is not None, "the store opens with the app"
        return self.store

    def _checkout(self) -> object | None:
        if self.checkout is None:
            return None
        from active_memory.checkout.citations import Checkout

        return Checkout(self.checkout)

    def page(self, handler: Callable[[Request, Session], Awaitable[Response]]) -> Handler:
        """`handler` behind the session cookie; without one, 401 and how to log in."""

        async def guarded(request: Request) -> Response:
            session = self.gate.session(request.cookies.get(_cookie(request)))
            if session is None:
                return self._render(request, None, "login.html", {}, status=401)
            try:
                return await handler(request, session)
            except LessonNotFound as exc:
                return self._error(request, session, 404, str(exc))
            except UsageError as exc:
                return self._error(request, session, 400, str(exc))
            except ActiveMemoryError as exc:  # the store busy, read-only, unreachable
                return self._error(request, session, 503, str(exc))

        return guarded

    def api(self, handler: Callable[[Request], Awaitable[Any]]) -> Handler:
        """`handler`'s document as JSON, behind the bearer token or the session cookie."""

        async def guarded(request: Request) -> Response:
            bearer = self.gate.bearer_ok(request.headers.get("authorization"))
            if not bearer and self.gate.session(request.cookies.get(_cookie(request))) is None:
                return JSONResponse({"error": "missing or wrong token"}, status_code=401)
            try:
                return JSONResponse(await handler(request))
            except LessonNotFound as exc:
                return JSONResponse({"error": str(exc)}, status_code=404)
            except UsageError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            except ActiveMemoryError as exc:
                return JSONResponse({"error": str(exc)}, status_code=503)

        return guarded

    def _render(
        self,
        request: Request,
        session: Session | None,
        name: str,
        context: dict[str, Any],
        *,
        status: int = 200,
    ) -> Response:
        lesson = context.get("lesson")
        if isinstance(lesson, dict) and "effectiveness_history" in lesson:
            series = lesson["effectiveness_history"]["series"]
            context["effectiveness_chart"] = Markup(
                charts.effectiveness_chart(f"{lesson['id']}: runs", series)
            )
        context = {
            "csrf": session.csrf if session else "",
            "location": self.location,
            "base": _base(request),
            **context,
        }
        response = self.templates.TemplateResponse(request, name, context, status_code=status)
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Content-Security-Policy"] = (
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
            "form-action 'self'; frame-ancestors 'none'"
        )
        return response

    def _error(self, request: Request, session: Session, status: int, message: str) -> Response:
        return self._render(request, session, "error.html", {"message": message}, status=status)

    async def _form(self, request: Request, session: Session) -> dict[str, str] | None:
        """The form's fields, or None when its CSRF token is missing or wrong."""
        form = await request.form()
        fields = {key: value for key, value in form.items() if isinstance(value, str)}
        return fields if csrf_ok(session, fields.get("csrf")) else None

    async def _after_write(self) -> None:
        from active_memory.recall.snapshot import refresh_after_write

        try:
            await anyio.to_thread.run_sync(refresh_after_write, self.location)
        except Exception as exc:  # recall catches up at its next pin (docs/recall.md)
            import logging

            logging.getLogger(__name__).warning("refreshing recall generations failed: %s", exc)

    # --- login ----------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        """GET with the one-time code (the printed link), or POST the server's token."""
        if request.method == "POST":
            form = await request.form()
            token = form.get("token")
            ok = isinstance(token, str) and self.gate.token_matches(token)
        else:
            ok = self.gate.redeem_code(request.query_params.get("code", ""))
        if not ok:
            return self._render(request, None, "login.html", {"failed": True}, status=403)
        response = RedirectResponse(f"{_base(request)}/", status_code=303)
        response.set_cookie(
            _cookie(request), self.gate.open_session(), httponly=True, samesite="strict",
            path=f"{_base(request)}/",
        )  # fmt: skip
        return response

    async def new_login_code(self, request: Request) -> Response:
        """A fresh one-time login code, for the bearer of the server's token only
        (`active-memory ui --link` asks the running `serve` for one)."""
        if not self.gate.bearer_ok(request.headers.get("authorization")):
            return JSONResponse({"error": "missing or wrong token"}, status_code=401)
        return JSONResponse(
            {"code": self.gate.new_login_code(), "login_path": f"{_base(request)}/login",
             "valid_seconds": LOGIN_CODE_SECONDS},
            headers={"Cache-Control": "no-store"},
        )  # fmt: skip

    async def logout(self, request: Request) -> Response:
        """End this browser's session (CSRF-checked like every write)."""
        cookie = _cookie(request)
        session = self.gate.session(request.cookies.get(cookie))
        if session is not None and await self._form(request, session) is not None:
            self.gate.close_session(request.cookies.get(cookie))
        response = RedirectResponse(f"{_base(request)}/", status_code=303)
        response.delete_cookie(cookie, path=f"{_base(request)}/")
        return response

    # --- pages ----------------------------------------------------------------------

    @staticmethod
    def _filters(request: Request) -> views.ListFilters:
        q = request.query_params
        return views.ListFilters(
            q=q.get("q", ""),
            status=q.get("status", "") if q.get("status", "") in views.STATUSES else "",
            kind=q.get("kind", "") if q.get("kind", "") in ("repository", "graph") else "",
            repository=q.get("repository", ""),
            graph=q.get("graph", ""),
            node=q.get("node", ""),
            effectiveness=q.get("effectiveness", "")
            if q.get("effectiveness", "") in views.EFFECTIVENESS_FILTERS
            else "",
            stale=q.get("stale", "") == "1",
        )

    async def lessons_page(self, request: Request, session: Session) -> Response:
        """The lessons, filtered, beside the repositories and graph nodes that have some."""
        filters = self._filters(request)
        listing = await views.lesson_list(self._store(), filters, self.checkout)
        groups = await views.scope_groups(self._store())
        return self._render(
            request,
            session,
            "lessons.html",
            {"filters": filters, "groups": groups, **listing,
             "statuses": views.STATUSES, "effectiveness_filters": views.EFFECTIVENESS_FILTERS},
        )  # fmt: skip

    async def lesson_detail(self, request: Request, session: Session) -> Response:
        """One lesson: the card as delivered, scope, evidence, history, forms."""
        lesson_id = request.path_params["lesson_id"]
        document = await views.lesson_page(self._store(), lesson_id, self.checkout)
        form = None
        if document["status"] != "retired":
            found = await self._store().get(lesson_id)
            assert isinstance(found, Lesson)
            form = CardForm.of(found)
        return self._render(
            request,
            session,
            "lesson.html",
            {"lesson": document, "form": form, "saved": request.query_params.get("saved", "")},
        )

    async def _write(
        self, request: Request, session: Session, act: Callable[[dict[str, str]], Awaitable[str]]
    ) -> Response:
        lesson_id = request.path_params["lesson_id"]
        fields = await self._form(request, session)
        if fields is None:
            return self._error(request, session, 403, "the form's CSRF token is missing or "
                               "wrong; reload the page and try again")  # fmt: skip
        try:
            async with self.write_lock:
                message = await act(fields)
        except RevisionConflict as exc:
            document = await views.lesson_page(self._store(), lesson_id, self.checkout)
            return self._render(
                request, session, "conflict.html",
                {"message": str(exc), "lesson": document, "yours": fields}, status=409,
            )  # fmt: skip
        except EditRefused as exc:
            document = await views.lesson_page(self._store(), lesson_id, self.checkout)
            return self._render(
                request, session, "lesson.html",
                {"lesson": document, "form": _form_of(fields), "saved": "",
                 "problems": exc.problems}, status=422,
            )  # fmt: skip
        await self._after_write()
        return RedirectResponse(
            f"{_base(request)}/lessons/{lesson_id}?saved={message}", status_code=303
        )

    async def edit(self, request: Request, session: Session) -> Response:
        """Publish the edit form as an adaptation (revision-checked)."""
        lesson_id = request.path_params["lesson_id"]

        async def act(fields: dict[str, str]) -> str:
            revision = await edit_lesson(
                self._store(), lesson_id, _revision(fields, "base_revision"), _form_of(fields),
                author=person(), reason=fields.get("reason", ""), checkout=self._checkout(),
            )  # fmt: skip
            return f"r{revision}"

        return await self._write(request, session, act)

    async def retire(self, request: Request, session: Session) -> Response:
        """Retire the lesson (revision-checked)."""
        lesson_id = request.path_params["lesson_id"]

        async def act(fields: dict[str, str]) -> str:
            revision = await retire_lesson(
                self._store(), lesson_id, _revision(fields, "base_revision"),
                author=person(), reason=fields.get("reason", ""),
            )  # fmt: skip
            return f"r{revision}"

        return await self._write(request, session, act)

    async def revert(self, request: Request, session: Session) -> Response:
        """Make an earlier revision current again (revision-checked)."""
        lesson_id = request.path_params["lesson_id"]

        async def act(fields: dict[str, str]) -> str:
            lesson = await revert_lesson(
                self._store(), lesson_id, _revision(fields, "base_revision"),
                _revision(fields, "to_revision"), author=person(),
            )  # fmt: skip
            return f"r{lesson.revision}"

        return await self._write(request, session, act)

    # --- review ---------------------------------------------------------------------

    async def review_queue(self, request: Request, session: Session) -> Response:
        """Proposals waiting for a person, and the latest decided."""
        document = await views.review_page(self._store())
        done = request.query_params.get("done", "")
        return self._render(request, session, "review.html", {**document, "done": done})

    async def _decide(self, request: Request, session: Session, *, approve: bool) -> Response:
        seq = _revision(dict(request.path_params), "seq")
        fields = await self._form(request, session)
        if fields is None:
            return self._error(request, session, 403, "the form's CSRF token is missing or "
                               "wrong; reload the page and try again")  # fmt: skip
        try:
            async with self.write_lock:
                message = await decide_proposal(
                    self._store(), seq, approve=approve, author=person(),
                    reason=fields.get("reason", ""),
                    form=_form_of(fields) if fields.get("edited") else None,
                    checkout=self._checkout(),
                )  # fmt: skip
        except RevisionConflict as exc:
            return self._error(request, session, 409, f"proposal {seq} not approved: {exc}; "
                               "reject it, or let the next postmortem decide again")  # fmt: skip
        except EditRefused as exc:
            document = await views.review_page(self._store())
            return self._render(
                request, session, "review.html",
                {**document, "done": "", "problems": exc.problems}, status=422,
            )  # fmt: skip
        await self._after_write()
        return RedirectResponse(f"{_base(request)}/review?done={quote(message)}", status_code=303)

    async def approve(self, request: Request, session: Session) -> Response:
        """Approve a proposal (with the edited card, from the edit-and-approve form)."""
        return await self._decide(request, session, approve=True)

    async def reject(self, request: Request, session: Session) -> Response:
        """Reject a proposal with a reason."""
        return await self._decide(request, session, approve=False)

    # --- postmortems and costs ------------------------------------------------------

    async def postmortems(self, request: Request, session: Session) -> Response:
        """The journal: running, failed and recent postmortems."""
        document = await anyio.to_thread.run_sync(costs.postmortems_page, self.location, self.env)
        document.update(await costs.queue_page(self._store()))
        return self._render(request, session, "postmortems.html", document)

    async def _costs(self) -> dict[str, Any]:
        document = await costs.costs_page(self._store(), self.env)
        document["effectiveness"] = await views.effectiveness_history(self._store(), None)
        return document

    async def costs(self, request: Request, session: Session) -> Response:
        """Model usage, card bytes and effectiveness over time, with charts."""
        document = await self._costs()
        days = document["per_day"]
        chart_days = charts.bar_chart(
            "model tokens per day", [d["day"] for d in days],
            [("input", [d["input_tokens"] for d in days]),
             ("output", [d["output_tokens"] for d in days])],
        )  # fmt: skip
        overview = document["effectiveness"]["series"]
        chart_effectiveness = charts.effectiveness_chart("every lesson: runs", overview)
        runs = document["per_postmortem"][:30][::-1]
        chart_runs = charts.bar_chart(
            "requests per postmortem", [r["run_id"] for r in runs],
            [("requests", [r["requests"] for r in runs])],
        )  # fmt: skip
        return self._render(
            request, session, "costs.html",
            {**document, "chart_days": Markup(chart_days), "chart_runs": Markup(chart_runs),
             "chart_effectiveness": Markup(chart_effectiveness)},
        )  # fmt: skip

    # --- JSON -----------------------------------------------------------------------

    async def api_lessons(self, request: Request) -> Any:
        """`/api/lessons?…`: the lessons page's data (same filters)."""
        return await views.lesson_list(self._store(), self._filters(request), self.checkout)

    async def api_lesson(self, request: Request) -> Any:
        """`/api/lessons/{id}`: the lesson page's data."""
        return await views.lesson_page(
            self._store(), request.path_params["lesson_id"], self.checkout
        )

    async def api_review(self, request: Request) -> Any:
        """`/api/review`: the review queue's data."""
        return await views.review_page(self._store())

    async def api_postmortems(self, request: Request) -> Any:
        """`/api/postmortems`: the journal page's data, with the queue."""
        document = await anyio.to_thread.run_sync(costs.postmortems_page, self.location, self.env)
        return {**document, **await costs.queue_page(self._store())}

    async def api_costs(self, request: Request) -> Any:
        """`/api/costs`: the costs page's data."""
        return await self._costs()

    async def api_scopes(self, request: Request) -> Any:
        """`/api/scopes`: living lessons per repository and per graph node."""
        return await views.scope_groups(self._store())


def _base(request: Request) -> str:
    """The path the view is mounted at: '' for `active-memory ui`, '/ui' inside `serve`
    (the mount sets the ASGI `root_path`); every link, form and redirect starts with it."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def _cookie(request: Request) -> str:
    """The session cookie's name: its own inside `serve`, since browsers share cookies
    between ports of one host and the two views have separate sessions."""
    return f"{COOKIE}_serve" if _base(request) else COOKIE


def _revision(fields: dict[str, str], name: str) -> int:
    try:
        value = int(fields.get(name, ""))
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{name}: expected a whole number of at least 1, got {fields.get(name)!r}")
    return value


def _form_of(fields: dict[str, str]) -> CardForm:
    return CardForm(
        title=fields.get("title", ""),
        recommendation=fields.get("recommendation", ""),
        files=fields.get("files", ""),
        folders=fields.get("folders", ""),
        identifiers=fields.get("identifiers", ""),
        keywords=fields.get("keywords", ""),
        commands=fields.get("commands", ""),
    )


def create_app(
    location: str,
    gate: Gate,
    *,
    checkout: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Starlette:
    """The web view over the store at `location`, guarded by `gate`; the journal and
    recall's records are found through `env` (default: the process environment)."""
    view = WebView(location, gate, checkout, env)
    routes = [
        Route("/login", view.login, methods=["GET", "POST"]),
        Route("/login/code", view.new_login_code, methods=["POST"]),
        Route("/logout", view.logout, methods=["POST"]),
        Route("/", view.page(view.lessons_page)),
        Route("/lessons/{lesson_id}", view.page(view.lesson_detail)),
        Route("/lessons/{lesson_id}/edit", view.page(view.edit), methods=["POST"]),
        Route("/lessons/{lesson_id}/retire", view.page(view.retire), methods=["POST"]),
        Route("/lessons/{lesson_id}/revert", view.page(view.revert), methods=["POST"]),
        Route("/review", view.page(view.review_queue)),
        Route("/review/{seq}/approve", view.page(view.approve), methods=["POST"]),
        Route("/review/{seq}/reject", view.page(view.reject), methods=["POST"]),
        Route("/api/review", view.api(view.api_review)),
        Route("/postmortems", view.page(view.postmortems)),
        Route("/costs", view.page(view.costs)),
        Route("/api/postmortems", view.api(view.api_postmortems)),
        Route("/api/costs", view.api(view.api_costs)),
        Route("/api/lessons", view.api(view.api_lessons)),
        Route("/api/lessons/{lesson_id}", view.api(view.api_lesson)),
        Route("/api/scopes", view.api(view.api_scopes)),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_NAMES)],
        lifespan=view.lifespan,
    )
