"""Seed 001 (Supermemory): contracts, return shapes and folder scoping by container tags."""

from __future__ import annotations

from typing import Any

from memorybank import MemoryBank
from memorybank.tools import Caller, call, profile, to_anthropic, to_openai
from memorybank.tools.profiles.supermemory import container_tags

SM = profile("supermemory")
FOLDER_A = Caller(user_id="ana", project_id="apollo", thread_id="t-a")
FOLDER_A_OTHER_THREAD = Caller(user_id="ana", project_id="apollo", thread_id="t-a2")
FOLDER_B = Caller(user_id="ana", project_id="borealis", thread_id="t-b")
UNFOLDERED = Caller(user_id="ana", thread_id="t-n")
TEAMMATE_IN_A = Caller(user_id="ben", project_id="apollo", thread_id="t-x")


def add(bank: MemoryBank, caller: Caller, content: str, **metadata: Any) -> Any:
    args: dict[str, Any] = {"content": content}
    if metadata:
        args["metadata"] = metadata
    return call(bank, SM, "add_memory", args, caller)


def search(bank: MemoryBank, caller: Caller, query: str, **more: Any) -> list[str]:
    out = call(bank, SM, "search_memories", {"query": query, **more}, caller)
    assert out["success"] is True, out
    return [r["content"] for r in out["results"]]


def test_tool_contracts_match_the_seed() -> None:
    schemas = {t["name"]: t["input_schema"] for t in to_anthropic(SM)}
    assert list(schemas) == ["add_memory", "search_memories"]
    add_schema = schemas["add_memory"]
    assert add_schema["required"] == ["content"]
    assert list(add_schema["properties"]) == ["content", "metadata"]
    meta = add_schema["properties"]["metadata"]
    assert list(meta["properties"]) == ["title", "category", "tags"]
    assert meta["properties"]["tags"]["type"] == "array"
    search_schema = schemas["search_memories"]
    assert search_schema["required"] == ["query"]
    assert list(search_schema["properties"]) == ["query", "limit", "category", "tags"]
    limit = search_schema["properties"]["limit"]
    assert (limit["default"], limit["minimum"], limit["maximum"]) == (5, 1, 10)
    # Strict mode: the seed's `title?: string | null` etc. are required-but-nullable.
    strict_meta = to_openai(SM)[0]["function"]["parameters"]["properties"]["metadata"]
    obj, null = strict_meta["anyOf"]
    assert null == {"type": "null"}
    assert obj["required"] == ["title", "category", "tags"]
    assert obj["properties"]["title"]["type"] == ["string", "null"]


def test_container_tags() -> None:
    assert container_tags(FOLDER_A) == ["ana", "tag:project:apollo"]
    assert container_tags(UNFOLDERED, "Incident", ["followup", " FollowUp ", ""]) == [
        "ana",
        "tag:project:none",
        "category:incident",
        "tag:followup",
    ]


def test_add_memory_shape_and_stored_metadata(bank: MemoryBank) -> None:
    out = add(
        bank,
        FOLDER_A,
        "User prefers concise answers",
        title="Answer style",
        category="preference",
        tags=["style", "Writing"],
    )
    assert set(out) == {"success", "memoryId", "message"}
    assert out["success"] is True
    memory = bank.get(out["memoryId"], "ana", project_id="apollo")
    assert memory.project_id == "apollo"
    assert list(memory.tags) == [
        "ana",
        "tag:project:apollo",
        "category:preference",
        "tag:style",
        "tag:writing",
    ]
    assert memory.metadata["title"] == "Answer style"
    assert memory.metadata["category"] == "preference"
    assert memory.metadata["tags"] == "style,writing"
    assert "addedAt" in memory.metadata
    assert memory.category.value == "preference"  # a known category keeps its importance


def test_search_result_shape(bank: MemoryBank) -> None:
    add(bank, UNFOLDERED, "User's cat is named Miso", category="pets")
    out = call(bank, SM, "search_memories", {"query": "cat name"}, UNFOLDERED)
    assert out["success"] is True
    (result,) = out["results"]
    assert set(result) == {"content", "score", "metadata", "memoryId", "createdAt"}
    assert result["content"] == "User's cat is named Miso"
    assert result["metadata"]["category"] == "pets"
    empty = call(bank, SM, "search_memories", {"query": "cat name"}, FOLDER_B)
    assert empty["results"] == [] and "No memories" in empty["message"]


