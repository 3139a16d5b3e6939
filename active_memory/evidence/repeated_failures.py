"""Rule 4 of SPEC §4: repeated tool failures, for repository discovery only.

One item per family (the record's `tool_failures`, grouped by `family`) when, counting
only the failures that qualify on their own:

- the same normalised error (signatures.py) was seen twice, or
- the family failed three times with any errors, or
- one of its failures has the signature of an earlier run of the repository (given as
  `earlier`: the store reads them, the scanner never does).

Not counted on their own (each reported, and a family left with nothing is a skip):

- **a red-green cycle**: a test run failed (a test family: `pytest`, `mix test`, `npm
  test`, `cargo test`, … ) and what resolved it is the same test family on the same
  targets (or the whole suite) after files were edited (`resolved_by.edited`);
- **an auto-fix by a pre-commit tool followed by a clean retry**: a `git commit` (or
  `pre-commit run`) whose error says the hook modified files, resolved by the next call
  of the family with no failure of it in between.

The item carries the failures grouped by normalised error (first error as recorded,
count, times, distinct commands and exit codes), what resolved the family's last
failure, and the seconds from the first counted failure to that resolution.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Collection
from datetime import datetime

from active_memory.command_family import family_program, main_invocation
from active_memory.evidence.model import (
    REPOSITORY_DISCOVERY,
    EvidenceItem,
    FailureGroup,
    FailureResolution,
    NotCounted,
    Skip,
    evidence_id,
)
from active_memory.evidence.signatures import FailureSignature, signature
from active_memory.runlog.record import RunRecord, ToolFailure

SAME_ERROR_TIMES = 2
ANY_ERROR_TIMES = 3
MAX_COMMANDS_SHOWN = 5

TEST_PROGRAMS = frozenset(
    {"pytest", "py.test", "jest", "vitest", "mocha", "ava", "rspec", "phpunit", "karma"}
)
"""Programs that only run tests; other test families name a `test` subcommand or script
(`mix test`, `go test`, `npm test`, `npm run test:unit`, `make test`)."""
COMMIT_FAMILIES = frozenset({"git commit", "pre-commit run", "pre-commit"})
AUTO_FIX = re.compile(
    r"files were modified by this hook|\breformatted \S|^Fixing \S|\(\d+ fixed\b|"
    r"\bFixed \d+ (?:error|file|issue)",
    re.I | re.M,
)
"""What a pre-commit tool prints when it fixed the files itself."""

RED_GREEN = "red-green cycle: the same test passed after files were edited"
AUTO_FIXED = "auto-fixed by a pre-commit hook, then committed on a clean retry"


def is_test_family(family: str) -> bool:
    """Whether a family runs tests (see `TEST_PROGRAMS`)."""
    if family_program(family) in TEST_PROGRAMS:
        return True
    return any(word == "test" or word.startswith("test:") for word in family.split(" ")[1:])


def repeated_failures(
    record: RunRecord, earlier: Collection[FailureSignature] = frozenset()
) -> tuple[list[EvidenceItem], list[Skip]]:
    """The rule's items, and the families whose failures did not qualify on their own."""
    branches = branches_of(record)
    items: list[EvidenceItem] = []
    skips: list[Skip] = []
    for family, failures in sorted(_by_family(record).items()):
        counted, not_counted = _counted(failures)
        signatures = [signature(failure, branches) for failure in counted]
        why = _qualifies(signatures, earlier)
        if why is None:
            if not_counted and len(failures) >= SAME_ERROR_TIMES:
                reasons = sorted({item.reason for item in not_counted})
                skips.append(Skip(family=family, reason="; ".join(reasons)))
            continue
        items.append(_item(record.run_id, family, counted, signatures, not_counted, why))
    return items, skips


def run_signatures(record: RunRecord) -> frozenset[FailureSignature]:
    """The signatures of the run's failures that count on their own (a red-green cycle
    or an auto-fix does not): what the store keeps for the repository's later runs."""
    branches = branches_of(record)
    return frozenset(
        signature(failure, branches)
        for failures in _by_family(record).values()
        for failure in _counted(failures)[0]
    )


