"""The postmortems page (the queue and the journal) and the costs page (model usage,
cards injected, effectiveness over time and per repository), with their charts."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from active_memory.ui import costs
from active_memory.ui.auth import Session
from active_memory.ui.charts import Series, bar_chart, effectiveness_charts
from active_memory.ui.effectiveness_view import effectiveness_history
from active_memory.ui.web import WebView

CHARTED_POSTMORTEMS = 200
"""Postmortems in the requests chart: the latest."""


def token_buckets(days: list[dict[str, Any]]) -> tuple[str, list[str], list[int], list[int]]:
    """Tokens in and out per UTC day while there are at most `PER_DAY_MAX` days, else per
    ISO week (else per month): (what a bucket is, labels, tokens in, tokens out)."""
    from active_memory.ui.effectiveness_view import PER_DAY_MAX, PER_WEEK_MAX, week_of

    keys = [d["day"] for d in days]
    per = "per day (UTC)"
    if len(keys) > PER_DAY_MAX:
        keys, per = [week_of(k) for k in keys], "per ISO week"
        if len(set(keys)) > PER_WEEK_MAX:
            keys, per = [d["day"][:7] for d in days], "per month"
    labels: list[str] = []
    tokens_in: list[int] = []
    tokens_out: list[int] = []
    for key, day in zip(keys, days, strict=True):
        if not labels or labels[-1] != key:
            labels.append(key)
            tokens_in.append(0)
            tokens_out.append(0)
        tokens_in[-1] += int(day["input_tokens"])
        tokens_out[-1] += int(day["output_tokens"])
    return per, labels, tokens_in, tokens_out


async def worker_data(view: WebView) -> dict[str, Any]:
    """This machine's worker of the view's store: whether and where it runs, its lane,
    its cap and what each of the last 7 days cost (`worker_state.worker_report`, as
    `queue --json` gives it; read again per request, the worker comes and goes)."""
    from active_memory.worker_state import worker_report

    return await anyio.to_thread.run_sync(worker_report, view.location, view.env)


async def postmortems_data(view: WebView, run_id: str = "") -> dict[str, Any]:
    """The journal (of one run, with `run_id`), the queue and this machine's worker."""
    document = await anyio.to_thread.run_sync(
        costs.postmortems_page, view.location, view.env, run_id
    )
    document.update(await costs.queue_page(view.open_store()))
    document["worker"] = await worker_data(view)
    return document


async def postmortems(view: WebView, request: Request, session: Session) -> Response:
    """The journal: running, failed, partial and recent postmortems (`?run=`: one run's)."""
    document = await postmortems_data(view, request.query_params.get("run", ""))
    return view.render(request, session, "postmortems.html", document)


async def per_repository(view: WebView) -> list[dict[str, Any]]:
    """Each repository's lessons' effectiveness: counts and the two recurrence rates."""
    found = await view.open_store().effectiveness_per_repository()
    return [
        {"repository": name, "lessons": observed, **counters.to_json()}
        for name, (counters, observed) in sorted(found.items())
    ]


async def costs_data(view: WebView, repository: str = "") -> dict[str, Any]:
    """The costs page's data; the effectiveness over time of `repository`'s lessons
    (or of every lesson)."""
    store = view.open_store()
    document = await costs.costs_page(store, view.env)
    document["effectiveness"] = await effectiveness_history(store, None, repository or None)
    document["per_repository"] = await per_repository(view)
    document["worker"] = await worker_data(view)
    return document


async def costs_page(view: WebView, request: Request, session: Session) -> Response:
    """Model usage, card bytes and effectiveness over time, with charts."""
    repository = request.query_params.get("repository", "")
    document = await costs_data(view, repository)
    per, labels, tokens_in, tokens_out = token_buckets(document["per_day"])
    chart_days = bar_chart(
        f"Model tokens {per}", labels,
        [Series("input", tokens_in), Series("output", tokens_out)], stacked=True,
    )  # fmt: skip
    runs = document["per_postmortem"][:CHARTED_POSTMORTEMS][::-1]
    chart_runs = bar_chart(
        f"Requests per postmortem (the latest {len(runs)})",
        [r["run_id"] + (f" #{r['attempt']}" if r["attempt"] > 1 else "") for r in runs],
        [Series("requests", [r["requests"] for r in runs])],
    )  # fmt: skip
    whose = repository or "every lesson"
    chart_effectiveness = effectiveness_charts(whose, document["effectiveness"]["series"])
    return view.render(
        request, session, "costs.html",
        {**document, "chart_days": Markup(chart_days), "chart_runs": Markup(chart_runs),
         "chart_effectiveness": Markup(chart_effectiveness), "repository": repository},
    )  # fmt: skip
