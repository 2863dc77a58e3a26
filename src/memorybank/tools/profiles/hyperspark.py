"""Seed 003 (HyperSpark Memory): remember, recall, recall_recent, get_context, forget_preview,
forget_confirm and log_decision, answering in the seed's text formats.

Parameter names are the seed's (camelCase). ``userId`` is not offered: whose memory a call
touches comes from the :class:`~memorybank.model.Caller`, never from the model.
Writes go to the user's private scope (``log_decision``: the caller's project, if any, so a
team shares its precedents); reads cover the private scope and the caller's project.

``orgWide`` searches every member of ``caller.org_id``
(see :func:`memorybank.services.accounts.join_org`)
and is refused unless ``caller.org_admin``. Each member is searched on their own and the results
merged by score; relevance is relative within one member's results, so the merged order is close
to, not exactly, what one search over everyone would give. Results then name their owner.

>>> from memorybank.tools import call, profile
>>> caller = Caller(user_id="sam")
>>> _ = bank.save("sam", "User works as a nurse at St Mary's", "identity", domain="work")
>>> print(call(bank, profile("hyperspark"), "recall", {"query": "user's job"}, caller))
... # doctest: +ELLIPSIS
Found 1 memories (...ms):
1. [mem_...] [semantic/work] User works as a nurse at St Mary's
Score: ...% | Created: ...
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from memorybank.model import Caller, DecisionOutcome, Domain, Memory, Ring, SearchHit
from memorybank.providers.json_schemas import Arguments
from memorybank.rules.render import sanitize_memory_text
from memorybank.services.accounts import org_readers
from memorybank.services.conversations import remember_conversation, render_remembered
from memorybank.services.decisions import (
    DecisionFilter,
    filtered_recent,
    filtered_search,
    log_decision,
)
from memorybank.services.forget import (
    forget_confirm,
    forget_preview,
    render_executed,
    render_preview,
)
from memorybank.tools.base import Profile, SafetyTier
from memorybank.tools.profiles import define

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank
    from memorybank.providers.llm.client import JSONCompleter

__all__ = [
    "PROFILE",
    "ForgetConfirmArgs",
    "ForgetPreviewArgs",
    "GetContextArgs",
    "LogDecisionArgs",
    "RecallArgs",
    "RecallFilters",
    "RecallRecentArgs",
    "RememberArgs",
    "Turn",
]

# -- arguments ------------------------------------------------------------------------------


class Turn(Arguments):
    """One conversation message."""

    role: Literal["user", "assistant"] = Field(description="Who said it: user or assistant")
    content: str = Field(min_length=1, max_length=20_000, description="What was said")


class RememberArgs(Arguments):
    """Arguments of ``remember``."""

    messages: list[Turn] = Field(
        min_length=1,
        max_length=200,
        description="Conversation messages with role (user/assistant) and content",
    )
    context: str | None = Field(
        None, max_length=1000, description="Additional context about this conversation"
    )


class RecallFilters(Arguments):
    """The seed's ``filters`` object (every field optional; null means no condition)."""

    rings: list[Ring] | None = Field(
        None, max_length=3, description="Memory types: episodic, semantic, procedural"
    )
    domains: list[Domain] | None = Field(
        None, max_length=8, description="Life domains: work, finance, projects, goals, etc."
    )
    minImportance: int | None = Field(  # noqa: N815 - the seed's parameter name
        None, ge=1, le=10, description="Minimum importance (1-10)"
    )
    decisionsOnly: bool | None = Field(  # noqa: N815
        None, description="Only decision memories"
    )
    decisionOutcome: DecisionOutcome | None = Field(  # noqa: N815
        None, description="Decision outcome: pending, successful, failed, unknown"
    )
    precedentsOnly: bool | None = Field(  # noqa: N815
        None, description="Only precedent-setting decisions"
    )
    exceptionsOnly: bool | None = Field(  # noqa: N815
        None, description="Only policy exceptions"
    )
    decisionSince: Literal["7d", "30d", "90d", "quarter", "year"] | None = Field(  # noqa: N815
        None, description="Decisions since: 7d, 30d, 90d, quarter (this one), year (this one)"
    )
    decisionAction: str | None = Field(  # noqa: N815
        None, max_length=200, description="Decision action, e.g. 'approved_discount'"
    )
    policyApplied: str | None = Field(  # noqa: N815
        None, max_length=200, description="Policy identifier, e.g. 'refund_policy_v2'"
    )


