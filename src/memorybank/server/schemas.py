"""Request and response bodies of the REST API (separate from the core records), and the
bounds of every string, number and list a request may carry.

Every field a caller fills in has a bound no legitimate caller reaches, so an oversized value
is a 422 naming the field and its limit, never a 5xx or a megabyte in the database. The text
of a memory (``fact``, ``content``) is bounded by the bank's policy instead
(:attr:`~memorybank.rules.policy.PolicySettings.content_max`, 500 characters by default), whose
error says the limit a deployment chose. The query-parameter aliases (:data:`SearchText` …)
give routes the same bounds.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import Query
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from memorybank.core.consolidate import MAX_PAGE_FACTS, PAGE_FACTS
from memorybank.model import (
    Conflict,
    Domain,
    HistoryEvent,
    Memory,
    Ring,
    SaveResult,
    SearchHit,
    Source,
    utcnow,
)
from memorybank.model.times import StoredTime
from memorybank.rules.inputs import unpaired_surrogate
from memorybank.rules.ranking import importance_now
from memorybank.services.insights import SuccessMetrics

if TYPE_CHECKING:  # the routes pass their bank; schemas need only its type
    from memorybank.core.bank import MemoryBank

#: Ids a caller sends: memories, projects, threads, forget plans (generated ids are ~30
#: characters, user-chosen project ids at most 64).
ID_MAX = 200
#: A thread's title.
TITLE_MAX = 200
#: A search or forget query, in natural language.
QUERY_MAX = 2000
#: A category, a confirm token, a tool's name, a model's name: short names.
NAME_MAX = 200
#: Tags on one memory, and the length of each (the policy allows 20 of 64 by default).
TAGS_MAX, TAG_MAX = 100, 200
#: A provider's base URL and API key.
URL_MAX, API_KEY_MAX = 2048, 4096

Id = Annotated[str, Field(max_length=ID_MAX)]
Name = Annotated[str, Field(max_length=NAME_MAX)]

#: Query parameters, bounded like the body fields.
SearchText = Annotated[str, Query(max_length=QUERY_MAX)]
OptionalSearchText = Annotated[str | None, Query(max_length=QUERY_MAX)]
IdParam = Annotated[str | None, Query(max_length=ID_MAX)]
NameParam = Annotated[str | None, Query(max_length=NAME_MAX)]
#: ``since``: 24h, 7d, 30d, 90d, a number with h/d/w or an ISO datetime.
SinceParam = Annotated[str | None, Query(max_length=64)]


class RequestBody(BaseModel):
    """What every request body is built on: no unknown fields, and no lone surrogates."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_lone_surrogates(cls, data: Any) -> Any:
        # JSON can spell "\ud800", which is no character: no store keeps it and no tokenizer
        # reads it, so every body is refused whole (422) before a field reaches either.
        found = unpaired_surrogate(data)
        if found is not None:
            raise ValueError(f"{found}: remove it")
        return data


def example(**body: Any) -> ConfigDict:
    """A request body's model configuration with an example of the body: shown in the
    OpenAPI schema, and in the 422 that answers a body of the wrong shape
    (:func:`memorybank.server.error_responses.request_error`)."""
    return ConfigDict(extra="forbid", json_schema_extra={"examples": [body]})


class ShownMemory(Memory):
    """A memory as the API shows it: the stored record and ``effective_importance``, the
    importance it ranks with now (issue 18's decay; ``importance`` is what is stored)."""

    effective_importance: float = Field(
        ge=1, le=10, description="importance decayed since last saved, changed or recalled"
    )


def memory_json(memory: Memory, bank: MemoryBank) -> dict[str, Any]:
    """A stored memory as every response shows it, with the importance it ranks with now in
    ``bank`` (``effective_importance``, decayed over its ``importance_half_life_days``)."""
    shown = memory.model_dump(mode="json")
    decay = bank.retrieval.importance_half_life_days
    shown["effective_importance"] = importance_now(memory, utcnow(), decay)
    return shown


def memory_list_json(memories: list[Memory], bank: MemoryBank, count: int) -> dict[str, Any]:
    """A page of memories as every listing answers it (:class:`MemoryList`): the memories
    and ``count``, how many there are in all (or were found)."""
    return {"memories": [memory_json(m, bank) for m in memories], "count": count}


