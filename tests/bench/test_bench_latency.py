"""The latency benchmark, end to end at a tiny size, plus its fact generator."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from memorybank.model import Category, MemoryFilter, ScopeSet
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.rules.policy import PolicySettings, to_third_person, validate_memory
from memorybank.stores.sqlite import SQLiteStore
from memorybank_bench.facts import FactGenerator
from memorybank_bench.latency import run_latency
from memorybank_bench.latency_build import FillPlan, ensure_database, load_pool, resume_point
from memorybank_bench.latency_report import LatencyReport


def test_facts_are_varied_valid_and_cover_every_category() -> None:
    facts = FactGenerator(3).distinct_facts(2_000)
    assert len({text for text, _ in facts}) == 2_000
    assert {category for _, category in facts} == set(Category)
    for text, category in facts:
        assert 40 <= len(text) <= 200
        cleaned, _ = validate_memory(text, category, settings=PolicySettings())
        assert to_third_person(cleaned).text == cleaned  # already third person
    gen = FactGenerator(4)
    queries = {gen.query() for _ in range(200)}
    assert len(queries) > 100
    assert all(q.endswith("?") for q in queries)


def test_generator_is_deterministic() -> None:
    assert FactGenerator("x").distinct_facts(50) == FactGenerator("x").distinct_facts(50)


def _positive(value: float) -> bool:
    return math.isfinite(value) and value > 0


@pytest.mark.slow
def test_run_latency_small(tmp_path: Path, embedder: LocalEmbedder) -> None:
    report = run_latency(sizes=[2000], per_user=1000, pool_size=300, samples=10, workdir=tmp_path)
    assert isinstance(report, LatencyReport)
    (row,) = report.rows
    assert row.n == 2000 and row.users == 2 and row.in_scope == 1000
    for value in (row.search.p50, row.search.p95, row.save.p50, row.save.p95):
        assert _positive(value)
    assert row.search.p50 <= row.search.p95 <= row.search.p99
    assert row.search.count == 10 and row.save.count == 10
    assert 0 <= row.save_duplicates <= 10
    assert _positive(row.bulk_per_s) and _positive(row.raw_embed_per_s)
    assert 0.2 < row.bulk_ratio < 5
    assert _positive(row.peak_rss_mib) and _positive(row.rss_mib)
    assert row.build.rows_written == 2000 and not row.build.reused

    console = Console(record=True, width=200)
    console.print(report.table())
    text = console.export_text()
    assert "2,000" in text and "search p50" in text
    assert row.breakdown is not None and set(row.breakdown) == {
        "query embedding",
        "vector scan",
        "BM25",
        "search",
        "block beyond its search",
    }
    assert all(_positive(row.breakdown[part]) for part in ("query embedding", "vector scan"))
    machine, breakdown = report.notes()
    assert machine.startswith("Machine: ") and "cores" in machine
    assert breakdown.startswith("N=2,000, p50 ms: query embedding ")

    data = json.loads(json.dumps(report.as_dict()))
    assert data["rows"][0]["n"] == 2000
    assert data["machine"]["cpu_count"] >= 1
    assert data["targets"]["search_p50_ms"] == 15.0
    assert json.loads((tmp_path / "latency-report.json").read_text())["rows"][0]["n"] == 2000
    pool_name = f"pool-300-{embedder.model_id}"
    assert (tmp_path / f"{pool_name}.npy").is_file()

    # A later run reuses the pool and the complete database, and grows a copy of it.
    quiet = Console(file=io.StringIO())
    pool = load_pool(tmp_path, 300, embedder, quiet)
    assert np.array_equal(pool.vectors, np.load(tmp_path / f"{pool_name}.npy"))
    plan = FillPlan(per_user=1000, pool_size=300, model_id=embedder.model_id)
    reused = ensure_database(tmp_path, 2000, plan, pool, quiet)
    assert reused.reused and reused.rows_written == 0
    grown = ensure_database(tmp_path, 2500, plan, pool, quiet)
    assert grown.copied_from == str(tmp_path / "latency-2000.db")
    assert grown.rows_written == 500 and not grown.reused
    with SQLiteStore(grown.path, dimension=embedder.dimension) as store:
        assert store.count(ScopeSet(user_id="fill-000002"), MemoryFilter()) == 500
        assert resume_point(store, 2500, plan) == 2500


def test_postgres_filler_rows_get_distinct_vectors_near_their_text() -> None:
    from memorybank_bench.latency_pg import distinct_vectors

    rng = np.random.default_rng(7)
    pool = rng.normal(size=(5000, 16)).astype(np.float32) + 0.5  # correlated, like embeddings
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    chunk = [(f"fill-{u:06d}", row, 0.0) for u in range(40) for row in (3, 17)]
    vectors = distinct_vectors(pool, chunk)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # the same text for 40 users: 40 different vectors, each still close to the text's own
    assert len({v.tobytes() for v in vectors}) == len(chunk)
    own = pool[[row for _, row, _ in chunk]]
    assert float((vectors * own).sum(axis=1).min()) > 0.9
    assert np.array_equal(vectors, distinct_vectors(pool, chunk))  # deterministic


@pytest.mark.slow
def test_run_latency_on_postgres(tmp_path: Path, postgres_db_url: str) -> None:
    report = run_latency(
        sizes=[1200], per_user=600, pool_size=300, samples=10, workdir=tmp_path, url=postgres_db_url
    )
    (row,) = report.rows
    assert row.n == 1200 and row.users == 2 and row.in_scope == 600
    assert row.build.rows_written == 1200
    assert _positive(row.search.p50) and _positive(row.save.p50)
    # Scopes this small are read exactly; the HNSW index alone is measured beside it.
    assert row.recall == 1.0
    assert row.hnsw_recall is not None and 0.5 < row.hnsw_recall <= 1.0
    console = Console(record=True, width=200)
    console.print(report.table())
    assert f"1.000 / {row.hnsw_recall:.3f}" in console.export_text()