def failures_behind(record: RunRecord, item: EvidenceItem) -> list[list[ToolFailure]]:
    """The recorded failures behind each of `item.failures`, in the same order: for a
    rule-4 item of `record`'s scan, the counted failures of its family with that group's
    normalised error, in record order (empty for an item of another kind or run)."""
    if item.kind != "tool_failures" or item.family is None:
        return []
    counted, _ = _counted(_by_family(record).get(item.family, []))
    branches = branches_of(record)
    groups: dict[str, list[ToolFailure]] = {}
    for failure in counted:
        groups.setdefault(signature(failure, branches).error, []).append(failure)
    return [groups.get(group.signature, []) for group in item.failures]


def branches_of(record: RunRecord) -> tuple[str, ...]:
    """The branch names a record's errors are normalised without (its source branch)."""
    branch = record.source.branch if record.source else None
    return (branch,) if branch else ()


def _by_family(record: RunRecord) -> dict[str, list[ToolFailure]]:
    by_family: dict[str, list[ToolFailure]] = defaultdict(list)
    for failure in record.tool_failures:
        by_family[failure.family].append(failure)
    return by_family


def _counted(failures: list[ToolFailure]) -> tuple[list[ToolFailure], list[NotCounted]]:
    """A family's failures that count on their own, and those that do not, with why."""
    counted: list[ToolFailure] = []
    not_counted: list[NotCounted] = []
    for failure in failures:
        reason = _not_on_its_own(failure, failures)
        if reason is None:
            counted.append(failure)
        else:
            not_counted.append(
                NotCounted(at=_when(failure.at), command=failure.command, reason=reason)
            )
    return counted, not_counted


def _qualifies(
    signatures: list[FailureSignature], earlier: Collection[FailureSignature]
) -> str | None:
    if not signatures:
        return None
    if max(Counter(signatures).values()) >= SAME_ERROR_TIMES:
        return "the same error twice"
    if len(signatures) >= ANY_ERROR_TIMES:
        return "three failures"
    if any(one in earlier for one in signatures):
        return "seen in an earlier run"
    return None


def _not_on_its_own(failure: ToolFailure, family: list[ToolFailure]) -> str | None:
    resolved = failure.resolved_by
    if resolved is None or resolved.family != failure.family:
        return None
    if (
        is_test_family(failure.family)
        and resolved.edited is True
        and _same_targets(failure.command, resolved.command)
    ):
        return RED_GREEN
    if failure.family in COMMIT_FAMILIES and AUTO_FIX.search(failure.error):
        between = [
            other
            for other in family
            if other is not failure
            and other.at is not None
            and failure.at is not None
            and resolved.at is not None
            and failure.at < other.at < resolved.at
        ]
        if not between:
            return AUTO_FIXED
    return None


def _same_targets(failed: str, passed: str) -> bool:
    before, after = main_invocation(failed), main_invocation(passed)
    if before is None or after is None:
        return False
    # The whole suite passing covers the test that failed.
    return not after.targets or set(before.targets) == set(after.targets)


def _item(
    run_id: str,
    family: str,
    counted: list[ToolFailure],
    signatures: list[FailureSignature],
    not_counted: list[NotCounted],
    why: str,
) -> EvidenceItem:
    groups: dict[FailureSignature, list[ToolFailure]] = {}
    for failure, one in zip(counted, signatures, strict=True):
        groups.setdefault(one, []).append(failure)
    shown = tuple(
        FailureGroup(
            error=members[0].error,
            signature=one.error,
            count=len(members),
            times=tuple(_when(m.at) for m in members),
            commands=tuple(dict.fromkeys(m.command for m in members))[:MAX_COMMANDS_SHOWN],
            exit_codes=tuple(sorted({m.exit_code for m in members if m.exit_code is not None})),
        )
        for one, members in groups.items()
    )
    last = counted[-1].resolved_by
    resolution = None
    seconds = None
    if last is not None:
        resolution = FailureResolution(at=_when(last.at), command=last.command, family=last.family)
        first = counted[0].at
        if first is not None and last.at is not None:
            seconds = max((last.at - first).total_seconds(), 0.0)
    nodes = tuple(sorted({f.node for f in counted if f.node is not None}))
    return EvidenceItem(
        id=evidence_id(run_id, "tool_failures", family=family),
        kind="tool_failures",
        nodes=nodes,
        count=len(counted),
        specialists=(REPOSITORY_DISCOVERY,),
        family=family,
        qualified=why,
        failures=shown,
        resolution=resolution,
        seconds_to_resolution=seconds,
        not_counted=tuple(not_counted),
    )


def _when(at: datetime | None) -> str:
    return at.isoformat().replace("+00:00", "Z") if at is not None else ""
