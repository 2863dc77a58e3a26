"""What a caller asks to save, turned into the :class:`~memorybank.model.Memory` records the
bank stores: seed 000's rules for facts (validation, third person, importance), and
conversation turns stored as said, split into chunks when long.

>>> from memorybank.rules.policy import PolicySettings
>>> [(m.content, dedup) for m, dedup, _ in prepare(
...     SaveInput(content="I prefer TypeScript", category="preference"),
...     "u1", None, PolicySettings(), "test-model")]
[('User prefers TypeScript', True)]
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from memorybank.errors import ValidationError
from memorybank.model import (
    Category,
    Conflict,
    EventKind,
    HistoryEvent,
    Memory,
    Ring,
    SaveInput,
    SaveResult,
    Source,
    new_id,
    utcnow,
)
from memorybank.model.stored import InsertOutcome, Related
from memorybank.rules.inputs import check_not_future
from memorybank.rules.policy import (
    PolicySettings,
    infer_category,
    score_importance,
    to_third_person,
    validate_memory,
    validate_turn,
)
from memorybank.rules.pydantic_errors import pydantic_message

#: The importance of a conversation turn saved without one.
CONVERSATION_IMPORTANCE = 5

#: One record to store: (memory, check it for duplicates?, was it rephrased?).
Prepared = tuple[Memory, bool, bool]


def chunk_text(text: str, limit: int) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` characters, at sentence or word
    boundaries where possible.

    >>> chunk_text("One two. Three four five.", 12)
    ['One two.', 'Three four', 'five.']
    """
    text = text.strip()
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    while len(text) > limit:
        window = text[:limit]
        cut = max(window.rfind(". "), window.rfind("! "), window.rfind("? "), window.rfind("\n"))
        if cut < limit // 2:
            cut = window.rfind(" ")
        cut = cut + 1 if cut >= limit // 4 else limit
        pieces.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        pieces.append(text)
    return pieces


def is_conversation(ring: Ring, source: Source) -> bool:
    """Whether a memory (or an input to save) with this ``ring`` and ``source`` is a
    conversation turn, stored as said, rather than a fact: the one test every layer uses.

    >>> is_conversation(Ring.EPISODIC, Source.CONVERSATION)
    True
    >>> is_conversation(Ring.EPISODIC, Source.AI)
    False
    """
    return ring == Ring.EPISODIC and source == Source.CONVERSATION


def _text(item: SaveInput, policy: PolicySettings) -> tuple[list[str], Any, bool]:
    """(chunks, category, rephrased?) for one input."""
    if is_conversation(item.ring, item.source):
        # Stored as said, but with a fact's limits on everything else: a turn's metadata went
        # unchecked, and 300 levels of it stored fine and then failed every read of the scope.
        text, category = validate_turn(
            item.content,
            Category.CONTEXT if item.category is None else item.category,
            reasoning=item.reasoning,
            tags=item.tags,
            metadata=dict(item.metadata or {}),
            importance=item.importance,
            settings=policy,
        )
        return chunk_text(text, policy.content_max), category, False
    text, category = validate_memory(
        item.content,
        infer_category(item.content) if item.category is None else item.category,
        reasoning=item.reasoning,
        tags=item.tags,
        metadata=dict(item.metadata or {}),
        importance=item.importance,
        settings=policy,
    )
    third = to_third_person(text)
    text, category = validate_memory(third.text, category, settings=policy)
    return [text], category, third.rephrased


def prepare(
    item: SaveInput,
    user_id: str,
    project_id: str | None,
    policy: PolicySettings,
    model_id: str,
) -> list[Prepared]:
    """The records one input becomes, each with whether to check it for duplicates and
    whether its text was rephrased. Invalid input raises :class:`~memorybank.ValidationError`."""
    conversation = is_conversation(item.ring, item.source)
    chunks, category, rephrased = _text(item, policy)
    now = utcnow()
    check_not_future(item.created_at, now, "created_at")
    if item.importance is not None:
        importance = item.importance
    elif conversation:
        # Seed 000's rules score facts; on raw chat turns they only add noise to ranking,
        # so a message is of middling importance unless the caller says otherwise.
        importance = CONVERSATION_IMPORTANCE
    else:
        importance = score_importance(item.content, category)
    out: list[Prepared] = []
    for index, chunk in enumerate(chunks):
        metadata = dict(item.metadata or {})
        if len(chunks) > 1:
            metadata.update(chunk=index, chunks=len(chunks))
        memory = Memory(
            user_id=user_id,
            project_id=project_id,
            content=chunk,
            category=category,
            ring=item.ring,
            domain=item.domain,
            tags=tuple(item.tags),
            metadata=metadata,
            importance=importance,
            source=item.source,
            created_by=item.created_by or user_id,
            reasoning=item.reasoning,
            session_id=item.session_id,
            created_at=item.created_at or now,
            updated_at=now,
            occurred_at=item.occurred_at,
            embedding_model=model_id,
        )
        out.append((memory, not conversation, rephrased))
    return out


def stored(memory: Memory, rephrased: bool = False) -> SaveResult:
    """What a save answers for a memory it stored."""
    return SaveResult(
        success=True,
        memory_id=memory.id,
        content=memory.content,
        category=memory.category,
        importance=memory.importance,
        rephrased=rephrased,
        memory=memory,
    )


def replaces_any(new: Memory, olds: Sequence[tuple[Memory, float]]) -> list[bool]:
    """``on_conflict="supersede"``: a new fact replaces every stored one it may conflict with."""
    return [True] * len(olds)


