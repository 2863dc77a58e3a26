"""memorybank.compat.mem0 answers as mem0 does: one script runs against it and, where the
``mem0-compat-test`` extra is installed, against mem0 itself (offline: ``infer=False``, the
bundled embedder through mem0's langchain embedder hook, local Qdrant files, telemetry off),
and the answers' shapes are compared step by step."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

import pytest

from memorybank import NotFound, ValidationError
from memorybank.compat.mem0 import AsyncMemory, Memory
from memorybank.core.bank import MemoryBank
from memorybank.providers.embedders.local import LocalEmbedder


def script(m: Any) -> list[tuple[str, Any]]:
    """What a mem0 user's code does, step by step; every answer is kept."""
    steps: list[tuple[str, Any]] = []
    steps.append(("add str", m.add("I prefer green tea", user_id="alice", infer=False)))
    said = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "I live in Lisbon near the river"},
        {"role": "assistant", "content": "Lisbon is a lovely city!"},
    ]
    added = m.add(said, user_id="alice", agent_id="helper", metadata={"topic": "home"}, infer=False)
    steps.append(("add messages", added))
    steps.append(("add run", m.add("I am training for a marathon", run_id="r1", infer=False)))
    found = m.search("what does alice like to drink?", filters={"user_id": "alice"}, top_k=3)
    steps.append(("search", found))
    steps.append(("get_all", m.get_all(filters={"user_id": "alice"})))
    steps.append(("get_all agent", m.get_all(filters={"user_id": "alice", "agent_id": "helper"})))
    steps.append(("get_all run", m.get_all(filters={"run_id": "r1"})))
    home = added["results"][0]["id"]
    steps.append(("get", m.get(home)))
    steps.append(("update", m.update(home, text="User lives in Porto")))
    steps.append(("get updated", m.get(home)))
    steps.append(("history", m.history(home)))
    steps.append(("delete", m.delete(home)))
    steps.append(("get deleted", m.get(home)))
    steps.append(("delete_all", m.delete_all(user_id="alice")))
    steps.append(("get_all after", m.get_all(filters={"user_id": "alice"})))
    return steps


def shape(value: Any) -> Any:
    """What a caller's code relies on: keys and value types; a list's items by the keys every
    one of them has (mem0 answers ``agent_id``, ``role`` … only where a memory has one)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [shape(item) for item in value]
        if not items or not all(isinstance(i, dict) for i in items):
            return items[:1]
        common = set.intersection(*(set(i) for i in items))
        return [{k: v for k, v in items[0].items() if k in common}]
    return (
        "number"
        if isinstance(value, int | float) and not isinstance(value, bool)
        else (type(value).__name__)
    )


def differences(ours: Any, theirs: Any, where: str) -> list[str]:
    """Where ``ours`` lacks what ``theirs`` has, or has another type (``None`` fits any)."""
    if "NoneType" in (ours, theirs):
        return []
    if isinstance(theirs, dict):
        if not isinstance(ours, dict):
            return [f"{where}: {ours} where mem0 has an object"]
        out = []
        for key, value in theirs.items():
            if key not in ours:
                out.append(f"{where}.{key}: missing")
            else:
                out += differences(ours[key], value, f"{where}.{key}")
        return out
    if isinstance(theirs, list):
        if not isinstance(ours, list):
            return [f"{where}: {ours} where mem0 has a list"]
        if theirs and ours:
            return differences(ours[0], theirs[0], f"{where}[]")
        return [] if bool(theirs) == bool(ours) else [f"{where}: {len(ours)} items, mem0 not"]
    return [] if ours == theirs else [f"{where}: {ours}, mem0 {theirs}"]


def test_the_script_answers_with_mem0s_shapes_and_texts(bank: MemoryBank) -> None:
    steps = dict(script(Memory(bank)))
    assert [r["memory"] for r in steps["add messages"]["results"]] == [
        "I live in Lisbon near the river",  # infer=False keeps each message as it was said
        "Lisbon is a lovely city!",
    ]
    assert [r["role"] for r in steps["add messages"]["results"]] == ["user", "assistant"]
    best = steps["search"]["results"][0]
    assert best["memory"] == "I prefer green tea" and 0 < best["score"] <= 1
    assert len(steps["get_all"]["results"]) == 3
    assert {r["agent_id"] for r in steps["get_all agent"]["results"]} == {"helper"}
    assert [r["memory"] for r in steps["get_all run"]["results"]] == [
        "I am training for a marathon"
    ]
    assert steps["get"] is not None and steps["get"]["metadata"] == {"topic": "home"}
    assert steps["get updated"] is not None and steps["get updated"]["agent_id"] == "helper"
    assert steps["get updated"]["memory"] == "User lives in Porto"
    assert [row["event"] for row in steps["history"]] == ["ADD", "UPDATE"]
    assert steps["history"][1]["new_memory"] == "User lives in Porto"
    assert steps["get deleted"] is None and steps["get_all after"] == {"results": []}


@pytest.fixture
def mem0_memory(tmp_path: Path, embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> Any:
    """mem0's own Memory, offline (skipped without the mem0-compat-test extra)."""
    monkeypatch.setenv("MEM0_TELEMETRY", "False")  # read when mem0 is first imported
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0-home"))
    mem0 = pytest.importorskip("mem0")
    embeddings = pytest.importorskip("langchain_core.embeddings")
    pytest.importorskip("langchain.embeddings.base")  # mem0's langchain hook imports it

    class Bundled(embeddings.Embeddings):  # type: ignore[misc,name-defined]
        def embed_query(self, text: str) -> list[float]:
            return [float(x) for x in embedder.embed([text])[0]]

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[float(x) for x in v] for v in embedder.embed(list(texts))]

    memory = mem0.Memory.from_config(
        {
            "embedder": {
                "provider": "langchain",
                "config": {"model": Bundled(), "embedding_dims": embedder.dimension},
            },
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "path": str(tmp_path / "qdrant"),
                    "collection_name": "compat",
                    "embedding_model_dims": embedder.dimension,
                    "on_disk": True,
                },
            },
            # Never called with infer=False; a closed port, so a mistake fails instead of leaking.
            "llm": {
                "provider": "openai",
                "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"},
            },
            "history_db_path": str(tmp_path / "history.db"),
        }
    )
    yield memory
    memory.close()
    memory.vector_store.client.close()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_script_has_the_same_shapes_on_mem0(bank: MemoryBank, mem0_memory: Any) -> None:
    ours = script(Memory(bank))
    theirs = script(mem0_memory)
    assert [name for name, _ in ours] == [name for name, _ in theirs]
    problems = []
    for (name, mine), (_, their) in zip(ours, theirs, strict=True):
        problems += differences(shape(mine), shape(their), name)
    assert not problems, "\n".join(problems)
    # The same messages are kept as the same texts.
    assert [r["memory"] for r in dict(ours)["add messages"]["results"]] == [
        r["memory"] for r in dict(theirs)["add messages"]["results"]
    ]


