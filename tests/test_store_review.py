"""The review queue in the store (both backends): proposals are never lessons until a
person approves them; rejections are kept with their reason."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import AUTHOR, NAMESPACE, card, create

from active_memory.errors import ProposalNotPending, RevisionConflict, UsageError
from active_memory.lessons import AdaptLesson, Author, Lesson
from active_memory.store import LessonQuery
from active_memory.store.review import ReviewDecision

PERSON = Author(specialist="person:ada")


def _adapt(lesson_id: str, base: int, title: str) -> AdaptLesson:
    return AdaptLesson(
        id=lesson_id, base_revision=base, card=card(title), author=AUTHOR, reason="recurred"
    )


@pytest.mark.asyncio
async def test_proposals_are_not_lessons_and_recall_never_reads_them(store: Any) -> None:
    await store.publish([create("Existing lesson about make api-client")])
    seqs = await store.propose([create("Proposed lesson"), _adapt("L-1", 1, "Adapted title")])
    assert len(seqs) == 2 and seqs[0] < seqs[1]
    assert [x.id for x in await store.select(LessonQuery(include_retired=True))] == ["L-1"]
    snapshot = await store.read_snapshot(repository=NAMESPACE, graph_hash=None, node=None)
    assert [(x.id, x.title) for x in snapshot] == [("L-1", "Existing lesson about make api-client")]
    pending = await store.proposals("proposed")
    assert [(p.mutation.action, p.scope_key[1]) for p in pending] == [
        ("create", NAMESPACE),
        ("adapt", NAMESPACE),
    ]
    assert await store.proposals("rejected") == []


@pytest.mark.asyncio
async def test_approving_publishes_and_keeps_the_specialist_as_author(store: Any) -> None:
    [seq] = await store.propose([create("Proposed lesson")])
    decided = await store.decide_proposal(seq, ReviewDecision(approve=True, author=PERSON))
    assert decided.state == "approved" and decided.result_id == "L-1"
    lesson = await store.get("L-1")
    assert isinstance(lesson, Lesson) and lesson.title == "Proposed lesson"
    [entry] = await store.history("L-1")
    assert entry.author == AUTHOR and "approved by person:ada" in entry.reason
    with pytest.raises(ProposalNotPending, match="already approved"):
        await store.decide_proposal(seq, ReviewDecision(approve=False, author=PERSON, reason="x"))


@pytest.mark.asyncio
async def test_edit_and_approve_publishes_the_persons_card_as_theirs(store: Any) -> None:
    [seq] = await store.propose([create("Proposed lesson")])
    edited = card("Edited by a person")
    decision = ReviewDecision(approve=True, author=PERSON, card=edited, reason="sharper")
    await store.decide_proposal(seq, decision)
    [entry] = await store.history("L-1")
    assert entry.card == edited and entry.author == PERSON
    assert entry.reason == "edited and approved by person:ada: sharper"


@pytest.mark.asyncio
async def test_a_rejection_needs_a_reason_and_is_kept(store: Any) -> None:
    [seq] = await store.propose([create("Proposed lesson")])
    with pytest.raises(UsageError, match="needs a reason"):
        await store.decide_proposal(seq, ReviewDecision(approve=False, author=PERSON))
    decided = await store.decide_proposal(
        seq, ReviewDecision(approve=False, author=PERSON, reason="too generic")
    )
    assert decided.state == "rejected"
    [kept] = await store.proposals("rejected")
    assert kept.decision_reason == "too generic" and kept.decided_by == "person:ada"
    assert await store.select() == []
    with pytest.raises(ProposalNotPending, match="does not exist"):
        await store.decide_proposal(999, ReviewDecision(approve=True, author=PERSON))


@pytest.mark.asyncio
async def test_approving_an_adaptation_of_a_changed_lesson_is_a_conflict(store: Any) -> None:
    await store.publish([create("Existing lesson")])
    [seq] = await store.propose([_adapt("L-1", 1, "Proposed adaptation")])
    await store.publish([_adapt("L-1", 1, "Someone else's adaptation")])
    with pytest.raises(RevisionConflict):
        await store.decide_proposal(seq, ReviewDecision(approve=True, author=PERSON))
    [still] = await store.proposals("proposed")
    assert still.seq == seq
    lesson = await store.get("L-1")
    assert isinstance(lesson, Lesson) and lesson.title == "Someone else's adaptation"


@pytest.mark.asyncio
async def test_proposing_an_adaptation_of_an_unknown_lesson_writes_nothing(store: Any) -> None:
    with pytest.raises(RevisionConflict):
        await store.propose([create("fine"), _adapt("L-9", 1, "No such lesson")])
    assert await store.proposals() == []
