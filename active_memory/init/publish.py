"""One publication for the whole session, with a durable receipt.

Order: check every selected checkout again (identity and fingerprint), write
`publishing.json` (the exact mutations), publish them all in one store transaction,
write `receipt.json`. A crash after the transaction and before the receipt is
recovered on the next call: the staged creations are looked up in the store (same
scope, title and run IDs) and, when all are there, the receipt is rebuilt from them
instead of publishing again. The transaction is all or nothing, so either all are
there or none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from active_memory.errors import StoreCorrupt
from active_memory.init.checkouts import fingerprint, identity
from active_memory.init.errors import InitStopped
from active_memory.init.session import Session
from active_memory.lessons import CreateLesson, Lesson, PublishReceipt
from active_memory.specialists.mutations import AnyMutation
from active_memory.store import LessonQuery, LessonStore

RECEIPT_SCHEMA = "active-memory/init-receipt@1"
_MUTATIONS = TypeAdapter(list[AnyMutation])


def verify_checkouts(saved: dict[str, dict[str, Any]]) -> None:
    """Stop when a selected checkout vanished or its identity or files changed."""
    for root, seen in sorted(saved.items()):
        path = Path(root)
        if not path.is_dir():
            raise InitStopped(root, "the checkout vanished since the inventory")
        if identity(path) != seen["identity"]:
            raise InitStopped(root, "the checkout's remotes or root commits changed")
        if fingerprint(path) != seen["fingerprint"]:
            raise InitStopped(
                root,
                "tracked or non-ignored files changed since the inventory; start a new "
                "session to learn from the checkout as it is now",
            )


async def publish_session(
    session: Session,
    store: LessonStore,
    *,
    verify: Callable[[], None],
    mutations: Sequence[AnyMutation] = (),
    results: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Publish once and return the receipt document (see the module doc).

    The first time, `mutations` and `results` (what each answer had accepted, rejected
    or decided) are staged; after a crash the staged ones are used and these ignored.
    `verify` runs before any actual publication and raises to stop it.
    """
    staged = session.read("publishing.json")
    if staged is None:
        staged = {
            "mutations": _MUTATIONS.dump_python(list(mutations), mode="json"),
            "results": list(results),
        }
        verify()
        session.write("publishing.json", staged)
        receipt = await _publish(store, mutations)
    else:
        # A previous call got this far: publish what it staged, unless it already did.
        staged_mutations = _MUTATIONS.validate_python(staged["mutations"])
        recovered = await _recover(store, staged_mutations)
        if recovered is None:
            verify()
        receipt = recovered or await _publish(store, staged_mutations)
    document = {
        "schema": RECEIPT_SCHEMA,
        "store": store.location,
        "published": receipt.model_dump(mode="json"),
        "results": staged["results"],
    }
    write_receipt(session, document)
    return document


def write_receipt(session: Session, document: dict[str, Any]) -> None:
    """The session's checkpoint: after it, the session is complete."""
    session.write("receipt.json", document)


async def _publish(store: LessonStore, mutations: Sequence[AnyMutation]) -> PublishReceipt:
    if not mutations:
        return PublishReceipt()
    return await store.publish(list(mutations))


async def _recover(store: LessonStore, mutations: Sequence[AnyMutation]) -> PublishReceipt | None:
    """The receipt of an earlier publication of `mutations`, or None if it never happened."""
    done: list[tuple[AnyMutation, str, int]] = []
    waiting = 0
    for mutation in mutations:
        if isinstance(mutation, CreateLesson):
            lesson = await _existing(store, mutation)
            if lesson is None:
                waiting += 1
            else:
                done.append((mutation, lesson.id, lesson.revision))
            continue
        current = await store.get(mutation.id)
        revision = current.revision if current is not None else None
        if revision == mutation.base_revision:
            waiting += 1
        elif revision == mutation.base_revision + 1:
            done.append((mutation, mutation.id, revision))
        else:
            raise StoreCorrupt(
                store.location,
                f"{mutation.id} is at revision {revision}, neither the staged base "
                f"{mutation.base_revision} nor the one publishing it would give; start a new "
                "session",
            )
    if not done:
        return None
    if waiting:
        raise StoreCorrupt(
            store.location, "only part of this session's staged publication is in the store"
        )
    receipt = PublishReceipt()
    for mutation, lesson_id, revision in done:
        {
            "create": receipt.created,
            "adapt": receipt.adapted,
            "retire": receipt.retired,
            "defer": receipt.deferred,
        }[mutation.action].append((lesson_id, revision))
    return receipt


async def _existing(store: LessonStore, creation: CreateLesson) -> Lesson | None:
    for lesson in await store.select(LessonQuery(kind=creation.scope.kind)):
        if (
            isinstance(lesson, Lesson)
            and lesson.scope == creation.scope
            and lesson.title == creation.card.title
            and set(creation.evidence.run_ids) <= set(lesson.evidence.run_ids)
        ):
            return lesson
    return None
