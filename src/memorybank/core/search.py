"""A search's candidates, gathered from the store before :func:`~memorybank.rules.ranking.fuse`
ranks them: vector and full-text matches (with the speakers a query names left out of the text
that is embedded and searched), and the session neighbours of conversation turns.

A question is searched as it is asked: the bundled embedder reads "where do I live?" as near
"User lives in Lisbon" as its third-person form, and nearer a turn the user said ("I live in
…"); on the project's chats and profiles, cosine as asked put the answer first more often
(docs/retrieval.md). Which speakers a query names is learnt from a text search of it: a
speaker's memories contain their name, so some of them are among its matches.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from memorybank.core.relations import newest_updater
from memorybank.errors import ValidationError
from memorybank.model import Memory, MemoryFilter, ScopeSet, SearchHit
from memorybank.model.stored import Candidate
from memorybank.providers.embedders.base import Vectors
from memorybank.rules.intake import is_conversation
from memorybank.rules.query import neutral_query, speakers_named
from memorybank.rules.ranking import (
    Evidence,
    Neighbours,
    RetrievalSettings,
    fuse,
    gather,
    newest_first,
)
from memorybank.stores.base import Store

#: The query vector of a text (from the bank's query cache).
VectorOf = Callable[[str], Vectors]


def find(
    store: Store,
    vector_of: VectorOf,
    settings: RetrievalSettings,
    probes: Callable[[], Executor],
    scope_set: ScopeSet,
    query: str,
    k: int,
    filters: MemoryFilter,
) -> tuple[list[Candidate], list[Candidate]]:
    """Up to ``k`` vector and ``k`` text candidates for ``query`` in ``scope_set``.
    ``probes`` gives the executor that runs the speaker probe beside the vector search when
    the store's reads are round trips."""
    if not settings.speaker_weight:
        return store.hybrid_candidates(scope_set, vector_of(query), query, k, filters)
    vector_hits: list[Candidate] | None
    if store.remote_reads:
        # The probe runs beside the query's embedding and vector search, which the common
        # case (no speaker named) needs as they are: on PostgreSQL each is a round trip of
        # several milliseconds, so a search waits for the longer, not their sum. (In-process
        # SQLite reads take about a millisecond; there the thread handoff costs more.)
        job = probes().submit(store.text_search, scope_set, query, k, filters)
        try:
            vector_hits = store.vector_search(scope_set, vector_of(query), k, filters)
        except BaseException:
            job.cancel()
            raise
        probe: list[Candidate] = job.result()
    else:
        probe, vector_hits = store.text_search(scope_set, query, k, filters), None
    names = speakers_named(query, (c.speaker for c in probe))
    if not names:
        # The probe is the text search of the query as asked: keep it rather than run
        # it twice (most memories have no speaker, so this is the common case).
        if vector_hits is None:
            vector_hits = store.vector_search(scope_set, vector_of(query), k, filters)
        return vector_hits, probe
    asked = neutral_query(query, names)
    return store.hybrid_candidates(scope_set, vector_of(asked), asked, k, filters)


def neighbours(
    store: Store,
    settings: RetrievalSettings,
    scope_set: ScopeSet,
    filters: MemoryFilter,
    hits: Sequence[Candidate],
) -> dict[str, list[tuple[Candidate, int]]]:
    """Session neighbours of the conversation candidates, kept only if they meet the
    filters too (a neighbour joins the results)."""
    if not settings.neighbour_weight or not settings.neighbour_window:
        return {}
    ids = sorted({h.id for h in hits if h.session_id is not None})
    return store.neighbours(ids, scope_set, settings.neighbour_window, filters)


