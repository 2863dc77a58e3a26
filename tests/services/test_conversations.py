"""remember(): conversation turns, explicit statements, and the LLM path against a real server."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from chat_server import ChatServer, Raw, running_chat_server
from memorybank import MemoryBank
from memorybank.core.prompt import auto_recall
from memorybank.core.writes import writing
from memorybank.errors import ValidationError
from memorybank.model import Caller, Category, Domain, EventKind, Ring, Source
from memorybank.providers.llm import ChatClient
from memorybank.services.conversations import (
    Message,
    RememberResult,
    explicit_statements,
    remember_conversation,
    render_remembered,
)
from memorybank.stores.sqlite import SQLiteStore
from newcomer_chat import ACKNOWLEDGED, CHAT, FACTS
from shared_embedder import SharedEmbedder

CALLER = Caller(user_id="ana", thread_id="thread-1")
SEED_MESSAGES = [
    {"role": "user", "content": "I prefer to work in the mornings"},
    {"role": "assistant", "content": "Got it! I'll remember you prefer morning work sessions."},
]


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with running_chat_server() as server:
        yield server


@pytest.fixture
def llm(chat: ChatServer) -> Iterator[ChatClient]:
    with ChatClient(chat.base_url, "test-model", backoff=0.01, max_retries=0) as client:
        yield client


def facts(*items: tuple[str, str, int, str | None]) -> dict[str, Any]:
    """An extraction answer."""
    return {
        "facts": [
            {"content": c, "category": cat, "importance": imp, "domain": dom}
            for c, cat, imp, dom in items
        ]
    }


def verdict(action: str, content: str | None = None) -> Callable[[dict[str, Any]], Any]:
    """A reconciliation answer aimed at the first existing memory the request lists."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        listing = next(
            m["content"] for m in body["messages"] if m["content"].startswith("NEW fact:")
        )
        ids = re.findall(r"- (mem_\w+): ", listing)
        return {"action": action, "target_id": ids[0], "content": content, "reason": "test"}

    return reply


# -- without an LLM ---------------------------------------------------------------------------


def test_seed_example_stores_one_memory(bank: MemoryBank) -> None:
    result = remember_conversation(
        bank, CALLER, SEED_MESSAGES, context="Discussing work schedule preferences"
    )
    assert [m.content for m in result.stored] == ["User prefers to work in the mornings"]
    fact = result.stored[0]
    assert (fact.category, fact.ring, fact.source) == (
        Category.PREFERENCE,
        Ring.SEMANTIC,
        Source.USER,
    )
    text = render_remembered(result)
    assert text == f"Stored 1 memories\nIDs: {fact.id}"
    assert re.fullmatch(r"Stored 1 memories\nIDs: mem_\w+", text)


def test_every_turn_is_kept_as_an_episodic_conversation_memory(bank: MemoryBank) -> None:
    said = datetime(2024, 12, 30, 9, 15, tzinfo=UTC)
    messages = [
        {**SEED_MESSAGES[0], "time": said, "metadata": {"channel": "tui"}},
        SEED_MESSAGES[1],
    ]
    result = remember_conversation(bank, CALLER, messages, context="Work schedule")
    assert len(result.conversation_ids) == 2
    turns = [bank.get(mid, "ana") for mid in result.conversation_ids]
    assert [t.content for t in turns] == [m["content"] for m in SEED_MESSAGES]
    for turn in turns:
        assert (turn.ring, turn.source, turn.category) == (
            Ring.EPISODIC,
            Source.CONVERSATION,
            Category.CONTEXT,
        )
        assert turn.session_id == "thread-1"
        assert turn.metadata["conversation_context"] == "Work schedule"
    assert turns[0].metadata == {
        "channel": "tui",
        "role": "user",
        "message_index": 0,
        "time": said.isoformat(),
        "conversation_context": "Work schedule",
    }
    assert turns[0].occurred_at == said
    assert turns[1].metadata["role"] == "assistant"
    # The assistant's words are found by search too.
    hits = bank.search("ana", "morning work sessions", ring="episodic")
    assert result.conversation_ids[1] in [h.memory.id for h in hits]


def test_long_messages_are_chunked(bank: MemoryBank) -> None:
    long = " ".join(f"Sentence number {i} about the deployment pipeline." for i in range(40))
    result = remember_conversation(bank, CALLER, [{"role": "user", "content": long}])
    assert len(result.conversation_ids) > 1
    chunks = [bank.get(mid, "ana") for mid in result.conversation_ids]
    assert all(len(c.content) <= bank.policy.content_max for c in chunks)
    assert [c.metadata["chunk"] for c in chunks] == list(range(len(chunks)))


