"""Auto-recall over HTTP: ``POST /api/auto-recall`` renders the memory block for the user's
current message (:func:`memorybank.core.prompt.auto_recall`), for an app to put in its
system prompt before each answer. It answers ``{"prompt", "tokens"}`` as ``GET /api/prompt``
does."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from memorybank.core.bank import MemoryBank
from memorybank.core.prompt import auto_recall, system_prompt
from memorybank.rules.ranking import RECALL_MIN_RELEVANCE
from memorybank.rules.tokens import count_tokens
from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep, caller_of, thread_of
from memorybank.server.execution import reading
from memorybank.server.openapi import documented
from memorybank.server.principals import Principal
from memorybank.server.routes.tools import find_profile
from memorybank.server.schemas import QUERY_MAX, Id, PromptBlock, RequestBody
from memorybank.services.accounts import Accounts

router = APIRouter(tags=["tools"])


class AutoRecallRequest(RequestBody):
    """``POST /api/auto-recall``: the user's current message and how much room the block has."""

    message: str = Field(max_length=QUERY_MAX)
    thread_id: Id | None = None
    budget: int = Field(default=500, ge=50, le=20_000)
    min_relevance: float = Field(default=RECALL_MIN_RELEVANCE, ge=0.0, le=1.0)
    # With a tool profile, its guidance leads the block (as ``GET /api/prompt``).
    profile: str | None = None


def recalled_block(
    body: AutoRecallRequest, principal: Principal, bank: MemoryBank, accounts: Accounts
) -> str:
    """The auto-recall block ``body`` asks for, in the thread's scope."""
    caller = caller_of(accounts, principal, thread_of(accounts, principal, body.thread_id))
    if body.profile is None:
        return auto_recall(
            bank, caller, body.message, body.budget, min_relevance=body.min_relevance
        )
    guidance = find_profile(body.profile).guidance
    return system_prompt(
        bank, caller, guidance, body.budget, message=body.message, min_relevance=body.min_relevance
    )


@router.post("/api/auto-recall", responses=documented(PromptBlock, 404, 429))
@reading
def auto_recall_block(
    body: AutoRecallRequest, principal: PrincipalDep, bank: BankDep, accounts: AccountsDep
) -> dict[str, Any]:
    """The always-loaded memories plus those relevant to ``message`` above ``min_relevance``,
    within ``budget`` tokens; nothing beyond the always-loaded part when nothing is relevant."""
    text = recalled_block(body, principal, bank, accounts)
    return {"prompt": text, "tokens": count_tokens(text)}


__all__ = ["AutoRecallRequest", "recalled_block", "router"]