@dataclass(frozen=True, slots=True)
class Pool:
    """Where a search looks: the store, how to embed the query, the settings and the
    executor for the speaker probe (see :func:`find`)."""

    store: Store
    vector_of: VectorOf
    settings: RetrievalSettings
    probes: Callable[[], Executor]

    def collect(
        self, scope_set: ScopeSet, query: str, k: int, filters: MemoryFilter
    ) -> tuple[list[Candidate], list[Candidate], Neighbours]:
        """The vector and text candidates of ``query`` and their session neighbours."""
        vector_hits, text_hits = find(
            self.store, self.vector_of, self.settings, self.probes, scope_set, query, k, filters
        )
        # Only the best of each list pass relevance to their neighbours: what the others would
        # pass is small, and a neighbour of a better one is reached from it.
        reach = self.settings.neighbour_candidates
        hits = [*vector_hits[:reach], *text_hits[:reach]]
        return (
            vector_hits,
            text_hits,
            neighbours(self.store, self.settings, scope_set, filters, hits),
        )

    def evidence(
        self, scope_set: ScopeSet, query: str, filters: MemoryFilter, now: datetime
    ) -> list[Evidence]:
        """Every candidate's :class:`~memorybank.rules.ranking.Evidence` (what calibration is
        fitted on)."""
        vector_hits, text_hits, around = self.collect(
            scope_set, query, self.settings.candidates, filters
        )
        return gather(vector_hits, text_hits, self.settings, now, query=query, neighbours=around)

    def ranked(
        self,
        scope_set: ScopeSet,
        query: str,
        limit: int,
        filters: MemoryFilter,
        now: datetime,
        min_relevance: float = 0.0,
    ) -> list[SearchHit]:
        """The best ``limit`` hits with at least ``min_relevance``, best first, a fact that a
        newer one among them may update placed right after it (the relations judged when the
        newer was written: one read, no model).

        The first ``settings.candidates`` per signal are always ranked, whatever ``limit``,
        so the top k is a prefix of the top k + n. Only when more hits are asked for than that
        pool holds is a wider pool searched, for the hits after it.
        """
        if not 0.0 <= min_relevance <= 1.0:
            raise ValidationError(
                f"min_relevance {min_relevance} must be between 0 and 1", field="min_relevance"
            )
        k = self.settings.candidates
        # A replaced fact still answers what it answered: searched too, it hands its place to
        # the fact that replaced it (:meth:`_newest_first`), so a question worded like the old
        # value ("Where do I live?" / "User lives in Berlin") finds the new one.
        current = filters.superseded is False
        searched = filters.model_copy(update={"superseded": None}) if current else filters
        spare = RETIRED_SPARE if current else 0

        def rank(size: int, n: int) -> list[SearchHit]:
            vector_hits, text_hits, around = self.collect(scope_set, query, size, searched)
            return fuse(
                vector_hits,
                text_hits,
                self.settings,
                now,
                n + spare,
                query=query,
                neighbours=around,
                min_relevance=min_relevance,
            )

        hits = rank(k, limit)
        if len(hits) < limit and limit > k:
            seen = {h.memory.id for h in hits}
            wider = rank(limit * 3, limit * 3)
            hits = [*hits, *(h for h in wider if h.memory.id not in seen)][:limit]
        return self._newest_first(hits, scope_set, filters)[:limit]

    def _newest_first(
        self, hits: list[SearchHit], scope_set: ScopeSet, filters: MemoryFilter
    ) -> list[SearchHit]:
        """``hits`` with the newest fact that may update each older one right before it (the
        relations judged when the newer was written: one read, no model); one the search did
        not find joins there if it meets the search's filters. A replaced fact, when only
        current ones are asked for, leaves its place to the current fact that replaced it."""
        facts = [h.memory for h in hits if not is_conversation(h.memory.ring, h.memory.source)]
        if not facts:
            return hits
        retired = {m.id: m for m in facts if filters.superseded is False and m.superseded_by}
        live = [m.id for m in facts if m.id not in retired]
        around = self.store.updaters_of(live, scope_set) if live else []
        heads = newest_updater([m for _, m in around if filters.matches(m)], around)
        for old, successor in self._successors(list(retired.values()), scope_set).items():
            if successor is not None and filters.matches(successor):
                heads[old] = successor
        if not heads and not retired:
            return hits
        return newest_first(hits, heads, drop=set(retired))

    def _successors(
        self, replaced: Sequence[Memory], scope_set: ScopeSet
    ) -> dict[str, Memory | None]:
        """Each replaced fact's current successor (its chain of ``superseded_by`` followed to
        a current fact), or None when the chain ends in a deleted fact."""
        found: dict[str, Memory | None] = {}
        for memory in replaced:
            link: Memory | None = memory
            for _ in range(SUCCESSION_HOPS):
                if link is None or link.superseded_by is None:
                    break
                link = self.store.get(link.superseded_by, scope_set)
            found[memory.id] = link if link is not None and link.superseded_by is None else None
        return found


#: How many more hits a search of current facts ranks than it returns: the replaced facts
#: among them leave their places to their successors (or go).
RETIRED_SPARE = 10
#: How far a replaced fact's successors are followed (a fact replaced again and again).
SUCCESSION_HOPS = 8


class Probes:
    """The threads that run a search's speaker probe beside its vector search (see
    :func:`find`), started by the first search that needs one; :meth:`close` waits for
    those running. Calling it gives the executor (what :class:`Pool` takes as ``probes``)."""

    def __init__(self, threads: int = 4) -> None:
        self._threads = threads
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def __call__(self) -> Executor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self._threads, thread_name_prefix="memorybank-probe"
                )
            return self._pool

    @property
    def started(self) -> bool:
        """Whether its threads are running (from the first probe until :meth:`close`)."""
        return self._pool is not None

    def close(self) -> None:
        """Stop the threads, after the probes they run."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


__all__ = ["Pool", "Probes", "VectorOf", "find", "neighbours"]
