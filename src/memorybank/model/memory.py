"""Core records: plain typed values with no I/O.

Stores return these, never loose dicts; adapters convert them to their own response shapes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field
from ulid import ULID

from memorybank.errors import NotFound, ValidationError
from memorybank.model.times import StoredTime


class Category(StrEnum):
    """What kind of fact a memory is (seed 000). Drives base importance and pre-loading."""

    IDENTITY = "identity"
    PREFERENCE = "preference"
    RELATIONSHIP = "relationship"
    PROJECT = "project"
    CONTEXT = "context"


class Ring(StrEnum):
    """Memory type (seed 003): lasting facts, things that happened, how-to knowledge."""

    SEMANTIC = "semantic"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"


class Domain(StrEnum):
    """Life domain of a memory (seed 003)."""

    WORK = "work"
    FINANCE = "finance"
    PROJECTS = "projects"
    GOALS = "goals"
    RELATIONSHIPS = "relationships"
    LIFESTYLE = "lifestyle"
    HEALTH = "health"
    INTERESTS = "interests"


class Source(StrEnum):
    """Who or what produced a memory: an assistant's tool call (``ai``, the library's default),
    an app over the REST API (``api``, that API's default), a person by hand, an import, or a
    conversation turn kept as it was said."""

    AI = "ai"
    API = "api"
    USER = "user"
    IMPORT = "import"
    CONVERSATION = "conversation"


class EventKind(StrEnum):
    """Kinds of history events. DELETE, CLEAR and FORGET are tombstones (no text): a memory
    deleted one by one, with the rest of its scope, or by a forget plan."""

    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    # The memory was replaced by a newer one; it stays stored, linked via ``superseded_by``.
    SUPERSEDE = "SUPERSEDE"
    # Consolidation merged duplicates: on the kept memory, and on each one merged into it
    # (which is superseded by the kept one).
    MERGE = "MERGE"
    CLEAR = "CLEAR"
    FORGET = "FORGET"


class Channel(StrEnum):
    """Through what a change was made: the user by hand (the UI, REST, the CLI), the AI's
    tools (the tools API, MCP), an import, or consolidation."""

    USER = "user"
    AI = "ai"
    IMPORT = "import"
    CONSOLIDATION = "consolidation"


# The channel of the changes made in the current context; unset: USER, or for a new memory
# the channel its source implies. The tools dispatcher sets AI around a tool call.
_channel: ContextVar[Channel | None] = ContextVar("memorybank_channel", default=None)


@contextmanager
def acting_through(channel: Channel) -> Iterator[None]:
    """Record the changes made inside as made through ``channel``.

    >>> with acting_through(Channel.AI):
    ...     current_channel()
    <Channel.AI: 'ai'>
    >>> current_channel() is None
    True
    """
    token = _channel.set(channel)
    try:
        yield
    finally:
        _channel.reset(token)


def current_channel() -> Channel | None:
    """The channel :func:`acting_through` set for the current context, if any."""
    return _channel.get()


ScopeChoice = Literal["all", "user", "project"]


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def new_id(prefix: str) -> str:
    """A new sortable id such as ``mem_01J…`` (prefix + ULID)."""
    return f"{prefix}_{ULID()}"


class Scope(BaseModel):
    """Where a memory lives: a user's private scope, or a shared project scope.

    ``Scope(user_id="u1")`` is u1's private memory; ``Scope(user_id="u1", project_id="p1")``
    is project p1's memory, as reached by u1.
    """

    model_config = ConfigDict(frozen=True)

    user_id: str
    project_id: str | None = None

    @property
    def key(self) -> str:
        """A stable key for caches: one per private scope, one per project."""
        return f"p:{self.project_id}" if self.project_id is not None else f"u:{self.user_id}"


Role = Literal["owner", "admin", "member"]


class Caller(BaseModel):
    """Who is calling: the user, the project and thread of the conversation, and the user's
    role in that project. Set by the host application (or an adapter) for each call, never
    by a model: a model only fills tool arguments, so it cannot choose whose memory it
    touches. Tools, services, MCP and the server's routes all take it as ``caller``.

    ``role`` is the caller's role in ``project_id``; ``None`` means the host application
    itself, which may do everything (what a library call without a role does). ``org_admin``
    lets an org admin search the private memory of ``org_id``'s members (seed 003's
    ``orgWide``). ``memory_enabled``/``supports_tools`` say whether this conversation uses
    memory tools at all (seed 001).

    >>> Caller(user_id="alice", project_id="apollo", role="member").role
    'member'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    project_id: str | None = None
    thread_id: str | None = None
    role: Role | None = None
    org_id: str | None = None
    org_admin: bool = False
    memory_enabled: bool = True
    supports_tools: bool = True


