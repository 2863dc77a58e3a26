"""A replacement never duplicates (issue 26): rewriting stored fact X to a text that another
stored fact Y already says merges X into Y instead.

Y is kept and X is superseded by it, because Y already says the new text and X's own text is
the outdated one: nothing is rewritten, X keeps its old words in its row and history (so
:meth:`~memorybank.MemoryBank.restore` brings back exactly what was stored), and one fact is
left in search and the prompt. Both get a MERGE history event, as consolidation writes (no
text: the link is ``superseded_by``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memorybank.errors import NotFound, StoreError, ValidationError
from memorybank.model import (
    Category,
    Channel,
    EventKind,
    HistoryEvent,
    Memory,
    MemoryFilter,
    ScopeSet,
    utcnow,
)
from memorybank.model.stored import Related
from memorybank.providers.embedders.base import Embedder, Vectors
from memorybank.rules.intake import is_conversation
from memorybank.rules.policy import PolicySettings, to_third_person, validate_memory, validate_turn
from memorybank.rules.render import FACT_SOURCES
from memorybank.rules.verdicts import (
    THRESHOLDS,
    Judge,
    Relation,
    is_candidate,
    judge_version,
    verdict,
)
from memorybank.stores.base import Store


@dataclass(frozen=True)
class Changes:
    """What an edit (:meth:`~memorybank.MemoryBank.update`) asks to change; None keeps a field."""

    content: str | None = None
    category: Category | str | None = None
    tags: Sequence[str] | None = None
    metadata: Mapping[str, Any] | None = None
    importance: int | None = None


def edited(old: Memory, changes: Changes, policy: PolicySettings, model_id: str) -> Memory:
    """``old`` with ``changes`` applied, re-validated as a save would be (a conversation turn
    keeps its words within a stored piece's length; a fact's new text is put in the third
    person)."""
    conversation = is_conversation(old.ring, old.source)
    content = old.content if changes.content is None else changes.content
    category = old.category if changes.category is None else changes.category
    checks: dict[str, Any] = {
        "tags": changes.tags or (),
        "metadata": None if changes.metadata is None else dict(changes.metadata),
        "importance": changes.importance,
        "settings": policy,
    }
    if conversation:
        content, category = validate_turn(content, category, maximum=policy.content_max, **checks)
    else:
        content, category = validate_memory(content, category, **checks)
        if changes.content is not None:
            content = to_third_person(content).text
    return old.model_copy(
        update={
            "content": content,
            "category": category,
            "tags": old.tags if changes.tags is None else tuple(changes.tags),
            "metadata": old.metadata if changes.metadata is None else dict(changes.metadata),
            "importance": old.importance if changes.importance is None else changes.importance,
            "updated_at": utcnow(),
            "embedding_model": model_id,
        }
    )


def judged_edit(
    store: Store, judge: Judge, memory: Memory, content: str, vector: Vectors
) -> tuple[Memory | None, list[Related]]:
    """How ``content``, the new text of ``memory``, relates to the other current facts of its
    scope, nearest first, as a save would judge it: the fact that already says it (then the
    edit merges into that one), else the facts it may update (kept as its relations; an
    edited fact is said now, so it is the newer of each pair). Conversation turns are not
    facts: a fact is never merged into what was said."""
    current_facts = MemoryFilter(superseded=False, source=FACT_SOURCES)
    nearest = store.vector_search(
        ScopeSet.of(memory.scope), vector, THRESHOLDS.candidates, current_facts
    )
    others = [
        (c.memory, float(c.score))
        for c in nearest
        if c.memory.id != memory.id and c.memory.scope == memory.scope and is_candidate(c.score)
    ]
    scores = judge.score([(other.content, content) for other, _ in others]) if others else []
    version = judge_version(judge)
    related: list[Related] = []
    for (other, similarity), score in zip(others, scores, strict=True):
        said = verdict(score, content, other.content, similarity)
        if said.relation in (Relation.DUPLICATE, Relation.RESTATED):
            return other, []
        if said.relation is Relation.CONFLICT:
            related.append(Related(other, similarity, said.why, said.probabilities, version))
    return None, related


#: How often a read-modify-write of one memory is tried when another change got there first.
ATTEMPTS = 5

Attempt = Callable[[Memory], "Memory | None"]


def compare_and_set(store: Store, first: Memory, attempt: Attempt) -> Memory:
    """Run ``attempt`` on ``first`` (a memory as read), which writes with
    ``store.replace(..., expected=read.updated_at)`` and returns the result, or None when the row
    changed since it was read; then the memory is read again and ``attempt`` runs on that. So a
    change is always made to what is stored now, and a concurrent edit, supersession or restore
    is never silently undone by writing back every column of an older read."""
    current = first
    for _ in range(ATTEMPTS):
        done = attempt(current)
        if done is not None:
            return done
        fresh = store.get(current.id, ScopeSet.of(current.scope))
        if fresh is None:
            raise NotFound(f"no memory {current.id!r}")
        current = fresh
    raise StoreError(f"memory {current.id!r} kept changing while it was being changed; try again")


def check_link(store: Store, old: Memory, newer: Memory, scopes: ScopeSet) -> None:
    """Refuse to mark ``old`` superseded by ``newer`` when that makes a loop: ``newer`` is
    ``old`` itself, or ``newer`` is already replaced, through its chain of newer memories, by
    ``old``. Either way both would leave search and the prompt, with nothing current left."""
    if newer.id == old.id:
        raise ValidationError(
            f"memory {old.id!r} cannot supersede itself; name the newer memory that replaces it",
            field="newer_id",
        )
    seen = {old.id}
    link = newer
    while link.superseded_by is not None:
        if link.superseded_by in seen:
            raise ValidationError(
                f"memory {newer.id!r} is already replaced (through {link.id!r}) by "
                f"{link.superseded_by!r}: superseding {old.id!r} by it would make a cycle in "
                "which no fact stays current; restore one of them first",
                field="newer_id",
            )
        seen.add(link.id)
        following = store.get(link.superseded_by, scopes)
        if following is None:
            return
        link = following


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

    def attempt(current: Memory) -> Memory | None:
        marked = current.model_copy(update={"superseded_by": newer_id, "updated_at": utcnow()})
        event = HistoryEvent.about(current, kind, actor, channel=channel)
        return marked if store.replace(marked, None, event, expected=current.updated_at) else None

    return compare_and_set(store, old, attempt)


def merge_into(store: Store, merged: Memory, kept: Memory, actor: str) -> Memory:
    """Supersede ``merged`` by ``kept``, with a MERGE history event on each; returns ``kept``."""
    mark_superseded(store, merged, kept.id, actor, kind=EventKind.MERGE)

    def attempt(current: Memory) -> Memory | None:
        event = HistoryEvent.about(current, EventKind.MERGE, actor)
        return current if store.replace(current, None, event, expected=current.updated_at) else None

    return compare_and_set(store, kept, attempt)


def unsupersede(store: Store, old: Memory, actor: str) -> Memory:
    """``old`` back in search and the prompt: ``superseded_by`` cleared, with an UPDATE history
    event whose text is unchanged (``restore``); the memory that replaced it stays."""

    def attempt(current: Memory) -> Memory | None:
        if current.superseded_by is None:
            return current
        back = current.model_copy(update={"superseded_by": None, "updated_at": utcnow()})
        event = HistoryEvent.about(
            current,
            EventKind.UPDATE,
            actor,
            old_content=current.content,
            new_content=current.content,
        )
        return back if store.replace(back, None, event, expected=current.updated_at) else None

    return compare_and_set(store, old, attempt)


def apply_changes(
    store: Store,
    judge: Judge,
    embedder: Embedder,
    policy: PolicySettings,
    changes: Changes,
    actor: str,
    old: Memory,
) -> Memory | None:
    """One attempt of an edit (:func:`compare_and_set` runs it on the memory as stored):
    ``old`` with ``changes`` written over it, re-embedded when its text changed; a fact whose
    new text another current fact already says is merged into that one, which is returned.
    None when ``old`` changed since it was read."""
    changed = edited(old, changes, policy, embedder.model_id)
    vector = embedder.embed([changed.content])[0] if changed.content != old.content else None
    fact = not is_conversation(old.ring, old.source)
    same: Memory | None = None
    related: list[Related] = []
    if vector is not None and fact:
        same, related = judged_edit(store, judge, old, changed.content, vector)
    if same is not None:
        return merge_into(store, old, same, actor)
    event = HistoryEvent.about(
        old, EventKind.UPDATE, actor, old_content=old.content, new_content=changed.content
    )
    if not store.replace(changed, vector, event, expected=old.updated_at):
        return None
    if vector is not None and fact:
        store.relate([(changed, related)], restated=True)
    return changed


__all__ = [
    "ATTEMPTS",
    "Changes",
    "edited",
    "judged_edit",
    "apply_changes",
    "check_link",
    "compare_and_set",
    "mark_superseded",
    "merge_into",
    "unsupersede",
]
