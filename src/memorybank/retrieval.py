"""Hybrid scoring: fuse vector and BM25 candidates into one relevance, then weigh it with
importance and recency.

    relevance = vector_weight · dense + text_weight · bm25        (each normalised to [0, 1])
    score     = 0.60 · relevance + 0.25 · importance / 10 + 0.15 · recency

Recency decays exponentially with the memory's age (half-life configurable). All weights are
settings. The store supplies candidates; this module only scores them, so every backend ranks
the same candidates the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memorybank.model import Memory, SearchHit
from memorybank.stores.base import Candidate


class RetrievalSettings(BaseModel):
    """Weights and sizes of hybrid retrieval.

    >>> RetrievalSettings(relevance_weight=0.7, importance_weight=0.2, recency_weight=0.1)
    RetrievalSettings(...)
    """

    model_config = ConfigDict(frozen=True)

    relevance_weight: float = Field(0.60, ge=0)
    importance_weight: float = Field(0.25, ge=0)
    recency_weight: float = Field(0.15, ge=0)
    vector_weight: float = Field(0.5, ge=0)
    text_weight: float = Field(0.5, ge=0)
    recency_half_life_days: float = Field(90.0, gt=0)
    # How many candidates each signal contributes before fusion, at least.
    candidates: int = Field(50, ge=1)

    @model_validator(mode="after")
    def _some_weight(self) -> RetrievalSettings:
        if self.relevance_weight + self.importance_weight + self.recency_weight <= 0:
            raise ValueError("at least one of the score weights must be positive")
        if self.vector_weight + self.text_weight <= 0:
            raise ValueError("at least one of vector_weight and text_weight must be positive")
        return self


@dataclass
class _Fused:
    memory: Memory
    vector: float | None = None
    text: float | None = None


def recency(memory: Memory, now: datetime, half_life_days: float) -> float:
    """1.0 for a memory made now, 0.5 after one half-life, and so on (never negative)."""
    age_days = max((now - memory.created_at).total_seconds(), 0.0) / 86_400.0
    return math.exp(-math.log(2) * age_days / half_life_days)


def fuse(
    vector_hits: Sequence[Candidate],
    text_hits: Sequence[Candidate],
    settings: RetrievalSettings,
    now: datetime,
    limit: int,
) -> list[SearchHit]:
    """Merge both candidate lists into scored hits, best first, at most ``limit``.

    Dense similarities are min-max normalised over the candidates (cosine values of unrelated
    texts are far from 0 with sentence embedders, so the spread carries the signal); BM25 scores
    are divided by the best one, since they start at 0 for "no match". A candidate missing from
    one list gets 0 for that signal; a list that is empty altogether leaves the
    decision to the other.
    """
    merged: dict[str, _Fused] = {}
    for hit in vector_hits:
        merged.setdefault(hit.memory.id, _Fused(hit.memory)).vector = hit.score
    for hit in text_hits:
        merged.setdefault(hit.memory.id, _Fused(hit.memory)).text = hit.score
    dense = [f.vector for f in merged.values() if f.vector is not None]
    lo, hi = (min(dense), max(dense)) if dense else (0.0, 0.0)
    text_max = max((f.text for f in merged.values() if f.text is not None), default=0.0)
    # A signal that found nothing at all (a query of stop words, an empty scope) says
    # nothing about relative relevance, so the other one decides alone.
    vector_weight = settings.vector_weight if vector_hits else 0.0
    text_weight = settings.text_weight if text_hits else 0.0
    signal_total = (vector_weight + text_weight) or 1.0

    hits: list[SearchHit] = []
    for fused in merged.values():
        dense_norm = 0.0
        if fused.vector is not None:
            dense_norm = (fused.vector - lo) / (hi - lo) if hi > lo else 1.0
        text_norm = fused.text / text_max if fused.text is not None and text_max > 0 else 0.0
        relevance = (vector_weight * dense_norm + text_weight * text_norm) / signal_total
        hits.append(_score(fused, relevance, settings, now))
    hits.sort(key=lambda h: (-h.score, h.memory.id))
    return hits[:limit]


def _score(
    fused: _Fused, relevance: float, settings: RetrievalSettings, now: datetime
) -> SearchHit:
    importance = fused.memory.importance / 10.0
    fresh = recency(fused.memory, now, settings.recency_half_life_days)
    score = (
        settings.relevance_weight * relevance
        + settings.importance_weight * importance
        + settings.recency_weight * fresh
    )
    return SearchHit(
        memory=fused.memory,
        score=score,
        relevance=relevance,
        importance=importance,
        recency=fresh,
        vector_similarity=fused.vector,
        text_score=fused.text,
    )