class DecisionOutcome(StrEnum):
    """How a logged decision turned out (seed 003's ``decisionOutcome``)."""

    PENDING = "pending"
    SUCCESSFUL = "successful"
    FAILED = "failed"
    UNKNOWN = "unknown"


class Decision(BaseModel):
    """What an assistant decided, and why (seed 003's ``log_decision``).

    >>> Decision(action="approved_discount", rationale="Loyal customer for 5 years").outcome
    <DecisionOutcome.PENDING: 'pending'>
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: str = Field(min_length=1, max_length=200)
    outcome: DecisionOutcome = DecisionOutcome.PENDING
    rationale: str = Field(min_length=1)
    policy_applied: str | None = None
    # A precedent is meant to guide later decisions; an exception departs from a policy.
    precedent: bool = False
    exception: bool = False
    memories_considered: tuple[str, ...] = ()


class Memory(BaseModel):
    """One natural-language fact about a user (or a project), with what we know about it.

    >>> m = Memory(user_id="u1", content="User prefers TypeScript", category="preference")
    >>> m.id.startswith("mem_"), m.importance
    (True, 5)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=lambda: new_id("mem"))
    user_id: str
    project_id: str | None = None
    content: str
    category: Category
    ring: Ring = Ring.SEMANTIC
    domain: Domain | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)
    importance: int = Field(default=5, ge=1, le=10)
    source: Source = Source.AI
    created_by: str | None = None
    reasoning: str | None = None
    session_id: str | None = None
    # Every time is one the stores can keep and read back (memorybank.model.times).
    created_at: StoredTime = Field(default_factory=utcnow)
    updated_at: StoredTime = Field(default_factory=utcnow)
    occurred_at: StoredTime | None = None
    embedding_model: str | None = None
    decision: Decision | None = None
    # The id of the memory that replaced this one; superseded memories are kept, not deleted.
    superseded_by: str | None = None
    # When it was last reinforced: saved again (a refused duplicate) or recalled by a search.
    # Importance decays from the latest of this and updated_at (memorybank.rules.ranking).
    reinforced_at: StoredTime | None = None

    @property
    def scope(self) -> Scope:
        """The scope this memory lives in."""
        return Scope(user_id=self.user_id, project_id=self.project_id)

    @classmethod
    def from_trusted(cls, **values: Any) -> Memory:
        """A memory from values that were validated on their way into a store: every field,
        no validation, no defaults.

        Stores build a search's 50-100 candidates with this; ``model_construct`` spent most of
        a search's non-embedding CPU resolving defaults and aliases that stored rows never need.
        A missing or unknown field is a programming error and raises ``TypeError``.
        """
        if values.keys() != _MEMORY_FIELDS:
            missing, unknown = _MEMORY_FIELDS - values.keys(), values.keys() - _MEMORY_FIELDS
            raise TypeError(f"Memory.from_trusted: missing {missing}, unknown {unknown}")
        memory = cls.__new__(cls)
        object.__setattr__(memory, "__dict__", values)
        object.__setattr__(memory, "__pydantic_fields_set__", set(_MEMORY_FIELDS))
        object.__setattr__(memory, "__pydantic_extra__", None)
        object.__setattr__(memory, "__pydantic_private__", None)
        return memory


_MEMORY_FIELDS = frozenset(Memory.model_fields)


class MemoryFilter(BaseModel):
    """Optional conditions a memory must meet; every field narrows, ``None`` means any."""

    model_config = ConfigDict(frozen=True)

    category: tuple[Category, ...] | None = None
    tags: tuple[str, ...] | None = None
    ring: tuple[Ring, ...] | None = None
    domain: tuple[Domain, ...] | None = None
    min_importance: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    metadata: dict[str, Any] | None = None
    session_id: str | None = None
    source: tuple[Source, ...] | None = None
    # False: only current memories; True: only those replaced by a newer one; None: both.
    superseded: bool | None = None

    def matches(self, memory: Memory) -> bool:
        """Whether ``memory`` meets every condition (used where a store filters in Python)."""
        checks = (
            self.category is None or memory.category in self.category,
            self.tags is None or all(t in memory.tags for t in self.tags),
            self.ring is None or memory.ring in self.ring,
            self.domain is None or memory.domain in self.domain,
            self.min_importance is None or memory.importance >= self.min_importance,
            self.since is None or memory.created_at >= self.since,
            self.until is None or memory.created_at < self.until,
            self.session_id is None or memory.session_id == self.session_id,
            self.source is None or memory.source in self.source,
            self.metadata is None
            or all(memory.metadata.get(k) == v for k, v in self.metadata.items()),
            self.superseded is None or (memory.superseded_by is not None) == self.superseded,
        )
        return all(checks)


