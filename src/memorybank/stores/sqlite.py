"""The embedded default store: one SQLite file, via apsw.

Why apsw rather than the standard library's sqlite3: apsw bundles a current SQLite (3.54 here,
where the system library is 3.40), which gives FTS5 ``secure-delete`` and contentless-delete
tables, so deleted text leaves the full-text index at once; its connections may be used from any
thread (the MCP SDK runs sync tools in worker threads, which a default sqlite3 connection
refuses); and its errors are precise (BusyError, FullError, ReadOnlyError) to translate.

Layout: WAL mode, one connection per thread, writes in ``BEGIN IMMEDIATE`` transactions (so a
duplicate check and its insert are serialised across threads and processes), ``secure_delete``
on, and a WAL checkpoint after deletes so no deleted text lingers in the -wal file.
Vector search runs in-process over per-scope matrices (:mod:`.vector_index`), kept in step with
other processes' writes by :mod:`.sqlite_vectors`. The statements it shares with PostgreSQL are
:class:`~memorybank.stores.sql_store.SqlStore`'s.

>>> store = SQLiteStore(":memory:", dimension=384)
>>> store.stats()["memories"]
0
>>> store.close()
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from memorybank.errors import StoreError
from memorybank.model import Memory, MemoryFilter, Scope
from memorybank.model.stored import Candidate
from memorybank.providers.embedders.base import Vectors
from memorybank.rules.query import query_terms
from memorybank.stores.sql import SQLITE, Transaction, chunks, memory_values
from memorybank.stores.sql_store import SqlStore
from memorybank.stores.sqlite_schema import MIGRATIONS
from memorybank.stores.sqlite_vectors import (
    VECTOR_LOG_REVISIONS,
    VectorSync,
    added,
    removed,
    unchanged,
)
from memorybank.stores.vector_index import RowIds, ScopeMatrix, VectorCache

# How many nearest vectors a duplicate check looks at; more than this many near-copies that
# are all chat turns is not a case worth a slower query.
_DEDUP_PROBE = 32
_INSERT_MEMORY = SQLITE.insert_memory()
_row_to_memory = SQLITE.memory


def _scope_token(scope_key: str) -> str:
    """A single alphanumeric FTS token standing for a scope (keys contain ':' and ids)."""
    return "s" + hashlib.blake2b(scope_key.encode(), digest_size=10).hexdigest()


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
    return StoreError(f"database error: {exc.__class__.__name__}: {exc}")


class SQLiteTxn(Transaction, VectorSync):
    """A transaction on one apsw connection (:attr:`conn`, for SQLite's own statements), with
    the book-keeping by which a write keeps the vector cache in step (:class:`VectorSync`)."""

    def __init__(self, conn: apsw.Connection) -> None:
        VectorSync.__init__(self, conn)

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return list(self.conn.execute(sql, params))

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        self.conn.execute(sql, params)
        return int(self.conn.changes())

    def execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)


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
    # Deleting a row takes its text out of the contentless FTS index, which needs that text.
    _delete_columns = SQLITE.columns
    _update_sql = SQLITE.update_memory()
    remote_reads = False

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
        self._closed = False
        self.vectors = VectorCache(cache_bytes)
        self.vector_log_revisions = VECTOR_LOG_REVISIONS
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

    def writing(self) -> AbstractContextManager[SQLiteTxn]:
        """A ``BEGIN IMMEDIATE`` transaction on this thread's connection; vector cache changes
        are applied after commit."""
        return self._transaction(self._conn)

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
            txn.log_vector_changes(self.vector_log_revisions)
            conn.execute("COMMIT")
        except BaseException as exc:
            if not conn.getautocommit():
                conn.execute("ROLLBACK")
            # A matrix (re)loaded inside the rolled-back transaction may hold its rows.
            txn.rolled_back(self.vectors)
            if isinstance(exc, apsw.Error):
                raise _translate(exc) from exc
            raise
        txn.committed(self.vectors)

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
        self.vectors.drop()

    # -- the vector cache -------------------------------------------------------------------

    def _load_scope(self, conn: apsw.Connection, key: str, rev: int) -> ScopeMatrix:
        rows = list(
            conn.execute(
                "SELECT v.rowid, v.embedding FROM memories m JOIN memory_vectors v "
                "ON v.rowid = m.rowid WHERE m.scope_key = ?",
                (key,),
            )
        )
        return ScopeMatrix.loaded(self.dimension, rev, *self._decode_vectors(rows))

    def _decode_vectors(self, rows: Sequence[tuple[int, bytes]]) -> tuple[RowIds, Vectors]:
        """Row ids and the matrix of their stored vectors, from ``(rowid, embedding)`` rows."""
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return ids, vecs.reshape(len(rows), self.dimension)

    def _patch_scope(self, conn: apsw.Connection, key: str, matrix: ScopeMatrix, rev: int) -> bool:
        """Bring ``matrix`` (stale: another process wrote) to revision ``rev`` with the vector
        changes logged in between; False when the log can't (too far behind, or a change it
        does not itemise). Reads the whole scope's vectors only in that case: a user with
        10,000 memories is 15 MB, read again after every save made by another worker."""
        changed = VectorSync.changed_since(conn, key, matrix.rev, rev, self.vector_log_revisions)
        if changed is None:
            return False
        present: list[tuple[int, bytes]] = []
        for chunk in chunks(changed, 500):
            present += conn.execute(
                "SELECT v.rowid, v.embedding FROM memory_vectors v JOIN memories m "
                f"ON m.rowid = v.rowid WHERE m.scope_key = ? AND v.rowid IN "
                f"({','.join('?' * len(chunk))})",
                [key, *chunk],
            )
        kept = {rowid for rowid, _ in present}
        matrix.remove(np.array([r for r in changed if r not in kept], dtype=np.int64))
        if present:
            matrix.add(*self._decode_vectors(present))
        return True

    def _fresh_matrix(self, conn: apsw.Connection, key: str, rev: int) -> ScopeMatrix:
        return self.vectors.fresh(
            key,
            rev,
            functools.partial(self._load_scope, conn, key, rev),
            functools.partial(self._patch_scope, conn, key),
        )

    def _matrices(self, conn: apsw.Connection, keys: Sequence[str]) -> list[ScopeMatrix]:
        revs = VectorSync.revisions(conn, keys)
        return [self._fresh_matrix(conn, key, rev) for key, rev in revs.items()]

    # -- writes -----------------------------------------------------------------------------

    def _lookalikes(
        self, txn: SQLiteTxn, memory: Memory, vector: Vectors, bound: Any, floor: float, k: int
    ) -> list[tuple[Memory, float]]:
        near = self._near_in_txn(txn, memory.scope.key, vector, floor)[:k]
        if not near:
            return []
        rows = {
            int(r[-1]): _row_to_memory(r[:-1])
            for r in txn.fetch(
                f"SELECT {SQLITE.columns}, rowid FROM memories "
                f"WHERE rowid IN ({','.join('?' * len(near))})",
                [i for i, _ in near],
            )
        }
        return [(rows[i], sim) for i, sim in near if i in rows]

    def _near_in_txn(
        self, txn: SQLiteTxn, key: str, vector: Vectors, floor: float
    ) -> list[tuple[int, float]]:
        """Row ids and similarities of scope ``key``'s checked memories (this transaction's
        rows included) at least ``floor`` similar to ``vector``, nearest first. Only memories
        that were themselves checked for duplicates count: a fact is no duplicate of a chat
        turn that said it."""
        # Within the transaction the cache stays at the revision the scope had before it;
        # rows this transaction added are in ``txn.pending``.
        if key in txn.scopes:
            rev = txn.scopes[key][0]
        else:
            rev = VectorSync.revisions(txn.conn, [key])[key]
        matrix = self._fresh_matrix(txn.conn, key, rev)
        ids, sims = matrix.search(vector, _DEDUP_PROBE)
        close = [(int(i), float(sim)) for i, sim in zip(ids, sims, strict=True) if sim >= floor]
        found: list[tuple[int, float]] = []
        if close:
            facts = {
                int(r[0])
                for r in txn.conn.execute(
                    f"SELECT rowid FROM memories WHERE rowid IN ({','.join('?' * len(close))}) "
                    "AND NOT (ring = 'episodic' AND source = 'conversation')",
                    [i for i, _ in close],
                )
            }
            found = [(i, sim) for i, sim in close if i in facts]
        for rowid, pending in txn.pending.get(key, []):
            sim = float(pending @ vector)
            if sim >= floor:
                found.append((rowid, sim))
        return sorted(found, key=lambda pair: -pair[1])

    def _insert_row(
        self, txn: SQLiteTxn, memory: Memory, vector: Vectors, bound: Any, checked: bool
    ) -> None:
        conn, key = txn.conn, memory.scope.key
        conn.execute(_INSERT_MEMORY, memory_values(memory))
        rowid = int(conn.last_insert_rowid())
        conn.execute(
            "INSERT INTO memory_vectors (rowid, embedding) VALUES (?, ?)",
            (rowid, np.ascontiguousarray(vector, dtype=np.float32).tobytes()),
        )
        conn.execute(
            "INSERT INTO memories_fts (rowid, scope, body) VALUES (?, ?, ?)",
            (rowid, _scope_token(key), _body(memory.content, memory.tags)),
        )
        row = vector.reshape(1, -1).copy()
        txn.touch(key, added(rowid, row), [rowid])
        if checked:
            txn.pending.setdefault(key, []).append((rowid, row[0]))

    def _vector_params(self, vector: Vectors | None) -> list[Any]:
        return []  # vectors live in their own table (see _replaced)

    def _replaced(
        self, txn: SQLiteTxn, row: tuple[Any, ...], memory: Memory, vector: Vectors | None
    ) -> None:
        conn, rowid, key = txn.conn, int(row[0]), str(row[1])
        _fts_delete(conn, rowid, key, _body(row[2], json.loads(row[3])))
        conn.execute(
            "INSERT INTO memories_fts (rowid, scope, body) VALUES (?, ?, ?)",
            (rowid, _scope_token(key), _body(memory.content, memory.tags)),
        )
        if vector is None:
            txn.touch(key, unchanged, [])
            return
        conn.execute(
            "UPDATE memory_vectors SET embedding = ? WHERE rowid = ?", (vector.tobytes(), rowid)
        )
        txn.touch(key, added(rowid, vector.reshape(1, -1).copy()), [rowid])

    def _remove_rows(self, txn: SQLiteTxn, rows: Sequence[Sequence[Any]]) -> None:
        conn = txn.conn
        by_scope: dict[str, list[int]] = {}
        for row in rows:
            rowid = int(row[0])
            key = Scope(user_id=row[2], project_id=row[3]).key
            _fts_delete(conn, rowid, key, _body(row[4], json.loads(row[8])))
            conn.execute("DELETE FROM memory_vectors WHERE rowid = ?", (rowid,))
            conn.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
            by_scope.setdefault(key, []).append(rowid)
        for key, rowids in by_scope.items():
            txn.touch(key, removed(rowids), rowids)

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

    def set_vectors(self, memory_ids: Sequence[str], vectors: Vectors, model_id: str) -> None:
        """Replace stored vectors of existing memories (used by reindex)."""
        vecs = self._check_vectors(vectors, len(memory_ids))
        with self.writing() as txn:
            touched: set[str] = set()
            for memory_id, vector in zip(memory_ids, vecs, strict=True):
                row = txn.one("SELECT rowid, scope_key FROM memories WHERE id = ?", (memory_id,))
                if row is None:
                    continue
                txn.execute(
                    "UPDATE memory_vectors SET embedding = ? WHERE rowid = ?",
                    (vector.tobytes(), row[0]),
                )
                txn.execute(
                    "UPDATE memories SET embedding_model = ? WHERE rowid = ?", (model_id, row[0])
                )
                touched.add(str(row[1]))
            for key in touched:
                txn.touch(key, None, [])

    # -- reads ------------------------------------------------------------------------------

    def vectors_of(self, memory_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of these memories, by id (for migration and checks)."""
        found: dict[str, Vectors] = {}
        for chunk in chunks(list(memory_ids), 500):
            with self.reading() as txn:
                rows = txn.fetch(
                    "SELECT m.id, v.embedding FROM memories m JOIN memory_vectors v "
                    f"ON v.rowid = m.rowid WHERE m.id IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
            found.update((str(r[0]), np.frombuffer(r[1], dtype=np.float32)) for r in rows)
        return found

    def _describe(self) -> dict[str, int | str]:
        return {"backend": "sqlite", "path": self.path}

    def _sizes(self, txn: SQLiteTxn) -> dict[str, int | str]:
        row = txn.one("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size")
        return {
            "file_bytes": 0 if row is None else int(row[0]),
            "cached_vector_bytes": self.vectors.nbytes,
        }

    # -- vector search ----------------------------------------------------------------------

    def _vector_candidates(
        self, txn: SQLiteTxn, keys: Sequence[str], query: Vectors, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        return self._candidates(txn.conn, self._vector_scored(txn.conn, keys, query, k, filters))

    def _vector_scored(
        self,
        conn: apsw.Connection,
        keys: Sequence[str],
        q: Vectors,
        k: int,
        filters: MemoryFilter,
    ) -> list[tuple[int, float]]:
        allowed, skipped = self._vector_filter(conn, keys, filters)
        found: list[tuple[int, float]] = []
        for matrix in self._matrices(conn, keys):
            ids, sims = matrix.search(q, k + len(skipped), allowed)
            pairs = zip(ids.tolist(), sims.tolist(), strict=True)
            found += [(i, sim) for i, sim in pairs if i not in skipped]
        found.sort(key=lambda pair: -pair[1])
        return found[:k]

    def _hybrid(
        self,
        txn: SQLiteTxn,
        keys: Sequence[str],
        vector: Vectors,
        query: str,
        k: int,
        filters: MemoryFilter,
    ) -> tuple[list[Candidate], list[Candidate]]:
        """Both candidate lists from one snapshot, each row read and built once."""
        by_vector = self._vector_scored(txn.conn, keys, vector, k, filters)
        by_text = self._text_scored(txn.conn, keys, query, k, filters)
        both = self._candidates(txn.conn, [*by_vector, *by_text])
        return both[: len(by_vector)], both[len(by_vector) :]

    def _vector_filter(
        self, conn: apsw.Connection, keys: Sequence[str], filters: MemoryFilter
    ) -> tuple[RowIds | None, set[int]]:
        """Rows a vector search may return, as an allow-list (``None``: all) and rows to skip.

        "Not superseded" alone is the common case (searches hide replaced memories) and
        superseded rows are few, so those are skipped instead of listing every current row.
        """
        if _only_current(filters):
            rows = conn.execute(
                "SELECT rowid FROM memories INDEXED BY memories_superseded "
                "WHERE superseded_by IS NOT NULL "
                f"AND scope_key IN ({','.join('?' * len(keys))})",
                keys,
            )
            return None, {int(r[0]) for r in rows}
        return self._allowed_rowids(conn, keys, filters), set()

    def _allowed_rowids(
        self, conn: apsw.Connection, keys: Sequence[str], filters: MemoryFilter
    ) -> RowIds | None:
        if filters == MemoryFilter():
            return None
        where, params = SQLITE.filter_sql(filters)
        rows = conn.execute(
            f"SELECT m.rowid FROM memories m WHERE m.scope_key IN ({','.join('?' * len(keys))}) "
            f"AND {where}",
            [*keys, *params],
        )
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    def _candidates(
        self, conn: apsw.Connection, scored: Sequence[tuple[int, float]]
    ) -> list[Candidate]:
        if not scored:
            return []
        rowids = sorted({rowid for rowid, _ in scored})
        rows = conn.execute(
            f"SELECT {SQLITE.columns} FROM memories WHERE rowid IN ({','.join('?' * len(rowids))})",
            rowids,
        )
        by_rowid = {r[0]: r for r in rows}
        return [
            Candidate(row, score, _row_to_memory, SQLITE.speaker(row[9]))
            for rowid, score in scored
            if (row := by_rowid.get(rowid)) is not None
        ]

    # -- full-text search -------------------------------------------------------------------

    def _text_candidates(
        self, txn: SQLiteTxn, keys: Sequence[str], query: str, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` best BM25 matches of ``query`` (any of its content words)."""
        return self._candidates(txn.conn, self._text_scored(txn.conn, keys, query, k, filters))

    def _text_scored(
        self,
        conn: apsw.Connection,
        keys: Sequence[str],
        query: str,
        k: int,
        filters: MemoryFilter,
    ) -> list[tuple[int, float]]:
        terms = query_terms(query)
        if not terms:
            return []
        scope_expr = " OR ".join(f'scope : "{_scope_token(key)}"' for key in keys)
        body_expr = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
        match = f"({scope_expr}) AND body : ({body_expr})"
        # "Not superseded" alone (every default search) skips the few superseded rows after
        # ranking rather than joining every match with its row.
        only_current = _only_current(filters)
        where, params = SQLITE.filter_sql(MemoryFilter() if only_current else filters)
        join = "" if where == SQLITE.true else "JOIN memories m ON m.rowid = f.rowid"
        sql = (
            f"SELECT f.rowid, -bm25(memories_fts, 0.0, 1.0) AS score FROM memories_fts f {join} "
            f"WHERE memories_fts MATCH ? AND {where} ORDER BY score DESC LIMIT ?"
        )
        skip = self._vector_filter(conn, keys, filters)[1] if only_current else set()
        rows = conn.execute(sql, [match, *params, k + len(skip)])
        scored = [(int(r[0]), float(r[1])) for r in rows if int(r[0]) not in skip]
        return scored[:k]


def _only_current(filters: MemoryFilter) -> bool:
    """Whether ``filters`` asks for "not superseded" and nothing else."""
    return filters.superseded is False and (
        filters.model_copy(update={"superseded": None}) == MemoryFilter()
    )


def _body(content: str, tags: Sequence[str]) -> str:
    """The text a memory is indexed under: its content and tags."""
    return " ".join([content, *tags])


def _fts_delete(conn: apsw.Connection, rowid: int, scope_key: str, body: str) -> None:
    """Remove a row from the contentless index; it needs the exact text that was indexed."""
    conn.execute(
        "INSERT INTO memories_fts (memories_fts, rowid, scope, body) VALUES ('delete', ?, ?, ?)",
        (rowid, _scope_token(scope_key), body),
    )


__all__ = ["SQLiteStore", "SQLiteTxn"]
