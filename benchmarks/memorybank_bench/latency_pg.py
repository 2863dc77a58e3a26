"""The latency benchmark on PostgreSQL: the same filler rows, sizes and measurements as on
SQLite (:mod:`memorybank_bench.latency`), plus the recall of the HNSW index against exact search.

One database at ``url`` is grown size by size. Filler rows go in with ``COPY … (FORMAT
BINARY)`` built by hand (no per-row statements, no text formatting of 384 floats); when a load
is large the HNSW and GIN indexes are dropped first and rebuilt after it with a large
``maintenance_work_mem`` and parallel workers, which is several times faster than maintaining
them row by row. Filler rows get no history events (searches never read history), and each
gets a vector of its own near its text's (:func:`distinct_vectors`), as real memories would.

Recall: each measured query's vector is searched through :meth:`PostgresStore.vector_search`
(the HNSW index, as :meth:`MemoryBank.search` does) and exactly (the same scope and ordering,
with the distance wrapped so no index can serve it); recall@10 is the mean overlap.
"""

from __future__ import annotations

import json
import struct
import time
import zlib
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

import numpy as np
import psycopg
from rich.console import Console

from memorybank.model import MemoryFilter, ScopeSet, new_id, utcnow
from memorybank.providers.embedders.base import Vectors
from memorybank.stores.postgres import PostgresStore, redact_url
from memorybank.stores.postgres_schema import SEARCH_INDEXES
from memorybank_bench.latency_build import (
    FILL_CHUNK,
    FillPlan,
    Pool,
    planned_rows,
    progress_bar,
    resume_point,
)
from memorybank_bench.latency_report import BuildStats

#: Loads of at least this many rows drop the search indexes and rebuild them afterwards.
REBUILD_ABOVE = 50_000
RECALL_K = 10

_COPY_COLUMNS = (
    "id, user_id, scope_key, content, category, ring, tags, metadata, importance, source, "
    "created_by, created_us, updated_us, embedding_model, embedding"
)
_EMPTY_JSON = b"\x01[]", b"\x01{}"  # jsonb binary: version 1, then the text


def _field(data: bytes) -> bytes:
    return struct.pack("!i", len(data)) + data


#: Weight of the second pool vector mixed into each filler row's own (see distinct_vectors).
MIX_WEIGHT = 0.35


def distinct_vectors(pool_vectors: np.ndarray, chunk: Sequence[tuple[str, int, float]]) -> Any:
    """One unit vector per filler row: its text's vector plus :data:`MIX_WEIGHT` times another
    pool vector chosen by the user, renormalised.

    The pool holds 20,000 texts, so at 1,000,000 rows every vector would be stored ~50 times
    over. Real memories are not copies of each other, and an HNSW graph built on exact copies
    cannot be navigated (pgvector found 0.42 of the exact top 10 in a user's scope). Mixing
    keeps each row near its text's meaning (cosine ≈ 0.95) while no two rows share a vector.
    """
    size = len(pool_vectors)
    rows = np.fromiter((row for _, row, _ in chunk), dtype=np.int64, count=len(chunk))
    shifts = np.fromiter(
        (1 + zlib.crc32(user.encode()) % (size - 1) for user, _, _ in chunk),
        dtype=np.int64,
        count=len(chunk),
    )
    mixed = pool_vectors[rows] + MIX_WEIGHT * pool_vectors[(rows + shifts) % size]
    return mixed / np.linalg.norm(mixed, axis=1, keepdims=True)


def _copy_rows(
    plan: FillPlan, pool: Pool, chunk: Sequence[tuple[str, int, float]]
) -> Iterable[bytes]:
    """One binary COPY tuple per filler row (the layout of ``_COPY_COLUMNS``)."""
    now = utcnow()
    model = plan.model_id.encode()
    dim = pool.vectors.shape[1]
    vec_header = struct.pack("!hh", dim, 0)
    vectors = distinct_vectors(pool.vectors, chunk)
    for (user, row, age), own in zip(chunk, vectors, strict=True):
        created = int((now - timedelta(seconds=age)).timestamp() * 1_000_000)
        uid = user.encode()
        stamp = struct.pack("!q", created)
        vector = vec_header + own.astype(">f4").tobytes()
        yield b"".join(
            (
                struct.pack("!h", 15),
                _field(new_id("mem").encode()),
                _field(uid),
                _field(b"u:" + uid),
                _field(pool.texts[row].encode()),
                _field(str(pool.categories[row]).encode()),
                _field(b"semantic"),
                _field(_EMPTY_JSON[0]),
                _field(_EMPTY_JSON[1]),
                _field(struct.pack("!i", pool.importances[row])),
                _field(b"import"),
                _field(uid),
                _field(stamp),
                _field(stamp),
                _field(model),
                _field(vector),
            )
        )


def _copy_chunk(
    conn: psycopg.Connection[Any], plan: FillPlan, pool: Pool, chunk: list[tuple[str, int, float]]
) -> None:
    with (
        conn.cursor() as cur,
        cur.copy(f"COPY memories ({_COPY_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy,
    ):
        copy.write(b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0))
        for data in _copy_rows(plan, pool, chunk):
            copy.write(data)
        copy.write(struct.pack("!h", -1))


