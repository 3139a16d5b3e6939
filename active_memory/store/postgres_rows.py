"""PostgreSQL-specific pieces of the store: writing a change set, reading a URL's
password (to mask it), and explaining a failed connection without printing it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import unquote, urlsplit

import asyncpg

from active_memory.errors import StoreUnavailable
from active_memory.store.rows import LESSON_COLUMNS, ChangeSet

if TYPE_CHECKING:
    Connection: TypeAlias = asyncpg.pool.PoolConnectionProxy[asyncpg.Record]


async def write_changes(conn: Connection, rows: ChangeSet) -> None:
    """Write a change set inside the caller's transaction (rows are locked by then)."""
    if rows.inserts:
        await conn.executemany(
            f"INSERT INTO lessons ({LESSON_COLUMNS}, created_at, updated_at) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::text::jsonb, $11, "
            "$12::text::timestamptz, $13::text::timestamptz)",
            rows.inserts,
        )
    if rows.updates:
        await conn.executemany(
            "UPDATE lessons SET revision = $1, status = $2, title = $3, recommendation = $4, "
            "associations = $5::text::jsonb, canonical = $6, updated_at = $7::text::timestamptz "
            "WHERE id = $8 AND revision = $9",
            rows.updates,
        )
    changed = [row[0] for row in rows.inserts] + [row[7] for row in rows.updates]
    if changed:
        # One new store version per write, stamped on every lesson it changed. The
        # counter's row lock, held to commit, orders versions by commit (docs/store.md).
        version = await conn.fetchval(
            "UPDATE store_meta SET value = value + 1 WHERE key = 'change_version' RETURNING value"
        )
        await conn.execute(
            "UPDATE lessons SET change_version = $1 WHERE id = ANY($2::text[])", version, changed
        )
    if rows.dropped_evidence:
        await conn.execute(
            "DELETE FROM lesson_evidence WHERE lesson_id = ANY($1::text[])",
            [lesson_id for (lesson_id,) in rows.dropped_evidence],
        )
    if rows.evidence:
        await conn.executemany(
            # A citation cited again moves to the end (a new seq): the latest fingerprint
            # of a range is its last row, also when the code went back to an earlier text.
            "INSERT INTO lesson_evidence (lesson_id, kind, value) VALUES ($1, $2, $3) "
            "ON CONFLICT (lesson_id, kind, value) DO UPDATE SET seq = DEFAULT "
            "WHERE excluded.kind = 'citation'",
            rows.evidence,
        )
    if rows.history:
        await conn.executemany(
            "INSERT INTO lesson_history (lesson_id, revision, previous_revision, action, "
            "status, scope, card, specialist, run_id, model, reason, at) "
            "VALUES ($1, $2, $3, $4, $5, $6::text::jsonb, $7::text::jsonb, $8, $9, $10, $11, "
            "$12::text::timestamptz)",
            rows.history,
        )


def json_citation(value: str) -> Any:
    return json.loads(value)


def url_password(url: str) -> str | None:
    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None


def connect_error(location: str, secret: str | None, exc: Exception) -> StoreUnavailable:
    """A clear, password-free reason why connecting failed."""
    text = str(exc)
    if secret:
        text = text.replace(secret, "***")
    reason: str
    if isinstance(
        exc, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError
    ):
        reason = f"the server refused the login ({text}); check the user and password"
    elif isinstance(exc, asyncpg.InvalidCatalogNameError):
        reason = f"{text}; create it first (`createdb`) or fix the database name"
    elif isinstance(exc, asyncpg.InsufficientPrivilegeError):
        reason = f"missing permission to connect: {text}"
    elif isinstance(exc, TimeoutError):
        reason = "the server did not answer in time; check the host and port"
    elif isinstance(exc, OSError):
        reason = f"cannot reach the PostgreSQL server ({text}); is it running at that address?"
    elif isinstance(exc, asyncpg.PostgresError | asyncpg.InterfaceError | ValueError):
        reason = f"cannot connect: {text}"
    else:
        raise exc
    return StoreUnavailable(location, reason)
