"""Hybrid scoring: fuse vector and BM25 candidates into one relevance, then weigh it with
importance and recency.

    base      = vector_weight · dense + text_weight · bm25        (each min-max normalised)
    context   = base + context_weight · max(base of the turns around it in its session)
                     + speaker_weight · [the query names who said it]
                     + time_weight · [it happened in a period the query names]
    relevance = context / max(context)                            (in [0, 1])
    score     = 0.60 · relevance + 0.25 · importance / 10 + 0.15 · recency

Recency decays exponentially with the memory's age (half-life configurable). All weights are
settings; ``docs/retrieval.md`` shows what each step adds on LoCoMo. The store supplies
candidates and session neighbours; this module only scores them, so every backend ranks the
same candidates the same way.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memorybank.model import Memory, SearchHit
from memorybank.stores.base import Candidate, from_us, last_touched, to_us
from memorybank.timeparse import TimeWindow, time_windows

Neighbours = Mapping[str, Sequence[tuple[Memory, int]]]
MIN_TEXT_SCORE = 1e-3


class RetrievalSettings(BaseModel):
    """Weights and sizes of hybrid retrieval (defaults measured on LoCoMo, see
    ``docs/retrieval.md``).

    >>> weights = RetrievalSettings(relevance_weight=0.7, importance_weight=0.2, recency_weight=0.1)
    >>> weights.relevance_weight, weights.candidates
    (0.7, 50)
    """

    model_config = ConfigDict(frozen=True)

    relevance_weight: float = Field(default=0.60, ge=0)
    importance_weight: float = Field(default=0.25, ge=0)
    recency_weight: float = Field(default=0.15, ge=0)
    vector_weight: float = Field(default=0.5, ge=0)
    text_weight: float = Field(default=0.5, ge=0)
    # A turn of a conversation inherits this share of the best relevance of the turns within
    # ``context_window`` places of it: an answer often lives next to the turn that matches.
    context_weight: float = Field(default=0.5, ge=0)
    context_window: int = Field(default=2, ge=0)
    # Added when the query names the memory's speaker (``metadata["speaker"]``).
    speaker_weight: float = Field(default=0.5, ge=0)
    # Added when the memory happened (``occurred_at``, else ``created_at``) inside a period
    # the query names ("in May 2023", "on 3 May, 2023", "last week").
    time_weight: float = Field(default=0.5, ge=0)
    recency_half_life_days: float = Field(default=90.0, gt=0)
    # Importance decay (seed 000, future 2): the importance a memory ranks with falls halfway
    # to 1 in this many days since it was last saved, changed, saved again or recalled. It
    # only re-ranks (stored importance and the prompt block's always-loaded facts stay as
    # they are). None: no decay.
    importance_half_life_days: float | None = Field(default=180.0, gt=0)
    # How many candidates each signal contributes before fusion, at least.
    candidates: int = Field(default=50, ge=1)

    @model_validator(mode="after")
    def _some_weight(self) -> RetrievalSettings:
        if self.relevance_weight + self.importance_weight + self.recency_weight <= 0:
            raise ValueError("at least one of the score weights must be positive")
        if self.vector_weight + self.text_weight <= 0:
            raise ValueError("at least one of vector_weight and text_weight must be positive")
        return self


@dataclass(slots=True)
class _Fused:
    found: Candidate
    vector: float | None = None
    text: float | None = None
    base: float = 0.0
    relevance: float = 0.0


def recency(memory: Memory, now: datetime, half_life_days: float) -> float:
    """1.0 for a memory made now, 0.5 after one half-life, and so on (never negative)."""
    return _recency(to_us(memory.created_at), to_us(now), half_life_days)


_MINUS_LN2 = -math.log(2)
_US_PER_DAY = 86_400_000_000


def _recency(created_us: int, now_us: int, half_life_days: float) -> float:
    age_days = max(now_us - created_us, 0) / _US_PER_DAY
    return math.exp(_MINUS_LN2 * age_days / half_life_days)


def effective_importance(
    importance: float, touched_us: int, now_us: int, half_life_days: float | None
) -> float:
    """The importance a memory ranks with: ``importance`` when just touched, falling halfway
    to 1 every ``half_life_days`` since ``touched_us`` (no decay when ``None``).

    >>> now, half_year = 400 * _US_PER_DAY, 180 * _US_PER_DAY
    >>> effective_importance(9, now, now, 180.0), effective_importance(9, now - half_year, now, 180)
    (9.0, 5.0)
    """
    if half_life_days is None:
        return float(importance)
    return 1.0 + (importance - 1.0) * _recency(touched_us, now_us, half_life_days)


def importance_now(memory: Memory, now: datetime, half_life_days: float | None) -> float:
    """:func:`effective_importance` of a whole memory (for the API and the UI)."""
    touched = to_us(last_touched(memory))
    return round(effective_importance(memory.importance, touched, to_us(now), half_life_days), 2)


def _minmax(values: Sequence[float]) -> tuple[float, float]:
    return (min(values), max(values)) if values else (0.0, 0.0)


def _base_relevance(
    merged: dict[str, _Fused], settings: RetrievalSettings, has_vector: bool, has_text: bool
) -> None:
    """Each candidate's fused signal: min-max normalised dense and BM25 scores, weighted. A
    signal that found nothing at all (a query of stop words, an empty scope) says nothing, so
    the other one decides alone."""
    v_lo, v_hi = _minmax([f.vector for f in merged.values() if f.vector is not None])
    t_lo, t_hi = _minmax([f.text for f in merged.values() if f.text is not None])
    vector_weight = settings.vector_weight if has_vector else 0.0
    text_weight = settings.text_weight if has_text else 0.0
    total = (vector_weight + text_weight) or 1.0
    v_span, t_span = v_hi - v_lo, t_hi - t_lo
    for fused in merged.values():
        # Min-max normalised in line, not through a helper: this runs for every candidate.
        v, t = fused.vector, fused.text
        dense = 0.0 if v is None else ((v - v_lo) / v_span if v_hi > v_lo else 1.0)
        bm25 = 0.0 if t is None else ((t - t_lo) / t_span if t_hi > t_lo else 1.0)
        fused.base = (vector_weight * dense + text_weight * bm25) / total


def _add_context(
    merged: dict[str, _Fused], neighbours: Neighbours, settings: RetrievalSettings
) -> None:
    """Propagate relevance along conversations: each memory gains a share of the best base
    relevance among its session neighbours (which join the candidates if they were not)."""
    if not neighbours:
        for fused in merged.values():
            fused.relevance = fused.base  # + context_weight · 0
        return
    base = {key: f.base for key, f in merged.items()}
    best: dict[str, float] = {}
    for key, around in neighbours.items():
        for memory, offset in around:
            if abs(offset) > settings.context_window:
                continue
            if memory.id not in merged:
                merged[memory.id] = _Fused(Candidate.of(memory, 0.0))
            # key's relevance reaches its neighbour, and the neighbour's reaches key.
            best[memory.id] = max(best.get(memory.id, 0.0), base.get(key, 0.0))
            best[key] = max(best.get(key, 0.0), base.get(memory.id, 0.0))
    for key, fused in merged.items():
        fused.relevance = fused.base + settings.context_weight * best.get(key, 0.0)


@functools.lru_cache(maxsize=1024)
def _name_pattern(name: str) -> re.Pattern[str]:
    """``name`` as whole words, with an optional possessive ("Caroline", "Caroline's")."""
    words = r"\s+".join(re.escape(part) for part in name.split())
    return re.compile(rf"(?<![^\W_])({words})(['’]s)?(?![^\W_])", re.IGNORECASE)


def speakers_named(query: str, speakers: Iterable[str | None]) -> list[str]:
    """Those of ``speakers`` (each a candidate's ``metadata["speaker"]``, or ``None``) that
    ``query`` names, each once.

    >>> speakers_named("What did Caroline's sister paint?", ["Melanie", "Caroline", None])
    ['Caroline']
    """
    distinct = dict.fromkeys(s for s in speakers if s is not None)
    return [s for s in distinct if _name_pattern(s).search(query)]


def neutral_query(query: str, names: Sequence[str]) -> str:
    """``query`` with the people it names replaced by "they"/"their".

    Who is asked about is matched through the memories' speaker (see ``speaker_weight``);
    the name in the text would match every turn that person said (stored as
    ``"<speaker>: …"``) and every greeting to them, and pull the query's embedding towards
    that person rather than towards what it asks.

    >>> neutral_query("What did Caroline's sister tell Melanie?", ["Caroline", "Melanie"])
    'What did their sister tell they?'
    """
    for name in names:
        query = _name_pattern(name).sub(lambda m: "their" if m.group(2) else "they", query)
    return query


def _add_speaker(merged: dict[str, _Fused], query: str, settings: RetrievalSettings) -> None:
    named = set(speakers_named(query, (f.found.speaker for f in merged.values())))
    if not named:
        return
    for fused in merged.values():
        if fused.found.speaker in named:
            fused.relevance += settings.speaker_weight


def _add_time(
    merged: dict[str, _Fused], windows: Sequence[TimeWindow], settings: RetrievalSettings
) -> None:
    if not windows:
        return
    for fused in merged.values():
        when = from_us(fused.found.occurred_us or fused.found.created_us)
        if any(window.contains(when) for window in windows):
            fused.relevance += settings.time_weight


def fuse(
    vector_hits: Sequence[Candidate],
    text_hits: Sequence[Candidate],
    settings: RetrievalSettings,
    now: datetime,
    limit: int,
    *,
    query: str = "",
    neighbours: Neighbours | None = None,
) -> list[SearchHit]:
    """Merge both candidate lists into scored hits, best first, at most ``limit``.

    Dense similarities and BM25 scores are min-max normalised over the candidates (a
    candidate missing from one list gets 0 for that signal), weighted, spread to session
    neighbours and boosted when the query names the speaker or a period the memory falls in;
    the result is scaled so the best candidate's relevance is 1.
    """
    # BM25 gives a term found in most memories ("user", in facts that all start with it) an
    # IDF of almost nothing; matches on such terms alone are no evidence, and min-max scaling
    # would stretch their noise to the full range.
    text_hits = [hit for hit in text_hits if hit.score > MIN_TEXT_SCORE]
    merged: dict[str, _Fused] = {}
    for hit in vector_hits:
        if (fused := merged.get(hit.id)) is None:
            fused = merged[hit.id] = _Fused(hit)
        fused.vector = hit.score
    for hit in text_hits:
        if (fused := merged.get(hit.id)) is None:
            fused = merged[hit.id] = _Fused(hit)
        fused.text = hit.score
    _base_relevance(merged, settings, bool(vector_hits), bool(text_hits))
    _add_context(merged, neighbours or {}, settings)
    if query and settings.speaker_weight:
        _add_speaker(merged, query, settings)
    if query and settings.time_weight:
        _add_time(merged, time_windows(query, now), settings)
    top = max((f.relevance for f in merged.values()), default=0.0)
    now_us = to_us(now)
    w_relevance, w_importance = settings.relevance_weight, settings.importance_weight
    w_recency, half_life = settings.recency_weight, settings.recency_half_life_days
    decay = settings.importance_half_life_days
    # One pass with the weights read once: this runs for every candidate of every search.
    scored: list[tuple[float, float, float, float, _Fused]] = []
    for f in merged.values():
        relevance = f.relevance / top if top > 0 else 0.0
        importance = effective_importance(f.found.importance, f.found.touched_us, now_us, decay)
        importance /= 10.0
        fresh = _recency(f.found.created_us, now_us, half_life)
        score = w_relevance * relevance + w_importance * importance + w_recency * fresh
        scored.append((score, relevance, importance, fresh, f))
    scored.sort(key=lambda s: (-s[0], s[4].found.id))
    # Only the hits returned become Memory and SearchHit models: building all 50-100
    # candidates was a third of a search's CPU once its query vector was cached.
    return [
        SearchHit(
            memory=fused.found.memory,
            score=score,
            relevance=relevance,
            importance=importance,
            recency=fresh,
            vector_similarity=fused.vector,
            text_score=fused.text,
        )
        for score, relevance, importance, fresh, fused in scored[:limit]
    ]
