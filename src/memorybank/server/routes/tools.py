"""The AI's side: a profile's tool definitions, running a tool call, and the system-prompt
block."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from memorybank import tools
from memorybank.errors import NotFound, RateLimited, RoleRequired
from memorybank.rules.tokens import count_tokens
from memorybank.server.deps import (
    AccountsDep,
    BankDep,
    PrincipalDep,
    SettingsDep,
    caller_of,
    llm_for,
    thread_of,
)
from memorybank.server.error_responses import WRITE_ERRORS, StateConflict
from memorybank.server.execution import computing, reading
from memorybank.server.openapi import documented
from memorybank.server.schemas import IdParam, PromptBlock, ToolCall, ToolDefinitions, ToolResult

router = APIRouter(tags=["tools"])

#: What the dispatcher leaves to this route: a role that may not change project memory (403)
#: and a write over the caller's limit (429 with ``Retry-After``), not answers to the model.
ANSWERED_HERE = (RoleRequired, RateLimited)


def find_profile(name: str) -> tools.Profile:
    """The tool profile ``name``; :class:`~memorybank.NotFound` naming the others."""
    if name not in tools.PROFILE_NAMES:
        raise NotFound(f"no tool profile {name!r}: use one of {', '.join(tools.PROFILE_NAMES)}")
    return tools.profile(name)


@router.get("/api/tools/{profile}", responses=documented(ToolDefinitions, 404))
@reading
def tool_definitions(
    principal: PrincipalDep,
    accounts: AccountsDep,
    profile: str,
    format: Literal["openai", "anthropic", "mcp"] = "openai",
    thread_id: IdParam = None,
) -> dict[str, Any]:
    """A profile's tool definitions for a chat API, and what they cost per request; for
    ``thread_id``, the ones offered in that thread (the default profile's ``remember`` takes
    a ``scope`` when the thread is in a project; none when memory is off for it)."""
    chosen = find_profile(profile)
    if thread_id is not None:
        chosen = tools.toolkit(
            chosen, caller_of(accounts, principal, thread_of(accounts, principal, thread_id))
        )
    return {
        "profile": chosen.name,
        "format": format,
        "tools": tools.export(chosen, format),
        "token_cost": tools.token_cost(chosen, format),
    }


@router.post(
    "/api/tools/{profile}/call",
    responses=documented(ToolResult, 404, 409, 429, 502, *WRITE_ERRORS),
)
@computing
def call_tool(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    settings: SettingsDep,
    profile: str,
    body: ToolCall,
) -> dict[str, Any]:
    """Run what the model asked for, as the caller, in the thread's scope. A side-effecting
    tool is one write against the caller's write limit (429 with ``Retry-After`` over it)."""
    chosen = find_profile(profile)
    caller = caller_of(accounts, principal, thread_of(accounts, principal, body.thread_id))
    offered = tools.toolkit(chosen, caller)
    if not offered.tools:
        raise StateConflict(
            f"memory is turned off for thread {caller.thread_id!r}: offer the model no memory "
            "tools, or switch memory on with PATCH /api/threads/{id}"
        )
    with llm_for(accounts, principal, settings) as llm:
        result = tools.call(
            bank, chosen, body.name, body.arguments, caller, llm=llm, raises=ANSWERED_HERE
        )
    return {"result": result}


@router.get("/api/prompt", responses=documented(PromptBlock, 404))
@reading
def system_prompt(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    thread_id: IdParam = None,
    budget: Annotated[int, Query(ge=50, le=20_000)] = 500,
    profile: str = "default",
) -> dict[str, Any]:
    """The system-prompt block: the profile's guidance and the pre-loaded memories."""
    find_profile(profile)
    caller = caller_of(accounts, principal, thread_of(accounts, principal, thread_id))
    text = tools.system_prompt(bank, caller, profile, budget)
    return {"prompt": text, "tokens": count_tokens(text)}


__all__ = ["router"]
