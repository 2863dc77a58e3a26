"""The SQL both stores speak: one transaction interface, and the two dialects (SQLite,
PostgreSQL) a statement shared by both stores is spelled in.

Shared statements take ``?`` placeholders; PostgreSQL's transactions turn them into psycopg's
``%s`` (:meth:`Dialect.native`), so a shared statement holds no ``?`` or ``%`` inside a literal
and never uses jsonb's ``?`` operators. Where the two databases differ in more than the
placeholder, a :class:`Dialect` says how:

========================  ===================================  ================================
                          SQLite (:data:`SQLITE`)              PostgreSQL (:data:`POSTGRES`)
========================  ===================================  ================================
memories' row id          ``rowid``                            ``rid``
a list of values          ``x IN (?, ?, …)``, 500 at a time     ``x = ANY(?::text[])``, one list
a tag / a metadata value  ``json_each`` / ``json_extract``     ``@>`` / ``->`` on jsonb
rows about to change      (writers are serialised)             ``FOR UPDATE``
tags and metadata read    JSON text                            decoded by psycopg
========================  ===================================  ================================

What is not a matter of spelling (connections, transactions, migrations) stays in each
backend's module, and vector and full-text search in its index (:mod:`.search_index`).

>>> SQLITE.any_of("m.category", ["fact", "event"])
('m.category IN (?,?)', ['fact', 'event'])
>>> POSTGRES.any_of("m.category", ["fact", "event"])
('m.category = ANY(?::text[])', [['fact', 'event']])
>>> POSTGRES.native("SELECT id FROM memories WHERE scope_key = ?")
'SELECT id FROM memories WHERE scope_key = %s'
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from functools import lru_cache
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from memorybank.errors import StoreError, ValidationError
from memorybank.model import Memory, MemoryFilter, ScopeSet
from memorybank.model.stored import to_us
from memorybank.stores.rows import memory_of, speaker_in

T = TypeVar("T")

log = logging.getLogger("memorybank.stores")

#: The columns of a memory row after its row id, in the order every memory SELECT reads them
#: (see :func:`memorybank.model.stored.memory_from_row`).
MEMORY_FIELDS = (
    "id",
    "user_id",
    "project_id",
    "content",
    "category",
    "ring",
    "domain",
    "tags",
    "metadata",
    "importance",
    "source",
    "created_by",
    "reasoning",
    "session_id",
    "created_us",
    "updated_us",
    "occurred_us",
    "embedding_model",
    "decision",
    "superseded_by",
    "reinforced_us",
)
_INSERTED = (*MEMORY_FIELDS[:3], "scope_key", *MEMORY_FIELDS[3:])
# What replacing a memory may change: not its id, scope, source, author, session or birth.
_FIXED = frozenset(
    {"id", "user_id", "project_id", "source", "created_by", "session_id", "created_us"}
)
_UPDATED = tuple(c for c in MEMORY_FIELDS if c not in _FIXED)
_JSON_FIELDS = frozenset({"tags", "metadata"})


class Transaction(ABC):
    """An open transaction of a SQL store, from :meth:`~memorybank.stores.sql_store.SqlStore.
    reading` or :meth:`~memorybank.stores.sql_store.SqlStore.writing`.

    Statements take ``?`` placeholders whichever the database is.
    """

    @abstractmethod
    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of one query."""

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """The first row of one query, if any."""
        rows = self.fetch(sql, params)
        return rows[0] if rows else None

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; how many rows it changed."""

    @abstractmethod
    def execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement once per row of parameters."""


class SqlDatabase(Protocol):
    """A SQL database that services may keep tables of their own in, beside the memories
    (accounts, usage counters, webhooks), in its transactions: what a store offers as
    :attr:`~memorybank.stores.base.Store.sql` (every
    :class:`~memorybank.stores.sql_store.SqlStore` is one). Statements are in the shared
    dialect (``?`` placeholders), and the tables are the store's migrations'."""

    def reading(self) -> AbstractContextManager[Transaction]:
        """A read-only transaction (one snapshot)."""
        ...

    def writing(self) -> AbstractContextManager[Transaction]:
        """A write transaction."""
        ...


TxnT = TypeVar("TxnT", bound=Transaction)


