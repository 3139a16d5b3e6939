"""`/api/...`: the pages' data as JSON, for scripts (`Authorization: Bearer <token>`).

The same documents the pages render, so a script sees exactly what a person sees; the
store's location never appears (web.py masks errors that name it).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from active_memory.ui import listing
from active_memory.ui.lesson_pages import ordered
from active_memory.ui.lesson_view import lesson_page
from active_memory.ui.report_pages import costs_data, postmortems_data
from active_memory.ui.review_view import review_page
from active_memory.ui.web import WebView

API_PAGE_SIZE = 100
"""Rows of `/api/lessons` without a `limit`."""


async def lessons(view: WebView, request: Request) -> Any:
    """`/api/lessons?…&limit=&offset=`: a page of the lessons (same filters as the page),
    in natural ID order, with `total`; `limit` 1..1000 (default 100)."""
    params = request.query_params
    page = listing.page_of(params, default=API_PAGE_SIZE)
    filters = listing.filters_of(params)
    return await listing.lesson_list(
        view.open_store(), filters, page, view.known(), await ordered(view, filters)
    )


async def lesson(view: WebView, request: Request) -> Any:
    """`/api/lessons/{id}`: the lesson page's data."""
    return await lesson_page(view.open_store(), request.path_params["lesson_id"], view.known())


async def review(view: WebView, request: Request) -> Any:
    """`/api/review`: the review queue's data."""
    return await review_page(view.open_store())


async def postmortems(view: WebView, request: Request) -> Any:
    """`/api/postmortems[?run=]`: the journal page's data, with the queue."""
    return await postmortems_data(view, request.query_params.get("run", ""))


async def costs(view: WebView, request: Request) -> Any:
    """`/api/costs[?repository=]`: the costs page's data."""
    return await costs_data(view, request.query_params.get("repository", ""))


async def scopes(view: WebView, request: Request) -> Any:
    """`/api/scopes`: living lessons per repository and per graph node."""
    return await listing.scope_groups(view.open_store())
