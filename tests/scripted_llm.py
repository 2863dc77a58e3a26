"""A bank whose judge asks an LLM (a real chat server on 127.0.0.1) about the pairs the
shipped model reads as likely changes: the way to test what follows a *sure* replacement,
since the shipped model alone never retires a fact unasked (``Thresholds.sure``)."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any

from chat_server import ChatServer, running_chat_server
from memorybank import MemoryBank
from memorybank.providers.judges import LLMJudge, default_judge
from memorybank.providers.llm.client import ChatClient
from memorybank.rules.verdicts import PairScores

#: More answers than any test asks for.
ANSWERS = 500


def answering(updates: Collection[tuple[str, str]]) -> Any:
    """The LLM's answer to one pair: an update for the (stored, new) pairs in ``updates``,
    distinct for the rest."""

    def reply(body: dict[str, Any]) -> dict[str, str]:
        asked = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        stored, new = (line.split(": ", 1)[1] for line in asked.splitlines()[:2])
        relation = "update" if (stored, new) in updates else "distinct"
        return {"relation": relation, "why": "as the test's LLM reads it"}

    return reply


def _likely_change(scores: PairScores) -> bool:
    return scores.update >= 0.5


@contextmanager
def llm_judged(bank: MemoryBank, updates: Collection[tuple[str, str]]) -> Iterator[MemoryBank]:
    """``bank``'s store and embedder, judged with an LLM that calls ``updates`` changes."""
    server: ChatServer
    with running_chat_server() as server:
        server.reply(*[answering(set(updates))] * ANSWERS)
        with ChatClient(server.base_url, "test-model", backoff=0.01, max_retries=0) as client:
            judge = LLMJudge(client, default_judge(), ask=_likely_change)
            yield MemoryBank(bank.store, bank.embedder, judge=judge)
