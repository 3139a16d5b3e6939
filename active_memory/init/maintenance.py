"""The maintenance phase: every lesson of a scope judged against the newest selected run.

- Repository maintenance: one scope per repository namespace of the selected runs; its
  lessons (active and deferred) are supplied in full, in batches bounded by serialized
  size, against the newest selected run of that repository and its checkout. Only that
  repository's lessons are shown, as the batch or as `others`.
- Graph maintenance: one scope per exact `(graph_hash, repository)` of the store's
  graph lessons that a selected run matches (the newest run of that graph, and of that
  repository when the scope names one).
- A scope is judged against its newest run *with delivery evidence*; when none of its
  runs has any, it abstains (SPEC §6, the postmortem's rule: `abstains`) and its result
  says why.

Tasks, checks and mutations are the postmortem's (`build_*_maintenance`,
`check_maintenance`, `maintenance_mutations`, `refreshed` for a keep that carries
citations). A batch whose answer does not reconcile gets one repair task file listing
every failure (none for a safety refusal); a repair answer that does not reconcile
either stops the phase with its reasons: that answer file must be rewritten. Nothing
is staged until every supplied card has a decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from active_memory.checkout import Checkout
from active_memory.errors import SpecialistFailed
from active_memory.init.errors import InitRefused
from active_memory.init.phases import HOST_MODEL, Discovery
from active_memory.lessons import GraphScope, Lesson, RepositoryScope
from active_memory.prompts import load_prompts
from active_memory.runlog.record import RunRecord
from active_memory.specialists.answers import MaintenanceAnswer, answer_schema
from active_memory.specialists.checks import Failed
from active_memory.specialists.checks.verdicts import maintenance_check
from active_memory.specialists.mutations import maintenance_mutations, refreshed
from active_memory.specialists.providers.base import input_digest
from active_memory.specialists.providers.exchange import (
    FileExchangeSession,
    Pending,
    exchange_paths,
)
from active_memory.specialists.tasks import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_LIMITS,
    MaintenanceName,
    MaintenanceTask,
    abstains,
    build_graph_maintenance,
    build_repository_maintenance,
    cut_by_serialized_size,
)
from active_memory.store import LessonStore


@dataclass(frozen=True, slots=True)
class Scope:
    """One maintenance scope: its lessons and the run (and checkout) judged against."""

    specialist: MaintenanceName
    lessons: tuple[Lesson, ...]
    record: RunRecord
    checkout: Path
    abstained: str | None = None
    """Why this scope is not judged (SPEC §6's abstention, `abstains`), or None."""


def _last_event(record: RunRecord) -> datetime | None:
    times = [stored.at for stored in record.events if stored.at is not None]
    return max(times) if times else None


def newest(runs: Sequence[tuple[RunRecord, Path]]) -> tuple[RunRecord, Path]:
    """The run whose log ends last (runs without times count as oldest; then by ID)."""
    return max(
        runs,
        key=lambda run: (
            _last_event(run[0]) is not None,
            _last_event(run[0]) or datetime.min,
            run[0].run_id,
        ),
    )


def scopes(runs: Sequence[tuple[RunRecord, Path]], living: Sequence[Lesson]) -> list[Scope]:
    """The maintenance scopes of the selected runs, in a stable order."""
    found: list[Scope] = []
    by_repository: dict[str, list[tuple[RunRecord, Path]]] = {}
    for run in runs:
        if run[0].repository is not None:
            by_repository.setdefault(run[0].repository.namespace, []).append(run)
    for namespace, chosen in sorted(by_repository.items()):
        lessons = tuple(
            x
            for x in living
            if isinstance(x.scope, RepositoryScope) and x.scope.repository == namespace
        )
        if lessons:
            found.append(_judged_against("repository_maintenance", lessons, chosen))
    keys = sorted(
        {
            (x.scope.graph_hash, x.scope.repository or "")
            for x in living
            if isinstance(x.scope, GraphScope)
        }
    )
    for graph_hash, repository in keys:
        matching = [
            run
            for run in runs
            if run[0].graph is not None
            and run[0].graph.hash == graph_hash
            and (
                not repository
                or (run[0].repository is not None and run[0].repository.namespace == repository)
            )
        ]
        lessons = tuple(
            x
            for x in living
            if isinstance(x.scope, GraphScope)
            and x.scope.graph_hash == graph_hash
            and (x.scope.repository or "") == repository
        )
        if matching:
            found.append(_judged_against("graph_maintenance", lessons, matching))
    return found


def _judged_against(
    specialist: MaintenanceName, lessons: tuple[Lesson, ...], runs: Sequence[tuple[RunRecord, Path]]
) -> Scope:
    """The scope judged against its newest run that may be judged on (SPEC §6: one with
    delivery evidence, `abstains`); when none may, against the newest, abstaining."""
    allowed = [run for run in runs if abstains(run[0]) is None]
    record, root = newest(allowed or runs)
    return Scope(specialist, lessons, record, root, None if allowed else abstains(record))


async def maintain(
    runs: Sequence[tuple[RunRecord, Path]], store: LessonStore, exchange: Path, out: Discovery
) -> None:
    """Write every maintenance task not written yet; check every answer present.

    Pending tasks go to `out.pending`, the mutations of reconciled batches to
    `out.mutations`, a summary per scope to `out.results`.
    """
    living = sorted((x for x in await store.select() if isinstance(x, Lesson)), key=lambda x: x.id)
    prompts = load_prompts()
    for scope in scopes(runs, living):
        if scope.abstained is not None:
            out.results.append(
                {
                    "run_id": scope.record.run_id,
                    "specialist": scope.specialist,
                    "decisions": [],
                    "abstained": scope.abstained,
                }
            )
            continue
        shown = scope.lessons  # the scope's own lessons only: no other repository's cards
        checkout = Checkout(scope.checkout)
        decisions: list[dict[str, object]] = []
        complete = True
        # The same bound on what the model receives as a postmortem's (docs/orchestrator.md).
        bound = max(1, DEFAULT_BATCH_BYTES - prompts.fixed_bytes(scope.specialist))
        for batch in cut_by_serialized_size(list(scope.lessons), DEFAULT_BATCH_BYTES):
            task: MaintenanceTask
            if scope.specialist == "repository_maintenance":
                task = build_repository_maintenance(
                    scope.record,
                    batch,
                    checkout=checkout,
                    living=shown,
                    limits=DEFAULT_LIMITS,
                    max_bytes=bound,
                )
            else:
                task = build_graph_maintenance(
                    scope.record, batch, living=shown, limits=DEFAULT_LIMITS, max_bytes=bound
                )
            data = task.to_json()
            session = FileExchangeSession(scope.specialist, HOST_MODEL, directory=exchange)
            check = maintenance_check(task, checkout=checkout)
            try:
                reply = await session.submit(
                    prompts.render(scope.specialist, task, data),
                    answer_schema(scope.specialist),
                    input=data,
                    check=check,
                )
            except SpecialistFailed as exc:
                raise InitRefused(f"{exc.kind}: {exc.detail}") from None
            finally:
                await session.aclose()
            if isinstance(reply, Pending):
                out.pending.append(reply)
                complete = False
                continue
            assert isinstance(reply.answer, MaintenanceAnswer)
            result = check.result()
            if isinstance(result, Failed):
                # Refused after its repair turn, or by a safety rule (no repair turn).
                _, answer_file = exchange_paths(
                    exchange, scope.specialist, input_digest(data), repair=reply.turns > 1
                )
                raise InitRefused(
                    f"{answer_file} does not reconcile its batch: "
                    + "; ".join(result.reasons[:10])
                    + "; rewrite that answer file and run init again"
                )
            run_id = scope.record.run_id
            found = maintenance_mutations(result, run_id=run_id, model=None)
            # A keep that carries citations cites them: an adapt to its own card.
            out.mutations.extend(refreshed(found, result, batch, {}, run_id=run_id, model=None))
            decisions.extend(
                {"id": d.id, "revision": d.revision, "action": d.action} for d in result.decisions
            )
        if complete:
            out.results.append(
                {
                    "run_id": scope.record.run_id,
                    "specialist": scope.specialist,
                    "decisions": decisions,
                }
            )