def _conflict(related: Related) -> Conflict:
    old = related.memory
    return Conflict(
        memory_id=old.id, content=old.content, why=related.why, similarity=related.similarity
    )


def save_result(memory: Memory, outcome: InsertOutcome, rephrased: bool) -> SaveResult:
    """What a save answers: the stored memory, the stored fact it restated (now in its
    wording), or the duplicate that kept it out."""
    if outcome.inserted:
        result = stored(memory, rephrased)
        if not outcome.conflicts and not outcome.superseded:
            return result
        return result.model_copy(
            update={
                "conflicts": [_conflict(c) for c in outcome.conflicts],
                "replaced": [_conflict(c) for c in outcome.superseded],
            }
        )
    existing = outcome.duplicate_of
    if outcome.restated is not None and existing is not None:
        return SaveResult(
            success=True,
            memory_id=existing.id,
            content=outcome.restated.content,
            category=outcome.restated.category,
            importance=outcome.restated.importance,
            existing_id=existing.id,
            existing_content=existing.content,
            similarity=outcome.similarity,
            rephrased=rephrased,
            memory=outcome.restated,
            restated=True,
        )
    return SaveResult(
        success=False,
        duplicate=True,
        content=memory.content,
        category=memory.category,
        existing_id=None if existing is None else existing.id,
        existing_content=None if existing is None else existing.content,
        similarity=outcome.similarity,
        rephrased=rephrased,
    )


def restatement(stored: Memory, new: Memory) -> tuple[Memory, HistoryEvent]:
    """``stored`` in ``new``'s words (a probable duplicate restates it), and the UPDATE event
    that keeps its earlier wording.

    >>> old = Memory(user_id="u", content="User runs a shop in Kumasi", category="context")
    >>> new = Memory(user_id="u", content="User owns a shop in Kumasi", category="context")
    >>> restated, event = restatement(old, new)
    >>> (restated.id == old.id, restated.content, event.old_content)
    (True, 'User owns a shop in Kumasi', 'User runs a shop in Kumasi')
    """
    changed = {
        "content": new.content,
        "updated_at": utcnow(),
        "embedding_model": new.embedding_model,
    }
    actor = new.created_by or new.user_id
    event = HistoryEvent.about(
        stored, EventKind.UPDATE, actor, old_content=stored.content, new_content=new.content
    )
    return stored.model_copy(update=changed), event


def imported(
    memories: Sequence[Memory],
    taken: Collection[str],
    present: Mapping[tuple[str, datetime], str],
    user_id: str,
    project_id: str | None,
    *,
    keep_ids: bool = True,
    author: str | None = None,
) -> tuple[list[SaveResult], list[Memory]]:
    """An import's records for ``user_id`` (and ``project_id``): what it skips (``present``:
    the id of each (content, created_at) the scope holds, imported before) and the records
    to store.

    With ``keep_ids`` (the host application restoring its own data) a record keeps its id
    unless the id is ``taken`` (someone else's copy) or used by an earlier item of the same
    document. Without it (a user's import) every record gets a new id: keeping the free ones
    and replacing the taken ones answered whether an id existed in another user's memory.
    ``author``, when given (a user's import: the importer), is every record's
    ``created_by``: who said a thing is the server's word, never the document's (issue 44:
    a turn imported as the project owner's was quoted in her block as her own words).
    """
    results: list[SaveResult] = []
    fresh: list[Memory] = []
    claimed = set(taken)  # an id twice in one document is taken by its first use
    for memory in memories:
        held = present.get((memory.content, memory.created_at))
        if held is not None:
            results.append(skipped(memory.model_copy(update={"id": held})))
            continue
        update: dict[str, Any] = {"user_id": user_id, "project_id": project_id}
        if author is not None:
            update["created_by"] = author
        if not keep_ids or memory.id in claimed:
            update["id"] = new_id("mem")
        claimed.add(update.get("id", memory.id))
        fresh.append(memory.model_copy(update=update))
    return results, fresh


def skipped(memory: Memory) -> SaveResult:
    """What an import answers for a memory it already holds."""
    return SaveResult(
        success=False,
        duplicate=True,
        content=memory.content,
        category=memory.category,
        existing_id=memory.id,
        existing_content=memory.content,
    )


def prepare_batch(
    batch: Iterable[SaveInput | Mapping[str, Any]],
    user_id: str,
    project_id: str | None,
    policy: PolicySettings,
    model_id: str,
) -> list[Prepared]:
    """The records a batch of inputs becomes (:func:`prepare` of each, in order). An invalid
    item is a :class:`~memorybank.ValidationError` naming its index when there are several,
    so nothing of the batch is stored."""
    items = list(batch)
    out: list[Prepared] = []
    for index, raw in enumerate(items):
        where = f"item {index}: " if len(items) > 1 else ""
        try:
            item = raw if isinstance(raw, SaveInput) else SaveInput.model_validate(raw)
            out += prepare(item, user_id, project_id, policy, model_id)
        except ValidationError as exc:
            raise ValidationError(f"{where}{exc}", field=exc.field) from exc
        except PydanticValidationError as exc:
            raise ValidationError(where + pydantic_message(exc)) from exc
    return out


__all__ = [
    "CONVERSATION_IMPORTANCE",
    "chunk_text",
    "imported",
    "is_conversation",
    "replaces_any",
    "prepare",
    "prepare_batch",
    "save_result",
    "skipped",
    "stored",
]