class SqlTransactions(ABC, Generic[TxnT]):
    """What the parts of :class:`~memorybank.stores.sql_store.SqlStore` share: the backend's
    transactions, of type ``TxnT``, which its hooks receive."""

    @abstractmethod
    def reading(self) -> AbstractContextManager[TxnT]:
        """A transaction to read in: every statement in it sees one snapshot (PostgreSQL
        refuses writes in it; write in :meth:`writing`). Not re-entrant: no other transaction
        of the store may be opened inside it in the same thread."""

    @abstractmethod
    def writing(self) -> AbstractContextManager[TxnT]:
        """A write transaction, serialised with the store's other writers: committed when
        the block ends, rolled back if it raises (database errors raised as
        :class:`~memorybank.errors.StoreError`). Not re-entrant."""


class Dialect(ABC):
    """How one database spells what the shared statements need (see the module table)."""

    name: ClassVar[str]
    #: The memories' row id column, the first column of every memory row.
    rowid: ClassVar[str]
    #: History's own insertion order, which breaks ties of ``created_us``.
    history_seq: ClassVar[str]
    #: A condition that always holds (an empty filter).
    true: ClassVar[str]
    #: The placeholder of a JSON value written to a tags or metadata column.
    json: ClassVar[str]
    #: Appended to a SELECT of one row that the write transaction will change.
    for_update: ClassVar[str]
    #: Appended to a SELECT of rows to delete: locked in one order, so deletes cannot deadlock.
    lock_rows: ClassVar[str]
    #: How many values one list condition takes (``None``: any number, as one parameter).
    list_max: ClassVar[int | None]
    #: The column type of integer microseconds.
    microseconds: ClassVar[str]

    def __init__(self) -> None:
        fields = ", ".join(MEMORY_FIELDS)
        #: A memory row's columns, and the same on alias ``m``.
        self.columns = f"{self.rowid}, {fields}"
        self.m_columns = ", ".join(f"m.{c}" for c in (self.rowid, *MEMORY_FIELDS))
        #: ``ORDER BY`` of :meth:`~memorybank.stores.base.Store.list_memories`'s orders.
        self.orders = {
            "created_desc": f"m.created_us DESC, m.{self.rowid} DESC",
            "created_asc": f"m.created_us ASC, m.{self.rowid} ASC",
            "importance_desc": f"m.importance DESC, m.created_us DESC, m.{self.rowid} DESC",
        }

    def mark(self, column: str) -> str:
        """The placeholder of a value written to a memories ``column``."""
        return self.json if column in _JSON_FIELDS else "?"

    def insert_memory(self, **extra: str) -> str:
        """``INSERT`` of a memory's columns (:func:`memory_values`), then ``extra`` columns
        (name = placeholder expression) a backend stores beside them."""
        names = [*_INSERTED, *extra]
        marks = [*(self.mark(c) for c in _INSERTED), *extra.values()]
        return f"INSERT INTO memories ({', '.join(names)}) VALUES ({', '.join(marks)})"

    def update_memory(self) -> str:
        """``UPDATE`` of the columns a replace changes (:func:`changed_values`) of the row
        whose row id is the last parameter."""
        sets = [f"{c} = {self.mark(c)}" for c in _UPDATED]
        return f"UPDATE memories SET {', '.join(sets)} WHERE {self.rowid} = ?"

    @abstractmethod
    def any_of(
        self, column: str, values: Sequence[Any], sql_type: str = "text"
    ) -> tuple[str, list[Any]]:
        """A condition that ``column`` is one of ``values`` (false for none), and its
        parameters; at most :attr:`list_max` values."""

    @abstractmethod
    def has_tag(self, tag: str) -> tuple[str, list[Any]]:
        """A condition that memory ``m`` has ``tag``, and its parameters."""

    @abstractmethod
    def metadata_is(self, key: str, value: Any) -> tuple[str, list[Any]]:
        """A condition that ``m.metadata[key]`` equals ``value`` as JSON (1, "1" and true
        differ; a missing key is null), and its parameters."""

    @staticmethod
    @abstractmethod
    def memory(row: Sequence[Any]) -> Memory:
        """The memory of a row read with :attr:`columns`."""

    @staticmethod
    @abstractmethod
    def speaker(metadata: Any) -> str | None:
        """:func:`~memorybank.stores.base.speaker_of` a row's metadata column."""

    @staticmethod
    def native(sql: str) -> str:
        """A shared statement in this database's placeholder style."""
        return sql

    def filter_sql(self, filters: MemoryFilter) -> tuple[str, list[Any]]:
        """SQL conditions (joined with AND, on alias ``m``) for ``filters``, and parameters."""
        parts: list[str] = []
        params: list[Any] = []

        def add(condition: tuple[str, list[Any]]) -> None:
            parts.append(condition[0])
            params.extend(condition[1])

        for column, values in (
            ("category", filters.category),
            ("ring", filters.ring),
            ("domain", filters.domain),
            ("source", filters.source),
        ):
            if values is not None:
                add(self.any_of(f"m.{column}", [str(v) for v in values]))
        for tag in filters.tags or ():
            add(self.has_tag(tag))
        for condition, value in (
            ("m.importance >= ?", filters.min_importance),
            ("m.created_us >= ?", to_us(filters.since)),
            ("m.created_us < ?", to_us(filters.until)),
            ("m.session_id = ?", filters.session_id),
        ):
            if value is not None:
                add((condition, [value]))
        if filters.superseded is not None:
            parts.append(f"m.superseded_by IS {'NOT ' if filters.superseded else ''}NULL")
        for key, value in (filters.metadata or {}).items():
            add(self.metadata_is(key, value))
        return (" AND ".join(parts) or self.true), params