class ErrorBody(BaseModel):
    """Every error answer: ``{"error": "<what to fix>"}``; a duplicate (409) adds
    ``duplicate`` and the ``existing`` memory."""

    model_config = ConfigDict(extra="allow")

    error: str
    field: str | None = Field(default=None, description="The input to fix (422), when one is")
    duplicate: bool | None = Field(default=None, description="409: the fact is already stored")
    existing: ShownMemory | None = Field(default=None, description="409: the stored fact")


class AddFact(RequestBody):
    """``POST /api/memory/user`` and ``/api/memory/drive/{driveId}``."""

    model_config = example(fact="User prefers dark mode", category="preference")

    fact: str = Field(description="The fact, e.g. 'User prefers dark mode'")
    category: Name | None = Field(
        default=None, description="identity, preference, …; omitted: inferred from the fact"
    )


class ClearRequest(RequestBody):
    """The second step of clearing a scope."""

    model_config = example(confirm_token="ct_…")

    confirm_token: Name


class MemoryPatch(RequestBody):
    """``PATCH /api/memories/{id}``: only the fields given change."""

    model_config = example(content="User prefers light mode", importance=8)

    content: str | None = None
    category: Name | None = None
    importance: int | None = Field(default=None, ge=1, le=10)
    tags: list[Annotated[str, Field(max_length=TAG_MAX)]] | None = Field(
        default=None, max_length=TAGS_MAX
    )
    metadata: dict[str, Any] | None = None


class SupersedeRequest(RequestBody):
    """``POST /api/memories/{id}/supersede``: the newer memory that replaces this one."""

    model_config = example(by="mem_01JABCDEFGHJKMNPQRSTVWXYZ0")

    by: Name


#: The most memories one batch delete names.
DELETE_MAX = 1000


class DeleteRequest(RequestBody):
    """``POST /api/memories/delete``: the memories to delete in one transaction; with
    ``project_id``, that project's may be among them (admins and owners)."""

    model_config = example(ids=["mem_01JABCDEFGHJKMNPQRSTVWXYZ0"], project_id=None)

    ids: list[Id] = Field(min_length=1, max_length=DELETE_MAX)
    project_id: Id | None = None


class DeletedIds(BaseModel):
    """The memories a batch delete removed: the ids named that were in the caller's scopes."""

    deleted: list[str]


class KeepBothRequest(RequestBody):
    """``POST /api/memories/{id}/keep-both``: the other fact of the pair, which this one may
    update (or which may update this one)."""

    model_config = example(other="mem_01JABCDEFGHJKMNPQRSTVWXYZ0")

    other: Name


class MemoryPair(BaseModel):
    """A fact (``memory``) and a stored one it may update (``other``): a save's conflict."""

    memory: ShownMemory
    other: ShownMemory


class MemoryPairList(BaseModel):
    """The pairs a save said may be an update that nobody has answered yet, oldest first."""

    pairs: list[MemoryPair]


class ForgetRequest(RequestBody):
    """``POST /api/forget/preview``."""

    model_config = example(query="everything about my old job")

    query: str = Field(max_length=QUERY_MAX)
    project_id: Id | None = None


#: A consolidation cursor: a fact's place (three numbers) and its id.
CURSOR_MAX = ID_MAX + 80


class ConsolidateRequest(RequestBody):
    """``POST /api/consolidate``: apply the merges a preview showed (the same page: the
    preview's ``cursor`` and ``limit``)."""

    model_config = example(project_id=None, keep_ids=["mem_…"])

    project_id: Id | None = None
    #: The kept ids of the merges to apply (from the preview); all of them when omitted.
    keep_ids: list[Id] | None = Field(default=None, max_length=10_000)
    #: Where the page starts: the ``next_cursor`` of the page before (none: the first page).
    cursor: str | None = Field(default=None, max_length=CURSOR_MAX)
    #: Facts the page examines at most.
    limit: int = Field(default=PAGE_FACTS, ge=1, le=MAX_PAGE_FACTS)


class ThreadCreate(RequestBody):
    """``POST /api/threads``."""

    model_config = example(project_id="apollo", title="Release planning")

    project_id: Id | None = None
    memory_enabled: bool = True
    title: str | None = Field(default=None, max_length=TITLE_MAX)


class ThreadPatch(RequestBody):
    """``PATCH /api/threads/{id}``: only the fields given change."""

    model_config = example(memory_enabled=False)

    project_id: Id | None = None
    memory_enabled: bool | None = None
    title: str | None = Field(default=None, max_length=TITLE_MAX)


