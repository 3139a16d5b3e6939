"""A scope's lessons by recall key, straight from the SQLite store (the hook's way to
answer before a scope's generation exists; docs/recall.md, "A run with no generation").

`recall_keys` (sqlite_schema.py, version 12) files every active lesson under its files,
folders, identifiers, command families and keyword groups (a group under its first
term), in natural ID order, with a lower bound of its card's size. `read_direct` looks
up each key of a tool call in one read transaction: per key, the first `EXAMINE` index
entries in ID order, of those the first `LIMIT` whose card could fit `room` bytes and
whose lesson is unchanged since `version`. So a lookup is bounded by the call's keys,
never by the store: a folder that half the store names costs `EXAMINE` entries.

Standard library only: this runs in a hook process.
"""

from __future__ import annotations

from active_memory.store.changes import _CITED, scope_clause, sqlite_reading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from active_memory.store.changes import ScopeKey

EXAMINE = 512
"""Index entries read per key at most (in lesson-ID order)."""
LIMIT = 64
"""Lessons returned per key at most: more than a session's budget holds of cards."""


class DirectRead:
    """What `read_direct` found: the store's `version`, the scope's `latest` change and
    the rows `(tier, id, revision, title, recommendation, terms, min_bytes, updated_at,
    citations)`."""

    __slots__ = ("latest", "rows", "version")

    def __init__(self, version: int, latest: int, rows: list[Any]) -> None:
        self.version = version
        self.latest = latest
        self.rows = rows


def read_direct(
    path: str,
    scope: ScopeKey,
    version: int,
    lookups: list[tuple[int, str, str]],
    room: int,
) -> DirectRead:
    """The lessons filed under each `(tier, kind, value)` of `lookups` in `scope`, as of
    `version` (a lesson changed since is left out), whose card could fit `room` bytes.

    Raises `changes.OldSchema` for a store without `recall_keys` yet (a write migrates
    it) and `changes.StoreUnreadable` for one that cannot be read.
    """
    from active_memory.store.changes import _version_and_latest
    from active_memory.store.sqlite_schema import RECALL_KEYS_SCHEMA_VERSION

    with sqlite_reading(path, RECALL_KEYS_SCHEMA_VERSION) as conn:
        if conn is None:
            return DirectRead(0, 0, [])
        current, latest = _version_and_latest(conn, scope)
        where, params = scope_clause(scope)
        found = conn.execute(f"SELECT id FROM recall_scopes WHERE {where}", params).fetchall()
        if not found or not lookups:
            return DirectRead(current, latest, [])
        sql, values = direct_query([row[0] for row in found], lookups, version, room)
        rows = conn.execute(sql, values).fetchall()
    return DirectRead(current, latest, rows)


def direct_query(
    scopes: list[int], lookups: list[tuple[int, str, str]], version: int, room: int
) -> tuple[str, list[Any]]:
    """The one SELECT of `read_direct`: per scope and key a bounded index range (the
    first `EXAMINE` entries in ID order, of those the first `LIMIT` that qualify)."""
    cited = _CITED["sqlite"].replace("lessons.id", "l.id")
    parts: list[str] = []
    values: list[Any] = []
    for tier, kind, value in lookups:
        for scope_id in scopes:
            parts.append(
                f"SELECT * FROM (SELECT {int(tier)}, l.id, l.revision, l.title, "
                f"l.recommendation, k.terms, k.min_bytes{cited} "
                "FROM (SELECT lesson_id, terms, min_bytes, sort_key FROM recall_keys "
                "WHERE scope = ? AND kind = ? AND value = ? ORDER BY sort_key "
                f"LIMIT {EXAMINE}) AS k JOIN lessons AS l ON l.id = k.lesson_id "
                "WHERE k.min_bytes <= ? AND l.change_version <= ? AND l.status = 'active' "
                f"LIMIT {LIMIT})"  # no ORDER BY: it would join all EXAMINE entries
            )
            values += [scope_id, kind, value, room, version]
    return " UNION ALL ".join(parts), values


def read_scope_at(path: str, scope: ScopeKey, version: int) -> list[Any]:
    """`scope`'s active lessons as of `version` (unchanged since), `(id, revision, title,
    recommendation)`: a graph node's instructions before its generation exists. Bounded
    by the node's own lessons (`lessons_by_scope`), never the store."""
    where, params = scope_clause(scope)
    with sqlite_reading(path) as conn:
        if conn is None:
            return []
        rows: list[Any] = conn.execute(
            "SELECT id, revision, title, recommendation FROM lessons "
            f"WHERE {where} AND status = 'active' AND change_version <= ?",
            [*params, version],
        ).fetchall()
    return rows
