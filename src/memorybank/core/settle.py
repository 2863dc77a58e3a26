"""The judge of one save: every (stored, new) pair the store shows it, scored in one batch
per new fact by the bank's :class:`~memorybank.rules.verdicts.Judge`, and decided by
:mod:`memorybank.rules.verdicts` (refuse, report, retire).

The pairs of each new fact's nearest facts (stored, or earlier in the batch) are scored in
one batch *before* the save's transaction opens (a model call never holds the database's
write lock, and a batch-consistent model reads a save's pairs in one run); inside it, a pair
not scored before (one that appeared in between) is read by the judge's own local model.
What the judge decides is kept with each pair the store relates (:mod:`memorybank.core.relations`):
reads never ask it again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from memorybank.model import Memory, MemoryFilter, ScopeSet
from memorybank.providers.embedders.base import Vectors, normalise
from memorybank.rules.verdicts import (
    THRESHOLDS,
    Judge,
    PairScores,
    Relation,
    Verdict,
    is_candidate,
    judge_version,
    surely_replaces,
    verdict,
)
from memorybank.stores.base import Judgement, Replaces, Store

#: What the store asks about a new memory and its candidates (see ``stores.base.Judge``).
StoreJudge = Callable[[Memory, Sequence[tuple[Memory, float]]], Sequence[Judgement]]


def save_judge(
    store: Store,
    judge: Judge,
    memories: Sequence[Memory],
    vectors: Vectors,
    checked: Sequence[bool],
    *,
    restate: bool = True,
) -> tuple[StoreJudge, Replaces]:
    """The store's judge for a save of ``memories`` and the ``replaces`` of
    ``on_conflict="auto"`` (which conflicts each new fact surely replaces), sharing one set
    of scores. Without ``restate`` (the caller may not change stored facts, or asked to keep
    them), a probable duplicate is stored as a fact of its own, never restating another."""
    scores: dict[tuple[str, str], PairScores] = {}
    local: Judge = getattr(judge, "local", judge)
    # Every pair the save will most likely show the judge, read in one batch before the
    # transaction opens (a model call never holds the write lock); inside it, only a pair
    # that appeared in between is read, by the judge's own local model.
    pairs = _nearest_pairs(store, memories, vectors, checked)
    if pairs:
        scores.update(zip(pairs, judge.score(pairs), strict=True))

    def scored(new: Memory, olds: Sequence[Memory]) -> list[PairScores]:
        keys = [(old.content, new.content) for old in olds]
        todo = sorted({key for key in keys if key not in scores})
        scores.update(zip(todo, local.score(todo), strict=True))
        return [scores[key] for key in keys]

    version = judge_version(judge)

    def decide(new: Memory, candidates: Sequence[tuple[Memory, float]]) -> list[Verdict]:
        olds = [old for old, _ in candidates]
        said = [
            replace(verdict(score, new.content, old.content, similarity), judge=version)
            for score, (old, similarity) in zip(scored(new, olds), candidates, strict=True)
        ]
        if restate:
            return said
        return [
            replace(v, relation=Relation.DISTINCT) if v.relation is Relation.RESTATED else v
            for v in said
        ]

    def replaces(new: Memory, olds: Sequence[tuple[Memory, float]]) -> list[bool]:
        return surely_replaces(scored(new, [old for old, _ in olds]))

    return decide, replaces


def _nearest_pairs(
    store: Store, memories: Sequence[Memory], vectors: Vectors, checked: Sequence[bool]
) -> list[tuple[str, str]]:
    """The (stored, new) texts of each checked memory's nearest current facts of its scope,
    stored or earlier in the batch, as the insert will find them."""
    pairs: list[tuple[str, str]] = []
    matrix = normalise(np.asarray(vectors, dtype=np.float32))
    k = THRESHOLDS.candidates
    for i, (memory, vector, check) in enumerate(zip(memories, vectors, checked, strict=True)):
        if not check:
            continue
        nearest = store.vector_search(
            ScopeSet.of(memory.scope), vector, k, MemoryFilter(superseded=False)
        )
        near = [
            (float(c.score), c.memory.content)
            for c in nearest
            if is_candidate(c.score) and c.memory.scope == memory.scope
        ]
        earlier = [j for j in range(i) if checked[j] and memories[j].scope == memory.scope]
        if earlier:
            similar = matrix[earlier] @ matrix[i]
            near += [
                (float(sim), memories[j].content)
                for j, sim in zip(earlier, similar.tolist(), strict=True)
                if is_candidate(sim)
            ]
        near.sort(key=lambda item: -item[0])
        pairs += [(content, memory.content) for _, content in near[:k]]
    return sorted(set(pairs))


__all__ = ["StoreJudge", "save_judge"]
