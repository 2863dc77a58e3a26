"""The PostgreSQL store: psycopg 3 with a connection pool, pgvector and full-text search.

Layout: one ``memories`` table holding each memory's ``vector(dim)`` (HNSW index,
``vector_cosine_ops``) and a generated ``tsvector`` column (english configuration, GIN index);
``history`` with tombstones; numbered migrations recorded in ``schema_migrations``
(:mod:`.postgres_schema`). Every query is filtered by scope inside SQL.

Concurrency: writes run in READ COMMITTED transactions; :meth:`PostgresStore.insert` first takes
``pg_advisory_xact_lock(hashtext(scope_key))`` for each scope it writes, so the duplicate check
and the insert are serialised per scope across threads, processes and replicas (the check runs
after the lock is held, so its statement snapshot sees every earlier commit). Reads that issue
several statements (``hybrid_candidates``, ``neighbours``) run in one REPEATABLE READ snapshot.

Vector search compares every row of scopes holding at most :data:`EXACT_SCAN_MAX` memories
(exact, through the scope index) and walks the HNSW index for larger ones, with
``hnsw.iterative_scan = strict_order`` so scope and filter conditions do not starve it of rows.
Text search ORs the query's content words (:func:`memorybank.textsearch.query_terms`) into a
``to_tsquery`` and ranks with ``ts_rank_cd`` (≥ 0), as the SQLite store ORs them into an FTS5
query ranked by BM25.

Deletion: rows are deleted for real and history keeps only a tombstone. PostgreSQL keeps dead
tuples (and so the old text) in table and index pages until VACUUM reclaims them; autovacuum
does that in the background and :meth:`PostgresStore.vacuum` does it at once.

>>> store = PostgresStore("postgresql://localhost/memorybank", dimension=384)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg_pool import ConnectionPool

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
from memorybank.stores.postgres_schema import MIGRATIONS
from memorybank.textsearch import query_terms

T = TypeVar("T")
Conn = psycopg.Connection[tuple[Any, ...]]

# Any fixed key: concurrent migrations of one database wait for each other.
_MIGRATION_LOCK = 0x6D656D62

_COLUMNS = (
    "rid, id, user_id, project_id, content, category, ring, domain, tags, metadata, "
    "importance, source, created_by, reasoning, session_id, created_us, updated_us, "
    "occurred_us, embedding_model, decision, superseded_by"
)
_M_COLUMNS = ", ".join("m." + c.strip() for c in _COLUMNS.split(","))
_ORDERS: dict[str, str] = {
    "created_desc": "m.created_us DESC, m.rid DESC",
    "created_asc": "m.created_us ASC, m.rid ASC",
    "importance_desc": "m.importance DESC, m.created_us DESC, m.rid DESC",
}
# Ended plans are dropped this long after they expire; confirming one then says "no plan".
_PLAN_RETENTION = timedelta(days=7)


_us = to_us
_dt = from_us


def _vector_literal(vector: Vectors) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector).reshape(-1)) + "]"


def _row_to_memory(row: Sequence[Any]) -> Memory:
    return memory_from_row(row, tuple(row[8]), dict(row[9]))


def _decision_json(memory: Memory) -> str | None:
    return None if memory.decision is None else memory.decision.model_dump_json()


def _scope_keys(scopes: ScopeSet) -> list[str]:
    return [scope.key for scope in scopes.scopes()]


def _filter_sql(filters: MemoryFilter) -> tuple[str, list[Any]]:
    """SQL conditions (joined with AND, on alias ``m``) for ``filters``."""
    parts: list[str] = []
    params: list[Any] = []

    def one_of(column: str, values: Sequence[str] | None) -> None:
        if values is not None:
            parts.append(f"m.{column} = ANY(%s::text[])")
            params.append([str(v) for v in values])

    one_of("category", filters.category)
    one_of("ring", filters.ring)
    one_of("domain", filters.domain)
    one_of("source", filters.source)
    for tag in filters.tags or ():
        parts.append("m.tags @> %s::jsonb")
        params.append(json.dumps([tag]))
    if filters.min_importance is not None:
        parts.append("m.importance >= %s")
        params.append(filters.min_importance)
    if filters.since is not None:
        parts.append("m.created_us >= %s")
        params.append(_us(filters.since))
    if filters.until is not None:
        parts.append("m.created_us < %s")
        params.append(_us(filters.until))
    if filters.session_id is not None:
        parts.append("m.session_id = %s")
        params.append(filters.session_id)
    if filters.superseded is not None:
        parts.append(f"m.superseded_by IS {'NOT ' if filters.superseded else ''}NULL")
    for key, value in (filters.metadata or {}).items():
        # As in SQLite: JSON values compare as JSON (1 and "1" differ); a missing key is null.
        parts.append("COALESCE(m.metadata -> %s, 'null'::jsonb) = %s::jsonb")
        params.extend([key, json.dumps(value)])
    return (" AND ".join(parts) or "TRUE"), params


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


#: Vector searches over scopes holding at most this many memories compare every row exactly
#: instead of walking the HNSW index (see ``PostgresStore._vector_candidates``).
EXACT_SCAN_MAX = 20_000
#: Seconds a scope's size class (small or not) is trusted before it is counted again.
SCOPE_SIZE_TTL = 60.0


def redact_url(url: str) -> str:
    """``url`` with its password (URL or ``password=`` form) replaced by ``***``."""
    url = re.sub(r"://([^:/@]*):[^@]*@", r"://\1:***@", url)
    return re.sub(r"(password=)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url)


class PostgresStore:
    """Memories in a PostgreSQL database (with the ``vector`` extension). Thread-safe; any
    number of processes and replicas may share the database.

    ``url`` is a libpq connection string or ``postgresql://`` URL; ``dimension`` the vector
    length (fixed per database: opening one made for another length is refused).
    """

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
            self._pool.open(wait=True, timeout=connect_timeout)
            self._migrate()
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
    def _write(self) -> Iterator[Conn]:
        """One READ COMMITTED transaction: committed on success, rolled back on any error."""
        with self._connection() as conn, conn.transaction():
            yield conn

    def _read(self, fn: Callable[[Conn], T]) -> T:
        """Run ``fn`` in one read-only REPEATABLE READ transaction (one snapshot)."""
        with self._connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return fn(conn)

    def _migrate(self) -> None:
        with self._write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_us BIGINT NOT NULL)"
            )
            done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
            newest = max(done, default=0)
            if newest > MIGRATIONS[-1][0]:
                raise ConfigurationError(
                    f"this database has schema version {newest}, newer than this memorybank "
                    f"knows ({MIGRATIONS[-1][0]}): upgrade memorybank"
                )
            for version, name, sql in MIGRATIONS:
                if version in done:
                    continue
                conn.execute(sql.format(dimension=int(self.dimension)).encode())
                conn.execute(
                    "INSERT INTO schema_migrations VALUES (%s, %s, %s)",
                    (version, name, _us(datetime.now(UTC))),
                )
                if version == 1:
                    conn.execute(
                        "INSERT INTO meta VALUES ('vector_dimension', %s)", (str(self.dimension),)
                    )
            row = conn.execute("SELECT value FROM meta WHERE key = 'vector_dimension'").fetchone()
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

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- meta -------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A value from the settings table."""
        row = self._read(
            lambda c: c.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        )
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set a value in the settings table."""
        with self._write() as conn:
            conn.execute(
                "INSERT INTO meta VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- writes -----------------------------------------------------------------------------

    def _check_vectors(self, vectors: Vectors, count: int) -> Vectors:
        arr = np.asarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape != (count, self.dimension):
            raise ValidationError(
                f"expected {count} vectors of dimension {self.dimension}, got shape {arr.shape}",
                field="vectors",
            )
        return arr

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
        if not memories:
            return outcomes
        with self._write() as conn:
            # Sorted, so two batches touching the same scopes cannot deadlock.
            for key in sorted({m.scope.key for m in memories}):
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))
            # Rows of this batch stored without a duplicate check are no duplicates' originals
            # (as in SQLite); rows of this batch that were checked count whatever their kind.
            checked: list[str] = []
            unchecked: list[str] = []
            for memory, vector, check in zip(memories, vecs, dedup, strict=True):
                literal = _vector_literal(vector)
                if check and dedup_threshold is not None:
                    found = self._nearest(conn, memory.scope.key, literal, checked, unchecked)
                    if found is not None and found[1] > dedup_threshold:
                        outcomes.append(InsertOutcome(memory, False, found[0], found[1]))
                        continue
                self._insert_row(conn, memory, literal)
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
                (checked if check else unchecked).append(memory.id)
                outcomes.append(InsertOutcome(memory, True))
        return outcomes

    def _nearest(
        self, conn: Conn, key: str, literal: str, checked: list[str], unchecked: list[str]
    ) -> tuple[Memory, float] | None:
        """The stored memory of scope ``key`` nearest to the vector: only memories that were
        themselves checked for duplicates count (a fact is no duplicate of a chat turn)."""
        row = conn.execute(
            f"SELECT {_M_COLUMNS}, 1 - (m.embedding <=> %s::vector) FROM memories m "
            "WHERE m.scope_key = %s AND m.id <> ALL(%s::text[]) "
            "AND (NOT (m.ring = 'episodic' AND m.source = 'conversation') "
            "     OR m.id = ANY(%s::text[])) "
            "ORDER BY m.embedding <=> %s::vector LIMIT 1",
            (literal, key, unchecked, checked, literal),
        ).fetchone()
        return None if row is None else (_row_to_memory(row), float(row[21]))

    def _insert_row(self, conn: Conn, memory: Memory, literal: str) -> None:
        conn.execute(
            "INSERT INTO memories (id, user_id, project_id, scope_key, content, category, ring, "
            "domain, tags, metadata, importance, source, created_by, reasoning, session_id, "
            "created_us, updated_us, occurred_us, embedding_model, decision, superseded_by, "
            "embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, "
            "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector)",
            (
                memory.id,
                memory.user_id,
                memory.project_id,
                memory.scope.key,
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
                literal,
            ),
        )

    def _record(self, conn: Conn, event: HistoryEvent) -> None:
        scope = Scope(user_id=event.user_id, project_id=event.project_id)
        conn.execute(
            "INSERT INTO history (id, memory_id, user_id, project_id, scope_key, kind, "
            "old_content, new_content, actor, created_us) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
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
        with self._write() as conn:
            self._replace_row(conn, memory, vec, event)

    def _replace_row(
        self, conn: Conn, memory: Memory, vec: Vectors | None, event: HistoryEvent
    ) -> None:
        row = conn.execute(
            "SELECT rid, scope_key FROM memories WHERE id = %s FOR UPDATE", (memory.id,)
        ).fetchone()
        if row is None or row[1] != memory.scope.key:
            raise StoreError(f"memory {memory.id} is not stored in that scope")
        conn.execute(
            "UPDATE memories SET content = %s, category = %s, ring = %s, domain = %s, "
            "tags = %s::jsonb, metadata = %s::jsonb, importance = %s, reasoning = %s, "
            "updated_us = %s, occurred_us = %s, embedding_model = %s, decision = %s, "
            "superseded_by = %s, embedding = COALESCE(%s::vector, embedding) WHERE rid = %s",
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
                None if vec is None else _vector_literal(vec),
                row[0],
            ),
        )
        self._record(conn, event)

    def delete(self, memory_ids: Sequence[str], scopes: ScopeSet, actor: str | None) -> list[str]:
        """Delete memories for real; returns the ids that were deleted."""
        keys = _scope_keys(scopes)
        if not memory_ids or not keys:
            return []
        with self._write() as conn:
            rows = conn.execute(
                "SELECT rid, id, user_id, project_id FROM memories "
                "WHERE id = ANY(%s::text[]) AND scope_key = ANY(%s::text[]) "
                "ORDER BY rid FOR UPDATE",
                (list(memory_ids), keys),
            ).fetchall()
            self._delete_rows(conn, rows, actor)
        return [str(r[1]) for r in rows]

    def clear(self, scope: Scope, actor: str | None) -> int:
        """Delete every memory of one scope."""
        with self._write() as conn:
            rows = conn.execute(
                "SELECT rid, id, user_id, project_id FROM memories WHERE scope_key = %s "
                "ORDER BY rid FOR UPDATE",
                (scope.key,),
            ).fetchall()
            self._delete_rows(conn, rows, actor)
        return len(rows)

    def _delete_rows(self, conn: Conn, rows: Sequence[Sequence[Any]], actor: str | None) -> None:
        if not rows:
            return
        ids = [str(r[1]) for r in rows]
        conn.execute("DELETE FROM memories WHERE rid = ANY(%s)", ([int(r[0]) for r in rows],))
        # History keeps a tombstone only: earlier events carried the text.
        conn.execute("DELETE FROM history WHERE memory_id = ANY(%s::text[])", (ids,))
        for row in rows:
            self._record(
                conn,
                HistoryEvent(
                    memory_id=row[1],
                    user_id=row[2],
                    project_id=row[3],
                    kind=EventKind.DELETE,
                    actor=actor,
                ),
            )

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
        with self._write() as conn:
            for memory_id, vector in zip(memory_ids, vecs, strict=True):
                conn.execute(
                    "UPDATE memories SET embedding = %s::vector, embedding_model = %s "
                    "WHERE id = %s",
                    (_vector_literal(vector), model_id, memory_id),
                )

    # -- reads ------------------------------------------------------------------------------

    def get(self, memory_id: str, scopes: ScopeSet) -> Memory | None:
        """The memory with this id, if visible through ``scopes``."""
        keys = _scope_keys(scopes)
        if not keys:
            return None
        row = self._read(
            lambda c: c.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id = %s AND scope_key = ANY(%s::text[])",
                (memory_id, keys),
            ).fetchone()
        )
        return None if row is None else _row_to_memory(row)

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
            f"SELECT {_M_COLUMNS} FROM memories m WHERE m.scope_key = ANY(%s::text[]) "
            f"AND {where} ORDER BY {_ORDERS[order]} LIMIT %s OFFSET %s"
        )
        rows = self._read(lambda c: c.execute(sql, [keys, *params, limit, offset]).fetchall())
        return [_row_to_memory(r) for r in rows]

    def count(self, scopes: ScopeSet, filters: MemoryFilter) -> int:
        """How many memories match."""
        keys = _scope_keys(scopes)
        if not keys:
            return 0
        where, params = _filter_sql(filters)
        sql = f"SELECT count(*) FROM memories m WHERE m.scope_key = ANY(%s::text[]) AND {where}"
        row = self._read(lambda c: c.execute(sql, [keys, *params]).fetchone())
        return 0 if row is None else int(row[0])

    def vector_search(
        self, scopes: ScopeSet, query: Vectors, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` nearest memories by cosine similarity."""
        keys = _scope_keys(scopes)
        if not keys or k <= 0:
            return []
        return self._read(lambda c: self._vector_candidates(c, keys, query, k, filters))

    def text_search(
        self, scopes: ScopeSet, query: str, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` best full-text matches of ``query`` (any of its content words)."""
        keys = _scope_keys(scopes)
        if not keys or k <= 0:
            return []
        return self._read(lambda c: _text_candidates(c, keys, query, k, filters))

    def hybrid_candidates(
        self, scopes: ScopeSet, vector: Vectors, query: str, k: int, filters: MemoryFilter
    ) -> tuple[list[Candidate], list[Candidate]]:
        """Both candidate lists of a hybrid search from one snapshot."""
        keys = _scope_keys(scopes)
        if not keys or k <= 0:
            return [], []
        return self._read(
            lambda c: (
                self._vector_candidates(c, keys, vector, k, filters),
                _text_candidates(c, keys, query, k, filters),
            )
        )

    def _scope_is_small(self, conn: Conn, keys: Sequence[str]) -> bool:
        """Whether the scopes hold at most :attr:`exact_scan_max` memories, counted at most
        once a minute per process: scope sizes move slowly, and a scope just past the limit
        is served well enough either way for that long."""
        now = time.monotonic()
        cache_key = tuple(keys)
        cached = self._scope_sizes.get(cache_key)
        if cached is not None and now - cached[1] < SCOPE_SIZE_TTL:
            return cached[0]
        limit = self.exact_scan_max + 1
        counted = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memories WHERE scope_key = ANY(%s::text[]) "
            "LIMIT %s) AS s",
            [list(keys), limit],
        ).fetchone()
        small = counted is not None and int(counted[0]) < limit
        if len(self._scope_sizes) >= 10_000:  # bounded: forget them all now and then
            self._scope_sizes.clear()
        self._scope_sizes[cache_key] = (small, now)
        return small

    def _vector_candidates(
        self, conn: Conn, keys: Sequence[str], query: Vectors, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        literal = _vector_literal(np.asarray(query, dtype=np.float32))
        where, params = _filter_sql(filters)
        # Scopes are small next to the table (a user's 10,000 memories among 1,000,000), and
        # an HNSW graph of the whole table filtered to 1 % of it finds 0.74 of the exact top 10
        # in 70 ms; reading the scope's rows through the scope index and comparing them all
        # finds every one in 15 ms. So small scopes are searched exactly ("+ 0" keeps the
        # planner off the HNSW index) and the index serves scopes too large to read whole.
        if self._scope_is_small(conn, keys):
            # Rank by (rid, distance) alone, each distance computed once, then read the k
            # winners' rows: sorting whole rows of the scope took twice as long.
            sql = (
                "WITH best AS ("
                "  SELECT m.rid, (m.embedding <=> %s::vector) + 0 AS distance FROM memories m"
                f"  WHERE m.scope_key = ANY(%s::text[]) AND {where}"
                "  ORDER BY distance, m.rid LIMIT %s"
                f") SELECT {_M_COLUMNS}, 1 - best.distance FROM best "
                "JOIN memories m ON m.rid = best.rid ORDER BY best.distance, m.rid"
            )
            args = [literal, list(keys), *params, k]
        else:
            sql = (
                f"SELECT {_M_COLUMNS}, 1 - (m.embedding <=> %s::vector) FROM memories m "
                f"WHERE m.scope_key = ANY(%s::text[]) AND {where} "
                "ORDER BY m.embedding <=> %s::vector, m.rid LIMIT %s"
            )
            args = [literal, list(keys), *params, literal, k]
        rows = conn.execute(sql, args).fetchall()
        return [Candidate(r, float(r[21]), _row_to_memory, speaker_of(r[9])) for r in rows]

    def neighbours(
        self, memory_ids: Sequence[str], scopes: ScopeSet, window: int
    ) -> dict[str, list[tuple[Memory, int]]]:
        """Memories of the same session within ``window`` places of each given one."""
        keys = _scope_keys(scopes)
        if not memory_ids or not keys or window <= 0:
            return {}
        sql = """
            WITH wanted AS (
                SELECT DISTINCT scope_key, session_id FROM memories
                WHERE id = ANY(%(ids)s::text[]) AND scope_key = ANY(%(keys)s::text[])
                  AND session_id IS NOT NULL
            ), numbered AS (
                SELECT m.rid, m.id AS mid, m.scope_key, m.session_id,
                       ROW_NUMBER() OVER (
                           PARTITION BY m.scope_key, m.session_id ORDER BY m.rid
                       ) AS pos
                FROM memories m JOIN wanted w
                  ON m.scope_key = w.scope_key AND m.session_id = w.session_id
            )
            SELECT a.mid, b.rid, b.pos - a.pos FROM numbered a JOIN numbered b
              ON a.scope_key = b.scope_key AND a.session_id = b.session_id
             AND b.pos BETWEEN a.pos - %(w)s AND a.pos + %(w)s AND b.pos <> a.pos
            WHERE a.mid = ANY(%(ids)s::text[])
        """

        def run(conn: Conn) -> dict[str, list[tuple[Memory, int]]]:
            params = {"ids": list(memory_ids), "keys": keys, "w": window}
            pairs = [(str(r[0]), int(r[1]), int(r[2])) for r in conn.execute(sql, params)]
            rids = sorted({rid for _, rid, _ in pairs})
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE rid = ANY(%s)", (rids,)
            ).fetchall()
            memories = {int(r[0]): _row_to_memory(r) for r in rows}
            out: dict[str, list[tuple[Memory, int]]] = {}
            for mid, rid, offset in pairs:
                out.setdefault(mid, []).append((memories[rid], offset))
            return out

        return self._read(run)

    def existing_ids(self, memory_ids: Sequence[str]) -> set[str]:
        """Which of these ids are taken, in any scope."""
        if not memory_ids:
            return set()
        rows = self._read(
            lambda c: c.execute(
                "SELECT id FROM memories WHERE id = ANY(%s::text[])", (list(memory_ids),)
            ).fetchall()
        )
        return {str(r[0]) for r in rows}

    def history(self, memory_id: str, scopes: ScopeSet) -> list[HistoryEvent]:
        """Events of one memory, oldest first."""
        keys = _scope_keys(scopes)
        if not keys:
            return []
        rows = self._read(
            lambda c: c.execute(
                "SELECT id, memory_id, user_id, project_id, kind, old_content, new_content, "
                "actor, created_us FROM history WHERE memory_id = %s "
                "AND scope_key = ANY(%s::text[]) ORDER BY created_us, seq",
                (memory_id, keys),
            ).fetchall()
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
        """Every memory, in batches, by insertion order (stable under concurrent inserts)."""
        last = 0
        while True:
            rows = self._read(
                lambda c, after=last: c.execute(  # type: ignore[misc]
                    f"SELECT {_COLUMNS} FROM memories WHERE rid > %s ORDER BY rid LIMIT %s",
                    (after, batch_size),
                ).fetchall()
            )
            if not rows:
                return
            last = int(rows[-1][0])
            yield [_row_to_memory(r) for r in rows]

    def vectors_of(self, memory_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of these memories (for migration and checks)."""
        rows = self._read(
            lambda c: c.execute(
                "SELECT id, embedding::text FROM memories WHERE id = ANY(%s::text[])",
                (list(memory_ids),),
            ).fetchall()
        )
        return {str(r[0]): np.array(json.loads(r[1]), dtype=np.float32).reshape(-1) for r in rows}

    def stats(self) -> dict[str, int | str]:
        """Counts and sizes."""

        def run(conn: Conn) -> dict[str, int | str]:
            def one(sql: str) -> int:
                row = conn.execute(sql).fetchone()
                return 0 if row is None else int(row[0])

            return {
                "backend": "postgres",
                "url": redact_url(self.url),
                "memories": one("SELECT count(*) FROM memories"),
                "users": one("SELECT count(DISTINCT user_id) FROM memories"),
                "scopes": one("SELECT count(DISTINCT scope_key) FROM memories"),
                "history_events": one("SELECT count(*) FROM history"),
                "database_bytes": one("SELECT pg_database_size(current_database())"),
            }

        return self._read(run)

    # -- forget plans -----------------------------------------------------------------------

    def save_forget_plan(self, plan: ForgetPlan) -> None:
        """Store a new forget plan; plans that ended over a week ago are dropped meanwhile."""
        with self._write() as conn:
            conn.execute(
                "DELETE FROM forget_plans WHERE expires_us < %s",
                (_us(plan.created_at - _PLAN_RETENTION),),
            )
            conn.execute(
                "INSERT INTO forget_plans (id, user_id, project_id, steps, status, created_us, "
                "expires_us, finished_us) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
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
        return self._read(lambda c: _plan(c, plan_id, lock=False))

    def cancel_forget_plan(
        self, plan_id: str, user_id: str, project_id: str | None, now: datetime
    ) -> ForgetPlan:
        """Mark a pending plan of this user cancelled (see :meth:`ForgetPlan.check_usable`)."""
        with self._write() as conn:
            plan = _usable_plan(conn, plan_id, user_id, project_id, now)
            _finish_plan(conn, plan.id, PlanStatus.CANCELLED, now)
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
        """Apply a plan in one transaction (see :meth:`SQLiteStore.execute_forget_plan`)."""
        vectors = {
            mid: self._check_vectors(vec.reshape(1, -1), 1)[0] for mid, (_, vec) in rewrites.items()
        }
        forgotten: list[str] = []
        rewritten: list[str] = []
        missing: list[str] = []
        with self._write() as conn:
            plan = _usable_plan(conn, plan_id, user_id, project_id, now)
            keys = [Scope(user_id=user_id).key]
            if project_id is not None:
                keys.append(Scope(user_id=user_id, project_id=project_id).key)
            for step in plan.steps:
                if step.action == ForgetAction.KEEP:
                    continue
                row = _step_row(conn, step, keys)
                if row is None:
                    missing.append(step.memory_id)
                elif step.action == ForgetAction.FORGET:
                    self._delete_rows(conn, [row], actor)
                    forgotten.append(step.memory_id)
                else:
                    if step.memory_id not in rewrites:
                        raise ValidationError(
                            f"no rewritten memory given for {step.memory_id}", field="rewrites"
                        )
                    memory = rewrites[step.memory_id][0]
                    # The old text must leave history too: one UPDATE event without it stays.
                    conn.execute("DELETE FROM history WHERE memory_id = %s", (memory.id,))
                    event = HistoryEvent.about(
                        memory, EventKind.UPDATE, actor, new_content=memory.content
                    )
                    self._replace_row(conn, memory, vectors[step.memory_id], event)
                    rewritten.append(step.memory_id)
            _finish_plan(conn, plan.id, PlanStatus.EXECUTED, now)
        kept = sum(step.action == ForgetAction.KEEP for step in plan.steps)
        return PlanOutcome(forgotten, rewritten, kept, missing)

    # -- orgs -------------------------------------------------------------------------------

    def add_org_member(self, org_id: str, user_id: str) -> None:
        """Record that ``user_id`` belongs to ``org_id`` (adding twice changes nothing)."""
        with self._write() as conn:
            conn.execute(
                "INSERT INTO org_members (org_id, user_id, added_us) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                (org_id, user_id, _us(datetime.now(UTC))),
            )

    def remove_org_member(self, org_id: str, user_id: str) -> bool:
        """Remove ``user_id`` from ``org_id``; whether they were a member."""
        with self._write() as conn:
            cur = conn.execute(
                "DELETE FROM org_members WHERE org_id = %s AND user_id = %s", (org_id, user_id)
            )
            return cur.rowcount > 0

    def org_users(self, org_id: str) -> list[str]:
        """The users of ``org_id``, sorted."""
        rows = self._read(
            lambda c: c.execute(
                "SELECT user_id FROM org_members WHERE org_id = %s ORDER BY user_id", (org_id,)
            ).fetchall()
        )
        return [str(r[0]) for r in rows]


def _text_candidates(
    conn: Conn, keys: Sequence[str], query: str, k: int, filters: MemoryFilter
) -> list[Candidate]:
    tsquery = _tsquery(query_terms(query))
    if not tsquery:
        return []
    where, params = _filter_sql(filters)
    # One equality per scope (not "= ANY"): only equalities reach the (scope_key, body) GIN
    # index as conditions, so other scopes' matches never leave the index.
    scoped = " OR ".join("m.scope_key = %s" for _ in keys)
    rows = conn.execute(
        f"SELECT {_M_COLUMNS}, ts_rank_cd(m.body, q.q) AS score "
        "FROM memories m, to_tsquery('english', %s) AS q(q) "
        f"WHERE ({scoped}) AND m.body @@ q.q AND {where} "
        "ORDER BY score DESC, m.rid LIMIT %s",
        [tsquery, *keys, *params, k],
    ).fetchall()
    return [Candidate(r, float(r[21]), _row_to_memory, speaker_of(r[9])) for r in rows]


def _steps_json(steps: Sequence[ForgetStep]) -> str:
    return json.dumps([step.model_dump(mode="json") for step in steps])


def _plan(conn: Conn, plan_id: str, *, lock: bool) -> ForgetPlan | None:
    r = conn.execute(
        "SELECT id, user_id, project_id, steps, status, created_us, expires_us, finished_us "
        "FROM forget_plans WHERE id = %s" + (" FOR UPDATE" if lock else ""),
        (plan_id,),
    ).fetchone()
    if r is None:
        return None
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
    conn: Conn, plan_id: str, user_id: str, project_id: str | None, now: datetime
) -> ForgetPlan:
    """The plan, locked inside the write transaction so two confirms cannot both run it."""
    plan = _plan(conn, plan_id, lock=True)
    if plan is None:
        raise NotFound(f"no forget plan {plan_id!r} for this user")
    plan.check_usable(user_id, project_id, now)
    return plan


def _finish_plan(conn: Conn, plan_id: str, status: PlanStatus, now: datetime) -> None:
    # The steps (ids and rewritten text) are not needed once the plan has ended.
    conn.execute(
        "UPDATE forget_plans SET status = %s, finished_us = %s, steps = '[]' WHERE id = %s",
        (str(status), _us(now), plan_id),
    )


def _step_row(conn: Conn, step: ForgetStep, keys: Sequence[str]) -> Sequence[Any] | None:
    """The memory row of one plan step, if still there; raises if it changed since the plan."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE id = %s AND scope_key = ANY(%s::text[]) FOR UPDATE",
        (step.memory_id, list(keys)),
    ).fetchone()
    if row is not None and _row_to_memory(row).updated_at != step.updated_at:
        raise ValidationError(
            f"memory {step.memory_id} changed after the forget preview, so nothing was "
            "applied; run forget_preview again",
            field="planId",
        )
    return row
