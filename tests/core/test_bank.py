"""MemoryBank end to end on a real SQLite file with the real bundled embedder.

The tests that take ``memories`` are the library's contract, run three times: on the bank
itself, and through :class:`memorybank.Client` and :class:`memorybank.AsyncClient` against a
real server over that bank (each user with their own API key) — one suite, three ways in."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import memorybank
from client_helpers import export_from, import_into
from memorybank import (
    Category,
    EmbeddingModelMismatch,
    EventKind,
    MemoryBank,
    MemoryFilter,
    NotFound,
    Ring,
    SaveInput,
    Source,
    ValidationError,
)
from memorybank.core.prompt import auto_recall
from memorybank.core.reindex import reindex
from memorybank.model import Caller
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.rules.ranking import RetrievalSettings
from memorybank.services import pairs, transfer
from memorybank.stores.sqlite import SQLiteStore


def test_save_rephrases_scores_and_stores(memories: Any, embedder: LocalEmbedder) -> None:
    result = memories.save(
        "alice", "Remember that I prefer dark mode", "preference", reasoning="UI preference"
    )
    assert result.success and result.rephrased
    assert result.content == "User prefers dark mode"
    assert result.importance == 10  # preference 9 + explicit "remember" 2, clamped
    stored = memories.get(result.memory_id, "alice")
    assert stored.content == "User prefers dark mode"
    assert stored.category is Category.PREFERENCE
    assert stored.embedding_model == embedder.model_id
    assert stored.reasoning == "UI preference" and stored.created_by == "alice"


def test_save_duplicate_returns_existing(memories: Any) -> None:
    first = memories.save("alice", "User prefers TypeScript", "preference")
    again = memories.save("alice", "User prefers TypeScript", "preference")
    assert not again.success and again.duplicate
    assert again.existing_id == first.memory_id
    assert again.existing_content == "User prefers TypeScript"
    assert memories.count("alice") == 1
    # Another user may hold the same fact.
    assert memories.save("bob", "User prefers TypeScript", "preference").success


@pytest.mark.parametrize(
    ("content", "category", "field", "words"),
    [
        ("short", "context", "content", "minimum 10"),
        ("x" * 501, "context", "content", "maximum 500"),
        ("User prefers dark mode", "mood", "category", "identity"),
    ],
)
def test_save_rejects_bad_input_with_guidance(
    memories: Any, content: str, category: str, field: str, words: str
) -> None:
    with pytest.raises(ValidationError) as err:
        memories.save("alice", content, category)
    assert err.value.field == field
    assert words in str(err.value)
    assert memories.count("alice") == 0


def test_reasoning_limits(memories: Any) -> None:
    with pytest.raises(ValidationError) as err:
        memories.save("alice", "User prefers dark mode", "preference", reasoning="short")
    assert err.value.field == "reasoning"


def test_explicit_importance_wins(memories: Any) -> None:
    assert memories.save("alice", "User is tired today", "context", importance=2).importance == 2
    assert memories.save("alice", "User has a meeting today", "context").importance == 3


def test_conversation_memories_are_stored_as_said(memories: Any) -> None:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    long_text = "Caroline: " + " ".join(f"Sentence number {i} about my day." for i in range(60))
    results = memories.save_many(
        "alice",
        [
            {
                "content": "Me too!",
                "ring": "episodic",
                "source": "conversation",
                "occurred_at": when,
                "metadata": {"dia_id": "D1:1"},
            },
            {"content": "I love it", "ring": "episodic", "source": "conversation"},
            {"content": "I love it", "ring": "episodic", "source": "conversation"},
            {
                "content": long_text,
                "ring": "episodic",
                "source": "conversation",
                "occurred_at": when,
                "metadata": {"dia_id": "D1:2"},
                "session_id": "s1",
            },
        ],
    )
    assert all(r.success for r in results)
    assert results[0].content == "Me too!"  # no minimum, no third-person rule
    assert results[1].content == results[2].content == "I love it"  # no dedup
    assert {r.importance for r in results} == {5}  # no fact heuristics on chat turns
    chunks = [r.memory for r in results[3:]]
    assert len(chunks) > 1 and all(len(c.content) <= 500 for c in chunks)
    assert " ".join(c.content for c in chunks) == long_text
    for index, chunk in enumerate(chunks):
        # The speaker is read from the "Caroline: " prefix (memorybank.rules.sessions), every chunk.
        assert chunk.metadata == {
            "dia_id": "D1:2",
            "chunk": index,
            "chunks": len(chunks),
            "speaker": "Caroline",
        }
        assert chunk.occurred_at == when and chunk.session_id == "s1"
        assert chunk.ring is Ring.EPISODIC and chunk.source is Source.CONVERSATION
        assert chunk.category is Category.CONTEXT


def test_save_many_is_all_or_nothing(memories: Any) -> None:
    with pytest.raises(ValidationError, match="item 1"):
        memories.save_many(
            "alice",
            [
                {"content": "User prefers tea", "category": "preference"},
                {"content": "bad", "category": "preference"},
            ],
        )
    assert memories.count("alice") == 0


def test_score_weighs_relevance_by_importance_and_recency(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    store = SQLiteStore(tmp_path / "unread.db", dimension=embedder.dimension)
    bank = MemoryBank(store, embedder, retrieval=RetrievalSettings())
    bank.save("alice", "User's sister Maria works as a nurse in Porto", "relationship")
    bank.save("alice", "User is allergic to peanuts", "identity")
    for hit in bank.search("alice", "what does my sister do for a living?"):
        expected = hit.relevance * (0.60 + 0.25 * hit.importance + 0.15 * hit.recency)
        assert hit.score == pytest.approx(expected)
    bank.close()


def test_search_is_hybrid_and_scored(memories: Any) -> None:
    facts = [
        ("User's sister Maria works as a nurse in Porto", "relationship"),
        ("User prefers TypeScript over JavaScript", "preference"),
        ("User is allergic to peanuts", "identity"),
        ("User runs the billing service migration to FastAPI", "project"),
    ]
    for text, category in facts:
        assert memories.save("alice", text, category).success
    hits = memories.search("alice", "what does my sister do for a living?")
    assert hits[0].memory.content.startswith("User's sister Maria")
    top = hits[0]
    assert 0 <= top.relevance <= 1 and top.vector_similarity is not None
    # The score weighs the fused relevance; the judge's read (the mean with it) moved the
    # relevance by at most half the way to 0 or 1 (exact formula: the test below).
    fused = top.score / (0.60 + 0.25 * top.importance + 0.15 * top.recency)
    assert 0 <= fused <= 1 and abs(top.relevance - fused) <= 0.5
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert memories.search("alice", "FastAPI")[0].memory.content.startswith("User runs the billing")
    only = memories.search("alice", "food allergy", category="identity")
    assert [h.memory.category for h in only] == [Category.IDENTITY]
    assert len(memories.search("alice", "anything", limit=2)) == 2
    cut = top.relevance  # the cut-off keeps the hits at least as relevant as the best one
    relevant = memories.search("alice", "what does my sister do for a living?", min_relevance=cut)
    assert relevant[0].memory.id == top.memory.id and all(h.relevance >= cut for h in relevant)
    assert memories.search("alice", "what does my sister do?", min_relevance=1.0) == []


def test_search_rejects_empty_query(memories: Any) -> None:
    with pytest.raises(ValidationError, match="query"):
        memories.search("alice", "   ")


def test_projects_are_separate_scopes(memories: Any) -> None:
    memories.save("alice", "User prefers tabs over spaces", "preference")
    memories.save("alice", "Project Apollo deploys on Fridays", "project", project_id="apollo")
    memories.save("bob", "Project Zeus uses Kubernetes", "project", project_id="zeus")
    assert {
        h.memory.project_id for h in memories.search("alice", "deploy", project_id="apollo")
    } == {
        None,
        "apollo",
    }
    assert (
        memories.search("alice", "deploy", project_id="apollo", scopes="project")[0].memory.content
        == "Project Apollo deploys on Fridays"
    )
    assert {h.memory.project_id for h in memories.search("alice", "deploys")} == {None}
    # A member of apollo (bob, as far as the caller says) sees apollo's memory, not alice's own.
    seen = {
        h.memory.content for h in memories.search("bob", "deploys Fridays", project_id="apollo")
    }
    assert "Project Apollo deploys on Fridays" in seen
    assert "User prefers tabs over spaces" not in seen


def test_newest_list_count(memories: Any) -> None:
    old = datetime.now(UTC) - timedelta(days=40)
    memories.save_many(
        "alice",
        [
            {
                "content": "User moved to Berlin last spring",
                "category": "identity",
                "created_at": old,
            },
            {"content": "User started learning the piano", "category": "context"},
            {"content": "User prefers window seats on flights", "category": "preference"},
        ],
    )
    assert [m.content for m in memories.list("alice", since="7d", superseded=False)] == [
        "User prefers window seats on flights",
        "User started learning the piano",
    ]
    assert len(memories.list("alice", since="90d")) == 3
    assert memories.count("alice") == 3 and memories.count("alice", category="identity") == 1
    page = memories.list("alice", limit=2)
    assert len(page) == 2 and memories.list("alice", limit=2, offset=2)[0].content.startswith(
        "User moved"
    )
    with pytest.raises(ValidationError, match="since"):
        memories.list("alice", since="last tuesday")


def test_save_takes_a_save_input_or_its_fields(memories: Any) -> None:
    """``save`` takes the :class:`SaveInput` every batch item is, or its fields as keywords
    (the same item either way), over the library and both clients; never both at once."""
    typed = memories.save("alice", SaveInput(content="I drink oolong tea", importance=7))
    keywords = memories.save("alice", "I drink espresso", importance=7, tags=["coffee"])
    assert (typed.content, typed.importance) == ("User drinks oolong tea", 7)
    assert (keywords.importance, memories.get(keywords.memory_id, "alice").tags) == (7, ("coffee",))
    with pytest.raises(ValidationError, match="not both"):
        memories.save("alice", SaveInput(content="I drink mate"), importance=3)


def test_one_filter_object_for_search_list_and_count(memories: Any) -> None:
    """A :class:`MemoryFilter` (as every adapter builds one) answers what the same keyword
    filters do, over the library and both clients alike; the two at once is an error."""
    memories.save("alice", "User prefers window seats on flights", "preference")
    memories.save("alice", "User's sister Ana lives in Madrid", "relationship")
    chosen = MemoryFilter(category=(Category.PREFERENCE,))
    assert [h.memory.content for h in memories.search("alice", "seats", chosen)] == [
        "User prefers window seats on flights"
    ]
    assert {h.memory.category for h in memories.search("alice", "Madrid", chosen)} == {
        Category.PREFERENCE
    }
    assert [m.content for m in memories.list("alice", chosen)] == [
        m.content for m in memories.list("alice", category="preference")
    ]
    assert memories.count("alice", chosen) == 1 and len(memories.list("alice", chosen)) == 1
    with pytest.raises(ValidationError, match="not both"):
        memories.count("alice", chosen, category="relationship")


def test_update_keeps_id_and_records_history(memories: Any) -> None:
    saved = memories.save("alice", "User's name is Shantanu", "identity")
    updated = memories.update(saved.memory_id, "alice", content="I prefer to be called SG")
    assert updated.id == saved.memory_id and updated.content == "User prefers to be called SG"
    assert memories.search("alice", "what should I call the user?")[0].memory.id == saved.memory_id
    events = memories.history(saved.memory_id, "alice")
    assert [(e.kind, e.old_content, e.new_content) for e in events] == [
        (EventKind.ADD, None, "User's name is Shantanu"),
        (EventKind.UPDATE, "User's name is Shantanu", "User prefers to be called SG"),
    ]
    with pytest.raises(ValidationError):
        memories.update(saved.memory_id, "alice", content="tiny")
    with pytest.raises(NotFound):
        memories.update(saved.memory_id, "bob", content="User is someone else entirely")


def test_delete_and_clear(memories: Any) -> None:
    a = memories.save("alice", "User's locker code is 4471", "context")
    memories.save("alice", "User enjoys chess puzzles", "preference")
    with pytest.raises(NotFound):
        memories.delete(a.memory_id, "bob")
    memories.delete(a.memory_id, "alice")
    with pytest.raises(NotFound):
        memories.get(a.memory_id, "alice")
    with pytest.raises(NotFound):
        memories.delete(a.memory_id, "alice")
    assert [e.kind for e in memories.history(a.memory_id, "alice")] == [EventKind.DELETE]
    assert all("4471" not in h.memory.content for h in memories.search("alice", "locker code"))
    assert memories.clear("alice") == 1 and memories.count("alice") == 0


def test_delete_many_and_supersede(memories: Any) -> None:
    """``delete_many`` deletes the named memories in the caller's scopes in one go (another
    user's are left out, not an error), and ``supersede`` retires a fact for a newer one until
    ``restore``: on the bank and through both clients alike."""
    a = memories.save("alice", "User's locker code is 4471", "context")
    b = memories.save("alice", "User enjoys chess puzzles", "preference")
    theirs = memories.save("bob", "User collects stamps from Peru", "preference")
    deleted = memories.delete_many([a.memory_id, theirs.memory_id, b.memory_id], "alice")
    assert sorted(deleted) == sorted([a.memory_id, b.memory_id])
    assert memories.count("alice") == 0 and memories.count("bob") == 1
    assert memories.delete_many([], "alice") == []
    assert [e.kind for e in memories.history(b.memory_id, "alice")] == [EventKind.DELETE]
    old = memories.save("alice", "User lives in Leeds", "identity")
    new = memories.save("alice", "User moved to York", "identity", on_conflict="keep")
    retired = memories.supersede(old.memory_id, new.memory_id, "alice")
    assert retired.superseded_by == new.memory_id
    assert [m.id for m in memories.list("alice", superseded=False)] == [new.memory_id]
    assert memories.restore(old.memory_id, "alice").superseded_by is None
    with pytest.raises(NotFound):
        memories.supersede(theirs.memory_id, new.memory_id, "alice")


def test_export_import_round_trip(memories: Any, tmp_path: Path, embedder: LocalEmbedder) -> None:
    memories.save(
        "alice",
        "User's sister Maria lives in Porto",
        "relationship",
        tags=["family"],
        metadata={"source_thread": "t1"},
    )
    memories.save("alice", "User prefers green tea", "preference")
    exported = export_from(memories, "alice")
    doc = json.loads(exported)
    assert doc["format"] == "memorybank-export" and doc["count"] == 2
    with MemoryBank(SQLiteStore(tmp_path / "other.db", dimension=384), embedder) as other:
        results = transfer.import_(other, "alice", exported)
        assert all(r.success for r in results)
        again = json.loads(transfer.export(other, "alice"))
        assert again["memories"] == doc["memories"]
        assert other.search("alice", "tea")[0].memory.content == "User prefers green tea"
        # Importing again skips what is there.
        assert not any(r.success for r in transfer.import_(other, "alice", exported))
    markdown = export_from(memories, "alice", "markdown")
    assert "## Relationship" in markdown and "User prefers green tea" in markdown
    with pytest.raises(ValidationError):
        import_into(memories, "alice", "{not json")
    with pytest.raises(ValidationError, match="item 0"):
        import_into(memories, "alice", json.dumps({"memories": [{"content": 3}]}))


OLDER_JOB = "User works at Globex as an engineer"
NEWER_JOB = "User left Globex and works at Initech as an engineer"
EARLIER_JOB = f"earlier, may be outdated: {OLDER_JOB}"


def kept_both_export(bank: MemoryBank) -> tuple[str, str, str]:
    """An export of alice's two jobs, answered "both are true": the older id, the newer id
    and the document."""
    older = bank.save("alice", OLDER_JOB, "identity").memory_id
    newer = bank.save("alice", NEWER_JOB, "identity")
    assert older in [c.memory_id for c in newer.conflicts]
    pairs.keep_both(bank, newer.memory_id, older, "alice")
    return older, newer.memory_id, transfer.export(bank, "alice")


def test_export_import_keeps_both_are_true(any_bank: MemoryBank) -> None:
    older, newer, exported = kept_both_export(any_bank)
    doc = json.loads(exported)
    assert [(p["memory_id"], p["other_id"], p["verdict"], p["actor"]) for p in doc["pairs"]] == [
        (newer, older, "distinct", "alice")
    ]
    question = "Where do I work?"
    # An export from before pairs were kept imports as it did, and its block shows the
    # note: what the pairs of the export below take away.
    without = {key: value for key, value in doc.items() if key != "pairs"}
    assert all(r.success for r in transfer.import_(any_bank, "carol", without))
    assert EARLIER_JOB in auto_recall(any_bank, Caller(user_id="carol"), question)

    assert all(r.success for r in transfer.import_(any_bank, "bob", exported))
    assert pairs.open_pairs(any_bank, "bob") == []
    block = auto_recall(any_bank, Caller(user_id="bob"), question)
    assert NEWER_JOB in block and OLDER_JOB in block and EARLIER_JOB not in block
    ids = {m.content: m.id for m in any_bank.list("bob")}
    assert older not in ids.values()  # a user's import gets new ids; the pair follows them
    kept = any_bank.store.kept_pairs(list(ids.values()))
    assert [(p.memory_id, p.other_id, p.actor) for p in kept] == [
        (ids[NEWER_JOB], ids[OLDER_JOB], "alice")
    ]
    assert kept[0].decided_at == datetime.fromisoformat(doc["pairs"][0]["decided_at"])
    # Importing the same file again stores nothing, and the pair stays one row.
    assert not any(r.success for r in transfer.import_(any_bank, "bob", exported))
    assert any_bank.store.kept_pairs(list(ids.values())) == kept
    assert len(json.loads(transfer.export(any_bank, "bob"))["pairs"]) == 1


@pytest.mark.parametrize(
    ("pair", "words"),
    [
        (3, "is int, not an object"),
        ({"other_id": "OLDER", "verdict": "distinct"}, "memory_id is missing"),
        ({"memory_id": "NEWER", "other_id": "OLDER", "verdict": "asked"}, "verdict 'asked'"),
        ({"memory_id": "NEWER", "other_id": "mem_elsewhere", "verdict": "distinct"}, "no memory"),
        ({"memory_id": "NEWER", "other_id": "NEWER", "verdict": "distinct"}, "the same"),
        (
            {"memory_id": "NEWER", "other_id": "OLDER", "verdict": "distinct", "decided_at": "x"},
            "not an ISO time",
        ),
    ],
)
def test_a_malformed_pair_imports_nothing(bank: MemoryBank, pair: Any, words: str) -> None:
    older, newer, exported = kept_both_export(bank)
    doc = json.loads(exported)
    if isinstance(pair, dict):
        named = {"NEWER": newer, "OLDER": older}
        pair = {key: named.get(value, value) for key, value in pair.items()}
    doc["pairs"].append(pair)
    with pytest.raises(ValidationError, match="import pair 1") as err:
        transfer.import_(bank, "bob", doc)
    assert words in str(err.value)
    assert bank.count("bob") == 0
    doc["pairs"] = {"memory_id": newer}
    with pytest.raises(ValidationError, match="'pairs' must be a list"):
        transfer.import_(bank, "bob", doc)
    assert bank.count("bob") == 0


class RenamedEmbedder(LocalEmbedder):
    @property
    def model_id(self) -> str:
        return "renamed-model"


def test_model_mismatch_and_reindex(tmp_path: Path, embedder: LocalEmbedder) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with memorybank.open(url) as bank:
        bank.save("alice", "User prefers green tea", "preference")
    other = RenamedEmbedder()
    store = SQLiteStore(tmp_path / "m.db", dimension=384)
    with pytest.raises(EmbeddingModelMismatch, match="reindex"):
        MemoryBank(store, other)
    with MemoryBank(store, other, check_model=False) as bank:
        assert reindex(bank) == 1
    with MemoryBank(SQLiteStore(tmp_path / "m.db", dimension=384), RenamedEmbedder()) as bank:
        hit = bank.search("alice", "tea")[0]
        assert hit.memory.embedding_model == "renamed-model"


def test_open_uses_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYBANK_HOME", str(tmp_path / "home"))
    with memorybank.open() as bank:
        bank.save("alice", "User prefers green tea", "preference")
    assert (tmp_path / "home" / "memorybank.db").exists()


def test_a_word_in_every_memory_does_not_decide_ranking(memories: Any) -> None:
    # Seed 003's own example query; "user" is in every fact and must not pick the shortest.
    for text, category in [
        ("User enjoys hiking", "preference"),
        ("User works as a Senior Engineer at TechCorp", "identity"),
        ("User prefers async communication", "preference"),
        ("User's sister lives in Porto", "relationship"),
    ]:
        memories.save("alice", text, category)
    hits = memories.search("alice", "user's job, company, and responsibilities")
    assert hits[0].memory.content == "User works as a Senior Engineer at TechCorp"


def test_facts_are_not_duplicates_of_chat_turns(memories: Any) -> None:
    memories.save_many(
        "alice",
        [{"content": "User prefers green tea", "ring": "episodic", "source": "conversation"}],
    )
    assert memories.save("alice", "User prefers green tea", "preference").success


def test_system_prompt_preloads_within_budget(bank: MemoryBank) -> None:
    from memorybank.rules.tokens import count_tokens
    from memorybank.tools import Caller, system_prompt

    bank.save("alice", "User prefers dark mode in every editor", "preference")
    bank.save("alice", "User is debugging a flaky integration test", "context")
    block = system_prompt(bank, Caller(user_id="alice"), "default", 400)
    assert "User prefers dark mode in every editor" in block
    assert "flaky" not in block  # context memories are searched on demand, not pre-loaded
    assert count_tokens(block) <= 400
    assert count_tokens(system_prompt(bank, Caller(user_id="alice"), "blah", 30)) <= 30


def test_llm_settings_need_url_and_model(tmp_path: Path) -> None:
    from memorybank import ConfigurationError

    with pytest.raises(ConfigurationError, match="MEMORYBANK_LLM_MODEL"):
        memorybank.open(f"sqlite:///{tmp_path / 'x.db'}", llm_base_url="http://127.0.0.1:9/v1")
    with memorybank.open(
        f"sqlite:///{tmp_path / 'y.db'}", llm_base_url="http://127.0.0.1:9/v1", llm_model="m"
    ) as bank:
        assert bank.llm is not None


def test_an_id_twice_in_one_import_is_stored_twice_under_two_ids(memories: Any) -> None:
    # Found by schemathesis once the import body had a schema: a UNIQUE failure, a 503.
    first = {"id": "mem_same", "user_id": "x", "content": "User likes figs", "category": "context"}
    second = {**first, "content": "User likes dates"}
    results = import_into(memories, "alice", json.dumps({"memories": [first, second]}))
    assert [r.success for r in results] == [True, True]
    assert len({r.memory_id for r in results}) == 2 and memories.count("alice") == 2