class ScopeSet(BaseModel):
    """The scopes one query may touch: the caller's private scope and/or some projects."""

    model_config = ConfigDict(frozen=True)

    user_id: str
    include_private: bool = True
    project_ids: tuple[str, ...] = ()

    @classmethod
    def of(cls, scope: Scope) -> ScopeSet:
        """The set holding exactly ``scope``: a user's private memory, or one project's.

        >>> ScopeSet.of(Scope(user_id="u1", project_id="apollo")).project_ids
        ('apollo',)
        """
        if scope.project_id is None:
            return cls(user_id=scope.user_id)
        return cls(user_id=scope.user_id, include_private=False, project_ids=(scope.project_id,))

    def scopes(self) -> list[Scope]:
        """Each scope in the set."""
        out = [Scope(user_id=self.user_id)] if self.include_private else []
        out += [Scope(user_id=self.user_id, project_id=p) for p in self.project_ids]
        return out

    def contains(self, memory: Memory) -> bool:
        """Whether ``memory`` is visible through this set."""
        if memory.project_id is None:
            return self.include_private and memory.user_id == self.user_id
        return memory.project_id in self.project_ids


class SearchHit(BaseModel):
    """One search result: the memory, its final score and the parts of that score."""

    model_config = ConfigDict(frozen=True)

    memory: Memory
    score: float
    relevance: float
    importance: float
    recency: float
    vector_similarity: float | None = None
    text_score: float | None = None


class Conflict(BaseModel):
    """A stored memory a new fact may update or contradict (reported, never resolved
    silently): its id, its text, why the two may conflict, and how similar they are."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    content: str
    why: str = ""
    similarity: float | None = None


class SaveResult(BaseModel):
    """What :meth:`MemoryBank.save` did: saved, or found a duplicate, with the stored text;
    a stored fact also lists the stored ones it may update or contradict, kept
    (``conflicts``), and those it replaced: superseded by it in the save (``replaced``). A
    fact that probably says what a stored one says ``restated`` it: the stored fact
    (``memory_id`` = ``existing_id``) now reads as the new wording, its earlier wording
    (``existing_content``) kept in its history."""

    model_config = ConfigDict(frozen=True)

    success: bool
    memory_id: str | None = None
    content: str
    category: Category
    importance: int | None = None
    duplicate: bool = False
    existing_id: str | None = None
    existing_content: str | None = None
    similarity: float | None = None
    rephrased: bool = False
    memory: Memory | None = None
    conflicts: list[Conflict] = Field(default_factory=list)
    replaced: list[Conflict] = Field(default_factory=list)
    restated: bool = False


class HistoryEvent(BaseModel):
    """One change to a memory. DELETE events are tombstones: they never carry text."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=lambda: new_id("evt"))
    memory_id: str
    user_id: str
    project_id: str | None = None
    kind: EventKind
    old_content: str | None = None
    new_content: str | None = None
    actor: str | None = None
    created_at: StoredTime = Field(default_factory=utcnow)
    #: Through what the change was made; ``None``: the store decides (see :class:`Channel`).
    channel: Channel | None = Field(default_factory=current_channel)

    @classmethod
    def about(
        cls,
        memory: Memory,
        kind: EventKind,
        actor: str | None,
        *,
        old_content: str | None = None,
        new_content: str | None = None,
        created_at: datetime | None = None,
        channel: Channel | None = None,
    ) -> HistoryEvent:
        """An event of ``kind`` on ``memory`` (its id and scope), now unless ``created_at``.

        >>> memory = Memory(user_id="alice", content="User drinks tea", category="preference")
        >>> HistoryEvent.about(memory, EventKind.ADD, "alice").kind
        <EventKind.ADD: 'ADD'>
        """
        return cls(
            memory_id=memory.id,
            user_id=memory.user_id,
            project_id=memory.project_id,
            kind=kind,
            old_content=old_content,
            new_content=new_content,
            actor=actor,
            created_at=created_at or utcnow(),
            channel=channel or current_channel(),
        )


EventType = Literal["created", "updated", "superseded", "merged", "deleted", "cleared", "forgotten"]

#: What the events API calls each kind of history event.
EVENT_TYPES: dict[EventKind, EventType] = {
    EventKind.ADD: "created",
    EventKind.UPDATE: "updated",
    EventKind.SUPERSEDE: "superseded",
    EventKind.MERGE: "merged",
    EventKind.DELETE: "deleted",
    EventKind.CLEAR: "cleared",
    EventKind.FORGET: "forgotten",
}


class Event(BaseModel):
    """One change to a memory as the events stream shows it: a history event with its
    position in the database's one sequence of events (``id``, increasing, never reused).
    ``content`` is the memory's text after the change; deletions carry none.

    >>> Event(id=1, type="created", memory_id="mem_1", user_id="u1", content="User likes tea",
    ...       at=datetime(2026, 1, 1, tzinfo=UTC)).type
    'created'
    """

    model_config = ConfigDict(frozen=True)

    id: int
    type: EventType
    memory_id: str
    user_id: str
    project_id: str | None = None
    #: Who made the change (a user id); ``None`` for changes recorded without one.
    actor: str | None = None
    channel: Channel | None = None
    content: str | None = None
    at: datetime