class RecallArgs(Arguments):
    """Arguments of ``recall``."""

    query: str = Field(
        min_length=1,
        max_length=1000,
        description="Natural language query; richer queries yield better matches",
    )
    topK: int = Field(  # noqa: N815
        30, ge=1, le=100, description="Results to return (default 30, max 100)"
    )
    filters: RecallFilters | None = Field(None, description="Optional filters")
    orgWide: bool = Field(  # noqa: N815
        False, description="Search across all users in the org (admins only)"
    )


class RecallRecentArgs(Arguments):
    """Arguments of ``recall_recent``."""

    limit: int = Field(30, ge=1, le=500, description="Memories to return (default 30, max 500)")
    since: Literal["24h", "7d", "30d", "90d"] | None = Field(
        None, description="Only memories from the last 24h, 7d, 30d or 90d"
    )
    filters: RecallFilters | None = Field(None, description="Optional filters")
    orgWide: bool = Field(  # noqa: N815
        False, description="Across all users in the org (admins only)"
    )


class GetContextArgs(Arguments):
    """Arguments of ``get_context``."""

    maxTokens: int = Field(  # noqa: N815
        2000, ge=100, le=32_000, description="Maximum tokens for the context (default 2000)"
    )
    focus: list[Domain] | None = Field(
        None, max_length=8, description="Life domains to focus on, e.g. ['work', 'projects']"
    )


class ForgetPreviewArgs(Arguments):
    """Arguments of ``forget_preview``."""

    query: str = Field(
        min_length=1,
        max_length=1000,
        description="What to forget, e.g. 'my old home address on Oak Street'",
    )
    topK: int = Field(  # noqa: N815
        50, ge=1, le=200, description="Maximum memories to consider (default 50)"
    )


class ForgetConfirmArgs(Arguments):
    """Arguments of ``forget_confirm``."""

    planId: str = Field(  # noqa: N815
        min_length=1, max_length=100, description="The plan ID from forget_preview (fp_…)"
    )


class LogDecisionArgs(Arguments):
    """Arguments of ``log_decision``."""

    action: str = Field(
        min_length=1,
        max_length=200,
        description="What was decided, as an identifier, e.g. 'approved_discount'",
    )
    outcome: DecisionOutcome = Field(
        DecisionOutcome.PENDING, description="pending, successful, failed or unknown"
    )
    rationale: str = Field(min_length=1, max_length=400, description="Why it was decided")
    policyApplied: str | None = Field(  # noqa: N815
        None, max_length=200, description="Policy identifier, e.g. 'refund_policy_v2'"
    )
    precedent: bool = Field(False, description="Whether this should guide future decisions")
    exception: bool = Field(False, description="Whether this departs from a policy")
    memoriesConsidered: list[Annotated[str, Field(max_length=100)]] = Field(  # noqa: N815
        default_factory=list,
        max_length=50,
        description="IDs of memories that informed the decision (from recall: mem_…)",
    )


# -- formatting -----------------------------------------------------------------------------


def _ms(start: float) -> str:
    return f"{round((time.perf_counter() - start) * 1000)}ms"


def _date(moment: datetime) -> str:
    """12/30/2024 (UTC), as the seed shows dates."""
    return f"{moment.month}/{moment.day}/{moment.year}"


def _date_time(moment: datetime) -> str:
    """12/31/2024, 2:30 PM (UTC)."""
    hour = moment.hour % 12 or 12
    return f"{_date(moment)}, {hour}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'}"


def _head(memory: Memory, caller: Caller) -> str:
    """``[mem_…] [ring/domain] text``, naming the owner when it is not the caller."""
    kind = memory.ring.value if memory.domain is None else f"{memory.ring}/{memory.domain}"
    owner = "" if memory.user_id == caller.user_id else f"[user {memory.user_id}] "
    # Another member's project memory reaches this answer too: one inert line of data.
    return f"[{memory.id}] [{kind}] {owner}{sanitize_memory_text(memory.content)}"


def _decision_line(memory: Memory) -> list[str]:
    decision = memory.decision
    if decision is None:
        return []
    action = sanitize_memory_text(decision.action)
    parts = [f"Decision: {action}", f"Outcome: {decision.outcome}"]
    if decision.policy_applied:
        parts.append(f"Policy: {sanitize_memory_text(decision.policy_applied)}")
    if decision.precedent:
        parts.append("Precedent")
    if decision.exception:
        parts.append("Exception")
    return [" | ".join(parts)]


# -- handlers -------------------------------------------------------------------------------


def _decisions(filters: RecallFilters) -> DecisionFilter:
    return DecisionFilter(
        decisions_only=bool(filters.decisionsOnly),
        outcome=filters.decisionOutcome,
        precedents_only=bool(filters.precedentsOnly),
        exceptions_only=bool(filters.exceptionsOnly),
        since=filters.decisionSince,
        action=filters.decisionAction,
        policy_applied=filters.policyApplied,
    )


