"""The SQLite store's schema and its forward migrations.

`PRAGMA application_id` marks a file as ours; `PRAGMA user_version` is the schema
version. Migration N takes a store from version N-1 to N and runs inside the same
write transaction that bumps the version, so a crash leaves the old version intact.
"""

from __future__ import annotations

APPLICATION_ID = 0x414D454D  # "AMEM"

# Recall generations (docs/store.md, "Version and changes"): a store-wide change version
# bumped once by every write that changes lessons, stamped on what it changed. One step in
# MIGRATIONS below: renumber it by moving that one entry.
GENERATIONS_MIGRATION = """
ALTER TABLE lessons ADD COLUMN change_version INTEGER NOT NULL DEFAULT 0;
CREATE INDEX lessons_by_change
    ON lessons (scope_kind, repository, graph_hash, node, change_version);
INSERT INTO store_meta (key, value) VALUES ('change_version', '0');
"""

# Version 6, manual review (docs/review.md): proposed creations and adaptations wait here, never in
# `lessons`, until a person approves or rejects them. One step: renumber by moving it.
REVIEW_MIGRATION = """
CREATE TABLE lesson_proposals (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    state           TEXT NOT NULL CHECK (state IN ('proposed', 'approved', 'rejected')),
    action          TEXT NOT NULL CHECK (action IN ('create', 'adapt')),
    lesson_id       TEXT,
    base_revision   INTEGER,
    scope_kind      TEXT NOT NULL,
    repository      TEXT NOT NULL,
    graph_hash      TEXT NOT NULL,
    node            TEXT NOT NULL,
    mutation        TEXT NOT NULL,  -- JSON of the CreateLesson / AdaptLesson
    run_id          TEXT NOT NULL,
    specialist      TEXT NOT NULL,
    at              TEXT NOT NULL,
    decided_at      TEXT,
    decided_by      TEXT,
    decision_reason TEXT,
    result_id       TEXT,
    result_revision INTEGER
) STRICT;
CREATE INDEX lesson_proposals_by_state ON lesson_proposals (state, seq);
CREATE INDEX lesson_proposals_by_scope
    ON lesson_proposals (scope_kind, repository, graph_hash, node, state);
"""

# Version 7 (docs/store.md, "Effectiveness over time"): one dated event per counted
# observation of a lesson by a run, written in the publish that adds to the counters.
# Counters from before this step keep no dates: the history starts at the migration.
EFFECTIVENESS_EVENTS_MIGRATION = """
CREATE TABLE lesson_effectiveness_events (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    lesson_id TEXT NOT NULL REFERENCES lessons (id),
    run_id    TEXT NOT NULL,
    delivered INTEGER NOT NULL CHECK (delivered IN (0, 1)),
    recurred  INTEGER NOT NULL CHECK (recurred IN (0, 1)),
    at        TEXT NOT NULL,  -- ISO UTC time of the publish
    UNIQUE (lesson_id, run_id)
) STRICT;
CREATE INDEX lesson_effectiveness_events_by_at ON lesson_effectiveness_events (at);
INSERT INTO store_meta (key, value)
    VALUES ('effectiveness_events_since', CAST(CAST(strftime('%s', 'now') AS INTEGER) AS TEXT));
"""

# Failure signatures of each repository (SPEC §4 item 4; docs/store.md "Failure signatures").
FAILURE_SIGNATURES_MIGRATION = """
CREATE TABLE failure_signatures (
    repository TEXT NOT NULL,
    family     TEXT NOT NULL,
    error      TEXT NOT NULL,     -- the normalised error
    runs       INTEGER NOT NULL CHECK (runs >= 1),
    first_seen TEXT NOT NULL,
    last_seen  TEXT NOT NULL,
    first_run  TEXT NOT NULL,
    last_run   TEXT NOT NULL,
    PRIMARY KEY (repository, family, error)
) STRICT;
CREATE INDEX failure_signatures_by_seen ON failure_signatures (repository, last_seen);
"""

# Version 9: the failures each `ev-tf-` evidence item was made of (family, normalised
# error), kept by the publish whose lessons or proposals cite it, so that effectiveness
# can tell whether a lesson's own failure came back (docs/store.md "Evidence failures").
EVIDENCE_FAILURES_MIGRATION = """
CREATE TABLE evidence_failures (
    evidence_id TEXT NOT NULL,    -- an `ev-tf-` evidence item ID
    family      TEXT NOT NULL,
    error       TEXT NOT NULL,    -- the normalised error
    PRIMARY KEY (evidence_id, family, error)
) STRICT;
"""