class ForgetAction(StrEnum):
    """What a forget plan does to one memory (seed 003's forget_preview)."""

    FORGET = "FORGET"
    REWRITE = "REWRITE"
    KEEP = "KEEP"
    # Keep the memory as it is now; erase its earlier texts from history (the events stay).
    REDACT = "REDACT"


class PlanStatus(StrEnum):
    """Where a forget plan is in its life; an expired plan is still ``pending`` until used."""

    PENDING = "pending"
    CANCELLED = "cancelled"
    EXECUTED = "executed"


class ForgetStep(BaseModel):
    """One memory of a forget plan: the action, the new text for REWRITE, and the version of
    the memory the plan was made for (``updated_at``), so a memory changed since the preview
    is not acted on blindly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_id: str
    action: ForgetAction
    updated_at: StoredTime
    rewrite: str | None = None


class ForgetPlan(BaseModel):
    """A reviewed-before-applied forget request, as stored between preview and confirm.

    Only what confirming needs is kept: no memory text, no query, no reasons (they may be
    exactly what the user wants gone).

    >>> plan = ForgetPlan(user_id="u1", steps=(), created_at=utcnow(), expires_at=utcnow())
    >>> plan.id.startswith("fp_"), plan.status
    (True, <PlanStatus.PENDING: 'pending'>)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=lambda: new_id("fp"))
    user_id: str
    project_id: str | None = None
    steps: tuple[ForgetStep, ...]
    status: PlanStatus = PlanStatus.PENDING
    created_at: StoredTime
    expires_at: StoredTime
    finished_at: StoredTime | None = None

    def check_usable(self, user_id: str, project_id: str | None, now: datetime) -> None:
        """Raise unless ``user_id`` (in ``project_id``) may still confirm or cancel this plan.

        Another user's plan is reported as missing, like another user's memory: we never say
        which of the two it is.
        """
        if self.user_id != user_id or self.project_id != project_id:
            raise NotFound(f"no forget plan {self.id!r} for this user")
        if self.status == PlanStatus.EXECUTED:
            raise ValidationError(
                f"forget plan {self.id} was already executed; run forget_preview for a new plan",
                field="planId",
            )
        if self.status == PlanStatus.CANCELLED:
            raise ValidationError(
                f"forget plan {self.id} was cancelled; run forget_preview for a new plan",
                field="planId",
            )
        if now >= self.expires_at:
            raise ValidationError(
                f"forget plan {self.id} expired at {self.expires_at:%Y-%m-%d %H:%M} UTC; "
                "run forget_preview for a new plan",
                field="planId",
            )


class SaveInput(BaseModel):
    """One item for :meth:`MemoryBank.save_many`; the same fields as ``save``'s arguments."""

    model_config = ConfigDict(extra="forbid")

    content: str
    # A string here; the policy resolves it (case-insensitively) and names the valid ones.
    # None: inferred from the text (conversation turns: context).
    category: Category | str | None = None
    reasoning: str | None = None
    tags: Sequence[str] = ()
    metadata: Mapping[str, Any] | None = None
    importance: int | None = None
    source: Source = Source.AI
    ring: Ring = Ring.SEMANTIC
    domain: Domain | None = None
    occurred_at: StoredTime | None = None
    session_id: str | None = None
    created_by: str | None = None
    created_at: StoredTime | None = None


class SaveFields(TypedDict, total=False):
    """A :class:`SaveInput`'s fields beside its content and category, as the keywords of
    :meth:`MemoryBank.save <memorybank.MemoryBank.save>` (which builds the item from them)."""

    reasoning: str | None
    tags: Sequence[str]
    metadata: Mapping[str, Any] | None
    importance: int | None
    source: Source | str
    ring: Ring | str
    domain: Domain | str | None
    occurred_at: datetime | None
    session_id: str | None
    created_by: str | None
    created_at: datetime | None


__all__ = [
    "Caller",
    "Category",
    "Channel",
    "Conflict",
    "Decision",
    "DecisionOutcome",
    "Domain",
    "EVENT_TYPES",
    "Event",
    "EventKind",
    "EventType",
    "ForgetAction",
    "ForgetPlan",
    "ForgetStep",
    "HistoryEvent",
    "Memory",
    "MemoryFilter",
    "PlanStatus",
    "Ring",
    "Role",
    "SaveFields",
    "SaveInput",
    "SaveResult",
    "Scope",
    "ScopeChoice",
    "ScopeSet",
    "SearchHit",
    "Source",
    "acting_through",
    "current_channel",
    "new_id",
    "utcnow",
]
