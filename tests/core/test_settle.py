"""An LLM as the judge (a real chat-completions server on 127.0.0.1): the shipped model reads
every pair, the LLM settles the ones it is asked about before the save's transaction, its
answer decides the save as the model's would (refuse, retire, keep), and a failing LLM leaves
the model's verdict. Which pairs are asked is the judge's ``ask`` (by default the pairs the
model is unsure of; here every pair, so the test does not hang on the model's confidence)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chat_server import ChatServer, Raw, running_chat_server
from memorybank import MemoryBank
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.providers.judges import LLMJudge, default_judge
from memorybank.providers.llm.client import ChatClient
from memorybank.rules.verdicts import PairScores, asks_llm
from memorybank.stores.sqlite import SQLiteStore


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with running_chat_server() as server:
        yield server


@pytest.fixture
def client(chat: ChatServer) -> Iterator[ChatClient]:
    with ChatClient(chat.base_url, "test-model", backoff=0.01, max_retries=0) as client:
        yield client


def _bank(tmp_path: Path, embedder: LocalEmbedder, judge: LLMJudge) -> MemoryBank:
    store = SQLiteStore(tmp_path / "settle.db", dimension=embedder.dimension)
    return MemoryBank(store, embedder, llm=judge.llm, judge=judge)


@pytest.fixture
def asking(tmp_path: Path, embedder: LocalEmbedder, client: ChatClient) -> Iterator[MemoryBank]:
    judge = LLMJudge(client, default_judge(), ask=lambda scores: True)
    with _bank(tmp_path, embedder, judge) as bank:
        yield bank


def test_the_llm_refuses_a_paraphrase(asking: MemoryBank, chat: ChatServer) -> None:
    first = asking.save("u", "User is vegetarian", "preference")
    chat.reply({"relation": "duplicate", "why": "a vegetarian diet is being vegetarian"})
    again = asking.save("u", "User follows a diet without meat", "preference")
    assert again.duplicate and again.existing_id == first.memory_id
    asked = chat.last_user_message()
    assert (
        "STORED: User is vegetarian" in asked and "NEW: User follows a diet without meat" in asked
    )
    assert asking.count("u") == 1


def test_the_llm_keeps_a_fact_apart(asking: MemoryBank, chat: ChatServer) -> None:
    asking.save("u", "User is vegetarian", "preference")
    chat.reply({"relation": "distinct", "why": "a diet and a cooking habit"})
    again = asking.save("u", "User follows a vegetarian diet", "preference")
    assert again.success and asking.count("u") == 2


def test_the_llm_retires_what_it_calls_an_update(asking: MemoryBank, chat: ChatServer) -> None:
    asking.save("u", "User lives in Leeds", "identity")
    chat.reply({"relation": "update", "why": "a new home"})
    moved = asking.save("u", "User has settled in York", "identity")
    assert moved.success and [r.content for r in moved.replaced] == ["User lives in Leeds"]


def test_a_failing_llm_leaves_the_models_verdict(asking: MemoryBank, chat: ChatServer) -> None:
    asking.save("u", "User is vegetarian", "preference")
    chat.reply(Raw(500, b'{"error": "down"}'))
    again = asking.save("u", "User cooks vegetarian meals at home", "preference")
    assert again.success  # stored: information is never lost to an outage
    assert chat.requests  # the LLM was asked, over real HTTP, and failed


def test_by_default_only_unsure_pairs_and_changes_reach_the_llm(
    tmp_path: Path, embedder: LocalEmbedder, client: ChatClient, chat: ChatServer
) -> None:
    judge = LLMJudge(client, default_judge())
    sure = PairScores(0.01, 0.02, 0.97)
    assert not asks_llm(sure) and judge.ask is asks_llm
    assert asks_llm(PairScores(0.0, 0.95, 0.05))  # a change the model is not sure enough of
    with _bank(tmp_path, embedder, judge) as bank:
        bank.save("u", "User plays the trumpet", "preference")
        bank.save("u", "User's landlord is called Mr Osei", "relationship")  # not a candidate
    assert chat.requests == []
