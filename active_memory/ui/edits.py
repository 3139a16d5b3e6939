"""A person's changes from the web view: edit, retire, revert, still valid; each
revision-checked.

An edit passes the same checks as a maintenance specialist's adaptation (the card's
shape and byte limits, no credential, no generic advice, a repository lesson keeps an
association and its files are current files of the checkout when one is known), keeps
the lesson's status unless the person chose another, and is published against the
revision the person read: a lesson changed since is a `RevisionConflict`, never a lost
update. A retire needs a reason. "Still valid" re-pins a stale lesson's citations
where its code is now, as a maintenance keep does, without a new revision
(`keep_lesson`). Every change is written to history with the person as author.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from active_memory.checkout.citations import Checkout
from active_memory.errors import LessonNotFound, UsageError
from active_memory.lessons import (
    AdaptLesson,
    Associations,
    Author,
    Card,
    Citation,
    Lesson,
    RepositoryScope,
    RetireLesson,
    Status,
    Tombstone,
)
from active_memory.store.lesson_store import LessonStore


class EditRefused(UsageError):
    """An edit failed the adaptation checks; `problems` says each reason."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("not saved: " + "; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class CardForm:
    """The fields of the edit form, as typed (one association per line)."""

    title: str
    recommendation: str
    files: str = ""
    folders: str = ""
    identifiers: str = ""
    keywords: str = ""  # one group per line, terms separated by spaces or commas
    commands: str = ""  # one command family per line

    @classmethod
    def of(cls, lesson: Lesson) -> CardForm:
        """The form filled with `lesson`'s current card."""
        a = lesson.associations
        return cls(
            title=lesson.title,
            recommendation=lesson.recommendation,
            files="\n".join(a.files),
            folders="\n".join(a.folders),
            identifiers="\n".join(a.identifiers),
            keywords="\n".join(" ".join(group) for group in a.keywords),
            commands="\n".join(a.commands),
        )


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def parse_card(form: CardForm) -> Card:
    """The card the form describes; `EditRefused` naming each invalid field."""
    try:
        return Card(
            title=form.title.strip(),
            recommendation=form.recommendation.replace("\r\n", "\n").strip(),
            associations=Associations(
                files=_lines(form.files),
                folders=_lines(form.folders),
                identifiers=_lines(form.identifiers),
                keywords=[line.replace(",", " ").split() for line in _lines(form.keywords)],
                commands=_lines(form.commands),
            ),
        )
    except ValidationError as exc:
        raise EditRefused(
            [
                ".".join(str(part) for part in error["loc"]) + ": " + error["msg"]
                for error in exc.errors()
            ]
        ) from None


def card_problems(scope: object, card: Card, checkout: object | None) -> list[str]:
    """What a specialist's adaptation into `card` of a lesson of `scope` would be refused
    for."""
    from active_memory.credentials import secret_reasons
    from active_memory.specialists.actionable import generic_advice

    problems = secret_reasons(card.model_dump(mode="json"), "card")
    advice = generic_advice(card.recommendation)
    if advice is not None:
        problems.append(f"recommendation: generic advice: {advice}")
    if isinstance(scope, RepositoryScope):
        if card.associations.is_empty():
            problems.append("associations: a repository lesson needs one at least")
        elif card.associations.files and checkout is not None:
            from active_memory.checkout.citations import Checkout

            assert isinstance(checkout, Checkout)
            verdicts = checkout.check_paths(card.associations.files)
            problems.extend(
                f"associations.files: {name}: not a current file: {verdict.reason}"
                for name, verdict in verdicts.items()
                if not verdict.current
            )
    return problems


async def _living(store: LessonStore, lesson_id: str) -> Lesson | Tombstone:
    found = await store.get(lesson_id)
    if found is None:
        raise LessonNotFound(lesson_id)
    return found


async def edit_lesson(
    store: LessonStore,
    lesson_id: str,
    base_revision: int,
    form: CardForm,
    *,
    author: Author,
    reason: str,
    checkout: object | None = None,
    status: str = "",
) -> int:
    """Publish the form as an adaptation of `lesson_id` read at `base_revision`, with
    `status` (`active`, `deferred`; '' keeps the lesson's own); the new revision.
    `EditRefused` for a card that fails the checks, `RevisionConflict` when the lesson
    changed since it was read."""
    lesson = await _living(store, lesson_id)
    card = parse_card(form)
    if status not in ("", "active", "deferred"):
        raise EditRefused([f"status: {status!r} is not active or deferred"])
    kept: Status | None = None
    if isinstance(lesson, Lesson):
        problems = card_problems(lesson.scope, card, checkout)
        if problems:
            raise EditRefused(problems)
        kept = lesson.status
    chosen: Status | None = kept
    if status == "active":
        chosen = "active"
    elif status == "deferred":
        chosen = "deferred"
    # A tombstone (or a changed revision) is refused by the store's revision check.
    receipt = await store.publish(
        [
            AdaptLesson(
                id=lesson_id,
                base_revision=base_revision,
                card=card,
                author=author,
                reason=reason.strip() or "edited in the web view",
                status=chosen,
            )
        ]
    )
    return receipt.adapted[0][1]


