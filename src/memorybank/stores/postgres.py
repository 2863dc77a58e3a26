"""The PostgreSQL store: psycopg 3 with a connection pool, pgvector and full-text search.

Layout: one ``memories`` table holding each memory's ``vector(dim)`` and a generated
``tsvector`` column, which its :class:`~memorybank.stores.postgres_index.PostgresIndex`
searches; ``history`` with tombstones; numbered migrations recorded in ``schema_migrations``
(:mod:`.postgres_schema`). Every query is filtered by scope inside SQL. The statements it
shares with SQLite are :class:`~memorybank.stores.sql_store.SqlStore`'s.

Concurrency: writes run in READ COMMITTED transactions; :meth:`PostgresStore.insert` first takes
``pg_advisory_xact_lock(hashtext(scope_key))`` for each scope it writes, so the duplicate check
and the insert are serialised per scope across threads, processes and replicas (the check runs
after the lock is held, so its statement snapshot sees every earlier commit). Reads run in one
REPEATABLE READ snapshot (:meth:`PostgresStore.reading`).

Deletion: rows are deleted for real and history keeps only a tombstone; a forget plan's
redacted history texts are overwritten with null. PostgreSQL keeps dead tuples (and so the old
text) in table and index pages until VACUUM reclaims them; autovacuum does that in the
background (memories and history after 1 % of their rows are dead) and
:meth:`PostgresStore.vacuum` does it at once.

>>> store = PostgresStore("postgresql://localhost/memorybank", dimension=384)  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.types.json import set_json_loads
from psycopg_pool import ConnectionPool, PoolTimeout

from memorybank.errors import ConfigurationError, StoreError, ValidationError
from memorybank.stores.postgres_index import EXACT_SCAN_MAX, PostgresIndex
from memorybank.stores.postgres_schema import MIGRATIONS
from memorybank.stores.postgres_txn import Conn, PostgresTxn
from memorybank.stores.rows import tolerant_json
from memorybank.stores.sql import POSTGRES, database_failed, log, unstorable
from memorybank.stores.sql_store import INSERT_HISTORY, SqlStore

# Any fixed key: concurrent migrations of one database wait for each other.
_MIGRATION_LOCK = 0x6D656D62
# Held from a transaction's event inserts to its commit (see PostgresStore.writing).
_EVENTS_LOCK = 0x6D656D65


def _translate(exc: psycopg.Error) -> StoreError:
    if isinstance(exc, psycopg.errors.DiskFull):
        return StoreError("the database disk is full: memorybank could not write")
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return StoreError("the database is read-only: writes are refused, reads still work")
    if isinstance(exc, psycopg.OperationalError):
        log.error("PostgreSQL failed: %s", exc)
        return StoreError("cannot reach PostgreSQL; the server log has the details")
    return database_failed(exc)


def _refused_text(exc: psycopg.Error) -> ValidationError | None:
    """The refusal of text PostgreSQL cannot hold (a NUL), which psycopg reports before
    sending it; ``None`` for any other error."""
    if isinstance(exc, psycopg.DataError) and "NUL (0x00)" in str(exc):
        return ValidationError("text with a NUL character (U+0000) cannot be stored: remove it")
    return None


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


class PostgresStore(SqlStore[PostgresTxn]):
    """Memories in a PostgreSQL database (with the ``vector`` extension). Thread-safe; any
    number of processes and replicas may share the database.

    ``url`` is a libpq connection string or ``postgresql://`` URL; ``dimension`` the vector
    length (fixed per database: opening one made for another length is refused).
    """

    dialect = POSTGRES
    migrations = MIGRATIONS
    remote_reads = True
    index: PostgresIndex

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
        self.index = PostgresIndex(exact_scan_max)
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
        # Tags and metadata decode without raising: jsonb nested past Python's recursion
        # limit failed the whole query, and every read of its scope with it (stores.rows).
        set_json_loads(tolerant_json, conn)
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
            raise (_refused_text(exc) or _translate(exc)) from exc
        except UnicodeEncodeError as exc:
            raise unstorable(exc) from exc
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

    def _lock_scopes(self, txn: PostgresTxn, keys: Sequence[str]) -> None:
        # Sorted, so two batches touching the same scopes cannot deadlock.
        for key in keys:
            txn.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (key,))

    def vacuum(self) -> None:
        """Reclaim dead tuples now, so deleted text leaves table and index pages at once
        (autovacuum does the same later)."""
        with self._connection() as conn:
            conn.execute("VACUUM memories")
            conn.execute("VACUUM history")
            conn.execute("VACUUM forget_plans")

    def _describe(self) -> dict[str, int | str]:
        return {"backend": "postgres", "url": redact_url(self.url)}

    def _sizes(self, txn: PostgresTxn) -> dict[str, int | str]:
        row = txn.one("SELECT pg_database_size(current_database())")
        return {"database_bytes": 0 if row is None else int(row[0])}


__all__ = ["PostgresStore", "redact_url"]
