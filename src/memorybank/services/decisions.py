"""Decision memories (seed 003's ``log_decision``) and the recall filters over them.

A decision is a memory whose :attr:`~memorybank.model.Memory.decision` holds what was decided
(``action``), how it turned out, why, under which policy, and whether it sets a precedent or
makes an exception. It is searchable like any memory (its text names the action and the
rationale), and :class:`DecisionFilter` narrows recall to decisions by those fields.

How the filter runs: every decision memory carries ``metadata["kind"] == "decision"``, so
"decisions only" is pushed into the store's candidate queries (SQL). The finer conditions
(outcome, precedent, exception, action, policy) are checked in Python on those decision
candidates: for recent memories by paging until enough match (exact), for search over the
best :data:`SEARCH_POOL` decision candidates (a decision ranked below that is not found).

>>> caller = Caller(user_id="sam")
>>> memory = log_decision(bank, caller, "approved_discount", "successful",
...                       "5-year customer; within the 15% limit", policy_applied="discount_v2")
>>> print(memory.content)
Decision approved_discount (successful): 5-year customer; within the 15% limit [policy discount_v2]
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as PydanticValidationError

from memorybank.core.records import save_records
from memorybank.core.scopes import scope_set
from memorybank.errors import NotFound, ValidationError
from memorybank.model import (
    Caller,
    Category,
    Decision,
    DecisionOutcome,
    Domain,
    Memory,
    Ring,
    SearchHit,
    Source,
    utcnow,
)
from memorybank.rules.filtering import parse_since
from memorybank.rules.policy import validate_memory
from memorybank.rules.pydantic_errors import pydantic_message

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank

#: The metadata every decision memory carries, so stores can select decisions in SQL.
DECISION_METADATA = {"kind": "decision"}
#: How many decision candidates a filtered search looks at, at most.
SEARCH_POOL = 1000
_PAGE = 500

DecisionSince = Literal["7d", "30d", "90d", "quarter", "year"]
_SINCE_DAYS = {"7d": 7, "30d": 30, "90d": 90}


def log_decision(
    bank: MemoryBank,
    caller: Caller,
    action: str,
    outcome: DecisionOutcome | str,
    rationale: str,
    policy_applied: str | None = None,
    precedent: bool = False,
    exception: bool = False,
    memories_considered: Sequence[str] = (),
    *,
    domain: Domain | str | None = None,
) -> Memory:
    """Store one decision as an episodic memory of the caller (in ``caller.project_id`` if set).

    Every id in ``memories_considered`` must be a memory the caller can see. Decisions are
    records of events, so two alike are both kept (no duplicate check). Importance is 6, +2
    for a precedent (it is meant to be recalled), +1 for an exception.

    >>> caller = Caller(user_id="sam")
    >>> memory = log_decision(bank, caller, "denied_refund", "pending", "Outside the 30-day window",
    ...                       policy_applied="refund_policy_v2")
    >>> memory.decision.action, memory.ring, memory.importance
    ('denied_refund', <Ring.EPISODIC: 'episodic'>, 6)
    """
    scope_set(caller.user_id, caller.project_id)  # validates the caller
    decision = _decision(
        action, outcome, rationale, policy_applied, precedent, exception, memories_considered
    )
    for index, memory_id in enumerate(decision.memories_considered):
        try:
            bank.get(memory_id, caller.user_id, project_id=caller.project_id)
        except NotFound as exc:
            raise ValidationError(
                f"memoriesConsidered[{index}] {memory_id!r} is not one of your memories: pass "
                "ids shown by recall, like [mem_…]",
                field="memoriesConsidered",
            ) from exc
    memory = _record(bank, caller, decision, _domain(domain))
    return save_records(bank, [memory], actor=caller.user_id, role=caller.role)[0]


def _decision(
    action: str,
    outcome: DecisionOutcome | str,
    rationale: str,
    policy_applied: str | None,
    precedent: bool,
    exception: bool,
    memories_considered: Sequence[str],
) -> Decision:
    """The decision as given, with a validation error naming the seed's argument."""
    try:
        return Decision(
            action=" ".join(action.split()) if isinstance(action, str) else action,
            outcome=outcome,
            rationale=rationale.strip() if isinstance(rationale, str) else rationale,
            policy_applied=policy_applied or None,
            precedent=precedent,
            exception=exception,
            memories_considered=tuple(memories_considered),
        )
    except PydanticValidationError as exc:
        where = exc.errors()[0]["loc"]
        field = _CAMEL.get(str(where[0]), str(where[0])) if where else None
        raise ValidationError(pydantic_message(exc, most=1, names=_CAMEL), field=field) from exc


def _domain(domain: Domain | str | None) -> Domain | None:
    try:
        return None if domain is None else Domain(domain)
    except ValueError as exc:
        valid = ", ".join(d.value for d in Domain)
        raise ValidationError(
            f"unknown domain {domain!r}: use one of {valid}", field="domain"
        ) from exc


def _record(bank: MemoryBank, caller: Caller, decision: Decision, area: Domain | None) -> Memory:
    """The episodic memory that records ``decision``."""
    content = _content(decision)
    if len(content) > bank.policy.content_max:
        raise ValidationError(
            f"rationale too long: the decision would be {len(content)} characters, maximum "
            f"{bank.policy.content_max} — keep the rationale to a few sentences",
            field="rationale",
        )
    content, category = validate_memory(content, Category.CONTEXT, settings=bank.policy)
    metadata: dict[str, Any] = dict(DECISION_METADATA)
    if caller.thread_id is not None:
        # Not the session_id: that would splice the decision into the conversation's turns.
        metadata["thread_id"] = caller.thread_id
    now = utcnow()
    return Memory(
        user_id=caller.user_id,
        project_id=caller.project_id,
        content=content,
        category=category,
        ring=Ring.EPISODIC,
        domain=area,
        metadata=metadata,
        importance=min(10, 6 + 2 * decision.precedent + decision.exception),
        source=Source.AI,
        created_by=caller.user_id,
        created_at=now,
        updated_at=now,
        decision=decision,
    )


