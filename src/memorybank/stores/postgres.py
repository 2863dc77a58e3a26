"""The PostgreSQL store: psycopg 3 with a connection pool, pgvector and full-text search.

Layout: one ``memories`` table holding each memory's ``vector(dim)`` (HNSW index,
``vector_cosine_ops``) and a generated ``tsvector`` column (english configuration, GIN index);
``history`` with tombstones; numbered migrations recorded in ``schema_migrations``
(:mod:`.postgres_schema`). Every query is filtered by scope inside SQL. The statements it
shares with SQLite are :class:`~memorybank.stores.sql_store.SqlStore`'s.

Concurrency: writes run in READ COMMITTED transactions; :meth:`PostgresStore.insert` first takes
``pg_advisory_xact_lock(hashtext(scope_key))`` for each scope it writes, so the duplicate check
and the insert are serialised per scope across threads, processes and replicas (the check runs
after the lock is held, so its statement snapshot sees every earlier commit). Reads run in one
REPEATABLE READ snapshot (:meth:`PostgresStore.reading`).

Vector search compares every row of scopes holding at most :data:`EXACT_SCAN_MAX` memories
(exact, through the scope index) and walks the HNSW index for larger ones, with
``hnsw.iterative_scan = strict_order`` so scope and filter conditions do not starve it of rows.
Text search ORs the query's content words (:func:`memorybank.rules.query.query_terms`) into a
``to_tsquery`` and ranks with ``ts_rank_cd`` (≥ 0), as the SQLite store ORs them into an FTS5
query ranked by BM25.

Deletion: rows are deleted for real and history keeps only a tombstone; a forget plan's
redacted history texts are overwritten with null. PostgreSQL keeps dead tuples (and so the old
text) in table and index pages until VACUUM reclaims them; autovacuum does that in the
background (memories and history after 1 % of their rows are dead) and
:meth:`PostgresStore.vacuum` does it at once.

>>> store = PostgresStore("postgresql://localhost/memorybank", dimension=384)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from memorybank.errors import ConfigurationError, StoreError
from memorybank.model import Memory, MemoryFilter
from memorybank.model.stored import Candidate
from memorybank.providers.embedders.base import Vectors
from memorybank.rules.query import query_terms
from memorybank.stores.postgres_schema import MIGRATIONS
from memorybank.stores.sql import POSTGRES, Transaction, memory_values
from memorybank.stores.sql_store import INSERT_HISTORY, SqlStore

Conn = psycopg.Connection[tuple[Any, ...]]

# Any fixed key: concurrent migrations of one database wait for each other.
_MIGRATION_LOCK = 0x6D656D62
# Held from a transaction's event inserts to its commit (see PostgresStore.writing).
_EVENTS_LOCK = 0x6D656D65
_INSERT_MEMORY = POSTGRES.insert_memory(embedding="?::vector")
_row_to_memory = POSTGRES.memory

#: Vector searches over scopes holding at most this many memories compare every row exactly
#: instead of walking the HNSW index (see ``PostgresStore._vector_candidates``).
EXACT_SCAN_MAX = 20_000
#: Seconds a scope's size class (small or not) is trusted before it is counted again.
SCOPE_SIZE_TTL = 60.0


def _vector_literal(vector: Vectors) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector).reshape(-1)) + "]"


_TERM_UNSAFE = re.compile(r"[\\'\s]")


def _tsquery(terms: Sequence[str]) -> str:
    """``'w1' | 'w2' | …`` for ``to_tsquery``: each word quoted, so no operator gets through."""
    quoted = ["'" + _TERM_UNSAFE.sub("", term) + "'" for term in terms]
    return " | ".join(q for q in quoted if q != "''")


def _translate(exc: psycopg.Error) -> StoreError:
    if isinstance(exc, psycopg.errors.DiskFull):
        return StoreError("the database disk is full: memorybank could not write")
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return StoreError("the database is read-only: writes are refused, reads still work")
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(f"cannot reach PostgreSQL: {exc}")
    return StoreError(f"database error: {exc.__class__.__name__}: {exc}")


def redact_url(url: str) -> str:
    """``url`` with its password (URL or ``password=`` form) replaced by ``***``."""
    url = re.sub(r"://([^:/@]*):[^@]*@", r"://\1:***@", url)
    return re.sub(r"(password=)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url)


#: How long opening a store waits for PostgreSQL to answer before saying it cannot reach it.
PROBE_TIMEOUT_S = 5.0


def _reachable(url: str, timeout: float) -> None:
    """One connection attempt, so that a server that is down or a wrong address is one clear
    :class:`~memorybank.StoreError` within ``timeout`` seconds, not the pool's retries
    (logged each time) until its own timeout."""
    try:
        # libpq's connect_timeout is whole seconds, at least 2.
        with psycopg.connect(url, connect_timeout=max(2, round(timeout))):
            pass
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split())  # libpq's message spans lines
        raise StoreError(f"cannot reach PostgreSQL at {redact_url(url)}: {reason}") from None


class PostgresTxn(Transaction):
    """A transaction on one pooled psycopg connection (:attr:`conn`), with the ids an insert
    stored so far, with and without a duplicate check (see :meth:`PostgresStore._near`)."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.checked: list[str] = []
        self.unchecked: list[str] = []
        #: History rows recorded in this transaction, inserted at its end (see writing()).
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


