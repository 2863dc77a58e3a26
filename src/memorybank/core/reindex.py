"""Re-embedding every stored memory with the configured embedder (after a model change)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybank.providers.embedders.base import Embedder, ProgressFn
from memorybank.stores.base import Store

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank


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


def reindex(bank: MemoryBank, progress: ProgressFn | None = None, batch_size: int = 256) -> int:
    """Re-embed every memory of ``bank``'s store with its embedder (:func:`reindex_all`).

    >>> _ = bank.save("u1", "User likes green tea", "preference")
    >>> reindex(bank)
    1
    """
    return reindex_all(bank.store, bank.embedder, progress, batch_size)


__all__ = ["ProgressFn", "reindex", "reindex_all"]
