"""The failure signatures each repository has seen (SPEC §4 item 4): a tool failure's
family and normalised error, with the runs that showed it and when.

A postmortem's publish records its run's signatures in its own transaction (a dry run
records none); the next run's scanner reads them, leaving out those only this run showed,
so a failure seen once here and once in an earlier session of the repository qualifies.
At most `SIGNATURES_KEPT` per repository: the least recently seen go first.

The same publish keeps the failures of the `ev-tf-` evidence items its lessons and
proposals cite (`evidence_failures`, schema 9): an evidence ID's family and normalised
errors, read back by `LessonStore.written_against`, so effectiveness can tell whether the
very failure a lesson was written against came back. An ID is made from its run and
family, so rows of one ID never change; a proposal approved later finds its own.
"""

from __future__ import annotations

from typing import NamedTuple

from active_memory.store.dialect import Tx

SIGNATURES_KEPT = 10_000


class SeenFailures(NamedTuple):
    """The signatures one run showed: `(family, normalised error)` pairs."""

    repository: str
    run_id: str
    at: str
    signatures: tuple[tuple[str, str], ...]
    cited: tuple[tuple[str, str, str], ...] = ()
    """`(evidence ID, family, normalised error)` of the `ev-tf-` items the publish's
    creations, adaptations and proposals cite (filled by the publish)."""


# A run seen again (a repeated postmortem of it) does not count twice.
_RECORD = (
    "INSERT INTO failure_signatures (repository, family, error, runs, first_seen, last_seen, "
    "first_run, last_run) VALUES (?, ?, ?, 1, ?, ?, ?, ?) "
    "ON CONFLICT (repository, family, error) DO UPDATE SET "
    "runs = failure_signatures.runs + CASE WHEN failure_signatures.last_run = "
    "excluded.last_run THEN 0 ELSE 1 END, last_seen = excluded.last_seen, "
    "last_run = excluded.last_run"
)
# Rows past the newest SIGNATURES_KEPT (LIMIT with a huge count: both dialects accept it).
_TRIM = (
    "DELETE FROM failure_signatures WHERE repository = ? AND (family, error) IN "
    "(SELECT family, error FROM failure_signatures WHERE repository = ? "
    "ORDER BY last_seen DESC, family, error LIMIT 9223372036854775807 OFFSET ?)"
)
EARLIER_SQL = (
    "SELECT family, error FROM failure_signatures WHERE repository = ? "
    "AND NOT (runs = 1 AND first_run = ?) ORDER BY family, error"
)


_CITE = (
    "INSERT INTO evidence_failures (evidence_id, family, error) VALUES (?, ?, ?) "
    "ON CONFLICT (evidence_id, family, error) DO NOTHING"
)
WRITTEN_AGAINST_SQL = "SELECT evidence_id, family, error FROM evidence_failures WHERE {where}"


async def record_signatures(tx: Tx, seen: SeenFailures) -> None:
    """Keep the cited items' failures, then add one run's signatures to its
    repository's, each in key order."""
    cited = sorted(set(seen.cited))
    if cited:
        await tx.executemany(_CITE, cited)
    pairs = sorted(set(seen.signatures))
    if not pairs:
        return
    r, run, at = seen.repository, seen.run_id, seen.at
    await tx.executemany(_RECORD, [(r, f, e, at, at, run, run) for f, e in pairs])
    await tx.execute(_TRIM, r, r, SIGNATURES_KEPT)
