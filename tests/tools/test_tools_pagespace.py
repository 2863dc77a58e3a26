"""Seed 002 (PageSpace): user and drive facts, the per-scope cap, removal and the prompt block."""

from __future__ import annotations

from typing import Any

from memorybank import MemoryBank
from memorybank.tools import Caller, call, pagespace_context, profile, to_anthropic
from memorybank.tools.profiles.pagespace import DEFAULT_MAX_FACTS, make_profile

PS = profile("pagespace")
OWNER = Caller(user_id="olga", project_id="drive-1", thread_id="t1", role="owner")
MEMBER = Caller(user_id="max", project_id="drive-1", thread_id="t2", role="member")
NO_DRIVE = Caller(user_id="olga", thread_id="t3")


def save(bank: MemoryBank, caller: Caller, scope: str, fact: str, prof: Any = PS) -> Any:
    return call(bank, prof, "save_memory", {"scope": scope, "fact": fact}, caller)


def remove(bank: MemoryBank, caller: Caller, scope: str, fact_id: str) -> Any:
    return call(bank, PS, "remove_memory", {"scope": scope, "factId": fact_id}, caller)


def test_schemas_match_the_seed() -> None:
    schemas = {t["name"]: t["input_schema"] for t in to_anthropic(PS)}
    assert list(schemas) == ["save_memory", "remove_memory"]
    save_schema = schemas["save_memory"]
    assert save_schema["required"] == ["scope", "fact"]
    assert save_schema["properties"]["scope"]["enum"] == ["user", "drive"]
    assert save_schema["properties"]["fact"]["maxLength"] == 200
    remove_schema = schemas["remove_memory"]
    assert remove_schema["required"] == ["scope", "factId"]
    assert remove_schema["properties"]["scope"]["enum"] == ["user", "drive"]
    assert PS.extras == {"max_facts_per_scope": DEFAULT_MAX_FACTS} and DEFAULT_MAX_FACTS == 50


def test_guidance_is_the_seeds() -> None:
    assert PS.guidance.startswith(
        "You can remember important information using the save_memory tool."
    )
    for line in ("- Short (under 20 words)", "- Things already in the page tree", "- Terminology"):
        assert line in PS.guidance


def test_save_user_and_drive_facts(bank: MemoryBank) -> None:
    user = save(bank, OWNER, "user", "Prefers concise responses")
    assert set(user) == {"success", "factId", "scope", "fact", "message"}
    assert user["message"] == "Remembered: Prefers concise responses"
    drive = save(bank, OWNER, "drive", "Chose Zustand over Redux for state")
    assert drive["success"] is True and drive["scope"] == "drive"
    assert bank.get(user["factId"], "olga").project_id is None
    assert bank.get(drive["factId"], "olga", project_id="drive-1").project_id == "drive-1"
    # Drive facts are shared with the drive's members; user facts are not.
    text = pagespace_context(bank, MEMBER, with_ids=False)
    assert "Chose Zustand over Redux for state" in text and "concise" not in text


def test_fact_longer_than_200_characters_is_refused(bank: MemoryBank) -> None:
    out = save(bank, OWNER, "user", "Prefers " + "very " * 40 + "short answers")
    assert out["success"] is False and "fact" in out["error"] and "200" in out["error"]


def test_drive_scope_needs_a_drive(bank: MemoryBank) -> None:
    out = save(bank, NO_DRIVE, "drive", "Uses Drizzle ORM everywhere")
    assert out["success"] is False and "drive" in out["error"] and "'user'" in out["error"]


