"""memorybank_toolset: a profile's tools in a pydantic-ai Agent, driven offline by pydantic-ai's
own test doubles (FunctionModel scripts the calls, TestModel calls every tool it is given)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402

from memorybank import MemoryBank  # noqa: E402
from memorybank.integrations.pydantic_ai import memorybank_toolset  # noqa: E402
from memorybank.tools import Caller, profile, to_json_schema  # noqa: E402

SAM = Caller(user_id="sam")


def ask(agent: Agent[None, str], prompt: str) -> str:
    """The agent's answer, from a run on an event loop of its own. (``run_sync`` would leave an
    open loop as the thread's default, which a later ``asyncio.run`` in this process drops
    unclosed: a ResourceWarning, an error under this suite's warning filter.)"""
    return asyncio.run(agent.run(prompt)).output


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def scripted(tool: str, arguments: dict[str, Any]) -> FunctionModel:
    """A model that calls ``tool`` once, then answers with what the tool returned (as JSON)."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = _returns(messages)
        if not returned:
            return ModelResponse(parts=[ToolCallPart(tool, arguments)])
        return ModelResponse(parts=[TextPart(json.dumps(returned[-1].content))])

    return FunctionModel(respond)


def test_the_agent_remembers_and_recalls(bank: MemoryBank) -> None:
    toolset = memorybank_toolset(bank, caller=SAM)
    fact = {"fact": "User drinks oolong tea every morning", "category": "preference"}
    agent = Agent(scripted("remember", fact), toolsets=[toolset])
    saved = json.loads(ask(agent, "I drink oolong tea every morning"))
    assert saved["success"] is True
    stored = bank.get(saved["id"], "sam")
    assert (stored.content, stored.category.value) == (fact["fact"], "preference")
    agent = Agent(scripted("recall", {"query": "what does sam drink?"}), toolsets=[toolset])
    recalled = json.loads(ask(agent, "What do I drink?"))
    assert recalled["facts"][0] == {"id": saved["id"], "fact": fact["fact"]}


def test_the_tools_are_the_profiles(bank: MemoryBank) -> None:
    seen: dict[str, Any] = {}

    def look(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.update({t.name: t.parameters_json_schema for t in info.function_tools})
        return ModelResponse(parts=[TextPart("ok")])

    for name in ["default", "oxydra"]:
        seen.clear()
        toolset = memorybank_toolset(bank, caller=SAM, profile=name)
        ask(Agent(FunctionModel(look), toolsets=[toolset]), "hi")
        expected = {t["name"]: t["parameters"] for t in to_json_schema(name)["tools"]}
        assert seen == expected


def test_test_model_calls_every_tool(bank: MemoryBank) -> None:
    """TestModel fills each tool's schema with made-up values: the dispatcher answers what it
    cannot use with an error the model can read, and the run goes on."""
    toolset = memorybank_toolset(bank, caller=SAM)
    output = json.loads(ask(Agent(TestModel(), toolsets=[toolset]), "go"))
    assert set(output) == {"remember", "recall", "forget"}
    assert all("success" in answer for answer in output.values())


def test_bad_arguments_come_back_as_an_answer(bank: MemoryBank) -> None:
    toolset = memorybank_toolset(bank, caller=SAM)
    agent = Agent(scripted("remember", {"fact": "hi"}), toolsets=[toolset])
    answer = json.loads(ask(agent, "hi"))
    assert answer["success"] is False and "too short" in answer["error"]
    assert bank.count("sam") == 0


def test_in_a_project_the_project_variant_is_offered(bank: MemoryBank) -> None:
    caller = Caller(user_id="sam", project_id="apollo")
    toolset = memorybank_toolset(bank, caller=caller)
    fact = {"fact": "The team ships on Fridays", "scope": "project"}
    answer = json.loads(ask(Agent(scripted("remember", fact), toolsets=[toolset]), "x"))
    assert bank.get(answer["id"], "max", project_id="apollo").project_id == "apollo"


def test_no_tools_when_memory_is_off(bank: MemoryBank) -> None:
    toolset = memorybank_toolset(bank, caller=Caller(user_id="sam", memory_enabled=False))
    assert toolset.tools == {}
    seen: list[str | None] = []

    def look(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions)
        return ModelResponse(parts=[TextPart("ok")])

    ask(Agent(FunctionModel(look), toolsets=[toolset]), "hi")
    assert seen == [None]


def test_instructions(bank: MemoryBank) -> None:
    bank.save("sam", "User's name is Sam Green", "identity")
    seen: list[str | None] = []

    def look(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions)
        return ModelResponse(parts=[TextPart("ok")])

    guidance = profile("default").guidance.strip()  # pydantic-ai trims instructions
    for instructions in ["guidance", "memories", None]:
        toolset = memorybank_toolset(bank, caller=SAM, instructions=instructions)  # type: ignore[arg-type]
        ask(Agent(FunctionModel(look), toolsets=[toolset]), "What is my name?")
    assert seen[0] == guidance
    assert seen[1] is not None and seen[1].startswith(guidance)
    assert "User's name is Sam Green" in seen[1]
    assert seen[2] is None
    with pytest.raises(ValueError, match="instructions"):
        memorybank_toolset(bank, caller=SAM, instructions="all")  # type: ignore[arg-type]
