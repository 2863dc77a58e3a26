"""The accounts tables (users, projects and their members, API keys, threads, provider
settings): one DDL for both backends, whose column types differ only in name."""

from __future__ import annotations

_TABLES = """
        CREATE TABLE users (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            created_us {integer} NOT NULL
        );
        CREATE TABLE projects (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            org_id TEXT,
            created_us {integer} NOT NULL
        );
        CREATE TABLE project_members (
            project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
            added_us {integer} NOT NULL,
            PRIMARY KEY (project_id, user_id)
        );
        CREATE INDEX project_members_user ON project_members (user_id);
        -- Only the SHA-256 of a key is stored; the key itself is shown once at creation.
        CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
            key_hash TEXT NOT NULL UNIQUE,
            label TEXT,
            created_us {integer} NOT NULL,
            revoked_us {integer},
            last_used_us {integer}
        );
        CREATE INDEX api_keys_user ON api_keys (user_id);
        CREATE TABLE threads (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            project_id TEXT,
            title TEXT,
            memory_enabled {boolean} NOT NULL,
            created_us {integer} NOT NULL,
            updated_us {integer} NOT NULL
        );
        CREATE INDEX threads_user ON threads (user_id, created_us);
        -- Bring-your-own provider keys, encrypted (Fernet) with the server's master key.
        CREATE TABLE provider_settings (
            user_id TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('embedding', 'llm')),
            base_url TEXT NOT NULL,
            model TEXT NOT NULL,
            key_ciphertext {binary},
            key_hint TEXT,
            enabled {boolean} NOT NULL,
            updated_us {integer} NOT NULL,
            PRIMARY KEY (user_id, kind)
        );
"""


def accounts_tables(integer: str, boolean: str, binary: str) -> str:
    """The accounts tables' DDL with a backend's names for 64-bit integers, booleans and
    bytes.

    >>> "key_ciphertext BLOB" in accounts_tables("INTEGER", "INTEGER", "BLOB")
    True
    """
    return _TABLES.format(integer=integer, boolean=boolean, binary=binary)


__all__ = ["accounts_tables"]