def _sqlite_memory(row: Sequence[Any]) -> Memory:
    # Tags and metadata are JSON text; memory_of decodes them (and repairs what it must).
    return memory_of(row, row[8], row[9])


def _sqlite_speaker(metadata: Any) -> str | None:
    # The metadata's JSON text. Most memories name no speaker: theirs is not decoded at all.
    if not isinstance(metadata, str) or '"speaker"' not in metadata:
        return None
    return _speaker_in(metadata)


@lru_cache(maxsize=65_536)
def _speaker_in(metadata: str) -> str | None:
    # Conversation turns all name a speaker, and a search reads the same turns again and
    # again (candidates and their neighbours): decoding each one's JSON every time was a
    # fifth of a search on LoCoMo.
    try:
        return speaker_in(json.loads(metadata))
    except (ValueError, RecursionError):  # unreadable metadata names no one
        return None


class SQLiteDialect(Dialect):
    """SQLite's spelling: lists of ``?``, JSON as text."""

    name = "sqlite"
    rowid = "rowid"
    history_seq = "rowid"
    true = "1"
    json = "?"
    for_update = ""
    lock_rows = ""
    list_max = 500
    microseconds = "INTEGER"
    memory = staticmethod(_sqlite_memory)
    speaker = staticmethod(_sqlite_speaker)

    def any_of(
        self, column: str, values: Sequence[Any], sql_type: str = "text"
    ) -> tuple[str, list[Any]]:
        if not values:
            return "0", []
        return f"{column} IN ({','.join('?' * len(values))})", list(values)

    def has_tag(self, tag: str) -> tuple[str, list[Any]]:
        return "EXISTS (SELECT 1 FROM json_each(m.tags) WHERE value = ?)", [tag]

    def metadata_is(self, key: str, value: Any) -> tuple[str, list[Any]]:
        # The key goes into a JSON path, quoted.
        path = '$."' + key.replace('"', "") + '"'
        return "json_extract(m.metadata, ?) IS json_extract(?, '$')", [path, json.dumps(value)]


def _postgres_memory(row: Sequence[Any]) -> Memory:
    # psycopg decoded the jsonb (None where it could not: see rows.tolerant_json).
    return memory_of(row, row[8], row[9])


@lru_cache(maxsize=1024)
def _format_style(sql: str) -> str:
    return sql.replace("?", "%s")


class PostgresDialect(Dialect):
    """PostgreSQL's spelling: one array parameter per list, jsonb, row locks."""

    name = "postgres"
    rowid = "rid"
    history_seq = "seq"
    true = "TRUE"
    json = "?::jsonb"
    for_update = " FOR UPDATE"
    lock_rows = " ORDER BY rid FOR UPDATE"
    list_max = None
    microseconds = "BIGINT"
    memory = staticmethod(_postgres_memory)
    speaker = staticmethod(speaker_in)

    def any_of(
        self, column: str, values: Sequence[Any], sql_type: str = "text"
    ) -> tuple[str, list[Any]]:
        return f"{column} = ANY(?::{sql_type}[])", [list(values)]

    def has_tag(self, tag: str) -> tuple[str, list[Any]]:
        return "m.tags @> ?::jsonb", [json.dumps([tag])]

    def metadata_is(self, key: str, value: Any) -> tuple[str, list[Any]]:
        return "COALESCE(m.metadata -> ?, 'null'::jsonb) = ?::jsonb", [key, json.dumps(value)]

    @staticmethod
    def native(sql: str) -> str:
        return _format_style(sql)


