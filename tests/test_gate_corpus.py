"""The gate on the answer corpus (issue 27): no bad answer published, each refused by the
rule it names; no good answer refused. Both halves."""

from __future__ import annotations

import pytest
from gate_corpus import HALVES, cases, judge, make_checkout

from active_memory.checkout import Checkout


@pytest.fixture(scope="module")
def corpus_checkout(tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    return make_checkout(tmp_path_factory.mktemp("corpus"))


def test_the_corpus_holds_at_least_40_bad_and_20_good_answers() -> None:
    every = [c for half in HALVES for c in cases(half)]
    assert sum(c["expect"] == "refused" for c in every) >= 40
    assert sum(c["expect"] == "published" for c in every) >= 20
    assert len({c["id"] for c in every}) == len(every)


@pytest.mark.parametrize("half", HALVES)
def test_no_bad_answer_is_published_and_each_is_refused_by_its_rule(
    half: str, corpus_checkout: Checkout
) -> None:
    wrong = []
    for case in cases(half):
        if case["expect"] != "refused":
            continue
        verdict = judge(case, corpus_checkout)
        if verdict.published or case["rule"] not in verdict.rules:
            wrong.append((case["id"], case["rule"], verdict.reasons))
    assert wrong == []


@pytest.mark.parametrize("half", HALVES)
def test_no_good_answer_is_refused(half: str, corpus_checkout: Checkout) -> None:
    wrong = [
        (case["id"], verdict.reasons)
        for case in cases(half)
        if case["expect"] == "published" and not (verdict := judge(case, corpus_checkout)).published
    ]
    assert wrong == []


def test_a_safety_refusal_names_its_rule_and_nothing_else(corpus_checkout: Checkout) -> None:
    [case] = [c for c in cases("tuning") if c["id"] == "t-bad-override-verbatim"]
    verdict = judge(case, corpus_checkout)
    assert verdict.reasons == (
        "lessons[0]: refused by override-instructions",
        "lessons[0]: refused by destroy-data",
    )
