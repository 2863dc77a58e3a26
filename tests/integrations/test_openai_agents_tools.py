"""function_tools: a profile's tools in an OpenAI Agents SDK Agent, run offline with the SDK's own
scripted model double (agents.testing.ScriptedModel), tracing off."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from memorybank import MemoryBank  # noqa: E402
from memorybank.integrations.openai_agents import (  # noqa: E402
    function_tools,
    memory_instructions,
)
from memorybank.tools import Caller, profile, to_openai  # noqa: E402

SAM = Caller(user_id="sam")
OFFLINE = RunConfig(tracing_disabled=True)


def run(agent: Agent[Any], message: str) -> Any:
    """One run on an event loop of its own. (``Runner.run_sync`` would leave the thread's default
    loop open with its async generators shut down, and pydantic-ai's ``run_sync`` in a later test
    of this process would run on it and warn.)"""
    return asyncio.run(Runner.run(agent, message, run_config=OFFLINE))


def call_then_answer(tool: str, arguments: dict[str, Any]) -> ScriptedModel:
    """A model that calls ``tool`` once, then says "done"."""
    return ScriptedModel(
        [[function_call(tool, arguments, call_id="call_1")], [assistant_message("done")]]
    )


def tool_output(model: ScriptedModel) -> Any:
    """What the tool answered, as the model saw it in its second call."""
    second = model.calls[1].input
    outputs = [i for i in second if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return json.loads(outputs[-1]["output"])


def test_the_agent_remembers_and_recalls(bank: MemoryBank) -> None:
    tools = function_tools(bank, caller=SAM)
    fact = {"fact": "User drinks oolong tea every morning", "category": "preference", "id": None}
    model = call_then_answer("remember", fact)
    result = run(Agent(name="helper", model=model, tools=tools), "I drink oolong every morning")
    assert result.final_output == "done"
    saved = tool_output(model)
    assert saved["success"] is True
    assert bank.get(saved["id"], "sam").content == fact["fact"]
    model.assert_complete()

    model = call_then_answer("recall", {"query": "what does sam drink?"})
    run(Agent(name="helper", model=model, tools=tools), "What do I drink?")
    assert tool_output(model)["facts"][0] == {"id": saved["id"], "fact": fact["fact"]}


def test_the_tools_carry_the_profiles_strict_schemas(bank: MemoryBank) -> None:
    for name in ["default", "hyperspark"]:
        tools = function_tools(bank, caller=SAM, profile=name)
        expected = [d["function"] for d in to_openai(name)]
        assert [t.name for t in tools] == [f["name"] for f in expected]
        assert [t.params_json_schema for t in tools] == [f["parameters"] for f in expected]
        assert all(t.strict_json_schema for t in tools)
    loose = function_tools(bank, caller=SAM, profile="oxydra", length_constraints=False)
    assert "maxLength" not in json.dumps([t.params_json_schema for t in loose])


def test_the_model_sees_the_tools(bank: MemoryBank) -> None:
    model = ScriptedModel([[assistant_message("hello")]])
    run(Agent(name="helper", model=model, tools=function_tools(bank, caller=SAM)), "hi")
    assert model.first_call is not None
    assert [t.name for t in model.first_call.tools] == ["remember", "recall", "forget"]


def test_errors_are_answers_and_the_run_goes_on(bank: MemoryBank) -> None:
    model = call_then_answer("forget", {"id": "mem_nope"})
    result = run(Agent(name="helper", model=model, tools=function_tools(bank, caller=SAM)), "x")
    assert result.final_output == "done"
    answer = tool_output(model)
    assert answer["success"] is False and "mem_nope" in answer["error"]


def test_the_write_limit_is_counted(bank: MemoryBank) -> None:
    bank.writes.set_limit(1)
    tools = function_tools(bank, caller=SAM)
    first = call_then_answer(
        "remember", {"fact": "User lives in York", "category": None, "id": None}
    )
    run(Agent(name="helper", model=first, tools=tools), "x")
    second = call_then_answer("remember", {"fact": "User has a dog", "category": None, "id": None})
    run(Agent(name="helper", model=second, tools=tools), "x")
    assert tool_output(first)["success"] is True
    assert tool_output(second)["success"] is False
    assert bank.count("sam") == 1


def test_no_tools_when_memory_is_off(bank: MemoryBank) -> None:
    assert function_tools(bank, caller=Caller(user_id="sam", supports_tools=False)) == []


def test_memory_instructions(bank: MemoryBank) -> None:
    bank.save("sam", "User's name is Sam Green", "identity")
    model = ScriptedModel([[assistant_message("hi Sam")]])
    instructions = memory_instructions(bank, caller=SAM, before="Be brief.")
    run(Agent(name="helper", model=model, instructions=instructions), "What is my name?")
    assert model.first_call is not None
    prompt = model.first_call.system_instructions or ""
    assert prompt.startswith("Be brief.\n\n" + profile("default").guidance)
    assert "User's name is Sam Green" in prompt
    off = memory_instructions(bank, caller=Caller(user_id="sam", memory_enabled=False), before="x")
    model = ScriptedModel([[assistant_message("ok")]])
    run(Agent(name="helper", model=model, instructions=off), "hi")
    assert model.first_call is not None and model.first_call.system_instructions == "x"
