"""The search-query vector cache: exact vectors, LRU order, per model, shared by threads, and
counted in /metrics."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from memorybank import MemoryBank
from memorybank.errors import ConfigurationError
from memorybank.providers.embedders.base import Vectors
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.providers.embedders.query_cache import QueryVectorCache
from memorybank.server.app import create_app
from memorybank.services.accounts import Accounts
from memorybank.settings import Settings


class Counting:
    """The real embedder, counting its forward passes (and optionally renamed)."""

    def __init__(self, inner: LocalEmbedder, model_id: str | None = None) -> None:
        self.inner = inner
        self.calls = 0
        self._model_id = model_id or inner.model_id

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        return self.inner.embed(texts)

    def close(self) -> None:
        pass


def test_a_hit_is_the_vector_a_new_pass_gives(embedder: LocalEmbedder) -> None:
    counting = Counting(embedder)
    cache = QueryVectorCache(capacity=4)
    first = cache.vector(counting, "which editor does the user like")
    again = cache.vector(counting, "which editor does the user like")
    assert again is first and counting.calls == 1
    assert (cache.hits, cache.misses) == (1, 1)
    np.testing.assert_array_equal(first, embedder.embed(["which editor does the user like"])[0])
    assert first.shape == (embedder.dimension,)
    with pytest.raises(ValueError):
        first[0] = 1.0  # read-only: no caller can corrupt what the next one gets


def test_least_recently_used_goes_first(embedder: LocalEmbedder) -> None:
    counting = Counting(embedder)
    cache = QueryVectorCache(capacity=2)
    cache.vector(counting, "alpha question")
    cache.vector(counting, "beta question")
    cache.vector(counting, "alpha question")  # alpha is now the most recent
    cache.vector(counting, "gamma question")  # evicts beta
    assert len(cache) == 2
    calls = counting.calls
    cache.vector(counting, "alpha question")
    assert counting.calls == calls
    cache.vector(counting, "beta question")
    assert counting.calls == calls + 1


def test_capacity_zero_turns_it_off_and_negative_is_refused(embedder: LocalEmbedder) -> None:
    counting = Counting(embedder)
    cache = QueryVectorCache(capacity=0)
    cache.vector(counting, "same text")
    cache.vector(counting, "same text")
    assert counting.calls == 2 and len(cache) == 0 and cache.misses == 2
    with pytest.raises(ConfigurationError, match="0 or more"):
        QueryVectorCache(capacity=-1)


def test_vectors_are_kept_per_model(embedder: LocalEmbedder) -> None:
    one, other = Counting(embedder), Counting(embedder, model_id="another-model")
    cache = QueryVectorCache()
    cache.vector(one, "where does the user live")
    cache.vector(other, "where does the user live")
    assert one.calls == 1 and other.calls == 1


def test_threads_share_it_safely(embedder: LocalEmbedder) -> None:
    cache = QueryVectorCache(capacity=8)
    texts = [f"question number {i} about tea" for i in range(12)]
    expected = {t: embedder.embed([t])[0] for t in texts}
    failures: list[str] = []

    def worker(offset: int) -> None:
        for i in range(60):
            text = texts[(i + offset) % len(texts)]
            if not np.allclose(cache.vector(embedder, text), expected[text], atol=1e-6):
                failures.append(text)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert cache.hits + cache.misses == 360 and len(cache) <= 8


def test_search_embeds_a_repeated_query_once(bank: MemoryBank, embedder: LocalEmbedder) -> None:
    bank.save("ann", "User drinks green tea every morning", "preference")
    counting = Counting(embedder)
    bank.embedder = counting
    first = bank.search("ann", "what does the user drink")
    second = bank.search("ann", "what does the user drink")
    assert counting.calls == 1
    assert [(h.memory.id, h.relevance) for h in first] == [
        (h.memory.id, h.relevance) for h in second
    ]
    # Saving is not a search: a fact is always embedded.
    bank.save("ann", "User walks the dog called Rex daily", "relationship")
    assert counting.calls == 2


def test_metrics_count_hits_and_misses(bank: MemoryBank, tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    app = create_app(bank, Accounts.open(bank, settings), settings)
    # A loopback Host and peer: local mode answers to no other host, /metrics to no other peer.
    with TestClient(app, base_url="http://127.0.0.1", client=("127.0.0.1", 50000)) as client:
        for _ in range(3):
            assert client.get("/api/search", params={"q": "favourite tea"}).status_code == 200
        text = client.get("/metrics").text
    assert "memorybank_query_cache_hits_total 2.0" in text
    assert "memorybank_query_cache_misses_total 1.0" in text
