"""MemoryBankBlock in LlamaIndex's own ``Memory``: the flushed turns become memories, and the
memories come back in the system message, offline (LlamaIndex's SQLite chat store in memory)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.llms import ChatMessage  # noqa: E402
from llama_index.core.memory import Memory  # noqa: E402
from sqlalchemy.ext.asyncio import create_async_engine  # noqa: E402

from memorybank import MemoryBank  # noqa: E402
from memorybank.integrations.llama_index import MemoryBankBlock  # noqa: E402
from memorybank.model import Caller  # noqa: E402

ANA = Caller(user_id="ana")


async def converse(block: MemoryBankBlock, turns: list[list[ChatMessage]]) -> list[Any]:
    """The agent memory's chat messages after each round of ``turns``; a short window, so
    early turns are flushed into the block."""
    engine = create_async_engine("sqlite+aiosqlite:///:memory:")
    try:
        memory = Memory.from_defaults(
            session_id="trip",
            token_limit=40,
            chat_history_token_ratio=0.5,
            token_flush_size=10,
            memory_blocks=[block],
            async_engine=engine,
        )
        seen = []
        for messages in turns:
            await memory.aput_messages(messages)
            seen.append(await memory.aget())
        return seen
    finally:
        await engine.dispose()


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


def test_flushed_turns_are_remembered_and_recalled(bank: MemoryBank) -> None:
    block = MemoryBankBlock(bank=bank, caller=ANA)
    rounds = [
        [user("My name is Ana and I prefer window seats"), assistant("Noted, Ana: window seats.")],
        [user("Book me a flight to Lisbon for the conference next week please")],
    ]
    _, last = asyncio.run(converse(block, rounds))
    facts = [m.content for m in bank.list("ana", ring="semantic")]
    # A sentence with two facts is two facts (issue 46).
    assert sorted(facts) == ["User prefers window seats", "User's name is Ana"]
    system = last[0]
    assert system.role.value == "system"
    assert "<memorybank>" in system.content and "prefers window seats" in system.content
    assert last[-1].content.startswith("Book me a flight")


def test_the_block_is_the_callers_memory_only(bank: MemoryBank) -> None:
    bank.save("bo", "User's name is Bo", "identity")
    block = MemoryBankBlock(bank=bank, caller=ANA)
    text = asyncio.run(block.aget([user("What is my name?")]))
    assert "Bo" not in text
    assert (
        asyncio.run(MemoryBankBlock(bank=bank, caller=Caller(user_id="bo")).aget()).count(
            "User's name is Bo"
        )
        == 1
    )


def test_memory_off_keeps_nothing_and_shows_nothing(bank: MemoryBank) -> None:
    off = Caller(user_id="cy", memory_enabled=False)
    block = MemoryBankBlock(bank=bank, caller=off)
    asyncio.run(block.aput([user("My name is Cy")]))
    assert bank.count("cy") == 0
    bank.save("cy", "User's name is Cy", "identity")
    assert asyncio.run(block.aget([user("Who am I?")])) == ""
