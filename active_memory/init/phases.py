"""The discovery phase: one task per discovery specialist and selected run, through the
file-exchange provider; checked with the postmortem's own builders and checks.

A task is asked only when the run holds evidence the specialist may cite (as in the
postmortem). The answer file is bound to the task's digest by the exchange provider:
an answer written for another task is refused, never reused. An answer the checks
refuse (a citation out of range, an unknown field) gets one repair task file listing
every failure, as in the postmortem's lanes; a safety refusal gets none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import anyio

from active_memory.checkout import Checkout
from active_memory.errors import SpecialistFailed
from active_memory.init.errors import InitRefused
from active_memory.init.progress import Silent, Steps
from active_memory.prompts import load_prompts
from active_memory.runlog.record import RunRecord
from active_memory.specialists.answers import (
    GraphDiscoveryAnswer,
    RepositoryDiscoveryAnswer,
    answer_schema,
)
from active_memory.specialists.checks.verdicts import discovery_check
from active_memory.specialists.mutations import AnyMutation, discovery_mutations
from active_memory.specialists.providers.exchange import FileExchangeSession, Pending
from active_memory.specialists.tasks import DiscoveryName, build_discovery

HOST_MODEL = "host"
"""The model named in exchange tasks: whoever runs init answers them."""


@dataclass(slots=True)
class Discovery:
    """What the discovery phase has so far."""

    pending: list[Pending] = field(default_factory=list)
    mutations: list[AnyMutation] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)


def discover(
    runs: Sequence[tuple[RunRecord, Path]], exchange: Path, steps: Steps | None = None
) -> Discovery:
    """Write every discovery task not written yet; check every answer present (`steps`
    advances once per run)."""
    return anyio.run(_discover, runs, exchange, steps or Silent())


async def _discover(
    runs: Sequence[tuple[RunRecord, Path]], exchange: Path, steps: Steps
) -> Discovery:
    prompts = load_prompts()
    out = Discovery()
    steps.stage("discovery tasks", total=len(runs))
    for record, root in runs:
        steps.advance()
        for name in get_args(DiscoveryName):
            task = build_discovery(name, record)
            if not task.evidence:
                continue
            data = task.to_json()
            session = FileExchangeSession(name, HOST_MODEL, directory=exchange)
            # The postmortem's checks, inside the ask: a refused answer gets its repair
            # task file (`<specialist>-<digest16>.repair.task.json`), as in every lane.
            check = discovery_check(task, checkout=Checkout(root))
            try:
                reply = await session.submit(
                    prompts.render(name, task, data), answer_schema(name), input=data, check=check
                )
            except SpecialistFailed as exc:
                raise InitRefused(f"{exc.kind}: {exc.detail}") from None
            finally:
                await session.aclose()
            if isinstance(reply, Pending):
                out.pending.append(reply)
                continue
            assert isinstance(reply.answer, RepositoryDiscoveryAnswer | GraphDiscoveryAnswer)
            result = check.result()
            out.mutations.extend(discovery_mutations(result, run_id=record.run_id, model=None))
            out.results.append(
                {
                    "run_id": record.run_id,
                    "specialist": name,
                    "accepted": [a.proposal.title for a in result.accepted],
                    "rejected": [r.to_json() for r in result.rejected],
                }
            )
    return out
