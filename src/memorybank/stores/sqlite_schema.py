"""Numbered schema migrations of the SQLite store, applied in order and recorded in the DB."""

from __future__ import annotations

from memorybank.stores.accounts_schema import accounts_tables
from memorybank.stores.sql_pairs import READINGS, pairs_table
from memorybank.stores.webhooks_schema import webhook_tables

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "initial schema",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            project_id TEXT,
            scope_key TEXT NOT NULL,
            content TEXT NOT NULL,
            category TEXT NOT NULL,
            ring TEXT NOT NULL,
            domain TEXT,
            tags TEXT NOT NULL DEFAULT '[]',
            metadata TEXT NOT NULL DEFAULT '{}',
            importance INTEGER NOT NULL,
            source TEXT NOT NULL,
            created_by TEXT,
            reasoning TEXT,
            session_id TEXT,
            created_us INTEGER NOT NULL,
            updated_us INTEGER NOT NULL,
            occurred_us INTEGER,
            embedding_model TEXT
        );
        CREATE INDEX memories_scope_created ON memories (scope_key, created_us);
        CREATE INDEX memories_user ON memories (user_id);
        CREATE INDEX memories_session ON memories (scope_key, session_id)
            WHERE session_id IS NOT NULL;
        -- Vectors live apart from the rows so listing memories does not drag 1.5 kB per row.
        CREATE TABLE memory_vectors (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
        CREATE TABLE history (
            id TEXT PRIMARY KEY,
            memory_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            project_id TEXT,
            scope_key TEXT NOT NULL,
            kind TEXT NOT NULL,
            old_content TEXT,
            new_content TEXT,
            actor TEXT,
            created_us INTEGER NOT NULL
        );
        CREATE INDEX history_memory ON history (memory_id, created_us);
        CREATE INDEX history_scope ON history (scope_key);
        -- Bumped by every write to a scope, so other processes notice their cached vectors
        -- are stale.
        CREATE TABLE scope_revisions (scope_key TEXT PRIMARY KEY, rev INTEGER NOT NULL);
        -- Contentless: the index keeps no copy of the text. Rows leave it through the 'delete'
        -- command with their original text (not contentless_delete, which only records a
        -- tombstone and leaves the terms in the segment), so with secure-delete a deleted
        -- memory's terms are removed from the index at once rather than at the next merge.
        CREATE VIRTUAL TABLE memories_fts USING fts5 (
            scope, body,
            content='',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO memories_fts (memories_fts, rank) VALUES ('secure-delete', 1);
        """,
    ),
    (
        2,
        "decisions, superseded memories, forget plans, org members",
        """
        -- A decision memory's {action, outcome, rationale, ...} as JSON; NULL for other memories.
        ALTER TABLE memories ADD COLUMN decision TEXT;
        -- The id of the memory that replaced this one; the old one is kept, not deleted.
        ALTER TABLE memories ADD COLUMN superseded_by TEXT;
        -- Few memories are superseded, so searches exclude them through this small index
        -- instead of listing every current row.
        CREATE INDEX memories_superseded ON memories (scope_key) WHERE superseded_by IS NOT NULL;
        -- Between forget_preview and forget_confirm. Only what confirming needs: ids, actions,
        -- rewritten text and the version each memory had; never the query or the old text.
        CREATE TABLE forget_plans (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            project_id TEXT,
            steps TEXT NOT NULL,
            status TEXT NOT NULL,
            created_us INTEGER NOT NULL,
            expires_us INTEGER NOT NULL,
            finished_us INTEGER
        );
        CREATE INDEX forget_plans_expires ON forget_plans (expires_us);
        -- Which users belong to an org, for org-wide search by org admins.
        CREATE TABLE org_members (
            org_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            added_us INTEGER NOT NULL,
            PRIMARY KEY (org_id, user_id)
        );
        """,
    ),
    (
        3,
        "accounts: users, projects, members, api keys, threads, provider settings",
        """
        -- An org member's role; org_members (migration 2) says who belongs to the org.
        ALTER TABLE org_members ADD COLUMN role TEXT NOT NULL DEFAULT 'member';
        """
        + accounts_tables("INTEGER", "INTEGER", "BLOB")
        + """
        """,
    ),
    (
        4,
        "vector change log",
        """
        -- Which rows' vectors each scope revision changed (row_id -1: too many to list), so a
        -- process whose cached matrix another process made stale patches it instead of
        -- reading the whole scope again. Only the newest revisions of each scope are kept.
        CREATE TABLE vector_changes (
            scope_key TEXT NOT NULL,
            rev INTEGER NOT NULL,
            row_id INTEGER NOT NULL,
            PRIMARY KEY (scope_key, rev, row_id)
        ) WITHOUT ROWID;
        """,
    ),
    (
        5,
        "events: history with a never-reused sequence and the channel; webhooks",
        """
        -- The events stream resumes after the last id a client saw, so an id must never be
        -- handed out twice: AUTOINCREMENT, where a plain rowid reuses the largest after a
        -- delete. The table is rebuilt, keeping every event's order.
        CREATE TABLE history_events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            memory_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            project_id TEXT,
            scope_key TEXT NOT NULL,
            kind TEXT NOT NULL,
            old_content TEXT,
            new_content TEXT,
            actor TEXT,
            created_us INTEGER NOT NULL,
            channel TEXT,
            -- On tombstones: when the deleted memory was created (how long it lived).
            memory_created_us INTEGER
        );
        INSERT INTO history_events (seq, id, memory_id, user_id, project_id, scope_key, kind,
                                    old_content, new_content, actor, created_us)
            SELECT rowid, id, memory_id, user_id, project_id, scope_key, kind, old_content,
                   new_content, actor, created_us
            FROM history ORDER BY rowid;
        DROP TABLE history;
        ALTER TABLE history_events RENAME TO history;
        CREATE INDEX history_memory ON history (memory_id, created_us);
        CREATE INDEX history_scope ON history (scope_key, seq);
        CREATE INDEX history_created ON history (created_us);
        """
        + webhook_tables("INTEGER", "INTEGER")
        + """
        """,
    ),
    (
        6,
        "when a memory was last reinforced (saved again or recalled), for importance decay",
        """
        ALTER TABLE memories ADD COLUMN reinforced_us INTEGER;
        """,
    ),
    (
        7,
        "the prompt block's facts read most important first, without a sort",
        """
        -- The always-loaded facts of a prompt block (and list order=importance_desc) are the
        -- first rows of this index backwards, not a sort of the whole scope.
        CREATE INDEX memories_scope_importance ON memories (scope_key, importance, created_us);
        """,
    ),
    (
        8,
        "pairs of facts a save said may update one another, and the answer both are true",
        pairs_table("INTEGER"),
    ),
    (
        9,
        "what the judge read of each pair it related, kept with the relation",
        READINGS,
    ),
]
