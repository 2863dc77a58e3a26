"""Property: whatever a model sends, the dispatcher answers with JSON and never raises."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from memorybank import MemoryBank
from memorybank.tools import PROFILE_NAMES, Caller, Profile, call, profile


def _profiles() -> list[Profile]:
    found = []
    for name in PROFILE_NAMES:
        try:
            found.append(profile(name))
        except ModuleNotFoundError:  # hyperspark is written separately
            continue
    return found


PROFILES = _profiles()
TOOL_NAMES = sorted({t.name for p in PROFILES for t in p.tools})

ENABLED = [
    Caller(user_id="u1", thread_id="t1"),
    Caller(user_id="u1", project_id="p1", thread_id="t2", role="member"),
    Caller(user_id="u2", project_id="p1", role="owner"),
]
# Listed twice so most examples reach a handler; one in seven has memory switched off.
CONTEXTS = [*ENABLED, *ENABLED, Caller(user_id="u1", memory_enabled=False)]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
SAMPLE_TEXT = [
    "User prefers dark mode",
    "User likes hiking in the Alps",
    "User's manager is Priya Raman",
    "Prefers concise responses",
    "Project Apollo uses PostgreSQL 16",
    "I work with Sarah on the backend",
    "Remember that I prefer tea",
    "I",
    "",
    "   ",
    "x" * 600,
    "We should use Go",
    "User's name is Ada\x00",
    "🙂 emoji fact about the user",
    "mem_01ARZ3NDEKTSV4RRFFQ69G5FAV",
    "SELECT * FROM memories; --",
]


def _kinds(annotation: Any) -> list[Any]:
    """The types and literal values an annotation allows."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return list(args)
    if origin is typing.Annotated:
        return _kinds(args[0])
    if origin is list:
        return [list]
    if origin in (typing.Union, types.UnionType):
        return [kind for arg in args for kind in _kinds(arg)]
    return [annotation]


def good_value(annotation: Any) -> st.SearchStrategy[Any]:
    """Values of the right type, many of them still invalid (too long, first person, …)."""
    options: list[st.SearchStrategy[Any]] = []
    kinds = _kinds(annotation)
    literals = [k for k in kinds if isinstance(k, str)]
    if literals:
        options.append(st.sampled_from(literals))
    for kind in kinds:
        if kind is str:
            samples = st.sampled_from(SAMPLE_TEXT)
            options.append(samples | samples | samples | st.text(min_size=1, max_size=60))
        elif kind is bool:
            options.append(st.booleans())
        elif kind is int:
            options.append(st.integers(-2, 25))
        elif kind is list:
            options.append(
                st.lists(st.sampled_from(["work", "followup", "", "x" * 70]), max_size=3)
            )
        elif isinstance(kind, type) and issubclass(kind, BaseModel):
            fields = kind.model_fields
            options.append(
                st.fixed_dictionaries(
                    {}, optional={n: good_value(f.annotation) for n, f in fields.items()}
                )
            )
        elif kind is type(None):
            options.append(st.none())
    return st.one_of(options) if options else json_values


@st.composite
def plausible_arguments(draw: st.DrawFn, profile_: Profile, name: str) -> Any:
    """Arguments shaped like the tool's own (so handlers run), with hostile values mixed in."""
    tool = profile_.tool(name)
    if tool is None:
        return draw(st.dictionaries(st.text(max_size=10), json_values, max_size=3))
    args: dict[str, Any] = {}
    for field_name, field in tool.arguments.model_fields.items():
        roll = draw(st.integers(0, 19))
        if roll == 0:
            continue  # leave it out
        if roll == 1:
            args[field_name] = draw(json_values)
        else:
            args[field_name] = draw(good_value(field.annotation))
    if draw(st.integers(0, 19)) == 0:
        args[draw(st.text(max_size=8))] = draw(json_values)
    return args


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[Profile, Any, Any, Caller]:
    profile_ = draw(st.sampled_from(PROFILES))
    own = [t.name for t in profile_.tools]
    name = draw(
        st.sampled_from(own)
        | st.sampled_from(own)
        | st.sampled_from(own)
        | st.sampled_from(TOOL_NAMES)
        | st.text(max_size=20)
        | json_values
    )
    plausible = plausible_arguments(profile_, name if isinstance(name, str) else "")
    args = draw(
        plausible
        | plausible
        | plausible.map(json.dumps)
        | st.text(max_size=80)
        | json_values.map(json.dumps)
        | json_values
        | st.binary(max_size=20)
    )
    return profile_, name, args, draw(st.sampled_from(CONTEXTS))


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(tool_calls())
def test_dispatcher_never_raises_and_always_answers_json(
    bank: MemoryBank, tmp_path: Path, case: tuple[Profile, Any, Any, Caller]
) -> None:
    profile_, name, args, caller = case
    out = call(bank, profile_, name, args, caller)
    json.dumps(out, allow_nan=False)
    if isinstance(out, dict) and out.get("success") is False:
        if out.get("duplicate") is True:  # seed 000's duplicate shape has a message instead
            assert isinstance(out["message"], str)
            return
        error = out["error"]
        assert isinstance(error, str) and error
        # Input can always be answered with what to fix; an internal error here is a bug.
        assert "internal error" not in error, error
        for leak in ("Traceback", str(tmp_path), 'File "', "sqlite", "apsw"):
            assert leak not in error, error


# -- issue 26: a search tool answers facts; stored conversation turns are not facts ----------

_SEARCHES = {
    "default": ("recall", {"query": "Where is the user moving?"}),
    "blah": ("searchMemories", {"query": "Where is the user moving?"}),
    "supermemory": ("search_memories", {"query": "Where is the user moving?"}),
    "oxydra": ("memory_search", {"query": "Where is the user moving?"}),
}


@pytest.mark.parametrize("name", sorted(_SEARCHES))
def test_search_tools_answer_facts_not_conversation_turns(bank: MemoryBank, name: str) -> None:
    said = [
        ("user", "I'm moving to Lisbon next month, any tips?"),
        ("assistant", "The user is moving to Porto, where the user's sister lives."),
    ]
    for role, text in said:
        bank.save(
            "vic",
            text,
            "context",
            ring="episodic",
            source="conversation",
            session_id="t1",
            metadata={"role": role},
        )
    caller = Caller(user_id="vic", thread_id="t1")
    if name == "supermemory":  # its pools are its own tool's to fill
        added = call(
            bank,
            profile(name),
            "add_memory",
            {"content": "User is moving to Lisbon in June"},
            caller,
        )
        fact = added["memoryId"]
    else:
        fact = bank.save("vic", "User is moving to Lisbon in June", "context").memory_id
    tool, args = _SEARCHES[name]
    answer = json.dumps(call(bank, profile(name), tool, args, caller))
    assert "Lisbon in June" in answer and str(fact) in answer
    assert "any tips" not in answer and "Porto" not in answer
