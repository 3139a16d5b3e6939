"""The web view as a Starlette app: pages (plain HTML, no JavaScript needed) and
`/api/...`, each route handled by the module of its job:

- `login_pages`: login (back to the page asked for), a fresh login code, logout;
- `lesson_pages`: the lessons list, a lesson's page, edit, retire, revert, still valid;
- `review_pages`: the review queue and its decisions;
- `report_pages`: the postmortems and costs pages;
- `api`: the same data as JSON.

`web.WebView` holds what they share: the store, the login gate, the checkouts given on
the command line, the templates, the write lock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from active_memory.ui import api, lesson_pages, login_pages, report_pages, review_pages
from active_memory.ui.auth import LOOPBACK_NAMES, Gate
from active_memory.ui.web import WebView


def create_app(
    location: str,
    gate: Gate,
    *,
    checkouts: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
) -> Starlette:
    """The web view over the store at `location`, guarded by `gate`. `checkouts`: folders
    to judge their repositories' lessons against before the ones this machine knows
    (known_checkouts.py); the journal, recall's records and the known checkouts are
    found through `env` (default: the process environment)."""
    view = WebView(location, gate, checkouts, env)

    def plain(
        handler: Callable[[WebView, Request], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def call(request: Request) -> Response:
            return await handler(view, request)

        return call

    page, json = view.page, view.api
    routes = [
        Route("/login", plain(login_pages.login), methods=["GET", "POST"]),
        Route("/login/code", plain(login_pages.new_login_code), methods=["POST"]),
        Route("/logout", plain(login_pages.logout), methods=["POST"]),
        Route("/", page(lesson_pages.lessons_page)),
        Route("/lessons/{lesson_id}", page(lesson_pages.lesson_detail)),
        Route("/lessons/{lesson_id}/edit", page(lesson_pages.edit), methods=["POST"]),
        Route("/lessons/{lesson_id}/retire", page(lesson_pages.retire), methods=["POST"]),
        Route("/lessons/{lesson_id}/revert", page(lesson_pages.revert), methods=["POST"]),
        Route("/lessons/{lesson_id}/keep", page(lesson_pages.still_valid), methods=["POST"]),
        Route("/review", page(review_pages.review_queue)),
        Route("/review/{seq}/approve", page(review_pages.approve), methods=["POST"]),
        Route("/review/{seq}/reject", page(review_pages.reject), methods=["POST"]),
        Route("/postmortems", page(report_pages.postmortems)),
        Route("/costs", page(report_pages.costs_page)),
        Route("/api/review", json(api.review)),
        Route("/api/postmortems", json(api.postmortems)),
        Route("/api/costs", json(api.costs)),
        Route("/api/lessons", json(api.lessons)),
        Route("/api/lessons/{lesson_id}", json(api.lesson)),
        Route("/api/scopes", json(api.scopes)),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_NAMES)],
        lifespan=view.lifespan,
    )