def test_async_memory_is_memory_awaited(bank: MemoryBank) -> None:
    for name, method in inspect.getmembers(Memory, inspect.isfunction):
        if name.startswith("_") or name == "close":
            continue
        twin = getattr(AsyncMemory, name)
        assert inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin) == inspect.signature(method), name

    async def run() -> list[str]:
        m = AsyncMemory(bank)
        added = await m.add("I prefer green tea", user_id="bo", infer=False)
        found = await m.search("drinks", filters={"user_id": "bo"})
        await m.delete_all(user_id="bo")
        left = await m.get_all(filters={"user_id": "bo"})
        return [added["results"][0]["memory"], found["results"][0]["memory"], *left["results"]]

    assert asyncio.run(run()) == ["I prefer green tea", "I prefer green tea"]


def test_infer_saves_the_facts_a_conversation_states(bank: MemoryBank) -> None:
    m = Memory(bank)
    said = [
        {"role": "user", "content": "Hi! My name is Ana and I prefer window seats"},
        {"role": "assistant", "content": "Nice to meet you, Ana."},
    ]
    added = m.add(said, user_id="ana", agent_id="travel")
    facts = [r["memory"] for r in added["results"] if r["event"] == "ADD"]
    assert facts == ["User's name is Ana", "User prefers window seats"]  # two facts, two memories
    listed = m.get_all(filters={"user_id": "ana", "agent_id": "travel"})["results"]
    assert facts[0] in {r["memory"] for r in listed}  # facts carry the agent id
    again = m.add(said[0]["content"], user_id="ana")
    assert again == {"results": []}  # known already: nothing changed, as mem0 answers


def test_mem0_1x_keywords_and_errors_say_what_to_fix(bank: MemoryBank) -> None:
    m = Memory(bank)
    m.add("I prefer green tea", user_id="cy", infer=False)
    assert len(m.search("tea", user_id="cy", limit=1)["results"]) == 1
    assert len(m.get_all(user_id="cy")["results"]) == 1
    with pytest.raises(ValidationError, match="needs one of user_id, agent_id or run_id"):
        m.search("tea")
    with pytest.raises(ValidationError, match="equal values only"):
        m.get_all(filters={"user_id": "cy", "score": {"gt": 3}})
    with pytest.raises(ValidationError, match="timestamp"):
        m.add("I prefer tea", user_id="cy", timestamp=3)
    with pytest.raises(ValidationError, match="mem0 settings"):
        Memory.from_config({"vector_store": {"provider": "qdrant"}})
    with pytest.raises(NotFound):
        m.delete("mem_01JZZZZZZZZZZZZZZZZZZZZZZZ")
    assert m.get("not-an-id") is None


def test_users_and_agents_stay_apart(bank: MemoryBank) -> None:
    m = Memory(bank)
    m.add("I prefer green tea", user_id="dee", infer=False)
    m.add("I prefer black coffee", agent_id="barista", infer=False)
    assert [r["memory"] for r in m.get_all(filters={"agent_id": "barista"})["results"]] == [
        "I prefer black coffee"
    ]
    assert [r["memory"] for r in m.get_all(filters={"user_id": "dee"})["results"]] == [
        "I prefer green tea"
    ]
    m.reset()
    assert m.get_all(filters={"user_id": "dee"}) == {"results": []}
    assert m.get_all(filters={"agent_id": "barista"}) == {"results": []}
