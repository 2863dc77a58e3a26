"""Auto-recall over HTTP: ``POST /api/context`` renders the memory block for the user's current
message (:func:`memorybank.services.prompt.context_for`), for an app to put in its system prompt
before each answer."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from memorybank.rules.ranking import RECALL_MIN_RELEVANCE
from memorybank.rules.tokens import count_tokens
from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep, thread_of, tool_context
from memorybank.server.execution import searching
from memorybank.server.openapi import documented
from memorybank.server.routes.tools import find_profile
from memorybank.server.schemas import QUERY_MAX, Id
from memorybank.services.prompt import context_for, system_prompt

router = APIRouter(tags=["tools"])


class RecalledContext(BaseModel):
    """The memory block for one message, and its size in tokens."""

    context: str
    tokens: int


class ContextRequest(BaseModel):
    """``POST /api/context``: the user's current message and how much room the block has."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(max_length=QUERY_MAX)
    thread_id: Id | None = None
    budget: int = Field(default=500, ge=50, le=20_000)
    min_relevance: float = Field(default=RECALL_MIN_RELEVANCE, ge=0.0, le=1.0)
    # With a tool profile, its guidance leads the block (as ``GET /api/prompt``).
    profile: str | None = None


@router.post("/api/context", responses=documented(RecalledContext, 404, 429))
@searching
def recall_context(
    body: ContextRequest, principal: PrincipalDep, bank: BankDep, accounts: AccountsDep
) -> dict[str, Any]:
    """The always-loaded memories plus those relevant to ``message`` above ``min_relevance``,
    within ``budget`` tokens; nothing beyond the always-loaded part when nothing is relevant."""
    ctx = tool_context(accounts, principal, thread_of(accounts, principal, body.thread_id))
    if body.profile is None:
        text = context_for(bank, ctx, body.message, body.budget, min_relevance=body.min_relevance)
    else:
        guidance = find_profile(body.profile).guidance
        text = system_prompt(
            bank, ctx, guidance, body.budget, message=body.message, min_relevance=body.min_relevance
        )
    return {"context": text, "tokens": count_tokens(text)}


__all__ = ["ContextRequest", "RecalledContext", "router"]
