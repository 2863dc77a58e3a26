"""Seed 000 (blah.chat): saveMemory / searchMemories schemas, response shapes and checklist."""

from __future__ import annotations

from typing import Any

import pytest

from memorybank import MemoryBank
from memorybank.core.prompt import system_prompt
from memorybank.tools import Caller, call, profile, to_anthropic, to_openai

BLAH = profile("blah")
CTX = Caller(user_id="john", thread_id="chat-1")
CATEGORIES = ["identity", "preference", "project", "context", "relationship"]


def save(bank: MemoryBank, content: str, category: str, reasoning: str = "Useful later on") -> Any:
    args = {"content": content, "category": category, "reasoning": reasoning}
    return call(bank, BLAH, "saveMemory", args, CTX)


def test_schemas_match_the_seed() -> None:
    by_name = {t["name"]: t["input_schema"] for t in to_anthropic(BLAH)}
    assert list(by_name) == ["saveMemory", "searchMemories"]
    save_schema = by_name["saveMemory"]
    assert save_schema["required"] == ["content", "category", "reasoning"]
    content = save_schema["properties"]["content"]
    assert (content["minLength"], content["maxLength"]) == (10, 500)
    assert "third person" in content["description"]
    assert save_schema["properties"]["category"]["enum"] == CATEGORIES
    reasoning = save_schema["properties"]["reasoning"]
    assert (reasoning["minLength"], reasoning["maxLength"]) == (10, 200)
    search = by_name["searchMemories"]
    assert search["required"] == ["query"]
    assert search["properties"]["limit"] == {
        "type": "integer",
        "description": "Maximum number of memories to return",
        "default": 5,
        "maximum": 20,
        "minimum": 1,
    }
    assert search["properties"]["category"]["enum"] == CATEGORIES
    strict = to_openai(BLAH)[1]["function"]["parameters"]["properties"]["category"]
    assert strict["enum"] == [*CATEGORIES, None]


def test_guidance_has_the_seed_lists_and_third_person_rule() -> None:
    assert "CALL saveMemory WHEN" in BLAH.guidance
    assert "DO NOT CALL saveMemory FOR" in BLAH.guidance
    assert '"I prefer TypeScript" -> "User prefers TypeScript"' in BLAH.guidance
    assert "third person" in BLAH.tool("saveMemory").description  # type: ignore[union-attr]


def test_remember_that_i_prefer_dark_mode(bank: MemoryBank) -> None:
    out = save(bank, "Remember that I prefer dark mode", "preference", "UI preference to apply")
    assert set(out) == {"success", "message", "memoryId", "content", "category"}
    assert out["success"] is True
    assert out["message"] == "Memory saved successfully"
    assert out["content"] == "User prefers dark mode"
    assert out["category"] == "preference"
    assert bank.get(out["memoryId"], "john").reasoning == "UI preference to apply"


@pytest.mark.parametrize(
    ("said", "category", "stored"),
    [
        ("My name is John", "identity", "User's name is John"),
        (
            "I work with Sarah on the backend",
            "relationship",
            "User works with Sarah on the backend",
        ),
        ("Save this: I'm building a SaaS product", "project", "User is building a SaaS product"),
        ("I prefer TypeScript", "preference", "User prefers TypeScript"),
        ("I'm based in London", "identity", "User is based in London"),
    ],
)
def test_checklist_and_third_person(
    bank: MemoryBank, said: str, category: str, stored: str
) -> None:
    out = save(bank, said, category)
    assert out["success"] is True, out
    assert (out["content"], out["category"]) == (stored, category)


def test_seed_scenarios(bank: MemoryBank) -> None:
    first = save(
        bank,
        "User prefers using TypeScript for all projects",
        "preference",
        "Core tech stack preference that affects future recommendations",
    )
    assert first["success"] is True
    second = save(
        bank,
        "User is building a chat application named blah.chat using Next.js 15",
        "project",
        "Active project with specific tech stack details for context",
    )
    assert (
        second["content"] == "User is building a chat application named blah.chat using Next.js 15"
    )
    assert bank.get(second["memoryId"], "john").importance >= 7