# Version 10: a lesson kept without a new revision ("still valid", store/keeps.py).
KEEPS_MIGRATION = """
CREATE TABLE lesson_keeps (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    lesson_id  TEXT NOT NULL REFERENCES lessons (id),
    revision   INTEGER NOT NULL CHECK (revision >= 1),
    status     TEXT NOT NULL CHECK (status IN ('active', 'deferred')),
    specialist TEXT NOT NULL,
    run_id     TEXT,
    model      TEXT,
    reason     TEXT NOT NULL,
    at         TEXT NOT NULL
) STRICT;
CREATE INDEX lesson_keeps_by_lesson ON lesson_keeps (lesson_id, seq);
CREATE TRIGGER lesson_keeps_no_update BEFORE UPDATE ON lesson_keeps
BEGIN SELECT RAISE(ABORT, 'lesson_keeps is append-only'); END;
CREATE TRIGGER lesson_keeps_no_delete BEFORE DELETE ON lesson_keeps
BEGIN SELECT RAISE(ABORT, 'lesson_keeps is append-only'); END;
"""

# Version 12 (docs/store.md, "Recall keys"): what a scope's lessons are recalled by, kept
# by triggers so that a hook can answer a scope's first calls with an indexed, bounded
# query while its first recall generation is built in the background (docs/recall.md,
# "A run with no generation yet"). SQLite only: a hook never reads a PostgreSQL store.
# `sort_key` orders lesson IDs naturally when their digits end them (`L-9` < `L-12`: the
# store's own IDs); `min_bytes` is a lower bound of the rendered card's UTF-8 size
# (recall/frame.py `render_card`: 11 bytes of markup, the ID, the revision and the
# recommendation without its surrounding newlines; the title counts as 0), so a card
# that cannot fit what is left of a budget is skipped inside the index.
_KEY_SORT = (
    "rtrim({l}.id, '0123456789') || printf('%020d', "
    "CAST(substr({l}.id, length(rtrim({l}.id, '0123456789')) + 1) AS INTEGER))"
)
_KEY_BYTES = (
    "11 + length(CAST({l}.id AS BLOB)) + length(CAST({l}.revision AS TEXT)) "
    "+ length(CAST(trim({l}.recommendation, char(10)) AS BLOB))"
)
_KEY_SOURCES = (
    ("f", "$.files", "j.value", "''"),
    ("d", "$.folders", "j.value", "''"),
    ("i", "$.identifiers", "j.value", "''"),
    ("c", "$.commands", "j.value", "''"),
    ("k", "$.keywords", "(SELECT min(t.value) FROM json_each(j.value) t)", "j.value"),
)


def _key_inserts(lesson: str, rows: str) -> str:
    """The statements filing the recall keys of the active lessons `rows` yields
    (`lesson` is their alias: NEW in a trigger)."""
    scope = (
        f"s.scope_kind = {lesson}.scope_kind AND s.repository = {lesson}.repository "
        f"AND s.graph_hash = {lesson}.graph_hash AND s.node = {lesson}.node"
    )
    statements = [
        "INSERT OR IGNORE INTO recall_scopes (scope_kind, repository, graph_hash, node) "
        f"SELECT DISTINCT {lesson}.scope_kind, {lesson}.repository, {lesson}.graph_hash, "
        f"{lesson}.node {rows} WHERE {lesson}.status = 'active';"
    ]
    for kind, path, value, terms in _KEY_SOURCES:
        statements.append(
            "INSERT OR IGNORE INTO recall_keys "
            "(scope, kind, value, sort_key, lesson_id, min_bytes, terms) "
            f"SELECT s.id, '{kind}', {value}, {_KEY_SORT.format(l=lesson)}, {lesson}.id, "
            f"{_KEY_BYTES.format(l=lesson)}, {terms} "
            f"{rows}{', ' if rows else 'FROM '}recall_scopes s, "
            f"json_each({lesson}.associations, '{path}') j "
            f"WHERE {lesson}.status = 'active' AND {scope};"
        )
    return "\n    ".join(statements)


