"""Issue 45's newcomer cases on the product path: facts saved through the default profile's
``remember`` as a model calls it, and what the save answers (refused, a conflict, stored
quietly). The judge computes in float32, so each holds on any x86-64 CPU alike."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memorybank import Caller, MemoryBank
from memorybank.tools import call, profile


def _remember(bank: MemoryBank, caller: Caller, fact: str) -> dict[str, Any]:
    answer: dict[str, Any] = call(
        bank, profile("default"), "remember", json.dumps({"fact": fact}), caller
    )
    return answer


def _conflicts(answer: dict[str, Any]) -> list[str]:
    return [str(c.get("fact") or c.get("content")) for c in answer.get("conflicts") or []]


def test_selling_the_car_is_a_change_never_a_duplicate(bank: MemoryBank) -> None:
    ana = Caller(user_id="ana")
    assert _remember(bank, ana, "User owns a car")["success"]
    sold = _remember(bank, ana, "User sold their car")
    assert sold["success"], sold  # stored: refusing it would keep "owns a car" current
    assert _conflicts(sold) == ["User owns a car"]


def test_walking_these_days_changes_how_the_user_gets_to_the_market(bank: MemoryBank) -> None:
    ana = Caller(user_id="ana")
    _remember(bank, ana, "User takes a boda boda to the market every morning")
    walks = _remember(bank, ana, "User walks to the market these days")
    assert walks["success"]
    assert _conflicts(walks) == ["User takes a boda boda to the market every morning"]


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("User is learning Portuguese", "User is learning Spanish now"),
        # Worded apart (cosine 0.43), read as a change at 0.51 only: under THRESHOLDS.apart.
        ("User moved to Lisbon", "User is learning Portuguese"),
        pytest.param(
            "User's phone number is 555-0142",
            "User's work phone number is 555-0777",
            # The judge retrained on plain new values of one-value slots reads a second
            # phone as a possible change (0.48): shown as a conflict, both kept.
            marks=pytest.mark.xfail(reason="issue 45: shown as a possible change", strict=True),
        ),
        ("User is learning to play chess online", "User is saving up for a gaming laptop"),
        ("User is saving up for a gaming laptop", "User is learning to play chess online"),
        ("User takes the train to work", "User likes hiking in the mountains"),
        ("User likes hiking in the mountains", "User takes the train to work"),
    ],
)
def test_two_facts_that_are_both_true_are_no_conflict(
    bank: MemoryBank, older: str, newer: str
) -> None:
    ana = Caller(user_id="ana")
    assert _remember(bank, ana, older)["success"]
    answer = _remember(bank, ana, newer)
    assert answer["success"] and _conflicts(answer) == [], answer
    assert bank.count("ana", superseded=False) == 2
