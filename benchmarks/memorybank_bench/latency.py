"""Latency benchmark: ``save`` and ``search`` percentiles, bulk import rate and peak RSS at
N = 10,000 / 100,000 / 1,000,000 stored memories.

Databases are filled with synthetic but realistic facts (:class:`FactGenerator`). Embedding a
million texts locally takes over an hour, so the filler rows reuse a pool of really-embedded
texts (``pool_size`` of them, cached in ``workdir``) spread over users of ``per_user`` memories
each, written straight through :meth:`SQLiteStore.insert` in large transactions
(:mod:`memorybank_bench.latency_build`). Every measured save, query and bulk-imported item is
embedded for real, through the public :class:`~memorybank.MemoryBank` API built by
:func:`memorybank.open`.

Sizes are cumulative: the database of the next size starts as a copy of the previous one, and
a complete database (marked in its meta table) is reused by later runs.

>>> report = run_latency(sizes=[10_000])  # doctest: +SKIP
>>> console.print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import json
import math
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil
from rich.console import Console

import memorybank
from memorybank.core.bank import MemoryBank
from memorybank.core.prompt import auto_recall
from memorybank.core.scopes import scope_set
from memorybank.factory import build_embedder
from memorybank.model import Caller, Category, Source
from memorybank.rules.filtering import where
from memorybank.settings import Settings
from memorybank.stores.postgres import PostgresStore
from memorybank_bench.facts import FactGenerator
from memorybank_bench.latency_build import (
    FillPlan,
    Pool,
    db_path,
    ensure_database,
    load_pool,
)
from memorybank_bench.latency_pg import ensure_pg_database, measure_recall
from memorybank_bench.latency_report import (
    POSTGRES_TARGETS,
    BuildStats,
    LatencyReport,
    LatencyRow,
    Percentiles,
    Targets,
)

#: Items bulk-imported per size, and per ``save_many`` call.
BULK_ITEMS = 2_000
BULK_BATCH = 500
#: Searches run before measuring (they load the scope's vectors into the cache).
WARMUP_SEARCHES = 5
_MIB = 1024 * 1024

# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def from_cold(bank: MemoryBank) -> None:
    """Forget what the bank and its judge cached, so that two measurements of the same
    queries start alike: the query vectors, the judge's answers and the block's reads. (The
    block measured after the search on the same queries found the judge's relevance of every
    hit cached, and looked cheaper than a block for a new message is.)"""
    bank.query_cache.clear()
    for cached in (getattr(bank, "block_cache", None), bank.judge):
        clear = getattr(cached, "clear_cache", None) or getattr(cached, "clear", None)
        if callable(clear):
            clear()


def measure_search(bank: MemoryBank, user: str, queries: Sequence[str]) -> list[float]:
    """Wall time (s) of ``bank.search`` for each query, query embedding included, from cold
    caches and after a few warm-up searches."""
    from_cold(bank)
    for query in queries[:WARMUP_SEARCHES]:
        bank.search(user, query, limit=10)
    return [
        _timed(functools.partial(bank.search, user, query, limit=10))[0]
        for query in queries[WARMUP_SEARCHES:]
    ]


def measure_auto_recall(bank: MemoryBank, user: str, queries: Sequence[str]) -> list[float]:
    """Wall time (s) of ``auto_recall`` (a 500-token block) for each query, from the same
    cold start and warm-up as :func:`measure_search`."""
    caller = Caller(user_id=user)
    from_cold(bank)
    for query in queries[:WARMUP_SEARCHES]:
        auto_recall(bank, caller, query, 500)
    return [
        _timed(functools.partial(auto_recall, bank, caller, query, 500))[0]
        for query in queries[WARMUP_SEARCHES:]
    ]


def measure_breakdown(
    bank: MemoryBank, user: str, queries: Sequence[str], search_p50: float, block_p50: float
) -> dict[str, float]:
    """Where a search's and a block's time goes, p50 ms each: the query embedding, the
    vector scan and BM25 as the store runs them (50 candidates), and what the block adds to
    its search (a read asks no model but the query's embedding)."""
    scope = scope_set(user, None)
    chosen = where(None, {}, superseded=False)
    k = bank.retrieval.candidates
    embed, vector, text = [], [], []
    for query in queries[WARMUP_SEARCHES:]:
        asked = query
        seconds, vectors = _timed(functools.partial(bank.embedder.embed, [asked]))
        embed.append(seconds)
        search = bank.store.vector_search
        vector.append(_timed(functools.partial(search, scope, vectors[0], k, chosen))[0])
        text.append(_timed(functools.partial(bank.store.text_search, scope, asked, k, chosen))[0])
    parts = {
        "query embedding": Percentiles.of(embed).p50,
        "vector scan": Percentiles.of(vector).p50,
        "BM25": Percentiles.of(text).p50,
    }
    # p50s do not add up (each is another query's), so the rest is shown whole, not as a sum
    parts["search"] = search_p50
    parts["block beyond its search"] = block_p50 - search_p50
    return parts


def measure_saves(
    bank: MemoryBank, user: str, facts: Sequence[tuple[str, Category]]
) -> tuple[list[float], int]:
    """Wall time (s) of ``bank.save`` for each fact and how many were duplicates; the saved
    memories are deleted again afterwards."""
    times: list[float] = []
    saved: list[str] = []
    duplicates = 0
    for text, category in facts:
        seconds, result = _timed(functools.partial(bank.save, user, text, category))
        times.append(seconds)
        if result.success and result.memory_id is not None:
            saved.append(result.memory_id)
        else:
            duplicates += 1
    bank.delete_many(saved, user)
    return times, duplicates


def measure_bulk(
    bank: MemoryBank, pool: Pool, gen: FactGenerator, label: str
) -> tuple[float, float]:
    """(bulk import memories/s, raw embedder texts/s), interleaved batch by batch.

    Bulk import is ``save_many`` of conversation items (stored as said, no duplicate check)
    into fresh users, ``BULK_BATCH`` per call, embedding included. The raw rate embeds as
    many pool texts with ``embedder.embed`` on equally sized calls (the embedder runs them in
    batches of 64). The bulk users are cleared afterwards.
    """
    raw_seconds = bulk_seconds = 0.0
    users = []
    offset = gen.rng.randrange(len(pool))
    for batch in range(math.ceil(BULK_ITEMS / BULK_BATCH)):
        size = min(BULK_BATCH, BULK_ITEMS - batch * BULK_BATCH)
        raw = [pool.texts[(offset + batch * BULK_BATCH + i) % len(pool)] for i in range(size)]
        raw_seconds += _timed(functools.partial(bank.embedder.embed, raw))[0]
        user = f"bulk-{label}-{batch}"
        bank.clear(user)
        users.append(user)
        items = [_conversation_item(gen) for _ in range(size)]
        bulk_seconds += _timed(functools.partial(bank.save_many, user, items))[0]
    for user in users:
        bank.clear(user)
    return BULK_ITEMS / bulk_seconds, BULK_ITEMS / raw_seconds


def _conversation_item(gen: FactGenerator) -> dict[str, str]:
    text, _ = gen.fact()
    return {"content": text, "category": "context", "ring": "episodic", "source": "conversation"}


def _remove_leftovers(bank: MemoryBank, user: str) -> None:
    """Delete measured saves an interrupted run may have left in the searched scope."""
    while stale := bank.list(user, source=[Source.AI], limit=1000):
        bank.delete_many([m.id for m in stale], user)


def peak_rss_mib() -> float:
    """The process's peak resident set size so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / _MIB if sys.platform == "darwin" else peak / 1024


def current_rss_mib() -> float:
    """The process's resident set size now, in MiB."""
    return float(psutil.Process().memory_info().rss) / _MIB


def measure_size(
    bank: MemoryBank, n: int, plan: FillPlan, pool: Pool, samples: int, build: BuildStats
) -> LatencyRow:
    """Every measurement at one database size."""
    user = plan.user_id((plan.users(n) - 1) // 2)
    _remove_leftovers(bank, user)
    in_scope = bank.count(user)
    gen = FactGenerator(f"queries-{n}")
    queries = [gen.query() for _ in range(samples + WARMUP_SEARCHES)]
    search = measure_search(bank, user, queries)
    auto_recall = measure_auto_recall(bank, user, queries)
    breakdown = measure_breakdown(
        bank, user, queries, Percentiles.of(search).p50, Percentiles.of(auto_recall).p50
    )
    recall = hnsw_recall = None
    if isinstance(bank.store, PostgresStore):
        vectors = bank.embedder.embed(queries)
        recall = measure_recall(bank.store, user, vectors)
        store = bank.store
        with PostgresStore(store.url, dimension=store.dimension, exact_scan_max=0) as hnsw:
            hnsw_recall = measure_recall(hnsw, user, vectors)
    facts = FactGenerator(f"saves-{n}")
    save_times, duplicates = measure_saves(bank, user, [facts.fact() for _ in range(samples)])
    bulk_per_s, raw_per_s = measure_bulk(bank, pool, FactGenerator(f"bulk-{n}"), str(n))
    return LatencyRow(
        n=n,
        users=plan.users(n),
        in_scope=in_scope,
        search=Percentiles.of(search),
        save=Percentiles.of(save_times),
        save_duplicates=duplicates,
        bulk_items=BULK_ITEMS,
        bulk_per_s=bulk_per_s,
        raw_embed_per_s=raw_per_s,
        peak_rss_mib=peak_rss_mib(),
        rss_mib=current_rss_mib(),
        db_bytes=_db_bytes(bank, Path(build.path)),
        build=build,
        load_avg=os.getloadavg()[0],
        recall=recall,
        hnsw_recall=hnsw_recall,
        auto_recall=Percentiles.of(auto_recall),
        breakdown=breakdown,
    )


def _db_bytes(bank: MemoryBank, path: Path) -> int:
    if isinstance(bank.store, PostgresStore):
        return int(bank.store.stats()["database_bytes"])
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def _default_workdir() -> Path:
    root = Path.cwd() / "bench-results"
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="latency-", dir=root))


