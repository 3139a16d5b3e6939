"""The PostgreSQL store's schema and its forward migrations.

`active_memory_schema` holds one row: the schema version. Migration N takes a store from
version N-1 to N inside the transaction that bumps the version, under a transaction-level
advisory lock, so concurrent openers of an old (or empty) database migrate it once.
"""

from __future__ import annotations

import re

# Key of the advisory lock taken while migrating: "AMEM" as a number, like SQLite's
# application_id, so it is unlikely to collide with another application's locks.
MIGRATION_LOCK = 0x414D454D

VERSION_TABLE = "active_memory_schema"

# Version 10: a lesson kept without a new revision ("still valid", store/keeps.py).
KEEPS_MIGRATION = (
    """
    CREATE TABLE lesson_keeps (
        seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        lesson_id  TEXT NOT NULL REFERENCES lessons (id),
        revision   INTEGER NOT NULL CHECK (revision >= 1),
        status     TEXT NOT NULL CHECK (status IN ('active', 'deferred')),
        specialist TEXT NOT NULL,
        run_id     TEXT,
        model      TEXT,
        reason     TEXT NOT NULL,
        at         TIMESTAMPTZ NOT NULL
    )
    """,
    "CREATE INDEX lesson_keeps_by_lesson ON lesson_keeps (lesson_id, seq)",
    # Append-only, like the history it belongs to (the same refusing function).
    """
    CREATE TRIGGER lesson_keeps_no_change
        BEFORE UPDATE OR DELETE ON lesson_keeps
        FOR EACH ROW EXECUTE FUNCTION lesson_history_append_only()
    """,
    """
    CREATE TRIGGER lesson_keeps_no_truncate
        BEFORE TRUNCATE ON lesson_keeps
        FOR EACH STATEMENT EXECUTE FUNCTION lesson_history_append_only()
    """,
)

