"""The web view's plumbing: the store held for the app's life, the guards in front of
every page and API call, rendering, forms, and the write lock.

The store is opened once for the app's lifetime (lifespan). Writes go through one lock
(one store connection, one transaction at a time) and, once committed, bring this
machine's recall generations up to date, as a CLI write does when it closes the store.
What a page shows of the store's location is masked (`mask_url`): a PostgreSQL URL's
password never reaches a page or an API answer.
"""

from __future__ import annotations

import getpass
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import anyio.to_thread
import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.templating import Jinja2Templates

from active_memory.errors import ActiveMemoryError, LessonNotFound, UsageError
from active_memory.known_checkouts import KnownCheckouts
from active_memory.lessons import Author
from active_memory.store.lesson_store import LessonStore
from active_memory.store.location import mask_url
from active_memory.ui.auth import COOKIE, Gate, Session, csrf_ok
from active_memory.ui.filters import breakable, highlight, percent

Handler = Callable[[Request], Awaitable[Response]]
PageHandler = Callable[["WebView", Request, Session], Awaitable[Response]]
ApiHandler = Callable[["WebView", Request], Awaitable[Any]]

log = logging.getLogger(__name__)

BY_VERSION_KEPT = 16
"""Values `by_version` keeps (one per key: the sidebar, a few listings' orders)."""

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'"
)


