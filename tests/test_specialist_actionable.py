"""The generic-advice check: a corpus of recommendations it must accept and refuse."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from active_memory.specialists.actionable import MAX_ANALYSED_CHARS, anchors, generic_advice

ACCEPTED = [
    "After editing api/schema.json run `make api-client`; never hand-edit src/generated/client.ts.",
    "Run `pytest -k checkout` before pushing; the full suite takes 20 minutes.",
    "Call `refresh_token()` before retrying a 401 from the billing client.",
    "Use `uv sync --frozen` so the lock file is not rewritten.",
    "Pass --no-cache to the docker build in Makefile targets that touch vendor/.",
    "Register new handlers in `HANDLERS` in src/app/routes.py, or they are never reached.",
    "Be careful to run `make migrate` after adding a model.",
    "Make sure to test `parse_date` with leap years: Feb 29 breaks the cache key.",
    "Regenerate fixtures with scripts/regen.sh after changing the schema.",
    "The OrderService caches prices per tenant; clear it with `OrderService.reset()` in tests.",
    "Set MAX_RETRIES to 3 in config/settings.py when adding a retried job.",
    "Edit the Dockerfile stage `builder`, not the runtime stage, to add system packages.",
    "Start the stub server with `npm run stub` before the e2e suite, or every test times out.",
    "Import from `app.db.session`, never from `app.db.engine`; the engine is lazily bound.",
]

REFUSED = [
    ("Be careful when editing code.", "names no concrete"),
    ("Make sure to test your changes.", "names no concrete"),
    ("Follow best practices.", "names no concrete"),
    ("Double-check your work before submitting.", "names no concrete"),
    ("Read the code carefully before making changes and write tests.", "names no concrete"),
    ("Always run the tests.", "names no concrete"),
    ("Keep in mind that the schema is generated.", "names no concrete"),
    ("Pay attention to the generated code.", "names no concrete"),
    ("Be careful with `api/schema.json`.", "only a stock phrase"),
    ("Make sure to test `foo()`.", "only a stock phrase"),
    ("Run `make api-client` after editing api/schema.json. Be careful.", "generic filler"),
    ("Use `ruff format`. Follow best practices.", "generic filler"),
    ("I fixed the flaky test in tests/test_api.py by adding a retry.", "reports what happened"),
    ("The agent updated src/api/client.py twice.", "reports what happened"),
    ("Fixed the import in `app/main.py`.", "reports what happened"),
    ("In this run the worker timed out on `make build`.", "reports what happened"),
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_concrete_recommendations_are_accepted(text: str) -> None:
    assert generic_advice(text) is None
    assert anchors(text)


@pytest.mark.parametrize(("text", "why"), REFUSED)
def test_generic_recommendations_are_refused(text: str, why: str) -> None:
    reason = generic_advice(text)
    assert reason is not None and why in reason


def test_a_code_span_is_an_anchor_but_an_empty_one_is_not() -> None:
    assert anchors("Run `make` first.") == ["`make`"]
    assert anchors("Run `` first.") == []


def test_prose_words_with_dots_and_hyphens_are_not_anchors() -> None:
    assert anchors("Write well-known, up-to-date notes, e.g. for reviewers.") == []


@given(st.text(max_size=800))
def test_the_check_never_raises_and_is_deterministic(text: str) -> None:
    first = generic_advice(text)
    assert first is None or isinstance(first, str)
    assert generic_advice(text) == first


@pytest.mark.parametrize("unit", ["a.", "-", "a-", "--a", "a.b(", "/a", "a_", ". ", "../"])
def test_pathological_model_output_is_scanned_in_linear_time(unit: str) -> None:
    # Each of these made one of the patterns quadratic once; at 20k characters a
    # quadratic scan takes seconds, a linear one milliseconds.
    text = unit * (20_000 // len(unit))
    assert isinstance(anchors(text), list)


def test_only_the_start_of_an_overlong_text_is_analysed() -> None:
    filler = "Be careful. " * (MAX_ANALYSED_CHARS // 12 + 1)
    assert generic_advice(filler + "Run `make api-client`.") is not None
