"""What the success metrics (:mod:`memorybank.services.insights`) read from a SQL store's database,
and where usage counters (:mod:`memorybank.core.usage`) are kept: the ``usage_counters`` table
(SQLite migration 5, PostgreSQL migration 6), added to, never overwritten, so any number of
processes may count into it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memorybank.stores.base import Store, require_sql

#: A usage counter's key: day (days since 1970-01-01, UTC), user id, counter name.
Key = tuple[int, str, str]
#: Where a process's usage counts go.
Sink = Callable[[Mapping[Key, int]], None]

_ADD = (
    "INSERT INTO usage_counters (day, user_id, name, value) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (day, user_id, name) DO UPDATE SET value = usage_counters.value + excluded.value"
)
# Tombstones: memories deleted one by one, with their scope, or by a forget plan.
_GONE = "('DELETE', 'CLEAR', 'FORGET')"


def usage_sink(store: Store) -> Sink | None:
    """A sink that adds counters to ``store``'s SQL database (``None`` for a store that
    declares none, :attr:`~memorybank.stores.base.Store.sql`: the counts then stay in the
    process, and only the success metrics, which read them, refuse such a store)."""
    database = store.sql
    if database is None:
        return None

    def add(counts: Mapping[Key, int]) -> None:
        rows = [(day, user, name, value) for (day, user, name), value in counts.items()]
        with database.writing() as txn:
            txn.execute_many(_ADD, rows)

    return add


@dataclass(frozen=True)
class Deletion:
    """One deleted memory: whose scope, through what, and how long it had lived."""

    user_id: str
    project_id: str | None
    channel: str | None
    lived_us: int | None


@dataclass
class Facts:
    """The raw figures the metrics are computed from, for a time window."""

    private_counts: dict[str, int]
    project_counts: dict[str, int]
    authors: set[str]
    active: set[str]
    created: list[tuple[str, str | None]]
    deletions: list[Deletion]
    usage: dict[tuple[str, str], int]


def read_facts(store: Store, since_us: int, since_day: int) -> Facts:
    """Every figure the metrics need since ``since_us`` (and day ``since_day``), in one
    snapshot of the database; a :class:`~memorybank.errors.ConfigurationError` for a store
    without a SQL database."""
    live = "superseded_by IS NULL AND source <> 'conversation'"
    with require_sql(store, "success metrics").reading() as txn:
        private = txn.fetch(
            f"SELECT user_id, count(*) FROM memories WHERE project_id IS NULL AND {live} "
            "GROUP BY user_id"
        )
        shared = txn.fetch(
            f"SELECT project_id, count(*) FROM memories WHERE project_id IS NOT NULL AND {live} "
            "GROUP BY project_id"
        )
        authors = txn.fetch(f"SELECT DISTINCT user_id FROM memories WHERE {live}")
        active = txn.fetch(
            "SELECT actor FROM history WHERE created_us >= ? AND actor IS NOT NULL "
            "UNION SELECT user_id FROM api_keys WHERE last_used_us >= ? "
            "UNION SELECT user_id FROM threads WHERE updated_us >= ?",
            (since_us, since_us, since_us),
        )
        created = txn.fetch(
            "SELECT user_id, project_id FROM memories WHERE created_us >= ? "
            "AND source <> 'conversation'",
            (since_us,),
        )
        gone = txn.fetch(
            "SELECT user_id, project_id, channel, created_us - memory_created_us FROM history "
            f"WHERE kind IN {_GONE} AND created_us >= ? "
            "AND (memory_created_us IS NULL OR memory_created_us >= ?)",
            (since_us, since_us),
        )
        usage = txn.fetch(
            "SELECT user_id, name, sum(value) FROM usage_counters WHERE day >= ? "
            "GROUP BY user_id, name",
            (since_day,),
        )
    return Facts(
        private_counts={str(u): int(n) for u, n in private},
        project_counts={str(p): int(n) for p, n in shared},
        authors={str(r[0]) for r in authors},
        active={str(r[0]) for r in active},
        created=[(str(u), p) for u, p in created],
        deletions=[Deletion(str(r[0]), r[1], r[2], _int(r[3])) for r in gone],
        usage={(str(u), str(n)): int(v) for u, n, v in usage},
    )


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


__all__ = ["Deletion", "Facts", "Key", "Sink", "read_facts", "usage_sink"]
