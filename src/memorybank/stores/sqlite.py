"""The embedded default store: one SQLite file, via apsw.

Why apsw rather than the standard library's sqlite3: apsw bundles a current SQLite (3.54 here,
where the system library is 3.40), which gives FTS5 ``secure-delete`` and contentless-delete
tables, so deleted text leaves the full-text index at once; its connections may be used from any
thread (the MCP SDK runs sync tools in worker threads, which a default sqlite3 connection
refuses); and its errors are precise (BusyError, FullError, ReadOnlyError) to translate.

Layout: WAL mode, one connection per thread, writes in ``BEGIN IMMEDIATE`` transactions (so a
duplicate check and its insert are serialised across threads and processes), ``secure_delete``
on, and a WAL checkpoint after deletes so no deleted text lingers in the -wal file.
Vector and full-text search are its :class:`~memorybank.stores.sqlite_index.SQLiteIndex`
(in-process over per-scope matrices, and FTS5). The statements it shares with PostgreSQL are
:class:`~memorybank.stores.sql_store.SqlStore`'s.

>>> store = SQLiteStore(":memory:", dimension=384)
>>> store.stats()["memories"]
0
>>> store.close()
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import apsw

from memorybank.errors import StoreError
from memorybank.stores.sql import SQLITE, database_failed, unstorable
from memorybank.stores.sql_store import SqlStore
from memorybank.stores.sqlite_index import SQLiteIndex
from memorybank.stores.sqlite_schema import MIGRATIONS
from memorybank.stores.sqlite_vectors import SQLiteTxn


def _translate(exc: apsw.Error) -> StoreError:
    if isinstance(exc, apsw.FullError):
        return StoreError("the disk is full: memorybank could not write; free space and retry")
    if isinstance(exc, apsw.ReadOnlyError):
        return StoreError("the database is read-only: writes are refused, reads still work")
    if isinstance(exc, apsw.BusyError):
        return StoreError("the database stayed locked by another writer past the busy timeout")
    if isinstance(exc, apsw.CorruptError | apsw.NotADBError):
        return StoreError("the database file is damaged or not a memorybank database")
    if isinstance(exc, apsw.CantOpenError):
        return StoreError("the database file cannot be opened: check the path and permissions")
    return database_failed(exc)


class _Snapshot(AbstractContextManager[SQLiteTxn]):
    """:meth:`SQLiteStore.reading`'s transaction (a class: one made by ``@contextmanager``
    costs a microsecond more, and every read opens one)."""

    __slots__ = ("_conn",)

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> SQLiteTxn:
        try:
            self._conn.execute("BEGIN")
        except apsw.Error as exc:
            raise _translate(exc) from exc
        return SQLiteTxn(self._conn)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        try:
            self._conn.execute("COMMIT")
        except apsw.Error as commit_exc:
            raise _translate(commit_exc) from commit_exc
        if isinstance(exc, apsw.Error):
            raise _translate(exc) from exc
        if isinstance(exc, UnicodeEncodeError):
            raise unstorable(exc) from exc


class SQLiteStore(SqlStore[SQLiteTxn]):
    """Memories in one SQLite file. Thread-safe; several processes may share the file.

    ``path`` is a file path (its folder is created), a ``file:`` URI (used as given), or
    ``":memory:"`` (one private database per store, shared by its threads; for tests).
    ``dimension`` is the vector length; vectors of another length are refused.

    >>> from memorybank.model import MemoryFilter, ScopeSet
    >>> with SQLiteStore("mb.db", dimension=384) as store:
    ...     store.count(ScopeSet(user_id="u1"), MemoryFilter())
    0
    """

    dialect = SQLITE
    migrations = MIGRATIONS
    remote_reads = False
    index: SQLiteIndex

    def __init__(
        self,
        path: str | Path,
        *,
        dimension: int,
        busy_timeout_ms: int = 30_000,
        synchronous: str = "FULL",
        cache_bytes: int = 1 << 30,
    ) -> None:
        self.path = str(path)
        self.dimension = dimension
        self._busy_timeout_ms = busy_timeout_ms
        self._synchronous = synchronous
        self._local = threading.local()
        self._connections: list[apsw.Connection] = []
        self._connections_lock = threading.Lock()
        self._write_turns = threading.Lock()
        self._closed = False
        self.index = SQLiteIndex(dimension, cache_bytes)
        self._in_memory = self.path == ":memory:"
        if self._in_memory:
            # apsw's SQLite omits shared cache, so "mode=memory&cache=shared" would give each
            # thread its own empty database; the memdb VFS shares a "/"-named one instead.
            self.path = f"file:/memorybank-{uuid.uuid4().hex}?vfs=memdb"
        elif not self.path.startswith("file:"):
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._keepalive = self._connect()
        self._migrate()

    # -- connections and transactions -------------------------------------------------------

    def _connect(self) -> apsw.Connection:
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_URI
        try:
            conn = apsw.Connection(self.path, flags=flags)
            conn.set_busy_timeout(self._busy_timeout_ms)
            if not self._in_memory:  # memdb has no WAL
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            conn.execute("PRAGMA secure_delete=ON")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA journal_size_limit=67108864")
        except apsw.Error as exc:
            raise _translate(exc) from exc
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    @property
    def _conn(self) -> apsw.Connection:
        if self._closed:
            raise StoreError("this store is closed")
        conn: apsw.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def reading(self) -> AbstractContextManager[SQLiteTxn]:
        """One read transaction (``BEGIN``) on this thread's connection: one snapshot."""
        return _Snapshot(self._conn)

    @contextmanager
    def writing(self) -> Iterator[SQLiteTxn]:
        """A ``BEGIN IMMEDIATE`` transaction on this thread's connection; vector cache changes
        are applied after commit.

        The writers of this process take turns on a lock first. Left to SQLite, a writer that
        finds the database locked sleeps in its busy handler (1, 2, 5 … up to 100 ms between
        tries) and meanwhile loses it to writers that never slept: one tenant's stream of
        saves held another's save p95 at 550 ms (issue 34). On the lock the next writer is
        woken as the last one commits. Other processes still meet in SQLite's busy handler.
        """
        with self._write_turns, self._transaction(self._conn) as txn:
            yield txn

    def _migrating(self) -> AbstractContextManager[SQLiteTxn]:
        return self._transaction(self._keepalive)

    @contextmanager
    def _transaction(self, conn: apsw.Connection) -> Iterator[SQLiteTxn]:
        txn = SQLiteTxn(conn)
        try:
            conn.execute("BEGIN IMMEDIATE")
        except apsw.Error as exc:
            raise _translate(exc) from exc
        try:
            yield txn
            txn.log_vector_changes(self.index.vector_log_revisions)
            conn.execute("COMMIT")
        except BaseException as exc:
            if not conn.getautocommit():
                conn.execute("ROLLBACK")
            # A matrix (re)loaded inside the rolled-back transaction may hold its rows.
            txn.rolled_back(self.index.vectors)
            if isinstance(exc, apsw.Error):
                raise _translate(exc) from exc
            if isinstance(exc, UnicodeEncodeError):
                raise unstorable(exc) from exc
            raise
        txn.committed(self.index.vectors)

    def _run_migration(self, txn: SQLiteTxn, version: int, sql: str) -> None:
        txn.conn.execute(sql)

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        if self._closed:
            return
        self._closed = True
        with self._connections_lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self.index.vectors.drop()

    def _after_delete(self) -> None:
        """Move WAL pages into the (secure-deleted) main file and truncate the WAL, so deleted
        text does not linger there. Readers in other connections can make this partial; the
        next checkpoint then finishes it."""
        try:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except apsw.BusyError:
            pass
        except apsw.Error as exc:
            raise _translate(exc) from exc

    def _describe(self) -> dict[str, int | str]:
        return {"backend": "sqlite", "path": self.path}

    def _sizes(self, txn: SQLiteTxn) -> dict[str, int | str]:
        row = txn.one("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size")
        return {
            "file_bytes": 0 if row is None else int(row[0]),
            "cached_vector_bytes": self.index.vectors.nbytes,
        }


__all__ = ["SQLiteStore"]
