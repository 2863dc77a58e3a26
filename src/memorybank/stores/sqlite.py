"""The embedded default store: one SQLite file, via apsw.

Why apsw rather than the standard library's sqlite3: apsw bundles a current SQLite (3.54 here,
where the system library is 3.40), which gives FTS5 ``secure-delete`` and contentless-delete
tables, so deleted text leaves the full-text index at once; its connections may be used from any
thread (the MCP SDK runs sync tools in worker threads, which a default sqlite3 connection
refuses); and its errors are precise (BusyError, FullError, ReadOnlyError) to translate.

Layout: WAL mode, one connection per thread, writes in ``BEGIN IMMEDIATE`` transactions (so a
duplicate check and its insert are serialised across threads and processes), ``secure_delete``
on, and a WAL checkpoint after deletes so no deleted text lingers in the -wal file.
Vector search runs in-process over per-scope matrices (:mod:`.vector_index`).

>>> store = SQLiteStore(":memory:", dimension=384)  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import apsw
import numpy as np

from memorybank.embedders.base import Vectors
from memorybank.errors import ConfigurationError, StoreError, ValidationError
from memorybank.model import EventKind, HistoryEvent, Memory, MemoryFilter, Scope, ScopeSet
from memorybank.stores.base import Candidate, InsertOutcome, Order
from memorybank.stores.sqlite_schema import MIGRATIONS
from memorybank.stores.vector_index import RowIds, ScopeMatrix, VectorCache
from memorybank.textsearch import query_terms

T = TypeVar("T")

_COLUMNS = (
    "rowid, id, user_id, project_id, content, category, ring, domain, tags, metadata, "
    "importance, source, created_by, reasoning, session_id, created_us, updated_us, "
    "occurred_us, embedding_model"
)
_ORDERS: dict[str, str] = {
    "created_desc": "m.created_us DESC, m.rowid DESC",
    "created_asc": "m.created_us ASC, m.rowid ASC",
    "importance_desc": "m.importance DESC, m.created_us DESC, m.rowid DESC",
}


def _us(value: datetime | None) -> int | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp() * 1_000_000)


def _dt(value: int | None) -> datetime | None:
    if value is None:
        return None
    return datetime.fromtimestamp(value / 1_000_000, UTC)


def _scope_token(scope_key: str) -> str:
    """A single alphanumeric FTS token standing for a scope (keys contain ':' and ids)."""
    return "s" + hashlib.blake2b(scope_key.encode(), digest_size=10).hexdigest()


def _row_to_memory(row: Sequence[Any]) -> Memory:
    return Memory.model_validate(
        {
            "id": row[1],
            "user_id": row[2],
            "project_id": row[3],
            "content": row[4],
            "category": row[5],
            "ring": row[6],
            "domain": row[7],
            "tags": tuple(json.loads(row[8])),
            "metadata": json.loads(row[9]),
            "importance": row[10],
            "source": row[11],
            "created_by": row[12],
            "reasoning": row[13],
            "session_id": row[14],
            "created_at": _dt(row[15]),
            "updated_at": _dt(row[16]),
            "occurred_at": _dt(row[17]),
            "embedding_model": row[18],
        }
    )


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


def _scope_keys(scopes: ScopeSet) -> list[str]:
    return [scope.key for scope in scopes.scopes()]


def _filter_sql(filters: MemoryFilter) -> tuple[str, list[Any]]:
    """SQL conditions (joined with AND, on alias ``m``) for ``filters``."""
    parts: list[str] = []
    params: list[Any] = []

    def one_of(column: str, values: Sequence[str] | None) -> None:
        if values is not None:
            parts.append(f"m.{column} IN ({','.join('?' * len(values))})" if values else "0")
            params.extend(str(v) for v in values)

    one_of("category", filters.category)
    one_of("ring", filters.ring)
    one_of("domain", filters.domain)
    one_of("source", filters.source)
    for tag in filters.tags or ():
        parts.append("EXISTS (SELECT 1 FROM json_each(m.tags) WHERE value = ?)")
        params.append(tag)
    if filters.min_importance is not None:
        parts.append("m.importance >= ?")
        params.append(filters.min_importance)
    if filters.since is not None:
        parts.append("m.created_us >= ?")
        params.append(_us(filters.since))
    if filters.until is not None:
        parts.append("m.created_us < ?")
        params.append(_us(filters.until))
    if filters.session_id is not None:
        parts.append("m.session_id = ?")
        params.append(filters.session_id)
    for key, value in (filters.metadata or {}).items():
        # The key goes into a JSON path, quoted; values compare as JSON so 1, "1" and true
        # stay distinct.
        parts.append("json_extract(m.metadata, ?) IS json_extract(?, '$')")
        params.extend(['$."' + key.replace('"', "") + '"', json.dumps(value)])
    return (" AND ".join(parts) or "1"), params


class SQLiteStore:
    """Memories in one SQLite file. Thread-safe; several processes may share the file.

    ``path`` is a file path or ``":memory:"`` (one private database per store, for tests).
    ``dimension`` is the vector length; vectors of another length are refused.

    >>> with SQLiteStore("/tmp/mb.db", dimension=384) as store:  # doctest: +SKIP
    ...     store.count(ScopeSet(user_id="u1"), MemoryFilter())
    0
    """

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
        if self.path == ":memory:":
            # A shared-cache in-memory URI so every thread's connection sees one database.
            self.path = f"file:memorybank-{id(self)}?mode=memory&cache=shared"
        else:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._keepalive = self._connect()
        self._migrate()

    # -- connections and transactions -------------------------------------------------------

    def _connect(self) -> apsw.Connection:
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_URI
        try:
            conn = apsw.Connection(self.path, flags=flags)
            conn.set_busy_timeout(self._busy_timeout_ms)
            if not self.path.startswith("file:memorybank-"):
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

    @contextmanager
    def _write(self) -> Iterator[_WriteTxn]:
        """A ``BEGIN IMMEDIATE`` transaction; cache changes are applied after commit."""
        conn = self._conn
        txn = _WriteTxn(conn)
        try:
            conn.execute("BEGIN IMMEDIATE")
        except apsw.Error as exc:
            raise _translate(exc) from exc
        try:
            yield txn
            conn.execute("COMMIT")
        except BaseException as exc:
            if not conn.getautocommit():
                conn.execute("ROLLBACK")
            # A matrix (re)loaded inside the rolled-back transaction may hold its rows.
            for key in txn.scopes:
                self.vectors.drop(key)
            if isinstance(exc, apsw.Error):
                raise _translate(exc) from exc
            raise
        for key, (old_rev, new_rev, changes) in txn.scopes.items():
            if any(change is None for change in changes):
                self.vectors.drop(key)
            else:
                self.vectors.apply(key, old_rev, new_rev, _chain(changes))

    def _read(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run ``fn`` in one read transaction, so it sees one snapshot."""
        conn = self._conn
        try:
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                conn.execute("COMMIT")
        except apsw.Error as exc:
            raise _translate(exc) from exc

    def _migrate(self) -> None:
        conn = self._keepalive
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_us INTEGER NOT NULL)"
            )
            done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            for version, name, sql in MIGRATIONS:
                if version in done:
                    continue
                conn.execute(sql)
                conn.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    (version, name, _us(datetime.now(UTC))),
                )
            newest = max(done, default=0)
            if newest > MIGRATIONS[-1][0]:
                raise ConfigurationError(
                    f"this database has schema version {newest}, newer than this memorybank "
                    f"knows ({MIGRATIONS[-1][0]}): upgrade memorybank"
                )
            conn.execute("COMMIT")
        except BaseException as exc:
            if not conn.getautocommit():
                conn.execute("ROLLBACK")
            if isinstance(exc, apsw.Error):
                raise _translate(exc) from exc
            raise

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

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- meta -------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A value from the settings table."""
        rows = self._read(lambda c: list(c.execute("SELECT value FROM meta WHERE key = ?", (key,))))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Set a value in the settings table."""
        with self._write() as txn:
            txn.conn.execute(
                "INSERT INTO meta VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- vectors ----------------------------------------------------------------------------

    def _check_vectors(self, vectors: Vectors, count: int) -> Vectors:
        arr = np.asarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape != (count, self.dimension):
            raise ValidationError(
                f"expected {count} vectors of dimension {self.dimension}, got shape {arr.shape}",
                field="vectors",
            )
        return arr

    def _load_scope(self, conn: apsw.Connection, key: str, rev: int) -> ScopeMatrix:
        rows = list(
            conn.execute(
                "SELECT v.rowid, v.embedding FROM memories m JOIN memory_vectors v "
                "ON v.rowid = m.rowid WHERE m.scope_key = ?",
                (key,),
            )
        )
        matrix = ScopeMatrix(self.dimension, rev, capacity=max(64, len(rows)))
        if rows:
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
            matrix.add(ids, vecs.reshape(len(rows), self.dimension))
        return matrix

    def _revisions(self, conn: apsw.Connection, keys: Sequence[str]) -> dict[str, int]:
        if not keys:
            return {}
        marks = ",".join("?" * len(keys))
        revs = dict.fromkeys(keys, 0)
        for key, rev in conn.execute(
            f"SELECT scope_key, rev FROM scope_revisions WHERE scope_key IN ({marks})", keys
        ):
            revs[key] = rev
        return revs

    def _matrices(self, conn: apsw.Connection, keys: Sequence[str]) -> list[ScopeMatrix]:
        revs = self._revisions(conn, keys)
        return [
            self.vectors.fresh(key, rev, functools.partial(self._load_scope, conn, key, rev))
            for key, rev in revs.items()
        ]

    # -- writes -----------------------------------------------------------------------------

    def insert(
        self,
        memories: Sequence[Memory],
        vectors: Vectors,
        *,
        dedup_threshold: float | None,
        dedup: Sequence[bool],
        actor: str | None,
    ) -> list[InsertOutcome]:
        """Insert memories with their vectors in one transaction (see :class:`Store`)."""
        vecs = self._check_vectors(vectors, len(memories))
        if len(dedup) != len(memories):
            raise ValidationError("dedup flags must match memories one to one", field="dedup")
        outcomes: list[InsertOutcome] = []
        with self._write() as txn:
            conn = txn.conn
            for memory, vector, check in zip(memories, vecs, dedup, strict=True):
                key = memory.scope.key
                if check and dedup_threshold is not None:
                    found = self._nearest_in_txn(txn, key, vector)
                    if found is not None and found[1] > dedup_threshold:
                        existing = self._get_by_rowid(conn, found[0])
                        outcomes.append(InsertOutcome(memory, False, existing, float(found[1])))
                        continue
                rowid = self._insert_row(conn, memory, vector)
                self._record(
                    conn,
                    HistoryEvent(
                        memory_id=memory.id,
                        user_id=memory.user_id,
                        project_id=memory.project_id,
                        kind=EventKind.ADD,
                        new_content=memory.content,
                        actor=actor,
                        created_at=memory.created_at,
                    ),
                )
                ids = np.array([rowid], dtype=np.int64)
                row = vector.reshape(1, -1).copy()
                txn.touch(key, functools.partial(ScopeMatrix.add, row_ids=ids, vectors=row))
                txn.pending.setdefault(key, []).append((rowid, row[0]))
                outcomes.append(InsertOutcome(memory, True))
        return outcomes

    def _nearest_in_txn(
        self, txn: _WriteTxn, key: str, vector: Vectors
    ) -> tuple[int, float] | None:
        """Nearest stored vector of scope ``key`` as of this transaction, including rows this
        transaction inserted already."""
        # Within the transaction the cache stays at the revision the scope had before it;
        # rows this transaction added are in ``txn.pending``.
        if key in txn.scopes:
            rev = txn.scopes[key][0]
        else:
            rev = self._revisions(txn.conn, [key])[key]
        matrix = self.vectors.fresh(
            key, rev, functools.partial(self._load_scope, txn.conn, key, rev)
        )
        best: tuple[int, float] | None = None
        ids, sims = matrix.search(vector, 1)
        if len(ids):
            best = (int(ids[0]), float(sims[0]))
        for rowid, pending in txn.pending.get(key, []):
            sim = float(pending @ vector)
            if best is None or sim > best[1]:
                best = (rowid, sim)
        return best

    def _insert_row(self, conn: apsw.Connection, memory: Memory, vector: Vectors) -> int:
        key = memory.scope.key
        conn.execute(
            "INSERT INTO memories (id, user_id, project_id, scope_key, content, category, ring, "
            "domain, tags, metadata, importance, source, created_by, reasoning, session_id, "
            "created_us, updated_us, occurred_us, embedding_model) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                memory.id,
                memory.user_id,
                memory.project_id,
                key,
                memory.content,
                str(memory.category),
                str(memory.ring),
                None if memory.domain is None else str(memory.domain),
                json.dumps(list(memory.tags)),
                json.dumps(memory.metadata),
                memory.importance,
                str(memory.source),
                memory.created_by,
                memory.reasoning,
                memory.session_id,
                _us(memory.created_at),
                _us(memory.updated_at),
                _us(memory.occurred_at),
                memory.embedding_model,
            ),
        )
        rowid = int(conn.last_insert_rowid())
        conn.execute(
            "INSERT INTO memory_vectors (rowid, embedding) VALUES (?, ?)",
            (rowid, np.ascontiguousarray(vector, dtype=np.float32).tobytes()),
        )
        conn.execute(
            "INSERT INTO memories_fts (rowid, scope, body) VALUES (?, ?, ?)",
            (rowid, _scope_token(key), _fts_body(memory)),
        )
        return rowid

    def _record(self, conn: apsw.Connection, event: HistoryEvent) -> None:
        scope = Scope(user_id=event.user_id, project_id=event.project_id)
        conn.execute(
            "INSERT INTO history (id, memory_id, user_id, project_id, scope_key, kind, "
            "old_content, new_content, actor, created_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.id,
                event.memory_id,
                event.user_id,
                event.project_id,
                scope.key,
                str(event.kind),
                event.old_content,
                event.new_content,
                event.actor,
                _us(event.created_at),
            ),
        )

    def replace(self, memory: Memory, vector: Vectors | None, event: HistoryEvent) -> None:
        """Overwrite a stored memory (same id, same scope) and record ``event``."""
        vec = None if vector is None else self._check_vectors(vector.reshape(1, -1), 1)[0]
        with self._write() as txn:
            conn = txn.conn
            rows = list(
                conn.execute(
                    "SELECT rowid, scope_key, content, tags FROM memories WHERE id = ?",
                    (memory.id,),
                )
            )
            if not rows or rows[0][1] != memory.scope.key:
                raise StoreError(f"memory {memory.id} is not stored in that scope")
            rowid, key = int(rows[0][0]), str(rows[0][1])
            old_body = _body(rows[0][2], json.loads(rows[0][3]))
            conn.execute(
                "UPDATE memories SET content = ?, category = ?, ring = ?, domain = ?, tags = ?, "
                "metadata = ?, importance = ?, reasoning = ?, updated_us = ?, occurred_us = ?, "
                "embedding_model = ? WHERE rowid = ?",
                (
                    memory.content,
                    str(memory.category),
                    str(memory.ring),
                    None if memory.domain is None else str(memory.domain),
                    json.dumps(list(memory.tags)),
                    json.dumps(memory.metadata),
                    memory.importance,
                    memory.reasoning,
                    _us(memory.updated_at),
                    _us(memory.occurred_at),
                    memory.embedding_model,
                    rowid,
                ),
            )
            _fts_delete(conn, rowid, key, old_body)
            conn.execute(
                "INSERT INTO memories_fts (rowid, scope, body) VALUES (?, ?, ?)",
                (rowid, _scope_token(key), _fts_body(memory)),
            )
            if vec is not None:
                conn.execute(
                    "UPDATE memory_vectors SET embedding = ? WHERE rowid = ?",
                    (vec.tobytes(), rowid),
                )
                ids, row = np.array([rowid], dtype=np.int64), vec.reshape(1, -1).copy()
                txn.touch(key, functools.partial(ScopeMatrix.add, row_ids=ids, vectors=row))
            else:
                txn.touch(key, _unchanged)
            self._record(conn, event)

    def delete(self, memory_ids: Sequence[str], scopes: ScopeSet, actor: str | None) -> list[str]:
        """Delete memories for real; returns the ids that were deleted."""
        keys = _scope_keys(scopes)
        if not memory_ids or not keys:
            return []
        with self._write() as txn:
            rows = list(
                txn.conn.execute(
                    f"SELECT {_COLUMNS} FROM memories "
                    f"WHERE id IN ({','.join('?' * len(memory_ids))}) "
                    f"AND scope_key IN ({','.join('?' * len(keys))})",
                    [*memory_ids, *keys],
                )
            )
            self._delete_rows(txn, rows, actor)
        if rows:
            self._checkpoint()
        return [str(r[1]) for r in rows]

    def clear(self, scope: Scope, actor: str | None) -> int:
        """Delete every memory of one scope."""
        with self._write() as txn:
            rows = list(
                txn.conn.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE scope_key = ?", (scope.key,)
                )
            )
            self._delete_rows(txn, rows, actor)
        if rows:
            self._checkpoint()
        return len(rows)

    def _delete_rows(
        self, txn: _WriteTxn, rows: Sequence[Sequence[Any]], actor: str | None
    ) -> None:
        conn = txn.conn
        by_scope: dict[str, list[int]] = {}
        for row in rows:
            rowid, memory_id, user_id, project_id = int(row[0]), row[1], row[2], row[3]
            key = Scope(user_id=user_id, project_id=project_id).key
            _fts_delete(conn, rowid, key, _body(row[4], json.loads(row[8])))
            conn.execute("DELETE FROM memory_vectors WHERE rowid = ?", (rowid,))
            conn.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
            # History keeps a tombstone only: earlier events carried the text.
            conn.execute("DELETE FROM history WHERE memory_id = ?", (memory_id,))
            self._record(
                conn,
                HistoryEvent(
                    memory_id=memory_id,
                    user_id=user_id,
                    project_id=project_id,
                    kind=EventKind.DELETE,
                    actor=actor,
                ),
            )
            by_scope.setdefault(key, []).append(rowid)
        for key, rowids in by_scope.items():
            ids = np.array(rowids, dtype=np.int64)
            txn.touch(key, functools.partial(ScopeMatrix.remove, row_ids=ids))

    def _checkpoint(self) -> None:
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
        with self._write() as txn:
            touched: set[str] = set()
            for memory_id, vector in zip(memory_ids, vecs, strict=True):
                rows = list(
                    txn.conn.execute(
                        "SELECT rowid, scope_key FROM memories WHERE id = ?", (memory_id,)
                    )
                )
                if not rows:
                    continue
                txn.conn.execute(
                    "UPDATE memory_vectors SET embedding = ? WHERE rowid = ?",
                    (vector.tobytes(), rows[0][0]),
                )
                txn.conn.execute(
                    "UPDATE memories SET embedding_model = ? WHERE rowid = ?",
                    (model_id, rows[0][0]),
                )
                touched.add(str(rows[0][1]))
            for key in touched:
                txn.touch(key, None)

    # -- reads ------------------------------------------------------------------------------

    def _get_by_rowid(self, conn: apsw.Connection, rowid: int) -> Memory | None:
        rows = list(conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE rowid = ?", (rowid,)))
        return _row_to_memory(rows[0]) if rows else None

    def get(self, memory_id: str, scopes: ScopeSet) -> Memory | None:
        """The memory with this id, if visible through ``scopes``."""
        keys = _scope_keys(scopes)
        if not keys:
            return None
        rows = self._read(
            lambda c: list(
                c.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE id = ? "
                    f"AND scope_key IN ({','.join('?' * len(keys))})",
                    [memory_id, *keys],
                )
            )
        )
        return _row_to_memory(rows[0]) if rows else None

    def list_memories(
        self,
        scopes: ScopeSet,
        filters: MemoryFilter,
        *,
        limit: int,
        offset: int = 0,
        order: Order = "created_desc",
    ) -> list[Memory]:
        """Memories visible through ``scopes`` meeting ``filters``, in ``order``."""
        keys = _scope_keys(scopes)
        if not keys:
            return []
        where, params = _filter_sql(filters)
        sql = (
            f"SELECT {_prefixed(_COLUMNS)} FROM memories m "
            f"WHERE m.scope_key IN ({','.join('?' * len(keys))}) AND {where} "
            f"ORDER BY {_ORDERS[order]} LIMIT ? OFFSET ?"
        )
        rows = self._read(lambda c: list(c.execute(sql, [*keys, *params, limit, offset])))
        return [_row_to_memory(r) for r in rows]

    def count(self, scopes: ScopeSet, filters: MemoryFilter) -> int:
        """How many memories match."""
        keys = _scope_keys(scopes)
        if not keys:
            return 0
        where, params = _filter_sql(filters)
        sql = (
            f"SELECT count(*) FROM memories m "
            f"WHERE m.scope_key IN ({','.join('?' * len(keys))}) AND {where}"
        )
        return int(self._read(lambda c: list(c.execute(sql, [*keys, *params])))[0][0])

    def vector_search(
        self, scopes: ScopeSet, query: Vectors, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` nearest memories by cosine similarity."""
        keys = _scope_keys(scopes)
        if not keys or k <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)

        def run(conn: apsw.Connection) -> list[Candidate]:
            allowed = self._allowed_rowids(conn, keys, filters)
            found: list[tuple[int, float]] = []
            for matrix in self._matrices(conn, keys):
                ids, sims = matrix.search(q, k, allowed)
                found += zip(ids.tolist(), sims.tolist(), strict=True)
            found.sort(key=lambda pair: -pair[1])
            return self._candidates(conn, found[:k])

        return self._read(run)

    def _allowed_rowids(
        self, conn: apsw.Connection, keys: Sequence[str], filters: MemoryFilter
    ) -> RowIds | None:
        if filters == MemoryFilter():
            return None
        where, params = _filter_sql(filters)
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
        rowids = [rowid for rowid, _ in scored]
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE rowid IN ({','.join('?' * len(rowids))})",
            rowids,
        )
        by_rowid = {int(r[0]): _row_to_memory(r) for r in rows}
        return [Candidate(by_rowid[rowid], score) for rowid, score in scored if rowid in by_rowid]

    def text_search(
        self, scopes: ScopeSet, query: str, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` best BM25 matches of ``query`` (any of its content words)."""
        keys = _scope_keys(scopes)
        terms = query_terms(query)
        if not keys or not terms or k <= 0:
            return []
        scope_expr = " OR ".join(f'scope : "{_scope_token(key)}"' for key in keys)
        body_expr = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
        match = f"({scope_expr}) AND body : ({body_expr})"
        where, params = _filter_sql(filters)
        join = "" if where == "1" else "JOIN memories m ON m.rowid = f.rowid"
        sql = (
            f"SELECT f.rowid, -bm25(memories_fts, 0.0, 1.0) AS score FROM memories_fts f {join} "
            f"WHERE memories_fts MATCH ? AND {where} ORDER BY score DESC LIMIT ?"
        )

        def run(conn: apsw.Connection) -> list[Candidate]:
            scored = [(int(r[0]), float(r[1])) for r in conn.execute(sql, [match, *params, k])]
            return self._candidates(conn, scored)

        return self._read(run)

    def neighbours(
        self, memory_ids: Sequence[str], scopes: ScopeSet, window: int
    ) -> dict[str, list[tuple[Memory, int]]]:
        """Memories of the same session within ``window`` places of each given one."""
        keys = _scope_keys(scopes)
        if not memory_ids or not keys or window <= 0:
            return {}
        marks_ids, marks_keys = ",".join("?" * len(memory_ids)), ",".join("?" * len(keys))
        # Number every memory of the sessions involved, then pair each given memory with those
        # a few places away. Sessions are conversations: tens to hundreds of rows each.
        sql = f"""
            WITH wanted AS (
                SELECT scope_key, session_id FROM memories
                WHERE id IN ({marks_ids}) AND scope_key IN ({marks_keys})
                  AND session_id IS NOT NULL
                GROUP BY scope_key, session_id
            ), numbered AS (
                SELECT m.rowid AS rid, m.id AS mid, m.scope_key, m.session_id,
                       ROW_NUMBER() OVER (
                           PARTITION BY m.scope_key, m.session_id ORDER BY m.rowid
                       ) AS pos
                FROM memories m JOIN wanted w
                  ON m.scope_key = w.scope_key AND m.session_id = w.session_id
            )
            SELECT a.mid, b.rid, b.pos - a.pos FROM numbered a JOIN numbered b
              ON a.scope_key = b.scope_key AND a.session_id = b.session_id
             AND b.pos BETWEEN a.pos - ? AND a.pos + ? AND b.pos != a.pos
            WHERE a.mid IN ({marks_ids})
        """

        def run(conn: apsw.Connection) -> dict[str, list[tuple[Memory, int]]]:
            params = [*memory_ids, *keys, window, window, *memory_ids]
            pairs = [(str(r[0]), int(r[1]), int(r[2])) for r in conn.execute(sql, params)]
            rowids = sorted({rid for _, rid, _ in pairs})
            memories: dict[int, Memory] = {}
            for start in range(0, len(rowids), 500):
                chunk = rowids[start : start + 500]
                rows = conn.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE rowid IN "
                    f"({','.join('?' * len(chunk))})",
                    chunk,
                )
                memories.update((int(r[0]), _row_to_memory(r)) for r in rows)
            out: dict[str, list[tuple[Memory, int]]] = {}
            for mid, rid, offset in pairs:
                out.setdefault(mid, []).append((memories[rid], offset))
            return out

        return self._read(run)

    def existing_ids(self, memory_ids: Sequence[str]) -> set[str]:
        """Which of these ids are taken, in any scope."""
        found: set[str] = set()
        for start in range(0, len(memory_ids), 500):
            chunk = list(memory_ids[start : start + 500])
            rows = self._read(
                lambda c, ids=chunk: list(  # type: ignore[misc]
                    c.execute(
                        f"SELECT id FROM memories WHERE id IN ({','.join('?' * len(ids))})", ids
                    )
                )
            )
            found.update(str(r[0]) for r in rows)
        return found

    def history(self, memory_id: str, scopes: ScopeSet) -> list[HistoryEvent]:
        """Events of one memory, oldest first."""
        keys = _scope_keys(scopes)
        if not keys:
            return []
        rows = self._read(
            lambda c: list(
                c.execute(
                    "SELECT id, memory_id, user_id, project_id, kind, old_content, new_content, "
                    f"actor, created_us FROM history WHERE memory_id = ? AND scope_key IN "
                    f"({','.join('?' * len(keys))}) ORDER BY created_us, rowid",
                    [memory_id, *keys],
                )
            )
        )
        return [
            HistoryEvent(
                id=r[0],
                memory_id=r[1],
                user_id=r[2],
                project_id=r[3],
                kind=r[4],
                old_content=r[5],
                new_content=r[6],
                actor=r[7],
                created_at=datetime.fromtimestamp(r[8] / 1_000_000, UTC),
            )
            for r in rows
        ]

    def iter_memories(self, batch_size: int = 500) -> Iterator[list[Memory]]:
        """Every memory, in batches, by rowid (stable under concurrent inserts)."""
        last = 0
        while True:
            rows = self._read(
                lambda c, after=last: list(  # type: ignore[misc]
                    c.execute(
                        f"SELECT {_COLUMNS} FROM memories WHERE rowid > ? ORDER BY rowid LIMIT ?",
                        (after, batch_size),
                    )
                )
            )
            if not rows:
                return
            last = int(rows[-1][0])
            yield [_row_to_memory(r) for r in rows]

    def stats(self) -> dict[str, int | str]:
        """Counts and sizes."""

        def run(conn: apsw.Connection) -> dict[str, int | str]:
            def one(sql: str) -> int:
                return int(next(conn.execute(sql))[0])

            return {
                "backend": "sqlite",
                "path": self.path,
                "memories": one("SELECT count(*) FROM memories"),
                "users": one("SELECT count(DISTINCT user_id) FROM memories"),
                "scopes": one("SELECT count(DISTINCT scope_key) FROM memories"),
                "history_events": one("SELECT count(*) FROM history"),
                "file_bytes": one(
                    "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size"
                ),
                "cached_vector_bytes": self.vectors.nbytes,
            }

        return self._read(run)


class _WriteTxn:
    """Book-keeping of one write transaction: the scopes it touched and how, so the vector
    cache can follow once the transaction commits."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn
        self.scopes: dict[str, tuple[int, int, list[Callable[[ScopeMatrix], None] | None]]] = {}
        self.pending: dict[str, list[tuple[int, Vectors]]] = {}

    def touch(self, key: str, change: Callable[[ScopeMatrix], None] | None) -> None:
        """Bump the scope's revision once per transaction and queue ``change`` (``None``:
        the cached matrix can't be patched and must be reloaded)."""
        if key not in self.scopes:
            (new_rev,) = next(
                self.conn.execute(
                    "INSERT INTO scope_revisions VALUES (?, 1) ON CONFLICT (scope_key) "
                    "DO UPDATE SET rev = rev + 1 RETURNING rev",
                    (key,),
                )
            )
            self.scopes[key] = (int(new_rev) - 1, int(new_rev), [])
        self.scopes[key][2].append(change)


def _chain(
    changes: Sequence[Callable[[ScopeMatrix], None] | None],
) -> Callable[[ScopeMatrix], None]:
    def apply(matrix: ScopeMatrix) -> None:
        for change in changes:
            if change is not None:
                change(matrix)

    return apply


def _unchanged(matrix: ScopeMatrix) -> None:
    """The change of a write that kept the scope's vectors as they were."""


def _body(content: str, tags: Sequence[str]) -> str:
    return " ".join([content, *tags])


def _fts_body(memory: Memory) -> str:
    return _body(memory.content, memory.tags)


def _fts_delete(conn: apsw.Connection, rowid: int, scope_key: str, body: str) -> None:
    """Remove a row from the contentless index; it needs the exact text that was indexed."""
    conn.execute(
        "INSERT INTO memories_fts (memories_fts, rowid, scope, body) VALUES ('delete', ?, ?, ?)",
        (rowid, _scope_token(scope_key), body),
    )


def _prefixed(columns: str) -> str:
    return ", ".join("m." + c.strip() for c in columns.split(","))