async def retire_lesson(
    store: LessonStore, lesson_id: str, base_revision: int, *, author: Author, reason: str
) -> int:
    """Retire `lesson_id` read at `base_revision`; the tombstone's revision. A retire
    needs a reason (`EditRefused` without one): the history keeps why."""
    await _living(store, lesson_id)
    if not reason.strip():
        raise EditRefused(["reason: say why the lesson is retired"])
    receipt = await store.publish(
        [RetireLesson(id=lesson_id, base_revision=base_revision, author=author,
                      reason=reason.strip())]
    )  # fmt: skip
    return receipt.retired[0][1]


async def keep_lesson(
    store: LessonStore,
    lesson_id: str,
    base_revision: int,
    checkout: Checkout,
    *,
    author: Author,
    reason: str,
) -> int:
    """Still valid: cite `lesson_id`'s changed and moved code again where it is now in
    `checkout` (its repository's), fingerprinted, as a maintenance keep does
    (`changed_code.recited_now`, `staleness.fingerprint`), recorded as a keep in its
    history without a new revision (store/keeps.py); how many citations it re-pinned.
    A lesson whose cited code is where it was has nothing to confirm (`EditRefused`)."""
    import anyio.to_thread

    from active_memory.checkout.staleness import fingerprint
    from active_memory.specialists.tasks.changed_code import recited_now
    from active_memory.store.keeps import KeepLesson

    lesson = await _living(store, lesson_id)
    if not isinstance(lesson, Lesson):
        raise EditRefused([f"{lesson_id} is retired; nothing to confirm"])

    def recite() -> list[Citation]:
        cited = recited_now(checkout, lesson.evidence.citations).with_decision([])
        return fingerprint(checkout, cited) if cited else []

    citations = await anyio.to_thread.run_sync(recite)
    if not citations:
        raise EditRefused([f"{lesson_id}'s cited code is where it was: nothing to confirm"])
    why = reason.strip() or "still valid: checked against the code as it is now"
    await store.keep(KeepLesson(id=lesson_id, base_revision=base_revision, citations=citations,
                                author=author, reason=why))  # fmt: skip
    return len(citations)


async def revert_lesson(
    store: LessonStore, lesson_id: str, base_revision: int, to_revision: int, *, author: Author
) -> Lesson | Tombstone:
    """Make revision `to_revision` current again, if the lesson is still at
    `base_revision`; a card holding a credential is never made current."""
    from active_memory.credentials import secret_reasons
    from active_memory.errors import Conflict, RevisionConflict

    current = await _living(store, lesson_id)
    if current.revision != base_revision:
        raise RevisionConflict(
            [Conflict(lesson_id, base_revision, current.revision, current.status)]
        )
    history = await store.history(lesson_id)
    target = next((entry for entry in history if entry.revision == to_revision), None)
    if target is None:
        raise UsageError(f"{lesson_id} has no revision {to_revision}")
    if target.card is not None:
        found = secret_reasons(target.card.model_dump(mode="json"), "card")
        if found:
            raise EditRefused([f"r{to_revision} holds a credential: " + "; ".join(found)])
    return await store.revert(lesson_id, to_revision, author)


async def decide_proposal(
    store: LessonStore,
    seq: int,
    *,
    approve: bool,
    author: Author,
    reason: str,
    form: CardForm | None = None,
    checkout: object | None = None,
) -> str:
    """Approve (with the form's card when it differs from the proposal's) or reject
    proposal `seq`; what happened, for the page. An edited card passes the adaptation
    checks first (`EditRefused`)."""
    from active_memory.errors import ProposalNotPending
    from active_memory.store.review import ReviewDecision

    card: Card | None = None
    if approve and form is not None:
        found = next((p for p in await store.proposals() if p.seq == seq), None)
        if found is None:
            raise ProposalNotPending(seq, None)
        card = parse_card(form)
        if card == found.mutation.card:
            card = None
        else:
            scope = await _proposal_scope(store, found.mutation)
            problems = card_problems(scope, card, checkout)
            if problems:
                raise EditRefused(problems)
    decided = await store.decide_proposal(
        seq, ReviewDecision(approve=approve, author=author, reason=reason, card=card)
    )
    if decided.state == "approved":
        return f"proposal {seq} approved: {decided.result_id} r{decided.result_revision}"
    return f"proposal {seq} rejected"


async def _proposal_scope(store: LessonStore, mutation: object) -> object:
    from active_memory.lessons import CreateLesson

    if isinstance(mutation, CreateLesson):
        return mutation.scope
    assert isinstance(mutation, AdaptLesson)
    return (await _living(store, mutation.id)).scope
