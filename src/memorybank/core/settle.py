"""An LLM settles the pairs the duplicate rules are unsure of (issue 18: "better with one").

The one decider of duplicates, :mod:`memorybank.rules.verdicts`, judges with rules and a pair model
(:func:`~memorybank.rules.verdicts.judge`) and names the pairs where they are weakest
(:func:`~memorybank.rules.verdicts.borderline`): a very similar pair they kept apart (a
paraphrase in other words: "User is vegetarian" / "User follows a vegetarian diet") and a
one-word "different value" (a synonym or a real change: "slicing" / "cutting", "Paris" /
"Lyon"). When the bank has an LLM, those pairs, and only those, are asked of it before the
save's transaction opens (a model call never holds the database's write lock); inside the
transaction the store's judge uses the settled verdict, and the rules for every other pair (or
a pair that appeared in between).

A failing or malformed model answer leaves the rules' verdict standing: saving never fails
because the model did. The rules keep the last word on what they are sure of (numbers,
negation, ended states, opposite values): those pairs are never borderline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memorybank.errors import ProviderError
from memorybank.model import Memory, MemoryFilter, ScopeSet
from memorybank.providers.embedders.base import Embedder, Vectors
from memorybank.providers.embedders.query_cache import QueryVectorCache
from memorybank.providers.llm.client import JSONCompleter, complete_model
from memorybank.rules.render import sanitize_memory_text
from memorybank.rules.verdicts import (
    THRESHOLDS,
    Relation,
    Verdict,
    WordVectors,
    borderline,
    is_candidate,
    judge,
)
from memorybank.stores.base import Judge, Judgement, Store

_PROMPT = """You compare two short facts a memory system keeps about a user.
STORED is already in memory; NEW is about to be saved. Answer with one relation:
- "duplicate": NEW says nothing STORED does not already say (the same fact in other words,
  or a part of it). NEW would be refused.
- "conflict": NEW changes or contradicts STORED (a new value, a correction, an ended state).
  Both are kept and the assistant is told.
- "distinct": both can be true at once and NEW adds information. NEW is stored.
Words that differ but mean the same ("big"/"large", "is vegetarian"/"follows a vegetarian
diet") make a duplicate; a different name, place, number or thing is never a duplicate.
Give a short reason (at most 12 words)."""


class PairVerdict(BaseModel):
    """What the model answers about one pair."""

    model_config = ConfigDict(extra="forbid")

    relation: Literal["duplicate", "conflict", "distinct"]
    why: str = Field(max_length=200)


def settle_with(llm: JSONCompleter, new: str, old: str, rules: Verdict) -> Verdict:
    """The model's verdict on (``new``, ``old``), or ``rules`` when the model fails."""
    messages = [
        {"role": "system", "content": _PROMPT},
        {
            "role": "user",
            # Both texts are stored text (another member's, too): one inert line each.
            "content": f"STORED: {sanitize_memory_text(old)}\nNEW: {sanitize_memory_text(new)}"
            f"\nThe word rules said: {rules.relation.value}"
            + (f" ({sanitize_memory_text(rules.why)})" if rules.why else ""),
        },
    ]
    try:
        answer = complete_model(llm, messages, PairVerdict)
    except ProviderError:
        return rules
    return Verdict(Relation(answer.relation), f"{answer.why.strip()} (model)")


#: The vectors of the words that differ between judged facts, shared by every bank of the
#: process (keyed by model and word; 384 float32 each: 8,192 words are about 12 MiB).
_WORDS = QueryVectorCache(capacity=8192)


def word_vectors(embedder: Embedder) -> WordVectors:
    """The judge's word vectors from ``embedder``, each word embedded once per process."""

    def vectors(texts: Sequence[str]) -> Vectors:
        return np.stack([_WORDS.vector(embedder, text) for text in texts])

    return vectors


def settled_judge(
    store: Store,
    llm: JSONCompleter | None,
    memories: Sequence[Memory],
    vectors: Vectors,
    checked: Sequence[bool],
    embedder: Embedder | None = None,
) -> Judge:
    """The judge for a save of ``memories``: the rules and the pair model (measuring the words
    that differ with ``embedder``'s :func:`word_vectors`), with the borderline pairs among the
    current lookalikes of each checked memory settled by ``llm`` first (none without one)."""
    words = None if embedder is None else word_vectors(embedder)

    def rules(new: Memory, old: Memory, similarity: float) -> Judgement:
        return judge(new.content, old.content, similarity, words)

    if llm is None:
        return rules
    settled: dict[tuple[str, str], Verdict] = {}
    for memory, vector, check in zip(memories, vectors, checked, strict=True):
        if not check:
            continue
        nearest = store.vector_search(
            ScopeSet.of(memory.scope), vector, THRESHOLDS.candidates, MemoryFilter(superseded=False)
        )
        for candidate in nearest:
            if not is_candidate(candidate.score) or candidate.memory.scope != memory.scope:
                continue
            old = candidate.memory
            verdict = judge(memory.content, old.content, candidate.score, words)
            if borderline(verdict, candidate.score):
                settled[(memory.content, old.id)] = settle_with(
                    llm, memory.content, old.content, verdict
                )

    def decide(new: Memory, old: Memory, similarity: float) -> Judgement:
        return settled.get((new.content, old.id)) or rules(new, old, similarity)

    return decide


__all__ = ["PairVerdict", "settle_with", "settled_judge", "word_vectors"]
