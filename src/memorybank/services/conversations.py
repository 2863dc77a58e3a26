"""Remember a conversation (seed 003's ``remember``): keep every turn, and distil lasting facts.

1. Every message is stored as it was said: an episodic conversation memory of the thread
   (``ring="episodic"``, ``source="conversation"``), so searches that include conversations
   find it.
2. Facts about the user are distilled from it:

   * without an LLM, the lasting statements in the user's own messages, said in passing or
     not ("we moved to Leeds last year", "my husband Emeka does the books"): a learned model
     over the bank's embedder's vectors picks them (:mod:`memorybank.services.in_passing`,
     :mod:`memorybank.rules.keep_model`), never questions, requests, hypotheticals or small
     talk; each is rephrased in the third person ("we" named: "User and their partner …"),
     dated when it dates itself, linked to its message (``metadata.from_memory``,
     ``from_message``, ``said``) and saved through ``bank.save``, whose judge refuses a fact
     said twice or already known. With an embedder the model was not trained for, only
     explicit statements count ("remember that …", "my name is …", "I prefer …");
   * with an LLM, the model extracts third-person facts with category and importance (its
     JSON is validated, and a bad answer is retried once with the error), then each fact is
     reconciled with the closest stored memories: ADD, UPDATE (merge into the old one),
     SUPERSEDE (store the new one, keep the old one marked ``superseded_by``) or NOOP. The
     model is asked only when :func:`~memorybank.rules.verdicts.needs_reconciling` says the
     closest is near enough; every fact saved meets the save's duplicate judge.

No fact is dropped silently: :class:`RememberResult` lists what was stored, updated,
superseded, skipped (with why), rejected by the policy (with why) and, without an LLM, the
pieces of the user's messages passed over as not lasting facts (with the model's probability).

Facts about the user are personal, so they go to the user's private scope even when the
caller names a project; a superseding fact goes where the fact it replaces lives.

>>> caller = Caller(user_id="sam")
>>> said = [{"role": "user", "content": "I prefer to work in the mornings"}]
>>> result = remember_conversation(bank, caller, said)
>>> [m.content for m in result.stored]
['User prefers to work in the mornings']
>>> print(render_remembered(result))  # doctest: +ELLIPSIS
Stored 1 memories
IDs: mem_...
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic import ValidationError as PydanticValidationError

from memorybank.errors import PermissionDenied, ProviderError, RateLimited, ValidationError
from memorybank.model import (
    Caller,
    Category,
    Conflict,
    Domain,
    Memory,
    Ring,
    SaveInput,
    SaveResult,
    SearchHit,
    Source,
)
from memorybank.model.times import StoredTime
from memorybank.providers.llm.client import JSONCompleter, complete_model
from memorybank.rules.permissions import Action, allowed, require
from memorybank.rules.pydantic_errors import reason
from memorybank.rules.quoted import without_marks
from memorybank.rules.render import sanitize_memory_text as _line
from memorybank.rules.said import confirms, explicit_category, sentences
from memorybank.rules.verdicts import THRESHOLDS, needs_reconciling
from memorybank.services.in_passing import Said, model_fits, weigh

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank


class Message(BaseModel):
    """One conversation message; ``time`` is when it was said, if the host knows."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["user", "assistant"]
    content: str
    time: StoredTime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Updated(BaseModel):
    """A stored memory a new fact refined in place."""

    memory_id: str
    old_content: str
    new_content: str


class Superseded(BaseModel):
    """A stored memory a new one replaced; the old one is kept, marked ``superseded_by``."""

    old_id: str
    new_id: str
    old_content: str
    new_content: str


class NotStored(BaseModel):
    """A fact that was not stored: skipped (already known) or rejected (by the policy)."""

    content: str
    reason: str
    existing_id: str | None = None


class RememberResult(BaseModel):
    """Everything :func:`remember` did. ``stored`` are new fact memories (not the turns)."""

    conversation_ids: list[str] = Field(default_factory=list)
    stored: list[Memory] = Field(default_factory=list)
    updated: list[Updated] = Field(default_factory=list)
    superseded: list[Superseded] = Field(default_factory=list)
    skipped: list[NotStored] = Field(default_factory=list)
    rejected: list[NotStored] = Field(default_factory=list)
    # Pieces of the user's messages judged not to be lasting facts (no LLM), with why.
    passed_over: list[NotStored] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    # Stored facts a new one may update or contradict (see SaveResult.conflicts).
    conflicts: list[Conflict] = Field(default_factory=list)


