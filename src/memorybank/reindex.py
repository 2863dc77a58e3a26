"""Re-embedding every stored memory with the configured embedder (after a model change)."""

from __future__ import annotations

from collections.abc import Callable

from memorybank.embedders.base import Embedder
from memorybank.stores.base import Store

#: Called with (done, total) as a long job advances.
ProgressFn = Callable[[int, int], None]


def reindex_all(
    store: Store, embedder: Embedder, progress: ProgressFn | None = None, batch_size: int = 256
) -> int:
    """Re-embed every memory of ``store`` with ``embedder``, recording its model id on each
    memory and in the store's meta; the number of memories re-embedded."""
    total = int(store.stats().get("memories", 0))
    done = 0
    for batch in store.iter_memories(batch_size):
        vectors = embedder.embed([m.content for m in batch])
        store.set_vectors([m.id for m in batch], vectors, embedder.model_id)
        done += len(batch)
        if progress is not None:
            progress(done, total)
    store.set_meta("embedding_model", embedder.model_id)
    store.set_meta("embedding_dimension", str(embedder.dimension))
    return done


__all__ = ["reindex_all"]
