"""A memorybank tool profile as OpenAI Agents SDK function tools.

:func:`function_tools` turns any profile (``"default"``: remember, recall, forget; a seed's; or
a :class:`~memorybank.tools.Profile` of your own) into ``FunctionTool`` s for
``Agent(tools=...)``. Each is defined by the profile's strict JSON schema (the one
:func:`memorybank.tools.to_openai` exports), and ``on_invoke_tool`` dispatches the model's
arguments through memorybank's dispatcher (:func:`memorybank.tools.call`, on a worker thread:
it blocks), which validates them, counts the write limit, runs the tool within its timeout and
always answers with JSON the model can read, ``{"success": false, "error": …}`` included.

The tools are for one :class:`~memorybank.model.Caller`, set by the application (the model
never chooses whose memory it touches): build them per user or conversation, for example with
``agent.clone(tools=function_tools(bank, caller=...))``. As :func:`memorybank.tools.toolkit`
decides, there are none when the caller has memory turned off.
:func:`memory_instructions` is the matching ``instructions`` for the agent: the profile's
guidance plus the caller's pre-loaded memories, rebuilt for each run.

>>> from memorybank.tools import Caller
>>> [tool.name for tool in function_tools(bank, caller=Caller(user_id="sam"))]
['remember', 'recall', 'forget']
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

try:
    from agents import Agent, FunctionTool, RunContextWrapper
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "memorybank.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'memorybank[openai-agents]'"
    ) from exc

from memorybank.core.bank import MemoryBank
from memorybank.model import Caller
from memorybank.tools import Profile, call, system_prompt, to_openai, toolkit
from memorybank.tools import profile as find_profile

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from memorybank.providers.llm.client import JSONCompleter

__all__ = ["function_tools", "memory_instructions"]


def _offered(profile: Profile | str, caller: Caller) -> Profile:
    return toolkit(profile if isinstance(profile, Profile) else find_profile(profile), caller)


def function_tools(
    bank: MemoryBank,
    *,
    caller: Caller,
    profile: Profile | str = "default",
    llm: JSONCompleter | None = None,
    length_constraints: bool = True,
) -> list[FunctionTool]:
    """The tools of ``profile`` for ``caller`` on ``bank``, as Agents SDK function tools.

    ``llm`` is the chat model for the tools that use one (``None``: the bank's own);
    ``length_constraints=False`` leaves minLength/maxLength out of the schemas, for
    OpenAI-compatible servers that refuse them (as :func:`memorybank.tools.to_openai`).
    """
    offered = _offered(profile, caller)
    return [
        FunctionTool(
            name=function["name"],
            description=function["description"],
            params_json_schema=function["parameters"],
            on_invoke_tool=_invoker(bank, offered, function["name"], caller, llm),
            strict_json_schema=True,
        )
        for function in (
            definition["function"]
            for definition in to_openai(offered, length_constraints=length_constraints)
        )
    ]


def _invoker(
    bank: MemoryBank,
    offered: Profile,
    name: str,
    caller: Caller,
    llm: JSONCompleter | None,
) -> Callable[[ToolContext[Any], str], Awaitable[str]]:
    """``on_invoke_tool`` for tool ``name``: the model's JSON arguments, as it wrote them, go
    to the dispatcher; its answer goes back as JSON text."""

    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        del context  # who calls is ``caller``, fixed by the application
        answer = await asyncio.to_thread(call, bank, offered, name, arguments, caller, llm=llm)
        return json.dumps(answer, ensure_ascii=False)

    return invoke


def memory_instructions(
    bank: MemoryBank,
    *,
    caller: Caller,
    profile: Profile | str = "default",
    budget_tokens: int = 500,
    before: str = "",
) -> Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]:
    """Dynamic ``instructions`` for an ``Agent``: ``before`` (your own instructions), then the
    profile's guidance and ``caller``'s pre-loaded memories (:func:`memorybank.tools.
    system_prompt`), read again for each run; only ``before`` when the caller has memory off."""
    offered = _offered(profile, caller)

    async def instructions(context: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        del context, agent
        if not offered.tools:
            return before
        memory = await asyncio.to_thread(system_prompt, bank, caller, offered.name, budget_tokens)
        return f"{before}\n\n{memory}" if before else memory

    return instructions
