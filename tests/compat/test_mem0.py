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
from memorybank.model import Caller
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.services.conversations import remember_conversation

#: mem0's quickstart conversation (docs.mem0.ai, "Quickstart").
QUICKSTART = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {
        "role": "assistant",
        "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies "
        "in the future.",
    },
]
#: The searches whose order both must agree on (step name → query).
SEARCHES = {"search movies": "movies", "search sci-fi": "sci-fi"}


def script(m: Any) -> list[tuple[str, Any]]:
    """What a mem0 user's code does, step by step; every answer is kept."""
    steps: list[tuple[str, Any]] = []
    quickstart = m.add(QUICKSTART, user_id="zoe", metadata={"category": "movies"}, infer=False)
    steps.append(("add quickstart", quickstart))
    for name, query in SEARCHES.items():
        steps.append((name, m.search(query, filters={"user_id": "zoe"})))
    first = quickstart["results"][0]["id"]
    steps.append(("delete quickstart", m.delete(first)))
    steps.append(("history deleted", m.history(first)))
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
    assert [r["memory"] for r in steps["add quickstart"]["results"]] == [
        t["content"] for t in QUICKSTART
    ]
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
    # After delete, history answers the events ending with the DELETE, as mem0's does.
    assert steps["history deleted"][-1]["event"] == "DELETE"
    assert steps["history deleted"][-1]["is_deleted"] is True
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
    # Both answer every search best first (score descending), and agree on the best match of
    # a question with one answer. Which of several turns comes first differs by design: the
    # bank ranks what the user said above the assistant's reply (docs/coming-from-mem0.md).
    for name in [*SEARCHES, "search"]:
        for results in (dict(ours)[name]["results"], dict(theirs)[name]["results"]):
            scores = [r["score"] for r in results]
            assert scores == sorted(scores, reverse=True), (name, scores)
    best = [dict(run)["search"]["results"][0]["memory"] for run in (ours, theirs)]
    assert best == ["I prefer green tea", "I prefer green tea"]
    assert [r["event"] for r in dict(theirs)["history deleted"]][-1] == "DELETE"


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


def test_the_quickstart_without_an_llm_answers_what_remember_keeps(bank: MemoryBank) -> None:
    m = Memory(bank)
    added = m.add(QUICKSTART, user_id="alice", agent_id="movies-bot", metadata={"topic": "tv"})
    kept = remember_conversation(bank, Caller(user_id="twin"), QUICKSTART).stored
    facts = [r["memory"] for r in added["results"]]
    assert facts == [f.content for f in kept] and facts  # what remember keeps, no more
    said = {t["content"] for t in QUICKSTART}
    listed = m.get_all(filters={"user_id": "alice"})["results"]
    assert sorted(r["memory"] for r in listed) == sorted(facts)  # no raw turn, as in mem0
    assert {r["agent_id"] for r in listed} == {"movies-bot"}
    assert {r["metadata"]["topic"] for r in listed} == {"tv"}
    for query in ("What do you know about me?", "movies", "thriller"):
        found = m.search(query, filters={"user_id": "alice"})["results"]
        assert not said & {r["memory"] for r in found}, query
        scores = [r["score"] for r in found]
        assert scores == sorted(scores, reverse=True), query
    for result in added["results"]:  # the ids are given at the save: no UPDATE after it
        assert [row["event"] for row in m.history(result["id"])] == ["ADD"]


def test_search_answers_best_first_by_the_score_it_shows(bank: MemoryBank) -> None:
    m = Memory(bank)
    m.add(QUICKSTART, user_id="alice")  # facts, found with the messages kept as said
    m.add("I watched Dune twice and loved the movies", user_id="alice", infer=False)
    for query in ("movies", "thriller", "sci-fi", "What do you know about me?"):
        scores = [r["score"] for r in m.search(query, filters={"user_id": "alice"})["results"]]
        assert scores == sorted(scores, reverse=True), (query, scores)
    assert len(m.search("movies", filters={"user_id": "alice"}, top_k=2)["results"]) == 2


def test_history_after_delete_ends_with_the_delete(bank: MemoryBank) -> None:
    m = Memory(bank)
    first = m.add("I prefer green tea", user_id="eve", infer=False)["results"][0]["id"]
    m.update(first, text="I prefer jasmine tea")
    m.delete(first)
    rows = m.history(first)
    assert rows[-1]["event"] == "DELETE" and rows[-1]["is_deleted"] is True
    assert rows[-1]["new_memory"] is None


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
