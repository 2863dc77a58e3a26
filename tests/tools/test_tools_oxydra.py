"""Seed 004 (Oxydra): the four note tools, their tiers, timeouts, descriptions and lifecycle."""

from __future__ import annotations

from typing import Any

from memorybank import MemoryBank
from memorybank.tools import Caller, SafetyTier, call, profile, to_anthropic
from memorybank.tools.profiles import oxydra

OX = profile("oxydra")
CTX = Caller(user_id="shantanu", thread_id="session-1", project_id="side-project")
OTHER_USER = Caller(user_id="mallory", thread_id="session-9")


def run(bank: MemoryBank, name: str, caller: Caller = CTX, **args: Any) -> Any:
    return call(bank, OX, name, args, caller)


def test_tools_tiers_timeouts_and_descriptions() -> None:
    expected = {
        "memory_search": (SafetyTier.READ_ONLY, 15.0, oxydra.SEARCH_DESCRIPTION),
        "memory_save": (SafetyTier.SIDE_EFFECTING, 10.0, oxydra.SAVE_DESCRIPTION),
        "memory_update": (SafetyTier.SIDE_EFFECTING, 10.0, oxydra.UPDATE_DESCRIPTION),
        "memory_delete": (SafetyTier.SIDE_EFFECTING, 10.0, oxydra.DELETE_DESCRIPTION),
    }
    assert {t.name: (t.tier, t.timeout_s, t.description) for t in OX.tools} == expected
    # Step 9's wording.
    assert oxydra.SEARCH_DESCRIPTION.startswith("Search your persistent memory for relevant")
    assert oxydra.DELETE_DESCRIPTION.endswith("then call this with the note_id to remove it.")


def test_schemas_match_the_seed() -> None:
    schemas = {t["name"]: t["input_schema"] for t in to_anthropic(OX)}
    search = schemas["memory_search"]
    assert list(search["properties"]) == ["query", "top_k", "include_conversation"]
    assert search["required"] == ["query"]
    assert search["properties"]["query"]["type"] == "string"
    top_k = search["properties"]["top_k"]
    assert (top_k["type"], top_k["default"], top_k["maximum"]) == ("integer", 5, 20)
    flag = search["properties"]["include_conversation"]
    assert (flag["type"], flag["default"]) == ("boolean", False)
    assert schemas["memory_save"]["required"] == ["content"]
    assert list(schemas["memory_save"]["properties"]) == ["content"]
    assert schemas["memory_update"]["required"] == ["note_id", "content"]
    assert schemas["memory_delete"]["required"] == ["note_id"]


def test_save_search_update_search_delete_search(bank: MemoryBank) -> None:
    saved = run(bank, "memory_save", content="User's name is Shantanu")
    assert set(saved) == {"note_id", "message"}
    note_id = saved["note_id"]

    found = run(bank, "memory_search", query="name")
    assert isinstance(found, list)
    assert found[0] == {
        "note_id": note_id,
        "text": "User's name is Shantanu",
        "score": found[0]["score"],
        "source": "user_memory",
    }

    updated = run(bank, "memory_update", note_id=note_id, content="User prefers to be called SG")
    assert updated["note_id"] == note_id
    found = run(bank, "memory_search", query="name")
    assert [(r["note_id"], r["text"]) for r in found] == [(note_id, "User prefers to be called SG")]
    assert all("Shantanu" not in r["text"] for r in found)

    deleted = run(bank, "memory_delete", note_id=note_id)
    assert deleted["note_id"] == note_id and "message" in deleted
    assert run(bank, "memory_search", query="name") == []


def test_unknown_note_ids_are_errors(bank: MemoryBank) -> None:
    for name, args in (
        ("memory_update", {"note_id": "note-abc123", "content": "User prefers SG"}),
        ("memory_delete", {"note_id": "note-xyz789"}),
    ):
        out = run(bank, name, **args)
        assert out["success"] is False
        assert "not found" in out["error"] and "memory_search" in out["error"]


def test_notes_are_per_user_across_channels(bank: MemoryBank) -> None:
    note_id = run(bank, "memory_save", content="User likes chocolates")["note_id"]
    other_channel = Caller(user_id="shantanu", thread_id="whatsapp-7")
    assert [r["note_id"] for r in run(bank, "memory_search", other_channel, query="chocolate")] == [
        note_id
    ]
    assert run(bank, "memory_search", OTHER_USER, query="chocolate") == []
    assert run(bank, "memory_delete", OTHER_USER, note_id=note_id)["success"] is False
    assert (
        run(bank, "memory_update", OTHER_USER, note_id=note_id, content="Hacked note")["success"]
        is False
    )
    # Notes live in the user's own scope, not the project of the chat they were saved from.
    assert bank.get(note_id, "shantanu").project_id is None


def test_forget_that_i_like_chocolates(bank: MemoryBank) -> None:
    run(bank, "memory_save", content="I like chocolates")  # rephrased by the bank
    found = run(bank, "memory_search", query="chocolates")
    assert found[0]["text"] == "User likes chocolates"
    run(bank, "memory_delete", note_id=found[0]["note_id"])
    assert run(bank, "memory_search", query="chocolates") == []


def test_include_conversation(bank: MemoryBank) -> None:
    run(bank, "memory_save", content="User's favourite database is PostgreSQL")
    turns = [
        {"content": "Can you check the flight to Porto on Friday?", "session_id": "session-1"},
        {"content": "The flight to Berlin is on Monday", "session_id": "session-2"},
    ]
    bank.save_many(
        "shantanu",
        [{**t, "ring": "episodic", "source": "conversation", "category": "context"} for t in turns],
    )
    plain = run(bank, "memory_search", query="flight Porto")
    assert all(r["source"] == "user_memory" for r in plain)
    merged = run(bank, "memory_search", query="flight Porto", include_conversation=True)
    conversation = [r for r in merged if r["source"] == "conversation"]
    assert [r["text"] for r in conversation] == ["Can you check the flight to Porto on Friday?"]
    assert [r["score"] for r in merged] == sorted((r["score"] for r in merged), reverse=True)
    # Conversation turns are not notes: they cannot be updated or deleted as notes.
    assert run(bank, "memory_delete", note_id=conversation[0]["note_id"])["success"] is False


def test_top_k(bank: MemoryBank) -> None:
    for city in ("Lisbon", "Porto", "Madrid", "Paris", "Rome", "Vienna", "Prague"):
        run(bank, "memory_save", content=f"User visited {city} during the 2023 summer trip")
    assert len(run(bank, "memory_search", query="cities visited")) == 5
    assert len(run(bank, "memory_search", query="cities visited", top_k=7)) == 7
    too_many = run(bank, "memory_search", query="cities", top_k=21)
    assert too_many["success"] is False and "top_k" in too_many["error"]


def test_duplicate_save_returns_the_existing_note(bank: MemoryBank) -> None:
    first = run(bank, "memory_save", content="User drinks oat milk lattes")["note_id"]
    again = run(bank, "memory_save", content="User drinks oat milk lattes")
    assert again["note_id"] == first and "memory_update" in again["message"]


def test_memory_save_lets_the_bank_infer_the_category(bank: MemoryBank) -> None:
    # Seed 004's memory_save takes no category: the bank infers it, as bank.save does.
    name = run(bank, "memory_save", content="User's name is Kim")
    tea = run(bank, "memory_save", content="User prefers tea")
    assert bank.get(name["note_id"], CTX.user_id).category.value == "identity"
    assert bank.get(tea["note_id"], CTX.user_id).category.value == "preference"