SQLITE = SQLiteDialect()
POSTGRES = PostgresDialect()


def memory_values(memory: Memory) -> list[Any]:
    """A memory's columns for :meth:`Dialect.insert_memory`."""
    return [
        memory.id,
        memory.user_id,
        memory.project_id,
        memory.scope.key,
        memory.content,
        *_changed_head(memory),
        memory.importance,
        str(memory.source),
        memory.created_by,
        memory.reasoning,
        memory.session_id,
        to_us(memory.created_at),
        *_changed_tail(memory),
    ]


def changed_values(memory: Memory) -> list[Any]:
    """A memory's columns for :meth:`Dialect.update_memory` (before its extra columns)."""
    return [
        memory.content,
        *_changed_head(memory),
        memory.importance,
        memory.reasoning,
        *_changed_tail(memory),
    ]


def _changed_head(memory: Memory) -> tuple[Any, ...]:
    domain = None if memory.domain is None else str(memory.domain)
    tags, metadata = json.dumps(list(memory.tags)), json.dumps(memory.metadata)
    return str(memory.category), str(memory.ring), domain, tags, metadata


def _changed_tail(memory: Memory) -> tuple[Any, ...]:
    decision = None if memory.decision is None else memory.decision.model_dump_json()
    updated, occurred = to_us(memory.updated_at), to_us(memory.occurred_at)
    reinforced = to_us(memory.reinforced_at)
    return updated, occurred, memory.embedding_model, decision, memory.superseded_by, reinforced


def upsert(table: str, columns: str, key: str) -> str:
    """``INSERT`` of ``columns`` that overwrites the other columns of the row with the same
    ``key`` (both databases understand ``ON CONFLICT … DO UPDATE``)."""
    names = [c.strip() for c in columns.split(",")]
    keys = {k.strip() for k in key.split(",")}
    sets = ", ".join(f"{n} = excluded.{n}" for n in names if n not in keys)
    marks = ", ".join("?" for _ in names)
    return (
        f"INSERT INTO {table} ({columns}) VALUES ({marks}) ON CONFLICT ({key}) DO UPDATE SET {sets}"
    )


def chunks(values: Sequence[T], size: int | None) -> Iterator[Sequence[T]]:
    """``values`` in slices of at most ``size`` (``None``: all at once); none if empty."""
    step = size or max(len(values), 1)
    for start in range(0, len(values), step):
        yield values[start : start + step]


def scope_keys(scopes: ScopeSet) -> list[str]:
    """The keys of every scope a :class:`ScopeSet` lets a call see."""
    return [scope.key for scope in scopes.scopes()]


def database_failed(exc: BaseException) -> StoreError:
    """The :class:`~memorybank.errors.StoreError` of a database error no backend names more
    precisely. Its message goes to callers (a REST answer, a tool's error), so it names only
    the kind of error: the database's own text can quote the statement and its values, and
    is logged here for the operator instead."""
    log.error("database error: %s: %s", type(exc).__name__, exc)
    return StoreError(f"database error ({type(exc).__name__}); the server log has the details")


def unstorable(exc: UnicodeEncodeError) -> ValidationError:
    """The refusal of a value no database can be sent: text with a lone surrogate, which is
    no character and has no UTF-8 (a last line of defence: inputs are checked before)."""
    return ValidationError(
        f"text with an unpaired surrogate (U+{ord(exc.object[exc.start]):04X}) cannot be "
        "stored or searched: remove it"
    )


__all__ = [
    "MEMORY_FIELDS",
    "POSTGRES",
    "SQLITE",
    "Dialect",
    "PostgresDialect",
    "SQLiteDialect",
    "Transaction",
    "SqlDatabase",
    "SqlTransactions",
    "TxnT",
    "changed_values",
    "chunks",
    "database_failed",
    "memory_values",
    "scope_keys",
    "unstorable",
    "upsert",
]