def test_cap_per_scope_then_remove_makes_room(bank: MemoryBank) -> None:
    small = make_profile(max_facts=3)
    facts = ["Prefers dark mode in editors", "Writes Rust at work", "Lives in Lisbon, Portugal"]
    ids = [save(bank, OWNER, "user", f, small)["factId"] for f in facts]
    full = save(bank, OWNER, "user", "Has two cats named Miso and Tofu", small)
    assert full["success"] is False
    assert (
        "full" in full["error"] and "3 of 3" in full["error"] and "remove_memory" in full["error"]
    )
    # The cap is per scope: the drive still has room.
    assert save(bank, OWNER, "drive", "API follows JSON:API conventions", small)["success"] is True
    assert remove(bank, OWNER, "user", ids[0])["success"] is True
    assert save(bank, OWNER, "user", "Has two cats named Miso and Tofu", small)["success"] is True


def test_remove_shape_and_errors(bank: MemoryBank) -> None:
    fact_id = save(bank, OWNER, "user", "Prefers tabs over spaces")["factId"]
    wrong_scope = remove(bank, OWNER, "drive", fact_id)
    assert wrong_scope["success"] is False and "no drive fact" in wrong_scope["error"]
    out = remove(bank, OWNER, "user", fact_id)
    assert out == {
        "success": True,
        "factId": fact_id,
        "scope": "user",
        "message": "Forgot: Prefers tabs over spaces",
    }
    again = remove(bank, OWNER, "user", fact_id)
    assert again["success"] is False and fact_id in again["error"]
    # Someone else's user fact is not reachable.
    other = save(bank, MEMBER, "user", "Prefers light mode")["factId"]
    assert remove(bank, OWNER, "user", other)["success"] is False
    assert bank.count("max") == 1


def test_only_owners_and_admins_remove_drive_facts(bank: MemoryBank) -> None:
    fact_id = save(bank, MEMBER, "drive", "Project codename is Falcon")["factId"]
    denied = remove(bank, MEMBER, "drive", fact_id)
    assert denied["success"] is False and "admins" in denied["error"]
    assert remove(bank, OWNER, "drive", fact_id)["success"] is True


def test_context_block_has_the_seed_shape(bank: MemoryBank) -> None:
    assert pagespace_context(bank, OWNER) == ""
    u1 = save(bank, OWNER, "user", "Senior software engineer")["factId"]
    save(bank, OWNER, "user", "Prefers functional patterns")
    d1 = save(bank, OWNER, "drive", "Project uses TypeScript + Drizzle")["factId"]
    assert pagespace_context(bank, OWNER, with_ids=False) == (
        "## About This User\n\n"
        "- Senior software engineer\n"
        "- Prefers functional patterns\n\n"
        "## About This Workspace\n\n"
        "- Project uses TypeScript + Drizzle\n\n"
    )
    with_ids = pagespace_context(bank, OWNER)
    assert f"- Senior software engineer [{u1}]\n" in with_ids
    assert f"- Project uses TypeScript + Drizzle [{d1}]\n" in with_ids
    assert pagespace_context(bank, NO_DRIVE, with_ids=False) == (
        "## About This User\n\n- Senior software engineer\n- Prefers functional patterns\n\n"
    )


def test_conversation_turns_are_not_facts(bank: MemoryBank) -> None:
    bank.save(
        "olga",
        "hey, can you look at my PR?",
        "context",
        ring="episodic",
        source="conversation",
        session_id="t1",
    )
    assert pagespace_context(bank, NO_DRIVE) == ""
    small = make_profile(max_facts=1)
    assert save(bank, NO_DRIVE, "user", "Reviews PRs in the morning", small)["success"] is True


def test_user_facts_get_the_category_the_bank_infers(bank: MemoryBank) -> None:
    # Seed 002 has no categories: a user fact's is inferred; a drive fact is the workspace's.
    name = save(bank, OWNER, "user", "User's name is Kim")
    tea = save(bank, OWNER, "user", "User prefers tea")
    drive = save(bank, OWNER, "drive", "User prefers tea with the team standup")
    assert bank.get(name["factId"], OWNER.user_id).category.value == "identity"
    assert bank.get(tea["factId"], OWNER.user_id).category.value == "preference"
    assert (
        bank.get(drive["factId"], OWNER.user_id, project_id="drive-1").category.value == "project"
    )