def test_duplicate_shape(bank: MemoryBank) -> None:
    assert save(bank, "User prefers using TypeScript", "preference")["success"] is True
    out = save(bank, "User prefers using TypeScript", "preference")
    assert out == {
        "success": False,
        "duplicate": True,
        "message": "Similar memory already exists",
        "existingContent": "User prefers using TypeScript",
    }
    assert bank.count("john") == 1


def test_too_short_and_too_long_use_the_seed_wording(bank: MemoryBank) -> None:
    assert save(bank, "Likes tea", "preference") == {
        "success": False,
        "error": "Content too short (minimum 10 characters)",
    }
    # Padding does not count: the seed's limit is on the fact itself.
    assert save(bank, "   tea   " + " " * 20, "preference")["error"] == (
        "Content too short (minimum 10 characters)"
    )
    assert save(bank, "User likes " + "tea " * 125, "preference") == {
        "success": False,
        "error": "Content too long (maximum 500 characters)",
    }
    assert save(bank, "User likes tea a lot", "preference", "short") == {
        "success": False,
        "error": "Reasoning too short (minimum 10 characters)",
    }
    assert save(bank, "User likes tea a lot", "preference", "x" * 201)["error"] == (
        "Reasoning too long (maximum 200 characters)"
    )
    assert bank.count("john") == 0


def test_exact_limits_are_accepted(bank: MemoryBank) -> None:
    assert save(bank, "User is 42", "identity")["success"] is True  # exactly 10 characters
    long_fact = ("User's notes: " + "alpha beta gamma delta " * 30)[:500]
    assert save(bank, long_fact, "context", "r" * 200)["success"] is True


def test_unknown_category_is_refused(bank: MemoryBank) -> None:
    out = save(bank, "User likes green tea", "hobby")
    assert out["success"] is False and "category" in out["error"]


def test_first_person_that_cannot_be_rephrased_goes_back_to_the_model(bank: MemoryBank) -> None:
    out = save(bank, "We should always use Postgres here", "preference")
    assert out["success"] is False and "third person" in out["error"]


def test_search_after_saving(bank: MemoryBank) -> None:
    save(bank, "I prefer dark mode in every editor", "preference")
    save(bank, "My name is John", "identity")
    out = call(bank, BLAH, "searchMemories", {"query": "dark theme"}, CTX)
    assert out["success"] is True and out["count"] >= 1
    top = out["memories"][0]
    assert set(top) == {"memoryId", "content", "category", "importance", "score"}
    assert top["content"] == "User prefers dark mode in every editor"
    only = call(bank, BLAH, "searchMemories", {"query": "dark theme", "category": "identity"}, CTX)
    assert [m["category"] for m in only["memories"]] == ["identity"]
    other = call(bank, BLAH, "searchMemories", {"query": "dark"}, Caller(user_id="eve"))
    assert other == {
        "success": True,
        "count": 0,
        "memories": [],
        "message": "No matching memories found",
    }


def test_high_importance_memories_reach_the_system_prompt(bank: MemoryBank) -> None:
    save(bank, "My name is John", "identity")
    save(bank, "I'm working on a migration this sprint", "context")
    prompt = system_prompt(bank, CTX, BLAH.guidance)
    assert "User's name is John" in prompt
    assert "migration" not in prompt  # context memories are searched on demand


def test_the_seeds_required_category_is_kept(bank: MemoryBank) -> None:
    # Seed 000's saveMemory requires a category: nothing is inferred over the model's choice.
    out = call(
        bank,
        BLAH,
        "saveMemory",
        {"content": "User's name is Kim", "reasoning": "Who they are"},
        CTX,
    )
    assert out["success"] is False
    told = save(bank, "User prefers tea over coffee", "context")
    assert told["success"] is True and told["category"] == "context"