class PostgresStore(SqlStore[PostgresTxn]):
    """Memories in a PostgreSQL database (with the ``vector`` extension). Thread-safe; any
    number of processes and replicas may share the database.

    ``url`` is a libpq connection string or ``postgresql://`` URL; ``dimension`` the vector
    length (fixed per database: opening one made for another length is refused).
    """

    dialect = POSTGRES
    migrations = MIGRATIONS
    _delete_columns = "rid, id, user_id, project_id"
    _update_sql = POSTGRES.update_memory(embedding="COALESCE(?::vector, embedding)")
    remote_reads = True

    def __init__(
        self,
        url: str,
        *,
        dimension: int,
        min_connections: int = 1,
        max_connections: int = 10,
        connect_timeout: float = 30.0,
        ef_search: int = 100,
        exact_scan_max: int = EXACT_SCAN_MAX,
    ) -> None:
        if not 1 <= ef_search <= 1000:
            raise ConfigurationError(f"ef_search must be 1-1000 (pgvector), not {ef_search}")
        self.url = url
        self.dimension = dimension
        self.ef_search = ef_search
        self.exact_scan_max = exact_scan_max
        self._scope_sizes: dict[tuple[str, ...], tuple[bool, float]] = {}
        self._closed = False
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            url,
            min_size=min_connections,
            max_size=max_connections,
            kwargs={"autocommit": True},
            configure=self._configure,
            timeout=connect_timeout,
            open=False,
            name="memorybank",
        )
        try:
            _reachable(url, min(connect_timeout, PROBE_TIMEOUT_S))
            self._pool.open(wait=True, timeout=connect_timeout)
            self._migrate()
        except PoolTimeout as exc:
            self._pool.close()
            raise StoreError(f"cannot reach PostgreSQL at {redact_url(url)}: {exc}") from None
        except BaseException:
            self._pool.close()
            raise

    # -- connections and transactions -------------------------------------------------------

    def _configure(self, conn: Conn) -> None:
        # Keep scanning the HNSW index until enough rows pass the scope and filter conditions.
        conn.execute("SET hnsw.iterative_scan = strict_order")
        # pgvector's default candidate list (40) found 0.93 of the exact top 10 in a 10,000-row
        # scope of 100,000 rows; 100 found 0.99 for 0.6 ms more (docs/benchmarks.md).
        conn.execute(f"SET hnsw.ef_search = {int(self.ef_search)}")

    @contextmanager
    def _connection(self) -> Iterator[Conn]:
        if self._closed:
            raise StoreError("this store is closed")
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise _translate(exc) from exc
        except TimeoutError as exc:
            raise StoreError(f"no PostgreSQL connection became free: {exc}") from exc

    @contextmanager
    def reading(self) -> Iterator[PostgresTxn]:
        """One read-only REPEATABLE READ transaction (one snapshot) on a pooled connection."""
        with self._connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield PostgresTxn(conn)

    @contextmanager
    def writing(self) -> Iterator[PostgresTxn]:
        """One READ COMMITTED transaction: committed on success, rolled back on any error."""
        with self._connection() as conn, conn.transaction():
            txn = PostgresTxn(conn)
            yield txn
            if txn.pending_events:
                # Identity values are taken in one order and committed in another: without
                # this a reader could see event 11 before event 10 commits and, resuming
                # after 11, miss it. Writers of events take this lock as their last one, just
                # before commit, so only the inserts and the commit are serialised and no
                # lock is ever awaited while it is held (no deadlock).
                txn.execute("SELECT pg_advisory_xact_lock(?)", (_EVENTS_LOCK,))
                txn.execute_many(INSERT_HISTORY, txn.pending_events)

    @contextmanager
    def _migrating(self) -> Iterator[PostgresTxn]:
        with self.writing() as txn:
            txn.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
            yield txn

    def _write_event(self, txn: PostgresTxn, row: Sequence[Any]) -> None:
        txn.pending_events.append(row)

    def _run_migration(self, txn: PostgresTxn, version: int, sql: str) -> None:
        # As bytes: psycopg then reads no placeholders into the script's '%' signs.
        txn.conn.execute(sql.format(dimension=int(self.dimension)).encode())
        if version == 1:
            txn.execute("INSERT INTO meta VALUES ('vector_dimension', ?)", (str(self.dimension),))

    def _migrated(self, txn: PostgresTxn) -> None:
        row = txn.one("SELECT value FROM meta WHERE key = 'vector_dimension'")
        if row is not None and int(row[0]) != self.dimension:
            raise ConfigurationError(
                f"this database stores vectors of dimension {row[0]}, but the embedder "
                f"makes {self.dimension}: use another database or the matching embedder"
            )

    def close(self) -> None:
        """Close the connection pool."""
        if self._closed:
            return
        self._closed = True
        self._pool.close()

    # -- writes -----------------------------------------------------------------------------

    def _bind_vector(self, vector: Vectors) -> str:
        return _vector_literal(vector)

    def _lock_scopes(self, txn: PostgresTxn, keys: Sequence[str]) -> None:
        # Sorted, so two batches touching the same scopes cannot deadlock.
        for key in keys:
            txn.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (key,))

    def _lookalikes(
        self, txn: PostgresTxn, memory: Memory, vector: Vectors, bound: Any, floor: float, k: int
    ) -> list[tuple[Memory, float]]:
        near = self._near(txn, memory.scope.key, bound, k)
        return [(found, sim) for found, sim in near if sim >= floor]

    def _near(self, txn: PostgresTxn, key: str, literal: str, k: int) -> list[tuple[Memory, float]]:
        """The ``k`` stored memories of scope ``key`` nearest to the vector: only memories
        that were themselves checked for duplicates count (a fact is no duplicate of a chat
        turn). Rows this insert stored count as they were checked or not, whatever their kind."""
        rows = txn.fetch(
            f"SELECT {POSTGRES.m_columns}, 1 - (m.embedding <=> ?::vector) FROM memories m "
            "WHERE m.scope_key = ? AND m.id <> ALL(?::text[]) "
            "AND (NOT (m.ring = 'episodic' AND m.source = 'conversation') "
            "     OR m.id = ANY(?::text[])) "
            "ORDER BY m.embedding <=> ?::vector LIMIT ?",
            (literal, key, txn.unchecked, txn.checked, literal, k),
        )
        return [(_row_to_memory(row), float(row[22])) for row in rows]

    def _insert_row(
        self, txn: PostgresTxn, memory: Memory, vector: Vectors, bound: Any, checked: bool
    ) -> None:
        txn.execute(_INSERT_MEMORY, [*memory_values(memory), bound])
        (txn.checked if checked else txn.unchecked).append(memory.id)

    def _vector_params(self, vector: Vectors | None) -> list[Any]:
        return [None if vector is None else _vector_literal(vector)]

    def _remove_rows(self, txn: PostgresTxn, rows: Sequence[Sequence[Any]]) -> None:
        txn.execute("DELETE FROM memories WHERE rid = ANY(?)", ([int(r[0]) for r in rows],))

    def vacuum(self) -> None:
        """Reclaim dead tuples now, so deleted text leaves table and index pages at once
        (autovacuum does the same later)."""
        with self._connection() as conn:
            conn.execute("VACUUM memories")
            conn.execute("VACUUM history")
            conn.execute("VACUUM forget_plans")

    def set_vectors(self, memory_ids: Sequence[str], vectors: Vectors, model_id: str) -> None:
        """Replace stored vectors of existing memories (used by reindex)."""
        vecs = self._check_vectors(vectors, len(memory_ids))
        with self.writing() as txn:
            for memory_id, vector in zip(memory_ids, vecs, strict=True):
                txn.execute(
                    "UPDATE memories SET embedding = ?::vector, embedding_model = ? WHERE id = ?",
                    (_vector_literal(vector), model_id, memory_id),
                )

    # -- reads ------------------------------------------------------------------------------

    def vectors_of(self, memory_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of these memories (for migration and checks)."""
        with self.reading() as txn:
            rows = txn.fetch(
                "SELECT id, embedding::text FROM memories WHERE id = ANY(?::text[])",
                (list(memory_ids),),
            )
        return {str(r[0]): np.array(json.loads(r[1]), dtype=np.float32).reshape(-1) for r in rows}

    def _describe(self) -> dict[str, int | str]:
        return {"backend": "postgres", "url": redact_url(self.url)}

    def _sizes(self, txn: PostgresTxn) -> dict[str, int | str]:
        row = txn.one("SELECT pg_database_size(current_database())")
        return {"database_bytes": 0 if row is None else int(row[0])}

    # -- vector and full-text search --------------------------------------------------------

    def _scope_is_small(self, txn: PostgresTxn, keys: Sequence[str]) -> bool:
        """Whether the scopes hold at most :attr:`exact_scan_max` memories, counted at most
        once a minute per process: scope sizes move slowly, and a scope just past the limit
        is served well enough either way for that long."""
        now = time.monotonic()
        cache_key = tuple(keys)
        cached = self._scope_sizes.get(cache_key)
        if cached is not None and now - cached[1] < SCOPE_SIZE_TTL:
            return cached[0]
        limit = self.exact_scan_max + 1
        counted = txn.one(
            "SELECT count(*) FROM (SELECT 1 FROM memories WHERE scope_key = ANY(?::text[]) "
            "LIMIT ?) AS s",
            [list(keys), limit],
        )
        small = counted is not None and int(counted[0]) < limit
        if len(self._scope_sizes) >= 10_000:  # bounded: forget them all now and then
            self._scope_sizes.clear()
        self._scope_sizes[cache_key] = (small, now)
        return small

    def _vector_candidates(
        self, txn: PostgresTxn, keys: Sequence[str], query: Vectors, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        literal = _vector_literal(query)
        where, params = POSTGRES.filter_sql(filters)
        # Scopes are small next to the table (a user's 10,000 memories among 1,000,000), and
        # an HNSW graph of the whole table filtered to 1 % of it finds 0.74 of the exact top 10
        # in 70 ms; reading the scope's rows through the scope index and comparing them all
        # finds every one in 15 ms. So small scopes are searched exactly ("+ 0" keeps the
        # planner off the HNSW index) and the index serves scopes too large to read whole.
        if self._scope_is_small(txn, keys):
            # Rank by (rid, distance) alone, each distance computed once, then read the k
            # winners' rows: sorting whole rows of the scope took twice as long.
            sql = (
                "WITH best AS ("
                "  SELECT m.rid, (m.embedding <=> ?::vector) + 0 AS distance FROM memories m"
                f"  WHERE m.scope_key = ANY(?::text[]) AND {where}"
                "  ORDER BY distance, m.rid LIMIT ?"
                f") SELECT {POSTGRES.m_columns}, 1 - best.distance FROM best "
                "JOIN memories m ON m.rid = best.rid ORDER BY best.distance, m.rid"
            )
            args = [literal, list(keys), *params, k]
        else:
            sql = (
                f"SELECT {POSTGRES.m_columns}, 1 - (m.embedding <=> ?::vector) FROM memories m "
                f"WHERE m.scope_key = ANY(?::text[]) AND {where} "
                "ORDER BY m.embedding <=> ?::vector, m.rid LIMIT ?"
            )
            args = [literal, list(keys), *params, literal, k]
        return _candidates(txn.fetch(sql, args))

    def _text_candidates(
        self, txn: PostgresTxn, keys: Sequence[str], query: str, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        tsquery = _tsquery(query_terms(query))
        if not tsquery:
            return []
        where, params = POSTGRES.filter_sql(filters)
        # One equality per scope (not "= ANY"): only equalities reach the (scope_key, body) GIN
        # index as conditions, so other scopes' matches never leave the index.
        scoped = " OR ".join("m.scope_key = ?" for _ in keys)
        rows = txn.fetch(
            f"SELECT {POSTGRES.m_columns}, ts_rank_cd(m.body, q.q) AS score "
            "FROM memories m, to_tsquery('english', ?) AS q(q) "
            f"WHERE ({scoped}) AND m.body @@ q.q AND {where} "
            "ORDER BY score DESC, m.rid LIMIT ?",
            [tsquery, *keys, *params, k],
        )
        return _candidates(rows)


def _candidates(rows: Sequence[tuple[Any, ...]]) -> list[Candidate]:
    """Candidates of memory rows read with their score after the columns."""
    return [Candidate(r, float(r[22]), _row_to_memory, POSTGRES.speaker(r[9])) for r in rows]


__all__ = ["EXACT_SCAN_MAX", "SCOPE_SIZE_TTL", "PostgresStore", "PostgresTxn", "redact_url"]
