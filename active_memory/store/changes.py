"""The store's version and the changes since a version, for recall generations.

Every write transaction that changes lessons bumps one store-wide counter
(`store_meta.change_version`) once and stamps the new value on every lesson row it
inserted or updated (`lessons.change_version`). So "what changed in a scope since version
V" is one indexed range read, and a reader that got version V in one transaction has seen
every change up to V and none after. On PostgreSQL the counter's row lock, held to
commit, orders the versions by commit: a version is never visible before a lower one.

A change is a lesson's current row, whatever its status: `active` means (re)index it,
anything else means drop it. A full read (`since=None`) returns the scope's active
lessons only. Rows are plain tuples (`CHANGE_COLUMNS` order), not pydantic models: recall
needs six columns of each, and a store holds only lessons it validated when writing them.

This module is on a hook process's path, so it imports only the standard library (the
SQLite reader uses `sqlite3` directly, read-only); the async backends call
`scope_clause` and build `ScopeChanges` too.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CHANGE_COLUMNS = "id, revision, status, title, recommendation, associations"
"""What a change row holds first: id, revision, status, title, recommendation, associations
JSON. Two more follow (`_CITED`): the revision's date (`updated_at`, UTC, as text) and the
lesson's fingerprinted citations as one JSON array of `[path, first line, last line,
sha256]` (lines 0, 0: the whole file) in the order recorded, which recall keeps per card
to frame a stale one at delivery (docs/staleness.md). Only those four fields are read
from each citation: its recorded text (`excerpt`) stays in the store."""

_CITED = {
    "sqlite": ", updated_at, (SELECT json_group_array(json_array(json_extract(value, '$.path'), "
    "ifnull(json_extract(value, '$.lines[0]'), 0), ifnull(json_extract(value, '$.lines[1]'), 0), "
    "json_extract(value, '$.sha256'))) FROM (SELECT value FROM lesson_evidence "
    "WHERE lesson_id = lessons.id AND kind = 'citation' "
    "AND json_extract(value, '$.sha256') IS NOT NULL ORDER BY seq))",
    "postgres": ", to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), "
    "(SELECT json_agg(json_build_array(c->>'path', "
    "coalesce((c->'lines'->>0)::int, 0), coalesce((c->'lines'->>1)::int, 0), c->>'sha256') "
    "ORDER BY seq)::text FROM (SELECT seq, value::json AS c FROM lesson_evidence "
    "WHERE lesson_id = lessons.id AND kind = 'citation') AS cited WHERE c->>'sha256' IS NOT NULL)",
}

ChangeRow = tuple[str, int, str, "str | None", "str | None", "str | None", "str", "str | None"]


class ScopeChanges:
    """The store's `version` and the scope's `rows` changed since the version asked for.

    `full` is True when the rows are the whole scope (a read without a base version).
    `latest` is the scope's own latest change version at `version` (0: it never held a
    lesson): a generation of the scope read at `version` holds it at every version
    from `latest` on, until the scope changes again.
    """

    __slots__ = ("full", "latest", "rows", "version")

    def __init__(
        self, version: int, rows: list[ChangeRow], *, full: bool, latest: int | None = None
    ) -> None:
        self.version = version
        self.rows = rows
        self.full = full
        self.latest = version if latest is None else latest

    def __repr__(self) -> str:
        return (
            f"ScopeChanges(version={self.version}, rows={len(self.rows)}, full={self.full}, "
            f"latest={self.latest})"
        )


class ScopeKey:
    """One recall scope: a repository's lessons, or one graph node's (for one repository).

    A graph scope holds the node's unqualified lessons and those qualified by
    `repository`, so it is keyed by all three (two repositories sharing a graph never
    share a qualified lesson).
    """

    __slots__ = ("graph_hash", "kind", "node", "repository")

    def __init__(
        self,
        kind: str,
        *,
        repository: str | None = None,
        graph_hash: str | None = None,
        node: str | None = None,
    ) -> None:
        self.kind = kind
        self.repository = repository
        self.graph_hash = graph_hash
        self.node = node

    @property
    def name(self) -> str:
        """A stable text naming the scope completely (recall turns it into a file name)."""
        if self.kind == "repository":
            return f"repository\0{self.repository}"
        return f"graph\0{self.graph_hash}\0{self.node}\0{self.repository or ''}"


def scope_clause(scope: ScopeKey) -> tuple[str, list[str]]:
    """The WHERE clause selecting `scope`'s rows (`?` placeholders) and its parameters."""
    if scope.kind == "repository":
        return (
            "scope_kind = 'repository' AND repository = ? AND graph_hash = '' AND node = ''",
            [scope.repository or ""],
        )
    return (
        "scope_kind = 'graph' AND graph_hash = ? AND node = ? AND repository IN ('', ?)",
        [scope.graph_hash or "", scope.node or "", scope.repository or ""],
    )


def changes_query(
    scope: ScopeKey, since: int | None, dialect: str = "sqlite", limit: int | None = None
) -> tuple[str, list[Any]]:
    """The SELECT of `scope`'s changes since `since` (None: its active lessons), at most
    `limit` rows when given."""
    where, names = scope_clause(scope)
    params: list[Any] = list(names)
    if since is None:
        where += " AND status = 'active'"
    else:
        where += " AND change_version > ?"
        params = [*params, since]
    sql = f"SELECT {CHANGE_COLUMNS}{_CITED[dialect]} FROM lessons WHERE {where}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return sql, params


def latest_query(scope: ScopeKey) -> tuple[str, list[Any]]:
    """The SELECT of `scope`'s latest change version (one seek of `lessons_by_change`)."""
    where, params = scope_clause(scope)
    return f"SELECT max(change_version) FROM lessons WHERE {where}", list(params)


def page_query(
    scope: ScopeKey, after: str | None, limit: int, dialect: str = "sqlite"
) -> tuple[str, list[Any]]:
    """The SELECT of `scope`'s next `limit` active lessons by ID after `after` (a
    complete build reads the scope page by page: `lessons_by_scope` in ID order)."""
    where, names = scope_clause(scope)
    params: list[Any] = list(names)
    where += " AND status = 'active'"
    if after is not None:
        where += " AND id > ?"
        params.append(after)
    sql = f"SELECT {CHANGE_COLUMNS}{_CITED[dialect]} FROM lessons WHERE {where} ORDER BY id"
    return sql + f" LIMIT {int(limit)}", params


def sqlite_uri(path: str) -> str:
    """A read-only SQLite URI for the file at `path`.

    Only `%`, `?` and `#` mean something in a URI file name (SQLite's URI rules), so
    only they are escaped: `urllib.parse.quote` would cost a hook process `re`, `enum`
    and `ipaddress` (about 5 ms) on a run's first call. A path that starts with `//` gets
    an empty authority, so it is never read as a host.
    """
    import os

    absolute = os.path.abspath(path)
    escaped = "".join(f"%{ord(ch):02X}" if ch in "%?#" else ch for ch in absolute)
    return ("file://" if escaped.startswith("//") else "file:") + escaped + "?mode=ro"


class OldSchema(Exception):
    """The SQLite store predates change versions; open it with the full store once."""


class StoreUnreadable(Exception):
    """The SQLite file cannot be read as a lesson store (the hook logs and answers nothing)."""


def read_sqlite_changes(
    path: str, scope: ScopeKey, since: int | None, limit: int | None = None
) -> ScopeChanges:
    """`scope`'s changes since `since` in the SQLite store at `path`, one read transaction
    (at most `limit` rows when given; `limit=0`: the version and `latest` only).

    A missing file is an empty store (version 0). Raises `OldSchema` for a store the
    full store has not migrated yet, `StoreUnreadable` for an unreadable one.
    """
    with sqlite_reading(path) as conn:
        if conn is None:
            return ScopeChanges(0, [], full=since is None, latest=0)
        version, latest = _version_and_latest(conn, scope)
        rows: list[Any] = []
        if limit != 0:
            sql, params = changes_query(scope, since, limit=limit)
            rows = conn.execute(sql, params).fetchall()
    return ScopeChanges(version, rows, full=since is None, latest=latest)


def read_sqlite_page(
    path: str, scope: ScopeKey, after: str | None, limit: int
) -> tuple[int, list[Any]]:
    """(store version, the next `limit` active lessons of `scope` after ID `after`)."""
    with sqlite_reading(path) as conn:
        if conn is None:
            return 0, []
        version, _ = _version_and_latest(conn, scope)
        sql, params = page_query(scope, after, limit)
        return version, conn.execute(sql, params).fetchall()


class sqlite_reading:
    """One read transaction on the SQLite store at `path` (`with … as conn`; conn is None
    when the file does not exist or was never written). Checks the store is ours and
    migrated far enough for recall."""

    def __init__(self, path: str, schema: int = 0) -> None:
        self.path = path
        self.schema = schema
        self.conn: Any = None

    def __enter__(self) -> Any:
        import os
        import sqlite3

        from active_memory.store.sqlite_schema import APPLICATION_ID, CHANGES_SCHEMA_VERSION

        if not os.path.exists(self.path):
            return None
        try:
            self.conn = sqlite3.connect(
                sqlite_uri(self.path), uri=True, timeout=5.0, isolation_level=None
            )
            self.conn.execute("BEGIN")  # one snapshot for the version and the rows
            app_id, schema = self.conn.execute(
                "SELECT (SELECT application_id FROM pragma_application_id), "
                "(SELECT user_version FROM pragma_user_version)"
            ).fetchone()
        except sqlite3.Error as exc:
            self._close()
            raise StoreUnreadable(f"{self.path}: unreadable lesson store: {exc}") from None
        if app_id == 0 and schema == 0:
            self._close()
            return None  # created, never written
        if app_id != APPLICATION_ID:
            self._close()
            raise StoreUnreadable(f"{self.path}: not an Active Memory lesson store")
        if schema < max(CHANGES_SCHEMA_VERSION, self.schema):
            self._close()
            raise OldSchema("the store predates what recall reads; a write migrates it")
        return self.conn

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        import sqlite3

        try:
            if exc_type is None and self.conn is not None:
                self.conn.execute("COMMIT")
        except sqlite3.Error as error:
            raise StoreUnreadable(f"{self.path}: unreadable lesson store: {error}") from None
        finally:
            self._close()
        if exc_type is not None and issubclass(exc_type, sqlite3.Error):
            raise StoreUnreadable(f"{self.path}: unreadable lesson store: {exc}") from None

    def _close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _version_and_latest(conn: Any, scope: ScopeKey) -> tuple[int, int]:
    (version,) = conn.execute(
        "SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'change_version'"
    ).fetchone()
    sql, params = latest_query(scope)
    (latest,) = conn.execute(sql, params).fetchone()
    return int(version), int(latest or 0)
