"""The AI's side: a profile's tool definitions, running a tool call, and the system-prompt
block."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from memorybank import tools
from memorybank.errors import NotFound
from memorybank.server.deps import (
    AccountsDep,
    BankDep,
    PrincipalDep,
    WriteLimiterDep,
    llm_for,
    thread_of,
    tool_context,
)
from memorybank.server.errors import ERROR_RESPONSES, Conflict
from memorybank.server.execution import searching
from memorybank.server.schemas import ToolCall
from memorybank.tokens import count_tokens

router = APIRouter(tags=["tools"], responses=ERROR_RESPONSES)


def find_profile(name: str) -> tools.Profile:
    """The tool profile ``name``; :class:`~memorybank.NotFound` naming the others."""
    if name not in tools.PROFILE_NAMES:
        raise NotFound(f"no tool profile {name!r}: use one of {', '.join(tools.PROFILE_NAMES)}")
    return tools.profile(name)


@router.get("/api/tools/{profile}")
def tool_definitions(
    principal: PrincipalDep,
    profile: str,
    format: Literal["openai", "anthropic", "mcp"] = "openai",
) -> dict[str, Any]:
    """A profile's tool definitions for a chat API, and what they cost per request."""
    chosen = find_profile(profile)
    return {
        "profile": chosen.name,
        "format": format,
        "tools": tools.export(chosen, format),
        "token_cost": tools.token_cost(chosen, format),
    }


@router.post("/api/tools/{profile}/call")
def call_tool(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    limiter: WriteLimiterDep,
    profile: str,
    body: ToolCall,
) -> dict[str, Any]:
    """Run what the model asked for, as the caller, in the thread's scope."""
    chosen = find_profile(profile)
    ctx = tool_context(accounts, principal, thread_of(accounts, principal, body.thread_id))
    offered = tools.toolkit(chosen, ctx)
    if not offered.tools:
        raise Conflict(
            f"memory is turned off for thread {ctx.thread_id!r}: offer the model no memory "
            "tools, or switch memory on with PATCH /api/threads/{id}"
        )
    tool = offered.tool(body.name)
    if tool is not None and tool.tier == tools.SafetyTier.SIDE_EFFECTING:
        limiter.hit(principal.user_id)
    # What the bank refuses for the caller's role is a 403 here, not an answer to the model.
    with llm_for(accounts, principal) as llm:
        result = tools.call(
            bank, chosen, body.name, body.arguments, ctx, llm=llm, raise_role_required=True
        )
    return {"result": result}


@router.get("/api/prompt")
@searching
def prompt(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    thread_id: str | None = None,
    budget: Annotated[int, Query(ge=50, le=20_000)] = 500,
    profile: str = "default",
) -> dict[str, Any]:
    """The system-prompt block: the profile's guidance and the pre-loaded memories."""
    find_profile(profile)
    ctx = tool_context(accounts, principal, thread_of(accounts, principal, thread_id))
    text = tools.system_prompt(bank, ctx, profile, budget)
    return {"prompt": text, "tokens": count_tokens(text)}


__all__ = ["router"]
