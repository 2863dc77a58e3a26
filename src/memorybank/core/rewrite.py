"""A replacement never duplicates (issue 26): rewriting stored fact X to a text that another
stored fact Y already says merges X into Y instead.

Y is kept and X is superseded by it, because Y already says the new text and X's own text is
the outdated one: nothing is rewritten, X keeps its old words in its row and history (so
:meth:`~memorybank.MemoryBank.restore` brings back exactly what was stored), and one fact is
left in search and the prompt. Both get a MERGE history event, as consolidation writes (no
text: the link is ``superseded_by``).
"""

from __future__ import annotations

from memorybank.model import (
    Channel,
    EventKind,
    HistoryEvent,
    Memory,
    MemoryFilter,
    ScopeSet,
    utcnow,
)
from memorybank.providers.embedders.base import Vectors
from memorybank.rules.render import FACT_SOURCES
from memorybank.rules.verdicts import THRESHOLDS, Judge, Relation, is_candidate, verdict
from memorybank.stores.base import Store


def already_said(
    store: Store, judge: Judge, memory: Memory, content: str, vector: Vectors
) -> Memory | None:
    """The current fact of ``memory``'s scope, other than ``memory``, that already says
    ``content`` (``judge`` calls ``content`` a duplicate of it, as a save would), nearest
    first; else None. Conversation turns are not facts: a fact is never merged into what was
    said."""
    current_facts = MemoryFilter(superseded=False, source=FACT_SOURCES)
    nearest = store.vector_search(
        ScopeSet.of(memory.scope), vector, THRESHOLDS.candidates, current_facts
    )
    others = [
        c.memory
        for c in nearest
        if c.memory.id != memory.id and c.memory.scope == memory.scope and is_candidate(c.score)
    ]
    scores = judge.score([(other.content, content) for other in others]) if others else []
    for other, score in zip(others, scores, strict=True):
        if verdict(score, content, other.content).relation is Relation.DUPLICATE:
            return other
    return None


def mark_superseded(
    store: Store,
    old: Memory,
    newer_id: str,
    actor: str,
    *,
    kind: EventKind = EventKind.SUPERSEDE,
    channel: Channel | None = None,
) -> Memory:
    """Store ``old`` as replaced by memory ``newer_id``, with a ``kind`` history event (SUPERSEDE,
    or MERGE for a merge); returns it marked. The event names no text: the link is
    ``superseded_by``, and forgetting the newer memory must not leave its words in ``old``'s
    history."""
    marked = old.model_copy(update={"superseded_by": newer_id, "updated_at": utcnow()})
    store.replace(marked, None, HistoryEvent.about(old, kind, actor, channel=channel))
    return marked


def merge_into(store: Store, merged: Memory, kept: Memory, actor: str) -> Memory:
    """Supersede ``merged`` by ``kept``, with a MERGE history event on each; returns ``kept``."""
    mark_superseded(store, merged, kept.id, actor, kind=EventKind.MERGE)
    store.replace(kept, None, HistoryEvent.about(kept, EventKind.MERGE, actor))
    return kept


def unsupersede(store: Store, old: Memory, actor: str) -> Memory:
    """``old`` back in search and the prompt: ``superseded_by`` cleared, with an UPDATE history
    event whose text is unchanged (``restore``); the memory that replaced it stays."""
    back = old.model_copy(update={"superseded_by": None, "updated_at": utcnow()})
    event = HistoryEvent.about(
        old, EventKind.UPDATE, actor, old_content=old.content, new_content=old.content
    )
    store.replace(back, None, event)
    return back


__all__ = ["already_said", "mark_superseded", "merge_into", "unsupersede"]