def person() -> Author:
    """The author of a change made in the web view: the person running it."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return Author(specialist=f"person:{user}")


class WebView:
    """State of one web view over one store: the store, the login gate, the checkouts
    given on the command line, the templates."""

    def __init__(
        self,
        location: str,
        gate: Gate,
        checkouts: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.env = env  # where the journal, recall's records and the checkouts are
        self.location = location
        self.shown_location = mask_url(location)
        self.gate = gate
        self.checkouts = tuple(checkouts)
        self.store: LessonStore | None = None
        self.write_lock = anyio.Lock()
        self._by_version: dict[str, tuple[int, Any]] = {}
        environment = jinja2.Environment(
            loader=jinja2.PackageLoader("active_memory.ui", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        environment.filters["highlight"] = highlight
        environment.filters["percent"] = percent
        environment.filters["breakable"] = breakable
        self.templates = Jinja2Templates(env=environment)

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

    def open_store(self) -> LessonStore:
        """The store (open while the app runs)."""
        assert self.store is not None, "the store opens with the app"
        return self.store

    async def by_version(self, key: str, make: Callable[[], Awaitable[Any]]) -> Any:
        """`make()`'s value, made again only when the store's change version moved (any
        write to a lesson, by this view or another process, moves it)."""
        version = await self.open_store().version()
        found = self._by_version.get(key)
        if found is not None and found[0] == version:
            return found[1]
        value = await make()
        self._by_version.pop(key, None)
        self._by_version[key] = (version, value)
        while len(self._by_version) > BY_VERSION_KEPT:  # the least recently made first
            del self._by_version[next(iter(self._by_version))]
        return value

    def known(self) -> KnownCheckouts:
        """The checkouts of this request: `--checkout` folders, then the ones this machine
        knows (read again per request: a worker may learn one while the view runs)."""
        return KnownCheckouts(self.checkouts, self.env)

    def page(self, handler: PageHandler) -> Handler:
        """`handler` behind the session cookie; without one, 401 and the login form,
        which brings the person back to this page."""

        async def guarded(request: Request) -> Response:
            session = self.gate.session(request.cookies.get(cookie_name(request)))
            if session is None:
                wanted = request.url.path[len(base(request)) :] or "/"
                if request.url.query:
                    wanted += "?" + request.url.query
                back = wanted if request.method == "GET" else "/"
                return self.render(request, None, "login.html", {"next": back}, status=401)
            try:
                return await handler(self, request, session)
            except LessonNotFound as exc:
                return self.error(request, session, 404, str(exc))
            except UsageError as exc:
                return self.error(request, session, 400, str(exc))
            except ActiveMemoryError as exc:  # the store busy, read-only, unreachable
                return self.error(request, session, 503, self.masked(str(exc)))

        return guarded

    def api(self, handler: ApiHandler) -> Handler:
        """`handler`'s document as JSON, behind the bearer token or the session cookie."""

        async def guarded(request: Request) -> Response:
            bearer = self.gate.bearer_ok(request.headers.get("authorization"))
            if not bearer and self.gate.session(request.cookies.get(cookie_name(request))) is None:
                return JSONResponse({"error": "missing or wrong token"}, status_code=401)
            try:
                return JSONResponse(await handler(self, request))
            except LessonNotFound as exc:
                return JSONResponse({"error": str(exc)}, status_code=404)
            except UsageError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            except ActiveMemoryError as exc:
                return JSONResponse({"error": self.masked(str(exc))}, status_code=503)

        return guarded

    def masked(self, text: str) -> str:
        """`text` with the store's raw location (its password) replaced by the masked one."""
        return text.replace(self.location, self.shown_location) if self.location else text

    def render(
        self,
        request: Request,
        session: Session | None,
        name: str,
        context: dict[str, Any],
        *,
        status: int = 200,
    ) -> Response:
        """The template `name` as a page, with the headers every page carries."""
        context = {
            "csrf": session.csrf if session else "",
            "location": self.shown_location,
            "base": base(request),
            "path": request.url.path,
            **context,
        }
        response = self.templates.TemplateResponse(request, name, context, status_code=status)
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Content-Security-Policy"] = CSP
        return response

    def error(self, request: Request, session: Session, status: int, message: str) -> Response:
        """The error page with `message`."""
        return self.render(request, session, "error.html", {"message": message}, status=status)

    def csrf_refused(self, request: Request, session: Session) -> Response:
        """403: a form without this session's CSRF token writes nothing."""
        return self.error(request, session, 403, "the form's CSRF token is missing or wrong; "
                          "reload the page and try again")  # fmt: skip

    async def form(self, request: Request, session: Session) -> dict[str, str] | None:
        """The form's fields, or None when its CSRF token is missing or wrong."""
        form = await request.form()
        fields = {key: value for key, value in form.items() if isinstance(value, str)}
        return fields if csrf_ok(session, fields.get("csrf")) else None

    async def after_write(self) -> None:
        """Bring this machine's recall generations up to date after a committed write."""
        from active_memory.recall.snapshot import refresh_after_write

        try:
            await anyio.to_thread.run_sync(refresh_after_write, self.location)
        except Exception as exc:  # recall catches up at its next pin (docs/recall.md)
            log.warning("refreshing recall generations failed: %s", self.masked(str(exc)))


def base(request: Request) -> str:
    """The path the view is mounted at: '' for `active-memory ui`, '/ui' inside `serve`
    (the mount sets the ASGI `root_path`); every link, form and redirect starts with it."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def cookie_name(request: Request) -> str:
    """The session cookie's name: its own inside `serve`, since browsers share cookies
    between ports of one host and the two views have separate sessions."""
    return f"{COOKIE}_serve" if base(request) else COOKIE


def safe_next(value: str) -> str:
    """A page to go back to after login: a path of this view only (`/…`, never `//host`
    or a scheme); anything else is the lessons page."""
    if not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    if any(ord(ch) < 32 for ch in value):
        return "/"
    return value


def revision(fields: Mapping[str, str], name: str) -> int:
    """A form's revision number; `UsageError` (400) naming a bad one."""
    try:
        value = int(fields.get(name, ""))
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{name}: expected a whole number of at least 1, got {fields.get(name)!r}")
    return value


def query(**params: object) -> str:
    """`?a=1&b=2` of the non-empty `params` ('' when none)."""
    found = {k: str(v) for k, v in params.items() if v not in (None, "", False)}
    return "?" + urlencode(found) if found else ""
