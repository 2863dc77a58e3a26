"""The judge of one save: every (stored, new) pair the store shows it, scored in one batch
per new fact by the bank's :class:`~memorybank.rules.verdicts.Judge`, and decided by
:mod:`memorybank.rules.verdicts` (refuse, report, retire).

With an LLM behind the judge (:class:`memorybank.providers.judges.LLMJudge`), the pairs of
each new fact's nearest stored facts are scored *before* the save's transaction opens (a
model call never holds the database's write lock); inside it, a pair not scored before (one
that appeared in between, or an earlier item of the same batch) is read by the judge's own
local model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from memorybank.model import Memory, MemoryFilter, ScopeSet
from memorybank.providers.embedders.base import Vectors
from memorybank.rules.verdicts import (
    THRESHOLDS,
    Judge,
    PairScores,
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
) -> tuple[StoreJudge, Replaces]:
    """The store's judge for a save of ``memories`` and the ``replaces`` of
    ``on_conflict="auto"`` (which conflicts each new fact surely replaces), sharing one set
    of scores."""
    scores: dict[tuple[str, str], PairScores] = {}
    local: Judge = getattr(judge, "local", judge)
    if local is not judge:
        pairs = _nearest_pairs(store, memories, vectors, checked)
        scores.update(zip(pairs, judge.score(pairs), strict=True))

    def scored(new: Memory, olds: Sequence[Memory]) -> list[PairScores]:
        keys = [(old.content, new.content) for old in olds]
        todo = sorted({key for key in keys if key not in scores})
        scores.update(zip(todo, local.score(todo), strict=True))
        return [scores[key] for key in keys]

    version = judge_version(judge)

    def decide(new: Memory, candidates: Sequence[tuple[Memory, float]]) -> list[Verdict]:
        olds = [old for old, _ in candidates]
        return [
            replace(verdict(score, new.content, old.content, similarity), judge=version)
            for score, (old, similarity) in zip(scored(new, olds), candidates, strict=True)
        ]

    def replaces(new: Memory, olds: Sequence[tuple[Memory, float]]) -> list[bool]:
        return surely_replaces(scored(new, [old for old, _ in olds]))

    return decide, replaces


def _nearest_pairs(
    store: Store, memories: Sequence[Memory], vectors: Vectors, checked: Sequence[bool]
) -> list[tuple[str, str]]:
    """The (stored, new) texts of each checked memory's nearest current facts of its scope."""
    pairs: list[tuple[str, str]] = []
    for memory, vector, check in zip(memories, vectors, checked, strict=True):
        if not check:
            continue
        nearest = store.vector_search(
            ScopeSet.of(memory.scope), vector, THRESHOLDS.candidates, MemoryFilter(superseded=False)
        )
        for candidate in nearest:
            if is_candidate(candidate.score) and candidate.memory.scope == memory.scope:
                pairs.append((candidate.memory.content, memory.content))
    return sorted(set(pairs))


__all__ = ["StoreJudge", "save_judge"]