def _check_arguments(sizes: Sequence[int], per_user: int, pool_size: int, samples: int) -> None:
    if not sizes or any(n < 1 for n in sizes):
        raise ValueError("sizes must be positive numbers of memories")
    for name, value in (("per_user", per_user), ("pool_size", pool_size), ("samples", samples)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")


def run_latency(
    *,
    sizes: list[int],
    per_user: int = 10_000,
    pool_size: int = 20_000,
    samples: int = 200,
    workdir: Path | None = None,
    console: Console | None = None,
    url: str | None = None,
) -> LatencyReport:
    """Build databases of each size in ``sizes`` (smallest first, each grown from the last)
    and measure ``search``/``save`` latency, bulk import rate and peak RSS at each.

    With ``url`` (``postgresql://…``) the database is that PostgreSQL one, grown in place
    (:mod:`memorybank_bench.latency_pg`), and each size also reports the recall@10 of vector
    search and of the HNSW index alone against exact search.

    ``per_user`` memories go to each filler user (the searched user has that many in scope);
    ``pool_size`` really-embedded texts are reused by the filler rows; ``samples`` searches
    and saves are measured per size. Databases, the pool cache and ``latency-report.json``
    are kept in ``workdir`` (default: a new temporary directory under ``./bench-results``).
    """
    _check_arguments(sizes, per_user, pool_size, samples)
    workdir = Path(workdir) if workdir is not None else _default_workdir()
    workdir.mkdir(parents=True, exist_ok=True)
    console = console or Console(stderr=True)
    pool_embedder = build_embedder(Settings(url=f"sqlite:///{db_path(workdir, 0)}"))
    try:
        pool = load_pool(workdir, pool_size, pool_embedder, console)
        plan = FillPlan(per_user, pool_size, pool_embedder.model_id)
    finally:
        pool_embedder.close()
    postgres = url is not None and url.startswith(("postgresql://", "postgres://"))
    if url is not None and not postgres:
        raise ValueError(f"--url must be a postgresql:// URL, not {url!r}")
    rows = []
    for n in sorted(set(sizes)):
        if url is not None:
            build = ensure_pg_database(url, n, plan, pool, console)
        else:
            build = ensure_database(workdir, n, plan, pool, console)
        console.print(f"measuring N={n:,} …")
        with memorybank.open(url or f"sqlite:///{build.path}") as bank:
            rows.append(measure_size(bank, n, plan, pool, samples, build))
    report = LatencyReport(
        targets=POSTGRES_TARGETS if postgres else Targets(),
        rows=rows,
        settings={
            "sizes": sorted(set(sizes)),
            "per_user": per_user,
            "pool_size": pool_size,
            "samples": samples,
            "bulk_items": BULK_ITEMS,
            "bulk_batch": BULK_BATCH,
            "workdir": str(workdir),
            "backend": "postgres" if postgres else "sqlite",
        },
    )
    (workdir / "latency-report.json").write_text(json.dumps(report.as_dict(), indent=2))
    return report


__all__ = [
    "FactGenerator",
    "LatencyReport",
    "LatencyRow",
    "Percentiles",
    "Targets",
    "run_latency",
]
