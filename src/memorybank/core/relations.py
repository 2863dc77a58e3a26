"""Relations between facts as every read sees them: decided once, when a fact is written
(:mod:`memorybank.core.settle`), kept by the store, and read here for the memories a read
shows, in one indexed query. No read asks the judge.

A newer fact that may update an older one is shown first, the older beside it as earlier (the
search's order, the prompt block's earlier notes); a pair answered "both are true"
(:func:`memorybank.services.pairs.keep_both`) is no update.

>>> from memorybank.stores.sqlite import SQLiteStore
>>> updates_among(SQLiteStore(":memory:", dimension=3), ["mem_a", "mem_b"])
set()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memorybank.model import Memory, MemoryFilter, ScopeSet
from memorybank.model.stored import Related
from memorybank.providers.embedders.base import Vectors
from memorybank.rules.intake import is_conversation
from memorybank.rules.render import FACT_SOURCES
from memorybank.rules.verdicts import (
    THRESHOLDS,
    Judge,
    Relation,
    is_candidate,
    judge_version,
    verdict,
)

if TYPE_CHECKING:
    from memorybank.stores.base import Store


def updates_among(store: Store, memory_ids: Sequence[str]) -> set[tuple[str, str]]:
    """The (newer id, older id) pairs among ``memory_ids`` where the newer may update the
    older, as judged when it was written (answers "both are true" excluded)."""
    return store.updates_among(list(memory_ids))


def newest_updater(
    newer: Sequence[Memory], updates: Sequence[tuple[str, Memory]]
) -> dict[str, Memory]:
    """Each older fact's newest updater (older id → the newer memory) among ``updates``
    ((older id, newer memory) pairs), counting only the newer memories in ``newer``."""
    allowed = {m.id for m in newer}
    chosen: dict[str, Memory] = {}
    for older, memory in updates:
        if memory.id not in allowed:
            continue
        best = chosen.get(older)
        if best is None or (memory.updated_at, memory.id) > (best.updated_at, best.id):
            chosen[older] = memory
    return chosen


def rejudge(
    store: Store,
    judge: Judge,
    memories: Sequence[Memory],
    vectors: Vectors,
    *,
    restated: bool = False,
) -> None:
    """Judge ``memories`` (already stored, with their ``vectors``) against the current facts
    of their scopes and keep what each may update (:meth:`Store.relate`): each against those
    written before it, or with ``restated`` (edits: said now) against all the others. All
    pairs are read in one batch; conversation turns are not facts and are left alone."""
    items: list[tuple[Memory, list[tuple[Memory, float]]]] = []
    for memory, vector in zip(memories, vectors, strict=True):
        if not is_conversation(memory.ring, memory.source):
            items.append((memory, _earlier(store, memory, vector, restated)))
    pairs = [(old.content, memory.content) for memory, olds in items for old, _ in olds]
    scores = iter(judge.score(pairs) if pairs else [])
    version = judge_version(judge)
    decided: list[tuple[Memory, list[Related]]] = []
    for memory, olds in items:
        related: list[Related] = []
        for old, similarity in olds:
            said = verdict(next(scores), memory.content, old.content, similarity)
            if said.relation is Relation.CONFLICT:
                related.append(Related(old, similarity, said.why, said.probabilities, version))
        decided.append((memory, related))
    if decided:
        store.relate(decided, restated=restated)


def _earlier(
    store: Store, memory: Memory, vector: Vectors, restated: bool
) -> list[tuple[Memory, float]]:
    """The current facts of ``memory``'s scope a save would judge it against: the nearest
    :attr:`~memorybank.rules.verdicts.Thresholds.candidates` at least
    :attr:`~memorybank.rules.verdicts.Thresholds.candidate` similar, written before it unless
    ``restated``."""
    current = MemoryFilter(superseded=False, source=FACT_SOURCES)
    k = THRESHOLDS.candidates
    found = store.vector_search(ScopeSet.of(memory.scope), vector, k * 3, current)
    key = (memory.created_at, memory.id)
    return [
        (c.memory, float(c.score))
        for c in found
        if c.memory.id != memory.id
        and c.memory.scope == memory.scope
        and is_candidate(c.score)
        and (restated or (c.memory.created_at, c.memory.id) < key)
    ][:k]


__all__ = ["newest_updater", "rejudge", "updates_among"]
