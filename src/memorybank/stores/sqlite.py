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
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import apsw
import numpy as np

from memorybank.embedders.base import Vectors
from memorybank.errors import ConfigurationError, NotFound, StoreError, ValidationError
from memorybank.model import (
    EventKind,
    ForgetAction,
    ForgetPlan,
    ForgetStep,
    HistoryEvent,
    Memory,
    MemoryFilter,
    PlanStatus,
    Scope,
    ScopeSet,
)
from memorybank.stores.base import (
    Candidate,
    InsertOutcome,
    Order,
    PlanOutcome,
    from_us,
    memory_from_row,
    speaker_of,
    to_us,
)
from memorybank.stores.sqlite_schema import MIGRATIONS
from memorybank.stores.vector_index import RowIds, ScopeMatrix, VectorCache
from memorybank.textsearch import query_terms

T = TypeVar("T")
#: How many of a scope's newest revisions keep their vector changes logged: a process whose
#: cached matrix is fewer revisions behind patches it, one further behind reads it again.
VECTOR_LOG_REVISIONS = 1000
# Logged row ids that are no row: a change the log does not itemise (a reindex; readers
# reload), and a revision that changed no vector (logged so every revision has an entry, and
# a reader can tell a complete log from one pruned past its matrix).
_WHOLE_SCOPE = -1
_NO_VECTOR = 0
# A transaction changing more vectors of a scope than this (a bulk import) logs _WHOLE_SCOPE:
# reading that many rows one by one is no cheaper than reading the scope.
_LOG_MAX_ROWS = 1000
# How many nearest vectors a duplicate check looks at; more than this many near-copies that
# are all chat turns is not a case worth a slower query.
_DEDUP_PROBE = 32

_COLUMNS = (
    "rowid, id, user_id, project_id, content, category, ring, domain, tags, metadata, "
    "importance, source, created_by, reasoning, session_id, created_us, updated_us, "
    "occurred_us, embedding_model, decision, superseded_by"
)
_ORDERS: dict[str, str] = {
    "created_desc": "m.created_us DESC, m.rowid DESC",
    "created_asc": "m.created_us ASC, m.rowid ASC",
    "importance_desc": "m.importance DESC, m.created_us DESC, m.rowid DESC",
}


_us = to_us
_dt = from_us


def _scope_token(scope_key: str) -> str:
    """A single alphanumeric FTS token standing for a scope (keys contain ':' and ids)."""
    return "s" + hashlib.blake2b(scope_key.encode(), digest_size=10).hexdigest()


def _row_to_memory(row: Sequence[Any]) -> Memory:
    return memory_from_row(
        row,
        () if row[8] == "[]" else tuple(json.loads(row[8])),
        {} if row[9] == "{}" else json.loads(row[9]),
    )


def _speaker(metadata_json: str) -> str | None:
    # Most memories name no speaker: their metadata is not decoded at all.
    return speaker_of(json.loads(metadata_json)) if '"speaker"' in metadata_json else None


def _decision_json(memory: Memory) -> str | None:
    return None if memory.decision is None else memory.decision.model_dump_json()


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
    if filters.superseded is not None:
        parts.append(f"m.superseded_by IS {'NOT ' if filters.superseded else ''}NULL")
    for key, value in (filters.metadata or {}).items():
        # The key goes into a JSON path, quoted; values compare as JSON so 1, "1" and true
        # stay distinct.
        parts.append("json_extract(m.metadata, ?) IS json_extract(?, '$')")
        params.extend(['$."' + key.replace('"', "") + '"', json.dumps(value)])
    return (" AND ".join(parts) or "1"), params