RECALL_KEYS_MIGRATION = f"""
CREATE TABLE recall_scopes (
    id          INTEGER PRIMARY KEY,
    scope_kind  TEXT NOT NULL,
    repository  TEXT NOT NULL,
    graph_hash  TEXT NOT NULL,
    node        TEXT NOT NULL,
    UNIQUE (scope_kind, repository, graph_hash, node)
) STRICT;
CREATE TABLE recall_keys (
    scope      INTEGER NOT NULL REFERENCES recall_scopes (id),
    kind       TEXT NOT NULL CHECK (kind IN ('f', 'd', 'i', 'c', 'k')),
    value      TEXT NOT NULL,    -- path, folder, identifier, family; k: the group's first term
    sort_key   TEXT NOT NULL,
    lesson_id  TEXT NOT NULL,
    terms      TEXT NOT NULL,    -- k: the group (JSON array); '' otherwise
    -- After the key's columns: SQLite 3.40's integrity_check misreads a WITHOUT ROWID
    -- table whose other columns come between them.
    min_bytes  INTEGER NOT NULL,
    PRIMARY KEY (scope, kind, value, sort_key, lesson_id, terms)
) STRICT, WITHOUT ROWID;
CREATE INDEX recall_keys_by_lesson ON recall_keys (lesson_id);
{_key_inserts("l", "FROM lessons l")}
CREATE TRIGGER recall_keys_insert AFTER INSERT ON lessons
BEGIN
    {_key_inserts("NEW", "")}
END;
CREATE TRIGGER recall_keys_update
AFTER UPDATE OF revision, status, title, recommendation, associations ON lessons
BEGIN
    DELETE FROM recall_keys WHERE lesson_id = OLD.id;
    {_key_inserts("NEW", "")}
END;
"""

