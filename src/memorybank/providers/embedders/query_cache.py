"""A small LRU of search-query vectors.

Embedding the query is most of a search's CPU (a MiniLM forward pass, several milliseconds
against about one for the store and the scoring), and the same query text comes back often:
an assistant recalls the same topic on several turns, a UI searches as the user types and
pages, the system-prompt block asks the same question on every request. The model is
deterministic, so a remembered vector is exactly the one a new pass would give.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from memorybank.errors import ConfigurationError
from memorybank.providers.embedders.base import Embedder, Vectors

#: Default number of query vectors kept (384 float32 each: about 3 MiB).
DEFAULT_QUERY_CACHE_SIZE = 2048


class QueryVectorCache:
    """The vectors of the last ``capacity`` distinct query texts, per embedding model.

    Thread-safe; ``capacity=0`` turns it off. Vectors handed out are read-only views, so a
    caller cannot corrupt what later callers get.

    >>> embedder = bank.embedder
    >>> cache = QueryVectorCache(capacity=1000)
    >>> v = cache.vector(embedder, "what does the user drink")
    >>> cache.vector(embedder, "what does the user drink") is v
    True
    >>> cache.hits, cache.misses
    (1, 1)
    """

    def __init__(self, capacity: int = DEFAULT_QUERY_CACHE_SIZE) -> None:
        if capacity < 0:
            raise ConfigurationError(f"query cache size must be 0 or more, got {capacity}")
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._vectors: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def vector(self, embedder: Embedder, text: str) -> Vectors:
        """The unit vector of ``text`` under ``embedder`` (1-d, read-only)."""
        key = (embedder.model_id, text)
        with self._lock:
            found = self._vectors.get(key)
            if found is not None:
                self._vectors.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        # Embedded outside the lock: two threads missing the same text at once both compute
        # it (same result), which costs less than serialising every miss.
        vector: Vectors = np.array(embedder.embed([text])[0], dtype=np.float32)
        vector.flags.writeable = False
        if self.capacity:
            with self._lock:
                self._vectors[key] = vector
                self._vectors.move_to_end(key)
                while len(self._vectors) > self.capacity:
                    self._vectors.popitem(last=False)
        return vector

    def clear(self) -> None:
        """Forget every vector (the counters stay)."""
        with self._lock:
            self._vectors.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)


__all__ = ["DEFAULT_QUERY_CACHE_SIZE", "QueryVectorCache"]