# Index i holds the statements that create version i + 1.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        f"""
        CREATE TABLE {VERSION_TABLE} (
            singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
            version   INTEGER NOT NULL
        )
        """,
        """
        CREATE TABLE store_meta (
            key   TEXT PRIMARY KEY,
            value BIGINT NOT NULL
        )
        """,
        "INSERT INTO store_meta (key, value) VALUES ('next_lesson_number', 1)",
        # Current state of every ID ever used; a retired lesson is a tombstone without card.
        """
        CREATE TABLE lessons (
            id             TEXT PRIMARY KEY,
            revision       INTEGER NOT NULL CHECK (revision >= 1),
            status         TEXT NOT NULL CHECK (status IN ('active', 'deferred', 'retired')),
            scope_kind     TEXT NOT NULL CHECK (scope_kind IN ('repository', 'graph')),
            repository     TEXT NOT NULL,
            graph_hash     TEXT NOT NULL,
            node           TEXT NOT NULL,
            title          TEXT,
            recommendation TEXT,
            associations   JSONB,
            canonical      TEXT,
            created_at     TIMESTAMPTZ NOT NULL,
            updated_at     TIMESTAMPTZ NOT NULL,
            CHECK ((status = 'retired') = (title IS NULL)),
            CHECK ((status = 'retired') = (recommendation IS NULL)),
            CHECK ((status = 'retired') = (associations IS NULL))
        )
        """,
        """
        CREATE INDEX lessons_by_scope
            ON lessons (scope_kind, repository, graph_hash, node, status, id)
        """,
        """
        CREATE TABLE lesson_evidence (
            seq       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            lesson_id TEXT NOT NULL REFERENCES lessons (id),
            kind      TEXT NOT NULL CHECK (kind IN ('run', 'evidence', 'citation')),
            value     TEXT NOT NULL,
            UNIQUE (lesson_id, kind, value)
        )
        """,
        """
        CREATE TABLE lesson_history (
            seq               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            lesson_id         TEXT NOT NULL,
            revision          INTEGER NOT NULL,
            previous_revision INTEGER,
            action            TEXT NOT NULL
                CHECK (action IN ('create', 'adapt', 'retire', 'defer', 'revert', 'import')),
            status            TEXT NOT NULL CHECK (status IN ('active', 'deferred', 'retired')),
            scope             JSONB NOT NULL,
            card              JSONB,
            specialist        TEXT NOT NULL,
            run_id            TEXT,
            model             TEXT,
            reason            TEXT NOT NULL,
            at                TIMESTAMPTZ NOT NULL,
            UNIQUE (lesson_id, revision)
        )
        """,
        # History is the lessons' provenance: refuse every UPDATE, DELETE and TRUNCATE.
        """
        CREATE FUNCTION lesson_history_append_only() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'lesson_history is append-only';
        END
        $$
        """,
        """
        CREATE TRIGGER lesson_history_no_change
            BEFORE UPDATE OR DELETE ON lesson_history
            FOR EACH ROW EXECUTE FUNCTION lesson_history_append_only()
        """,
        """
        CREATE TRIGGER lesson_history_no_truncate
            BEFORE TRUNCATE ON lesson_history
            FOR EACH STATEMENT EXECUTE FUNCTION lesson_history_append_only()
        """,
        f"INSERT INTO {VERSION_TABLE} (version) VALUES (0)",
    ),
    # Version 2: effectiveness counters beside each lesson, added to by postmortems.
    # last_run_id makes a repeated postmortem of one run count once.
    (
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
        )
        """,
    ),
    # Version 3: refused near-duplicate proposals, kept as adaptation candidates of the
    # lesson they repeat until a maintenance decision on it consumes them.
    (
        """
        CREATE TABLE lesson_candidates (
            seq            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            lesson_id      TEXT NOT NULL REFERENCES lessons (id),
            run_id         TEXT NOT NULL,
            specialist     TEXT NOT NULL,
            title          TEXT NOT NULL,
            recommendation TEXT NOT NULL,
            associations   TEXT NOT NULL,  -- JSON of Associations
            score          DOUBLE PRECISION NOT NULL CHECK (score BETWEEN 0 AND 100),
            at             TEXT NOT NULL,
            UNIQUE (lesson_id, run_id, specialist, title)
        )
        """,
        "CREATE INDEX lesson_candidates_by_lesson ON lesson_candidates (lesson_id, seq)",
    ),
    # Recall generations (docs/store.md, "Version and changes"): a store-wide change
    # version bumped once by every write that changes lessons, stamped on what it changed.
    # The counter's row lock orders the versions by commit. One step: renumber by moving it.
    (
        "ALTER TABLE lessons ADD COLUMN change_version BIGINT NOT NULL DEFAULT 0",
        """
        CREATE INDEX lessons_by_change
            ON lessons (scope_kind, repository, graph_hash, node, change_version)
        """,
        "INSERT INTO store_meta (key, value) VALUES ('change_version', 0)",
    ),
    # Version 5: the postmortem queue (store/queue.py), shared by the workers of every
    # machine. Times are epoch seconds on the server's clock (clock_timestamp()).
    (
        """
        CREATE TABLE postmortem_queue (
            id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            harness        TEXT NOT NULL,
            session_id     TEXT NOT NULL,
            transcript     TEXT NOT NULL,
            cwd            TEXT NOT NULL,
            model          TEXT NOT NULL,
            event          TEXT NOT NULL,
            final          SMALLINT NOT NULL CHECK (final IN (0, 1)),
            size           BIGINT,
            processed_size BIGINT,
            state          TEXT NOT NULL
                CHECK (state IN ('pending', 'running', 'done', 'failed')),
            attempts       INTEGER NOT NULL CHECK (attempts >= 0),
            ends           INTEGER NOT NULL CHECK (ends >= 1),
            enqueued_at    DOUBLE PRECISION NOT NULL,
            updated_at     DOUBLE PRECISION NOT NULL,
            last_end_at    DOUBLE PRECISION NOT NULL,
            not_before     DOUBLE PRECISION NOT NULL,
            lease_owner    TEXT,
            lease_expires  DOUBLE PRECISION,
            scope          TEXT NOT NULL,
            holds_scope    SMALLINT NOT NULL CHECK (holds_scope IN (0, 1)),
            reason         TEXT NOT NULL,
            result         TEXT,
            UNIQUE (harness, session_id),
            CHECK ((state = 'running') = (lease_owner IS NOT NULL))
        )
        """,
        "CREATE INDEX postmortem_queue_by_state ON postmortem_queue (state, not_before, id)",
    ),
    # Version 6, manual review (docs/review.md): proposed creations and adaptations wait
    # here, never in `lessons`, until a person approves or rejects them. One step.
    (
        """
        CREATE TABLE lesson_proposals (
            seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
        )
        """,
        "CREATE INDEX lesson_proposals_by_state ON lesson_proposals (state, seq)",
        """
        CREATE INDEX lesson_proposals_by_scope
            ON lesson_proposals (scope_kind, repository, graph_hash, node, state)
        """,
    ),
    # Version 7 (docs/store.md, "Effectiveness over time"): one dated event per counted
    # observation of a lesson by a run, written in the publish that adds to the counters.
    # Counters from before this step keep no dates: the history starts at the migration.
    (
        """
        CREATE TABLE lesson_effectiveness_events (
            seq       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            lesson_id TEXT NOT NULL REFERENCES lessons (id),
            run_id    TEXT NOT NULL,
            delivered SMALLINT NOT NULL CHECK (delivered IN (0, 1)),
            recurred  SMALLINT NOT NULL CHECK (recurred IN (0, 1)),
            at        TEXT NOT NULL,  -- ISO UTC time of the publish
            UNIQUE (lesson_id, run_id)
        )
        """,
        "CREATE INDEX lesson_effectiveness_events_by_at ON lesson_effectiveness_events (at)",
        """
        INSERT INTO store_meta (key, value)
            VALUES ('effectiveness_events_since', extract(epoch FROM now())::bigint)
        """,
    ),
    (
        """
        CREATE TABLE failure_signatures (
            repository TEXT NOT NULL,
            family     TEXT NOT NULL,
            error      TEXT NOT NULL,
            runs       INTEGER NOT NULL CHECK (runs >= 1),
            first_seen TEXT NOT NULL,
            last_seen  TEXT NOT NULL,
            first_run  TEXT NOT NULL,
            last_run   TEXT NOT NULL,
            PRIMARY KEY (repository, family, error)
        )
        """,
        "CREATE INDEX failure_signatures_by_seen ON failure_signatures (repository, last_seen)",
    ),
    (
        """
        CREATE TABLE evidence_failures (
            evidence_id TEXT NOT NULL,
            family      TEXT NOT NULL,
            error       TEXT NOT NULL,
            PRIMARY KEY (evidence_id, family, error)
        )
        """,
    ),
    KEEPS_MIGRATION,
    # Version 11 (docs/queue.md): the machine a session ended on; a worker claims only
    # its own machine's entries (and those from before, which name none).
    ("ALTER TABLE postmortem_queue ADD COLUMN host TEXT NOT NULL DEFAULT ''",),
    # Version 12: SQLite's recall keys (sqlite_schema.py); nothing here, since a hook never
    # reads a PostgreSQL store (docs/recall.md). Kept as a step so both dialects number
    # their schema versions alike.
    ("SELECT 1",),
)

SCHEMA_VERSION = len(MIGRATIONS)

# Names of our tables: a database holding any of them without the version table is not
# ours (or was damaged) and is refused rather than written to.
TABLES = tuple(
    name
    for step in MIGRATIONS
    for statement in step
    for name in re.findall(r"CREATE TABLE (\w+)", statement)
    if name != VERSION_TABLE
)