def _conditions(filters: RecallFilters) -> dict[str, Any]:
    return {
        "ring": filters.rings,
        "domain": filters.domains,
        "min_importance": filters.minImportance,
    }


def _across(
    bank: MemoryBank,
    caller: Caller,
    org_wide: bool,
    one: Callable[[str, dict[str, Any]], list[Any]],
) -> list[Any]:
    """``one(user_id, scope_arguments)`` for the caller, or for every org member."""
    if not org_wide:
        return one(caller.user_id, {"project_id": caller.project_id})
    found: list[Any] = []
    for user_id in org_readers(bank, caller):
        found += one(user_id, {"scopes": "user"})
    return found


def _current(memory: Memory) -> bool:
    # Replaced memories stay stored for history; recall shows what is true now.
    return memory.superseded_by is None


def recall(bank: MemoryBank, caller: Caller, args: RecallArgs) -> str:
    """Semantic search, best first, in the seed's "Found N memories" format."""
    start = time.perf_counter()
    filters = args.filters or RecallFilters()
    decisions, conditions = _decisions(filters), _conditions(filters)

    def one(user_id: str, scope: dict[str, Any]) -> list[SearchHit]:
        return filtered_search(
            bank, user_id, args.query, decisions, limit=args.topK, **scope, **conditions
        )

    hits: list[SearchHit] = _across(bank, caller, args.orgWide, one)
    hits = sorted((h for h in hits if _current(h.memory)), key=lambda h: -h.score)[: args.topK]
    lines = [f"Found {len(hits)} memories ({_ms(start)}){':' if hits else '.'}"]
    for n, hit in enumerate(hits, 1):
        lines.append(f"{n}. {_head(hit.memory, caller)}")
        lines += _decision_line(hit.memory)
        lines.append(f"Score: {round(hit.score * 100)}% | Created: {_date(hit.memory.created_at)}")
    return "\n".join(lines)


def recall_recent(bank: MemoryBank, caller: Caller, args: RecallRecentArgs) -> str:
    """Newest memories first, in the seed's "N recent memories" format."""
    start = time.perf_counter()
    filters = args.filters or RecallFilters()
    decisions, conditions = _decisions(filters), _conditions(filters)

    def one(user_id: str, scope: dict[str, Any]) -> list[Memory]:
        return filtered_recent(
            bank, user_id, decisions, limit=args.limit, since=args.since, **scope, **conditions
        )

    memories: list[Memory] = _across(bank, caller, args.orgWide, one)
    memories = sorted(
        (m for m in memories if _current(m)), key=lambda m: m.created_at, reverse=True
    )[: args.limit]
    lines = [f"{len(memories)} recent memories ({_ms(start)}){':' if memories else '.'}"]
    for n, memory in enumerate(memories, 1):
        lines.append(f"{n}. {_head(memory, caller)}")
        lines += _decision_line(memory)
        lines.append(
            f"Created: {_date_time(memory.created_at)} | Importance: {memory.importance}/10"
        )
    return "\n".join(lines)


def remember_(
    bank: MemoryBank, caller: Caller, args: RememberArgs, llm: JSONCompleter | None = None
) -> str:
    """Store the conversation and the facts it states."""
    turns = [turn.model_dump() for turn in args.messages]
    return render_remembered(
        remember_conversation(bank, caller, turns, context=args.context, llm=llm)
    )


def get_context_(bank: MemoryBank, caller: Caller, args: GetContextArgs) -> str:
    """The formatted overview of the user."""
    from memorybank.core.prompt import get_context  # the context module is heavier; load on use

    focus: Sequence[str] | None = None if args.focus is None else [d.value for d in args.focus]
    return get_context(bank, caller, args.maxTokens, focus)


def forget_preview_(
    bank: MemoryBank, caller: Caller, args: ForgetPreviewArgs, llm: JSONCompleter | None = None
) -> str:
    """Plan a forget request for review."""
    return render_preview(forget_preview(bank, caller, args.query, args.topK, llm))


def forget_confirm_(bank: MemoryBank, caller: Caller, args: ForgetConfirmArgs) -> str:
    """Apply a reviewed plan."""
    return render_executed(forget_confirm(bank, caller, args.planId))


def log_decision_(bank: MemoryBank, caller: Caller, args: LogDecisionArgs) -> str:
    """Record a decision for later recall."""
    memory = log_decision(
        bank,
        caller,
        args.action,
        args.outcome,
        args.rationale,
        policy_applied=args.policyApplied,
        precedent=args.precedent,
        exception=args.exception,
        memories_considered=args.memoriesConsidered,
    )
    assert memory.decision is not None
    action = sanitize_memory_text(memory.decision.action)
    return f"Logged decision {action} ({memory.decision.outcome})\nID: {memory.id}"


