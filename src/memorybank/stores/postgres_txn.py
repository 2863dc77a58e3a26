"""The PostgreSQL store's transaction: one pooled psycopg connection, with what a write
transaction collects on the way (the ids its inserts stored, the events it recorded)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from memorybank.stores.sql import POSTGRES, Transaction

Conn = psycopg.Connection[tuple[Any, ...]]


class PostgresTxn(Transaction):
    """A transaction on one pooled psycopg connection (:attr:`conn`), with the ids an insert
    stored so far, with and without a duplicate check (see
    :meth:`~memorybank.stores.postgres_index.PostgresIndex.nearest`)."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.checked: list[str] = []
        self.unchecked: list[str] = []
        #: History rows recorded in this transaction, inserted at its end (see
        #: :meth:`~memorybank.stores.postgres.PostgresStore.writing`).
        self.pending_events: list[Sequence[Any]] = []

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(POSTGRES.native(sql), params or None).fetchall()

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self.conn.execute(POSTGRES.native(sql), params or None).fetchone()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(POSTGRES.native(sql), params or None).rowcount

    def execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(POSTGRES.native(sql), rows)


__all__ = ["Conn", "PostgresTxn"]