# Index i holds the script that creates version i + 1.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE store_meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) STRICT;
    INSERT INTO store_meta (key, value) VALUES ('next_lesson_number', '1');

    -- Current state of every ID ever used. A retired lesson keeps id, revision, scope
    -- and canonical, never its card: a tombstone that stops stale writers recreating it.
    CREATE TABLE lessons (
        id             TEXT PRIMARY KEY,
        revision       INTEGER NOT NULL CHECK (revision >= 1),
        status         TEXT NOT NULL CHECK (status IN ('active', 'deferred', 'retired')),
        scope_kind     TEXT NOT NULL CHECK (scope_kind IN ('repository', 'graph')),
        repository     TEXT NOT NULL,  -- '' for a graph lesson of every repository
        graph_hash     TEXT NOT NULL,  -- '' for a repository lesson
        node           TEXT NOT NULL,  -- '' for a repository lesson
        title          TEXT,
        recommendation TEXT,
        associations   TEXT,           -- JSON of Associations
        canonical      TEXT,
        created_at     TEXT NOT NULL,
        updated_at     TEXT NOT NULL,
        CHECK ((status = 'retired') = (title IS NULL)),
        CHECK ((status = 'retired') = (recommendation IS NULL)),
        CHECK ((status = 'retired') = (associations IS NULL))
    ) STRICT;
    CREATE INDEX lessons_by_scope
        ON lessons (scope_kind, repository, graph_hash, node, status, id);

    -- Evidence apart from the card: run IDs, evidence item IDs, citations (JSON).
    CREATE TABLE lesson_evidence (
        seq       INTEGER PRIMARY KEY,
        lesson_id TEXT NOT NULL REFERENCES lessons (id),
        kind      TEXT NOT NULL CHECK (kind IN ('run', 'evidence', 'citation')),
        value     TEXT NOT NULL,
        UNIQUE (lesson_id, kind, value)
    ) STRICT;

    -- Append-only history of every revision: who (run, specialist, model), what, why.
    -- It is the provenance of each lesson and the source of `lessons revert`.
    CREATE TABLE lesson_history (
        seq               INTEGER PRIMARY KEY AUTOINCREMENT,
        lesson_id         TEXT NOT NULL,
        revision          INTEGER NOT NULL,
        previous_revision INTEGER,
        action            TEXT NOT NULL
            CHECK (action IN ('create', 'adapt', 'retire', 'defer', 'revert', 'import')),
        status            TEXT NOT NULL CHECK (status IN ('active', 'deferred', 'retired')),
        scope             TEXT NOT NULL,  -- JSON of the scope
        card              TEXT,           -- JSON of the card at this revision; NULL if retired
        specialist        TEXT NOT NULL,
        run_id            TEXT,
        model             TEXT,
        reason            TEXT NOT NULL,
        at                TEXT NOT NULL,
        UNIQUE (lesson_id, revision)
    ) STRICT;
    CREATE TRIGGER lesson_history_no_update BEFORE UPDATE ON lesson_history
    BEGIN SELECT RAISE(ABORT, 'lesson_history is append-only'); END;
    CREATE TRIGGER lesson_history_no_delete BEFORE DELETE ON lesson_history
    BEGIN SELECT RAISE(ABORT, 'lesson_history is append-only'); END;
    """,
    # Version 2: effectiveness counters beside each lesson, added to by postmortems.
    # last_run_id makes a repeated postmortem of one run count once.
    """
    CREATE TABLE lesson_effectiveness (
        lesson_id                   TEXT PRIMARY KEY REFERENCES lessons (id),
        runs_delivered              INTEGER NOT NULL DEFAULT 0 CHECK (runs_delivered >= 0),
        recurred_when_delivered     INTEGER NOT NULL DEFAULT 0
            CHECK (recurred_when_delivered BETWEEN 0 AND runs_delivered),
        runs_touched_not_delivered  INTEGER NOT NULL DEFAULT 0
            CHECK (runs_touched_not_delivered >= 0),
        recurred_when_not_delivered INTEGER NOT NULL DEFAULT 0
            CHECK (recurred_when_not_delivered BETWEEN 0 AND runs_touched_not_delivered),
        last_run_id                 TEXT
    ) STRICT;
    """,
    # Version 3: refused near-duplicate proposals, kept as adaptation candidates of the
    # lesson they repeat until a maintenance decision on it consumes them.
    """
    CREATE TABLE lesson_candidates (
        seq            INTEGER PRIMARY KEY AUTOINCREMENT,
        lesson_id      TEXT NOT NULL REFERENCES lessons (id),
        run_id         TEXT NOT NULL,
        specialist     TEXT NOT NULL,
        title          TEXT NOT NULL,
        recommendation TEXT NOT NULL,
        associations   TEXT NOT NULL,  -- JSON of Associations
        score          REAL NOT NULL CHECK (score BETWEEN 0 AND 100),
        at             TEXT NOT NULL,
        UNIQUE (lesson_id, run_id, specialist, title)
    ) STRICT;
    CREATE INDEX lesson_candidates_by_lesson ON lesson_candidates (lesson_id, seq);
    """,
    GENERATIONS_MIGRATION,
    # Version 5: the postmortem queue (store/queue.py): one entry per harness session,
    # enqueued by session-end hooks, claimed by workers under a lease. Times are epoch
    # seconds on this machine's clock.
    """
    CREATE TABLE postmortem_queue (
        id             INTEGER PRIMARY KEY AUTOINCREMENT,
        harness        TEXT NOT NULL,
        session_id     TEXT NOT NULL,
        transcript     TEXT NOT NULL,  -- '' when the harness named none
        cwd            TEXT NOT NULL,
        model          TEXT NOT NULL,
        event          TEXT NOT NULL,  -- the last end event's name
        final          INTEGER NOT NULL CHECK (final IN (0, 1)),
        size           INTEGER,        -- transcript bytes at the last end event
        processed_size INTEGER,        -- transcript bytes when the last claim began
        state          TEXT NOT NULL
            CHECK (state IN ('pending', 'running', 'done', 'failed')),
        attempts       INTEGER NOT NULL CHECK (attempts >= 0),
        ends           INTEGER NOT NULL CHECK (ends >= 1),
        enqueued_at    REAL NOT NULL,
        updated_at     REAL NOT NULL,
        last_end_at    REAL NOT NULL,
        not_before     REAL NOT NULL,
        lease_owner    TEXT,
        lease_expires  REAL,
        scope          TEXT NOT NULL,  -- repository namespace, once an import found it
        holds_scope    INTEGER NOT NULL CHECK (holds_scope IN (0, 1)),
        reason         TEXT NOT NULL,
        result         TEXT,           -- JSON summary of the last postmortem
        UNIQUE (harness, session_id),
        CHECK ((state = 'running') = (lease_owner IS NOT NULL))
    ) STRICT;
    CREATE INDEX postmortem_queue_by_state ON postmortem_queue (state, not_before, id);
    """,
    REVIEW_MIGRATION,
    EFFECTIVENESS_EVENTS_MIGRATION,
    FAILURE_SIGNATURES_MIGRATION,
    EVIDENCE_FAILURES_MIGRATION,
    KEEPS_MIGRATION,
    # Version 11 (docs/queue.md): the machine a session ended on; a worker claims only
    # its own machine's entries (and those from before, which name none).
    "ALTER TABLE postmortem_queue ADD COLUMN host TEXT NOT NULL DEFAULT '';",
    RECALL_KEYS_MIGRATION,
)

SCHEMA_VERSION = len(MIGRATIONS)

CHANGES_SCHEMA_VERSION = MIGRATIONS.index(GENERATIONS_MIGRATION) + 1
"""The first schema version with `change_version` (what the lean change reader needs)."""

RECALL_KEYS_SCHEMA_VERSION = MIGRATIONS.index(RECALL_KEYS_MIGRATION) + 1
"""The first schema version with `recall_keys` (what a hook's direct answers read)."""
