"""The failure signatures each repository has seen (SPEC §4 item 4): a tool failure's
family and normalised error, with the runs that showed it and when.

A postmortem's publish records its run's signatures in its own transaction (a dry run
records none); the next run's scanner reads them, leaving out those only this run showed,
so a failure seen once here and once in an earlier session of the repository qualifies.
At most `SIGNATURES_KEPT` per repository: the least recently seen go first.
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


async def record_signatures(tx: Tx, seen: SeenFailures) -> None:
    """Add one run's signatures to its repository's, in (family, error) order."""
    pairs = sorted(set(seen.signatures))
    if not pairs:
        return
    r, run, at = seen.repository, seen.run_id, seen.at
    await tx.executemany(_RECORD, [(r, f, e, at, at, run, run) for f, e in pairs])
    await tx.execute(_TRIM, r, r, SIGNATURES_KEPT)