_CAMEL = {
    "policy_applied": "policyApplied",
    "memories_considered": "memoriesConsidered",
}


def _content(decision: Decision) -> str:
    """The searchable text: the action, its outcome and the rationale."""
    text = f"Decision {decision.action} ({decision.outcome.value}): {decision.rationale}"
    if decision.policy_applied:
        text += f" [policy {decision.policy_applied}]"
    return text


class DecisionFilter(BaseModel):
    """Seed 003's decision filters for recall. Any condition set means "decisions only".

    >>> DecisionFilter(outcome="failed").active
    True
    >>> DecisionFilter().active
    False
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    decisions_only: bool = False
    outcome: DecisionOutcome | None = None
    precedents_only: bool = False
    exceptions_only: bool = False
    since: DecisionSince | None = None
    action: str | None = None
    policy_applied: str | None = None

    @property
    def active(self) -> bool:
        """Whether this filter narrows anything."""
        return self != DecisionFilter()

    def since_time(self, now: datetime | None = None) -> datetime | None:
        """The earliest creation time ``since`` allows. ``quarter`` and ``year`` mean the
        current calendar quarter and year (UTC); the others count days back from now.

        >>> DecisionFilter(since="quarter").since_time(datetime(2025, 5, 17, tzinfo=UTC))
        datetime.datetime(2025, 4, 1, 0, 0, tzinfo=datetime.timezone.utc)
        """
        if self.since is None:
            return None
        now = now or utcnow()
        if self.since == "year":
            return datetime(now.year, 1, 1, tzinfo=UTC)
        if self.since == "quarter":
            return datetime(now.year, 3 * ((now.month - 1) // 3) + 1, 1, tzinfo=UTC)
        return now - timedelta(days=_SINCE_DAYS[self.since])

    def matches(self, memory: Memory, now: datetime | None = None) -> bool:
        """Whether ``memory`` is a decision meeting every condition."""
        decision = memory.decision
        if decision is None:
            return not self.active
        since = self.since_time(now)
        checks = (
            self.outcome is None or decision.outcome == self.outcome,
            not self.precedents_only or decision.precedent,
            not self.exceptions_only or decision.exception,
            since is None or memory.created_at >= since,
            self.action is None or decision.action.casefold() == self.action.casefold(),
            self.policy_applied is None
            or (decision.policy_applied or "").casefold() == self.policy_applied.casefold(),
        )
        return all(checks)


def _narrowed(decisions: DecisionFilter, filters: dict[str, Any]) -> dict[str, Any]:
    """``filters`` plus what SQL can do for ``decisions``: the decision marker and the
    later of the two "since" times."""
    out = dict(filters)
    out["metadata"] = {**(filters.get("metadata") or {}), **DECISION_METADATA}
    times = [t for t in (parse_since(filters.get("since")), decisions.since_time()) if t]
    if times:
        out["since"] = max(times)
    return out


def filtered_search(
    bank: MemoryBank,
    user_id: str,
    query: str,
    decisions: DecisionFilter,
    *,
    limit: int = 10,
    **filters: Any,
) -> builtins.list[SearchHit]:
    """:meth:`MemoryBank.search` narrowed by ``decisions`` (other keywords pass through).

    >>> caller = Caller(user_id="u1")
    >>> _ = log_decision(bank, caller, "refunded_order", "successful", "Item arrived broken")
    >>> _ = log_decision(bank, caller, "refunded_order", "failed", "The card had expired")
    >>> failed = filtered_search(bank, "u1", "refunds", DecisionFilter(outcome="failed"))
    >>> [hit.memory.content for hit in failed]
    ['Decision refunded_order (failed): The card had expired']
    """
    if not decisions.active:
        return bank.search(user_id, query, limit=limit, **filters)
    pool = min(SEARCH_POOL, max(limit * 5, 100))
    hits = bank.search(user_id, query, limit=pool, **_narrowed(decisions, filters))
    now = utcnow()
    return [h for h in hits if decisions.matches(h.memory, now)][:limit]


def filtered_recent(
    bank: MemoryBank,
    user_id: str,
    decisions: DecisionFilter,
    *,
    limit: int = 30,
    **filters: Any,
) -> builtins.list[Memory]:
    """The newest current memories (:meth:`MemoryBank.list` of those a newer one did not
    replace) narrowed by ``decisions``: newest first, exact (pages through the caller's
    decisions until ``limit`` match)."""
    if not 1 <= limit <= 500:
        raise ValidationError(f"limit {limit} must be between 1 and 500", field="limit")
    if not decisions.active:
        return bank.list(user_id, limit=limit, superseded=False, **filters)
    narrowed = _narrowed(decisions, filters)
    now = utcnow()
    found: builtins.list[Memory] = []
    offset = 0
    while len(found) < limit:
        page = bank.list(user_id, limit=_PAGE, offset=offset, **narrowed)
        found += [m for m in page if decisions.matches(m, now)]
        if len(page) < _PAGE:
            break
        offset += _PAGE
    return found[:limit]


__all__ = [
    "DECISION_METADATA",
    "SEARCH_POOL",
    "DecisionFilter",
    "DecisionSince",
    "filtered_recent",
    "filtered_search",
    "log_decision",
]
