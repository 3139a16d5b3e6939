from __future__ import annotations

import pytest
from pydantic import ValidationError

from active_memory.lessons import (
    Associations,
    Card,
    Citation,
    Decision,
    GraphScope,
    Lesson,
    Proposal,
    RepositoryScope,
    Tombstone,
    utf8_size,
)


def _card(title: str = "t", recommendation: str = "Run make api-client.") -> Card:
    return Card(title=title, recommendation=recommendation)


def test_title_of_96_multibyte_bytes_passes() -> None:
    title = "é" * 48
    assert utf8_size(title) == 96 and len(title) == 48
    assert _card(title=title).title == title


def test_title_of_97_bytes_fails_naming_limit_and_size() -> None:
    with pytest.raises(ValidationError) as caught:
        _card(title="é" * 48 + "a")
    message = str(caught.value)
    assert "97 bytes" in message and "limit is 96 bytes" in message


def test_recommendation_limit_is_640_utf8_bytes() -> None:
    fits = "€" * 213 + "a"  # 3-byte characters: 639 + 1
    assert utf8_size(fits) == 640
    assert _card(recommendation=fits).recommendation == fits
    with pytest.raises(ValidationError, match="641 bytes in UTF-8; the limit is 640"):
        _card(recommendation=fits + "b")


def test_blank_title_is_refused() -> None:
    with pytest.raises(ValidationError, match="empty"):
        _card(title="   ")


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc/passwd", "absolute"),
        ("../outside.py", "leaves the checkout root"),
        ("src/../../x", "leaves the checkout root"),
        ("C:\\Users\\x", "absolute"),
        (".", "names the root itself"),
    ],
)
def test_association_paths_must_stay_inside_the_checkout(path: str, why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        Associations(files=[path])


def test_association_paths_are_normalised_and_deduplicated() -> None:
    associations = Associations(folders=["src/api/", "./src/api", "src\\api"])
    assert associations.folders == ["src/api"]


@pytest.mark.parametrize("group", [["solo"], ["one", "two", "three", "four", "five"]])
def test_keyword_group_needs_two_to_four_terms(group: list[str]) -> None:
    with pytest.raises(ValidationError, match="2 to 4 distinct terms"):
        Associations(keywords=[group])


def test_keyword_group_with_a_broad_word_is_refused() -> None:
    with pytest.raises(ValidationError, match="broad word"):
        Associations(keywords=[["stripe", "test"]])


def test_keyword_terms_are_lowercased() -> None:
    assert Associations(keywords=[["Stripe", "WEBHOOK"]]).keywords == [["stripe", "webhook"]]


def test_identifier_must_be_a_whole_name() -> None:
    with pytest.raises(ValidationError, match="whole literal name"):
        Associations(identifiers=["make client"])


def test_graph_scope_needs_a_sha256_hash() -> None:
    with pytest.raises(ValidationError, match="SHA-256"):
        GraphScope(graph_hash="7d5d", node="worker")


def test_scope_is_chosen_by_kind() -> None:
    lesson = Lesson.model_validate(
        {
            "id": "L-1",
            "revision": 1,
            "scope": {"kind": "graph", "graph_hash": "a" * 64, "node": "worker"},
            "title": "t",
            "recommendation": "Run it.",
        }
    )
    assert isinstance(lesson.scope, GraphScope) and lesson.scope.repository is None


def test_tombstone_keeps_no_content() -> None:
    scope = RepositoryScope(repository="repo:x")
    with pytest.raises(ValidationError):
        Tombstone.model_validate({"id": "L-1", "revision": 2, "scope": scope, "title": "t"})


def test_citation_lines_accept_ranges() -> None:
    assert Citation(path="a.py", lines="12-30").lines == (12, 30)
    assert Citation(path="a.py", lines=7).lines == (7, 7)
    with pytest.raises(ValidationError, match="start <= end"):
        Citation(path="a.py", lines="30-12")


def test_adapt_decision_needs_the_new_lesson() -> None:
    with pytest.raises(ValidationError, match="needs the new 'lesson'"):
        Decision(id="L-1", revision=1, action="adapt")


def test_only_adapt_carries_a_lesson() -> None:
    with pytest.raises(ValidationError, match="only 'adapt' carries"):
        Decision(id="L-1", revision=1, action="keep", lesson=_card())


def test_canonical_belongs_to_retire_only() -> None:
    with pytest.raises(ValidationError, match="'retire' only"):
        Decision(id="L-1", revision=1, action="defer", canonical="L-2")
    with pytest.raises(ValidationError, match="into itself"):
        Decision(id="L-1", revision=1, action="retire", canonical="L-1")
    assert Decision(id="L-1", revision=1, action="retire", canonical="L-2").canonical == "L-2"


def test_proposal_needs_cited_evidence_and_a_reason_to_recur() -> None:
    with pytest.raises(ValidationError) as caught:
        Proposal(title="t", recommendation="Run it.", evidence=[], why_recurs=" ")
    fields = {error["loc"][0] for error in caught.value.errors()}
    assert fields == {"evidence", "why_recurs"}


def test_unknown_fields_are_refused_in_cards() -> None:
    with pytest.raises(ValidationError, match="Extra inputs"):
        Card.model_validate({"title": "t", "recommendation": "r", "priority": 1})
