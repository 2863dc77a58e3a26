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

import numpy as np

from memorybank.model import Memory, MemoryFilter, ScopeSet
from memorybank.model.stored import InsertOutcome, Related
from memorybank.providers.embedders.base import ProgressFn, Vectors
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


def rejudge_restated(
    store: Store, judge: Judge, outcomes: Sequence[InsertOutcome], vectors: Vectors
) -> None:
    """Judge again the stored facts a save restated (now in its words, said now): what each
    may update (:func:`rejudge`)."""
    restated = [
        (o.restated, v) for o, v in zip(outcomes, vectors, strict=True) if o.restated is not None
    ]
    if restated:
        memories = [m for m, _ in restated]
        rejudge(store, judge, memories, np.stack([v for _, v in restated]), restated=True)


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


#: Where an interrupted :func:`rejudge_all` resumes: ``"<judge version> <last memory id>"``.
CURSOR = "rejudge_cursor"
#: The judge whose relations every stored fact has (set when a pass completes).
JUDGED_BY = "relations_judge"


def rejudge_all(
    store: Store,
    judge: Judge,
    progress: ProgressFn | None = None,
    batch_size: int = 128,
) -> int:
    """Judge every current fact of ``store`` again with ``judge`` (a new judge model) and
    keep what each may update (:func:`rejudge`); answers "both are true" stay. Each batch is
    written in its own transaction and the place reached is kept in the store's meta, so an
    interrupted pass resumes where it stopped (with the same judge) and a finished one is
    not repeated. The number of facts judged.

    >>> _ = bank.save("u1", "User lives in Berlin", "identity")
    >>> _ = bank.save("u1", "User moved to Lisbon", "identity")
    >>> rejudge_all(bank.store, bank.judge) >= 2
    True
    """
    version = judge_version(judge)
    if store.get_meta(JUDGED_BY) == version and not store.get_meta(CURSOR):
        return 0
    resume = (store.get_meta(CURSOR) or "").split(" ")
    after = resume[1] if len(resume) == 2 and resume[0] == version else None
    total, done = int(store.stats().get("memories", 0)), 0
    for batch in store.iter_memories(batch_size, after=after):
        facts = [m for m in batch if m.superseded_by is None]
        stored = store.vectors_of([m.id for m in facts])
        facts = [m for m in facts if m.id in stored]
        if facts:
            rejudge(store, judge, facts, np.stack([stored[m.id] for m in facts]))
        done += len(batch)
        store.set_meta(CURSOR, f"{version} {batch[-1].id}")
        if progress is not None:
            progress(done, total)
    store.set_meta(JUDGED_BY, version)
    store.set_meta(CURSOR, "")
    return done


__all__ = [
    "CURSOR",
    "JUDGED_BY",
    "newest_updater",
    "rejudge",
    "rejudge_all",
    "rejudge_restated",
    "updates_among",
]
