"""Accounts (:class:`memorybank.accounts.Accounts`) in the SQLite file of a
:class:`~memorybank.stores.sqlite.SQLiteStore` (tables of migration 3).

It borrows the store's connections and transactions (``_read`` / ``_write``), so accounts and
memories share one file, one lock and one backup. The statements are
:class:`~memorybank.stores.accounts_sql.SqlAccountStore`'s.
"""

from __future__ import annotations

from typing import Any

from memorybank.stores.accounts_sql import SqlAccountStore
from memorybank.stores.sqlite import SQLiteStore


class SQLiteAccountStore(SqlAccountStore):
    """An :class:`~memorybank.accounts.AccountStore` in a :class:`SQLiteStore`'s file."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self.store._read(lambda c: [tuple(row) for row in c.execute(sql, params)])

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        with self.store._write() as txn:
            txn.conn.execute(sql, params)
            return int(txn.conn.changes())

    def execute_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        with self.store._write() as txn:
            txn.conn.executemany(sql, rows)


__all__ = ["SQLiteAccountStore"]