def _check_scope_key(store: PostgresStore, user: str) -> None:
    # The COPY writes scope keys itself; they must be the store's own.
    expected = ScopeSet(user_id=user).scopes()[0].key
    if expected != f"u:{user}":
        raise RuntimeError(f"the scope key layout changed ({expected!r}); update _copy_rows")


def fill_pg(
    url: str, plan: FillPlan, pool: Pool, start: int, n: int, console: Console
) -> tuple[int, float]:
    """COPY filler rows ``start`` .. ``n``; (rows written, seconds spent rebuilding indexes)."""
    if start >= n:
        return 0, 0.0
    rebuild = n - start >= REBUILD_ABOVE
    written = 0
    with psycopg.connect(url, autocommit=True) as conn:
        if rebuild:
            conn.execute(f"DROP INDEX IF EXISTS {', '.join(SEARCH_INDEXES)}")
        with progress_bar(console) as progress:
            task = progress.add_task(f"COPY N={n:,}", total=n, completed=start)
            chunk: list[tuple[str, int, float]] = []
            for item in planned_rows(plan, start, n):
                chunk.append(item)
                if len(chunk) == FILL_CHUNK * 4:
                    _copy_chunk(conn, plan, pool, chunk)
                    written += len(chunk)
                    progress.update(task, advance=len(chunk))
                    chunk = []
            if chunk:
                _copy_chunk(conn, plan, pool, chunk)
                written += len(chunk)
                progress.update(task, advance=len(chunk))
        return written, build_indexes(conn, console)


def build_indexes(conn: psycopg.Connection[Any], console: Console) -> float:
    """Create the search indexes that are missing, with settings for a fast build."""
    started = time.perf_counter()
    conn.execute("SET maintenance_work_mem = '4GB'")
    conn.execute("SET max_parallel_maintenance_workers = 2")
    for name, sql in SEARCH_INDEXES.items():
        exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
        if exists is not None and not exists[0]:
            console.print(f"building index {name} …")
            t0 = time.perf_counter()
            conn.execute(sql.encode())
            console.print(f"built {name} in {time.perf_counter() - t0:.0f} s")
    conn.execute("ANALYZE memories")
    return time.perf_counter() - started


def ensure_pg_database(
    url: str, n: int, plan: FillPlan, pool: Pool, console: Console
) -> BuildStats:
    """Make the database at ``url`` hold the first ``n`` filler rows of ``plan`` (growing it
    from whatever smaller size it holds)."""
    stats = BuildStats(path=redact_url(url))
    dimension = int(pool.vectors.shape[1])
    with PostgresStore(url, dimension=dimension) as store:
        if store.get_meta("bench_complete") == plan.marker(n):
            stats.reused = True
            console.print(f"reusing the complete database at N={n:,}")
            _vacuum(url, console)
            return stats
        _check_scope_key(store, plan.user_id(0))
        store.set_meta("embedding_model", plan.model_id)
        store.set_meta("embedding_dimension", str(dimension))
        start = resume_point(store, n, plan)
    started = time.perf_counter()
    stats.rows_written, stats.index_seconds = fill_pg(url, plan, pool, start, n, console)
    stats.seconds = time.perf_counter() - started
    with PostgresStore(url, dimension=dimension) as store:
        store.set_meta("bench_complete", plan.marker(n))
    _vacuum(url, console)
    return stats


def _vacuum(url: str, console: Console) -> None:
    """VACUUM ANALYZE the memories, as autovacuum keeps a live table: a measurement's saves
    are deleted after it, and their dead rows would otherwise slow every later run's scope
    scans (autovacuum waits for 20 % of a million rows to be dead)."""
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE, INDEX_CLEANUP ON) memories")
    console.print(f"vacuumed in {time.perf_counter() - started:.0f} s")


def _exact_ids(conn: psycopg.Connection[Any], key: str, literal: str, k: int) -> list[str]:
    # "+ 0" hides the ordering operator from the planner, so no index can serve it.
    rows = conn.execute(
        "SELECT id FROM memories WHERE scope_key = %s "
        "ORDER BY (embedding <=> %s::vector) + 0, rid LIMIT %s",
        (key, literal, k),
    ).fetchall()
    return [str(r[0]) for r in rows]


def measure_recall(store: PostgresStore, user: str, vectors: Vectors, k: int = RECALL_K) -> float:
    """Mean recall@k of the store's (HNSW) vector search against an exact scan of the scope."""
    scopes = ScopeSet(user_id=user)
    key = scopes.scopes()[0].key
    recalls: list[float] = []
    with psycopg.connect(store.url) as conn:
        for vector in np.asarray(vectors, dtype=np.float32):
            found = {c.id for c in store.vector_search(scopes, vector, k, MemoryFilter())}
            literal = json.dumps([float(x) for x in vector])
            exact = _exact_ids(conn, key, literal, k)
            recalls.append(len(found & set(exact)) / max(1, len(exact)))
    return float(np.mean(recalls)) if recalls else float("nan")


__all__ = ["build_indexes", "ensure_pg_database", "fill_pg", "measure_recall"]
