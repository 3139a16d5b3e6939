"""The content gate of one card (SPEC §6): the safety rules first, then what it says.

`card_refusals(...)` gives the refusal reasons of one card, each naming its rule:
`lessons[0]: refused by destroy-data` (a safety refusal: nothing more), or
`lessons[0].recommendation: generic-advice: ...`. A card that breaks a safety rule is
refused by that alone: its other faults are not listed, so a hostile model learns
nothing about how to pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from active_memory.evidence import EvidenceItem
from active_memory.lessons import Associations, Citation
from active_memory.quality.duplicates import DuplicateLimits
from active_memory.specialists.checks.content import (
    EVERYDAY,
    GENERIC_ADVICE,
    RESTATES,
    TASK_SUMMARY,
    FileReader,
    everyday_only,
    generic,
    restates_instructions,
    task_summary,
)
from active_memory.specialists.checks.safety import SAFETY_RULES, safety_refusals

SAFETY_PREFIX = "refused by "


def is_safety_refusal(reason: str) -> bool:
    """Whether `reason` is a safety refusal (no repair turn for it)."""
    return any(reason.endswith(f"{SAFETY_PREFIX}{rule}") for rule in SAFETY_RULES)


def rule_names(reasons: Sequence[str]) -> set[str]:
    """The names of the gate's rules that `reasons` cite."""
    names = (*SAFETY_RULES, TASK_SUMMARY, GENERIC_ADVICE, RESTATES, EVERYDAY, "citation-lines")
    return {n for n in names for r in reasons if f": {n}" in r or r.endswith(f"{SAFETY_PREFIX}{n}")}


def _commands(evidence: Sequence[EvidenceItem]) -> tuple[list[str], list[str]]:
    """(every command of the cited failures and their resolutions, resolutions only)."""
    every: list[str] = []
    resolved: list[str] = []
    for item in evidence:
        if item.family:
            every.append(item.family)
        for group in item.failures:
            every.extend(group.commands)
        if item.resolution is not None and item.resolution.command:
            every.append(item.resolution.command)
            resolved.append(item.resolution.command)
    return every, resolved


def card_refusals(
    path: str,
    *,
    title: str,
    recommendation: str,
    associations: Associations,
    citations: Sequence[Citation],
    evidence: Sequence[EvidenceItem],
    repository: bool,
    instructions: str | None,
    read_file: FileReader | None,
    limits: DuplicateLimits | None = None,
) -> list[str]:
    """Every content refusal of one card (see the module docstring)."""
    commands, resolved = _commands(evidence)
    unsafe = safety_refusals(f"{title}\n{recommendation}", resolved)
    if unsafe:
        return [f"{path}: {SAFETY_PREFIX}{rule}" for rule in unsafe]
    reasons: list[str] = []
    where = f"{path}.recommendation"
    summary = task_summary(recommendation)
    if summary is not None:
        reasons.append(f"{where}: {TASK_SUMMARY}: {summary}")
    tie: list[str] | None = None
    if repository:
        tie = [*commands, *associations.files, *associations.folders, *associations.identifiers]
        tie += associations.commands
        for citation in citations:
            tie += [citation.path, citation.path.rsplit("/", 1)[-1]]
    advice = generic(recommendation, tie)
    if advice is not None and summary is None:
        reasons.append(f"{where}: {GENERIC_ADVICE}: {advice}")
    if instructions:
        limit = (limits or DuplicateLimits()).with_shared_association
        score = restates_instructions(title, recommendation, instructions, limit)
        if score is not None:
            reasons.append(
                f"{path}: {RESTATES}: similarity {score:.0f}/100 with the node's own "
                "instructions; say what they do not"
            )
    if repository and read_file is not None:
        everyday = everyday_only(associations, commands, read_file)
        if everyday is not None:
            reasons.append(f"{path}.associations: {EVERYDAY}: {everyday}")
    return reasons