# -- the profile ----------------------------------------------------------------------------

REMEMBER_DESCRIPTION = (
    "Store new memories from conversation messages. Use at the end of a conversation once "
    "the user's goals are met, when the user shares personal information or preferences, "
    "and after significant decisions or conclusions. Check with recall first to avoid "
    "duplicates; do not store trivial or temporary information. Names stored memories the "
    "new ones may contradict."
)
RECALL_DESCRIPTION = (
    "Semantic search for relevant memories. Use when the user asks 'What do I…', 'What's "
    "my…', refers to past conversations, or before personalised recommendations. Richer "
    "queries match better. Results are ranked by relevance, then importance and recency "
    "(score = relevance × (60% + 25% importance + 15% recency)); their [mem_…] ids can be "
    "passed to log_decision.memoriesConsidered."
)
RECALL_RECENT_DESCRIPTION = (
    "Recent memories, newest first. Use for 'what have we discussed recently?', 'catch me "
    "up', or temporal context before a topic search. Faster than recall."
)
GET_CONTEXT_DESCRIPTION = (
    "A formatted overview of the user: identity, preferences, current focus and how-to. "
    "Call it first in every new conversation; use focus to narrow it to some life domains."
)
FORGET_PREVIEW_DESCRIPTION = (
    "Preview what a forget request would do: which memories would be forgotten (deleted), "
    "rewritten or kept. Always use before forgetting. Show the plan to the user; it expires "
    "after 24 hours."
)
FORGET_CONFIRM_DESCRIPTION = (
    "Execute a reviewed forget plan. Only after the user has seen the forget_preview result "
    "and explicitly confirmed. This is permanent."
)
LOG_DECISION_DESCRIPTION = (
    "Record a decision you made or applied (e.g. approved_discount, denied_refund) with its "
    "outcome, rationale, the policy applied and the memories considered, so later decisions "
    "can follow precedents. Mark precedent-setting decisions and policy exceptions."
)

GUIDANCE = """\
You have long-term memory tools for this user:
- get_context(maxTokens?, focus?): call FIRST in every new conversation for an overview of \
the user.
- recall(query, topK?, filters?): search memories by meaning before personalised answers or \
when the user refers to the past; check rather than guess. Use filters.decisionsOnly and the \
other decision filters to find precedents.
- recall_recent(limit?, since?, filters?): what was discussed recently.
- remember(messages, context?): at the end of a conversation, or when the user shares \
lasting information, store the messages; facts are extracted from them.
- log_decision(action, outcome, rationale, …): record significant decisions and why.
- forget_preview(query) then forget_confirm(planId): when the user asks you to forget \
something. Show the preview and confirm only after the user explicitly agrees.
Do not store trivial or temporary information.
"""

PROFILE = Profile(
    name="hyperspark",
    description="HyperSpark Memory (seed 003): remember, recall, recall_recent, get_context, "
    "forget_preview / forget_confirm and log_decision, with decision filters and org-wide "
    "search for admins.",
    tools=(
        define(
            "remember",
            REMEMBER_DESCRIPTION,
            RememberArgs,
            remember_,
            SafetyTier.SIDE_EFFECTING,
            uses_llm=True,
        ),
        define("recall", RECALL_DESCRIPTION, RecallArgs, recall, SafetyTier.READ_ONLY),
        define(
            "recall_recent",
            RECALL_RECENT_DESCRIPTION,
            RecallRecentArgs,
            recall_recent,
            SafetyTier.READ_ONLY,
        ),
        define(
            "get_context",
            GET_CONTEXT_DESCRIPTION,
            GetContextArgs,
            get_context_,
            SafetyTier.READ_ONLY,
        ),
        # Read-only for the user's memories: it only stores a plan that confirm needs. Still
        # limited like a write: a plan is stored, and an LLM may be asked (issue 27).
        define(
            "forget_preview",
            FORGET_PREVIEW_DESCRIPTION,
            ForgetPreviewArgs,
            forget_preview_,
            SafetyTier.READ_ONLY,
            uses_llm=True,
            limited=True,
        ),
        define(
            "forget_confirm",
            FORGET_CONFIRM_DESCRIPTION,
            ForgetConfirmArgs,
            forget_confirm_,
            SafetyTier.SIDE_EFFECTING,
        ),
        define(
            "log_decision",
            LOG_DECISION_DESCRIPTION,
            LogDecisionArgs,
            log_decision_,
            SafetyTier.SIDE_EFFECTING,
        ),
    ),
    guidance=GUIDANCE,
)