def test_explicit_statements_become_third_person_facts(bank: MemoryBank) -> None:
    text = (
        "Hi there. My name is Ana. I'm not sure about lunch. I work at TechCorp as a "
        "Senior Engineer! Don't forget my dentist is Dr. Lee. I am a vegetarian."
    )
    result = remember_conversation(bank, CALLER, [{"role": "user", "content": text}])
    stored = {m.content: m.category for m in result.stored}
    assert (
        stored.items()
        >= {
            "User's name is Ana": Category.IDENTITY,
            "User works at TechCorp as a Senior Engineer": Category.IDENTITY,
            "User's dentist is Dr. Lee": Category.CONTEXT,
            "User is a vegetarian": Category.IDENTITY,
        }.items()
    )
    assert "Hi there" not in " ".join(stored)
    # An explicit request to remember raises importance (seed 000: +2).
    dentist = next(m for m in result.stored if "dentist" in m.content)
    assert dentist.importance == 5 + 2 + 1


def test_first_person_plural_is_rephrased_with_the_user_named(bank: MemoryBank) -> None:
    said = [
        {"role": "user", "content": "My partner and I love this city."},
        {"role": "user", "content": "Remember that we moved to Leeds last year."},
    ]
    result = remember_conversation(bank, CALLER, said)
    assert "User and their partner moved to Leeds last year" in [m.content for m in result.stored]


def test_duplicates_are_skipped_with_the_existing_id(bank: MemoryBank) -> None:
    first = remember_conversation(bank, CALLER, SEED_MESSAGES)
    again = remember_conversation(bank, CALLER, SEED_MESSAGES)
    assert again.stored == []
    assert again.skipped[0].existing_id == first.stored[0].id
    assert f"already stored as {first.stored[0].id}" in render_remembered(again)