class ToolCall(RequestBody):
    """``POST /api/tools/{profile}/call``: what the model asked for."""

    model_config = example(name="recall", arguments={"query": "UI theme"}, thread_id=None)

    name: Name
    # Bounded by the request size limit here and by each tool's own arguments model.
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    thread_id: Id | None = None


class ProviderUpdate(RequestBody):
    """``PUT /api/settings/providers/{kind}``: leave ``api_key`` out to keep the stored one."""

    model_config = example(
        base_url="https://api.openai.com/v1", model="gpt-4o-mini", api_key="sk-…", enabled=True
    )

    base_url: str = Field(max_length=URL_MAX)
    model: Name
    api_key: str | None = Field(default=None, max_length=API_KEY_MAX)
    enabled: bool = True


class ProviderView(BaseModel):
    """A provider setting as the API shows it: never the key, only whether one is set."""

    kind: Literal["embedding", "llm"]
    base_url: str
    model: str
    enabled: bool
    key_set: bool
    key_hint: str | None


class ProjectView(BaseModel):
    """A project the caller belongs to."""

    id: str
    name: str
    role: Literal["owner", "admin", "member"]


class Me(BaseModel):
    """``GET /api/me``."""

    user_id: str
    name: str
    mode: Literal["local", "auth"]
    projects: list[ProjectView]
    org_admin: bool


class ThreadView(BaseModel):
    """A thread."""

    id: str
    project_id: str | None
    title: str | None
    memory_enabled: bool
    created_at: str
    updated_at: str


# -- the library's calls (memorybank.Client) --------------------------------------------------


class SaveItem(RequestBody):
    """One fact or conversation turn to save: :meth:`memorybank.MemoryBank.save`'s arguments
    (the caller is ``created_by``)."""

    content: str = Field(description="The fact (third person), or a conversation turn")
    category: Name | None = Field(default=None, description="omitted: inferred from the text")
    reasoning: str | None = Field(default=None, max_length=QUERY_MAX)
    tags: list[Annotated[str, Field(max_length=TAG_MAX)]] = Field(
        default_factory=list, max_length=TAGS_MAX
    )
    metadata: dict[str, Any] | None = None
    importance: int | None = Field(default=None, ge=1, le=10)
    source: Source = Field(
        default=Source.API,
        description="omitted: api (an app over this API; the UI badges it so, not as the AI's); "
        "ai for what an assistant said, user for what a person typed",
    )
    ring: Ring = Ring.SEMANTIC
    domain: Domain | None = None
    occurred_at: StoredTime | None = None
    session_id: Id | None = None
    created_at: StoredTime | None = Field(
        default=None, description="When it was learnt, for facts from the past; omitted: now"
    )


#: ``user_id`` in a body that saves: the caller, if given (the API key's user; in local mode
#: the one ``X-Memorybank-User`` names, else ``local``). It never chooses the user.
CALLER_TEXT = (
    "The caller, if you name them: the API key's user (in local mode the one "
    "X-Memorybank-User names, else 'local'); another user is a 403"
)


class SaveRequest(RequestBody):
    """``POST /api/memories``: one or more items, saved together (all or nothing)."""

    model_config = example(
        items=[
            {"content": "User prefers dark mode", "category": "preference"},
            {"content": "User's sister Ana lives in Madrid"},
        ]
    )

    items: list[SaveItem] = Field(min_length=1, max_length=1000)
    project_id: Id | None = None
    on_conflict: Literal["auto", "keep", "supersede"] = "auto"
    user_id: Id | None = Field(default=None, description=CALLER_TEXT)


class SaveOne(SaveItem):
    """``POST /api/memories`` with one item: its fields at the top level, with the batch's
    ``project_id``, ``on_conflict`` and ``user_id``."""

    model_config = example(content="User prefers dark mode", category="preference")

    project_id: Id | None = None
    on_conflict: Literal["auto", "keep", "supersede"] = "auto"
    user_id: Id | None = Field(default=None, description=CALLER_TEXT)

    def batch(self) -> SaveRequest:
        """The same request as a batch of one."""
        top = {"project_id", "on_conflict", "user_id"}
        item = SaveItem.model_validate(self.model_dump(exclude=top, exclude_unset=True))
        return SaveRequest(
            items=[item],
            project_id=self.project_id,
            on_conflict=self.on_conflict,
            user_id=self.user_id,
        )


