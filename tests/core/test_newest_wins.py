"""Issue 32's newcomer cases on the product path: facts saved through the default profile's
``remember`` (as a model calls it) among thirty unrelated facts, then the block the model gets
and the recall tool's answer. Each asserts what a user would see, not a score."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memorybank import Caller, MemoryBank
from memorybank.core.prompt import auto_recall
from memorybank.tools import call, profile

BACKGROUND = [
    "User plays the cello in a community orchestra",
    "User's favourite film is Spirited Away",
    "User is saving up for a trip to Patagonia",
    "User prefers emails to phone calls",
    "User grows chillies on the balcony",
    "User runs five kilometres before work",
    "User is allergic to cats",
    "User reads detective novels on the train",
    "User's team ships a release every second Tuesday",
    "User likes their coffee black",
    "User is learning Portuguese with an app",
    "User's daughter Ines starts school in September",
    "User volunteers at an animal shelter on Saturdays",
    "User prefers dark mode in every editor",
    "User's car is a blue hatchback",
    "User supports a basketball team from Chicago",
    "User keeps bees with a neighbour",
    "User prefers aisle seats on long flights",
    "User is afraid of deep water",
    "User collects vinyl records from the seventies",
    "User's best friend lives in Toronto",
    "User meditates for ten minutes every morning",
    "User dislikes meetings before ten",
    "User bakes bread on Sunday mornings",
    "User is colour blind",
    "User's partner works as a nurse",
    "User plans to run a marathon next year",
    "User keeps a journal every evening",
    "User enjoys cryptic crosswords",
    "User takes the tram to the office",
]


def _remember(bank: MemoryBank, caller: Caller, fact: str) -> dict[str, Any]:
    answer: dict[str, Any] = call(
        bank, profile("default"), "remember", json.dumps({"fact": fact}), caller
    )
    return answer


def _recall(bank: MemoryBank, caller: Caller, question: str) -> list[str]:
    answer = call(bank, profile("default"), "recall", json.dumps({"query": question}), caller)
    return [fact["fact"] for fact in answer["facts"]]


def _current_lines(block: str) -> list[str]:
    """The block's lines that state a fact as current (not an earlier note)."""
    return [line for line in block.splitlines() if line.startswith("- ")]


@pytest.fixture
def ana(bank: MemoryBank) -> Caller:
    for fact in BACKGROUND:
        bank.save("ana", fact)
    return Caller(user_id="ana")


def test_a_new_phone_number_wins_and_the_old_one_is_not_current(
    bank: MemoryBank, ana: Caller
) -> None:
    _remember(bank, ana, "User's phone number is 555-0142")
    _remember(bank, ana, "User's new phone number is 555-0199")
    block = auto_recall(bank, ana, "What is my phone number?", 500)
    assert "555-0199" in block
    assert not any("555-0142" in line for line in _current_lines(block))
    assert "555-0199" in _recall(bank, ana, "What is my phone number?")[0]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("User prefers TypeScript", "User likes TypeScript"),
        ("User is based in Toronto", "User lives in Toronto"),
    ],
)
def test_the_same_fact_in_other_words_is_stored_once(
    bank: MemoryBank, ana: Caller, first: str, second: str
) -> None:
    assert _remember(bank, ana, first)["success"]
    answer = _remember(bank, ana, second)
    assert not answer["success"] and "already remembered" in answer["error"], answer
    assert not answer.get("conflicts")


def test_moving_does_not_retire_a_brothers_city(bank: MemoryBank, ana: Caller) -> None:
    _remember(bank, ana, "User lives in Berlin")
    _remember(bank, ana, "User's brother Marco lives in Madrid")
    bank.save("ana", "User moved to Lisbon", on_conflict="supersede")
    current = {m.content for m in bank.list("ana", limit=100, superseded=False)}
    assert "User's brother Marco lives in Madrid" in current
    block = auto_recall(bank, ana, "Where does my brother live?", 500)
    assert any("Madrid" in line for line in _current_lines(block))
    assert not any("Berlin" in line for line in _current_lines(block))


def test_a_new_manager_reaches_the_block(bank: MemoryBank, ana: Caller) -> None:
    _remember(bank, ana, "User's manager is Priya")
    _remember(bank, ana, "User now reports to Tomasz")
    block = auto_recall(bank, ana, "Who is my manager?", 500)
    assert "Tomasz" in block
    assert not any("Priya" in line for line in _current_lines(block))


def test_a_question_in_other_words_finds_its_fact_first(bank: MemoryBank, ana: Caller) -> None:
    _remember(bank, ana, "User prefers Python")
    _remember(bank, ana, "User lives in Rotterdam")
    assert "Python" in _recall(bank, ana, "which language do I prefer?")[0]
    assert "Rotterdam" in _recall(bank, ana, "Which city am I in?")[0]
    hits = bank.search("ana", "which language do I prefer?", limit=5)
    assert hits[0].memory.content == "User prefers Python" and hits[0].relevance > 0.3


@pytest.mark.parametrize("settled", ["supersede", "remember with the id", "replace"])
def test_the_new_home_comes_first_however_the_move_was_settled(
    bank: MemoryBank, ana: Caller, settled: str
) -> None:
    """Issue 43's newcomer: Berlin, the brother's Madrid, then "I moved to Lisbon" settled the
    documented way; "Where do I live?" answers Lisbon first."""
    _remember(bank, ana, "User lives in Berlin")
    _remember(bank, ana, "User's brother Marco lives in Madrid")
    berlin = next(m.id for m in bank.list("ana") if m.content == "User lives in Berlin")
    if settled == "supersede":
        bank.save("ana", "I moved to Lisbon", on_conflict="supersede")
    elif settled == "remember with the id":
        answer = _remember(bank, ana, "I moved to Lisbon")
        conflict = next(c["id"] for c in answer.get("conflicts", []))
        args = json.dumps({"fact": "I moved to Lisbon", "id": conflict})
        call(bank, profile("default"), "remember", args, ana)
    else:  # the UI's Replace: the older fact superseded by the newer one
        moved = bank.save("ana", "I moved to Lisbon", on_conflict="keep")
        bank.supersede(berlin, str(moved.memory_id), "ana")
    assert "Lisbon" in _recall(bank, ana, "Where do I live?")[0]
    hits = bank.search("ana", "Where do I live?", limit=3)
    assert "Lisbon" in hits[0].memory.content
    block = auto_recall(bank, ana, "Where do I live?", 500)
    assert not any("Berlin" in line for line in _current_lines(block))
