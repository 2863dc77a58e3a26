"""The webhook and usage tables (issue 21): one DDL for both backends, whose column types
differ only in name."""

from __future__ import annotations

_TABLES = """
        CREATE TABLE webhooks (
            id TEXT PRIMARY KEY,
            org_id TEXT,
            project_id TEXT,
            created_by TEXT NOT NULL,
            url TEXT NOT NULL,
            secret TEXT NOT NULL,
            event_types TEXT NOT NULL,
            active {boolean} NOT NULL,
            created_us {integer} NOT NULL,
            CHECK ((org_id IS NULL) <> (project_id IS NULL))
        );
        CREATE INDEX webhooks_org ON webhooks (org_id);
        CREATE INDEX webhooks_project ON webhooks (project_id);
        -- One row per event (or test) to send to one webhook; pending while status is
        -- 'pending', picked up by any server's worker once next_attempt_us has passed.
        CREATE TABLE webhook_deliveries (
            id TEXT PRIMARY KEY,
            webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
            event_id {integer},
            event_type TEXT NOT NULL,
            body TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
            attempts INTEGER NOT NULL,
            next_attempt_us {integer} NOT NULL,
            last_status INTEGER,
            last_error TEXT,
            created_us {integer} NOT NULL,
            done_us {integer}
        );
        CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_us);
        CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (webhook_id, created_us);
        -- Usage counted by each process (memorybank.core.usage) per day and user: searches,
        -- refused saves, conflicts, memory-block sizes; read by the success metrics.
        CREATE TABLE usage_counters (
            day INTEGER NOT NULL,
            user_id TEXT NOT NULL,
            name TEXT NOT NULL,
            value {integer} NOT NULL,
            PRIMARY KEY (day, user_id, name)
        );
"""


def webhook_tables(integer: str, boolean: str) -> str:
    """The webhooks, their deliveries and the usage counters, with a backend's names for
    64-bit integers and booleans.

    >>> "active INTEGER NOT NULL" in webhook_tables("INTEGER", "INTEGER")
    True
    """
    return _TABLES.format(integer=integer, boolean=boolean)


__all__ = ["webhook_tables"]