def remember_conversation(
    bank: MemoryBank,
    caller: Caller,
    messages: Sequence[Message | Mapping[str, Any]],
    *,
    context: str | None = None,
    llm: JSONCompleter | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> RememberResult:
    """Store the conversation's turns and the facts it states (see the module docs).

    ``llm`` defaults to ``bank.llm``; without either, the learned extraction (module docs).
    ``metadata`` is what every fact saved carries beside its link to the message (the host's
    own ids, such as mem0's ``agent_id``): given at the save, so no fact is changed after it.

    >>> caller = Caller(user_id="ana")
    >>> said = [{"role": "user", "content": "My name is Ana"}]
    >>> remember_conversation(bank, caller, said).stored[0].content
    "User's name is Ana"
    """
    turns = _parse_messages(messages)
    result = RememberResult()
    llm = llm if llm is not None else bank.llm
    extra = dict(metadata or {})
    # The user's messages are read before they are stored: the one pass that reads their
    # pieces also gives the vectors the bank stores the turns with.
    weighed = weigh(bank, turns) if llm is None and model_fits(bank) else None
    result.conversation_ids, turn_ids = _store_turns(bank, caller, turns, context)
    if llm is None:
        _keep_said(bank, caller, result, turns, turn_ids, weighed, extra)
        return result
    try:
        facts = _extract(llm, turns, context)
    except ProviderError as exc:
        result.warnings.append(
            f"fact extraction by the LLM failed ({exc}); kept what the user said without it"
        )
        weighed = weigh(bank, turns) if model_fits(bank) else None
        _keep_said(bank, caller, result, turns, turn_ids, weighed, extra)
        return result
    for fact in facts:
        _reconcile(bank, caller, llm, result, fact, extra)
    return result


def _parse_messages(messages: Sequence[Message | Mapping[str, Any]]) -> list[Message]:
    if isinstance(messages, str | bytes) or not messages:
        raise ValidationError(
            "messages must be a non-empty list of {role, content} objects", field="messages"
        )
    out = []
    for index, raw in enumerate(messages):
        try:
            out.append(raw if isinstance(raw, Message) else Message.model_validate(raw))
        except PydanticValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            raise ValidationError(
                f"messages[{index}].{where}: {reason(error)}", field="messages"
            ) from exc
    return out


def _store_turns(
    bank: MemoryBank, caller: Caller, turns: Sequence[Message], context: str | None
) -> tuple[list[str], list[str | None]]:
    """Each non-empty message as an episodic conversation memory (chunked by the bank): the
    stored ids, and the id of each message (its first chunk; ``None`` for an empty one).
    An assistant message the user's next one confirms ("yes, exactly") is marked
    ``confirmed``: only such an answer of the assistant may reach a later block
    (:mod:`memorybank.rules.quoted`)."""
    items = []
    for index, turn in enumerate(turns):
        if not turn.content.strip():
            continue
        # Who said it and whether it was confirmed are this function's word, never the
        # message's metadata (issue 44): without_marks drops a client's.
        metadata: dict[str, Any] = {
            **without_marks(turn.metadata),
            "role": turn.role,
            "message_index": index,
        }
        if turn.time is not None:
            metadata["time"] = turn.time.isoformat()
        if context:
            metadata["conversation_context"] = context
        following = turns[index + 1] if index + 1 < len(turns) else None
        if turn.role == "assistant" and following is not None and following.role == "user":
            if confirms(following.content):
                metadata["confirmed"] = True
        items.append(
            SaveInput(
                content=turn.content,
                category=Category.CONTEXT,
                ring=Ring.EPISODIC,
                source=Source.CONVERSATION,
                session_id=caller.thread_id,
                occurred_at=turn.time,
                metadata=metadata,
                created_by=caller.user_id,
            )
        )
    saved = bank.save_many(caller.user_id, items)
    ids: list[str | None] = [None] * len(turns)
    # A long message is stored as several chunks: its first one stands for it.
    for outcome in saved:
        said = outcome.memory.metadata.get("message_index") if outcome.memory else None
        if isinstance(said, int) and ids[said] is None:
            ids[said] = outcome.memory_id
    return [r.memory_id for r in saved if r.memory_id is not None], ids


def _keep_said(
    bank: MemoryBank,
    caller: Caller,
    result: RememberResult,
    turns: Sequence[Message],
    turn_ids: Sequence[str | None],
    weighed: tuple[list[Said], list[Said]] | None,
    extra: dict[str, Any],
) -> None:
    """Without an LLM: the facts the user stated in passing (``weighed`` by
    :func:`.in_passing.weigh`), each saved through ``bank.save`` (so a fact said twice, or
    already known, is judged a duplicate there and reported as skipped), linked to the
    message it came from; the pieces not kept are listed in ``result.passed_over``. With an
    embedder the shipped model was not trained for (``weighed`` is ``None``), only explicit
    statements count, and the result says so."""
    if weighed is None:
        result.warnings.append(
            f"the embedder {bank.embedder.model_id!r} is not the one the fact model was "
            "trained on; stored explicit statements only"
        )
        for sentence, category in explicit_statements(turns):
            _add(bank, caller, result, sentence, category, Source.USER, metadata=extra or None)
        return
    kept, passed = weighed
    facts = []
    for said in kept:
        turn = turns[said.message]
        link: dict[str, Any] = {**extra, "from_message": said.message, "said": said.piece}
        if turn_ids[said.message] is not None:
            link["from_memory"] = turn_ids[said.message]
        facts.append((said.fact, said.category, link, turn.time))
    _add_all(bank, caller, result, facts)
    result.passed_over += [
        NotStored(
            content=said.piece,
            reason=f"not a lasting fact (question, request, small talk or passing remark; "
            f"p={said.probability})",
        )
        for said in passed
    ]


# -- explicit statements (no LLM) -----------------------------------------------------------


def explicit_statements(turns: Sequence[Message]) -> list[tuple[str, Category]]:
    """The user's explicit statements about themselves, as (sentence, category).

    A sentence counts when it starts with "my name is", "I prefer", "I am"/"I'm" (not a
    passing state like "I'm not sure"), "I work", or asks to be remembered ("remember that",
    "don't forget"); the last kind takes the category the bank infers from its body unless
    the body is one of the others.

    >>> explicit_statements([Message(role="user", content="Hi! I prefer tea. It's cold.")])
    [('I prefer tea.', <Category.PREFERENCE: 'preference'>)]
    """
    found = []
    for turn in turns:
        if turn.role != "user":
            continue
        for sentence in sentences(turn.content):
            category = explicit_category(sentence)
            if category is not None:
                found.append((sentence, category))
    return found


def _add(
    bank: MemoryBank,
    caller: Caller,
    result: RememberResult,
    content: str,
    category: Category | str,
    source: Source,
    *,
    importance: int | None = None,
    domain: Domain | None = None,
    project_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    occurred_at: StoredTime | None = None,
) -> Memory | None:
    """Save one fact (the bank rephrases, validates and deduplicates it); record the
    outcome in ``result``. Returns the new memory, if one was stored."""
    try:
        saved = bank.save(
            caller.user_id,
            content,
            category,
            project_id=project_id,
            importance=importance,
            domain=domain,
            source=source,
            created_by=caller.user_id,
            metadata=_with_thread(caller, metadata),
            occurred_at=occurred_at,
            role=caller.role,
        )
    except (ValidationError, PermissionDenied, RateLimited) as exc:
        # Over the caller's write limit (a tool call charges each fact it stores), the fact
        # is reported as not stored; the turns, stored first, stay.
        result.rejected.append(NotStored(content=content, reason=str(exc)))
        return None
    return _record(result, saved)


def _add_all(
    bank: MemoryBank,
    caller: Caller,
    result: RememberResult,
    facts: Sequence[tuple[str, Category, dict[str, Any], StoredTime | None]],
) -> None:
    """Save the user's facts of one conversation (text, category, link to the message,
    time) as one batch: one embedding run and one transaction, in which each is judged
    against the stored facts and the ones before it (so a fact said twice is stored once).
    A batch the bank refuses whole (one invalid fact, the write limit) is saved one fact at a
    time, so that only the facts at fault are reported as not stored."""
    items = [
        SaveInput(
            content=content,
            category=category,
            source=Source.USER,
            created_by=caller.user_id,
            metadata=_with_thread(caller, link),
            occurred_at=time,
        )
        for content, category, link, time in facts
    ]
    if not items:
        return
    try:
        saved = bank.save_many(caller.user_id, items, role=caller.role)
    except (ValidationError, PermissionDenied, RateLimited):
        for content, category, link, time in facts:
            _add(
                bank,
                caller,
                result,
                content,
                category,
                Source.USER,
                metadata=link,
                occurred_at=time,
            )
        return
    for outcome in saved:
        _record(result, outcome)


def _record(result: RememberResult, saved: SaveResult) -> Memory | None:
    """Note one save's outcome in ``result``: stored (with what it replaced or may update)
    or skipped as a duplicate. Returns the new memory, if one was stored."""
    if saved.duplicate or saved.memory is None:
        result.skipped.append(
            NotStored(
                content=saved.content,
                reason=f"already stored as {saved.existing_id}",
                existing_id=saved.existing_id,
            )
        )
        return None
    result.stored.append(saved.memory)
    result.conflicts += saved.conflicts
    result.superseded += [
        Superseded(
            old_id=old.memory_id,
            new_id=saved.memory.id,
            old_content=old.content,
            new_content=saved.memory.content,
        )
        for old in saved.replaced
    ]
    return saved.memory


def _with_thread(caller: Caller, metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    if caller.thread_id is None:
        return metadata
    return {**(metadata or {}), "thread_id": caller.thread_id}


# -- with an LLM ----------------------------------------------------------------------------


class ExtractedFact(BaseModel):
    """One fact the LLM found, in the third person."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(description="One fact, third person, starting with 'User'")
    category: Category
    importance: int = Field(ge=1, le=10)
    domain: Domain | None


class Extraction(BaseModel):
    """The LLM's answer to the extraction prompt."""

    model_config = ConfigDict(extra="forbid")

    facts: list[ExtractedFact]


class Reconciliation(BaseModel):
    """The LLM's verdict on one new fact against the stored ones closest to it."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["ADD", "UPDATE", "SUPERSEDE", "NOOP"]
    target_id: str | None = Field(description="The existing memory acted on; null for ADD")
    content: str | None = Field(description="UPDATE only: the merged fact; else null")
    reason: str

    @model_validator(mode="after")
    def _complete(self) -> Reconciliation:
        if self.action != "ADD" and not self.target_id:
            raise ValueError(f"{self.action} needs the target_id of an existing memory")
        if self.action == "UPDATE" and not (self.content or "").strip():
            raise ValueError("UPDATE needs content: the merged fact")
        return self


_EXTRACT_PROMPT = """\
You extract long-term memories about the user from a conversation, to be recalled in later
conversations. Return only facts worth keeping: identity, preferences, relationships,
projects and lasting context. Rules:
- One fact per item: a full sentence in the third person that starts with "User" (for
  example "User prefers TypeScript"). Never write "I", "my", "we" or "our".
- Only what the user said or confirmed about themselves; not the assistant's suggestions,
  greetings, or anything trivial or temporary.
- category: identity, preference, relationship, project or context.
- importance from 1 to 10: identity 10, preference 9, relationship 8, project 7, context 5;
  +2 when the user asked you to remember it, -2 when vague or temporary.
- domain: work, finance, projects, goals, relationships, lifestyle, health, interests, or null.
Answer {"facts": []} when there is nothing worth keeping."""

_RECONCILE_PROMPT = """\
You keep a user's long-term memory consistent. Compare the NEW fact with the EXISTING
memories and choose one action:
- ADD: the new fact is about something else; store it too (target_id null).
- UPDATE: it adds detail to one existing memory that stays true; target_id is that memory
  and content is the merged fact, third person, starting with "User".
- SUPERSEDE: it contradicts or replaces one existing memory (the user changed their mind,
  moved, changed jobs); target_id is the replaced memory. The old memory is kept as history.
- NOOP: an existing memory already says this; target_id is that memory.
content is null unless the action is UPDATE. reason: one short sentence."""


def _transcript(turns: Sequence[Message], context: str | None) -> str:
    lines = [f"Context: {context}", ""] if context else []
    lines += [f"{t.role}: {t.content}" for t in turns if t.content.strip()]
    return "\n".join(lines)


def _extract(
    llm: JSONCompleter, turns: Sequence[Message], context: str | None
) -> list[ExtractedFact]:
    messages = [
        {"role": "system", "content": _EXTRACT_PROMPT},
        {"role": "user", "content": _transcript(turns, context)},
    ]
    return complete_model(llm, messages, Extraction).facts


def _neighbours(bank: MemoryBank, ctx: Caller, fact: ExtractedFact) -> list[SearchHit]:
    """The stored facts closest to ``fact``: current semantic/procedural memories only (not
    conversation turns, decisions or superseded facts)."""
    hits = bank.search(
        ctx.user_id,
        fact.content,
        project_id=ctx.project_id,
        limit=THRESHOLDS.candidates,
        ring=[Ring.SEMANTIC, Ring.PROCEDURAL],
    )
    return [h for h in hits if h.memory.superseded_by is None and h.memory.decision is None]


def _reconcile(
    bank: MemoryBank,
    ctx: Caller,
    llm: JSONCompleter,
    result: RememberResult,
    fact: ExtractedFact,
    extra: dict[str, Any],
) -> None:
    hits = _neighbours(bank, ctx, fact)
    best = max((h.vector_similarity or 0.0 for h in hits), default=0.0)
    # Clear cases need no model: nothing close is added, and a near copy is left to the
    # save's duplicate judge, which reports it as skipped (or as a conflict).
    if not needs_reconciling(best):
        verdict = Reconciliation(action="ADD", target_id=None, content=None, reason="")
    else:
        try:
            verdict = _ask_verdict(llm, fact, hits)
        except ProviderError as exc:
            result.warnings.append(
                f"could not compare {fact.content!r} with stored facts ({exc}); added it"
            )
            verdict = Reconciliation(action="ADD", target_id=None, content=None, reason="")
    targets = {h.memory.id: h.memory for h in hits}
    target = targets.get(verdict.target_id or "")
    if verdict.action in ("UPDATE", "SUPERSEDE") and target is not None:
        target = _changeable(ctx, result, fact, target)
    if verdict.action == "ADD" or target is None:
        _add_fact(bank, ctx, result, fact, None, extra)
    elif verdict.action == "NOOP":
        result.skipped.append(
            NotStored(
                content=fact.content,
                reason=f"already known: {verdict.reason}",
                existing_id=target.id,
            )
        )
    elif verdict.action == "UPDATE":
        _update(bank, ctx, result, fact, target, verdict.content or fact.content)
    else:
        _supersede(bank, ctx, result, fact, target, extra)


def _changeable(
    caller: Caller, result: RememberResult, fact: ExtractedFact, target: Memory
) -> Memory | None:
    """``target`` if the caller may change it; ``None`` (the fact is then added as the
    caller's own, and the result says why) for a project memory the caller's role may not
    change. The model decides what a new fact does to old ones, never who may change what:
    a member's assistant adds to shared memory, it does not rewrite or hide it (seed 002)."""
    if allowed(caller.role, Action.CHANGE) or target.project_id is None:
        return target
    result.warnings.append(
        f"{target.id} is shared memory of project {target.project_id!r}, which only its "
        f"admins and owners may change; saved {fact.content!r} as the user's own memory"
    )
    return None


def _ask_verdict(
    llm: JSONCompleter, fact: ExtractedFact, hits: Sequence[SearchHit]
) -> Reconciliation:
    # Stored facts (other members' too) reach this model as data: one inert line each.
    existing = "\n".join(f"- {h.memory.id}: {_line(h.memory.content)}" for h in hits)
    messages = [
        {"role": "system", "content": _RECONCILE_PROMPT},
        {"role": "user", "content": f"NEW fact: {fact.content}\n\nEXISTING memories:\n{existing}"},
    ]
    ids = {h.memory.id for h in hits}

    def known_target(verdict: Reconciliation) -> None:
        if verdict.action != "ADD" and verdict.target_id not in ids:
            raise ValueError(
                f"target_id {verdict.target_id!r} is not one of the existing memories "
                f"({', '.join(sorted(ids))})"
            )

    return complete_model(llm, messages, Reconciliation, check=known_target)


def _add_fact(
    bank: MemoryBank,
    caller: Caller,
    result: RememberResult,
    fact: ExtractedFact,
    project_id: str | None,
    extra: dict[str, Any],
) -> Memory | None:
    return _add(
        bank,
        caller,
        result,
        fact.content,
        fact.category,
        Source.AI,
        importance=fact.importance,
        domain=fact.domain,
        project_id=project_id,
        metadata=extra or None,
    )


def _update(
    bank: MemoryBank,
    caller: Caller,
    result: RememberResult,
    fact: ExtractedFact,
    target: Memory,
    content: str,
) -> None:
    try:
        changed = bank.update(
            target.id,
            caller.user_id,
            project_id=target.project_id,
            content=content,
            importance=max(target.importance, fact.importance),
            role=caller.role,
        )
    except (ValidationError, PermissionDenied) as exc:
        result.rejected.append(NotStored(content=content, reason=str(exc), existing_id=target.id))
        return
    result.updated.append(
        Updated(memory_id=target.id, old_content=target.content, new_content=changed.content)
    )


def _supersede(
    bank: MemoryBank,
    caller: Caller,
    result: RememberResult,
    fact: ExtractedFact,
    old: Memory,
    extra: dict[str, Any],
) -> None:
    """Store the new fact where the old one lives, then mark the old one replaced.

    Two transactions, new first: a failure in between leaves both current, never neither.
    A caller who may not change the old fact's scope (a project member) gets neither.
    """
    try:
        require(caller.role, Action.CHANGE, old.project_id)
    except PermissionDenied as exc:
        result.rejected.append(NotStored(content=fact.content, reason=str(exc), existing_id=old.id))
        return
    new = _add_fact(bank, caller, result, fact, old.project_id, extra)
    if new is None:
        return
    bank.supersede(
        old.id,
        new.id,
        caller.user_id,
        project_id=old.project_id,
        actor=caller.user_id,
        role=caller.role,
    )
    result.superseded.append(
        Superseded(old_id=old.id, new_id=new.id, old_content=old.content, new_content=new.content)
    )


# -- the seed's text ------------------------------------------------------------------------


def render_remembered(result: RememberResult) -> str:
    """Seed 003's answer: "Stored N memories" and their ids, then anything else that happened.

    >>> render_remembered(RememberResult())
    'Stored 0 memories\\nIDs: (none)'
    """
    ids = ", ".join(m.id for m in result.stored) or "(none)"
    lines = [f"Stored {len(result.stored)} memories", f"IDs: {ids}"]
    # Stored text (another member's, for a conflict or a superseded fact) and reasons that
    # quote it are read by the model: each through the one sanitiser, as one line.
    for up in result.updated:
        lines.append(f"Updated {up.memory_id}: {_line(up.new_content)}")
    for sup in result.superseded:
        lines.append(f"Superseded {sup.old_id} by {sup.new_id}: {_line(sup.old_content)}")
    for item in result.skipped:
        lines.append(f"Skipped: {_line(item.content)} ({_line(item.reason)})")
    for item in result.rejected:
        lines.append(f"Rejected: {_line(item.content)} ({_line(item.reason)})")
    superseded = {sup.old_id for sup in result.superseded}
    for conflict in result.conflicts:
        if conflict.memory_id not in superseded:
            lines.append(f"May conflict with {conflict.memory_id}: {_line(conflict.content)}")
    if result.passed_over:
        lines.append(f"Passed over {len(result.passed_over)} pieces that are not lasting facts")
    lines += [f"Note: {_line(w)}" for w in result.warnings]
    return "\n".join(lines)


__all__ = [
    "ExtractedFact",
    "Extraction",
    "Message",
    "NotStored",
    "Reconciliation",
    "RememberResult",
    "Superseded",
    "Updated",
    "explicit_statements",
    "remember_conversation",
    "render_remembered",
]
