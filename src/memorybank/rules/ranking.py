"""Hybrid ranking: one fitted function orders a search's vector and BM25 candidates and says
how sure each is to be relevant; importance and recency then order facts of similar relevance.

    relevance = Ranking(cosine, cosine - best cosine, BM25 / best BM25, context,
                        said by the assistant)                     (a logistic model, fitted)
    context   = neighbour_weight · max(base of the turns around it in its session)
                + speaker_weight · [the query names who said it]
                + time_weight · [it happened in a period the query names]
    score     = relevance · (0.60 + 0.25 · importance / 10 + 0.15 · recency)   (:func:`blend`)
    then the current fact that replaced or may update a hit goes right before it
    (:func:`newest_first`, from the relations judged when facts were written)

``relevance`` is the chance, fitted by logistic regression on the project's own data
(``memorybank bench calibrate``), that the memory is relevant to the query: the same number
means the same for every query and user, so it can be cut off (``min_relevance``,
:data:`RECALL_MIN_RELEVANCE`). Importance and recency scale the relevance by 0.60–1.00, so a
relevant memory outranks one that is not (a relevance more than 1 / 0.6 times higher always
wins), whatever their importance and age. Recency decays exponentially with the memory's age
(half-life configurable). ``vector_weight`` and ``text_weight`` scale the fitted weights of
each signal (0.5, the default: as fitted; 0: that signal left out). ``docs/retrieval.md``
reports the function against cosine alone on each source. The store supplies candidates and
session neighbours; this module only scores them, so every backend ranks the same candidates
the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memorybank.model import Memory, SearchHit
from memorybank.model.stored import Candidate, from_us, last_touched, to_us
from memorybank.rules.query import speakers_named
from memorybank.rules.timeparse import TimeWindow, time_windows

Neighbours = Mapping[str, Sequence[tuple[Candidate, int]]]
MIN_TEXT_SCORE = 1e-3
#: The least spread of cosine similarity the dense signal is scaled over (see
#: :func:`gather`): about what separates a fact that answers a question from one that does not.
DENSE_SCALE_SPAN = 0.3


class RetrievalSettings(BaseModel):
    """Weights and sizes of hybrid retrieval (defaults measured on LoCoMo, see
    ``docs/retrieval.md``).

    >>> weights = RetrievalSettings(relevance_weight=0.7, importance_weight=0.2, recency_weight=0.1)
    >>> weights.relevance_weight, weights.candidates
    (0.7, 50)
    """

    # An unknown name (a typo, or the context_* names the neighbour settings had before
    # 0.1.0) is an error that names it, never a setting silently left at its default.
    model_config = ConfigDict(frozen=True, extra="forbid")

    relevance_weight: float = Field(default=0.60, ge=0)
    importance_weight: float = Field(default=0.25, ge=0)
    recency_weight: float = Field(default=0.15, ge=0)
    # How much each signal counts: 0.5 is the fitted weight, 0 leaves the signal out (and in
    # the base relevance that session neighbours pass on, their mix).
    vector_weight: float = Field(default=0.5, ge=0)
    text_weight: float = Field(default=0.5, ge=0)
    # A turn of a conversation inherits this share of the best relevance of the turns within
    # ``neighbour_window`` places of it: an answer often lives next to the turn that matches.
    neighbour_weight: float = Field(default=0.5, ge=0)
    neighbour_window: int = Field(default=2, ge=0)
    # The neighbours of this many of the best candidates of each signal take part.
    neighbour_candidates: int = Field(default=10, ge=0)
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


#: The evidence :class:`Ranking` weighs, in the order of its weights (:func:`features`).
FEATURES = ("cosine", "gap", "text", "context", "assistant")


@dataclass(frozen=True, slots=True)
class Ranking:
    """The one function that orders a search's candidates and says how sure each is to be
    relevant: a logistic model over what a search knows of a candidate (:func:`features`)::

        relevance = 1 / (1 + exp(-(bias + cosine · cos + gap · (cos - best cos)
                                   + text · BM25 / best BM25
                                   + context · (session neighbours, speaker, period named:
                                                Evidence.total - Evidence.base)
                                   + assistant · [a conversation turn the assistant said])))

    ``cos`` is the cosine of the question as facts say it (third person) to the memory,
    ``best cos`` and ``best bm25`` the best of the query's candidates. Within one query the
    order follows cosine unless the words or the conversation around a memory say more, so
    the order is never worse than cosine alone where words mislead (docs/retrieval.md); the
    same number means the same for every query and user, so it can be cut off
    (:data:`RECALL_MIN_RELEVANCE`). The weights are fitted by ``memorybank bench calibrate`` on
    the project's own data (written user profiles and chats, ``benchmarks/data``) and reported
    on sources they were not fitted on (``docs/retrieval.md``).

    >>> flat = Ranking(bias=0.0, cosine=1.0, gap=0.0, text=0.0, context=0.0, assistant=0.0)
    >>> round(flat.relevance((0.0, 0.0, 0.0, 0.0, 0.0)), 2)
    0.5
    """

    bias: float
    cosine: float
    gap: float
    text: float
    context: float
    assistant: float

    def relevance(self, x: Sequence[float]) -> float:
        """The relevance of one candidate from its :func:`features`, in (0, 1)."""
        z = (
            self.bias
            + self.cosine * x[0]
            + self.gap * x[1]
            + self.text * x[2]
            + self.context * x[3]
            + self.assistant * x[4]
        )
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def weights(self) -> tuple[float, ...]:
        """The weights in :data:`FEATURES` order, after the bias."""
        return (self.cosine, self.gap, self.text, self.context, self.assistant)

    def scaled(self, vector: float, text: float) -> Ranking:
        """The function with the vector signal's weights scaled by ``vector`` and the text
        signal's by ``text`` (1: as fitted, 0: left out).

        >>> RANKING.scaled(1.0, 0.0).text, RANKING.scaled(1.0, 1.0) == RANKING
        (0.0, True)
        """
        if vector == 1.0 and text == 1.0:
            return self
        return replace(
            self,
            cosine=self.cosine * vector,
            gap=self.gap * vector,
            text=self.text * text,
        )

    def relevances(self, rows: Sequence[Features]) -> list[float]:
        """:meth:`relevance` of many candidates at once (one matrix product: a search ranks
        50-100)."""
        if not rows:
            return []
        z = self.bias + np.asarray(rows, dtype=np.float64) @ np.asarray(self.weights())
        out: list[float] = (1.0 / (1.0 + np.exp(-np.clip(z, -700.0, 700.0)))).tolist()
        return out


#: Fitted by ``memorybank bench calibrate`` on the project's own data (``benchmarks/data``);
#: held-out figures in ``docs/retrieval.md``.
RANKING = Ranking(bias=-4.94, cosine=10.542, gap=8.095, text=1.526, context=2.0, assistant=-1.846)

Features = tuple[float, float, float, float, float]


def features(found: Sequence[Evidence]) -> list[Features]:
    """What :class:`Ranking` weighs of each candidate of one search, in :data:`FEATURES`
    order."""
    best_cos = max((f.cosine for f in found if f.vector is not None), default=0.0)
    best_bm25 = max((f.text_score for f in found), default=0.0)
    rows: list[Features] = []
    for f in found:
        text = f.text_score / best_bm25 if best_bm25 > 0 else 0.0
        said = float(f.found.assistant)
        rows.append((f.cosine, f.cosine - best_cos, text, f.total - f.base, said))
    return rows


#: The ``min_relevance`` auto-recall uses unless told otherwise. Held out on LoCoMo, the top
#: hit of 87% of questions asked of the right user's chat turns passes it (93% over
#: observation-style facts, 99% over a session's few facts) and of 4% (0.5%, 4%) of those
#: asked of another user (``docs/retrieval.md``).
RECALL_MIN_RELEVANCE = 0.15


def newest_first(
    hits: Sequence[SearchHit], heads: Mapping[str, Memory], drop: Set[str] = frozenset()
) -> list[SearchHit]:
    """``hits`` with each older fact's newest updater (``heads``: older id → newer memory, as
    judged when the newer was written) right before it, so the current value comes first
    and the earlier one stays beside it: a hit already shown moves up, one not among
    ``hits`` joins; either is at least as relevant as the older one. Read left to right, so
    the first n of the answer for a list are the answer for its first n. Scores stay in the
    order shown (a newer fact moved up takes the older one's score), for callers that sort
    or page by them. A hit in ``drop`` (a replaced fact) is left out once its head is placed.

    >>> from memorybank.model import Memory
    >>> hit = lambda text, r: SearchHit(memory=Memory(user_id="u", content=text,
    ...     category="context"), score=r, relevance=r, importance=0.5, recency=1.0)
    >>> old, new = hit("User lives in Leeds", 0.6), hit("User moved to Rotterdam", 0.4)
    >>> [h.memory.content for h in newest_first([old, new], {old.memory.id: new.memory})]
    ['User moved to Rotterdam', 'User lives in Leeds']
    >>> [h.memory.content for h in newest_first([old], {old.memory.id: new.memory})]
    ['User moved to Rotterdam', 'User lives in Leeds']
    """
    found = {h.memory.id: h for h in hits}
    shown: set[str] = set()
    ordered: list[SearchHit] = []
    for hit in hits:
        if hit.memory.id in shown:
            continue
        head = heads.get(hit.memory.id)
        if head is not None and head.id not in shown:
            # The current value is as relevant as the value it replaces: it answers whatever
            # that one answered, however it is worded.
            known = found.get(head.id)
            lifted: dict[str, Any] = {"memory": head} if known is None else {}
            if known is None or known.relevance < hit.relevance:
                lifted["relevance"] = hit.relevance
            ordered.append((known or hit).model_copy(update=lifted))
            shown.add(head.id)
        if hit.memory.id not in drop:
            ordered.append(hit)
        shown.add(hit.memory.id)
    for k in range(len(ordered) - 2, -1, -1):
        if ordered[k].score < ordered[k + 1].score:
            ordered[k] = ordered[k].model_copy(update={"score": ordered[k + 1].score})
    return ordered


@dataclass(slots=True)
class Evidence:
    """What a search knows about one candidate before it is scored.

    ``dense`` and ``bm25`` are the normalised signals (see :func:`gather`), ``base`` their
    weighted mean,
    ``neighbour`` the best ``base`` among its session neighbours, ``speaker`` and ``time``
    whether the query names who said it or a period it happened in; ``cosine`` and
    ``text_score`` the raw signals (a candidate one signal did not find gets the lowest
    cosine that signal found, and a BM25 score of 0). ``total`` weighs them with the
    :class:`RetrievalSettings`.
    """

    found: Candidate
    vector: float | None = None
    text: float | None = None
    base: float = 0.0
    neighbour: float = 0.0
    speaker: bool = False
    time: bool = False
    cosine: float = 0.0
    text_score: float = 0.0
    total: float = 0.0


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
    merged: dict[str, Evidence], settings: RetrievalSettings, has_vector: bool, has_text: bool
) -> None:
    """Each candidate's fused signal: dense similarity scaled from the lowest found (over a
    span of at least :data:`DENSE_SCALE_SPAN`) to the best, and BM25 min-max normalised,
    weighted; and its raw signals for calibration. A signal that found nothing at all (a query
    of stop words, an empty scope) says nothing, so the other one decides alone."""
    v_lo, v_hi = _minmax([f.vector for f in merged.values() if f.vector is not None])
    t_lo, t_hi = _minmax([f.text for f in merged.values() if f.text is not None])
    # Dense similarity is scaled over at least DENSE_SCALE_SPAN: in a scope of a few facts the
    # candidates' own spread is no measure, and stretching it made the second of two facts
    # that both answer the question look like no match at all.
    n_lo = min(v_lo, v_hi - DENSE_SCALE_SPAN)
    vector_weight = settings.vector_weight if has_vector else 0.0
    text_weight = settings.text_weight if has_text else 0.0
    total = (vector_weight + text_weight) or 1.0
    v_span, t_span = v_hi - n_lo, t_hi - t_lo
    for fused in merged.values():
        # Normalised in line, not through a helper: this runs for every candidate.
        v, t = fused.vector, fused.text
        dense = 0.0 if v is None else (v - n_lo) / v_span
        bm25 = 0.0 if t is None else ((t - t_lo) / t_span if t_hi > t_lo else 1.0)
        fused.base = (vector_weight * dense + text_weight * bm25) / total
        # A candidate only the text search found is less similar than the last vector hit.
        fused.cosine = v_lo if v is None else v
        fused.text_score = 0.0 if t is None else t


def _add_neighbours(
    merged: dict[str, Evidence], neighbours: Neighbours, settings: RetrievalSettings
) -> None:
    """Propagate relevance along conversations: each memory gains a share of the best base
    relevance among its session neighbours (which join the candidates if they were not)."""
    if neighbours:
        base = {key: f.base for key, f in merged.items()}
        best: dict[str, float] = {}
        v_lo = min((f.cosine for f in merged.values()), default=0.0)
        for key, around in neighbours.items():
            for near, offset in around:
                if abs(offset) > settings.neighbour_window:
                    continue
                if near.id not in merged:
                    merged[near.id] = Evidence(near, cosine=v_lo)
                # key's relevance reaches its neighbour, and the neighbour's reaches key.
                best[near.id] = max(best.get(near.id, 0.0), base.get(key, 0.0))
                best[key] = max(best.get(key, 0.0), base.get(near.id, 0.0))
        for key, fused in merged.items():
            fused.neighbour = best.get(key, 0.0)
    weight = settings.neighbour_weight
    for fused in merged.values():
        fused.total = fused.base + weight * fused.neighbour


def _add_speaker(merged: dict[str, Evidence], query: str, settings: RetrievalSettings) -> None:
    named = set(speakers_named(query, (f.found.speaker for f in merged.values())))
    if not named:
        return
    for fused in merged.values():
        if fused.found.speaker in named:
            fused.speaker = True
            fused.total += settings.speaker_weight


def _add_time(
    merged: dict[str, Evidence], windows: Sequence[TimeWindow], settings: RetrievalSettings
) -> None:
    if not windows:
        return
    for fused in merged.values():
        when = from_us(fused.found.occurred_us or fused.found.created_us)
        if any(window.contains(when) for window in windows):
            fused.time = True
            fused.total += settings.time_weight


def gather(
    vector_hits: Sequence[Candidate],
    text_hits: Sequence[Candidate],
    settings: RetrievalSettings,
    now: datetime,
    *,
    query: str = "",
    neighbours: Neighbours | None = None,
) -> list[Evidence]:
    """The evidence for every candidate (and session neighbour) of a search, unordered.

    Dense similarities are scaled from the lowest to the best found, over a span of at least
    :data:`DENSE_SCALE_SPAN`, and BM25 scores min-max normalised (a candidate missing from
    one list gets 0 for that signal), weighted, spread to session neighbours and boosted when
    the query names the speaker or a period the memory falls in.
    """
    # BM25 gives a term found in most memories ("user", in facts that all start with it) an
    # IDF of almost nothing; matches on such terms alone are no evidence, and min-max scaling
    # would stretch their noise to the full range.
    text_hits = [hit for hit in text_hits if hit.score > MIN_TEXT_SCORE]
    merged: dict[str, Evidence] = {}
    for hit in vector_hits:
        if (fused := merged.get(hit.id)) is None:
            fused = merged[hit.id] = Evidence(hit)
        fused.vector = hit.score
    for hit in text_hits:
        if (fused := merged.get(hit.id)) is None:
            fused = merged[hit.id] = Evidence(hit)
        fused.text = hit.score
    _base_relevance(merged, settings, bool(vector_hits), bool(text_hits))
    _add_neighbours(merged, neighbours or {}, settings)
    if query and settings.speaker_weight:
        _add_speaker(merged, query, settings)
    if query and settings.time_weight:
        _add_time(merged, time_windows(query, now), settings)
    return list(merged.values())


def blend(
    relevance: float, importance: float, recency: float, settings: RetrievalSettings
) -> float:
    """Seed 003's weights, led by relevance: ``relevance · (0.60 + 0.25 · importance + 0.15 ·
    recency)`` over the weights' sum (they are settings), each part in [0, 1]; ``importance``
    is the memory's importance / 10.

    Seed 003 adds the three parts. Added, importance and recency (two fifths of the score)
    outrank relevance wherever relevance is low in absolute terms, which it is for a short fact
    answering a short question: the user's most important facts came first whatever was asked.
    Scaled by relevance, they order memories of similar relevance and never lift an irrelevant
    one above a relevant one; with relevance 1, the score is seed 003's.

    >>> settings = RetrievalSettings()
    >>> round(blend(0.9, 0.5, 1.0, settings), 3)
    0.787
    >>> blend(0.2, 0.1, 0.0, settings) > blend(0.02, 1.0, 1.0, settings)
    True
    """
    weights = settings.relevance_weight + settings.importance_weight + settings.recency_weight
    share = (
        settings.relevance_weight
        + settings.importance_weight * importance
        + settings.recency_weight * recency
    )
    return relevance * share / weights


def fuse(
    vector_hits: Sequence[Candidate],
    text_hits: Sequence[Candidate],
    settings: RetrievalSettings,
    now: datetime,
    limit: int,
    *,
    query: str = "",
    neighbours: Neighbours | None = None,
    ranking: Ranking = RANKING,
    min_relevance: float = 0.0,
) -> list[SearchHit]:
    """Merge both candidate lists into scored hits, best first, at most ``limit`` of those
    with a relevance of at least ``min_relevance``.

    Each candidate's :class:`Evidence` (see :func:`gather`) becomes a relevance in [0, 1]
    (:class:`Ranking`) that means the same for every query and user, and the score is
    :func:`blend` of it. The order of the hits does not depend on ``limit``.
    """
    found = gather(vector_hits, text_hits, settings, now, query=query, neighbours=neighbours)
    rows = features(found)
    now_us, half_life = to_us(now), settings.recency_half_life_days
    decay = settings.importance_half_life_days
    # One pass: this runs for every candidate of every search.
    scored: list[tuple[float, float, float, float, Evidence]] = []
    # The settings scale the fitted weights of each signal (their default, 0.5: as fitted).
    scaled = ranking.scaled(settings.vector_weight / 0.5, settings.text_weight / 0.5)
    for f, relevance in zip(found, scaled.relevances(rows), strict=True):
        if relevance < min_relevance:
            continue
        importance = effective_importance(f.found.importance, f.found.touched_us, now_us, decay)
        importance /= 10.0
        fresh = _recency(f.found.created_us, now_us, half_life)
        score = blend(relevance, importance, fresh, settings)
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
