"""Issue 18: with an LLM configured, the pairs the duplicate rules are unsure of are settled
by the model (a real chat-completions server on 127.0.0.1), before the save's transaction;
what the rules are sure of, and a failing model, leave the rules' verdict."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from chat_server import ChatServer, Raw, running_chat_server
from memorybank import MemoryBank
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.providers.llm.client import ChatClient
from memorybank.stores.sqlite import SQLiteStore


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with running_chat_server() as server:
        yield server


@pytest.fixture
def llm_bank(tmp_path: Path, embedder: LocalEmbedder, chat: ChatServer) -> Iterator[MemoryBank]:
    client = ChatClient(chat.base_url, "test-model", backoff=0.01, max_retries=0)
    store = SQLiteStore(tmp_path / "settle.db", dimension=embedder.dimension)
    with client, MemoryBank(store, embedder, llm=client) as bank:
        yield bank


def test_the_model_catches_a_paraphrase_the_rules_miss(
    llm_bank: MemoryBank, chat: ChatServer
) -> None:
    first = llm_bank.save("u", "User is vegetarian", "preference")
    chat.reply({"relation": "duplicate", "why": "a vegetarian diet is being vegetarian"})
    again = llm_bank.save("u", "User follows a vegetarian diet", "preference")
    assert again.duplicate and again.existing_id == first.memory_id
    asked = chat.last_user_message()
    assert "STORED: User is vegetarian" in asked and "NEW: User follows a vegetarian diet" in asked
    assert llm_bank.count("u") == 1


def test_the_model_can_keep_a_fact_apart(llm_bank: MemoryBank, chat: ChatServer) -> None:
    llm_bank.save("u", "User is vegetarian", "preference")
    chat.reply({"relation": "distinct", "why": "a diet and a cooking habit"})
    again = llm_bank.save("u", "User follows a vegetarian diet", "preference")
    assert again.success and llm_bank.count("u") == 2


def test_sure_pairs_never_reach_the_model(llm_bank: MemoryBank, chat: ChatServer) -> None:
    llm_bank.save("u", "User's phone number is 555-0101", "identity")
    changed = llm_bank.save("u", "User's phone number is 555-0199", "identity")
    llm_bank.save("u", "User is allergic to peanuts", "identity")
    negated = llm_bank.save("u", "User is not allergic to peanuts", "identity")
    # Both are sure: the new fact replaces the old one without asking anybody.
    assert changed.success and changed.replaced and negated.success and negated.replaced
    assert chat.requests == []  # numbers and negation are the rules' to decide


def test_a_failing_model_leaves_the_rules_verdict(llm_bank: MemoryBank, chat: ChatServer) -> None:
    llm_bank.save("u", "User is vegetarian", "preference")
    chat.reply(Raw(500, b'{"error": "down"}'))
    again = llm_bank.save("u", "User follows a vegetarian diet", "preference")
    assert again.success  # stored, as the rules say: information is never lost to an outage
    body = chat.requests[-1]
    assert json.dumps(body)  # the model was asked once, over real HTTP