def test_only_the_users_own_words_count() -> None:
    turns = [
        Message(role="assistant", content="I prefer short answers. My name is Bot."),
        Message(role="user", content="I'm sorry. I'm going home. Thanks!"),
    ]
    assert explicit_statements(turns) == []


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([], "non-empty list"),
        ([{"role": "system", "content": "x"}], r"messages\[0\]\.role"),
        ([{"role": "user"}], r"messages\[0\]\.content"),
    ],
)
def test_bad_messages_are_refused(bank: MemoryBank, messages: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        remember_conversation(bank, CALLER, messages)


def test_personal_facts_stay_private_in_a_project(bank: MemoryBank) -> None:
    caller = Caller(user_id="ana", project_id="apollo", thread_id="t")
    result = remember_conversation(bank, caller, SEED_MESSAGES)
    assert all(m.project_id is None for m in result.stored)
    assert bank.count("ben", project_id="apollo") == 0


# -- with an LLM --------------------------------------------------------------------------------


def test_llm_extraction_retries_once_with_the_validation_error(
    bank: MemoryBank, chat: ChatServer, llm: ChatClient
) -> None:
    chat.reply(
        "Sure! The facts are: user likes mornings",  # not JSON
        facts(("User prefers to work in the mornings", "preference", 8, "work")),
    )
    result = remember_conversation(bank, CALLER, SEED_MESSAGES, context="Work schedule", llm=llm)
    assert [m.content for m in result.stored] == ["User prefers to work in the mornings"]
    fact = result.stored[0]
    assert (fact.importance, fact.domain, fact.source) == (8, Domain.WORK, Source.AI)
    first, second = chat.bodies()
    assert first["response_format"]["json_schema"]["name"] == "Extraction"
    assert "user: I prefer to work in the mornings" in first["messages"][1]["content"]
    assert "Context: Work schedule" in first["messages"][1]["content"]
    assert (
        "That answer is invalid: the model's answer is not JSON"
        in second["messages"][-1]["content"]
    )
    assert render_remembered(result) == f"Stored 1 memories\nIDs: {fact.id}"


def test_llm_schema_violation_is_retried(
    bank: MemoryBank, chat: ChatServer, llm: ChatClient
) -> None:
    chat.reply(
        facts(("User likes jazz", "hobby", 7, None)),  # no such category
        facts(("User likes jazz music", "preference", 7, "interests")),
    )
    result = remember_conversation(
        bank, CALLER, [{"role": "user", "content": "I like jazz"}], llm=llm
    )
    assert [m.content for m in result.stored] == ["User likes jazz music"]
    assert "category" in chat.last_user_message(1)


def test_llm_supersede_keeps_the_old_memory_linked(
    bank: MemoryBank, chat: ChatServer, llm: ChatClient
) -> None:
    old = bank.save("ana", "User lives in Berlin", "identity").memory
    assert old is not None
    chat.reply(facts(("User lives in Munich", "identity", 10, None)), verdict("SUPERSEDE"))
    messages = [{"role": "user", "content": "I moved to Munich last month."}]
    result = remember_conversation(bank, CALLER, messages, llm=llm)

    assert [m.content for m in result.stored] == ["User lives in Munich"]
    new = result.stored[0]
    assert [(s.old_id, s.new_id) for s in result.superseded] == [(old.id, new.id)]
    kept = bank.get(old.id, "ana")
    assert kept.content == "User lives in Berlin"
    assert kept.superseded_by == new.id
    events = bank.history(old.id, "ana")
    assert [e.kind for e in events] == [EventKind.ADD, EventKind.SUPERSEDE]
    assert events[-1].new_content is None  # the link is superseded_by, not copied text
    text = render_remembered(result)
    assert text.startswith(f"Stored 1 memories\nIDs: {new.id}\n")
    assert f"Superseded {old.id} by {new.id}: User lives in Berlin" in text
    # The reconciliation request listed the old fact, not the conversation turns.
    listed = chat.bodies()[1]["messages"][-1]["content"]
    assert f"- {old.id}: User lives in Berlin" in listed
    assert "moved to Munich last month" not in listed


def test_llm_update_merges_in_place(bank: MemoryBank, chat: ChatServer, llm: ChatClient) -> None:
    old = bank.save("ana", "User has a dog", "relationship", importance=6).memory
    assert old is not None
    chat.reply(
        facts(("User has a dog named Rex", "relationship", 8, None)),
        verdict("UPDATE", content="User has a dog named Rex"),
    )
    result = remember_conversation(
        bank, CALLER, [{"role": "user", "content": "My dog is called Rex"}], llm=llm
    )
    assert result.stored == []
    assert [(u.memory_id, u.old_content, u.new_content) for u in result.updated] == [
        (old.id, "User has a dog", "User has a dog named Rex")
    ]
    changed = bank.get(old.id, "ana")
    assert (changed.content, changed.importance) == ("User has a dog named Rex", 8)
    assert "Updated" in render_remembered(result)


def test_llm_noop_is_reported_as_skipped(
    bank: MemoryBank, chat: ChatServer, llm: ChatClient
) -> None:
    old = bank.save("ana", "User prefers tea", "preference").memory
    assert old is not None
    chat.reply(facts(("User prefers coffee", "preference", 9, None)), verdict("NOOP"))
    result = remember_conversation(
        bank, CALLER, [{"role": "user", "content": "Tea or coffee..."}], llm=llm
    )
    assert result.stored == []
    assert result.skipped[0].existing_id == old.id
    assert "already known" in result.skipped[0].reason


def test_llm_unknown_target_is_retried(bank: MemoryBank, chat: ChatServer, llm: ChatClient) -> None:
    bank.save("ana", "User lives in Berlin", "identity")
    bogus = {"action": "SUPERSEDE", "target_id": "mem_nope", "content": None, "reason": "x"}
    chat.reply(facts(("User lives in Munich", "identity", 10, None)), bogus, verdict("SUPERSEDE"))
    result = remember_conversation(
        bank, CALLER, [{"role": "user", "content": "I live in Munich"}], llm=llm
    )
    assert len(result.superseded) == 1
    assert "'mem_nope' is not one of the existing memories" in chat.last_user_message(2)


def test_clear_cases_are_decided_by_similarity(
    bank: MemoryBank, chat: ChatServer, llm: ChatClient
) -> None:
    bank.save("ana", "User prefers dark mode", "preference")
    chat.reply(
        facts(
            ("User is learning Rust", "project", 7, "interests"),  # unrelated: ADD
            ("User prefers dark mode", "preference", 9, None),  # identical: duplicate
        )
    )
    result = remember_conversation(bank, CALLER, [{"role": "user", "content": "..."}], llm=llm)
    assert [m.content for m in result.stored] == ["User is learning Rust"]
    assert [s.content for s in result.skipped] == ["User prefers dark mode"]
    assert len(chat.requests) == 1  # extraction only: no verdict was needed


def test_first_person_from_the_llm_is_rejected_not_dropped(
    bank: MemoryBank, chat: ChatServer, llm: ChatClient
) -> None:
    chat.reply(facts(("We deploy on Fridays", "context", 5, "work")))
    result = remember_conversation(
        bank, CALLER, [{"role": "user", "content": "We deploy on Fridays"}], llm=llm
    )
    assert result.stored == []
    assert result.rejected[0].content == "We deploy on Fridays"
    assert "Rejected: We deploy on Fridays" in render_remembered(result)


def test_llm_failure_falls_back_to_explicit_statements(
    bank: MemoryBank, chat: ChatServer, llm: ChatClient
) -> None:
    chat.reply(Raw(400, b'{"error": {"message": "model not found"}}'))
    result = remember_conversation(bank, CALLER, SEED_MESSAGES, llm=llm)
    assert [m.content for m in result.stored] == ["User prefers to work in the mornings"]
    assert "HTTP 400" in result.warnings[0]
    assert "model not found" not in result.warnings[0]  # the provider's answer is never echoed
    assert "Note: fact extraction by the LLM failed" in render_remembered(result)
    assert len(result.conversation_ids) == 2


def test_bank_llm_is_the_default(bank: MemoryBank, chat: ChatServer, llm: ChatClient) -> None:
    bank.llm = llm
    chat.reply(facts())
    result = remember_conversation(bank, CALLER, SEED_MESSAGES)
    assert result == RememberResult(conversation_ids=result.conversation_ids)
    assert len(chat.requests) == 1


def test_a_statement_to_remember_gets_the_category_the_bank_infers() -> None:
    turns = [Message(role="user", content="Remember that my sister Ana lives in Madrid.")]
    assert explicit_statements(turns) == [
        ("Remember that my sister Ana lives in Madrid.", Category.RELATIONSHIP)
    ]


# -- facts said in passing (no LLM) ---------------------------------------------------------

PASSING = [
    {"role": "user", "content": "hi! can you help me plan meals for next week?"},
    {"role": "assistant", "content": "Of course! How many people are you cooking for?"},
    {"role": "user", "content": "me and my partner. I'm vegetarian, she eats fish though"},
    {"role": "assistant", "content": "Great. What's your weekly budget?"},
    {
        "role": "user",
        "content": "about £60. we moved to Leeds last year and the big Aldi is near us",
    },
    {"role": "assistant", "content": "What if you batch cooked on Sundays?"},
    {"role": "user", "content": "what if we did two curries?"},
    {"role": "user", "content": "oh and I'm vegetarian"},
]


def test_facts_said_in_passing_are_kept_through_the_save_path(bank: MemoryBank) -> None:
    said = datetime(2024, 3, 12, 9, tzinfo=UTC)
    messages = [{**m, "time": said} for m in PASSING]
    result = remember_conversation(bank, CALLER, messages)
    stored = [m.content for m in result.stored]
    assert "User is vegetarian" in stored
    assert any(f.startswith("User and their partner moved to Leeds last year") for f in stored)
    # Nothing the assistant said, and no question or request, became a fact; a question of
    # the assistant's is only ever quoted by the user's answer to it.
    assert not any("batch" in f or "curries" in f for f in stored)
    assert all(f.startswith('User, asked "') for f in stored if "cooking for" in f)
    passed = [p.content for p in result.passed_over]
    assert "can you help me plan meals for next week?" in passed
    # Said twice: stored once, the second judged a duplicate by the save.
    assert stored.count("User is vegetarian") == 1
    assert any("User is vegetarian" in s.content and s.existing_id for s in result.skipped)
    # Each fact names the message (and the stored turn) it came from, and when it was said.
    fact = next(m for m in result.stored if m.content == "User is vegetarian")
    assert fact.metadata["from_message"] == 2
    assert fact.metadata["from_memory"] == result.conversation_ids[2]
    assert fact.occurred_at == said


def test_a_question_is_never_a_fact_but_what_it_states_is(bank: MemoryBank) -> None:
    messages = [
        {
            "role": "user",
            "content": "I'm moving house next month and it's chaos. Where do I start?",
        },
        {"role": "assistant", "content": "Start with a list of what has to happen when."},
        {"role": "user", "content": "how do I tell the landlord that I found a flat in Bristol?"},
        {"role": "user", "content": "I also have two cats, can they travel in the car?"},
    ]
    result = remember_conversation(bank, CALLER, messages)
    stored = [m.content for m in result.stored]
    assert not any("start" in f.lower() for f in stored), stored
    assert "Where do I start?" in [p.content for p in result.passed_over]
    assert any(f.startswith("User found a flat in Bristol") for f in stored), stored
    # The statement before a question tagged on is weighed on its own (kept or passed over
    # as the model reads it), the question never.
    weighed = stored + [p.content for p in result.passed_over]
    assert "I also have two cats" in weighed or "User also has two cats" in weighed, weighed
    assert not any(f.endswith("?") or "can they travel" in f for f in stored), stored


def test_over_the_write_limit_only_the_facts_beyond_it_are_lost(bank: MemoryBank) -> None:
    # The facts of a chat are saved as one batch; a batch over the limit is saved one fact at
    # a time, so the facts that fit are kept and only the rest are reported, with the reason.
    turns = sum(1 for m in PASSING if m["content"].strip())
    alone = remember_conversation(bank, Caller(user_id="unlimited"), PASSING)
    assert len(alone.stored) >= 2
    bank.writes.set_limit(turns + 1)
    with writing(bank, CALLER.user_id, paid=0):
        limited = remember_conversation(bank, CALLER, PASSING)
    assert len(limited.conversation_ids) == turns
    assert [m.content for m in limited.stored] == [m.content for m in alone.stored][:1]
    assert limited.rejected and all("too many" in r.reason for r in limited.rejected)
    kept = len(limited.stored) + len(limited.rejected) + len(limited.skipped)
    assert kept == len(alone.stored) + len(alone.skipped)


def test_the_relevant_section_holds_no_assistant_turn(bank: MemoryBank) -> None:
    remember_conversation(bank, CALLER, PASSING)
    for question in ("How many people am I cooking for?", "What should we batch cook on Sundays?"):
        block = auto_recall(bank, CALLER, question, 500)
        for line in block.splitlines():
            assert "batch cooked on Sundays" not in line
            if "How many people are you cooking for" in line:  # quoted by the user's answer
                assert 'User, asked "How many people are you cooking for?", said:' in line


class _OtherEmbedder(SharedEmbedder):
    """Vectors the fact model was not trained on (another model's name)."""

    @property
    def model_id(self) -> str:
        return "another-model"


def test_another_embedder_keeps_explicit_statements_only(tmp_path: Path) -> None:
    other = _OtherEmbedder()
    with MemoryBank(SQLiteStore(tmp_path / "o.db", dimension=other.dimension), other) as own:
        result = remember_conversation(own, CALLER, PASSING)
    # "I'm vegetarian" is explicit; "we moved to Leeds" needs the model.
    assert all(m.content.startswith("User is vegetarian") for m in result.stored)
    assert result.stored and result.passed_over == []
    assert "stored explicit statements only" in result.warnings[0]


def test_a_newcomers_chat_keeps_each_fact_said_in_passing_as_a_fact(bank: MemoryBank) -> None:
    """Issue 46's newcomer: the five facts said in passing are kept, each one statement that
    names whom it is about ("she" is the daughter Zoe), and no acknowledgement is."""
    result = remember_conversation(bank, Caller(user_id="newcomer"), CHAT)
    kept = [m.content for m in result.stored]
    for words in FACTS:
        assert any(words in fact for fact in kept), (words, kept)
    assert "User's daughter Zoe loves horses" in kept
    for fact in kept:
        assert fact.startswith("User"), fact  # readable on its own: whose it is comes first
        assert not re.search(r"\b(?:she|he|they|it)\b", fact, re.IGNORECASE), fact
        assert not any(said in fact.lower() for said in ACKNOWLEDGED), fact
        assert not fact.endswith(("lol", "obviously", "funny enough")), fact
    passed = " ".join(p.content for p in result.passed_over)
    assert all(said in passed.lower() for said in ACKNOWLEDGED)


def test_the_hosts_metadata_is_on_every_fact_from_its_save(
    bank: MemoryBank, chat: ChatServer, llm: ChatClient
) -> None:
    ids = {"agent_id": "helper"}
    said = [{"role": "user", "content": "My name is Ana and I prefer window seats"}]
    without = remember_conversation(bank, CALLER, said, metadata=ids).stored
    chat.reply(facts(("User lives in Munich", "identity", 10, None)))
    moved = [{"role": "user", "content": "I live in Munich"}]
    with_llm = remember_conversation(bank, CALLER, moved, llm=llm, metadata=ids).stored
    assert without and with_llm
    for fact in [*without, *with_llm]:
        assert fact.metadata["agent_id"] == "helper" and fact.metadata["thread_id"] == "thread-1"
        assert [e.kind for e in bank.history(fact.id, "ana")] == [EventKind.ADD]