class SQLiteStore:
    """Memories in one SQLite file. Thread-safe; several processes may share the file.

    ``path`` is a file path (its folder is created), a ``file:`` URI (used as given), or
    ``":memory:"`` (one private database per store, shared by its threads; for tests).
    ``dimension`` is the vector length; vectors of another length are refused.

    >>> with SQLiteStore("/tmp/mb.db", dimension=384) as store:  # doctest: +SKIP
    ...     store.count(ScopeSet(user_id="u1"), MemoryFilter())
    0
    """

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
            txn.log_vector_changes(self.vector_log_revisions)
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
        return ScopeMatrix.loaded(self.dimension, rev, *self._decode_vectors(rows))

    def _decode_vectors(self, rows: Sequence[tuple[int, bytes]]) -> tuple[RowIds, Vectors]:
        """Row ids and the matrix of their stored vectors, from ``(rowid, embedding)`` rows."""
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return ids, vecs.reshape(len(rows), self.dimension)

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

    def _patch_scope(self, conn: apsw.Connection, key: str, matrix: ScopeMatrix, rev: int) -> bool:
        """Bring ``matrix`` (stale: another process wrote) to revision ``rev`` with the vector
        changes logged in between; False when the log can't (too far behind, or a change it
        does not itemise). Reads the whole scope's vectors only in that case: a user with
        10,000 memories is 15 MB, read again after every save made by another worker."""
        if rev - matrix.rev > self.vector_log_revisions:
            return False
        logged = list(
            conn.execute(
                "SELECT rev, row_id FROM vector_changes "
                "WHERE scope_key = ? AND rev > ? AND rev <= ?",
                (key, matrix.rev, rev),
            )
        )
        if len({r[0] for r in logged}) != rev - matrix.rev:
            return False  # pruned (or written by a version that kept no log)
        changed = sorted({int(r[1]) for r in logged} - {_NO_VECTOR})
        if _WHOLE_SCOPE in changed:
            return False
        present: list[tuple[int, bytes]] = []
        for start in range(0, len(changed), 500):
            chunk = changed[start : start + 500]
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
        revs = self._revisions(conn, keys)
        return [self._fresh_matrix(conn, key, rev) for key, rev in revs.items()]

    # -- writes -----------------------------------------------------------------------------

    def insert(
        self,
        memories: Sequence[Memory],
        vectors: Vectors,
        *,
        dedup_threshold: float | None,
        dedup: Sequence[bool],
        actor: str | None,
        record: bool = True,
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
                    found = self._nearest_in_txn(txn, key, vector, dedup_threshold)
                    if found is not None and found[1] > dedup_threshold:
                        existing = self._get_by_rowid(conn, found[0])
                        outcomes.append(InsertOutcome(memory, False, existing, float(found[1])))
                        continue
                rowid = self._insert_row(conn, memory, vector)
                if record:
                    self._record(
                        conn,
                        HistoryEvent.about(
                            memory,
                            EventKind.ADD,
                            actor,
                            new_content=memory.content,
                            created_at=memory.created_at,
                        ),
                    )
                ids = np.array([rowid], dtype=np.int64)
                row = vector.reshape(1, -1).copy()
                txn.touch(
                    key, functools.partial(ScopeMatrix.add, row_ids=ids, vectors=row), [rowid]
                )
                if check:
                    txn.pending.setdefault(key, []).append((rowid, row[0]))
                outcomes.append(InsertOutcome(memory, True))
        return outcomes

    def _nearest_in_txn(
        self, txn: _WriteTxn, key: str, vector: Vectors, threshold: float
    ) -> tuple[int, float] | None:
        """The stored memory of scope ``key`` most similar to ``vector`` above ``threshold``,
        as of this transaction (rows it added included). Only memories that were themselves
        checked for duplicates count: a fact is no duplicate of a chat turn that said it."""
        # Within the transaction the cache stays at the revision the scope had before it;
        # rows this transaction added are in ``txn.pending``.
        if key in txn.scopes:
            rev = txn.scopes[key][0]
        else:
            rev = self._revisions(txn.conn, [key])[key]
        matrix = self._fresh_matrix(txn.conn, key, rev)
        ids, sims = matrix.search(vector, _DEDUP_PROBE)
        close = [(int(i), float(sim)) for i, sim in zip(ids, sims, strict=True) if sim > threshold]
        best: tuple[int, float] | None = None
        if close:
            facts = {
                int(r[0])
                for r in txn.conn.execute(
                    f"SELECT rowid FROM memories WHERE rowid IN ({','.join('?' * len(close))}) "
                    "AND NOT (ring = 'episodic' AND source = 'conversation')",
                    [i for i, _ in close],
                )
            }
            best = next(((i, sim) for i, sim in close if i in facts), None)
        for rowid, pending in txn.pending.get(key, []):
            sim = float(pending @ vector)
            if sim > threshold and (best is None or sim > best[1]):
                best = (rowid, sim)
        return best

    def _insert_row(self, conn: apsw.Connection, memory: Memory, vector: Vectors) -> int:
        key = memory.scope.key
        conn.execute(
            "INSERT INTO memories (id, user_id, project_id, scope_key, content, category, ring, "
            "domain, tags, metadata, importance, source, created_by, reasoning, session_id, "
            "created_us, updated_us, occurred_us, embedding_model, decision, superseded_by) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                _decision_json(memory),
                memory.superseded_by,
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
            self._replace_row(txn, memory, vec, event)

    def _replace_row(
        self, txn: _WriteTxn, memory: Memory, vec: Vectors | None, event: HistoryEvent
    ) -> None:
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
            "embedding_model = ?, decision = ?, superseded_by = ? WHERE rowid = ?",
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
                _decision_json(memory),
                memory.superseded_by,
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
            txn.touch(key, functools.partial(ScopeMatrix.add, row_ids=ids, vectors=row), [rowid])
        else:
            txn.touch(key, _unchanged, [])
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
            txn.touch(key, functools.partial(ScopeMatrix.remove, row_ids=ids), rowids)

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
                txn.touch(key, None, [])

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

        return self._read(
            lambda conn: self._candidates(conn, self._vector_scored(conn, keys, q, k, filters))
        )

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

    def hybrid_candidates(
        self, scopes: ScopeSet, vector: Vectors, query: str, k: int, filters: MemoryFilter
    ) -> tuple[list[Candidate], list[Candidate]]:
        """Both candidate lists of a hybrid search from one snapshot, each row built once."""
        keys = _scope_keys(scopes)
        if not keys or k <= 0:
            return [], []
        q = np.asarray(vector, dtype=np.float32).reshape(-1)

        def run(conn: apsw.Connection) -> tuple[list[Candidate], list[Candidate]]:
            by_vector = self._vector_scored(conn, keys, q, k, filters)
            by_text = self._text_scored(conn, keys, query, k, filters)
            both = self._candidates(conn, [*by_vector, *by_text])
            return both[: len(by_vector)], both[len(by_vector) :]

        return self._read(run)

    def _vector_filter(
        self, conn: apsw.Connection, keys: Sequence[str], filters: MemoryFilter
    ) -> tuple[RowIds | None, set[int]]:
        """Rows a vector search may return, as an allow-list (``None``: all) and rows to skip.

        "Not superseded" alone is the common case (searches hide replaced memories) and
        superseded rows are few, so those are skipped instead of listing every current row.
        """
        if (
            filters.superseded is False
            and filters.model_copy(update={"superseded": None}) == MemoryFilter()
        ):
            rows = conn.execute(
                "SELECT rowid FROM memories WHERE superseded_by IS NOT NULL "
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
        rowids = sorted({rowid for rowid, _ in scored})
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE rowid IN ({','.join('?' * len(rowids))})",
            rowids,
        )
        by_rowid = {r[0]: r for r in rows}
        return [
            Candidate(row, score, _row_to_memory, _speaker(row[9]))
            for rowid, score in scored
            if (row := by_rowid.get(rowid)) is not None
        ]

    def text_search(
        self, scopes: ScopeSet, query: str, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` best BM25 matches of ``query`` (any of its content words)."""
        keys = _scope_keys(scopes)
        if not keys or k <= 0:
            return []
        return self._read(
            lambda conn: self._candidates(conn, self._text_scored(conn, keys, query, k, filters))
        )

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
        only_current = filters.superseded is False and (
            filters.model_copy(update={"superseded": None}) == MemoryFilter()
        )
        where, params = _filter_sql(MemoryFilter() if only_current else filters)
        join = "" if where == "1" else "JOIN memories m ON m.rowid = f.rowid"
        sql = (
            f"SELECT f.rowid, -bm25(memories_fts, 0.0, 1.0) AS score FROM memories_fts f {join} "
            f"WHERE memories_fts MATCH ? AND {where} ORDER BY score DESC LIMIT ?"
        )
        skip = self._vector_filter(conn, keys, filters)[1] if only_current else set()
        rows = conn.execute(sql, [match, *params, k + len(skip)])
        scored = [(int(r[0]), float(r[1])) for r in rows if int(r[0]) not in skip]
        return scored[:k]

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

    def vectors_of(self, memory_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of these memories, by id (for migration and checks)."""
        found: dict[str, Vectors] = {}
        for start in range(0, len(memory_ids), 500):
            chunk = list(memory_ids[start : start + 500])
            rows = self._read(
                lambda c, ids=chunk: list(  # type: ignore[misc]
                    c.execute(
                        "SELECT m.id, v.embedding FROM memories m JOIN memory_vectors v "
                        f"ON v.rowid = m.rowid WHERE m.id IN ({','.join('?' * len(ids))})",
                        ids,
                    )
                )
            )
            found.update((str(r[0]), np.frombuffer(r[1], dtype=np.float32)) for r in rows)
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

    # -- forget plans -----------------------------------------------------------------------

    def save_forget_plan(self, plan: ForgetPlan) -> None:
        """Store a new forget plan; plans that ended over a week ago are dropped meanwhile."""
        with self._write() as txn:
            txn.conn.execute(
                "DELETE FROM forget_plans WHERE expires_us < ?",
                (_us(plan.created_at - _PLAN_RETENTION),),
            )
            txn.conn.execute(
                "INSERT INTO forget_plans (id, user_id, project_id, steps, status, created_us, "
                "expires_us, finished_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    plan.id,
                    plan.user_id,
                    plan.project_id,
                    _steps_json(plan.steps),
                    str(plan.status),
                    _us(plan.created_at),
                    _us(plan.expires_at),
                    _us(plan.finished_at),
                ),
            )

    def get_forget_plan(self, plan_id: str) -> ForgetPlan | None:
        """The plan with this id, whoever it belongs to (callers check the owner)."""
        return self._read(lambda c: _plan(c, plan_id))

    def cancel_forget_plan(
        self, plan_id: str, user_id: str, project_id: str | None, now: datetime
    ) -> ForgetPlan:
        """Mark a pending plan of this user cancelled (see :meth:`ForgetPlan.check_usable`)."""
        with self._write() as txn:
            plan = _usable_plan(txn.conn, plan_id, user_id, project_id, now)
            _finish_plan(txn.conn, plan.id, PlanStatus.CANCELLED, now)
        return plan.model_copy(update={"status": PlanStatus.CANCELLED, "finished_at": now})

    def execute_forget_plan(
        self,
        plan_id: str,
        user_id: str,
        project_id: str | None,
        rewrites: Mapping[str, tuple[Memory, Vectors]],
        now: datetime,
        actor: str | None,
    ) -> PlanOutcome:
        """Apply a plan in one transaction: FORGET steps delete, REWRITE steps replace the
        text with ``rewrites[memory_id]`` (new memory, new vector) and drop the old text from
        history. A memory changed since the preview fails the whole plan (nothing applied);
        one already deleted is reported as missing."""
        vectors = {
            mid: self._check_vectors(vec.reshape(1, -1), 1)[0] for mid, (_, vec) in rewrites.items()
        }
        forgotten: list[str] = []
        rewritten: list[str] = []
        missing: list[str] = []
        with self._write() as txn:
            plan = _usable_plan(txn.conn, plan_id, user_id, project_id, now)
            keys = [Scope(user_id=user_id).key]
            if project_id is not None:
                keys.append(Scope(user_id=user_id, project_id=project_id).key)
            for step in plan.steps:
                if step.action == ForgetAction.KEEP:
                    continue
                rows = _step_rows(txn.conn, step, keys)
                if not rows:
                    missing.append(step.memory_id)
                elif step.action == ForgetAction.FORGET:
                    self._delete_rows(txn, rows, actor)
                    forgotten.append(step.memory_id)
                else:
                    if step.memory_id not in rewrites:
                        raise ValidationError(
                            f"no rewritten memory given for {step.memory_id}", field="rewrites"
                        )
                    self._rewrite(txn, rewrites[step.memory_id][0], vectors[step.memory_id], actor)
                    rewritten.append(step.memory_id)
            _finish_plan(txn.conn, plan.id, PlanStatus.EXECUTED, now)
        if forgotten or rewritten:
            self._checkpoint()
        kept = sum(step.action == ForgetAction.KEEP for step in plan.steps)
        return PlanOutcome(forgotten, rewritten, kept, missing)

    def _rewrite(self, txn: _WriteTxn, memory: Memory, vec: Vectors, actor: str | None) -> None:
        """Replace a memory's text for a forget request: the old text must leave history too,
        so earlier events go and one UPDATE event without the old text stays."""
        txn.conn.execute("DELETE FROM history WHERE memory_id = ?", (memory.id,))
        event = HistoryEvent.about(memory, EventKind.UPDATE, actor, new_content=memory.content)
        self._replace_row(txn, memory, vec, event)

    # -- orgs -------------------------------------------------------------------------------

    def add_org_member(self, org_id: str, user_id: str) -> None:
        """Record that ``user_id`` belongs to ``org_id`` (adding twice changes nothing)."""
        with self._write() as txn:
            txn.conn.execute(
                "INSERT INTO org_members (org_id, user_id, added_us) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (org_id, user_id, _us(datetime.now(UTC))),
            )

    def remove_org_member(self, org_id: str, user_id: str) -> bool:
        """Remove ``user_id`` from ``org_id``; whether they were a member."""
        with self._write() as txn:
            txn.conn.execute(
                "DELETE FROM org_members WHERE org_id = ? AND user_id = ?", (org_id, user_id)
            )
            return bool(txn.conn.changes())

    def org_users(self, org_id: str) -> list[str]:
        """The users of ``org_id``, sorted."""
        rows = self._read(
            lambda c: list(
                c.execute(
                    "SELECT user_id FROM org_members WHERE org_id = ? ORDER BY user_id", (org_id,)
                )
            )
        )
        return [str(r[0]) for r in rows]


# Ended plans are dropped this long after they expire; confirming one then says "no plan".
_PLAN_RETENTION = timedelta(days=7)


def _steps_json(steps: Sequence[ForgetStep]) -> str:
    return json.dumps([step.model_dump(mode="json") for step in steps])


def _plan(conn: apsw.Connection, plan_id: str) -> ForgetPlan | None:
    rows = list(
        conn.execute(
            "SELECT id, user_id, project_id, steps, status, created_us, expires_us, finished_us "
            "FROM forget_plans WHERE id = ?",
            (plan_id,),
        )
    )
    if not rows:
        return None
    r = rows[0]
    return ForgetPlan.model_validate(
        {
            "id": r[0],
            "user_id": r[1],
            "project_id": r[2],
            "steps": json.loads(r[3]),
            "status": r[4],
            "created_at": _dt(r[5]),
            "expires_at": _dt(r[6]),
            "finished_at": _dt(r[7]),
        }
    )


def _usable_plan(
    conn: apsw.Connection, plan_id: str, user_id: str, project_id: str | None, now: datetime
) -> ForgetPlan:
    """The plan, checked inside the write transaction so two confirms cannot both run it."""
    plan = _plan(conn, plan_id)
    if plan is None:
        raise NotFound(f"no forget plan {plan_id!r} for this user")
    plan.check_usable(user_id, project_id, now)
    return plan


def _finish_plan(conn: apsw.Connection, plan_id: str, status: PlanStatus, now: datetime) -> None:
    # The steps (ids and rewritten text) are not needed once the plan has ended.
    conn.execute(
        "UPDATE forget_plans SET status = ?, finished_us = ?, steps = '[]' WHERE id = ?",
        (str(status), _us(now), plan_id),
    )


def _step_rows(conn: apsw.Connection, step: ForgetStep, keys: Sequence[str]) -> list[Any]:
    """The memory row of one plan step, if still there; raises if it changed since the plan."""
    rows = list(
        conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE id = ? "
            f"AND scope_key IN ({','.join('?' * len(keys))})",
            [step.memory_id, *keys],
        )
    )
    if rows and _row_to_memory(rows[0]).updated_at != step.updated_at:
        raise ValidationError(
            f"memory {step.memory_id} changed after the forget preview, so nothing was "
            "applied; run forget_preview again",
            field="planId",
        )
    return rows


class _WriteTxn:
    """Book-keeping of one write transaction: the scopes it touched and how, so the vector
    cache can follow once the transaction commits."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn
        self.scopes: dict[str, tuple[int, int, list[Callable[[ScopeMatrix], None] | None]]] = {}
        self.pending: dict[str, list[tuple[int, Vectors]]] = {}
        self.changed_rows: dict[str, set[int]] = {}

    def touch(
        self, key: str, change: Callable[[ScopeMatrix], None] | None, row_ids: Sequence[int]
    ) -> None:
        """Bump the scope's revision once per transaction and queue ``change`` to the rows
        ``row_ids`` (``None``: the cached matrix can't be patched and must be reloaded)."""
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
        rows = self.changed_rows.setdefault(key, set())
        rows.update([_WHOLE_SCOPE] if change is None else row_ids)

    def log_vector_changes(self, keep: int) -> None:
        """Record which rows' vectors this transaction changed in each scope, and forget
        what is older than the scope's newest ``keep`` revisions."""
        for key, rows in self.changed_rows.items():
            new_rev = self.scopes[key][1]
            if len(rows) > _LOG_MAX_ROWS:
                rows = {_WHOLE_SCOPE}
            self.conn.executemany(
                "INSERT OR IGNORE INTO vector_changes VALUES (?, ?, ?)",
                [(key, new_rev, row) for row in sorted(rows or {_NO_VECTOR})],
            )
            self.conn.execute(
                "DELETE FROM vector_changes WHERE scope_key = ? AND rev <= ?",
                (key, new_rev - keep),
            )


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