def _save_shape(body: Any) -> str:
    """Which shape a ``POST /api/memories`` body has: a batch when it has ``items``."""
    return "batch" if isinstance(body, dict) and "items" in body else "one"


#: ``POST /api/memories``'s body: one item's fields, or ``{"items": [...]}``.
SaveBody = Annotated[
    Annotated[SaveOne, Tag("one")] | Annotated[SaveRequest, Tag("batch")],
    Discriminator(_save_shape),
]
#: The tags of request bodies with more than one shape, which pydantic puts in an error's
#: location though they name no field.
BODY_SHAPES = frozenset({"batch", "one"})


class SaveResults(BaseModel):
    """What saving did to each item, in order (a duplicate is a result, not an error)."""

    results: list[SaveResult]


class MemoryList(BaseModel):
    """A page of memories and how many there are in all (with ``q``: how many were found)."""

    memories: list[ShownMemory]
    count: int


class DriveMemoryList(MemoryList):
    """A project's memories, with the caller's role there."""

    role: Literal["owner", "admin", "member"]


class MemoryCreated(BaseModel):
    """A fact added by hand, the stored facts it replaced (superseded by it) and those it may
    update or contradict (kept)."""

    memory: ShownMemory
    conflicts: list[Conflict]
    replaced: list[Conflict] = []


class Count(BaseModel):
    """How many memories meet the conditions."""

    count: int


class SearchResults(BaseModel):
    """Search hits, best first."""

    hits: list[SearchHit]


class HistoryList(BaseModel):
    """ADD / UPDATE / DELETE / SUPERSEDE events of a memory, oldest first."""

    events: list[HistoryEvent]


class ClearToken(BaseModel):
    """The first step of clearing a scope: the token to confirm with, and how many would go."""

    confirm_token: str
    count: int


class Cleared(BaseModel):
    """The second step: how many memories were deleted."""

    deleted: int


class ImportResult(BaseModel):
    """``POST /api/import``: how many memories were added and skipped, and each one's result."""

    imported: int
    skipped: int
    results: list[SaveResult]


class ProjectStats(ProjectView):
    """One of the caller's projects and its memory count."""

    memories: int


class Stats(BaseModel):
    """``GET /api/stats``: the caller's own counts, and for an org admin (or in local mode)
    seed 002's success metrics of the last 30 days."""

    user_id: str
    memories: int
    projects: list[ProjectStats]
    metrics: SuccessMetrics | None = None


class ForgetStepView(BaseModel):
    """One memory in a forget plan and what confirming does to it."""

    memory_id: str
    action: Literal["FORGET", "REWRITE", "REDACT", "KEEP"]
    reason: str
    content: str
    rewritten: str | None
    earlier: list[str]


class ForgetPreview(BaseModel):
    """A forget plan to review, then confirm or cancel."""

    plan_id: str
    summary: str
    steps: list[ForgetStepView]
    expires_at: datetime
    #: What the plan could not do as asked (an LLM that failed, so the word-match rule planned).
    warnings: list[str]
    text: str


class ForgetDone(BaseModel):
    """What a confirmed plan did."""

    forgotten: int
    rewritten: int
    redacted: int
    kept: int


class Cancelled(BaseModel):
    """A plan dropped."""

    cancelled: bool


class ThreadList(BaseModel):
    """The caller's conversations, newest first."""

    threads: list[ThreadView]


class ToolDefinitions(BaseModel):
    """A profile's tools in one chat API's format, and their token cost per request."""

    profile: str
    format: Literal["openai", "anthropic", "mcp"]
    tools: list[dict[str, Any]]
    token_cost: int


class ToolResult(BaseModel):
    """What a tool call answered the model (failures too: ``{"success": false, …}``)."""

    result: Any


class PromptBlock(BaseModel):
    """The system-prompt block and its size in tokens."""

    prompt: str
    tokens: int


class Health(BaseModel):
    """Liveness."""

    status: Literal["ok"]


class LlmCheck(BaseModel):
    """Whether the caller's LLM answered."""

    success: bool
    model: str | None = None
    error: str | None = None


class ExportDocument(BaseModel):
    """``GET /api/export``'s JSON, and the body ``POST /api/import`` takes (lossless)."""

    format: Literal["memorybank-export"]
    version: int
    user_id: str
    project_id: str | None
    exported_at: datetime
    count: int
    memories: list[Memory]
