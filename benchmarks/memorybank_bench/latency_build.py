"""The latency benchmark's databases on SQLite: a pool of really-embedded texts, and filler
rows drawn from it by a deterministic plan, so a partial build can be resumed or grown.

Shared with the PostgreSQL variant (:mod:`memorybank_bench.latency_pg`), which writes the
same filler rows its own way.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from memorybank.model import Category, Memory, MemoryFilter, Ring, ScopeSet, Source, new_id, utcnow
from memorybank.providers.embedders.base import Embedder, Vectors
from memorybank.rules.policy import score_importance
from memorybank.stores.base import Store
from memorybank.stores.sqlite import SQLiteStore
from memorybank_bench.facts import FactGenerator
from memorybank_bench.latency_report import BuildStats

#: Bumped whenever the generator or the filler layout changes, so old caches are not reused.
GENERATOR_VERSION = 1
#: Filler rows written per :meth:`SQLiteStore.insert` call (one transaction each).
FILL_CHUNK = 5_000
_FILL_SOURCE = Source.IMPORT

# --------------------------------------------------------------------------------------------
# The pool of really-embedded texts
# --------------------------------------------------------------------------------------------


@dataclass
class Pool:
    """Distinct facts with their real vectors, reused by the filler rows."""

    texts: list[str]
    categories: list[Category]
    importances: list[int]
    vectors: Vectors

    def __len__(self) -> int:
        return len(self.texts)


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", name)


def load_pool(workdir: Path, size: int, embedder: Embedder, console: Console) -> Pool:
    """The pool of ``size`` facts, embedded once and cached in ``workdir``."""
    facts = FactGenerator(f"pool-v{GENERATOR_VERSION}").distinct_facts(size)
    texts = [text for text, _ in facts]
    stem = workdir / f"pool-{size}-{_safe(embedder.model_id)}"
    vectors = _cached_pool_vectors(stem, texts, embedder.dimension)
    if vectors is None:
        vectors = _embed_with_progress(embedder, texts, console, "embedding the pool")
        np.save(stem.with_suffix(".npy"), vectors)
        stem.with_suffix(".json").write_text(json.dumps({"texts": texts}))
    else:
        console.print(f"reusing the embedded pool {stem.with_suffix('.npy')}")
    return Pool(
        texts=texts,
        categories=[category for _, category in facts],
        importances=[score_importance(text, category) for text, category in facts],
        vectors=vectors,
    )


def _cached_pool_vectors(stem: Path, texts: list[str], dimension: int) -> Vectors | None:
    vec_path, text_path = stem.with_suffix(".npy"), stem.with_suffix(".json")
    if not (vec_path.is_file() and text_path.is_file()):
        return None
    try:
        cached = json.loads(text_path.read_text()).get("texts")
        vectors = np.load(vec_path)
    except (OSError, ValueError):
        return None
    if cached != texts or vectors.shape != (len(texts), dimension):
        return None
    return np.ascontiguousarray(vectors, dtype=np.float32)


def _embed_with_progress(
    embedder: Embedder, texts: list[str], console: Console, label: str
) -> Vectors:
    parts: list[Vectors] = []
    with progress_bar(console) as progress:
        task = progress.add_task(label, total=len(texts))
        for start in range(0, len(texts), 512):
            parts.append(embedder.embed(texts[start : start + 512]))
            progress.update(task, advance=len(parts[-1]))
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)


def progress_bar(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )


# --------------------------------------------------------------------------------------------
# Building databases
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FillPlan:
    """Which filler rows a database of N memories holds: user ``u`` gets a deterministic
    selection of pool rows, so a partial build can be resumed or grown exactly."""

    per_user: int
    pool_size: int
    model_id: str

    def users(self, n: int) -> int:
        """How many users N memories fill."""
        return math.ceil(n / self.per_user)

    def user_id(self, index: int) -> str:
        """The filler user with this index."""
        return f"fill-{index:06d}"

    def rows_of(self, index: int, n: int) -> int:
        """How many rows user ``index`` has in a database of ``n`` memories."""
        return max(0, min(self.per_user, n - index * self.per_user))

    def marker(self, n: int) -> str:
        """The ``bench_complete`` meta value of a complete database of ``n`` memories."""
        return json.dumps(
            {
                "n": n,
                "per_user": self.per_user,
                "pool_size": self.pool_size,
                "model": self.model_id,
                "version": GENERATOR_VERSION,
            },
            sort_keys=True,
        )

    def picks(
        self, index: int
    ) -> tuple[np.ndarray[Any, np.dtype[np.int64]], np.ndarray[Any, np.dtype[np.float64]]]:
        """Pool rows and ages (seconds) of user ``index``'s memories, in insertion order."""
        rng = np.random.default_rng([GENERATOR_VERSION, index])
        rounds = math.ceil(self.per_user / self.pool_size)
        rows = np.concatenate([rng.permutation(self.pool_size) for _ in range(rounds)])
        ages = rng.uniform(0.0, 730 * 86_400.0, self.per_user)
        return rows[: self.per_user].astype(np.int64), ages


def db_path(workdir: Path, n: int) -> Path:
    return workdir / f"latency-{n}.db"


def _open_store(path: Path, dimension: int) -> SQLiteStore:
    # NORMAL is durable enough for a rebuildable benchmark DB and spares one fsync per chunk.
    return SQLiteStore(path, dimension=dimension, synchronous="NORMAL")


