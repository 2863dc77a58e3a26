"""A memorybank tool profile as a pydantic-ai toolset.

:func:`memorybank_toolset` turns any profile (``"default"``: remember, recall, forget; or a
seed's, or a :class:`~memorybank.tools.Profile` of your own) into a ``FunctionToolset`` an
``Agent`` can use. Each tool is offered with the profile's own JSON schema, and each call runs
through memorybank's dispatcher (:func:`memorybank.tools.call`): the arguments are validated,
the write limit is counted, the tool runs within its timeout, and the model always gets an
answer it can read (``{"success": false, "error": …}`` instead of an exception).

The toolset is for one :class:`~memorybank.model.Caller`, which the application sets (the
model never chooses whose memory it touches): build one per user or conversation, and pass it
to ``Agent(toolsets=[...])`` or to a run (``agent.run(..., toolsets=[...])``). As
:func:`memorybank.tools.toolkit` decides, it is empty when the caller has memory turned off.

The toolset's instructions teach the model the tools: ``"guidance"`` (the default) is the
profile's guidance; ``"memories"`` is the guidance plus the caller's pre-loaded memories,
rebuilt for each run from its prompt (:func:`memorybank.tools.system_prompt`); ``None`` adds
none.

>>> import asyncio
>>> from pydantic_ai import Agent
>>> from pydantic_ai.models.test import TestModel
>>> from memorybank.tools import Caller
>>> toolset = memorybank_toolset(bank, caller=Caller(user_id="sam"))
>>> sorted(toolset.tools)
['forget', 'recall', 'remember']
>>> agent = Agent(TestModel(call_tools=["recall"]), toolsets=[toolset])
>>> '"success":true' in asyncio.run(agent.run("What do I like?")).output
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

try:
    from pydantic_ai import FunctionToolset, RunContext, Tool
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "memorybank.integrations.pydantic_ai needs pydantic-ai: "
        "pip install 'memorybank[pydantic-ai]'"
    ) from exc

from memorybank.core.bank import MemoryBank
from memorybank.model import Caller
from memorybank.tools import Profile, call, system_prompt, to_json_schema, toolkit
from memorybank.tools import profile as find_profile

if TYPE_CHECKING:
    from collections.abc import Callable

    from memorybank.providers.llm.client import JSONCompleter

__all__ = ["Instructions", "memorybank_toolset"]

#: What the toolset tells the model: the profile's guidance, that plus the caller's memories,
#: or nothing.
Instructions = Literal["guidance", "memories"] | None


def memorybank_toolset(
    bank: MemoryBank,
    *,
    caller: Caller,
    profile: Profile | str = "default",
    instructions: Instructions = "guidance",
    memory_budget_tokens: int = 500,
    llm: JSONCompleter | None = None,
    id: str | None = None,  # noqa: A002 - pydantic-ai's own name for it
) -> FunctionToolset[Any]:
    """The tools of ``profile`` for ``caller`` on ``bank``, as a pydantic-ai toolset.

    ``llm`` is the chat model for the tools that use one (``None``: the bank's own);
    ``memory_budget_tokens`` bounds the memories of ``instructions="memories"``; ``id`` names
    the toolset for durable execution.
    """
    if instructions not in ("guidance", "memories", None):
        raise ValueError(f"instructions {instructions!r} is not 'guidance', 'memories' or None")
    offered = toolkit(profile if isinstance(profile, Profile) else find_profile(profile), caller)
    tools = [
        Tool.from_schema(
            _runner(bank, offered, definition["name"], caller, llm),
            name=definition["name"],
            description=definition["description"],
            json_schema=definition["parameters"],
        )
        for definition in to_json_schema(offered)["tools"]
    ]
    return FunctionToolset(
        tools,
        id=id,
        instructions=_instructions(bank, offered, caller, instructions, memory_budget_tokens),
    )


def _runner(
    bank: MemoryBank,
    offered: Profile,
    name: str,
    caller: Caller,
    llm: JSONCompleter | None,
) -> Callable[..., Any]:
    """The function pydantic-ai calls (on a worker thread: it is synchronous) for tool ``name``:
    the dispatcher validates the model's arguments, so none are checked before it."""

    def run(**arguments: Any) -> Any:
        return call(bank, offered, name, arguments, caller, llm=llm)

    run.__name__ = name
    return run


def _instructions(
    bank: MemoryBank,
    offered: Profile,
    caller: Caller,
    instructions: Instructions,
    budget: int,
) -> str | Callable[[RunContext[Any]], str] | None:
    if instructions is None or not offered.tools:
        return None
    if instructions == "guidance":
        return offered.guidance

    def with_memories(ctx: RunContext[Any]) -> str:
        message = ctx.prompt if isinstance(ctx.prompt, str) else None
        return system_prompt(bank, caller, offered.name, budget, message=message)

    return with_memories
