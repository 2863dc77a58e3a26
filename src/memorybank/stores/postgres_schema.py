"""Numbered schema migrations of the PostgreSQL store, applied in order and recorded in the DB.

``{dimension}`` is replaced by the store's vector length when a migration runs (pgvector's HNSW
index needs a fixed-length column); the length is recorded in ``meta`` as ``vector_dimension``.
"""

from __future__ import annotations

from memorybank.stores.accounts_schema import accounts_tables
from memorybank.stores.sql_pairs import READINGS, pairs_table
from memorybank.stores.webhooks_schema import webhook_tables

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "initial schema: memories with vector and tsvector, history, meta, plans, orgs",
        """
        CREATE EXTENSION IF NOT EXISTS vector;
        -- A row's tags as words, for the generated tsvector column.
        CREATE FUNCTION tags_text(tags jsonb) RETURNS text
            LANGUAGE sql IMMUTABLE PARALLEL SAFE
            RETURN coalesce(
                (SELECT string_agg(t, ' ') FROM jsonb_array_elements_text(tags) AS t), ''
            );
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE memories (
            rid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            project_id TEXT,
            scope_key TEXT NOT NULL,
            content TEXT NOT NULL,
            category TEXT NOT NULL,
            ring TEXT NOT NULL,
            domain TEXT,
            tags JSONB NOT NULL DEFAULT '[]',
            metadata JSONB NOT NULL DEFAULT '{{}}',
            importance INTEGER NOT NULL,
            source TEXT NOT NULL,
            created_by TEXT,
            reasoning TEXT,
            session_id TEXT,
            created_us BIGINT NOT NULL,
            updated_us BIGINT NOT NULL,
            occurred_us BIGINT,
            embedding_model TEXT,
            decision TEXT,
            superseded_by TEXT,
            embedding vector({dimension}) NOT NULL,
            -- Content and tags, stemmed with the english configuration (as FTS5's porter).
            body tsvector GENERATED ALWAYS AS (
                to_tsvector('english'::regconfig, content || ' ' || tags_text(tags))
            ) STORED
        );
        CREATE INDEX memories_scope_created ON memories (scope_key, created_us);
        CREATE INDEX memories_user ON memories (user_id);
        CREATE INDEX memories_session ON memories (scope_key, session_id)
            WHERE session_id IS NOT NULL;
        CREATE INDEX memories_superseded ON memories (scope_key) WHERE superseded_by IS NOT NULL;
        CREATE INDEX memories_body ON memories USING gin (body);
        CREATE INDEX memories_embedding ON memories USING hnsw (embedding vector_cosine_ops);
        CREATE TABLE history (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            memory_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            project_id TEXT,
            scope_key TEXT NOT NULL,
            kind TEXT NOT NULL,
            old_content TEXT,
            new_content TEXT,
            actor TEXT,
            created_us BIGINT NOT NULL
        );
        CREATE INDEX history_memory ON history (memory_id, created_us);
        CREATE INDEX history_scope ON history (scope_key);
        CREATE TABLE forget_plans (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            project_id TEXT,
            steps TEXT NOT NULL,
            status TEXT NOT NULL,
            created_us BIGINT NOT NULL,
            expires_us BIGINT NOT NULL,
            finished_us BIGINT
        );
        CREATE INDEX forget_plans_expires ON forget_plans (expires_us);
        CREATE TABLE org_members (
            org_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            added_us BIGINT NOT NULL,
            role TEXT NOT NULL DEFAULT 'member',
            PRIMARY KEY (org_id, user_id)
        );
        """,
    ),
    (
        2,
        "accounts: users, projects, members, api keys, threads, provider settings",
        """
        """
        + accounts_tables("BIGINT", "BOOLEAN", "BYTEA")
        + """
        """,
    ),
    (
        3,
        "full-text index restricted by scope",
        """
        -- With the scope in the GIN index, a common word's matches in other users' scopes are
        -- dropped inside the index instead of each being fetched from the heap and filtered
        -- (the same reason the SQLite store puts a scope token into its FTS rows).
        CREATE EXTENSION IF NOT EXISTS btree_gin;
        CREATE INDEX memories_scope_body ON memories USING gin (scope_key, body);
        DROP INDEX memories_body;
        """,
    ),
    (
        4,
        "vacuum memories after 1 % of rows are dead, not 20 %",
        """
        -- Dead rows of deleted memories keep their text in table pages, and their index
        -- entries slow every scan of their scope (search p50 30 -> 48 ms with 1 % dead at
        -- 1M rows), until VACUUM. The default waits for 20 % of the table.
        ALTER TABLE memories SET (
            autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000
        );
        """,
    ),
    (
        5,
        "vacuum history after 1 % of rows are dead, not 20 %",
        """
        -- Deleting or forgetting a memory deletes its events and redacts old texts of kept
        -- ones: the dead rows keep that text in table pages until VACUUM, as memories' do.
        ALTER TABLE history SET (
            autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000
        );
        """,
    ),
    (
        6,
        "events: the channel of each history event, read by scope in order; webhooks",
        """
        ALTER TABLE history ADD COLUMN channel TEXT;
        -- On tombstones: when the deleted memory was created (how long it lived).
        ALTER TABLE history ADD COLUMN memory_created_us BIGINT;
        CREATE INDEX history_created ON history (created_us);
        DROP INDEX history_scope;
        CREATE INDEX history_scope ON history (scope_key, seq);
        """
        + webhook_tables("BIGINT", "BOOLEAN")
        + """
        """,
    ),
    (
        7,
        "when a memory was last reinforced (saved again or recalled), for importance decay",
        """
        ALTER TABLE memories ADD COLUMN reinforced_us BIGINT;
        """,
    ),
    (
        8,
        "the prompt block's facts read most important first, without a sort",
        """
        -- The always-loaded facts of a prompt block (and list order=importance_desc) are the
        -- first rows of this index backwards, not a sort of the whole scope.
        CREATE INDEX memories_scope_importance ON memories (scope_key, importance, created_us);
        """,
    ),
    (
        9,
        "pairs of facts a save said may update one another, and the answer both are true",
        pairs_table("BIGINT"),
    ),
    (
        10,
        "what the judge read of each pair it related, kept with the relation",
        READINGS,
    ),
]

#: The search indexes (migrations 1 and 3), by name. A bulk load (the benchmark's filler rows)
#: may drop them and create them again from here after the load, which is much faster than
#: maintaining them row by row.
SEARCH_INDEXES: dict[str, str] = {
    "memories_scope_body": (
        "CREATE INDEX IF NOT EXISTS memories_scope_body ON memories USING gin (scope_key, body)"
    ),
    "memories_embedding": (
        "CREATE INDEX IF NOT EXISTS memories_embedding ON memories "
        "USING hnsw (embedding vector_cosine_ops)"
    ),
}