def ensure_database(
    workdir: Path, n: int, plan: FillPlan, pool: Pool, console: Console
) -> BuildStats:
    """Make ``workdir/latency-<n>.db`` hold the ``n`` filler memories of ``plan``: reuse it
    when complete, resume it when partial, else start from the largest smaller complete one."""
    path = db_path(workdir, n)
    stats = BuildStats(path=str(path))
    if not path.exists():
        source = _largest_complete_below(workdir, n, plan, pool.vectors.shape[1])
        if source is not None:
            console.print(f"growing {source.name} into {path.name}")
            _copy_database(source, path)
            stats.copied_from = str(source)
    with _open_store(path, pool.vectors.shape[1]) as store:
        if store.get_meta("bench_complete") == plan.marker(n):
            stats.reused = True
            console.print(f"reusing the complete database {path}")
            return stats
        store.set_meta("embedding_model", plan.model_id)
        store.set_meta("embedding_dimension", str(pool.vectors.shape[1]))
        start = resume_point(store, n, plan)
        started = time.perf_counter()
        stats.rows_written = fill(store, plan, pool, start, n, console)
        stats.seconds = time.perf_counter() - started
        store.set_meta("bench_complete", plan.marker(n))
    return stats


def _largest_complete_below(workdir: Path, n: int, plan: FillPlan, dimension: int) -> Path | None:
    sizes = sorted(
        (
            int(m.group(1))
            for p in workdir.glob("latency-*.db")
            if (m := re.fullmatch(r"latency-(\d+)\.db", p.name)) and int(m.group(1)) < n
        ),
        reverse=True,
    )
    for size in sizes:
        with _open_store(db_path(workdir, size), dimension) as store:
            if store.get_meta("bench_complete") == plan.marker(size):
                return db_path(workdir, size)
    return None


def _copy_database(source: Path, target: Path) -> None:
    partial = target.with_name(target.name + ".copying")
    shutil.copyfile(source, partial)
    wal = source.with_name(source.name + "-wal")
    if wal.exists():
        shutil.copyfile(wal, target.with_name(target.name + "-wal"))
    partial.rename(target)


def resume_point(store: Store, n: int, plan: FillPlan) -> int:
    """How many filler rows (a prefix of the plan's order) the database already holds."""
    only_filler = MemoryFilter(source=(_FILL_SOURCE,))
    done = 0
    for index in range(plan.users(n)):
        have = store.count(ScopeSet(user_id=plan.user_id(index)), only_filler)
        done += have
        if have < plan.rows_of(index, n):
            break
    return done


def fill(
    store: SQLiteStore, plan: FillPlan, pool: Pool, start: int, n: int, console: Console
) -> int:
    """Insert filler rows ``start`` .. ``n`` of ``plan`` with pool vectors, ``FILL_CHUNK``
    rows per transaction; returns how many were written."""
    if start >= n:
        return 0
    chunk: list[tuple[str, int, float]] = []
    written = 0
    with progress_bar(console) as progress:
        task = progress.add_task(f"building N={n:,}", total=n, completed=start)
        for user, row, age in planned_rows(plan, start, n):
            chunk.append((user, row, age))
            if len(chunk) == FILL_CHUNK:
                written += _insert_chunk(store, plan, pool, chunk)
                progress.update(task, advance=len(chunk))
                chunk = []
        if chunk:
            written += _insert_chunk(store, plan, pool, chunk)
            progress.update(task, advance=len(chunk))
    return written


def planned_rows(plan: FillPlan, start: int, n: int) -> Iterable[tuple[str, int, float]]:
    """(user id, pool row, age in seconds) of filler rows ``start`` .. ``n``."""
    for index in range(start // plan.per_user, plan.users(n)):
        rows, ages = plan.picks(index)
        first = max(0, start - index * plan.per_user)
        user = plan.user_id(index)
        for j in range(first, plan.rows_of(index, n)):
            yield user, int(rows[j]), float(ages[j])


def _insert_chunk(
    store: SQLiteStore, plan: FillPlan, pool: Pool, chunk: Sequence[tuple[str, int, float]]
) -> int:
    now = utcnow()
    memories = [
        _filler_memory(user, pool, row, now - timedelta(seconds=age), plan.model_id)
        for user, row, age in chunk
    ]
    vectors = pool.vectors[np.fromiter((row for _, row, _ in chunk), dtype=np.int64)]
    outcomes = store.insert(memories, vectors, dedup=[False] * len(memories), actor="bench")
    return sum(1 for o in outcomes if o.inserted)


def _filler_memory(user: str, pool: Pool, row: int, created: datetime, model_id: str) -> Memory:
    # model_construct: the values are known-valid, and validation would dominate the build.
    return Memory.model_construct(
        id=new_id("mem"),
        user_id=user,
        project_id=None,
        content=pool.texts[row],
        category=pool.categories[row],
        ring=Ring.SEMANTIC,
        domain=None,
        tags=(),
        metadata={},
        importance=pool.importances[row],
        source=_FILL_SOURCE,
        created_by=user,
        reasoning=None,
        session_id=None,
        created_at=created,
        updated_at=created,
        occurred_at=None,
        embedding_model=model_id,
    )


__all__ = [
    "FILL_CHUNK",
    "GENERATOR_VERSION",
    "FillPlan",
    "Pool",
    "db_path",
    "ensure_database",
    "fill",
    "load_pool",
    "planned_rows",
    "progress_bar",
    "resume_point",
]
