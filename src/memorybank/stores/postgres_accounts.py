"""Accounts (:class:`memorybank.accounts.Accounts`) in the database of a
:class:`~memorybank.stores.postgres.PostgresStore` (tables of migration 2).

It borrows the store's connection pool and transactions, so accounts and memories share one
database and one backup, and every replica of a server sees the same users and keys. The
statements are :class:`~memorybank.stores.accounts_sql.SqlAccountStore`'s, with psycopg's
``%s`` placeholders in place of ``?``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from memorybank.stores.accounts_sql import SqlAccountStore
from memorybank.stores.postgres import PostgresStore


@lru_cache(maxsize=128)
def _pg(sql: str) -> str:
    # The shared statements hold no '?' or '%' inside literals, so a plain replace is exact.
    return sql.replace("?", "%s")


class PostgresAccountStore(SqlAccountStore):
    """An :class:`~memorybank.accounts.AccountStore` in a :class:`PostgresStore`'s database."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self.store._read(lambda c: c.execute(_pg(sql), params).fetchall())

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        with self.store._write() as conn:
            return conn.execute(_pg(sql), params).rowcount

    def execute_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        with self.store._write() as conn, conn.cursor() as cur:
            cur.executemany(_pg(sql), rows)


__all__ = ["PostgresAccountStore"]