def test_folder_chats_see_only_their_folder(bank: MemoryBank) -> None:
    add(bank, FOLDER_A, "Apollo uses PostgreSQL 16 for storage")
    add(bank, FOLDER_B, "Borealis uses MongoDB for storage")
    add(bank, UNFOLDERED, "User stores recipes in a notebook app")
    assert search(bank, FOLDER_A, "storage database") == ["Apollo uses PostgreSQL 16 for storage"]
    assert search(bank, FOLDER_B, "storage database") == ["Borealis uses MongoDB for storage"]
    assert search(bank, UNFOLDERED, "storage database") == ["User stores recipes in a notebook app"]
    # Threads in the same folder share the pool.
    assert search(bank, FOLDER_A_OTHER_THREAD, "storage") == [
        "Apollo uses PostgreSQL 16 for storage"
    ]
    # The user id is a container tag too: a teammate in the same folder has their own pool.
    assert search(bank, TEAMMATE_IN_A, "storage database") == []


def test_category_and_tags_narrow_within_the_folder(bank: MemoryBank) -> None:
    add(
        bank,
        FOLDER_A,
        "Apollo outage on Friday was caused by DNS",
        category="incident",
        tags=["followup"],
    )
    add(bank, FOLDER_A, "Apollo release train ships every Tuesday", category="process")
    assert search(bank, FOLDER_A, "Apollo", category="incident") == [
        "Apollo outage on Friday was caused by DNS"
    ]
    assert search(bank, FOLDER_A, "Apollo", category="INCIDENT", tags=["FollowUp"]) == [
        "Apollo outage on Friday was caused by DNS"
    ]
    assert search(bank, FOLDER_A, "Apollo", tags=["nothing-tagged"]) == []
    assert len(search(bank, FOLDER_A, "Apollo")) == 2


def test_limit_is_respected(bank: MemoryBank) -> None:
    for i in range(7):
        add(bank, UNFOLDERED, f"User visited city number {i} on the trip to Portugal {i * 7}")
    assert len(search(bank, UNFOLDERED, "city visited")) == 5
    assert len(search(bank, UNFOLDERED, "city visited", limit=2)) == 2
    out = call(bank, SM, "search_memories", {"query": "city", "limit": 11}, UNFOLDERED)
    assert out["success"] is False and "limit" in out["error"]


def test_duplicates_are_reported_without_leaking_other_pools(bank: MemoryBank) -> None:
    first = add(bank, FOLDER_A, "Apollo deploys with Kubernetes and Helm")
    again = add(bank, FOLDER_A, "Apollo deploys with Kubernetes and Helm")
    assert again["success"] is False
    assert again["memoryId"] == first["memoryId"]
    # The same fact from a teammate: the folder already holds it, but it is not theirs to see.
    theirs = add(bank, TEAMMATE_IN_A, "Apollo deploys with Kubernetes and Helm")
    assert theirs["success"] is False and "memoryId" not in theirs
    assert "Kubernetes" not in theirs["error"]


def test_null_metadata_fields_from_strict_models(bank: MemoryBank) -> None:
    args = {
        "content": "User likes hiking",
        "metadata": {"title": None, "category": None, "tags": None},
    }
    assert call(bank, SM, "add_memory", args, UNFOLDERED)["success"] is True
    args2 = {"content": "User likes climbing", "metadata": None}
    assert call(bank, SM, "add_memory", args2, UNFOLDERED)["success"] is True
    query = {"query": "hiking or climbing", "limit": None, "category": None, "tags": None}
    out = call(bank, SM, "search_memories", query, UNFOLDERED)
    assert len(out["results"]) == 2


def test_category_left_out_or_unknown_is_inferred_and_a_bank_category_wins(
    bank: MemoryBank,
) -> None:
    def category(out: Any) -> str:
        return bank.get(out["memoryId"], "ana", project_id="apollo").category.value

    assert category(add(bank, FOLDER_A, "User's name is Kim")) == "identity"
    assert category(add(bank, FOLDER_A, "User prefers tea", category="incident")) == "preference"
    assert category(add(bank, FOLDER_A, "User's name is Kim Lee", category="context")) == "context"
